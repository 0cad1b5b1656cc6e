"""report.html of a 300-turn attempt: the page holds the attempt's whole tree and every
one of its turns in detail, each call's output with its tail."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sprout.runfolder import RunFolder
from sprout.viewer.report import write_report
from tests.support.long_attempts import TASK, LongAttempts, last_line

EMBEDDED = re.compile(r'<script id="sprout-data" type="application/json">(.*?)</script>', re.S)


@pytest.mark.checkpoints_elsewhere("synthetic turns, written with no checkpoint's layer")
def test_a_300_turn_attempt_is_in_the_report_turn_by_turn(tmp_path: Path) -> None:
    (tmp_path / "layers").mkdir()
    long = LongAttempts(tmp_path)
    attempt = long.root(300, lines=20)
    long.store.close()
    run = RunFolder.open(tmp_path)
    page = write_report(run).read_text()
    run.close()
    found = EMBEDDED.search(page)
    assert found
    data = json.loads(found.group(1))
    [item] = data["trees"][TASK]["attempts"]
    assert [turn["index"] for turn in item["turns"]] == list(range(1, 301))
    assert item["last_index"] == 300
    for index in (1, 150, 300):
        [call] = data["turns"][f"{attempt.id}/{index}"]["calls"]
        assert call["output"].endswith(last_line(attempt, index))
