"""The image tests of row formats: a small repository's image pushed to the test's
registry in a publisher's layout, and a rows file's one task placed on its image as a run
places it (loaded, then its image pulled)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sprout.task import Task
from sprout.tasks import load_tasks
from sprout.tasks.setup.image_choice import choose_task_images
from tests.support.registry_world import Layout, Registry, tree_blob
from tests.support.rootfs import build_rootfs
from tests.support.swerebench_rows import make_repo


def placed(rows: Path, **sources: Any) -> Task:
    """The one row's task on the image pulled from the test's registry; `sources` as
    `load_tasks` takes them (`swe_gym=`)."""
    loaded = load_tasks([rows], **sources)
    assert loaded.errors == []
    chosen = choose_task_images(loaded.tasks, say=lambda line: None)
    assert chosen.errors == []
    [task] = chosen.tasks
    return task


CONDA_STAND_IN = "conda() { :; }\n"
"""/opt/miniconda3/bin/activate of the V1 image: the eval script sources it and activates
`testbed`; this image's tools are on its PATH already."""


def push_repo_image(
    registry: Registry,
    tmp: Path,
    workdir: str,
    repository: str,
    tag: str,
    conda: bool,
    make: Callable[[Path], dict[str, str]] = make_repo,
    programs: dict[str, str] | None = None,
) -> dict[str, str]:
    """An image of the test's repository (`make` writes it) at `workdir`, with `programs`
    (path -> script) beside it, pushed as REPOSITORY:TAG: its reference, and what `make`
    returned (the repository's commits and patches)."""
    made = make(tmp / "repo")
    root = tmp / "rootfs"
    build_rootfs(root, extra=("bash", "git"))
    shutil.copytree(tmp / "repo", root / workdir.lstrip("/"), symlinks=True)
    (root / "etc/gitconfig").write_text("[safe]\n\tdirectory = *\n")
    if conda:
        (root / "opt/miniconda3/bin").mkdir(parents=True)
        (root / "opt/miniconda3/bin/activate").write_text(CONDA_STAND_IN)
    for where, script in (programs or {}).items():
        (root / where.lstrip("/")).write_text(script)
        (root / where.lstrip("/")).chmod(0o755)
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
    layout = Layout(tmp / "layout")
    config = {"Env": ["PATH=/usr/bin:/bin"], "WorkingDir": workdir}
    layout.tag("v1", layout.image([tree_blob(root)], config=config))
    return {**made, "image": registry.push(layout, "v1", repository, as_tag=tag)}
