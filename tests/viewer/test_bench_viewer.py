"""`sprout bench viewer --quick --no-browser`: the viewer benchmark runs on its small
synthetic runs and writes every figure but the browser's (30 s more on 2 cores; the page
itself is what tests/viewer's Chromium tests drive)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout.cli import main


def test_the_viewer_benchmark_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "viewer.json"
    assert main(["bench", "viewer", "--quick", "--no-browser", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["benchmark"] == "viewer" and report["repeat"] == 1
    assert report["browser_skipped"] == "--no-browser"
    many, big = report["results"]
    assert (many["shape"], big["shape"]) == ("many tasks", "one big task")
    assert many["tasks"] > 1 and big["tasks"] == 1
    for result in (many, big):
        assert result["turns"] == 500
        assert set(result["data"]) == {"run_summary", "task_tree", "turn_detail"}
        assert set(result["api"]) == {"summary", "task_tree", "turn"}
        assert all(result["api"][k]["bytes"] > 0 for k in result["api"])
        assert result["report"]["bytes"] > 0 and result["report"]["write_report"]["p50_ms"] > 0
        assert "browser" not in result
    printed = capsys.readouterr().out
    assert "data: task_tree(biggest task)" in printed and str(out) in printed
