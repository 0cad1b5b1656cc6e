"""What a backend is: the protocol every way of running a sandbox's calls implements, and
the open layer (`OpenLayer`) each of its calls is given."""

from __future__ import annotations

import os
from typing import Protocol

from sprout.sandbox.layers.store import LayerStore
from sprout.sandbox.types import Observation, SandboxConfig

BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
}
"""The environment every call starts from; a sandbox's own `env` is laid over it."""


class OpenLayer:
    """What a backend sees of a sandbox (`sprout.sandbox.Sandbox` is one, built on this): the
    checkpoint it stands on and the layer it writes."""

    def __init__(self, store: LayerStore, parent: str, upper: str, config: SandboxConfig) -> None:
        self.store = store
        self.parent = parent
        """The checkpoint it stands on."""
        self.upper = upper
        """The unsealed layer its calls write."""
        self.config = config


class Backend(Protocol):
    """Runs calls over a layer stack and turns their writes into the unsealed layer."""

    image_root: str | None
    """The image's directory as seen by change lookups (None: the backend tracks no image)."""

    def open(self, sandbox: OpenLayer) -> None:
        """Prepare a writable view of `sandbox.parent` (called once per sandbox)."""
        ...

    def run(self, sandbox: OpenLayer, command: str, timeout: float) -> Observation:
        """Run one shell call; nothing it started may outlive it."""
        ...

    def interactive(self, sandbox: OpenLayer) -> int:
        """Run the image's shell on this terminal (stdin, stdout, stderr inherited)."""
        ...

    def put(self, sandbox: OpenLayer, source: str, destination: str) -> None:
        """Copy local `source` to absolute `destination` inside, replacing what was there."""
        ...

    def capture(self, sandbox: OpenLayer) -> None:
        """Make `sandbox.upper` hold every change since `sandbox.parent`."""
        ...

    def advance(self, sandbox: OpenLayer, sealed_upper: str) -> None:
        """Move the writable view onto a fresh upper after `sealed_upper` was sealed."""
        ...

    def close(self, sandbox: OpenLayer) -> None:
        """Release what `open` prepared."""
        ...


def shell_for(root: str) -> str:
    """bash where the image has it (agents write bash), else POSIX sh."""
    return "/bin/bash" if os.path.exists(os.path.join(root, "bin/bash")) else "/bin/sh"
