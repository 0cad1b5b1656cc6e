"""Verifier logs of real runners that more than one test reads."""

UV_NO_PYTHON = """\
downloading uv 0.9.5 x86_64-unknown-linux-gnu
curl: (6) Could not resolve host: astral.sh
error: Request failed after 3 retries
  Caused by: Failed to download https://github.com/astral-sh/python-build-standalone/releases/\
download/20251014/cpython-3.12.12%2B20251014-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz
  Caused by: error sending request for url (https://github.com/astral-sh/python-build-standalone/)
  Caused by: client error (Connect)
  Caused by: dns error
  Caused by: failed to lookup address information: Name or service not known
"""
"""The log of a Terminal-Bench 2 verifier whose `uvx -p 3.12` found no network."""
