"""Small native tasks for `sprout tasks check`: a sound one and each way a task can be broken."""

from __future__ import annotations

from pathlib import Path

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"

SOLVE = """#!/bin/bash
set -e
cd /app
# step
cat calc.py
# step
sed -i 's/a - b/a + b/' calc.py
# wrong: sed -i 's/a - b/a * b/' calc.py
"""

TEST_SH = """#!/bin/bash
# TAP, so that these tests need nothing but the shell and python3.
cd /app
check() {
  if python3 -c "$2" >/dev/null 2>&1; then echo "ok $1"; else
    echo "not ok $1"; echo "  ---"; echo "  message: $3"; echo "  ..."; fi
}
echo 1..2
check "1 - imports" "import calc" "calc does not import"
check "2 - add" "import calc; assert calc.add(2, 3) == 5" "add(2, 3) != 5"
"""


def write_task(
    root: Path,
    name: str,
    *,
    code: str = BUGGY,
    solve: str | None = SOLVE,
    toml: str = "",
) -> Path:
    """A task whose /app/calc.py holds `code`; the hidden tests want add(2, 3) == 5."""
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "calc.py").write_text(code)
    (task / "environment" / "Dockerfile").write_text("FROM host\nWORKDIR /app\nCOPY calc.py .\n")
    (task / "instruction.md").write_text("add() in calc.py subtracts. Make it add.\n")
    (task / "task.toml").write_text(
        f'[verifier]\ntimeout_sec = 30\n\n[sprout]\nimage = "host"\nresults = "tap"\n{toml}'
    )
    if solve is not None:
        (task / "solution").mkdir()
        (task / "solution" / "solve.sh").write_text(solve)
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text(TEST_SH)
    return task
