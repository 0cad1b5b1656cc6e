"""A minimal root filesystem with Debian's Python 3.11, for the tests' images of
benchmark families (SWE-bench, SWE-bench Pro, R2E-Gym rows): small enough to build per
test, real enough that the rows' own test commands run in it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.rootfs import build_rootfs

STDLIB_LEFT_OUT = ("test", "idlelib", "tkinter", "ensurepip", "lib2to3", "pydoc_data")


def python_rootfs(root: Path) -> None:
    """The minimal root filesystem with Debian's Python 3.11 (its stdlib, less its tests),
    git (the oracle applies the gold patch with it) and bash (the eval script's shell)."""
    python = Path("/usr/bin/python3.11")
    if not python.exists():
        pytest.skip("Debian's python3.11 is needed for the image of this test")
    build_rootfs(root, extra=("bash", "git"))
    shutil.copy(python, root / "bin/python3")
    output = subprocess.run(["ldd", str(python)], capture_output=True, text=True).stdout
    for library in re.findall(r"(/\S+) \(0x[0-9a-f]+\)", output):
        target = root / library.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.realpath(library), target)
    shutil.copytree(
        "/usr/lib/python3.11",
        root / "usr/lib/python3.11",
        ignore=shutil.ignore_patterns(*STDLIB_LEFT_OUT, "__pycache__", "dist-packages"),
        symlinks=True,
    )
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
