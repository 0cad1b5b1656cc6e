"""A tour of the checkpointed sandbox: what `make demo` shows until `sprout run` lands.

An agent's attempt is played as a few turns in a sandbox over this machine's
root filesystem. Each turn is sealed as a checkpoint; then a branch forks the
checkpoint before the mistake and continues from there, re-executing nothing.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from sprout.sandbox import LayerStore, Sandbox
from sprout.sandbox.jail.modes import overlay_unavailable_reason

TURNS = [
    ("explore", "ls -la && cat calc.py"),
    (
        "install a tool",
        "mkdir -p /opt/tools && printf '#!/bin/sh\\necho linted\\n' > "
        "/opt/tools/lint && chmod +x /opt/tools/lint && /opt/tools/lint",
    ),
    ("the mistake: delete the tests", "rm -r tests && echo 'tests removed'"),
    ("run the tests", "python3 -m unittest discover -s tests 2>&1 | tail -3"),
]
FIX = (
    "the better turn: fix the bug",
    "sed -i 's/a - b/a + b/' calc.py && python3 -m unittest discover -s tests 2>&1 | tail -1",
)


def make_task(root: Path) -> Path:
    files = root / "task"
    (files / "tests").mkdir(parents=True)
    (files / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (files / "tests" / "test_calc.py").write_text(
        "import unittest, sys\nsys.path.insert(0, '.')\nfrom calc import add\n\n"
        "class T(unittest.TestCase):\n    def test_add(self):\n"
        "        self.assertEqual(add(2, 2), 4)\n"
    )
    return files


def show(label: str, sandbox: Sandbox, command: str) -> str:
    started = time.perf_counter()
    observation = sandbox.run(command, timeout=30)
    ran = (time.perf_counter() - started) * 1000
    before = sandbox.parent
    started = time.perf_counter()
    checkpoint = sandbox.checkpoint()
    sealed = (time.perf_counter() - started) * 1000
    print(f"\n$ {command}\n{observation.output.rstrip()}")
    saved = (
        f"checkpoint {checkpoint} sealed in {sealed:.1f} ms"
        if checkpoint != before
        else f"wrote nothing: checkpoint stays {checkpoint}, no layer added"
    )
    print(f"  [{label}] exit {observation.exit_code}, ran {ran:.1f} ms, {saved}")
    return checkpoint


def main() -> int:
    reason = overlay_unavailable_reason()
    print("sprout-rl sandbox tour")
    print(f"backend: {'copy (no isolation: ' + reason + ')' if reason else 'overlay'}")
    with tempfile.TemporaryDirectory(prefix="sprout-tour-") as tmp:
        store = LayerStore(Path(tmp) / "layers")
        with Sandbox.create(store, files=make_task(Path(tmp))) as root:
            checkpoints = [root.parent]
            for label, command in TURNS:
                checkpoints.append(show(label, root, command))
            print(f"\nroot attempt: turns 1-{len(TURNS)} sealed as {', '.join(checkpoints[1:])}")
            print("changes made by the mistaken turn 3:")
            for change in root.changes(since=checkpoints[2]):
                print(f"  {change.kind:8} {change.path}")
        boundary = 2
        print(
            f"\nbranch: fork checkpoint {checkpoints[boundary]} (after turn {boundary}); "
            "turns 1-2 are reused, not re-executed"
        )
        started = time.perf_counter()
        with Sandbox.fork(store, checkpoints[boundary]) as branch:
            print(f"  fork took {(time.perf_counter() - started) * 1000:.1f} ms")
            show("tool still installed", branch, "/opt/tools/lint && ls tests")
            show(FIX[0], branch, FIX[1])
        layers = store.layers()
        print(
            f"\nstore: {len(layers)} layers, {sum(layer.size for layer in layers) / 1024:.0f} KiB "
            "on disk; the host's /opt/tools does not exist:",
            not Path("/opt/tools/lint").exists(),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
