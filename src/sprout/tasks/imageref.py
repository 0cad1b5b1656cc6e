"""What a task's image setting names (`host`, a root-filesystem folder, or an image
reference), and the root filesystem it stands for.

A reference (`python:3.11-slim`, a Dockerfile's `FROM`) is checked for its form
when the task loads; whether it is cached, pulled or approximated is decided when
a run starts (`sprout.tasks.setup.image_choice`), and the image is unpacked or built
when a base layer first needs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sprout.images import ImageCache, ImageError
from sprout.images.names import choose_image, normalize
from sprout.sandbox import config_env
from sprout.task import Task, TaskError


def task_image(value: str, root: Path, images: Mapping[str, str] | None, where: str) -> str:
    """`host`, an absolute folder or an image reference (normalised).

    `images` (the --images table) wins; then a folder (relative to `root`); then a name.
    """
    if value == "host":
        return value
    if images and value in images:
        return images[value]
    folder = root / value
    if value.startswith(("/", "./", "../")) or folder.is_dir():
        if not folder.is_dir():
            raise TaskError(f"{where}: {folder} is not a folder")
        return str(folder.resolve())
    return image_reference(value, where)


def image_reference(value: str, where: str) -> str:
    """`value` as an image reference, normalised (a prebuilt `docker_image`, a SWE-bench
    row's image: never a folder); TaskError naming `where` when it is none."""
    try:
        return normalize(value)
    except ImageError as error:
        raise TaskError(f"{where}: {error}") from None


@dataclass(frozen=True)
class RootFilesystem:
    """What a sandbox over an image mounts, and what the image says it starts with."""

    path: str
    identity: str
    """What identifies its content (a base layer's name depends on it)."""
    config: dict[str, Any] = field(default_factory=dict)
    """The image's own config (`oci.config_summary`): its variables, folder, user."""
    digest: str | None = None
    """The registry digest it was pulled by."""

    @property
    def env(self) -> dict[str, str]:
        """The image's ENV, as `docker run` starts a container with it."""
        return config_env(self.config)


def cached_env(image: str) -> dict[str, str] | None:
    """The ENV a Dockerfile's stage on `image` starts with, read from the machine's image
    cache without pulling: None while the image is not there (a run pulls it, then reads
    the Dockerfile again); nothing for `host` and root-filesystem folders, which have none."""
    if image == "host" or image.startswith("/"):
        return {}
    try:
        found = ImageCache().get(normalize(image))
    except ImageError:  # not a reference: the loader says so, naming its field
        return None
    return found.env if found is not None else None


def image_rootfs(image: str, task: Task) -> RootFilesystem:
    """The root filesystem of `image` (a task's or a stage's), from the machine's image
    cache, pulled or built first as the task's `image_mode` allows."""
    if image == "host" or image.startswith("/"):
        return RootFilesystem(image, image)
    try:
        found = choose_image(image, task.image_mode).image
    except ImageError as error:
        raise TaskError(f"{task.id}: {error}") from None
    config = found.source.get("config") or {}
    digest = found.source.get("digest") if found.source.get("kind") == "registry" else None
    return RootFilesystem(found.rootfs, found.digest, config, digest)
