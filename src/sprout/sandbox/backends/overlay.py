"""The overlay backend: each call in fresh namespaces over the kernel's overlayfs.

The overlay of a sandbox's layers is mounted once per checkpoint, by the call that
first needs it, and kept by the sandbox's launcher for its later calls; each call still
gets a PID namespace (and /proc) of its own, so no process outlives its call.

The unsealed layer is the overlay's upper directory, so a checkpoint is the
directory the kernel already wrote: sealing copies nothing.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
import time

from sprout.sandbox.backends.process import Child, capture, command_script
from sprout.sandbox.backends.protocol import BASE_ENV, OpenLayer, shell_for
from sprout.sandbox.backends.spares import take_launcher, take_network
from sprout.sandbox.errors import BadArgument, SandboxSetupFailed, SandboxUnavailable
from sprout.sandbox.jail import cgroups
from sprout.sandbox.jail.helper import helper_build
from sprout.sandbox.jail.launcher import Launcher
from sprout.sandbox.layers.store import LayerStore
from sprout.sandbox.layers.whiteouts import lookup, resolve
from sprout.sandbox.network.namespace import SandboxNetwork
from sprout.sandbox.storefs.files import replace_with_copy
from sprout.sandbox.teardown import later
from sprout.sandbox.types import Observation, SandboxConfig

SETUP_FAILED = 125
SCRIPT_PATH = "/proc/self/fd/3"
"""Where the shell reads its command: box.c's --script-fd moves the script there."""
LAUNCH_PROCESSES = {"root": 1, "rootless": 2}
"""The processes of a call in the sandbox's pids cgroup besides the command's: as root its
helper, which is its init; rootless its helper and its init (box.c's process shape). The
launcher itself is one more, per sandbox."""


def _kill_helper(process: Child) -> None:
    """Killing the helper kills its PID namespace, and with it every process of the call."""
    if process.poll() is None:
        process.kill()


def _environment(config: SandboxConfig, **extra: str) -> dict[str, str]:
    """A call's variables: the base, the user's HOME (and name), `extra`, then the sandbox's
    own env, which wins (an image's `ENV HOME` wins over the passwd file's, as in Docker)."""
    user = config.user.env() if config.user is not None else {}
    return {**BASE_ENV, **user, **extra, **config.env}


def _cgroup_failed(error: OSError) -> SandboxSetupFailed:
    return SandboxSetupFailed(f"the sandbox's cgroup: {error}")


def _user_flag(config: SandboxConfig) -> list[str]:
    """`--user UID:GID[:GROUP,...]` for box.c, or nothing for the sandbox's root."""
    user = config.user
    if user is None:
        return []
    groups = ",".join(str(g) for g in user.groups)
    return ["--user", f"{user.uid}:{user.gid}" + (f":{groups}" if groups else "")]


class OverlayBackend:
    """Runs calls through the `sprout-box` helper; see box.c for the namespace set-up."""

    def __init__(self, store: LayerStore) -> None:
        self.store = store
        self.build = helper_build()
        self.helper = self.build.path
        self.seccomp = self.build.seccomp
        self.image_root: str | None = None
        self.cgroup: cgroups.SandboxCgroup | None = None
        self.network: SandboxNetwork | None = None
        self.launcher: Launcher | None = None
        self.timings: int | None = None
        """A descriptor each call writes its phases' ends to (box.c's --timings-fd), for
        `sprout bench sandbox`; None in a run."""
        self._network_lock = threading.Lock()
        self._launcher_lock = threading.Lock()

    def open(self, sandbox: OpenLayer) -> None:
        """Pick the shell. The sandbox's network, cgroup and launcher come with its first
        call (`_network_fds`, `_launcher`): a sandbox that only seals, reads or forks pays
        for none of them."""
        self.image_root = "/" if sandbox.config.image == "host" else sandbox.config.image
        user = sandbox.config.user
        if self.store.ids is None and user is not None and (user.uid, user.gid) != (0, 0):
            raise SandboxUnavailable(
                f"running commands as uid {user.uid} needs the root mode: a rootless store's "
                "user namespace maps only its root (run sprout as root for a task's USER)"
            )
        self.shell = shell_for(self.image_root)
        self._prepare(sandbox)
        limits = sandbox.config.limits
        launch = LAUNCH_PROCESSES["root" if self.store.ids is not None else "rootless"]
        pids = limits.processes + launch + 1 if limits.processes else 0
        self.cgroup_limits = cgroups.CgroupLimits(limits.memory_bytes, pids, limits.cpus)

    def run(self, sandbox: OpenLayer, command: str, timeout: float) -> Observation:
        """The shell runs `command` as the script /proc/self/fd/3: see `command_script`.
        The sandbox's launcher starts the call, inside the sandbox's cgroups, over the root
        it keeps mounted for the sandbox's layers (built by the first call after each
        checkpoint, box.c's view)."""
        fds = self._network_fds(sandbox)
        launcher = self._launcher()
        with command_script(command.encode()) as script:
            start = time.monotonic()
            argv = self._argv(sandbox, [SCRIPT_PATH], script_fd=script, launched=True)
            given = (script, *fds) if self.timings is None else (script, self.timings, *fds)
            process = launcher.launch(argv, _environment(sandbox.config), {fd: fd for fd in given})
            observation = capture(
                process,
                start=start,
                timeout=timeout,
                output_cap=sandbox.config.limits.output_bytes,
                kill=_kill_helper,
            )
        if observation.exit_code == SETUP_FAILED and observation.output.startswith("sprout-box:"):
            raise SandboxSetupFailed(observation.output.strip().splitlines()[-1])
        return observation

    def interactive(self, sandbox: OpenLayer) -> int:
        env = _environment(sandbox.config, TERM=os.environ.get("TERM", "xterm"))
        fds = self._network_fds(sandbox)
        with self._launcher_lock:
            self._cgroup()  # the shell joins it itself (box.c's --cgroup)
        return subprocess.run(
            self._argv(sandbox, []), env=env, check=False, pass_fds=fds
        ).returncode

    def _launcher(self) -> Launcher:
        """The sandbox's launcher (jail/launcher.py) and cgroup, from its first call on: a
        spare's (backends/spares.py), given the sandbox's limits before it runs anything,
        or else made here; another launcher at the call after one that lost it (the OOM
        killer of the sandbox's memory cgroup may pick it, as any process inside)."""
        with self._launcher_lock:
            if self.launcher is not None and not self.launcher.alive:
                self.launcher.close()
                self.launcher = None
            if self.launcher is None and self.cgroup is None:
                try:
                    taken = take_launcher(
                        self.helper, cgroups.support(), self.cgroup_limits, self.store.ids
                    )
                except OSError as error:
                    raise _cgroup_failed(error) from None
                if taken is not None:
                    self.launcher, self.cgroup = taken
            if self.launcher is None:
                self.launcher = Launcher.start(
                    self.helper, self._cgroup().directories, self.store.ids
                )
            return self.launcher

    def _cgroup(self) -> cgroups.SandboxCgroup:
        """The sandbox's cgroup, made with its limits when it has none yet (one with no
        directories where this machine gives sprout no cgroups)."""
        if self.cgroup is None:
            try:
                self.cgroup = cgroups.SandboxCgroup.create(self.cgroup_limits, cgroups.support())
            except OSError as error:
                raise _cgroup_failed(error) from None
        return self.cgroup

    def _network_fds(self, sandbox: OpenLayer) -> tuple[int, ...]:
        """The sandbox's network namespace under its policy (network/namespace.py), from its
        first call on: a spare's (backends/spares.py), or else made here."""
        with self._network_lock:
            if self.network is None:
                setting, rootless = sandbox.config.network, self.store.ids is None
                self.network = take_network(self.helper, setting, rootless) or SandboxNetwork.start(
                    self.helper, setting, rootless=rootless
                )
        return self.network.fds

    def _argv(
        self,
        sandbox: OpenLayer,
        shell_arguments: list[str],
        script_fd: int | None = None,
        launched: bool = False,
    ) -> list[str]:
        """The helper's command line for one call of the shell with `shell_arguments`;
        `script_fd`, if given, is moved to fd 3 for the shell (SCRIPT_PATH). `launched`:
        the launcher starts it, inside the cgroups already; else it joins them.

        Every path the kernel shows inside (in /proc/self/mountinfo) is relative to
        the store's `l/` directory, so no call learns where the store or its run lives.
        """
        assert self.image_root is not None, "open() first"
        store = self.store
        layer_root = os.path.join(store.path, "l")
        scratch = store.scratch_dir(sandbox.upper)
        work = store.work_dir(sandbox.upper)
        config = sandbox.config
        lowers = store.stack(sandbox.parent)
        lowers += [os.path.relpath(p, layer_root) for p in store.image_layers(config)]
        limits = config.limits
        scratch_rel = os.path.relpath(scratch, layer_root)
        argv = [
            self.helper,
            "--layer-root", layer_root,
            "--lower", ":".join(lowers),
            "--upper", sandbox.upper,
            "--work", os.path.relpath(work, layer_root),
            "--scratch", f"{scratch_rel}/m",
            "--workdir", config.workdir,
            "--nproc", str(limits.processes),
            "--fsize", str(limits.file_size),
            "--cpu", str(limits.cpu_seconds),
            "--nofile", str(limits.open_files),
        ]  # fmt: skip
        argv += ["--host"] if config.image == "host" else ["--image", config.image]
        argv += ["--idmap", str(store.ids)] if store.ids is not None else ["--rootless"]
        for directory in self.cgroup.directories if self.cgroup else []:
            argv += ["--in-cgroup" if launched else "--cgroup", directory]
        program = self.build.filter_with_userns if config.user_namespaces else self.build.filter
        if self.seccomp and program is not None:
            argv += ["--seccomp", program]
        if self.network is not None:
            argv += ["--netns-fd", str(self.network.fd)]
            if self.network.user_fd >= 0:
                argv += ["--userns-fd", str(self.network.user_fd)]
        elif not config.network:
            argv.append("--no-network")
        argv += _user_flag(config)
        if script_fd is not None:
            argv += ["--script-fd", str(script_fd)]
        if launched and self.timings is not None:
            argv += ["--timings-fd", str(self.timings)]
        return [*argv, "--", self.shell, *shell_arguments]

    def put(self, sandbox: OpenLayer, source: str, destination: str) -> None:
        """Write straight into the upper directory, once the root mounted over it is gone.

        Links on the way to `destination` are followed inside the sandbox's view
        (as Docker's COPY follows them inside the container), never on the host.
        Directories the upper lacks are copied up from below with their mode and
        owner; whiteouts on the way are cleared; a copied directory is marked
        opaque so that it replaces, rather than merges with, what lower layers hold.
        """
        self._forget_root()
        store = self.store
        fmt = store.format
        upper = store.diff_dir(sandbox.upper)
        below = [store.diff_dir(i) for i in store.stack(sandbox.parent)]
        below += store.image_layers(sandbox.config)
        parent = resolve(
            [upper, *below], self.image_root, os.path.dirname(destination), fmt,
            allow_missing=True,
        )  # fmt: skip
        if parent is None:
            raise BadArgument(
                "destination", f"{destination}: a folder on the way is a file (or links loop)"
            )
        current = upper
        for depth, part in enumerate(parent.parts):
            current = os.path.join(current, part)
            kind = fmt.entry(current)
            if kind == "whiteout":
                os.unlink(current)
            if kind in (None, "whiteout"):
                os.mkdir(current)
                self._copy_up_attributes(current, "/".join(parent.parts[: depth + 1]), below)
        target = os.path.join(current, os.path.basename(destination))
        replace_with_copy(source, target)
        store.give_to_sandbox_root(target)
        if os.path.isdir(source):
            fmt.write_opaque(target)

    def _copy_up_attributes(self, directory: str, rel: str, below: list[str]) -> None:
        """Give a directory made in the upper the mode and owner it has below, as copy-up does."""
        found = lookup(below, self.image_root, rel, self.store.format)
        st = os.lstat(found) if found is not None else None
        if st is None or not stat.S_ISDIR(st.st_mode):
            self.store.give_to_sandbox_root(directory)
            return
        os.chmod(directory, stat.S_IMODE(st.st_mode))
        ids = self.store.ids
        if ids is None:
            return
        in_layer = any(found.startswith(layer + os.sep) for layer in below)
        uid, gid = (
            (st.st_uid, st.st_gid) if in_layer else (ids.on_disk(st.st_uid), ids.on_disk(st.st_gid))
        )
        os.lchown(directory, uid, gid)

    def capture(self, sandbox: OpenLayer) -> None:
        """Nothing to do: the kernel wrote every change into the upper directory already."""

    def advance(self, sandbox: OpenLayer, sealed_upper: str) -> None:
        """The next call mounts the new upper (capped as the old one was, its scratch made);
        the old scratch goes with it, and the root mounted over the sealed layer first."""
        self._forget_root()
        self._prepare(sandbox)

    def _forget_root(self) -> None:
        """Drop the root the launcher keeps when sprout changes what it mounts: a layer it
        writes is sealed, or sprout writes into it (`put`). An overlay whose upper changes
        beneath it may show stale entries, and a sealed layer must not stay mounted for
        writing (overlayfs warns when a fork mounts it as a lower meanwhile)."""
        if self.launcher is not None and self.launcher.alive:
            self.launcher.forget_root()

    def _prepare(self, sandbox: OpenLayer) -> None:
        """Cap the upper layer and make its overlay workdir and mountpoint: here, before a
        checkpoint hands its layer to the flusher, whose syncfs would stall them in the
        next call (`Sandbox.checkpoint`)."""
        store, upper = self.store, sandbox.upper
        try:
            store.cap(upper, sandbox.config.limits.disk_bytes)
        except OSError as error:
            raise SandboxSetupFailed(f"the disk cap of layer {upper}: {error}") from None
        os.makedirs(store.work_dir(upper), exist_ok=True)
        os.makedirs(os.path.join(store.scratch_dir(upper), "m"), exist_ok=True)

    def close(self, sandbox: OpenLayer) -> None:
        """The launcher and the network are told to end, and the launcher waited for: the
        root it keeps mounted pins the files of the upper layer, which the caller deletes
        next, and a sandbox that filled the disk must give the space back when it closes.
        The network's processes are reaped, and the cgroup (empty once the launcher has
        gone) removed, on the teardown thread (sandbox/teardown.py)."""
        if self.launcher is not None:
            self.launcher.end()
        if self.network is not None:
            self.network.close()
            self.network = None
        if self.launcher is not None:
            self.launcher.close()
            self.launcher = None
        if self.cgroup is not None:
            later(self.cgroup.remove)
            self.cgroup = None
