"""A user's name resolved as Docker resolves it: through the image's own /etc/passwd and
/etc/group, read from the sandbox or a checkpoint (never the host's). Set-up's steps
resolve their USER and `--chown` names here as each step runs (an earlier step may have
added the user); `phase_users` resolves the agent's and the verifier's on checkpoint 0."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass

from sprout.sandbox import RunAs, Sandbox
from sprout.task import TaskError
from sprout.tasks.dockerfile.state import is_root

ROOT = RunAs(0, 0, name="root", home="/root")
"""The sandbox's root, named: to work as root on a checkpoint whatever user it carries."""


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


def resolve(read: Read, spec: str, where: str) -> Who:
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
    return resolve(sandbox.read, spec, f"{where}: USER {spec}")


def resolve_owner(sandbox: Sandbox, spec: str, where: str) -> str:
    """`--chown=user[:group]` as numeric `uid:gid`; a user alone gives its uid as the gid
    too, as Docker's documentation says. "" for root or no `--chown`: the copy keeps the
    owner it has, root."""
    if is_root(spec):
        return ""
    uid, gid, _ = _ids(sandbox.read, spec, f"{where}: --chown={spec}")
    return f"{uid}:{uid if gid is None else gid}"
