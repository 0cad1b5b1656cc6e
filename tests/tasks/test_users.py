"""A Dockerfile's final USER is who the agent, the oracle and the verifier run as (as Harbor
runs a task's commands in its container), WORKDIR after USER belongs to that user (as
BuildKit makes it), and a USER the image lacks is one line naming the Dockerfile's line."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from sprout.task import Task, TaskError
from sprout.tasks import base_checkpoint_of, load_native, solution_checkpoint
from sprout.verify.runner import run_verifier
from tests.support.taskfolders import write_task

pytestmark = pytest.mark.sandbox

DOCKERFILE = (
    "FROM host\n"
    "RUN useradd -m -u 4242 -U app && mkdir -m 0755 /srv/rootdir\n"
    "USER app\n"
    "WORKDIR /srv/app/src\n"
)
CHECK_HOME = (
    "#!/bin/bash\n"
    'if [ "$(cat /home/app/result)" = done ] && [ "$(stat -c %U /home/app/result)" = app ]; '
    "then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
)


def _task(tmp_path: Path, dockerfile: str = DOCKERFILE) -> Task:
    folder = write_task(
        tmp_path,
        "as-app",
        instruction="Write done to ~/result.\n",
        dockerfile=dockerfile,
        solve="#!/bin/bash\necho done > ~/result\n",
        tests={"test.sh": CHECK_HOME},
    )
    return load_native(folder)


def _start(task: Task, layers: LayerStore) -> str:
    """Checkpoint 0 as the agent gets it: the base layer, its user applied."""
    return base_checkpoint_of(task, layers)


def test_the_agent_runs_as_the_final_user_in_its_workdir(overlay_store: LayerStore, tmp_path):
    start = _start(_task(tmp_path), overlay_store)
    with Sandbox.fork(overlay_store, start) as agent:
        seen = agent.run('id -u; whoami; echo "$HOME"; pwd; stat -c %U /srv/app /srv/app/src')
    assert seen.output.splitlines() == ["4242", "app", "/home/app", "/srv/app/src", "app", "app"]


def test_the_user_writes_its_home_and_workdir_but_not_roots(overlay_store: LayerStore, tmp_path):
    start = _start(_task(tmp_path), overlay_store)
    with Sandbox.fork(overlay_store, start) as agent:
        denied = agent.run("touch /srv/rootdir/x")
        allowed = agent.run("touch ~/a /srv/app/src/b /srv/app/c && echo ok")
    assert denied.exit_code != 0 and "Permission denied" in denied.output
    assert allowed.output == "ok\n"


def test_the_oracle_and_the_verifier_run_as_the_user(overlay_store: LayerStore, tmp_path):
    task = _task(tmp_path)
    start = _start(task, overlay_store)
    with Sandbox.fork(overlay_store, solution_checkpoint(task, overlay_store, start)) as oracle:
        for step in task.solution:
            assert oracle.run(step.command).exit_code == 0
        solved = oracle.checkpoint()
    assert run_verifier(task, overlay_store, solved, start).reward == 1.0
    assert run_verifier(task, overlay_store, start, start).reward == 0.0


def test_a_user_the_image_lacks_is_one_line_naming_its_dockerfile_line(
    overlay_store: LayerStore, tmp_path
):
    task = _task(tmp_path, "FROM host\nRUN true\nUSER ghost\n")
    with pytest.raises(TaskError) as raised:
        _start(task, overlay_store)
    assert str(raised.value) == (
        "as-app: environment/Dockerfile:3: USER ghost: user 'ghost' is not in the image's "
        "/etc/passwd"
    )


def test_numeric_users_need_no_passwd_entry(overlay_store: LayerStore, tmp_path):
    task = _task(tmp_path, "FROM host\nRUN true\nUSER 4300:4301\n")
    with Sandbox.fork(overlay_store, _start(task, overlay_store)) as agent:
        assert agent.run('id -u; id -g; echo "$HOME"').output == "4300\n4301\n/\n"
