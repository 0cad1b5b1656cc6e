"""The sandbox: run shell calls, seal a checkpoint after each turn, fork any checkpoint."""

from __future__ import annotations

import errno
import os
import shutil
from types import TracebackType

from sprout.sandbox.backends import backend_for
from sprout.sandbox.backends.process import encode_command
from sprout.sandbox.backends.protocol import Backend, OpenLayer
from sprout.sandbox.errors import BadArgument, SandboxError
from sprout.sandbox.layers.changes import diff_layers
from sprout.sandbox.layers.store import LayerStore
from sprout.sandbox.layers.whiteouts import is_empty
from sprout.sandbox.network.policy import Network, check_network
from sprout.sandbox.rootfs.catalog import cached_image
from sprout.sandbox.rootfs.notes import note_image
from sprout.sandbox.types import Limits, Observation, RunAs, SandboxConfig
from sprout.workspace import Change

FORBIDDEN_IN_PATHS = (":", ",", "\n")
"""Characters that overlayfs's option string cannot carry in a layer path."""


def _check_config(
    image: object,
    workdir: object,
    env: object,
    network: object,
    limits: object,
    user_namespaces: object = False,
    user: object = None,
) -> SandboxConfig:
    if not isinstance(image, str) or not image:
        raise BadArgument("image", f'expected "host" or a directory path, got {image!r}')
    if image != "host":
        image = os.path.abspath(image)
        if not os.path.isdir(image):
            raise BadArgument("image", f"{image} is not a directory holding a root filesystem")
        if any(c in image for c in FORBIDDEN_IN_PATHS):
            raise BadArgument("image", f"{image!r} contains one of ':', ',' or a newline")
    if not isinstance(workdir, str) or not workdir.startswith("/"):
        raise BadArgument("workdir", f"expected an absolute path, got {workdir!r}")
    if env is not None and not (
        isinstance(env, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    ):
        raise BadArgument("env", f"expected a dict of str to str, got {env!r}")
    network = check_network(network)
    if limits is not None and not isinstance(limits, Limits):
        raise BadArgument("limits", f"expected a sprout.sandbox.Limits, got {limits!r}")
    if not isinstance(user_namespaces, bool):
        raise BadArgument("user_namespaces", f"expected True or False, got {user_namespaces!r}")
    if user is not None and not isinstance(user, RunAs):
        raise BadArgument("user", f"expected a sprout.sandbox.types.RunAs or None, got {user!r}")
    return SandboxConfig(
        image=image,
        workdir=os.path.normpath(workdir),
        env=dict(env or {}),
        network=network,
        limits=limits or Limits(),
        user_namespaces=user_namespaces,
        user=user,
    )


class Sandbox(OpenLayer):
    """A writable filesystem over a sealed checkpoint, where shell calls run in isolation.

    Build one with `Sandbox.create` (a new task environment) or `Sandbox.fork`
    (any checkpoint). `checkpoint()` after each turn seals what the turn wrote
    and returns the id that `fork` accepts.
    """

    def __init__(
        self, store: LayerStore, parent: str, config: SandboxConfig, upper: str | None = None
    ) -> None:
        super().__init__(store, parent, store.new_layer(parent, upper), config)
        self.closed = False
        self._backend: Backend = backend_for(store)
        try:
            self._backend.open(self)
        except BaseException:
            store.discard(self.upper)
            raise

    @classmethod
    def create(
        cls,
        store: LayerStore,
        image: str = "host",
        workdir: str = "/workspace",
        files: str | os.PathLike[str] | None = None,
        env: dict[str, str] | None = None,
        network: Network = True,
        *,
        limits: Limits | None = None,
        user_namespaces: bool = False,
    ) -> Sandbox:
        """A sandbox over `image`, with the contents of local directory `files` in `workdir`.

        `image` is `"host"`, a root-filesystem folder, or an image of the machine's cache
        as `sprout image list` shows it (a name such as `"python:3.11-slim"`, `NAME@sha256:...`
        or its id), whose ENV the commands start with as under `docker run` (`env` wins).
        The files go into a base layer of their own, which is checkpoint
        `sandbox.parent` of the result. `user_namespaces` lets its commands make
        user namespaces of their own (its forks inherit it).
        """
        if not isinstance(store, LayerStore):
            raise BadArgument("store", f"expected a LayerStore, got {store!r}")
        cached = cached_image(image)
        if cached is not None:
            image = cached.rootfs
            if env is None or isinstance(env, dict):
                env = {**cached.env, **(env or {})}
        config = _check_config(image, workdir, env, network, limits, user_namespaces)
        if config.image == "host" and store.mode == "rootless":
            raise BadArgument(
                "image",
                '"host" needs root: a user namespace cannot mount an overlay of / while its '
                "submounts are locked; pass a root-filesystem directory (e.g. from docker export)",
            )
        if files is not None and not os.path.isdir(files):
            raise BadArgument("files", f"{os.fspath(files)} is not a directory")
        base = store.new_layer(None)
        try:
            target = os.path.join(store.diff_dir(base), config.workdir.lstrip("/"))
            if files is None:
                os.makedirs(target, exist_ok=True)
            else:
                shutil.copytree(files, target, symlinks=True, dirs_exist_ok=True)
            store.give_to_sandbox_root(os.path.realpath(store.diff_dir(base)))
            sealed = store.seal(base, None, config)
        finally:
            store.discard(base)
        if cached is not None:  # `sprout gc --images` keeps what a checkpoint stands on
            note_image(store.path, cached.digest)
        return cls(store, sealed.id, config)

    @classmethod
    def fork(
        cls,
        store: LayerStore,
        checkpoint_id: str,
        *,
        env: dict[str, str] | None = None,
        network: Network | None = None,
        limits: Limits | None = None,
        user: RunAs | None = None,
        upper: str | None = None,
    ) -> Sandbox:
        """A new writable sandbox over checkpoint `checkpoint_id`, isolated from every other.

        O(1) in the size of the environment: nothing is copied. `env`,
        `network`, `limits` and `user` (who the commands run as) default to the
        checkpoint's own, so a task's agent user set on its checkpoint 0 holds for
        every fork of it: the agent's, the oracle's, the verifier's. `upper` is the id
        its first checkpoint will have (one no layer of the store has); default a new one.
        """
        config = store.layer(checkpoint_id).config
        config = _check_config(
            config.image,
            config.workdir,
            config.env if env is None else env,
            config.network if network is None else network,
            limits or config.limits,
            config.user_namespaces,
            user or config.user,
        )
        return cls(store, checkpoint_id, config, upper)

    def _check_open(self) -> None:
        if self.closed:
            raise SandboxError(f"sandbox over checkpoint {self.parent} is closed")

    def run(self, command: str, timeout: float = 60) -> Observation:
        """Run `command` with the shell in the sandbox's workdir; kill all of it at `timeout`.

        The shell reads `command` as a script, so any size up to `limits.command_bytes`
        runs; a command over it, with a NUL byte or not encodable as UTF-8 raises
        BadArgument before anything runs.
        """
        self._check_open()
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise BadArgument("timeout", f"expected a positive number of seconds, got {timeout!r}")
        self.check_command(command)
        return self._backend.run(self, command, float(timeout))

    def check_command(self, command: str) -> None:
        """BadArgument("command") when `run` would refuse `command` (see `run`), so a
        caller can refuse a turn's commands before running any of them."""
        if not isinstance(command, str):
            raise BadArgument("command", f"expected a str, got {type(command).__name__}")
        encode_command(command, self.config.limits.command_bytes)

    def put(self, source: str | os.PathLike[str], destination: str) -> None:
        """Copy a local file or directory to absolute path `destination` inside, between calls.

        For task set-up (COPY) and for handing the verifier its hidden tests;
        it replaces whatever `destination` held.
        """
        self._check_open()
        if not os.path.exists(source):
            raise BadArgument("source", f"{os.fspath(source)} does not exist")
        if not isinstance(destination, str) or not destination.startswith("/"):
            raise BadArgument("destination", f"expected an absolute path, got {destination!r}")
        self._backend.put(self, os.fspath(source), os.path.normpath(destination))

    def read(self, path: str) -> bytes | None:
        """The bytes of file `path` inside, as the last call left it; None when it is no file."""
        self._check_open()
        self._backend.capture(self)
        return self.store.read(self.parent, path, upper=self.upper)

    def shell(self) -> int:
        """An interactive shell on this terminal, for a person to look around; its exit code."""
        self._check_open()
        return self._backend.interactive(self)

    def checkpoint(self, *, always: bool = False) -> str:
        """Seal what was written since the last checkpoint and return its id.

        It returns once the layer is sealed: it forks at once, and a durable store flushes
        it to disk beside the caller's next work (`LayerStore.wait_durable` says when).
        An unchanged sandbox returns the previous id: empty turns add no layer.
        With `always`, an empty layer is sealed anyway, so that this sandbox's
        settings (a fork's `network`, `env`, `limits`) become those its own
        forks inherit. When the store's disk fails (SandboxError), a failed seal leaves the
        sandbox as it was; a failed start of the next layer closes it, its checkpoint
        (`sandbox.parent`) kept.
        """
        self._check_open()
        self._backend.capture(self)
        if not always and is_empty(self.store.diff_dir(self.upper)):
            return self.parent
        try:
            sealed = self.store.seal(self.upper, self.parent, self.config, flush=False)
        except OSError as error:
            raise self._store_error("sealing a checkpoint", error) from None
        try:  # the next layer first: the flush would stall it (`LayerStore.seal`)
            self._move_to(sealed.id)
        finally:
            self.store.flushes.hand_over(sealed)
        return sealed.id

    def _move_to(self, sealed: str) -> None:
        """Go on writing a new layer over checkpoint `sealed`, just sealed from the upper.
        A sandbox that cannot make that layer closes: no call may write a sealed one."""
        previous = self.upper
        self.parent = sealed
        try:
            self.upper = self.store.new_layer(sealed)
        except BaseException as error:
            self.close()
            if isinstance(error, OSError):
                doing = f"starting the layer over checkpoint {sealed}"
                raise self._store_error(doing, error) from None
            raise
        self._backend.advance(self, previous)
        self.store.discard(previous)

    def _store_error(self, doing: str, error: OSError) -> SandboxError:
        """The store's disk failed, not the caller: say which."""
        return SandboxError(
            f"{doing} in {self.store.path}: {error.strerror or error}"
            + (
                " (a sandbox can fill a disk sprout cannot cap; see `sprout doctor`)"
                if error.errno in (errno.ENOSPC, errno.EDQUOT)
                else ""
            )
        )

    def changes(self, since: str | None = None) -> list[Change]:
        """Paths added, modified or deleted since checkpoint `since` (default: the last one)."""
        self._check_open()
        since = self.parent if since is None else since
        chain = self.store.ancestry(self.parent)
        if since not in chain:
            self.store.layer(since)  # an unknown id gets UnknownCheckpoint
            raise BadArgument("since", f"checkpoint {since} is not under this sandbox's state")
        self._backend.capture(self)
        above = [self.store.diff_dir(self.upper)]
        above += [self.store.diff_dir(i) for i in chain[: chain.index(since)]]
        below = [self.store.diff_dir(i) for i in self.store.stack(since)]
        below += self.store.image_layers(self.config)
        return diff_layers(above, below, self._backend.image_root, self.store.format)

    def close(self) -> None:
        """Drop unsaved writes (everything since the last checkpoint) and release the sandbox."""
        if self.closed:
            return
        self.closed = True
        self._backend.close(self)
        self.store.discard(self.upper)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
