"""report.html of a 300-turn attempt: the page holds the attempt's whole tree and every
one of its turns in detail, each call's output with its tail; opened from disk in headless
chromium, it draws every turn and shows the last one's call."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sprout.runfolder import RunFolder
from sprout.tree import Attempt
from sprout.viewer.report import write_report
from tests.support.long_attempts import TASK, LongAttempts, last_line

EMBEDDED = re.compile(r'<script id="sprout-data" type="application/json">(.*?)</script>', re.S)


SYNTHETIC = pytest.mark.checkpoints_elsewhere("synthetic turns, written with no layer")


def long_report(folder: Path) -> tuple[Attempt, Path]:
    """A run folder holding one failed 300-turn attempt, and its report.html."""
    (folder / "layers").mkdir()
    long = LongAttempts(folder)
    attempt = long.root(300, lines=20)
    long.tree.close()
    run = RunFolder.open(folder)
    report = write_report(run)
    run.close()
    return attempt, report


@SYNTHETIC
def test_a_300_turn_attempt_is_in_the_report_turn_by_turn(tmp_path: Path) -> None:
    attempt, report = long_report(tmp_path)
    page = report.read_text()
    found = EMBEDDED.search(page)
    assert found
    data = json.loads(found.group(1))
    [item] = data["trees"][TASK]["attempts"]
    assert [turn["index"] for turn in item["turns"]] == list(range(1, 301))
    assert item["last_index"] == 300
    for index in (1, 150, 300):
        [call] = data["turns"][f"{attempt.id}/{index}"]["calls"]
        assert call["output"].endswith(last_line(attempt, index))


@SYNTHETIC
def test_chromium_draws_the_300_turns_and_opens_the_last(page: Any, tmp_path: Path) -> None:
    attempt, report = long_report(tmp_path)
    page.goto(report.as_uri())
    page.get_by_test_id("task-item").filter(has_text=TASK).first.click()
    dots = page.get_by_test_id("turn-dot")
    dots.first.wait_for(timeout=10_000)
    assert dots.count() == 300
    dots.last.click()
    call = page.get_by_test_id("call").first
    call.wait_for(timeout=10_000)
    assert last_line(attempt, 300) in call.inner_text()
    assert page.errors == []
