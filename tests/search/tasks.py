"""A two-edit task written into a test's folder: small enough to run every schedule on."""

from __future__ import annotations

from pathlib import Path

SOLVE = """#!/bin/bash
# step
echo 1 > a.txt
# wrong: echo 9 > a.txt
# step
echo 2 > b.txt
# wrong: echo 9 > b.txt
# trap: echo 3 > b.txt
# trap names: b.txt
"""

TRAPPED = "oracle-noise:errors=trap,q=1,p=0"
"""Every attempt falls into step 2's trap, unless a turn in its context names b.txt."""

TEST = """#!/bin/bash
cd /workspace
for pair in a.txt:1 b.txt:2; do
  file=${pair%:*} want=${pair#*:}
  [ "$(cat $file)" = "$want" ] || echo "$file:1: expected $want, found $(cat $file)"
done
if [ "$(cat a.txt)" = 1 ] && [ "$(cat b.txt)" = 2 ]; then echo 1; else echo 0; fi \\
  > /logs/verifier/reward.txt
"""


def write_task(root: Path, name: str = "two-edits", *, slow_step: float = 0.0) -> Path:
    """A native task: a.txt must say 1 and b.txt 2; both start at 0. Its verifier names each
    wrong file (`b.txt:1: expected 2, found 3`); step 2 has a trap (`echo 3 > b.txt`).

    `slow_step` makes every step sleep that long first, so a test can kill a run mid-turn.
    """
    task = root / name
    (task / "solution").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "instruction.md").write_text("Put 1 in a.txt and 2 in b.txt.\n")
    (task / "task.toml").write_text(
        '[verifier]\ntimeout_sec = 30\n\n[sprout]\nimage = "host"\nnetwork = false\n'
        'setup = ["echo 0 > a.txt && echo 0 > b.txt"]\n'
    )
    solve = SOLVE
    if slow_step:
        solve = solve.replace("# step\n", f"# step\nsleep {slow_step}\n")
    (task / "solution" / "solve.sh").write_text(solve)
    (task / "tests" / "test.sh").write_text(TEST)
    return task
