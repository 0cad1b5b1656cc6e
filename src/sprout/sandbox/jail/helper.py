"""Building the `sprout-box` helper (box.c) once per source version, on first use."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from sprout.durable import cache_dir
from sprout.sandbox.errors import SandboxUnavailable

SOURCE = Path(__file__).with_name("box.c")
_build_lock = threading.Lock()


@dataclass(frozen=True)
class HelperBuild:
    """The compiled helper and its seccomp programs (compiled once: libseccomp takes
    milliseconds, loading a finished program microseconds)."""

    path: str
    filter: str | None = None
    """The BPF program every call loads; None without libseccomp."""
    filter_with_userns: str | None = None
    """The program for sandboxes that asked for user namespaces of their own."""
    note: str = ""
    """Why seccomp is missing, when it is."""

    @property
    def seccomp(self) -> bool:
        return self.filter is not None


def helper_path() -> str:
    """The compiled helper, built into the cache directory if this source version has none."""
    return helper_build().path


def helper_build() -> HelperBuild:
    """The helper with seccomp when libseccomp's headers are installed, else without it."""
    with _build_lock:
        return _build_once()


SECCOMP_MISSING = "libseccomp's headers are missing (apt-get install libseccomp-dev)"


@cache
def _build_once() -> HelperBuild:
    source = SOURCE.read_bytes()
    stem = cache_dir() / f"sprout-box-{hashlib.sha256(source).hexdigest()[:12]}"
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    with_seccomp = stem.with_name(stem.name + "-seccomp")
    without = stem
    if not with_seccomp.exists():
        if compiler is None:
            if without.exists():
                return HelperBuild(str(without), note=SECCOMP_MISSING)
            raise SandboxUnavailable(
                "the overlay backend builds a small C helper once and needs a C compiler: "
                "install gcc (apt-get install gcc) or open the store with mode='copy'"
            )
        failure = _compile(compiler, with_seccomp, ["-DSPROUT_SECCOMP"], ["-lseccomp"])
        if failure is not None and "seccomp" not in failure:
            raise SandboxUnavailable(f"building {SOURCE} with {compiler} failed:\n{failure}")
        if failure is not None:
            if not without.exists():
                failure = _compile(compiler, without, [], [])
                if failure is not None:
                    raise SandboxUnavailable(
                        f"building {SOURCE} with {compiler} failed:\n{failure}"
                    )
            return HelperBuild(str(without), note=SECCOMP_MISSING)
    return HelperBuild(
        str(with_seccomp),
        _seccomp_program(with_seccomp, "bpf", []),
        _seccomp_program(with_seccomp, "userns.bpf", ["--nested-userns"]),
    )


def _seccomp_program(helper: Path, suffix: str, options: list[str]) -> str:
    """The helper's seccomp program, written once beside it."""
    target = helper.with_name(f"{helper.name}.{suffix}")
    if not target.exists():
        temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        done = subprocess.run(
            [str(helper), "--write-seccomp", str(temporary), *options],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SandboxUnavailable(f"{helper}: cannot write its seccomp filter: {done.stderr}")
        os.replace(temporary, target)
    return str(target)


def _compile(compiler: str, target: Path, defines: list[str], libraries: list[str]) -> str | None:
    """Build the helper at `target`; the compiler's messages when it fails."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")  # processes race; rename wins
    result = subprocess.run(
        [compiler, "-O2", "-Wall", *defines, "-o", str(temporary), str(SOURCE), *libraries],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        temporary.unlink(missing_ok=True)
        return result.stderr
    os.replace(temporary, target)
    return None
