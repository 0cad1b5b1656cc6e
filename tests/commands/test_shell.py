"""`sprout shell RUN ATTEMPT:k`: a throw-away shell in any stored checkpoint."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest

from sprout.agent import Actor
from sprout.models import Choice, Completion
from sprout.runfolder import RunFolder
from sprout.sandbox import Sandbox, SandboxWorkspace
from tests.support.repo_paths import SPROUT

pytestmark = pytest.mark.sandbox


class Scripted:
    name = "scripted"

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)

    def complete(self, messages, **kwargs) -> Completion:
        return Completion((Choice(self.replies.pop(0)),), 1, 1)


def block(command: str) -> str:
    return f"```bash\n{command}\n```"


@pytest.fixture
def run_folder(overlay_store, tmp_path) -> Path:
    """A run whose attempt 1 wrote `greeting` in turn 1 and `second` in turn 2."""
    del overlay_store  # only for its skip-or-fail check on this machine
    run = RunFolder.create(tmp_path / "run")
    with Sandbox.create(run.layers) as sandbox:
        base = sandbox.parent
    run.tree.add_task("t", {})
    actor = Actor(
        Scripted(
            [block("echo hello > greeting"), block("echo 2 > second"), block("echo SPROUT_SUBMIT")]
        ),
        run.tree,
        SandboxWorkspace(run.layers),
    )
    attempt = actor.run(run.tree.root("t", actor.prefix("task", "/workspace"), base))
    assert attempt.status == "submitted"
    run.close()
    return tmp_path / "run"


def shell(run: Path, ref: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SPROUT), "shell", str(run), ref],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_shell_sees_exactly_the_checkpoint(run_folder):
    after_one = shell(run_folder, "1:1", "ls; cat greeting\n")
    assert after_one.returncode == 0, after_one.stderr
    assert after_one.stdout == "greeting\nhello\n"
    untouched = shell(run_folder, "1:0", "ls | wc -l\n")
    assert untouched.stdout == "0\n"
    last = shell(run_folder, "1", "ls\n")
    assert last.stdout.split() == ["greeting", "second"]


def test_shell_is_thrown_away(run_folder):
    assert shell(run_folder, "1:1", "echo scribble > greeting; exit 4\n").returncode == 4
    assert shell(run_folder, "1:1", "cat greeting\n").stdout == "hello\n"


@pytest.mark.parametrize(
    ("ref", "message"),
    [("9:1", "attempt 9"), ("1:7", "boundary 7"), ("one:1", "'one:1'")],
)
def test_bad_references_exit_2_with_one_line(run_folder, ref, message):
    result = shell(run_folder, ref, "")
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_not_a_run_folder(tmp_path):
    result = shell(tmp_path, "1:1", "")
    assert result.returncode == 2
    assert "not a run folder" in result.stderr


def test_interactive_on_a_terminal(run_folder):
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(SPROUT, [str(SPROUT), "shell", str(run_folder), "1:1"])
    os.write(fd, b"echo answer=$((6*7)); cat greeting; exit\n")
    seen = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and b"hello" not in seen:
        if select.select([fd], [], [], 0.5)[0]:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    os.kill(pid, 9) if b"hello" not in seen else None
    os.waitpid(pid, 0)
    assert b"answer=42" in seen
    assert b"hello" in seen
