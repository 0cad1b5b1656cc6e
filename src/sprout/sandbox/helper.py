"""Building the `sprout-box` helper (box.c) once per source version, on first use."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from functools import cache
from pathlib import Path

from sprout.sandbox.errors import SandboxUnavailable

SOURCE = Path(__file__).with_name("box.c")
_build_lock = threading.Lock()


def _cache_dir() -> Path:
    configured = os.environ.get("SPROUT_CACHE")
    if configured:
        return Path(configured)
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    if os.access(home.parent if not home.exists() else home, os.W_OK):
        return home / "sprout"
    return Path(tempfile.gettempdir()) / f"sprout-{os.getuid()}"


def helper_path() -> str:
    """The compiled helper, built into the cache directory if this source version has none."""
    with _build_lock:
        return _build_once()


@cache
def _build_once() -> str:
    source = SOURCE.read_bytes()
    target = _cache_dir() / f"sprout-box-{hashlib.sha256(source).hexdigest()[:12]}"
    if target.exists():
        return str(target)
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        raise SandboxUnavailable(
            "the overlay backend builds a small C helper once and needs a C compiler: "
            "install gcc (apt-get install gcc) or open the store with mode='copy'"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")  # processes race; rename wins
    result = subprocess.run(
        [compiler, "-O2", "-Wall", "-o", str(temporary), str(SOURCE)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SandboxUnavailable(f"building {SOURCE} with {compiler} failed:\n{result.stderr}")
    os.replace(temporary, target)
    return str(target)
