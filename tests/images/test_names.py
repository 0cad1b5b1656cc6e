"""What a Dockerfile's FROM names, and the image sprout uses for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.images import Image, ImageCache, ImageError
from sprout.images.debian import DebianRecipe, mmdebstrap_command
from sprout.images.names import ensure_image, normalize, resolve_from
from sprout.tasks import load_tasks
from sprout.tasks.setup.image_choice import choose_task_images
from tests.support.taskfolders import write_task


@pytest.mark.parametrize(
    ("reference", "name"),
    [
        ("python:3.11-slim", "python:3.11-slim"),
        (
            "docker.io/library/python:3.11-slim@sha256:" + "0" * 64,
            "python:3.11-slim@sha256:" + "0" * 64,
        ),
        ("index.docker.io/acme/tool:2", "acme/tool:2"),
        ("127.0.0.1:5000/a/b@sha256:" + "1" * 64, "127.0.0.1:5000/a/b@sha256:" + "1" * 64),
        ("debian", "debian:latest"),
        ("ghcr.io/acme/tool", "ghcr.io/acme/tool:latest"),
        ("localhost:5000/tool", "localhost:5000/tool:latest"),
    ],
)
def test_references_are_normalised(reference: str, name: str):
    assert normalize(reference) == name


@pytest.mark.parametrize(
    ("reference", "suite", "python", "said"),
    [
        ("python:3.11-slim", "bookworm", True, "bookworm with its Python 3.11"),
        ("python:3.11.9-slim-bookworm", "bookworm", True, "bookworm"),
        ("python:3.13-slim-bookworm", "trixie", True, "trixie with its Python 3.13"),
        ("python:3.12", "trixie", True, "not 3.12"),
        ("debian:bookworm-slim", "bookworm", False, ""),
        ("debian:13", "trixie", False, ""),
        ("ubuntu:24.04", "trixie", False, "nearest Debian to Ubuntu 24.04"),
        ("ubuntu:22.04", "bookworm", False, "Ubuntu 22.04"),
    ],
)
def test_common_names_are_built_from_debian_and_say_what_they_approximate(
    reference: str, suite: str, python: bool, said: str
):
    request = resolve_from(reference)
    assert request is not None and request.recipe is not None
    assert request.recipe.suite == suite
    assert ("python3" in request.recipe.packages) == python
    assert request.recipe.pip_anywhere == python
    assert (said in request.approximation) if said else request.approximation == ""


@pytest.mark.parametrize(
    ("reference", "suite", "has", "lacks", "said"),
    [
        ("buildpack-deps:jammy", "bookworm", "g++", "", "nearest Debian to Ubuntu 22.04"),
        ("buildpack-deps:bookworm-scm", "bookworm", "git", "g++", "buildpack-deps' packages"),
        ("buildpack-deps:noble-curl", "trixie", "curl", "git", "Ubuntu 24.04"),
    ],
)
def test_buildpack_deps_is_debian_with_its_layers_packages(
    reference: str, suite: str, has: str, lacks: str, said: str
):
    request = resolve_from(reference)
    assert request is not None and request.recipe is not None
    assert request.recipe.suite == suite
    assert has in request.recipe.packages and lacks not in request.recipe.packages
    assert said in request.approximation
    assert resolve_from("buildpack-deps:latest") is None


@pytest.mark.parametrize("reference", ["Upper/Case", "a:b:c", "x@sha256:12", "host:port/x"])
def test_a_reference_docker_cannot_read_is_one_line_naming_it(reference: str):
    with pytest.raises(ImageError, match=f"image {reference!r}: "):
        normalize(reference)


def test_a_name_sprout_cannot_build_needs_a_pull_or_an_import(tmp_path: Path):
    cache = ImageCache(tmp_path / "cache")
    assert resolve_from("node:20") is None
    with pytest.raises(ImageError, match=r"image node:20: .*sprout image pull node:20.*import"):
        ensure_image("node:20", "approximate", cache)
    with pytest.raises(ImageError, match=r"node:20: not in the image cache, and --images cache"):
        ensure_image("node:20", "cache", cache)
    with pytest.raises(  # the suite's registries.conf sends docker.io to a closed port
        ImageError, match=r"no registry answered \(docker.io: .*builds no approximation"
    ):
        ensure_image("node:20", "pull", cache)


def test_recipes_are_checked_and_named_by_content():
    with pytest.raises(ImageError, match="suite 'Bookworm!'"):
        DebianRecipe("Bookworm!")
    with pytest.raises(ImageError, match="packages: 'curl;rm' is not a Debian package name"):
        DebianRecipe("bookworm", ("curl;rm",))
    a = DebianRecipe("bookworm", ("curl", "git"))
    assert a.digest == DebianRecipe("bookworm", ("git", "curl")).digest
    assert a.digest != DebianRecipe("trixie", ("curl", "git")).digest


def test_mmdebstrap_runs_unshared_for_a_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    recipe = DebianRecipe("trixie", ("python3",), pip_anywhere=True)
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    command = mmdebstrap_command(recipe, tmp_path / "rootfs")
    assert "--mode=unshare" in command and "--include=python3" in command
    assert any("EXTERNALLY-MANAGED" in part for part in command)
    assert command[-3:] == ["trixie", str(tmp_path / "rootfs"), recipe.mirror]
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert "--mode=unshare" not in mmdebstrap_command(recipe, tmp_path / "rootfs")


def test_python_3_12_is_trixies_3_13_said_once_per_run_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Debian has no Python 3.12: 3.13 runs what 3.12 code runs (3.11 lacks its syntax), so
    `python:3.12*` is the `python:3.13*` image, and a run that cannot pull the real one says
    so once for all its tasks (the Debian build itself is left out: it is mmdebstrap's)."""
    cache = ImageCache(tmp_path / "cache")
    built: list[str] = []

    def fake_debian(name: str, recipe: DebianRecipe, cache: ImageCache) -> Image:
        built.append(f"{name} {recipe.suite}")
        return cache.ensure(name, recipe.digest, recipe.to_json(), lambda root: None)

    monkeypatch.setattr("sprout.images.names.ensure_debian", fake_debian)
    for name in ("one", "two"):
        write_task(
            tmp_path / "tasks",
            name,
            instruction="Do it.\n",
            toml='version = "1.0"\n',
            dockerfile="FROM python:3.12-slim\nWORKDIR /app\n",
            tests={"test.sh": "exit 0\n"},
        )
    said: list[str] = []
    chosen = choose_task_images(
        load_tasks([tmp_path / "tasks"]).tasks, cache=cache, say=said.append
    )
    approximation = "python:3.12-slim is approximated by Debian trixie with its Python 3.13"
    assert built == ["python:3.12-slim trixie"]
    assert len(said) == 1 and said[0].startswith(f"image python:3.12-slim: {approximation}")
    assert "no registry answered (docker.io" in said[0]
    assert [task.image_mode for task in chosen.tasks] == ["approximate"] * 2
    record = chosen.record()
    assert sorted(record) == ["one", "two"]
    assert record["one"]["how"] == "approximation"
    assert record["one"]["approximation"].startswith(approximation)
    twelve, thirteen = resolve_from("python:3.12-slim"), resolve_from("python:3.13-slim")
    assert twelve is not None and thirteen is not None and twelve.recipe == thirteen.recipe
