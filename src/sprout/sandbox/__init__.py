"""Checkpointed sandboxes: per-turn copy-on-write layers, constant-time forks.

The public API other modules use: `LayerStore`, `Sandbox`, `Observation`,
`Change`, `Limits`, `SandboxWorkspace` (the actor's workspace), and the errors below.
"""

from sprout.sandbox.errors import (
    BadArgument,
    SandboxError,
    SandboxSetupFailed,
    SandboxUnavailable,
    StoreModeMismatch,
    UnknownCheckpoint,
)
from sprout.sandbox.layer_meta import Layer
from sprout.sandbox.layers import LayerStore
from sprout.sandbox.sandbox import Sandbox
from sprout.sandbox.types import Change, Limits, Observation
from sprout.sandbox.workspace import SandboxWorkspace

__all__ = [
    "BadArgument",
    "Change",
    "Layer",
    "LayerStore",
    "Limits",
    "Observation",
    "Sandbox",
    "SandboxError",
    "SandboxSetupFailed",
    "SandboxUnavailable",
    "SandboxWorkspace",
    "StoreModeMismatch",
    "UnknownCheckpoint",
]
