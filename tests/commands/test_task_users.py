"""task.toml's `[agent] user` and `[verifier] user` through the command line: `sprout tasks
check` runs the oracle as the agent's user and the verifier as its own, a bad value is bad
input, and a user the image lacks is the task's one-line problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.cli import main
from tests.support.requirements import require_host_image
from tests.support.taskfolders import write_task

DOCKERFILE = (
    "FROM host\n"
    "RUN useradd -m -u 4246 -U app && echo 42 > /srv/answer && chmod 0600 /srv/answer\n"
    "USER app\n"
    "WORKDIR /home/app\n"
)
NEEDS_ROOT = (  # reads what only root may, and checks the agent's work
    "#!/bin/bash\n"
    '[ "$(id -u)" = 0 ] && [ "$(cat /home/app/answer)" = "$(cat /srv/answer)" ] '
    "&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
)


def _task(root: Path, toml: str) -> Path:
    return write_task(
        root,
        "graded-as-root",
        instruction="Write 42 to ~/answer.\n",
        toml=toml,
        dockerfile=DOCKERFILE,
        solve='#!/bin/bash\n[ "$(id -un)" = app ] && echo 42 > ~/answer\n',
        tests={"test.sh": NEEDS_ROOT},
    )


def rows(printed: str) -> dict[str, str]:
    """The table's rows by task id."""
    return {line.split()[0]: line for line in printed.splitlines()[1:] if line.strip()}


@pytest.mark.sandbox
def test_tasks_check_passes_a_task_whose_verifier_needs_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    folder = _task(tmp_path, '[verifier]\nuser = "root"\n')
    assert main(["tasks", "check", str(folder)]) == 0
    row = rows(capsys.readouterr().out)["graded-as-root"]
    assert row.split()[1:3] == ["fail", "pass"], row
    assert row.endswith("  ok"), row


@pytest.mark.sandbox
def test_without_verifier_user_the_same_task_is_broken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The verifier runs as the Dockerfile's USER, which cannot read /srv/answer."""
    require_host_image()
    assert main(["tasks", "check", str(_task(tmp_path, ""))]) == 1
    assert "oracle fails" in rows(capsys.readouterr().out)["graded-as-root"]


@pytest.mark.sandbox
def test_a_user_the_image_lacks_is_the_tasks_one_line_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    assert main(["tasks", "check", str(_task(tmp_path, '[agent]\nuser = "ghost"\n'))]) == 1
    row = rows(capsys.readouterr().out)["graded-as-root"]
    assert row.endswith("task.toml: agent.user: user 'ghost' is not in the image's /etc/passwd")


def test_a_malformed_user_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _task(tmp_path, "[verifier]\nuser = true\n")
    out = tmp_path / "run"
    assert main(["run", str(folder), "--model", "oracle", "--out", str(out), "--quiet"]) == 2
    errors = capsys.readouterr().err
    assert "task.toml: verifier.user: Input should be a valid string" in errors
