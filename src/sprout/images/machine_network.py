"""What a sandbox needs from this machine to reach the network the machine reaches.

A container engine gives each container the machine's resolver and a
localhost line; sprout gives them to a task's base layer. Where only package
registries answer (a mirror, an index behind a proxy that re-signs TLS), a
set-up step or a verifier that installs something (`pip install`, `uvx -w
pytest`) works only if it asks the registry this machine uses, the way this
machine asks it: so the base layer's certificate bundle also holds the
authorities this machine trusts beyond the image's, and set-up steps and
verifiers get this machine's index URLs under pip's names and uv's; so does
the agent, less any URL whose credentials pip's config files do not already
give every process on the machine. Only http(s) URLs travel: a `file://`
index is a path on this machine, not inside the sandbox.
"""

from __future__ import annotations

import configparser
import dataclasses
import json
import os
import re
import sys
import tempfile
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sprout.sandbox import Sandbox

CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
"""Where a base layer holds the image's certificate authorities plus this machine's."""
RESOLV_CONF = Path("/etc/resolv.conf")
"""This machine's resolver, which every base layer gets."""
LOCALHOST = b"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
PIP_SECTIONS = ("global", "install")
"""pip reads [global], then the section of the command it runs; the verifier installs."""
MACHINE_BUNDLE = CA_BUNDLE
"""The machine's own bundle, when neither pip nor SSL_CERT_FILE names one."""
_PEM = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy")


@dataclass(frozen=True)
class IndexSettings:
    """The package index this machine's pip and uv use, as a sandbox can use it."""

    index_url: str | None = None
    """The default index; None: the clients' own default (pypi.org)."""
    extra_index_urls: tuple[str, ...] = ()
    cert: str | None = None
    """The certificate bundle this machine trusts (pip's `cert`, PIP_CERT, SSL_CERT_FILE, else
    Debian's): the roots of a proxy that re-signs TLS among them."""
    proxies: tuple[tuple[str, str], ...] = ()
    """This machine's HTTP(S)_PROXY / NO_PROXY variables."""
    trusted_hosts: tuple[str, ...] = ()
    """Hosts pip may reach without a valid certificate (pip's `trusted-host`)."""
    config_secrets: frozenset[str] = frozenset()
    """The index URLs with credentials that pip's config files hold themselves: every
    process on the machine that runs pip reads them already, so the agent may too."""

    def env(self) -> dict[str, str]:
        """The variables of set-up steps and verifiers: pip's and uv's names for the same
        settings, the bundle `put_machine_network` wrote (uv reads only its own roots without
        SSL_CERT_FILE), and a preference for the image's own Python over downloading one
        (`uvx -p 3.13` on a Python 3.13 image must not need github.com)."""
        env = {"UV_PYTHON_PREFERENCE": "system"}
        if self.index_url:
            env["PIP_INDEX_URL"] = env["UV_DEFAULT_INDEX"] = self.index_url
        if self.extra_index_urls:
            env["PIP_EXTRA_INDEX_URL"] = env["UV_INDEX"] = " ".join(self.extra_index_urls)
        if self.trusted_hosts:
            env["PIP_TRUSTED_HOST"] = env["UV_INSECURE_HOST"] = " ".join(self.trusted_hosts)
        if self.cert:
            env["PIP_CERT"] = env["SSL_CERT_FILE"] = CA_BUNDLE
        env.update(self.proxies)
        return env

    def agent_env(self) -> dict[str, str]:
        """`env()` as the agent's sandbox gets it: the model is hostile, so a setting whose
        URL carries credentials that pip's config files do not hold (a token in
        PIP_INDEX_URL, a proxy password) is left out whole. Left out, not stripped: the
        verifier, whose fork carries the agent's variables over `env()`, still gets it."""

        def shareable(url: str) -> bool:
            return url in self.config_secrets or not _has_credentials(url)

        extras = self.extra_index_urls
        return dataclasses.replace(
            self,
            index_url=self.index_url if shareable(self.index_url or "") else None,
            extra_index_urls=extras if all(map(shareable, extras)) else (),
            proxies=tuple((name, value) for name, value in self.proxies if shareable(value)),
        ).env()


def _has_credentials(url: str) -> bool:
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # not a URL sprout can read: treat it as one that may hold a secret
        return True
    return parts.username is not None or parts.password is not None


def pip_config_files(environ: Mapping[str, str]) -> list[Path]:
    """pip's configuration files in the order pip reads them, later ones winning: global
    (XDG config dirs, /etc), user (~/.pip, ~/.config/pip), this interpreter's site, then
    PIP_CONFIG_FILE. PIP_CONFIG_FILE=os.devnull means none, as in pip."""
    named = environ.get("PIP_CONFIG_FILE")
    if named == os.devnull:
        return []
    xdg_dirs = environ.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    files = [Path(d, "pip", "pip.conf") for d in reversed(xdg_dirs.split(":")) if d]
    files.append(Path("/etc/pip.conf"))
    home = Path(environ.get("HOME") or Path.home())
    files.append(home / ".pip" / "pip.conf")
    files.append(Path(environ.get("XDG_CONFIG_HOME") or home / ".config", "pip", "pip.conf"))
    files.append(Path(sys.prefix, "pip.conf"))
    if named:
        files.append(Path(named))
    return files


def read_pip_config(files: Sequence[Path]) -> dict[str, str]:
    """The settings of pip's config `files` for an install: [global] then [install], each
    file over the ones before; keys as pip spells them (`index-url`). A file that cannot
    be read or parsed is skipped, as pip would refuse it loudly on its own."""
    found: dict[str, str] = {}
    for path in files:
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, UnicodeDecodeError, configparser.Error):
            continue
        for section in PIP_SECTIONS:
            if parser.has_section(section):
                for key, value in parser.items(section):
                    found[key.replace("_", "-")] = value.strip()
    return found


def _urls(text: str | None) -> list[str]:
    """The http(s) URLs of a whitespace-separated list (pip's and uv's format; uv's entries
    may be named, `name=URL`)."""
    urls = []
    for entry in (text or "").split():
        name, equals, url = entry.partition("=")
        if equals and "://" not in name:
            entry = url
        if entry.lower().startswith(("http://", "https://")):
            urls.append(entry)
    return urls


def index_settings(
    environ: Mapping[str, str] | None = None,
    files: Sequence[Path] | None = None,
    machine_bundle: str | None = MACHINE_BUNDLE,
) -> IndexSettings:
    """This machine's index settings: uv's variables over pip's variables over pip's config
    files (`files` default to where pip looks), and `machine_bundle` when none of them names
    a certificate bundle. Defaults to the running process's settings."""
    environ = os.environ if environ is None else environ
    config = read_pip_config(pip_config_files(environ) if files is None else files)

    def setting(pip_key: str, *uv_names: str) -> str | None:
        for name in (*uv_names, "PIP_" + pip_key.upper().replace("-", "_")):
            if environ.get(name):
                return environ[name]
        return config.get(pip_key)

    default = _urls(setting("index-url", "UV_DEFAULT_INDEX", "UV_INDEX_URL"))
    extras: list[str] = []
    for text in (
        environ.get("UV_INDEX"),
        environ.get("UV_EXTRA_INDEX_URL"),
        setting("extra-index-url"),
    ):
        extras += [url for url in _urls(text) if url not in extras]
    cert = setting("cert", "SSL_CERT_FILE") or machine_bundle
    in_config = [*_urls(config.get("index-url")), *_urls(config.get("extra-index-url"))]
    return IndexSettings(
        index_url=default[0] if default else None,
        extra_index_urls=tuple(extras),
        cert=cert if cert and os.path.isfile(cert) else None,
        proxies=tuple((name, environ[name]) for name in PROXY_VARIABLES if environ.get(name)),
        trusted_hosts=tuple((setting("trusted-host", "UV_INSECURE_HOST") or "").split()),
        config_secrets=frozenset(url for url in in_config if _has_credentials(url)),
    )


def machine_inputs(settings: IndexSettings) -> bytes:
    """What a base layer's set-up sees of this machine, as bytes to hash: the variables set-up
    steps and the agent get, the certificate bundle and the resolver `put_machine_network`
    writes. A base layer's name hashes them, so a new proxy authority or resolver builds a
    new base layer instead of reusing one that holds the old."""
    variables = json.dumps([settings.env(), settings.agent_env()], sort_keys=True)
    cert = Path(settings.cert).read_bytes() if settings.cert else b""
    return b"\0".join([variables.encode(), cert, _machine_resolv()])


def _machine_resolv() -> bytes:
    try:
        return RESOLV_CONF.read_bytes()
    except OSError:
        return b""


def put_machine_network(sandbox: Sandbox, settings: IndexSettings) -> None:
    """This machine's resolver, a localhost line where the image has none, and the image's
    certificate bundle merged with the one this machine trusts (none of the image's roots
    lost, the machine's added), into `sandbox`: a base layer that every fork inherits."""
    with tempfile.TemporaryDirectory(prefix="sprout-etc-") as staging:
        resolv = Path(staging, "resolv.conf")
        resolv.write_bytes(_machine_resolv())
        sandbox.put(resolv, "/etc/resolv.conf")
        existing = sandbox.read("/etc/hosts") or b""
        if b"localhost" not in existing:
            hosts = Path(staging, "hosts")
            hosts.write_bytes(existing + LOCALHOST)
            sandbox.put(hosts, "/etc/hosts")
        if settings.cert is None:
            return
        image_bundle = sandbox.read(CA_BUNDLE) or b""
        merged = merged_pem(image_bundle, Path(settings.cert).read_bytes())
        if merged != merged_pem(image_bundle):
            bundle = Path(staging, "ca-certificates.crt")
            bundle.write_bytes(merged)
            bundle.chmod(0o644)
            sandbox.put(bundle, CA_BUNDLE)


def merged_pem(*bundles: bytes) -> bytes:
    """PEM bundles as one, each certificate once (whatever its line breaks), in the order
    first seen."""
    blocks: dict[bytes, bytes] = {}
    for bundle in bundles:
        for block in _PEM.findall(bundle):
            blocks.setdefault(b"".join(block.split()), block)
    return b"\n".join(blocks.values()) + b"\n"
