"""`sprout run` of a task whose set-up and verifier `pip install` from a package index, in
the world of tests/support/net_world.py: the index is a folder served on its "internet"
under a name its resolver answers, reached under `public` and under an allow-list naming
it, and refused under an allow-list naming another host. What reached the index is read
from its log."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.support.net_world import ELSEWHERE_NAME, INDEX_NAME, INDEX_PORT, NETWORK_MARKS, World

pytestmark = [*NETWORK_MARKS, pytest.mark.timeout(600)]

WHEEL = "sproutcanary-1.0-py3-none-any.whl"
INSTALL = (
    "python3 -m pip install -q --no-cache-dir --disable-pip-version-check --no-deps "
    "--isolated --index-url {index}/simple/ --trusted-host " + INDEX_NAME + " --target {target} "
    "sproutcanary"
)
TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
{install} || {{ echo 0 > /logs/verifier/reward.txt; exit 0; }}
PYTHONPATH=/tmp/verifier:/opt/canary python3 -c 'import sproutcanary' \\
  && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
"""


def _index(root: Path) -> Path:
    """A PEP 503 index holding one wheel of our own."""
    files = {
        "sproutcanary/__init__.py": "VALUE = 42\n",
        "sproutcanary-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sproutcanary\n"
        "Version: 1.0\n",
        "sproutcanary-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: sprout-tests\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files["sproutcanary-1.0.dist-info/RECORD"] = "".join(f"{name},,\n" for name in files)
    page = root / "simple" / "sproutcanary"
    page.mkdir(parents=True)
    with zipfile.ZipFile(root / WHEEL, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
    (page / "index.html").write_text(f'<a href="../../{WHEEL}">{WHEEL}</a>\n')
    return root


def _task(root: Path, index: str, toml: str) -> Path:
    task = root / "pip-task"
    (task / "tests").mkdir(parents=True)
    (task / "solution").mkdir()
    (task / "instruction.md").write_text("Nothing to do: the set-up and the tests install.\n")
    (task / "solution" / "solve.sh").write_text("true\n")
    verifier_install = INSTALL.format(index=index, target="/tmp/verifier")
    (task / "tests" / "test.sh").write_text(TEST_SH.format(install=verifier_install))
    setup = INSTALL.format(index=index, target="/opt/canary")
    (task / "task.toml").write_text(
        f'[verifier]\ntimeout_sec = 120\n{toml}\n[sprout]\nimage = "host"\nnetwork = false\n'
        f'setup = [{setup!r}]\nresults = "reward"\n'
    )
    return task


def _run(world: World, task: Path, sprout_toml: str = "") -> dict[str, object]:
    """`sprout run` of the oracle on `task`, on the world's host: its exit code, and
    results.json's rows."""
    if sprout_toml:
        toml = task / "task.toml"
        toml.write_text(toml.read_text() + sprout_toml)
    out = world.root / "run"
    return world.run(
        "import contextlib, io, json\nfrom sprout.cli import main\nsaid = io.StringIO()\n"
        "with contextlib.redirect_stderr(said):\n"
        f"    code = main(['run', {str(task)!r}, '--model', 'oracle', '--method', 'pass@1', "
        f"'--out', {str(out)!r}, '--quiet'])\n"
        f"results = json.load(open({str(out / 'results.json')!r}))\n"
        "print(json.dumps({'code': code, 'results': results, 'said': said.getvalue()}))\n"
    )


def _resolved(found: dict[str, object]) -> object:
    results = found["results"]
    assert isinstance(results, dict), found
    return results["methods"]["pass@1"]["resolved"]


def test_set_up_and_verifier_install_from_the_index_under_public(world: World) -> None:
    index = world.serve_files(_index(world.root / "index"))
    found = _run(world, _task(world.root, index, ""))
    assert found["code"] == 0, found
    assert _resolved(found) == 1, found
    wheels = [hit for hit in world.hits("files") if hit.endswith(".whl")]
    assert len(wheels) == 2, "one install in set-up, one in the verifier"
    assert world.canary_hits() == {}


def test_set_up_and_verifier_install_under_an_allowlist_naming_the_index(world: World) -> None:
    index = world.serve_files(_index(world.root / "index"))
    listed = f"{INDEX_NAME}:{INDEX_PORT}"
    toml = f'network_mode = "allowlist"\nallowed_hosts = ["{listed}"]\n'
    found = _run(
        world,
        _task(world.root, index, toml),
        f'setup_network = "allowlist"\nallow = ["{listed}"]\n',
    )
    assert found["code"] == 0, found
    assert _resolved(found) == 1, found
    assert len([hit for hit in world.hits("files") if hit.endswith(".whl")]) == 2
    assert world.canary_hits() == {}


def test_a_verifier_whose_allowlist_names_another_host_reaches_no_index(world: World) -> None:
    index = world.serve_files(_index(world.root / "index"))
    toml = f'network_mode = "allowlist"\nallowed_hosts = ["{ELSEWHERE_NAME}"]\n'
    found = _run(world, _task(world.root, index, toml))
    assert found["code"] == 0, found
    assert _resolved(found) == 0, "its pip install failed"
    assert len([hit for hit in world.hits("files") if hit.endswith(".whl")]) == 1, "set-up's"
    assert INDEX_NAME in world.hits("resolver"), "set-up (public) asked for it"
