"""Running programs as `nobody`, the unprivileged user: the tests run as root and switch to
it for a small script that prints what it saw as JSON."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

NOBODY = 65534
"""nobody's uid and gid."""


def switch_user_prefix() -> list[str]:
    """The command prefix that runs a program as `nobody`, or a skip."""
    if os.geteuid() != 0:
        pytest.skip("switching to an unprivileged user needs root")
    if shutil.which("setpriv"):
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    if shutil.which("su"):
        return ["su", "nobody", "-s", "/bin/sh", "-c"]
    pytest.skip("neither setpriv nor su is installed")


def as_nobody(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`argv` run as `nobody` with exactly the environment `env`."""
    prefix = switch_user_prefix()
    if prefix[0] == "su":
        assignments = [f"{k}={v}" for k, v in env.items()]
        argv = [*prefix, shlex.join(["env", "-i", *assignments, *argv])]
    else:
        argv = [*prefix, *argv]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def run_script(script: str, args: list[str], env: dict[str, str]) -> str:
    """What the Python `script` prints, run with `args` as `nobody` (which it must pass)."""
    result = as_nobody([sys.executable, "-c", script, *args], env)
    assert result.returncode == 0, f"the script failed as nobody:\n{result.stderr}"
    return result.stdout


def run_in_image(
    script: str, image: Path, nobody_dir: Path, marker: str, env: dict[str, str]
) -> Any:
    """The JSON `script` prints, run as `nobody` with the image, a store in `nobody_dir`
    and `marker` as its arguments."""
    store_path = nobody_dir / "store"
    return json.loads(run_script(script, [str(image), str(store_path), marker], env))
