"""Where this machine's administration tools are: `nft` and `ip` live in /usr/sbin, which an
unprivileged user's PATH often leaves out, yet a rootless sandbox's network needs them."""

from __future__ import annotations

import os
import shutil

SYSTEM_DIRS = ("/usr/sbin", "/sbin")


def system_tool(name: str) -> str | None:
    """The path of `name` on PATH or in the system directories; None where neither has it."""
    path = os.pathsep.join([os.environ.get("PATH", os.defpath), *SYSTEM_DIRS])
    return shutil.which(name, path=path)
