"""uv and uvx for verifiers, fetched from the package index instead of astral.sh.

Most Terminal-Bench 2 verifiers install uv with `curl https://astral.sh/uv/V/install.sh
| sh`, `source $HOME/.local/bin/env`, then `uvx -p 3.13 -w pytest ... pytest`. On a
machine that reaches package registries but not astral.sh or github.com the curl
fails and so does the verifier, whatever the attempt did. PyPI's `uv` wheel carries
the same two binaries (in `uv-V.data/scripts/`), so sprout fetches that wheel with
this machine's own pip (its index, proxy and certificate settings apply), keeps the
binaries in the machine-wide cache, and puts them where the installer would have, in
the verifier's throw-away fork only: the failed curl is then harmless and the script
runs unmodified.
"""

from __future__ import annotations

import functools
import os
import platform
import posixpath
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from sprout.durable import cache_dir, file_lock
from sprout.sandbox import Sandbox
from sprout.verify.types import VerifierSetupError

BINARIES = ("uv", "uvx")
INSTALLER = re.compile(r"astral\.sh/uv/(?P<version>\d+(?:\.\d+){1,3})/install\.sh")
"""The installer URL that pins a version: `https://astral.sh/uv/0.9.5/install.sh`."""
_USES_UV = re.compile(r"astral\.sh/uv|(?<![\w.-])uvx?(?![\w.-])")
_VERSION = re.compile(r"\d+(?:\.\d+){1,3}")
FETCH_TIMEOUT_S = 300.0
RETRY_AFTER_S = 300.0
BIN_DIR = ".local/bin"
"""Where uv's installer puts uv and uvx, under $HOME."""


class UvUnavailable(VerifierSetupError):
    """uv could not be fetched from the package index; the message says which and why."""


_failures: dict[Path, tuple[float, str]] = {}
"""Fetches that failed in this process: when, and why."""


def uses_uv(script: str) -> bool:
    """Whether a verifier's script runs uv or uvx, or installs them from astral.sh."""
    return _USES_UV.search(script) is not None


def requested_version(script: str) -> str | None:
    """The uv version a script's installer URL pins (`astral.sh/uv/0.9.5/install.sh` gives
    "0.9.5"), or None when it pins none."""
    found = INSTALLER.search(script)
    return found.group("version") if found else None


def wheel_platform() -> str:
    """The wheel platform for the sandbox: this machine's architecture with glibc 2.17, the
    oldest glibc uv's manylinux wheels support, so the binary runs on old images too."""
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return f"manylinux_2_17_{machine}"


def uv_binaries(version: str | None = None, *, root: Path | None = None) -> Path:
    """The folder holding uv and uvx of `version` (default: the newest the index has),
    fetched once per machine into `root` (default `cache_dir()/tools`).

    UvUnavailable, in one line, when the index cannot give it; for RETRY_AFTER_S after a
    failure the same error comes back at once, so that a search on a machine without an
    index does not wait on pip's retries at every attempt.
    """
    root = root or cache_dir() / "tools"
    version = version or newest_version(root)
    target = root / f"uv-{version}"
    if _complete(target):
        return target
    failed = _failures.get(target)
    if failed is not None and time.monotonic() - failed[0] < RETRY_AFTER_S:
        raise UvUnavailable(failed[1])
    root.mkdir(parents=True, exist_ok=True)
    with file_lock(root / f"uv-{version}.lock"):
        if not _complete(target):  # another run may have fetched it while we waited
            staging = root / f"uv-{version}.{secrets.token_hex(4)}.tmp"
            staging.mkdir()
            try:
                _fetch(version, staging)
                os.rename(staging, target)
            except UvUnavailable as error:
                _failures[target] = (time.monotonic(), str(error))
                raise
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    return target


def _complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in BINARIES)


def _pip(arguments: list[str]) -> subprocess.CompletedProcess[str]:
    """This interpreter's pip, with the machine's configuration (files and PIP_* variables)."""
    command = [sys.executable, "-m", "pip", *arguments, "--disable-pip-version-check"]
    try:
        return subprocess.run(
            [*command, "--no-input"], capture_output=True, text=True, timeout=FETCH_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        raise UvUnavailable(
            f"cannot fetch uv for the verifier: pip {arguments[0]} took over "
            f"{FETCH_TIMEOUT_S:.0f} s (is the package index reachable?)"
        ) from None


def _pip_error(done: subprocess.CompletedProcess[str]) -> str:
    """pip's own last word on why it failed, on one line, with the indexes it looked in and
    the connection error it retried on, if any ("no matching distribution" alone would hide
    an index that never answered)."""
    text = done.stderr + done.stdout
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR:")]
    said = (errors or lines or [f"exit {done.returncode}"])[-1]
    where = re.search(r"^Looking in indexes: (.+)$", text, re.M)
    broken = re.findall(r"connection broken by '\w+\(\"?(?:[^:]*: )?(.+?)\"?\)'", text)
    context = [f"looked in {where.group(1)}" if where else "", broken[-1] if broken else ""]
    context = [part for part in context if part]
    return (f"{said} ({'; '.join(context)})" if context else said)[:400]


def _fetch(version: str, folder: Path) -> None:
    """uv and uvx of `version` from the index's wheel, into `folder`."""
    download = folder / "wheel"
    done = _pip(
        [
            "download",
            f"uv=={version}",
            "--no-deps",
            "--only-binary=:all:",
            "--platform",
            wheel_platform(),
            "--progress-bar",
            "off",
            "--dest",
            str(download),
        ]
    )
    wheels = sorted(download.glob("uv-*.whl")) if download.is_dir() else []
    if done.returncode != 0 or not wheels:
        raise UvUnavailable(
            f"cannot fetch uv {version} for the verifier from the package index with "
            f"`{Path(sys.executable).name} -m pip download` (this machine's pip settings): "
            f"{_pip_error(done)}"
        )
    with zipfile.ZipFile(wheels[0]) as wheel:
        scripts = {
            posixpath.basename(member): member
            for member in wheel.namelist()
            if re.fullmatch(r"uv-[^/]+\.data/scripts/uvx?", member)
        }
        for name in BINARIES:
            if name not in scripts:
                raise UvUnavailable(f"{wheels[0].name}: no .data/scripts/{name} in the wheel")
            with wheel.open(scripts[name]) as source, open(folder / name, "wb") as target:
                shutil.copyfileobj(source, target)
            os.chmod(folder / name, 0o755)
    shutil.rmtree(download)


@functools.cache
def _index_newest() -> str:
    """The newest uv release on the index, asked once per process (pip's `index versions`)."""
    done = _pip(["index", "versions", "uv", "--only-binary=:all:", "--platform", wheel_platform()])
    found = re.match(r"uv \((?P<version>[^)]+)\)", done.stdout.strip())
    if done.returncode != 0 or not found:
        raise UvUnavailable(
            "cannot ask the package index for the newest uv (`pip index versions uv`): "
            f"{_pip_error(done)}"
        )
    return found.group("version")


def newest_version(root: Path) -> str:
    """The newest uv the index has; when the index cannot say, the newest fetched before."""
    try:
        return _index_newest()
    except UvUnavailable:
        cached = [p.name.removeprefix("uv-") for p in root.glob("uv-*") if _complete(p)]
        cached = [v for v in cached if _VERSION.fullmatch(v)]
        if not cached:
            raise
        return max(cached, key=lambda v: tuple(int(part) for part in v.split(".")))


def env_script(bin_dir: str) -> str:
    """`$HOME/.local/bin/env` as uv's installer leaves it: puts `bin_dir` first on PATH
    unless it is there already, so sourcing it twice changes nothing."""
    quoted = shlex.quote(bin_dir)
    return (
        "# Written by sprout for the verifier, as uv's installer would: uv and uvx on PATH.\n"
        f'case ":${{PATH}}:" in\n  *:{quoted}:*) ;;\n'
        f'  *) PATH={quoted}:"$PATH"; export PATH ;;\nesac\n'
    )


def install_uv(sandbox: Sandbox, binaries: Path) -> str:
    """Put uv, uvx and the `env` script into the sandbox's `$HOME/.local/bin`, as uv's
    installer would; returns that folder. Only for a verifier's throw-away fork."""
    # Made by the verifier's own user first, so that ~/.local stays that user's (uv writes
    # under it) when the Dockerfile's USER is not root; the files put there are root's.
    made = sandbox.run('mkdir -p "$HOME/.local/bin" && printf %s "$HOME"', timeout=30)
    home = made.output.strip() if made.exit_code == 0 else ""
    bin_dir = posixpath.join(home if home.startswith("/") else "/root", BIN_DIR)
    for name in BINARIES:
        sandbox.put(binaries / name, f"{bin_dir}/{name}")
    with tempfile.TemporaryDirectory(prefix="sprout-uv-") as staging:
        script = Path(staging, "env")
        script.write_text(env_script(bin_dir), encoding="utf-8")
        script.chmod(0o644)
        sandbox.put(script, f"{bin_dir}/env")
    return bin_dir
