"""The overlay backend: each call in fresh namespaces over the kernel's overlayfs.

The unsealed layer is the overlay's upper directory, so a checkpoint is the
directory the kernel already wrote: sealing copies nothing.
"""

from __future__ import annotations

import os
import subprocess

from sprout.sandbox.backends import BASE_ENV, OpenLayer, shell_for
from sprout.sandbox.errors import SandboxSetupFailed
from sprout.sandbox.helper import helper_path
from sprout.sandbox.layerfmt import replace_with_copy
from sprout.sandbox.layers import LayerStore
from sprout.sandbox.output import run_captured
from sprout.sandbox.types import Observation

SETUP_FAILED = 125


def _kill_helper(process: subprocess.Popen[bytes]) -> None:
    """Killing the helper kills its PID namespace, and with it every process of the call."""
    if process.poll() is None:
        process.kill()


class OverlayBackend:
    """Runs calls through the `sprout-box` helper; see box.c for the namespace set-up."""

    def __init__(self, store: LayerStore) -> None:
        self.store = store
        self.helper = helper_path()
        self.image_root: str | None = None

    def open(self, sandbox: OpenLayer) -> None:
        self.image_root = "/" if sandbox.config.image == "host" else sandbox.config.image
        self.shell = shell_for(self.image_root)

    def run(self, sandbox: OpenLayer, command: str, timeout: float) -> Observation:
        observation = run_captured(
            self._argv(sandbox, ["-c", command]),
            env={**BASE_ENV, **sandbox.config.env},
            timeout=timeout,
            output_cap=sandbox.config.limits.output_bytes,
            kill=_kill_helper,
        )
        if observation.exit_code == SETUP_FAILED and observation.output.startswith("sprout-box:"):
            raise SandboxSetupFailed(observation.output.strip().splitlines()[-1])
        return observation

    def interactive(self, sandbox: OpenLayer) -> int:
        env = {**BASE_ENV, "TERM": os.environ.get("TERM", "xterm"), **sandbox.config.env}
        return subprocess.run(self._argv(sandbox, []), env=env, check=False).returncode

    def _argv(self, sandbox: OpenLayer, shell_arguments: list[str]) -> list[str]:
        """The helper's command line for one call of the shell with `shell_arguments`."""
        assert self.image_root is not None, "open() first"
        scratch = self.store.scratch_dir(sandbox.upper)
        os.makedirs(os.path.join(scratch, "w"), exist_ok=True)
        os.makedirs(os.path.join(scratch, "m"), exist_ok=True)
        lowers = self.store.stack(sandbox.parent)
        if sandbox.config.image != "host":
            lowers.append(self.image_root)
        config = sandbox.config
        limits = config.limits
        argv = [
            self.helper,
            "--layer-root", os.path.join(self.store.path, "l"),
            "--lower", ":".join(lowers),
            "--upper", sandbox.upper,
            "--work", f"../w/{sandbox.upper}/w",
            "--mountpoint", os.path.join(scratch, "m"),
            "--workdir", config.workdir,
            "--mask", self.store.path,
            "--nproc", str(limits.processes),
            "--fsize", str(limits.file_size),
            "--cpu", str(limits.cpu_seconds),
            "--nofile", str(limits.open_files),
        ]  # fmt: skip
        if sandbox.config.image == "host":
            argv.append("--host")
        if self.store.mode == "rootless":
            argv.append("--userns")
        if not config.network:
            argv.append("--no-network")
        return [*argv, "--", self.shell, *shell_arguments]

    def put(self, sandbox: OpenLayer, source: str, destination: str) -> None:
        """Write straight into the upper directory: between calls nothing is mounted.

        Whiteouts on the way are cleared, and a copied directory is marked opaque
        so that it replaces, rather than merges with, what lower layers hold.
        """
        fmt = self.store.format
        current = self.store.diff_dir(sandbox.upper)
        for part in [p for p in os.path.dirname(destination).split("/") if p]:
            current = os.path.join(current, part)
            if fmt.entry(current) == "whiteout":
                os.unlink(current)
            if not os.path.isdir(current):
                os.mkdir(current, 0o755)
        target = os.path.join(current, os.path.basename(destination))
        replace_with_copy(source, target)
        if os.path.isdir(source):
            fmt.write_opaque(target)

    def capture(self, sandbox: OpenLayer) -> None:
        """Nothing to do: the kernel wrote every change into the upper directory already."""

    def advance(self, sandbox: OpenLayer, sealed_upper: str) -> None:
        """Nothing to move: the next call mounts the new upper; the old scratch goes with it."""

    def close(self, sandbox: OpenLayer) -> None:
        """Nothing stays mounted between calls, so there is nothing to release."""
