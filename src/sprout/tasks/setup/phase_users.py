"""Who a task's agent and verifier run as (task.toml's `[agent] user` and `[verifier] user`,
else the Dockerfile's final USER), decided once per task and resolved through checkpoint 0's
own /etc/passwd and /etc/group (`users.resolve`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from sprout.sandbox import LayerStore, RunAs, Sandbox
from sprout.task import Task, TaskError
from sprout.tasks.dockerfile.state import is_root
from sprout.tasks.setup.users import ROOT, Read, resolve

LOG_DIRS = ("/logs/agent", "/logs/verifier")
"""Where Harbor's agent and verifier write their logs and rewards: each is made writable for
the user that writes it."""


@dataclass(frozen=True)
class PhaseUser:
    """Who one phase of a task (its agent, its verifier) runs as, and what names it."""

    spec: str
    where: str
    """The task, the file and the field or line it comes from, for its errors."""
    root: bool
    """Whether `spec` is root (`root`, `0`, none): decided once, where the user is named."""

    def resolve(self, read: Read) -> RunAs:
        """This user as the sandbox runs commands as it (ROOT for root); a user the image
        lacks is a TaskError naming `where`."""
        return ROOT if self.root else resolve(read, self.spec, self.where).run_as()


@dataclass(frozen=True)
class TaskUsers:
    """The users of a task's two phases: its agent (its oracle too: it plays the agent's
    part) and its verifier."""

    agent: PhaseUser
    verifier: PhaseUser


def _phase_user(task: Task, override: str | None, field: str) -> PhaseUser:
    """task.toml's `field` (`agent.user`, `verifier.user`) when it is set, else the
    Dockerfile's final USER: Harbor runs a phase without one as the container's default."""
    if override is not None:
        return PhaseUser(override, f"{task.id}: task.toml: {field}", is_root(override))
    where = f"{task.id}: {task.user_origin}" if task.user_origin else task.id
    return PhaseUser(task.user, f"{where}: USER {task.user}", is_root(task.user))


def task_users(task: Task) -> TaskUsers:
    """Who the task's agent and verifier run as."""
    return TaskUsers(
        _phase_user(task, task.agent_user, "agent.user"),
        _phase_user(task, task.verifier_user, "verifier.user"),
    )


def verifier_run_as(task: Task, layers: LayerStore, base: str) -> RunAs | None:
    """Who the verifier's fork runs as, resolved through checkpoint `base` (the task's
    checkpoint 0: an attempt may have rewritten its own /etc/passwd); None when task.toml
    names no user, so the fork runs as its checkpoint's user, the Dockerfile's final USER."""
    if task.agent_user is None and task.verifier_user is None:
        return None
    return task_users(task).verifier.resolve(partial(layers.read, base))


def with_task_users(task: Task, users: TaskUsers, layers: LayerStore, checkpoint: str) -> str:
    """`checkpoint` (the task's set-up done, as root) as its agent starts from it: when the
    agent or the verifier is not root, a checkpoint whose sandboxes run as the agent's user
    (its forks, the oracle's included, inherit it), /logs/agent owned by that user and
    /logs/verifier by the verifier's, so each writes its own. Both users are resolved here,
    so a user the image lacks fails before anything runs. A task whose agent and verifier
    are root gets `checkpoint` as it is."""
    if users.agent.root and users.verifier.root:
        return checkpoint
    read = partial(layers.read, checkpoint)
    agent_ids, verifier_ids = users.agent.resolve(read), users.verifier.resolve(read)
    owners = ((agent_ids, LOG_DIRS[0]), (verifier_ids, LOG_DIRS[1]))
    chown = " && ".join(f"chown {who.uid}:{who.gid} {path}" for who, path in owners)
    with Sandbox.fork(layers, checkpoint) as sandbox:  # as root: set-up's checkpoint has no user
        made = sandbox.run(f"mkdir -p {' '.join(LOG_DIRS)} && {chown}")
        if made.exit_code != 0:
            raise TaskError(f"{task.id}: making {' '.join(LOG_DIRS)}: {made.output}")
        prepared = sandbox.checkpoint()
    if users.agent.root:
        return prepared
    with Sandbox.fork(layers, prepared, user=agent_ids) as forked:
        return forked.checkpoint(always=True)
