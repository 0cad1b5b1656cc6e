"""COPY and ADD steps, as `docker build` runs them.

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
import secrets
import shlex
import shutil
import tarfile
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sprout.sandbox import LayerStore, Sandbox
from sprout.task import SetupStep, TaskError
from sprout.tasks.dockerfile.context import (
    Ignore,
    MatchedSource,
    clean_source,
    has_wildcards,
    inside,
    matches,
    missing_hint,
    source_problem,
    special_file,
    walk,
)
from sprout.tasks.files import os_problem
from sprout.tasks.setup.build_settings import BuildSettings
from sprout.tasks.setup.users import resolve_owner

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


def run_copy(
    settings: BuildSettings,
    sandbox: Sandbox,
    step: SetupStep,
    label: str,
    *,
    sources: MatchedSource | None,
    stage: str | None,
) -> None:
    """Run copy step `step` (COPY or ADD) in `sandbox`; TaskError names the task, `label`
    and the instruction. `sources` is what it takes from the build context (None when the
    task has none, or the step copies no path of it), `stage` the checkpoint of the earlier
    stage it copies from, with all its steps run (`steps.Build.stage`)."""
    keyword = "ADD" if step.unpack or "://" in step.source else "COPY"
    what = f"{keyword} {step.source} {step.destination}"
    where = f"{settings.task.id}: {label} ({what[:80]!r})"
    with tempfile.TemporaryDirectory(prefix="sprout-copy-") as staging:
        try:
            entries = list(_gather(settings.layers, step, Path(staging), where, sources, stage))
            _place(settings, sandbox, step, entries, label, what, where)
        except OSError as error:
            # The task's files changed under it, or hold what cannot be copied: its error.
            raise TaskError(f"{where}: {os_problem(error)}") from None


def _place(
    settings: BuildSettings,
    sandbox: Sandbox,
    step: SetupStep,
    entries: list[_Entry],
    label: str,
    what: str,
    where: str,
) -> None:
    """The copy step itself: its staged `entries` put into place inside."""
    if not entries:
        return  # a wildcard that matched nothing copies nothing, as in Docker
    into = step.destination.endswith("/")
    if len(entries) > 1 and not into:
        raise TaskError(f"{where}: several files match; the destination must end in '/'")
    scratch = f"{sandbox.config.workdir.rstrip('/')}/.sprout-copy-{secrets.token_hex(4)}"
    lines = [COPY_FUNCTIONS, "trap " + shlex.quote(f"rm -rf {shlex.quote(scratch)}") + " EXIT"]
    owner = resolve_owner(sandbox, step.chown, where)
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
    settings.check(label, what, sandbox.run("\n".join(lines), settings.timeout))


def _compression(archive: Path) -> str:
    with open(archive, "rb") as handle:
        head = handle.read(6)
    return next((flag for magic, flag in ARCHIVE_FLAGS.items() if head.startswith(magic)), "")


def _gather(
    layers: LayerStore,
    step: SetupStep,
    staging: Path,
    where: str,
    sources: MatchedSource | None,
    stage: str | None,
) -> Iterator[_Entry]:
    """What a copy step places, as host paths: staged copies where a source needs one. A
    source of the build context comes as `sources`; a step whose task has no context to
    take its path from has none."""
    if sources is not None:
        yield from _from_context(sources, step, staging, where)
    elif step.content is not None:
        made = staging / "content" / step.source
        made.parent.mkdir()
        made.write_text(step.content, encoding="utf-8")
        made.chmod(0o664)  # BuildKit makes a heredoc's file 0664
        yield _Entry("file", made, step.source)
    elif stage is not None:
        yield from _from_stage(stage, layers, step, staging, where)
    elif step.source.startswith(("http://", "https://")):
        yield _download(step, staging, where)
    else:
        raise TaskError(f"{where}: the task has no environment folder to copy from")


def _from_context(
    sources: MatchedSource, step: SetupStep, staging: Path, where: str
) -> Iterator[_Entry]:
    """The build context's files that `sources` found, each checked as Docker checks it."""
    context, ignore, source = sources.context, sources.ignore, sources.source
    if not sources.found and not has_wildcards(source):
        hint = missing_hint(step.source, source, context)
        raise TaskError(f"{where}: no such file in {context}{hint}")
    name = step.source.rstrip("/").rsplit("/", 1)[-1] or "__unnamed__"
    for relative in sources.found:
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
