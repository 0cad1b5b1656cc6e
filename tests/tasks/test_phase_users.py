"""task.toml's `[agent] user` and `[verifier] user`, as Harbor reads them: the agent (and the
oracle, which plays its part) runs as `[agent] user`, the verifier as `[verifier] user`, each
else as the Dockerfile's final USER; a user the image lacks is one line naming the field, and
a root verifier gives the agent nothing of root."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from sprout.task import Task, TaskError
from sprout.tasks import base_checkpoint_of, load_native, solution_checkpoint
from sprout.verify.runner import run_verifier
from tests.support.taskfolders import write_task

SETUP = (
    "FROM host\n"
    "RUN useradd -m -u 4244 -U app && useradd -M -u 4245 -U grader\n"
    # the canaries: a root-owned file root may write, and one only root may read
    "RUN echo untouched > /srv/canary && chmod 0644 /srv/canary\n"
    "RUN echo hidden > /srv/root-only && chmod 0600 /srv/root-only\n"
)
AS_APP = SETUP + "USER app\nWORKDIR /home/app\n"
WHO_VERIFIES = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\nid -un\n"
"""A test.sh that passes and says who ran it."""


def _task(tmp_path: Path, toml: str, dockerfile: str = AS_APP, test_sh: str = WHO_VERIFIES) -> Task:
    folder = write_task(
        tmp_path,
        "phases",
        instruction="Write done to ~/result.\n",
        toml=toml,
        dockerfile=dockerfile,
        solve="#!/bin/bash\nid -un > /tmp/oracle-was\necho done > ~/result\n",
        tests={"test.sh": test_sh},
    )
    return load_native(folder)


def _verifier_was(task: Task, layers: LayerStore, checkpoint: str, base: str) -> str:
    """Who the verifier ran as: what WHO_VERIFIES printed."""
    return run_verifier(task, layers, checkpoint, base).diagnostics.log_tail.strip()


@pytest.mark.sandbox
def test_the_agent_and_the_oracle_run_as_agent_user_and_the_verifier_as_the_images(
    overlay_store: LayerStore, tmp_path: Path
) -> None:
    task = _task(tmp_path, '[agent]\nuser = "app"\n', dockerfile=SETUP)
    assert (task.agent_user, task.verifier_user) == ("app", None)
    base = base_checkpoint_of(task, overlay_store)
    with Sandbox.fork(overlay_store, base) as agent:
        seen = agent.run('id -un; echo "$HOME"; stat -c %U /logs/agent /logs/verifier')
    assert seen.output.splitlines() == ["app", "/home/app", "app", "root"]
    with Sandbox.fork(overlay_store, solution_checkpoint(task, overlay_store, base)) as oracle:
        assert all(oracle.run(step.command).exit_code == 0 for step in task.solution)
        assert oracle.read("/tmp/oracle-was") == b"app\n"
        solved = oracle.checkpoint()
    assert _verifier_was(task, overlay_store, solved, base) == "root"  # the Dockerfile's


@pytest.mark.sandbox
def test_the_verifier_runs_as_verifier_user_and_the_agent_as_the_dockerfiles(
    overlay_store: LayerStore, tmp_path: Path
) -> None:
    task = _task(tmp_path, '[verifier]\nuser = "grader"\n')
    base = base_checkpoint_of(task, overlay_store)
    with Sandbox.fork(overlay_store, base) as agent:
        seen = agent.run("id -un; stat -c %U /logs/agent /logs/verifier; touch /logs/verifier/x")
    assert seen.output.splitlines()[:3] == ["app", "app", "grader"]
    assert seen.exit_code != 0  # the verifier's logs are not the agent's to write
    assert _verifier_was(task, overlay_store, base, base) == "grader"


@pytest.mark.sandbox
def test_a_uid_given_as_a_number_is_that_uid(overlay_store: LayerStore, tmp_path: Path) -> None:
    task = _task(tmp_path, "[agent]\nuser = 4245\n")
    assert task.agent_user == "4245"
    with Sandbox.fork(overlay_store, base_checkpoint_of(task, overlay_store)) as agent:
        assert agent.run("id -un").output == "grader\n"


@pytest.mark.sandbox
def test_a_root_verifier_gives_the_agent_nothing_of_root(
    overlay_store: LayerStore, tmp_path: Path
) -> None:
    """The canary: the unprivileged agent can neither write the root-owned file nor read the
    root-only one, nor plant a reward; the verifier, as root, does both."""
    test_sh = (
        "#!/bin/bash\n"
        'echo verified > /srv/canary && [ "$(cat /srv/root-only)" = hidden ] '
        '&& [ "$(cat ~/result)" = done ] && echo 1 > /logs/verifier/reward.txt '
        "|| echo 0 > /logs/verifier/reward.txt\n"
    )
    task = _task(tmp_path, '[verifier]\nuser = "root"\n', test_sh=test_sh.replace("~", "/home/app"))
    base = base_checkpoint_of(task, overlay_store)
    with Sandbox.fork(overlay_store, base) as agent:
        wrote = agent.run("echo tampered > /srv/canary")
        read = agent.run("cat /srv/root-only")
        planted = agent.run("echo 1 > /logs/verifier/reward.txt")
        agent.run("echo done > ~/result")
        attempt = agent.checkpoint()
    assert wrote.exit_code != 0 and "Permission denied" in wrote.output
    assert read.exit_code != 0 and "hidden" not in read.output
    assert planted.exit_code != 0
    assert overlay_store.read(attempt, "/srv/canary") == b"untouched\n"
    assert run_verifier(task, overlay_store, attempt, base).reward == 1.0
    assert run_verifier(task, overlay_store, base, base).reward == 0.0  # no ~/result yet
    # the verifier's fork is thrown away: its root write never reaches the agent
    assert overlay_store.read(attempt, "/srv/canary") == b"untouched\n"


@pytest.mark.parametrize(
    ("toml", "field"),
    [('[agent]\nuser = "ghost"\n', "agent"), ('[verifier]\nuser = "ghost"\n', "verifier")],
)
@pytest.mark.sandbox
def test_a_user_the_image_lacks_is_one_line_naming_the_field(
    overlay_store: LayerStore, tmp_path: Path, toml: str, field: str
) -> None:
    task = _task(tmp_path, toml)
    with pytest.raises(TaskError) as raised:
        base_checkpoint_of(task, overlay_store)
    assert str(raised.value) == (
        f"phases: task.toml: {field}.user: user 'ghost' is not in the image's /etc/passwd"
    )


@pytest.mark.sandbox
def test_the_base_layer_is_a_new_one_when_a_phase_user_changes(
    overlay_store: LayerStore, tmp_path: Path
) -> None:
    plain = base_checkpoint_of(_task(tmp_path / "a", ""), overlay_store)
    assert base_checkpoint_of(_task(tmp_path / "b", ""), overlay_store) == plain  # cached
    bases = {plain}
    for number, toml in enumerate(['[verifier]\nuser = "root"\n', '[agent]\nuser = "app"\n']):
        bases.add(base_checkpoint_of(_task(tmp_path / f"c{number}", toml), overlay_store))
    assert len(bases) == 3


def test_a_user_is_a_name_or_a_uid(tmp_path: Path) -> None:
    task = _task(tmp_path, '[agent]\nuser = "app:app"\n[verifier]\nuser = 0\n')
    assert (task.agent_user, task.verifier_user) == ("app:app", "0")
    assert _task(tmp_path / "none", "").agent_user is None


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        ('[agent]\nuser = ""\n', "agent.user: String should have at least 1 character"),
        ("[verifier]\nuser = true\n", "verifier.user: Input should be a valid string"),
        ("[agent]\nuser = -3\n", "agent.user: expected a user name or a uid of 0"),
    ],
)
def test_a_bad_user_field_is_one_line_naming_it(tmp_path: Path, toml: str, problem: str) -> None:
    with pytest.raises(TaskError) as raised:
        _task(tmp_path, toml)
    assert f"task.toml: {problem}" in str(raised.value)
    assert "\n" not in str(raised.value)
