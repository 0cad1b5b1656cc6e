"""Task folders on disk for tests: the one builder of the native layout (Terminal-Bench 2 /
Harbor plus `[sprout]`) and of Terminal-Bench 1 folders, and the tasks several tests share.

A test says what its task holds (instruction, task.toml's text, Dockerfile and build
context, solution, hidden tests); the builder lays the files out where the loaders look.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

Content = str | bytes
"""A file's text, or its bytes (for files that must not be UTF-8)."""


def write_files(folder: Path, files: Mapping[str, Content]) -> Path:
    """Write `files` (a path relative to `folder` -> its content) under `folder`, making
    the folders they need; return `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return folder


def write_task(
    root: Path,
    name: str,
    *,
    instruction: str,
    tests: Mapping[str, Content],
    toml: str | None = None,
    dockerfile: str | None = None,
    environment: Mapping[str, Content] | None = None,
    solve: str | None = None,
    solution: Mapping[str, Content] | None = None,
) -> Path:
    """A native task folder `root/name`, returned.

    `instruction` is instruction.md; `tests` the files of tests/ (test.sh and what it reads);
    `toml` task.toml's text as written (none: no task.toml); `dockerfile` is
    environment/Dockerfile and `environment` the other files of its build context; `solve`
    is solution/solve.sh and `solution` the other files of solution/. A part left out is
    not written, so a test can leave out what a loader must do without.
    """
    files: dict[str, Content] = {"instruction.md": instruction}
    if toml is not None:
        files["task.toml"] = toml
    if dockerfile is not None:
        files["environment/Dockerfile"] = dockerfile
    files.update({f"environment/{path}": content for path, content in (environment or {}).items()})
    if solve is not None:
        files["solution/solve.sh"] = solve
    files.update({f"solution/{path}": content for path, content in (solution or {}).items()})
    files.update({f"tests/{path}": content for path, content in tests.items()})
    return write_files(root / name, files)


def write_tb1_task(root: Path, name: str, files: Mapping[str, Content]) -> Path:
    """A Terminal-Bench 1 folder `root/name`: `files` by their paths in it (task.yaml, the
    Dockerfile and its context, run-tests.sh, solution.sh, tests/...); tests/ is always made."""
    folder = write_files(root / name, files)
    (folder / "tests").mkdir(exist_ok=True)
    return folder


# --- the two-edit task: small enough to run every schedule on --------------------------------

TWO_EDITS_SOLVE = """#!/bin/bash
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

TWO_EDITS_TEST = """#!/bin/bash
cd /workspace
for pair in a.txt:1 b.txt:2; do
  file=${pair%:*} want=${pair#*:}
  [ "$(cat $file)" = "$want" ] || echo "$file:1: expected $want, found $(cat $file)"
done
if [ "$(cat a.txt)" = 1 ] && [ "$(cat b.txt)" = 2 ]; then echo 1; else echo 0; fi \\
  > /logs/verifier/reward.txt
"""


TWO_EDITS = "two-edits"
"""The two-edit task's name, where a test leaves it as it is."""


def two_edits_task(root: Path, name: str = TWO_EDITS, *, slow_step: float = 0.0) -> Path:
    """A native task: a.txt must say 1 and b.txt 2; both start at 0. Its verifier names each
    wrong file (`b.txt:1: expected 2, found 3`); step 2 has a trap (`echo 3 > b.txt`).

    `slow_step` makes every step sleep that long first, so a test can kill a run mid-turn.
    """
    solve = TWO_EDITS_SOLVE
    if slow_step:
        solve = solve.replace("# step\n", f"# step\nsleep {slow_step}\n")
    return write_task(
        root,
        name,
        instruction="Put 1 in a.txt and 2 in b.txt.\n",
        toml='[verifier]\ntimeout_sec = 30\n\n[sprout]\nimage = "host"\nnetwork = false\n'
        'setup = ["echo 0 > a.txt && echo 0 > b.txt"]\n',
        solve=solve,
        tests={"test.sh": TWO_EDITS_TEST},
    )


# --- the calc task: for `sprout tasks check`, sound or broken each way a task can be ---------

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"

CALC_SOLVE = """#!/bin/bash
set -e
cd /app
# step
cat calc.py
# step
sed -i 's/a - b/a + b/' calc.py
# wrong: sed -i 's/a - b/a * b/' calc.py
"""

CALC_TEST_SH = """#!/bin/bash
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


def calc_task(
    root: Path,
    name: str,
    *,
    code: str = BUGGY,
    solve: str | None = CALC_SOLVE,
    toml: str = "",
) -> Path:
    """A task whose /app/calc.py holds `code`; the hidden tests want add(2, 3) == 5.
    `toml` goes at the end of task.toml's [sprout] table; `solve=None` leaves out solution/."""
    return write_task(
        root,
        name,
        instruction="add() in calc.py subtracts. Make it add.\n",
        toml=f'[verifier]\ntimeout_sec = 30\n\n[sprout]\nimage = "host"\nresults = "tap"\n{toml}',
        dockerfile="FROM host\nWORKDIR /app\nCOPY calc.py .\n",
        environment={"calc.py": code},
        solve=solve,
        tests={"test.sh": CALC_TEST_SH},
    )


# --- fix-calc: a native task over a Dockerfile of each kind of step ----------------------

FIX_CALC_DOCKERFILE = """\
FROM python:3.11-slim
ARG GREETING=hello
ENV APP_MODE=test \\
    OTHER=1
WORKDIR /app
COPY src/ /app/src/
COPY setup.cfg .
RUN echo "$GREETING $APP_MODE" > built.txt && date +%s%N > stamp
"""
"""fix-calc's Dockerfile: an ARG, a multi-line ENV, a WORKDIR, COPYs and a RUN."""


def fix_calc_task(root: Path, dockerfile: str = FIX_CALC_DOCKERFILE, toml: str = "") -> Path:
    """A native task `fix-calc` whose Dockerfile builds src/calc.py's bug: `toml` goes at
    the end of its task.toml, after its [verifier] table."""
    return write_task(
        root,
        "fix-calc",
        instruction="Fix add() in src/calc.py.\n",
        toml='version = "1.0"\n[verifier]\ntimeout_sec = 60\n' + toml,
        dockerfile=dockerfile,
        environment={
            "src/calc.py": "def add(a, b):\n    return a - b\n",
            "setup.cfg": "[metadata]\nname = calc\n",
        },
        solve="#!/bin/bash\nset -e\n# step\ncat src/calc.py\n# step\n"
        "sed -i 's/a - b/a + b/' src/calc.py\n# wrong: sed -i 's/a - b/a * b/' src/calc.py\n",
        tests={"test.sh": "python3 -c 'import sys'\n"},
    )


# --- hello: a Terminal-Bench 1 task, as its harness lays one out ---------------------------

HELLO_TASK_YAML = """\
# Terminal-Bench Canary String, DO NOT REMOVE
instruction: |-
  Write "Hello, world!" to /app/hello.txt.
author_email: someone@example.com
difficulty: easy
tags: [file-operations]
parser_name: pytest
max_agent_timeout_sec: 120.0
max_test_timeout_sec: 30
run_tests_in_same_shell: false
"""

HELLO_RUN_TESTS = """\
#!/bin/bash
if [ "$PWD" = "/" ]; then echo "no WORKDIR"; exit 1; fi
/usr/bin/python3 -m pytest -p no:cacheprovider "$TEST_DIR/test_outputs.py" -rA
"""

HELLO_TEST_OUTPUTS = """\
from pathlib import Path


def test_greeting_was_copied():
    assert Path("/app/greeting.txt").read_text() == "Hello\\n"


def test_hello_file():
    assert Path("/app/hello.txt").read_text().strip() == "Hello, world!"
"""


def hello_tb1_task(root: Path, files: dict[str, str] | None = None) -> Path:
    """A TB1 folder `hello` (write "Hello, world!" to /app/hello.txt); `files` replace or add
    files by name (an empty text leaves one out)."""
    contents = {
        "task.yaml": HELLO_TASK_YAML,
        "Dockerfile": "FROM ubuntu:24.04\nWORKDIR /app\nCOPY greeting.txt /app/greeting.txt\n",
        "greeting.txt": "Hello\n",
        "run-tests.sh": HELLO_RUN_TESTS,
        "tests/test_outputs.py": HELLO_TEST_OUTPUTS,
        "solution.sh": "#!/bin/bash\n# step\ncat greeting.txt\n# step\n"
        "echo 'Hello, world!' > /app/hello.txt\n",
        "docker-compose.yaml": "services:\n  client:\n    build:\n      context: .\n",
    }
    contents.update(files or {})
    return write_tb1_task(root, "hello", {name: text for name, text in contents.items() if text})


# --- long-explore: a task an explorer reads for hundreds of turns ---------------------------

LONG_RECORDS = 5000
"""Lines of data/records.log, the long task's answer."""

LONG_TEST_SH = f"""#!/bin/bash
# TAP, naming the file that is wrong, so the verifier's findings say what failed.
cd /workspace
found=$(cat answer.txt 2>/dev/null)
echo 1..1
if [ "$found" = {LONG_RECORDS} ]; then echo "ok 1 - answer"; else
  echo "not ok 1 - answer"; echo "  ---"
  echo "  message: answer.txt: expected {LONG_RECORDS}, found $found"; echo "  ..."; fi
"""


def long_task(root: Path, name: str = "long-explore", *, parts: int = 300) -> Path:
    """A native task on the host image without network: count the lines of
    data/records.log (5,000) into answer.txt. Set-up makes data/, with `parts`
    logs of 2,000 lines each to explore (data/part-N.log, N from 1); the hidden test
    names answer.txt and what it found when the count is wrong."""
    setup = (
        f"mkdir data && seq 1 {LONG_RECORDS} | sed 's/^/record /' > data/records.log && "
        f'for n in $(seq 1 {parts}); do seq -f "part $n line %g" 1 2000 > data/part-$n.log; '
        "done"
    )
    return write_task(
        root,
        name,
        instruction="Count the lines of data/records.log and write the count to answer.txt.\n",
        toml='[verifier]\ntimeout_sec = 30\n\n[sprout]\nimage = "host"\nnetwork = false\n'
        f'results = "tap"\nsetup = [{json.dumps(setup)}]\n',
        solve="#!/bin/bash\n# step\nwc -l < data/records.log > answer.txt\n",
        tests={"test.sh": LONG_TEST_SH},
    )


# --- a Terminal-Bench 2 task exactly as Harbor reads it: no `[sprout]` table -------------

COUNT_TEST = """#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/count.txt)" = 1 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""


def harbor_task(root: Path, name: str = "count") -> Path:
    """A TB2 task Harbor runs as it is: /app/count.txt must say 1 (it starts at 0); its
    verifier writes Harbor's reward.txt; its agent runs as the user `agent` with no network,
    and its solution writes the 1, who it ran as (who.txt) and how many routes it had
    (routes.txt: none without a network; read from /proc, no packet sent)."""
    return write_task(
        root,
        name,
        instruction="Put 1 in /app/count.txt.\n",
        toml='version = "1.0"\n\n[verifier]\ntimeout_sec = 60\n\n'
        '[agent]\ntimeout_sec = 60\nuser = "agent"\nnetwork_mode = "no-network"\n\n'
        "[environment]\nbuild_timeout_sec = 600\ncpus = 1\nmemory_mb = 1024\n",
        dockerfile="FROM python:3.11-slim\nRUN useradd -m agent\nWORKDIR /app\n"
        "RUN echo 0 > /app/count.txt && chown -R agent /app\n",
        solve="#!/bin/bash\necho 1 > /app/count.txt\nid -un > /app/who.txt\n"
        "awk 'NR > 1' /proc/net/route | wc -l > /app/routes.txt\n",
        tests={"test.sh": COUNT_TEST},
    )
