"""sprout as `pip install sprout-rl` installs it: the wheel and the sdist built from this
checkout, each installed into a fresh virtualenv of its own, and run there, away from the
checkout (a wheel that lacks a file the package reads at run time fails here, not on a
user's machine).

The smoke test is what a new user does first: `sprout --version`, `sprout doctor`, a
sandbox of the Python API on an image of the machine's cache by name that checkpoints and
forks, and `sprout run` of one example task with the `oracle` model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import sprout
from sprout.images import ImageCache
from tests.support.repo_paths import EXAMPLE_TASKS, REPO, SPROUT_SOURCE
from tests.support.requirements import require_host_image

IMAGE = "python:3.11-slim"
"""The image the example tasks and the README's Python example stand on."""
API_SMOKE = f"""
import sys
from sprout.sandbox import LayerStore, Sandbox

store = LayerStore(sys.argv[1])
with Sandbox.create(store, image={IMAGE!r}, workdir="/app") as sandbox:
    assert sandbox.run("python3 -c 'print(6 * 7)' > answer").exit_code == 0
    answered = sandbox.checkpoint()
    sandbox.run("rm answer")
    sandbox.checkpoint()
with Sandbox.fork(store, answered) as branch:
    print(branch.run("cat answer").output.strip())
"""


def _run(command: list[str], cwd: Path, timeout: float = 600) -> str:
    """`command`'s output; the test fails with its output when it exits non-zero."""
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=_user_env()
    )
    assert done.returncode == 0, (
        f"{' '.join(command)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


def _user_env() -> dict[str, str]:
    """The environment of a user who installed sprout: nothing points into the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(REPO))
    )
    return env


def _checkout_copy(target: Path) -> Path:
    """The checkout's files as a fresh clone has them (tracked, or new and not ignored): a
    build in the checkout itself would read its `*.egg-info/SOURCES.txt`, which keeps every
    file an earlier build packed, and so hide a file the package data misses."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, and the wheel built from it, as `python -m build` makes them from a fresh
    clone."""
    source = _checkout_copy(tmp_path_factory.mktemp("checkout"))
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)], out)
    (sdist,) = out.glob("sprout_rl-*.tar.gz")
    (wheel,) = out.glob("sprout_rl-*.whl")
    return {"sdist": sdist, "wheel": wheel}


def _package_files() -> set[str]:
    """Every file of the package's source folder that is not Python's own bytecode."""
    return {
        str(p.relative_to(SPROUT_SOURCE.parent))
        for p in SPROUT_SOURCE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_the_wheel_and_the_sdist_hold_every_file_of_the_package(artifacts: dict[str, Path]):
    with zipfile.ZipFile(artifacts["wheel"]) as wheel:
        in_wheel = set(wheel.namelist())
    with tarfile.open(artifacts["sdist"]) as sdist:
        in_sdist = {name.partition("/")[2] for name in sdist.getnames()}  # no NAME-VERSION/
    assert _package_files() - in_wheel == set()
    assert {f"src/{name}" for name in _package_files()} - in_sdist == set()


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_an_installed_sprout_runs_as_a_user_meets_it(
    kind: str, artifacts: dict[str, Path], tmp_path: Path
):
    require_host_image()
    if ImageCache().get(IMAGE) is None:
        pytest.skip(f"{IMAGE} is not in the image cache (sprout image build {IMAGE})")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    _run([str(venv / "bin" / "pip"), "install", "-q", str(artifacts[kind])], tmp_path)
    python, command = venv / "bin" / "python", venv / "bin" / "sprout"
    where = _run([str(python), "-c", "import sprout; print(sprout.__file__)"], tmp_path)
    assert where.startswith(str(venv)), where

    assert _run([str(command), "--version"], tmp_path) == f"sprout-rl {sprout.__version__}\n"
    _run([str(command), "doctor"], tmp_path)
    assert _run([str(python), "-c", API_SMOKE, str(tmp_path / "layers")], tmp_path) == "42\n"

    run = tmp_path / "run"
    task = EXAMPLE_TASKS / "blog-slugs"
    _run(
        [
            str(command),
            "run",
            str(task),
            "--model",
            "oracle",
            "--method",
            "pass@1",
            "--out",
            str(run),
        ],
        tmp_path,
    )
    results = json.loads((run / "results.json").read_text())
    assert results["sprout_version"] == sprout.__version__
    assert results["methods"]["pass@1"]["resolved"] == 1
