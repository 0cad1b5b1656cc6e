"""uv for verifiers: which scripts need it, which version, the machine-wide cache, and a
Terminal-Bench 2 verifier run unmodified where only package registries answer."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from sprout.verify import ResultsError, run_verifier
from sprout.verify import uv as uvmod
from sprout.verify.uv import (
    UvUnavailable,
    env_script,
    newest_version,
    requested_version,
    uses_uv,
    uv_binaries,
)
from tests.support.requirements import require_host_image
from tests.support.taskfolders import write_task

TB2_TEST_SH = "\n".join(
    [
        "#!/bin/bash",
        "apt-get update",
        "apt-get install -y curl",
        "curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh",
        "source $HOME/.local/bin/env",
        "uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 "
        "pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA",
        "if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; "
        "else echo 0 > /logs/verifier/reward.txt; fi",
        "",
    ]
)
"""The verifier 82 of Terminal-Bench 2's 89 tasks share, as they ship it."""

TEST_OUTPUTS = """\
import sys

sys.path.insert(0, "/app")


def test_imports():
    import calc  # noqa: F401


def test_add():
    import calc

    assert calc.add(2, 3) == 5, "add(2, 3) should be 5"
"""


def test_scripts_that_use_uv_are_recognised() -> None:
    assert uses_uv(TB2_TEST_SH)
    assert uses_uv("$HOME/.local/bin/uvx pytest")
    assert uses_uv("uv run pytest")
    assert not uses_uv("pip install uvicorn && cat uv.lock && echo uv_x")
    assert not uses_uv("bash /tests/run.sh")


def test_the_installer_url_pins_the_version() -> None:
    assert requested_version(TB2_TEST_SH) == "0.9.5"
    assert requested_version("curl -LsSf https://astral.sh/uv/install.sh | sh") is None
    assert requested_version("uvx pytest") is None


def test_the_env_script_puts_the_folder_on_path_once(tmp_path: Path) -> None:
    script = tmp_path / "env"
    script.write_text(env_script("/root/.local/bin"))
    shell = shutil.which("dash") or "/bin/sh"
    printed = subprocess.run(
        [shell, "-c", f'. {script}; . {script}; printf %s "$PATH"'],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert printed == "/root/.local/bin:/usr/bin:/bin"


def fake_uv(root: Path, version: str) -> Path:
    folder = root / f"uv-{version}"
    folder.mkdir(parents=True)
    for name in ("uv", "uvx"):
        (folder / name).write_text("#!/bin/sh\n")
    return folder


def test_a_cached_version_is_used_without_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(uvmod, "_pip", lambda arguments: pytest.fail("pip was called"))
    folder = fake_uv(tmp_path, "0.9.5")
    assert uv_binaries("0.9.5", root=tmp_path) == folder


def test_concurrent_runs_fetch_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fetches: list[str] = []

    def slow_fetch(version: str, folder: Path) -> None:
        fetches.append(version)
        time.sleep(0.2)
        for name in ("uv", "uvx"):
            (folder / name).write_text("#!/bin/sh\n")

    monkeypatch.setattr(uvmod, "_fetch", slow_fetch)
    with ThreadPoolExecutor(4) as pool:
        folders = list(pool.map(lambda _: uv_binaries("0.9.5", root=tmp_path), range(4)))
    assert fetches == ["0.9.5"]
    assert folders == [tmp_path / "uv-0.9.5"] * 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["uv-0.9.5", "uv-0.9.5.lock"]


def test_without_the_index_the_newest_cached_version_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreachable() -> str:
        raise UvUnavailable("cannot ask the package index for the newest uv")

    monkeypatch.setattr(uvmod, "_index_newest", unreachable)
    fake_uv(tmp_path, "0.9.10")
    fake_uv(tmp_path, "0.10.0")
    fake_uv(tmp_path, "0.11.0")
    shutil.rmtree(tmp_path / "uv-0.11.0")  # a fetch that never finished does not count
    (tmp_path / "uv-0.11.0").mkdir()
    assert newest_version(tmp_path) == "0.10.0"
    with pytest.raises(UvUnavailable, match="newest uv"):
        newest_version(tmp_path / "empty")


def test_a_failed_fetch_is_one_line_and_a_verifier_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An index with no uv, without touching the network: pip looks only in an empty folder.
    (tmp_path / "wheels").mkdir()
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    with pytest.raises(UvUnavailable) as raised:
        uv_binaries("0.9.5", root=tmp_path / "tools")
    message = str(raised.value)
    assert isinstance(raised.value, ResultsError)  # the attempt's error, not a failure
    assert "\n" not in message
    assert message.startswith("cannot fetch uv 0.9.5 for the verifier from the package index")
    assert "uv==0.9.5" in message
    assert [p.name for p in (tmp_path / "tools").iterdir()] == ["uv-0.9.5.lock"]
    # The next verifier in this process gets the same answer without waiting on pip again.
    monkeypatch.setattr(uvmod, "_pip", lambda arguments: pytest.fail("pip was asked again"))
    with pytest.raises(UvUnavailable) as again:
        uv_binaries("0.9.5", root=tmp_path / "tools")
    assert str(again.value) == message


# --- a Terminal-Bench 2 task, its verifier unmodified ----------------------------------------


def write_tb2_task(root: Path) -> Path:
    """A task in Terminal-Bench 2's layout, with the standard uv-based test.sh."""
    return write_task(
        root,
        "calc",
        instruction="add() in /app/calc.py subtracts. Make it add.\n",
        toml='version = "1.0"\n\n[metadata]\ndifficulty = "easy"\n\n'
        "[verifier]\ntimeout_sec = 600.0\n\n[agent]\ntimeout_sec = 600.0\n\n"
        "[environment]\nbuild_timeout_sec = 600.0\ncpus = 1\nmemory_mb = 2048\n",
        dockerfile="FROM python:3.13-slim\nWORKDIR /app\nCOPY calc.py /app/calc.py\n",
        environment={"calc.py": "def add(a, b):\n    return a - b\n"},
        solve="#!/bin/bash\nsed -i 's/a - b/a + b/' /app/calc.py\n",
        tests={"test.sh": TB2_TEST_SH, "test_outputs.py": TEST_OUTPUTS},
    )


@pytest.fixture(scope="module")
def python_image() -> str:
    """The Debian trixie image that stands in for python:3.13-slim (built once per machine);
    the tasks' FROM finds it."""
    from sprout.images import ImageError
    from sprout.images.names import ensure_image

    try:
        return ensure_image("python:3.13-slim").rootfs
    except ImageError as error:
        pytest.skip(f"cannot build the python:3.13-slim image here: {error}")


@pytest.fixture(scope="module")
def uv_fetched() -> Path:
    """uv 0.9.5 from the package index through this machine's pip settings."""
    try:
        return uv_binaries("0.9.5")
    except UvUnavailable as error:
        pytest.skip(f"the package index is unreachable from this machine: {error}")


@pytest.mark.sandbox
@pytest.mark.slow
def test_a_terminal_bench_2_verifier_runs_unmodified(
    overlay_store: LayerStore, tmp_path: Path, python_image: str, uv_fetched: Path
) -> None:
    from sprout.tasks import base_checkpoint_of, load_native

    require_host_image()
    folder = write_tb2_task(tmp_path)
    task = load_native(folder)
    assert task.verifier_command == "bash /tests/test.sh" and task.tests_dir is not None
    base = base_checkpoint_of(task, overlay_store)

    started = time.monotonic()
    untouched = run_verifier(task, overlay_store, base, base).diagnostics
    seconds = time.monotonic() - started
    assert untouched.reward == 0, untouched.log_tail
    assert "ctrf:" in untouched.source, untouched.log_tail
    assert (untouched.passed, untouched.failed) == (1, 1)
    assert "add(2, 3) should be 5" in str(untouched.tests)
    # Nothing of the verifier's reaches the checkpoint the agent works on.
    with Sandbox.fork(overlay_store, base) as sandbox:
        assert sandbox.run("ls /root/.local/bin /tests /etc/sprout 2>&1").exit_code != 0

    with Sandbox.fork(overlay_store, base) as sandbox:
        sandbox.put(folder / "solution", "/solution")
        assert sandbox.run("bash /solution/solve.sh").exit_code == 0
        sandbox.run("rm -rf /solution")
        solved = sandbox.checkpoint()
    verdict = run_verifier(task, overlay_store, solved, base)
    assert verdict.reward == 1, verdict.diagnostics.log_tail
    assert "ctrf:" in verdict.diagnostics.source
    assert verdict.diagnostics.passed == 2
    assert "+    return a + b" in verdict.patch
    print(f"verifier on the untouched task: {seconds:.1f} s")


@pytest.mark.sandbox
@pytest.mark.slow
def test_a_terminal_bench_2_verifier_runs_as_the_dockerfiles_user(
    overlay_store: LayerStore, tmp_path: Path, python_image: str, uv_fetched: Path
) -> None:
    """Harbor runs test.sh as the image's USER: uv is installed for that user, who owns the
    ~/.local uv writes under, and the standard test.sh passes on the solved task."""
    from sprout.tasks import base_checkpoint_of, load_native

    folder = write_tb2_task(tmp_path)
    dockerfile = folder / "environment" / "Dockerfile"
    dockerfile.write_text(
        "FROM python:3.13-slim\nRUN useradd -m -u 4244 app && mkdir -p /app && chown app /app\n"
        "USER app\nWORKDIR /app\nCOPY calc.py /app/calc.py\n"
    )
    task = load_native(folder)
    base = base_checkpoint_of(task, overlay_store)
    with Sandbox.fork(overlay_store, base) as sandbox:
        assert sandbox.run("sed -i 's/a - b/a + b/' /app/calc.py").exit_code == 0
        solved = sandbox.checkpoint()
    verdict = run_verifier(task, overlay_store, solved, base)
    assert verdict.reward == 1, verdict.diagnostics.log_tail
    assert verdict.diagnostics.passed == 2


@pytest.mark.sandbox
@pytest.mark.slow
def test_a_verifier_that_needs_a_python_the_image_lacks_says_so_in_one_line(
    overlay_store: LayerStore, tmp_path: Path, python_image: str, uv_fetched: Path
) -> None:
    from sprout.pipeline.task_check import verifier_crash
    from sprout.tasks import base_checkpoint_of, load_native

    require_host_image()
    folder = write_tb2_task(tmp_path)
    script = TB2_TEST_SH.replace("apt-get", ": apt-get").replace("-p 3.13", "-p 3.12")
    (folder / "tests" / "test.sh").write_text(script)
    task = load_native(folder)
    base = base_checkpoint_of(task, overlay_store)
    diagnostics = run_verifier(task, overlay_store, base, base).diagnostics
    if diagnostics.passed + diagnostics.failed:
        pytest.skip("this machine reaches github.com: uv downloaded Python 3.12 itself")
    reason = verifier_crash(diagnostics)
    assert reason is not None, diagnostics.log_tail
    assert reason.startswith("needs the internet (github.com): uv downloads Python 3.12"), (
        diagnostics.log_tail
    )
    assert "\n" not in reason


@pytest.mark.sandbox
@pytest.mark.slow
def test_tasks_check_passes_a_terminal_bench_2_task_as_it_ships(
    tmp_path: Path, python_image: str, uv_fetched: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sprout.cli import main

    require_host_image()
    folder = write_tb2_task(tmp_path)
    assert main(["tasks", "check", str(folder)]) == 0, capsys.readouterr()
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[:3] == ["calc", "fail", "(1"] and row[-1] == "ok"
