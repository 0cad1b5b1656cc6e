"""`sprout bench scale` in its smallest configuration: every section runs (one or two
attempts alive, one through the runner, a few idle sandboxes) and writes each figure a
reader of docs/benchmarks.md relies on; what the figures are is the benchmark's business,
not this test's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout.cli import main
from tests.support.repo_paths import EXAMPLE_TASKS
from tests.support.requirements import require_host_image

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

SMALLEST = ["--quick", "--max", "2", "--idle", "3", "--runner-max", "1", "--think", "0"]
SMALLEST += ["--tail-rounds", "1", "--tail-calls", "3"]
TAIL = {"n", "p50_ms", "p90_ms", "p99_ms"}


def test_the_scale_benchmark_runs_and_writes_its_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    out = tmp_path / "scale.json"
    options = [*SMALLEST, "--out", str(out), "--dir", str(tmp_path), "--tasks", str(EXAMPLE_TASKS)]
    assert main(["bench", "scale", *options]) == 0
    report = json.loads(out.read_text())
    assert report["benchmark"] == "scale" and set(report["machine_load"]) == {"before", "after"}
    for series in ("launched", "joining", "join alone", "same shell, no join"):
        assert {*TAIL, "p99_over_p50_median_of_rounds"} <= set(report["tail"][series])
    turns = report["turns"]
    assert turns["one_p99_ms"] >= turns["one_p50_ms"] > 0
    assert turns["one_turns_per_s"] > 0 and turns["8_over_one"] > 0
    levels = report["sweep"]["0"]["levels"]
    assert [level["attempts"] for level in levels] == [1, 2]
    for level in levels:
        assert level["turns_per_s"] > 0 and level["turns"] > 0
        for figure in ("call", "seal", "fork", "first_call"):
            assert set(level[figure]) >= TAIL
        assert set(level["cpu_ms_per_turn"]) == {"user", "system"}
        held = set(level["per_open_sandbox"])
        assert held == {"processes", "fds", "pss_bytes", "cgroups", "charged_bytes"}
        assert set(level["per_turn"]) == {"inodes", "cgroups"}
    assert report["sweep"]["0"]["saturation"]["bottleneck"]
    (through_runner,) = report["runner"]["0"]["levels"]
    assert through_runner["attempts"] == 1 and through_runner["turns"] > 0
    idle = report["idle"]
    assert idle["sandboxes"] == 3
    assert set(idle["first_call"]) >= TAIL and set(idle["call_among_them"]) >= TAIL
    assert idle["left_after_close"] | {"host_mount_count_change": 0} == {
        "processes": [],
        "cgroups": [],
        "mounts": [],
        "host_mount_count_change": 0,
        "clean": True,
    }
    assert report["checks"][-1]["pass"], "nothing left: the check that decides the exit code"
    assert out.with_suffix(".svg").read_text().startswith("<svg ")
    printed = capsys.readouterr().out
    assert "-- the per-call tail" in printed and str(out) in printed
    assert not list(tmp_path.glob(".sprout-bench-scale-*")), "its stores were left behind"
