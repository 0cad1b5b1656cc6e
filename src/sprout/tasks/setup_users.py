"""USER and `--chown` names resolved as Docker resolves them: through the image's own
/etc/passwd and /etc/group, read from the sandbox (never the host's)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from sprout.sandbox import LayerStore, Sandbox
from sprout.sandbox.types import RunAs
from sprout.task import Task, TaskError
from sprout.tasks.dockerfile_state import is_root

ROOT = RunAs(0, 0, name="root", home="/root")
"""The sandbox's root, named: to work as root on a checkpoint whatever user it carries."""
LOG_DIRS = ("/logs/agent", "/logs/verifier")
"""Where Harbor's agent and verifier write their logs and rewards; it makes them writable
(0777) for a non-root user, and so does sprout."""


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


def _table(sandbox: Sandbox, path: str) -> list[list[str]]:
    text = (sandbox.read(path) or b"").decode("utf-8", "replace")
    return [line.split(":") for line in text.splitlines() if line and not line.startswith("#")]


def _ids(sandbox: Sandbox, spec: str, where: str) -> tuple[int, int | None, list[str] | None]:
    """(uid, gid or None when `spec` names no group, the user's passwd entry or None)."""
    user, _, group = spec.partition(":")
    passwd = [row for row in _table(sandbox, "/etc/passwd") if len(row) >= 6]
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
        found = next((r for r in _table(sandbox, "/etc/group") if r[0] == group), None)
        if found is None or len(found) < 3 or not found[2].isdigit():
            raise TaskError(f"{where}: group {group!r} is not in the image's /etc/group")
        gid = int(found[2])
    return uid, gid, entry


def resolve_user(sandbox: Sandbox, spec: str, where: str) -> Who:
    """Docker's reading of USER: the passwd entry's primary group and home (0 and / when
    there is none), and the groups /etc/group lists the user in."""
    uid, gid, entry = _ids(sandbox, spec, f"{where}: USER {spec}")
    name = entry[0] if entry is not None else ""
    primary = gid if gid is not None else (int(entry[3]) if entry is not None else 0)
    groups = [primary]
    if name:
        for row in _table(sandbox, "/etc/group"):
            if len(row) >= 4 and row[2].isdigit() and name in row[3].split(","):
                groups.append(int(row[2]))
    home = entry[5] if entry is not None and entry[5] else "/"
    return Who(spec, name, uid, primary, tuple(dict.fromkeys(groups)), home)


def resolve_owner(sandbox: Sandbox, spec: str, where: str) -> str:
    """`--chown=user[:group]` as numeric `uid:gid`; a user alone gives its uid as the gid
    too, as Docker's documentation says."""
    uid, gid, _ = _ids(sandbox, spec, f"{where}: --chown={spec}")
    return f"{uid}:{uid if gid is None else gid}"


def agent_user(task: Task, sandbox: Sandbox) -> RunAs | None:
    """Who the task's agent (and its oracle and verifier) runs as: the Dockerfile's final
    USER, resolved through the /etc/passwd and /etc/group that set-up left in `sandbox`, as
    `docker exec` resolves it in the container; None for root. A user the image does not
    have is a TaskError naming the USER line."""
    if is_root(task.user):
        return None
    where = f"{task.id}: {task.user_origin}" if task.user_origin else task.id
    return resolve_user(sandbox, task.user, where).run_as()


def with_agent_user(task: Task, layers: LayerStore, checkpoint: str) -> str:
    """`checkpoint` (the task's set-up done) as its agent starts from it: for a task whose
    Dockerfile ends as a non-root USER, a checkpoint whose sandboxes run as that user
    (their forks, the oracle's and the verifier's, inherit it), with /logs/agent and
    /logs/verifier writable for it. A root task's `checkpoint` is returned as it is."""
    if is_root(task.user):
        return checkpoint
    with Sandbox.fork(layers, checkpoint, user=ROOT) as sandbox:
        user = agent_user(task, sandbox)
        dirs = " ".join(LOG_DIRS)
        made = sandbox.run(f"mkdir -p {dirs} && chmod 0777 {dirs}")
        if made.exit_code != 0:
            raise TaskError(f"{task.id}: making {dirs} for USER {task.user}: {made.output}")
        prepared = sandbox.checkpoint()
    with Sandbox.fork(layers, prepared, user=user) as agent:
        return agent.checkpoint(always=True)
