"""Checkpointed sandboxes: per-turn copy-on-write layers, constant-time forks.

This module is the sandbox's whole surface: nothing outside `sprout.sandbox` imports its
sub-packages (`backends`, `jail`, `network`, `layers`, `storefs`), so they can change
without touching their callers.
"""

from sprout.sandbox.errors import (
    BadArgument,
    FlushFailed,
    SandboxError,
    SandboxSetupFailed,
    SandboxUnavailable,
    StoreModeMismatch,
    UnknownCheckpoint,
)
from sprout.sandbox.jail.idmap import configured_range
from sprout.sandbox.jail.modes import current_user_mode
from sprout.sandbox.jail.processes import process_alive, process_start
from sprout.sandbox.layers.changes import checkpoint_changes
from sprout.sandbox.layers.gc import Freed, StoreInUse
from sprout.sandbox.layers.layer_files import private_dir
from sprout.sandbox.layers.meta import Layer
from sprout.sandbox.layers.private import keep_private, private_file
from sprout.sandbox.layers.share import needed_layers, take_shipped_layer
from sprout.sandbox.layers.store import LayerStore
from sprout.sandbox.local_workspace import SandboxFork, SandboxWorkspace
from sprout.sandbox.network.namespace import refuse_addresses, refused_by_run
from sprout.sandbox.network.policy import AllowedHost, Network
from sprout.sandbox.probe import IsolationReport, probe_isolation
from sprout.sandbox.replay import Rebuilt, ReplayCall, ReplayTurn, rebuild, sealed_in
from sprout.sandbox.rootfs.catalog import NAMES, Image, ImageCatalog, config_env
from sprout.sandbox.rootfs.notes import StoreNote, note_image, stores_by_image
from sprout.sandbox.sandbox import Sandbox
from sprout.sandbox.storefs.btrfs import (
    Placement,
    home_of,
    move_command,
    place_store,
    say_cost_once,
    store_fs_root,
)
from sprout.sandbox.storefs.extents import bytes_freed_by_removing, disk_usage
from sprout.sandbox.storefs.files import remove_tree
from sprout.sandbox.storefs.owners import (
    Orphan,
    orphan_stores,
    remove_orphan_store,
    remove_store_with_link,
    store_owner,
)
from sprout.sandbox.system_tools import system_tool
from sprout.sandbox.types import GIB, Limits, Observation, RunAs
from sprout.workspace import Change

__all__ = [
    "GIB",
    "NAMES",
    "AllowedHost",
    "BadArgument",
    "Change",
    "FlushFailed",
    "Freed",
    "Image",
    "ImageCatalog",
    "IsolationReport",
    "Layer",
    "LayerStore",
    "Limits",
    "Network",
    "Observation",
    "Orphan",
    "Placement",
    "Rebuilt",
    "ReplayCall",
    "ReplayTurn",
    "RunAs",
    "Sandbox",
    "SandboxError",
    "SandboxFork",
    "SandboxSetupFailed",
    "SandboxUnavailable",
    "SandboxWorkspace",
    "StoreInUse",
    "StoreModeMismatch",
    "StoreNote",
    "UnknownCheckpoint",
    "bytes_freed_by_removing",
    "checkpoint_changes",
    "config_env",
    "configured_range",
    "current_user_mode",
    "disk_usage",
    "home_of",
    "keep_private",
    "move_command",
    "needed_layers",
    "note_image",
    "orphan_stores",
    "place_store",
    "private_dir",
    "private_file",
    "probe_isolation",
    "process_alive",
    "process_start",
    "rebuild",
    "refuse_addresses",
    "refused_by_run",
    "remove_orphan_store",
    "remove_store_with_link",
    "remove_tree",
    "say_cost_once",
    "sealed_in",
    "store_fs_root",
    "store_owner",
    "stores_by_image",
    "system_tool",
    "take_shipped_layer",
]
