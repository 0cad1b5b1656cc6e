"""A minimal root filesystem built from this machine's own programs: an image any user can
read, for the tests that need a directory image rather than the `host` one."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOTFS_TOOLS = ("env", "ls", "cat", "mkdir", "rm", "echo", "mv", "ln", "sleep", "stat", "chmod")
"""Programs copied into the minimal root filesystem, besides /bin/sh."""


def shared_libraries(program: str) -> list[str]:
    """The shared libraries `program` loads, as `ldd` lists them (absolute paths)."""
    output = subprocess.run(["ldd", program], capture_output=True, text=True).stdout
    return re.findall(r"(/\S+) \(0x[0-9a-f]+\)", output)


def build_rootfs(root: Path, extra: tuple[str, ...] = ()) -> None:
    """A minimal root filesystem: dash as /bin/sh, a few coreutils (and the `extra` programs)
    and their libraries."""
    for sub in ("bin", "lib", "lib64", "usr/bin", "etc", "proc", "dev", "tmp", "root"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    programs = {"sh": shutil.which("dash") or "/bin/sh"}
    for tool in (*ROOTFS_TOOLS, *extra):
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not installed on this machine; the minimal rootfs needs it")
        programs[tool] = found
    libraries: set[str] = set()
    for name, program in programs.items():
        shutil.copy(os.path.realpath(program), root / "bin" / name)
        libraries.update(shared_libraries(program))
    for library in libraries:
        target = root / library.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.realpath(library), target)
    (root / "usr/bin/env").symlink_to("/bin/env")
    (root / "etc/hostname").write_text("image\n")
    (root / "tmp").chmod(0o1777)
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
