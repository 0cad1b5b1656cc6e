"""A publisher's own Python code run in a child interpreter: the tables of a harness's fork
(SWE-Gym's) or a package sprout cannot import beside its own dependencies (SWE-smith's
profiles need another `swebench`). The child reads JSON on stdin and prints JSON; its
failure is one line naming the option that gave the interpreter or the checkout."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from sprout.errors import SproutError

TIMEOUT_S = 120


class ChildFailed(SproutError):
    """The child could not run, ran past its time or printed no JSON; the message is one
    line beginning with `where` (the option and its value)."""


def run_child(
    python: str,
    script: str,
    *args: str,
    given: Any = None,
    where: str,
    failing: str = "failed",
    cwd: str | None = None,
) -> Any:
    """What `python -I -c script args...` prints as JSON, fed `given` as JSON on stdin; a
    child that exits non-zero is `WHERE: FAILING: its last line of stderr`."""
    try:
        done = subprocess.run(
            [python, "-I", "-c", script, *args],
            input=json.dumps(given),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            cwd=cwd,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ChildFailed(f"{where}: took over {TIMEOUT_S} s") from None
    except OSError as error:
        raise ChildFailed(f"{where}: cannot be run ({error.strerror})") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ChildFailed(f"{where}: {failing}: {last}")
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        raise ChildFailed(f"{where}: printed no JSON") from None
