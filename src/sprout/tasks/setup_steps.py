"""Running set-up steps in a sandbox as `docker build` runs a Dockerfile's instructions.

A `run` step runs in its workdir with its env, by its shell (`/bin/sh -c` for
a Dockerfile's RUN, as Docker's default SHELL), as its user: the image's
`setpriv` (or `su`) switches to the ids that the image's own /etc/passwd and
/etc/group give the name, with HOME from there too.

A `copy` step puts its sources (from the build context, a URL, a heredoc, or
a stage built in a sandbox of its own) into a scratch folder inside, and a
small POSIX script there does the rest with the image's own tools, since only
the sandbox's view knows what the destination is: a directory's contents merge
into an existing directory (`COPY src/ /app` keeps what /app held), a file goes
into a destination that is a directory, an archive is unpacked with the
image's `tar`, and `--chown` names resolve through the image's files. What the
script needs (`sh`, `mv`, `mkdir -p` and `rm`; `cp -a` to merge into an existing
directory, `chown` and `chmod` for those flags) is in coreutils and busybox
alike; an image without a shell (scratch, distroless) cannot be copied into.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import secrets
import shlex
import shutil
import tarfile
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sprout.images import ImageError
from sprout.images.names import ensure_image
from sprout.sandbox import LayerStore, Observation, Sandbox
from sprout.task import SetupFailed, SetupStep, Task, TaskError
from sprout.tasks.buildcontext import (
    Ignore,
    clean_source,
    has_wildcards,
    inside,
    matches,
    missing_hint,
    source_problem,
    special_file,
    walk,
)
from sprout.tasks.dockerfile import is_root
from sprout.tasks.files import os_problem

DOWNLOAD_TIMEOUT_S = 300.0
ARCHIVE_FLAGS = {b"\x1f\x8b": "z", b"BZh": "j", b"\xfd7zXZ\x00": "J"}
"""Leading bytes of a compressed archive, and the flag that makes `tar` read it."""

COPY_FUNCTIONS = r"""set -e
sprout_into() {
  if [ ! -e "$2" ] && [ ! -L "$2" ]; then
    p=${2%/*}
    mkdir -p "${p:-/}"
    mv "$1" "$2"
    return
  fi
  for f in "$1"/* "$1"/.[!.]* "$1"/..?*; do
    if [ -e "$f" ] || [ -L "$f" ]; then cp -a "$f" "$2/"; fi
  done
}
sprout_file() {
  t=$2
  if [ "$3" = dir ]; then mkdir -p "$t"; fi
  if [ -d "$t" ]; then t="$t/${1##*/}"; else p=${t%/*}; mkdir -p "${p:-/}"; fi
  if [ -d "$t" ] && [ ! -L "$t" ]; then
    echo "cannot put the file ${1##*/} where the directory $t is" >&2
    return 1
  fi
  mv -f "$1" "$t"
}
"""
"""`sprout_into DIR DEST`: DIR's entries into DEST, or DIR becomes DEST when there is none
(DEST keeps its own owner and mode, as Docker's COPY leaves an existing destination);
`sprout_file FILE DEST [dir]`: FILE into DEST when that is a directory, else at DEST."""


@dataclass(frozen=True)
class _Entry:
    """One thing a copy step places: a directory's contents, a file, or an archive."""

    kind: str
    """"tree" (the contents of a directory), "file" or "archive"."""
    host: Path
    name: str


def image_rootfs(image: str, task_id: str) -> tuple[str, str]:
    """(the root filesystem a stage's sandbox mounts, what identifies its content), as
    `environment.image_root` gives the task's own image."""
    if image == "host" or image.startswith("/"):
        return image, image
    try:
        found = ensure_image(image)
    except ImageError as error:
        raise TaskError(f"{task_id}: {error}") from None
    return found.rootfs, found.digest


class Build:
    """One base layer's build: the task, the store, what a sandbox over an image is given
    first, and the earlier stages, each built in a sandbox of its own the first time a
    step copies from it."""

    def __init__(
        self,
        task: Task,
        layers: LayerStore,
        *,
        env: dict[str, str],
        prepare: Callable[[Sandbox], None],
        timeout: float,
        error_lines: int,
    ) -> None:
        self.task = task
        self.layers = layers
        self.env = env
        """The environment of the build's sandboxes, under each step's own."""
        self.prepare = prepare
        """Readies a fresh sandbox over an image (not `host`): its name service, say."""
        self.timeout = timeout
        """Seconds one step may take."""
        self.error_lines = error_lines
        """How many of a failed step's last lines its error carries."""
        self.built: dict[int, str] = {}

    def stage(self, index: int) -> str:
        """The checkpoint of stage `index` with all its steps run."""
        if index in self.built:
            return self.built[index]
        stage = self.task.stages[index]
        rootfs, _ = image_rootfs(stage.image, self.task.id)
        label = f"stage {stage.name or index}"
        with Sandbox.create(
            self.layers,
            image=rootfs,
            workdir=stage.workdir,
            env={**self.env, **stage.env},
            user_namespaces=self.task.user_namespaces,
        ) as sandbox:
            if rootfs != "host":
                self.prepare(sandbox)
            for number, step in enumerate(stage.steps, 1):
                self.run(sandbox, step, f"{label} set-up step {number}")
            self.built[index] = sandbox.checkpoint(always=True)
        return self.built[index]

    def run(self, sandbox: Sandbox, step: SetupStep, label: str) -> None:
        """Run one set-up step in `sandbox`; TaskError names the task, `label`, where the step
        comes from and the step."""
        if step.origin:
            label = f"{label} at {step.origin}"
        if step.kind == "copy":
            _copy(self, sandbox, step, label)
            return
        env = dict(step.env)
        program = [*step.shell, step.command] if step.shell else None
        if step.user and not is_root(step.user):
            who = _user(sandbox, step.user, f"{self.task.id}: {label}")
            env.setdefault("HOME", who.home)
            tail = "{ " + who.switch(program or ["/bin/sh", "-c", step.command]) + "; }"
        elif program is not None:
            tail = "exec " + shlex.join(program)
        else:
            tail = step.command
        exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in env.items())
        workdir = shlex.quote(step.workdir)
        script = f"{exports}mkdir -p {workdir} && cd {workdir} && {tail}"
        self.check(label, step.command, sandbox.run(script, self.timeout))

    def check(self, label: str, what: str, observation: Observation) -> None:
        """TaskError when a step's command failed, with the last lines it printed."""
        if observation.exit_code != 0:
            tail = observation.output.strip().splitlines()[-self.error_lines :]
            last = tail[-1] if tail else "(no output)"
            raise SetupFailed(
                f"{self.task.id}: {label} ({what[:80]!r}) failed with exit code "
                f"{observation.exit_code}: {last}",
                f"$ {what}\n" + "\n".join(tail),
            )


@dataclass(frozen=True)
class _Who:
    """A USER resolved through the image's /etc/passwd and /etc/group."""

    spec: str
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str

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


def _user(sandbox: Sandbox, spec: str, where: str) -> _Who:
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
    return _Who(spec, name, uid, primary, tuple(dict.fromkeys(groups)), home)


def _owner(sandbox: Sandbox, spec: str, where: str) -> str:
    """`--chown=user[:group]` as numeric `uid:gid`; a user alone gives its uid as the gid
    too, as Docker's documentation says."""
    uid, gid, _ = _ids(sandbox, spec, f"{where}: --chown={spec}")
    return f"{uid}:{uid if gid is None else gid}"


def _copy(build: Build, sandbox: Sandbox, step: SetupStep, label: str) -> None:
    keyword = "ADD" if step.unpack or "://" in step.source else "COPY"
    what = f"{keyword} {step.source} {step.destination}"
    where = f"{build.task.id}: {label} ({what[:80]!r})"
    with tempfile.TemporaryDirectory(prefix="sprout-copy-") as staging:
        try:
            _place(build, sandbox, step, label, what, where, Path(staging))
        except OSError as error:
            # The task's files changed under it, or hold what cannot be copied: its error.
            raise TaskError(f"{where}: {os_problem(error)}") from None


def _place(
    build: Build,
    sandbox: Sandbox,
    step: SetupStep,
    label: str,
    what: str,
    where: str,
    staging: Path,
) -> None:
    """The copy step itself: its sources staged in `staging`, then put into place inside."""
    entries = list(_gather(build, step, staging, where))
    if not entries:
        return  # a wildcard that matched nothing copies nothing, as in Docker
    into = step.destination.endswith("/")
    if len(entries) > 1 and not into:
        raise TaskError(f"{where}: several files match; the destination must end in '/'")
    scratch = f"{sandbox.config.workdir.rstrip('/')}/.sprout-copy-{secrets.token_hex(4)}"
    lines = [COPY_FUNCTIONS, "trap " + shlex.quote(f"rm -rf {shlex.quote(scratch)}") + " EXIT"]
    owner = _owner(sandbox, step.chown, where) if step.chown and not is_root(step.chown) else ""
    destination = shlex.quote(step.destination.rstrip("/") or "/")
    for number, entry in enumerate(entries):
        here = f"{scratch}/{number}"
        if entry.kind == "tree":
            sandbox.put(entry.host, here)
            payload = here
        else:
            sandbox.put(entry.host, f"{here}/{entry.name}")
            payload = f"{here}/{entry.name}"
        if entry.kind == "archive":
            unpacked = shlex.quote(f"{here}.x")
            flag = _compression(entry.host)
            lines.append(f"mkdir {unpacked} && tar -x{flag}f {shlex.quote(payload)} -C {unpacked}")
            payload = f"{here}.x"
        quoted = shlex.quote(payload)
        if owner:
            lines.append(f"chown -R {owner} {quoted}")
        if step.chmod:
            lines.append(f"chmod -R {shlex.quote(step.chmod)} {quoted}")
        if entry.kind == "file":
            lines.append(f"sprout_file {quoted} {destination}{' dir' if into else ''}")
        else:
            lines.append(f"sprout_into {quoted} {destination}")
    build.check(label, what, sandbox.run("\n".join(lines), build.timeout))


def _compression(archive: Path) -> str:
    with open(archive, "rb") as handle:
        head = handle.read(6)
    return next((flag for magic, flag in ARCHIVE_FLAGS.items() if head.startswith(magic)), "")


def _gather(build: Build, step: SetupStep, staging: Path, where: str) -> Iterator[_Entry]:
    """What a copy step places, as host paths: staged copies where a source needs one."""
    name = step.source.rstrip("/").rsplit("/", 1)[-1] or "__unnamed__"
    if step.content is not None:
        made = staging / "content" / step.source
        made.parent.mkdir()
        made.write_text(step.content, encoding="utf-8")
        made.chmod(0o664)  # BuildKit makes a heredoc's file 0664
        yield _Entry("file", made, step.source)
    elif step.stage is not None:
        yield from _from_stage(build.stage(step.stage), build.layers, step, staging, where)
    elif step.source.startswith(("http://", "https://")):
        yield _download(step, staging, where)
    else:
        context = build.task.environment_dir
        if context is None:
            raise TaskError(f"{where}: the task has no environment folder to copy from")
        ignore = Ignore(step.ignore)
        source = clean_source(step.source)
        found = matches(context, source, ignore)
        if not found and not has_wildcards(source):
            hint = missing_hint(step.source, source, context)
            raise TaskError(f"{where}: no such file in {context}{hint}")
        for relative in found:
            problem = source_problem(context, relative)
            path = inside(context, relative)
            if problem is not None or path is None:
                raise TaskError(f"{where}: {problem or relative + ' leads out of the context'}")
            name = relative.rsplit("/", 1)[-1] or name
            if path.is_dir():
                special = special_file(context, relative, ignore)
                if special is not None:
                    raise TaskError(f"{where}: {special}")
                yield _Entry("tree", _filtered(context, relative, path, ignore, staging), name)
            elif step.unpack and tarfile.is_tarfile(path):
                yield _Entry("archive", path, name)
            else:
                yield _Entry("file", path, name)


def _filtered(context: Path, relative: str, path: Path, ignore: Ignore, staging: Path) -> Path:
    """`path` itself, or a copy without what `.dockerignore` leaves out of it."""
    if not ignore or not any(ignore(p) for p in walk(context, relative)):
        return path
    copy = staging / f"tree-{secrets.token_hex(4)}"
    copy.mkdir()
    shutil.copystat(path, copy)
    for kept in walk(context, relative, ignore):
        source = context / kept
        target = copy / (kept[len(relative) + 1 :] if relative else kept)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir() and not source.is_symlink():
            target.mkdir(exist_ok=True)
            shutil.copystat(source, target)
        else:
            shutil.copy2(source, target, follow_symlinks=False)
    return copy


def _from_stage(
    checkpoint: str, layers: LayerStore, step: SetupStep, staging: Path, where: str
) -> Iterator[_Entry]:
    """A stage's files, exported from its checkpoint; wildcards match in the exported copy
    of the folder above the first one."""
    source = clean_source(step.source)
    if not has_wildcards(source):
        target = staging / "stage"
        if not layers.export(checkpoint, "/" + source, target):
            raise TaskError(f"{where}: no such file in the stage's filesystem")
        name = source.rsplit("/", 1)[-1] or "__root__"
        yield _Entry(
            "tree" if target.is_dir() and not target.is_symlink() else "file", target, name
        )
        return
    parts = source.split("/")
    fixed = next(i for i, p in enumerate(parts) if has_wildcards(p))
    folder = "/".join(parts[:fixed])
    root = staging / "stage"
    if not layers.export(checkpoint, "/" + folder, root) or not root.is_dir():
        return
    for relative in matches(root, "/".join(parts[fixed:])):
        path = root / relative
        kind = "tree" if path.is_dir() and not path.is_symlink() else "file"
        yield _Entry(kind, path, relative.rsplit("/", 1)[-1])


def _download(step: SetupStep, staging: Path, where: str) -> _Entry:
    """ADD of a URL: fetched by sprout (as Docker's builder fetches it, not the image),
    checked against `--checksum`, mode 0600, never unpacked."""
    base = urllib.parse.urlparse(step.source).path.rsplit("/", 1)[-1]
    name = base if base not in ("", ".", "..") else "__unnamed__"
    target = staging / "download" / name
    target.parent.mkdir()
    digest = hashlib.sha256()
    try:
        with (
            urllib.request.urlopen(step.source, timeout=DOWNLOAD_TIMEOUT_S) as response,
            open(target, "wb") as out,
        ):
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except (OSError, ValueError, http.client.HTTPException) as error:
        # ValueError: a URL urllib cannot read (`http://[::1`); HTTPException: a reply cut short.
        raise TaskError(f"{where}: cannot download {step.source}: {error}") from None
    if step.checksum and step.checksum != f"sha256:{digest.hexdigest()}":
        raise TaskError(
            f"{where}: {step.source} has sha256:{digest.hexdigest()}, not {step.checksum}"
        )
    target.chmod(0o600)
    return _Entry("file", target, name)


def context_inputs(task: Task) -> Iterator[bytes]:
    """What set-up reads besides the task's fields, for the base layer's hash: the stages'
    images and every path (its bytes, or a link's target) that a copy takes from the build
    context. A URL counts by itself: change it to fetch anew. A path that cannot be read
    is a TaskError naming it."""
    try:
        yield from _context_inputs(task)
    except OSError as error:
        raise TaskError(f"{task.id}: {os_problem(error)}") from None


def _context_inputs(task: Task) -> Iterator[bytes]:
    for stage in task.stages:
        yield image_rootfs(stage.image, task.id)[1].encode()
    context = task.environment_dir
    if context is None:
        return
    for step in [*task.setup, *(s for stage in task.stages for s in stage.steps)]:
        if step.kind != "copy" or step.content is not None or step.stage is not None:
            continue
        if step.source.startswith(("http://", "https://")):
            continue
        ignore = Ignore(step.ignore)
        for relative in matches(context, clean_source(step.source), ignore):
            path = inside(context, relative)
            if path is None:
                continue
            yield from _path_bytes(relative, path)
            if path.is_dir():
                for below in walk(context, relative, ignore):
                    yield from _path_bytes(below, context / below)


def _path_bytes(relative: str, path: Path) -> Iterator[bytes]:
    yield os.fsencode(relative) + b"\0"  # names need not be UTF-8
    if path.is_symlink():
        yield os.fsencode(os.readlink(path))
    elif path.is_file():
        yield path.read_bytes()
