"""`sprout doctor` and the isolation gate of the commands that run model-written commands."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from sprout.cli import main
from tests.support.nobody import NOBODY, as_nobody
from tests.support.requirements import require_host_image
from tests.support.taskfolders import calc_task

MEASURES = [
    "overlayfs",
    "user namespace",
    "capabilities",
    "seccomp",
    "/proc and /sys",
    "cgroups",
    "host files",
    "disk cap",
]


@pytest.mark.sandbox
def test_doctor_as_root_reads_the_jail_back_from_inside(capsys: pytest.CaptureFixture[str]):
    require_host_image()
    assert main(["doctor"]) == 0
    printed = capsys.readouterr().out
    for name in [*MEASURES, "a call in the jail"]:
        assert f" {name} " in printed
    assert "CapEff 00000000a80425fb, NoNewPrivs 1, Seccomp 2" in printed
    assert printed.rstrip().splitlines()[-1].startswith("the sandbox holds")


@pytest.mark.sandbox
def test_doctor_json_names_a_disk_cap_the_store_cannot_have(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    require_host_image()
    assert main(["doctor", "--json", "--store", str(tmp_path / "new-store")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mode"] == "root" and report["holds"] is True and report["missing"] == []
    disk = next(m for m in report["measures"] if m["name"] == "disk cap")
    assert disk["required"] is False
    assert disk["ok"] is (report["warnings"] == [])


def sprout_as_nobody(*args: str, home: Path) -> tuple[int, str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "SPROUT_CACHE": str(home / "cache"),
        "LANG": "C.UTF-8",
    }
    done = as_nobody([sys.executable, "-m", "sprout.cli", *args], env)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def nobody_place(shared_tmp: Path, request: pytest.FixtureRequest) -> Path:
    place = shared_tmp / f"doctor-{request.node.name}"
    place.mkdir()
    os.chown(place, NOBODY, NOBODY)
    return place


@pytest.mark.sandbox
def test_without_cgroups_doctor_fails_and_a_run_refuses_to_start(nobody_place, shared_tmp):
    code, out, _ = sprout_as_nobody("doctor", home=nobody_place)
    assert code == 1, out
    assert "MISSING  cgroups" in out and "--isolation none" in out
    task = calc_task(shared_tmp / f"{nobody_place.name}-tasks", "calc")
    os.system(f"chmod -R a+rX {shared_tmp}")
    out_dir = nobody_place / "run"
    arguments = [str(task), "--model", "oracle", "--method", "pass@1", "--out", str(out_dir)]
    code, _, err = sprout_as_nobody("run", *arguments, home=nobody_place)
    assert code == 2
    assert "the sandbox cannot hold on this machine (missing: cgroups)" in err
    code, out, _ = sprout_as_nobody("run", *arguments, "--isolation", "none", home=nobody_place)
    starts = [line for line in out.splitlines() if "start:" in line]
    assert starts and all("[NO ISOLATION]" in line for line in starts), out
    results = json.loads((out_dir / "results.json").read_text())
    assert results["isolation"]["holds"] is False
    assert results["isolation"]["missing"] == ["cgroups"]


def _disk_cap_line(printed: str) -> str:
    [line] = [line for line in printed.splitlines() if " disk cap " in line]
    return line


@pytest.mark.sandbox
def test_the_disk_cap_said_is_the_one_of_the_filesystem_holding_the_runs_layers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    """As root on a disk that cannot cap, a run's layers go on sprout's store filesystem,
    which caps them: doctor, and the start of a run, say nothing is wrong; with
    SPROUT_STORE_FS=off the layers stay on that disk, and both warn."""
    require_host_image()
    from sprout.sandbox.storefs.btrfs import home_of

    new = tmp_path / "run" / "layers"
    if not home_of(new).placement.own_fs:
        pytest.skip("the layers would not be on the store filesystem here (see the header)")
    assert main(["doctor", "--store", str(new)]) == 0
    assert _disk_cap_line(capsys.readouterr().out).split()[0] == "ok"
    task = calc_task(tmp_path / "tasks", "calc")
    argv = ["run", str(task), "--model", "oracle", "--method", "pass@1", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    assert "disk cap" not in capsys.readouterr().err
    assert main(["doctor", "--store", str(tmp_path / "run")]) == 0
    assert _disk_cap_line(capsys.readouterr().out).split()[0] == "ok", "the run's own store"

    monkeypatch.setenv("SPROUT_STORE_FS", "off")
    assert main(["doctor", "--store", str(tmp_path / "plain" / "layers")]) == 0
    assert _disk_cap_line(capsys.readouterr().out).split()[0] == "warning"
    assert main([*argv, "--out", str(tmp_path / "plain")]) == 0
    assert "warning: disk cap: " in capsys.readouterr().err


@pytest.mark.sandbox
def test_a_run_refuses_to_start_without_the_network_stack_and_names_its_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Every sandbox with network needs slirp4netns: without it a run stops before anything
    is written, in one line naming the Debian package."""
    from sprout.commands.common import UsageError, check_isolation
    from sprout.sandbox.network import namespace as network

    found = network.system_tool
    monkeypatch.setattr(
        network, "system_tool", lambda name: None if name == "slirp4netns" else found(name)
    )
    with pytest.raises(UsageError) as refused:
        check_isolation(str(tmp_path / "run"), "full", "run")
    message = str(refused.value)
    assert "missing: network" in message and "apt-get install slirp4netns" in message
    assert "\n" not in message and not (tmp_path / "run").exists()


def test_doctor_says_where_pulled_layers_go_and_what_a_machine_without_skopeo_gets(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    main(["doctor"])
    assert "image pulls: " in capsys.readouterr().out
    monkeypatch.setattr("sprout.commands.doctor.system_tool", lambda name: None)
    main(["doctor", "--json"])
    assert json.loads(capsys.readouterr().out)["image_cache"]["skopeo"] is None
    main(["doctor"])
    assert "image pulls: skopeo is missing (Debian package skopeo)" in capsys.readouterr().out
