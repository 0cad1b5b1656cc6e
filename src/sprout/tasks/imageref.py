"""What a task's image setting names: `host`, a root-filesystem folder, or an image name.

A name (`python:3.11-slim`, a Dockerfile's `FROM`) is checked when the task
loads, so a task whose image sprout can neither find nor build is refused
before a run starts; the image itself is built when a base layer first needs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from sprout.images import ImageError
from sprout.images.names import image_for
from sprout.task import TaskError


def task_image(
    value: str, root: Path, images: Mapping[str, str] | None, where: str
) -> tuple[str, str]:
    """(`host`, an absolute folder or an image name; what the image approximates or "").

    `images` (the --images table) wins; then a folder (relative to `root`); then a name.
    """
    if value == "host":
        return value, ""
    if images and value in images:
        return images[value], ""
    folder = root / value
    if value.startswith(("/", "./", "../")) or folder.is_dir():
        if not folder.is_dir():
            raise TaskError(f"{where}: {folder} is not a folder")
        return str(folder.resolve()), ""
    try:
        return image_for(value)
    except ImageError as error:
        raise TaskError(f"{where}: {error}") from None
