"""The copy backend: the portable fallback, with no isolation at all.

For machines without overlayfs or namespaces. Only the workdir is tracked: it
is materialised as a real directory on the host and commands run there as
ordinary processes, so anything they write outside it lands on the host.
Checkpoints are incremental layers of the files that changed since the last
one (found by comparing the tree with the previous checkpoint's manifest);
a fork materialises the whole stack. Both cost time in proportion to the
workdir's size, which is why this is the fallback and says so.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import warnings

from sprout.sandbox.backends.process import command_script, run_captured, script_path
from sprout.sandbox.backends.protocol import BASE_ENV, OpenLayer
from sprout.sandbox.errors import BadArgument
from sprout.sandbox.layers.whiteouts import MarkerFormat, merge
from sprout.sandbox.storefs.files import place_file, remove_tree, replace_with_copy
from sprout.sandbox.types import Observation

Fingerprint = tuple[int, int, int, int, int, int, str]
"""(mode, uid, gid, size, mtime_ns, inode, symlink target) of one path."""

_warned = False


def _warn_once() -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            "sprout: the copy sandbox backend gives NO isolation: commands run on this "
            "machine as this user, only the workdir is checkpointed, and checkpoints and forks "
            "cost time in proportion to its size. Use a machine with overlayfs and namespaces "
            "for real runs.",
            RuntimeWarning,
            stacklevel=4,
        )


def _shell() -> str:
    return "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """The command leads its own session: kill the group so no background child outlives it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _fingerprint(path: str) -> Fingerprint:
    st = os.lstat(path)
    target = os.readlink(path) if stat.S_ISLNK(st.st_mode) else ""
    return (st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns, st.st_ino, target)


def _manifest(root: str) -> dict[str, Fingerprint]:
    found = {}
    for directory, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            path = os.path.join(directory, name)
            found[os.path.relpath(path, root)] = _fingerprint(path)
    return found


class CopyBackend:
    """Runs calls as plain host processes in a materialised copy of the workdir."""

    image_root: str | None = None

    def __init__(self) -> None:
        self.format = MarkerFormat()
        self.manifest: dict[str, Fingerprint] = {}

    def _tree(self, sandbox: OpenLayer) -> str:
        return os.path.join(sandbox.store.scratch_dir(sandbox.upper), "tree")

    def open(self, sandbox: OpenLayer) -> None:
        _warn_once()
        tree = self._tree(sandbox)
        os.makedirs(tree)
        layers = [sandbox.store.diff_dir(i) for i in sandbox.store.stack(sandbox.parent)]
        merge(layers, tree, self.format, keep_markers=False, link_files=False)
        self.manifest = _manifest(tree)

    def run(self, sandbox: OpenLayer, command: str, timeout: float) -> Observation:
        """The shell runs `command` as the script /proc/self/fd/N: see `command_script`."""
        with command_script(command.encode()) as script:
            return self._run_script(sandbox, script, timeout)

    def _run_script(self, sandbox: OpenLayer, script: int, timeout: float) -> Observation:
        workdir = os.path.join(self._tree(sandbox), sandbox.config.workdir.lstrip("/"))
        limits = sandbox.config.limits
        prlimit = shutil.which("prlimit")
        argv = [_shell(), script_path(script)]
        if prlimit:
            argv = [
                prlimit,
                f"--nproc={limits.processes or 'unlimited'}",
                f"--fsize={limits.file_size or 'unlimited'}",
                f"--cpu={limits.cpu_seconds or 'unlimited'}",
                f"--nofile={limits.open_files or 'unlimited'}",
                "--",
                *argv,
            ]
        env = {**BASE_ENV, "HOME": os.environ.get("HOME", "/"), **sandbox.config.env}
        env["SPROUT_WORKDIR"] = workdir
        return run_captured(
            argv,
            env=env,
            timeout=timeout,
            output_cap=limits.output_bytes,
            kill=_kill_group,
            cwd=workdir if os.path.isdir(workdir) else self._tree(sandbox),
            new_session=True,
            pass_fds=(script,),
        )

    def interactive(self, sandbox: OpenLayer) -> int:
        workdir = os.path.join(self._tree(sandbox), sandbox.config.workdir.lstrip("/"))
        env = {**os.environ, **sandbox.config.env, "SPROUT_WORKDIR": workdir}
        return subprocess.run([_shell()], cwd=workdir, env=env, check=False).returncode

    def put(self, sandbox: OpenLayer, source: str, destination: str) -> None:
        """Only the workdir is materialised: `destination` must lie inside it."""
        workdir = sandbox.config.workdir.rstrip("/") + "/"
        if not (destination + "/").startswith(workdir):
            raise BadArgument(
                "destination", f"{destination}: the copy backend only holds {workdir}"
            )
        target = os.path.join(self._tree(sandbox), destination.lstrip("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        replace_with_copy(source, target)

    def capture(self, sandbox: OpenLayer) -> None:
        """Rewrite the unsealed layer as the difference between the tree and the manifest."""
        tree = self._tree(sandbox)
        upper = sandbox.store.diff_dir(sandbox.upper)
        shutil.rmtree(upper)
        os.mkdir(upper)
        now = _manifest(tree)
        for rel in sorted(now):
            if self.manifest.get(rel) == now[rel]:
                continue
            source = os.path.join(tree, rel)
            target = os.path.join(upper, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if stat.S_ISDIR(now[rel][0]):
                os.makedirs(target, exist_ok=True)
                shutil.copystat(source, target, follow_symlinks=False)
                os.lchown(target, now[rel][1], now[rel][2])
            else:
                place_file(source, target, link=False)
        for rel in sorted(set(self.manifest) - set(now)):
            parent = os.path.dirname(rel)
            if parent and parent not in now:
                continue  # the whole parent went; its own whiteout covers this path
            os.makedirs(os.path.join(upper, parent), exist_ok=True)
            self.format.write_whiteout(os.path.join(upper, rel))

    def advance(self, sandbox: OpenLayer, sealed_upper: str) -> None:
        old_tree = os.path.join(sandbox.store.scratch_dir(sealed_upper), "tree")
        os.makedirs(sandbox.store.scratch_dir(sandbox.upper), exist_ok=True)
        os.rename(old_tree, self._tree(sandbox))
        self.manifest = _manifest(self._tree(sandbox))

    def close(self, sandbox: OpenLayer) -> None:
        remove_tree(sandbox.store.scratch_dir(sandbox.upper))
