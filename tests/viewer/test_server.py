"""`sprout view`'s server and report.html on a real small run (the fixture in conftest.py):
the page is served, the API answers what the data layer says, errors are JSON, and the
report is one file with everything in it and nothing to fetch."""

from __future__ import annotations

import json
import re
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from sprout.cli import main
from sprout.runfolder import RunFolder
from sprout.tree.database.schema import SCHEMA_VERSION
from sprout.viewer import run_summary, task_tree, turn_detail
from sprout.viewer.report import write_report
from tests.support.requirements import require_host_image
from tests.support.taskfolders import TWO_EDITS, two_edits_task

TEST_IDS = ("task-list", "play-button", "position", "timeline", "turn-panel", "tooltip")


def fetch(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


def get_json(url: str) -> tuple[int, Any]:
    status, kind, body = fetch(url)
    assert kind.startswith("application/json"), body
    return status, json.loads(body)


def test_the_page_and_its_assets_are_served_on_loopback(base: str) -> None:
    assert base.startswith("http://127.0.0.1:")
    status, kind, page = fetch(base + "/")
    assert status == 200 and kind.startswith("text/html")
    for testid in TEST_IDS:
        assert f'data-testid="{testid}"' in page
    for name, kind_prefix in (("viewer.js", "text/javascript"), ("viewer.css", "text/css")):
        status, kind, body = fetch(f"{base}/{name}")
        assert status == 200 and kind.startswith(kind_prefix) and body


def test_the_api_answers_what_the_data_layer_says(run: RunFolder, base: str) -> None:
    assert get_json(base + "/api/summary") == (200, run_summary(run))
    assert get_json(f"{base}/api/tasks/{TWO_EDITS}/tree") == (200, task_tree(run, TWO_EDITS))
    attempt = run.tree.attempts(TWO_EDITS)[0]
    index = run.tree.own_turns(attempt)[0].index
    status, body = get_json(f"{base}/api/turns/{attempt.id}/{index}")
    assert status == 200 and body == turn_detail(run, attempt.id, index)
    status, body = get_json(base + "/api/status")
    assert status == 200 and body == {"running": [], "schedules": 2}


def test_unknown_ids_and_routes_are_json_errors(run: RunFolder, base: str) -> None:
    status, body = get_json(base + "/api/tasks/nope/tree")
    assert status == 404 and "no task 'nope'" in body["error"] and str(run.path) in body["error"]
    status, body = get_json(base + "/api/turns/99999/1")
    assert status == 404 and "no attempt 99999" in body["error"]
    status, body = get_json(base + "/api/turns/abc/1")
    assert status == 400 and "expected a whole number" in body["error"]
    status, body = get_json(base + "/api/nothing")
    assert status == 404 and "no such API route" in body["error"]
    status, body = get_json(base + "/missing.png")
    assert status == 404 and "Traceback" not in body["error"]


def test_the_api_reads_the_run_fresh_on_each_request(run: RunFolder, base: str) -> None:
    """A run still being written: what is added after the server started shows at once."""
    run.tree.start_schedule(TWO_EDITS, "later")
    try:
        status, body = get_json(base + "/api/status")
        assert status == 200 and {"task_id": TWO_EDITS, "method": "later"} in body["running"]
    finally:
        run.tree.finish_schedule(TWO_EDITS, "later", resolved=False, error=None)
    assert get_json(base + "/api/status")[1]["running"] == []


def test_the_report_is_one_file_with_the_data_and_no_url(run: RunFolder) -> None:
    path = write_report(run)
    assert path == run.path / "report.html"
    page = path.read_text()
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"""(src|href)=["'](?!#)""", page), "nothing is loaded from elsewhere"
    assert "<style>" in page and 'id="sprout-data"' in page
    for testid in TEST_IDS:
        assert f'data-testid="{testid}"' in page
    embedded = re.search(
        r'<script id="sprout-data" type="application/json">(.*?)</script>', page, re.S
    )
    assert embedded is not None
    data = json.loads(embedded.group(1))
    assert data["summary"] == run_summary(run)
    assert data["trees"] == {TWO_EDITS: task_tree(run, TWO_EDITS)}
    own = [(a.id, t.index) for a in run.tree.attempts(TWO_EDITS) for t in run.tree.own_turns(a)]
    assert sorted(data["turns"]) == sorted(f"{a}/{i}" for a, i in own)
    attempt, index = own[0]
    assert data["turns"][f"{attempt}/{index}"]["text"] == turn_detail(run, attempt, index)["text"]


def test_view_of_a_folder_that_is_not_a_run_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["view", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a run folder" in err


def test_view_of_a_newer_store_says_to_upgrade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    RunFolder.create(tmp_path).close()
    with sqlite3.connect(tmp_path / "sprout.db") as db:
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    assert main(["view", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "newer than this sprout" in err and "upgrade" in err


def test_sprout_run_writes_the_report_and_prints_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    tasks = tmp_path / "tasks"
    two_edits_task(tasks, "only")
    out = tmp_path / "run"
    args = ["run", str(tasks), "--model", "oracle", "--method", "pass@1", "--out", str(out)]
    assert main(args) == 0
    report = out / "report.html"
    assert f"report: {report}" in capsys.readouterr().out
    assert report.is_file() and 'id="sprout-data"' in report.read_text()
