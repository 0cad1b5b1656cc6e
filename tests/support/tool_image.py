"""An image of a machine cache of the test's own, `acme/tool:1` (the minimal root filesystem,
imported as `docker save` would give it), and a task that builds on it: for the tests of
base layers, built once per machine and linked by every run, and of `sprout gc` beside them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.images import ImageCache
from sprout.images.oci import import_image
from tests.support.oci_archives import docker_save, rootfs_layer
from tests.support.requirements import require_host_image
from tests.support.taskfolders import write_task

TOOL_IMAGE = "acme/tool:1"


@pytest.fixture
def tool_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minimal_rootfs: Path) -> ImageCache:
    """A machine cache of its own (SPROUT_CACHE, for this test), holding the minimal root
    filesystem as TOOL_IMAGE."""
    require_host_image()
    monkeypatch.setenv("SPROUT_CACHE", str(tmp_path / "machine-cache"))
    tarball = docker_save(tmp_path / "image.tar", [rootfs_layer(minimal_rootfs)], TOOL_IMAGE)
    import_image(tarball, TOOL_IMAGE)
    return ImageCache()


def greet_task(root: Path, toml: str = 'version = "1.0"\n') -> Path:
    """A native task `greet` over TOOL_IMAGE whose Dockerfile copies a file and runs a step:
    a base layer of its own, built from the image."""
    return write_task(
        root,
        "greet",
        instruction="Greet.\n",
        toml=toml,
        dockerfile=f"FROM {TOOL_IMAGE}\nWORKDIR /app\nCOPY hello.txt .\n"
        "RUN cat hello.txt hello.txt > twice\n",
        environment={"hello.txt": "hello\n"},
        tests={"test.sh": "exit 0\n"},
    )
