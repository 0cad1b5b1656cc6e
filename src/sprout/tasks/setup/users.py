"""USER and `--chown` names, and task.toml's `[agent] user` and `[verifier] user`, resolved
as Docker resolves them: through the image's own /etc/passwd and /etc/group, read from the
sandbox or its checkpoint (never the host's)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from sprout.sandbox import LayerStore, RunAs, Sandbox
from sprout.task import Task, TaskError
from sprout.tasks.dockerfile.state import is_root

ROOT = RunAs(0, 0, name="root", home="/root")
"""The sandbox's root, named: to work as root on a checkpoint whatever user it carries."""
LOG_DIRS = ("/logs/agent", "/logs/verifier")
"""Where Harbor's agent and verifier write their logs and rewards: each is made writable for
the user that writes it."""


@dataclass(frozen=True)
class Who:
    """A USER resolved through the image's /etc/passwd and /etc/group."""

    spec: str
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str

    def run_as(self) -> RunAs:
        """This user as the sandbox runs commands as it."""
        return RunAs(self.uid, self.gid, self.groups, self.name, self.home)

    def switch(self, program: list[str]) -> str:
        """Shell that runs `program` as this user: setpriv with the exact ids, else su."""
        groups = ",".join(str(g) for g in self.groups)
        setpriv = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}"]
        setpriv += [f"--groups={groups}"] if groups else ["--clear-groups"]
        lines = [
            "if command -v setpriv >/dev/null 2>&1; then exec "
            + shlex.join([*setpriv, "--", *program])
            + "; fi"
        ]
        if self.name:
            su = ["su", "-p", "-s", "/bin/sh", self.name, "-c", "exec " + shlex.join(program)]
            lines.append(f"if command -v su >/dev/null 2>&1; then exec {shlex.join(su)}; fi")
        why = f"sprout: USER {self.spec}: the image has neither setpriv nor su to switch users"
        lines.append(f"echo {shlex.quote(why)} >&2; exit 127")
        return "; ".join(lines)


Read = Callable[[str], bytes | None]
"""A file of the image as set-up left it, by its path: `Sandbox.read`, or a checkpoint's
read from the layers (`LayerStore.read`) without running anything."""


def _table(read: Read, path: str) -> list[list[str]]:
    text = (read(path) or b"").decode("utf-8", "replace")
    return [line.split(":") for line in text.splitlines() if line and not line.startswith("#")]


def _ids(read: Read, spec: str, where: str) -> tuple[int, int | None, list[str] | None]:
    """(uid, gid or None when `spec` names no group, the user's passwd entry or None)."""
    user, _, group = spec.partition(":")
    passwd = [row for row in _table(read, "/etc/passwd") if len(row) >= 6]
    entry = next((r for r in passwd if r[0] == user), None)
    if entry is None and user.isdigit():
        entry = next((r for r in passwd if r[2] == user), None)
    if entry is not None and not (entry[2].isdigit() and entry[3].isdigit()):
        raise TaskError(f"{where}: the image's /etc/passwd line of {user!r} has no numeric ids")
    if entry is not None:
        uid = int(entry[2])
    elif user.isdigit():
        uid = int(user)
    else:
        raise TaskError(f"{where}: user {user!r} is not in the image's /etc/passwd")
    gid: int | None = None
    if group.isdigit():
        gid = int(group)
    elif group:
        found = next((r for r in _table(read, "/etc/group") if r[0] == group), None)
        if found is None or len(found) < 3 or not found[2].isdigit():
            raise TaskError(f"{where}: group {group!r} is not in the image's /etc/group")
        gid = int(found[2])
    return uid, gid, entry


def _resolve(read: Read, spec: str, where: str) -> Who:
    """Docker's reading of a user: the passwd entry's primary group and home (0 and / when
    there is none), and the groups /etc/group lists the user in; errors start with `where`."""
    uid, gid, entry = _ids(read, spec, where)
    name = entry[0] if entry is not None else ""
    primary = gid if gid is not None else (int(entry[3]) if entry is not None else 0)
    groups = [primary]
    if name:
        for row in _table(read, "/etc/group"):
            if len(row) >= 4 and row[2].isdigit() and name in row[3].split(","):
                groups.append(int(row[2]))
    home = entry[5] if entry is not None and entry[5] else "/"
    return Who(spec, name, uid, primary, tuple(dict.fromkeys(groups)), home)


def resolve_user(sandbox: Sandbox, spec: str, where: str) -> Who:
    """A Dockerfile's `USER spec` resolved through `sandbox`'s /etc/passwd and /etc/group."""
    return _resolve(sandbox.read, spec, f"{where}: USER {spec}")


def resolve_owner(sandbox: Sandbox, spec: str, where: str) -> str:
    """`--chown=user[:group]` as numeric `uid:gid`; a user alone gives its uid as the gid
    too, as Docker's documentation says."""
    uid, gid, _ = _ids(sandbox.read, spec, f"{where}: --chown={spec}")
    return f"{uid}:{uid if gid is None else gid}"


@dataclass(frozen=True)
class PhaseUser:
    """Who one phase of a task (its agent, its verifier) runs as, and what names it."""

    spec: str
    where: str
    """The task, the file and the field or line it comes from, for its errors."""

    def resolve(self, read: Read) -> RunAs:
        """This user as the sandbox runs commands as it (ROOT for root); a user the image
        lacks is a TaskError naming `where`."""
        return ROOT if is_root(self.spec) else _resolve(read, self.spec, self.where).run_as()


def _phase_user(task: Task, override: str | None, field: str) -> PhaseUser:
    """task.toml's `field` (`agent.user`, `verifier.user`) when it is set, else the
    Dockerfile's final USER: Harbor runs a phase without one as the container's default."""
    if override is not None:
        return PhaseUser(override, f"{task.id}: task.toml: {field}")
    where = f"{task.id}: {task.user_origin}" if task.user_origin else task.id
    return PhaseUser(task.user, f"{where}: USER {task.user}")


def agent_user(task: Task) -> PhaseUser:
    """Who the task's agent runs as (its oracle too: it plays the agent's part)."""
    return _phase_user(task, task.agent_user, "agent.user")


def verifier_user(task: Task) -> PhaseUser:
    """Who the task's verifier runs as."""
    return _phase_user(task, task.verifier_user, "verifier.user")


def verifier_run_as(task: Task, layers: LayerStore, base: str) -> RunAs | None:
    """Who the verifier's fork runs as, resolved through checkpoint `base` (the task's
    checkpoint 0: an attempt may have rewritten its own /etc/passwd); None when task.toml
    names no user, so the fork runs as its checkpoint's user, the Dockerfile's final USER."""
    if task.agent_user is None and task.verifier_user is None:
        return None
    return verifier_user(task).resolve(partial(layers.read, base))


def with_task_users(task: Task, layers: LayerStore, checkpoint: str) -> str:
    """`checkpoint` (the task's set-up done, as root) as its agent starts from it: when the
    agent or the verifier is not root, a checkpoint whose sandboxes run as the agent's user
    (its forks, the oracle's included, inherit it), /logs/agent owned by that user and
    /logs/verifier by the verifier's, so each writes its own. Both users are resolved here,
    so a user the image lacks fails before anything runs. A task whose agent and verifier
    are root gets `checkpoint` as it is."""
    agent, verifier = agent_user(task), verifier_user(task)
    if is_root(agent.spec) and is_root(verifier.spec):
        return checkpoint
    read = partial(layers.read, checkpoint)
    agent_ids, verifier_ids = agent.resolve(read), verifier.resolve(read)
    owners = ((agent_ids, LOG_DIRS[0]), (verifier_ids, LOG_DIRS[1]))
    chown = " && ".join(f"chown {who.uid}:{who.gid} {path}" for who, path in owners)
    with Sandbox.fork(layers, checkpoint) as sandbox:  # as root: set-up's checkpoint has no user
        made = sandbox.run(f"mkdir -p {' '.join(LOG_DIRS)} && {chown}")
        if made.exit_code != 0:
            raise TaskError(f"{task.id}: making {' '.join(LOG_DIRS)}: {made.output}")
        prepared = sandbox.checkpoint()
    if is_root(agent.spec):
        return prepared
    with Sandbox.fork(layers, prepared, user=agent_ids) as forked:
        return forked.checkpoint(always=True)
