"""Which kind of sandbox this process can run: as root, rootless through a user namespace,
or the copy fallback where the kernel gives neither overlayfs nor namespaces. A store is
written in one of these modes and opened only in it (`sprout.sandbox.layers.store_json`)."""

from __future__ import annotations

import os
from typing import Literal

from sprout.sandbox.errors import SandboxUnavailable
from sprout.sandbox.jail.helper import helper_path

StoreMode = Literal["root", "rootless", "copy"]
MODES: tuple[StoreMode, ...] = ("root", "rootless", "copy")


def current_user_mode() -> StoreMode:
    """The overlay mode this process can use: root mounts directly, others need a user namespace."""
    return "root" if os.geteuid() == 0 else "rootless"


def overlay_unavailable_reason() -> str | None:
    """Why the overlay backend cannot run here, or None when it can."""
    try:
        with open("/proc/filesystems", encoding="ascii") as handle:
            if "overlay" not in handle.read():
                return "the kernel has no overlayfs (modprobe overlay)"
    except OSError:
        return "no /proc/filesystems: not a Linux kernel"
    if current_user_mode() == "rootless":
        try:
            with open("/proc/sys/user/max_user_namespaces", encoding="ascii") as handle:
                if int(handle.read()) == 0:
                    return "unprivileged user namespaces are disabled (user.max_user_namespaces=0)"
        except OSError:
            return "the kernel has no user namespaces"
    try:
        helper_path()
    except SandboxUnavailable as error:
        return str(error)
    return None


def default_mode() -> StoreMode:
    """The mode a new store gets: overlay when the machine allows it, else the copy fallback."""
    return "copy" if overlay_unavailable_reason() else current_user_mode()
