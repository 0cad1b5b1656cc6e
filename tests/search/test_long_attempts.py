"""Long attempts end to end: a scripted explorer (tests/support/explorer.py) served over
vLLM's token routes reads a task's data for 100 turns, each printing 2,000 lines of which
it keeps a 400-byte tail, then writes the wrong count late and submits; a branch whose
starting turn repeats the verifier's finding fixes it. `sprout run --method
sprout,train-rollouts` plays it in a 4K, a 32K and a 128K window, then `sprout export`,
a learner step and the report read what it stored. With the tiny model's 400-piece
tokenizer a turn is about 400 tokens, so the actor's context (the window, by default)
ends a 4K attempt in about ten turns and a 32K one in about eighty, while a 128K attempt
explores all 100 and submits. The roles answer in prose, so they fall back; every prompt
they were sent fits the window less the reply's budget. A run killed part way resumes
without playing a finished turn again."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.roles.fit import REPLY_TOKENS
from sprout.runfolder import RunFolder
from tests.support.explorer import Explorer, role_prompts
from tests.support.fake_token_server import FakeTokenServer, serving
from tests.support.loopback import wait_for_requests_in_flight
from tests.support.requirements import require_host_image
from tests.support.run_watch import wait_for_rows
from tests.support.taskfolders import long_task

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

EXPLORE_TURNS = 100
OUTPUT_BYTES = 400
WINDOWS = (4_096, 32_768, 131_072)
METHODS = ("sprout", "train-rollouts")
SETTINGS = "[actor]\nmax_turns = 400\n\n[roles]\nmax_retries = 0\n"
"""Turns enough for the longest attempt; the roles' prose is refused at once."""


@dataclass
class LongRun:
    window: int
    out: Path
    fake: FakeTokenServer
    explorer: Explorer
    code: int
    progress: str


@pytest.fixture(scope="module")
def tokenizer(tiny_model_path: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_path)


def run_args(root: Path, url: str, *extra: str) -> list[str]:
    """`sprout run`'s arguments on the long task in `root/tasks` into `root/run`."""
    config = root / "settings.toml"
    config.write_text(SETTINGS)
    return [
        "run", str(root / "tasks"), "--model", "vllm/tiny", "--base-url", url,
        "--config", str(config), "--out", str(root / "run"), "--rounds", "1",
        "--roots", "1", "--children", "1", *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module", params=WINDOWS, ids=lambda window: f"{window // 1024}K")
def long_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tokenizer
) -> Iterator[LongRun]:
    require_host_image()
    root = tmp_path_factory.mktemp(f"long-{request.param}")
    long_task(root / "tasks")
    explorer = Explorer(EXPLORE_TURNS, OUTPUT_BYTES)
    fake = FakeTokenServer(tokenizer, explorer)
    fake.max_model_len = request.param
    printed = io.StringIO()
    quiet = contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed)
    with serving(fake) as url, quiet[0], quiet[1]:
        code = main(run_args(root, url, "--method", ",".join(METHODS)))
    yield LongRun(request.param, root / "run", fake, explorer, code, printed.getvalue())


def test_every_method_ends_without_an_error(long_run: LongRun) -> None:
    assert long_run.code == 0, long_run.progress
    assert "ERROR" not in long_run.progress
    results = json.loads((long_run.out / "results.json").read_text())
    [row] = results["tasks"].values()
    assert set(row) == set(METHODS) and all("error" not in row[m] for m in METHODS)
    run = RunFolder.open(long_run.out)
    statuses = {a.status for a in run.tree.attempts()}
    run.close()
    assert "error" not in statuses and "running" not in statuses


def test_every_role_prompt_fits_the_window_less_the_reply(long_run: LongRun) -> None:
    sizes = role_prompts(long_run.fake)
    assert {role for role, _ in sizes} >= {"analyst", "reviewer"}
    room = long_run.window - min(REPLY_TOKENS, long_run.window // 2)
    assert max(size for _, size in sizes) <= room


def test_an_attempt_runs_until_its_context_is_full(long_run: LongRun) -> None:
    run = RunFolder.open(long_run.out)
    roots = [a for a in run.tree.attempts() if a.kind == "root"]
    turns = [len(run.tree.own_turns(a)) for a in roots]
    run.close()
    if long_run.window < 131_072:
        assert all(a.status == "limit" and "context" in str(a.end_reason) for a in roots)
    else:
        assert all(a.status == "submitted" for a in roots)
        assert min(turns) == EXPLORE_TURNS + 2  # explored, wrote the count, submitted


def test_the_records_export_and_train(
    long_run: LongRun, tmp_path: Path, tiny_model_path: Path
) -> None:
    records = tmp_path / "records.jsonl"
    export = ["export", str(long_run.out), "--format", "jsonl", "--out", str(records)]
    export += ["--method", "train-rollouts"]
    # the tiny model takes 4,096 positions: a longer sample cannot be a CPU step of it
    assert main([*export, "--max-length", "4096", "--drop-overlong"]) == 0
    kept = records.read_text().splitlines()
    if long_run.window > 4_096:
        assert kept == []  # every rollout outgrew the tiny model: left out, named
        return
    # the group is a root and its child; a root that ran to the window's end is its prompt,
    # its reply and the reply's observation, which the model never read: that one may be over
    assert 1 <= len(kept) <= 2
    step = ["train", "step", "--samples", str(records), "--model", str(tiny_model_path)]
    assert main([*step, "--out", str(tmp_path / "trained"), "--device", "cpu"]) == 0
    assert (tmp_path / "trained" / "config.json").is_file()


def test_the_report_holds_every_turn_of_the_longest_attempt(long_run: LongRun) -> None:
    page = (long_run.out / "report.html").read_text()
    embedded = re.search(r'<script id="sprout-data" type="application/json">(.*?)</script>', page)
    assert embedded
    data = json.loads(embedded.group(1))
    [tree] = data["trees"].values()
    longest = max(tree["attempts"], key=lambda item: len(item["turns"]))
    shown = {key for key in data["turns"] if key.startswith(f"{longest['id']}/")}
    assert shown == {f"{longest['id']}/{turn['index']}" for turn in longest["turns"]}
    last = data["turns"][f"{longest['id']}/{longest['last_index']}"]
    assert last["calls"], "the last turn's detail holds its call"
    if long_run.window == 131_072:
        assert longest["last_index"] >= 100


@pytest.mark.timeout(600)
def test_a_killed_long_run_resumes_without_playing_a_finished_turn_again(
    tmp_path: Path, tokenizer
) -> None:
    require_host_image()
    long_task(tmp_path / "tasks")
    explorer = Explorer(EXPLORE_TURNS, OUTPUT_BYTES)
    fake = FakeTokenServer(tokenizer, explorer)
    fake.max_model_len = 32_768
    db = tmp_path / "run" / "sprout.db"
    with serving(fake) as url:
        args = [sys.executable, "-m", "sprout.cli", *run_args(tmp_path, url, "--method", "sprout")]
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_for_rows(process, db, "SELECT count(*) FROM turns", 20, "twenty turns")
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        wait_for_requests_in_flight()  # a call the kill cut short is counted, or not, by now
        before = _turn_rows(db)
        asked = explorer.calls["actor"]
        resumed = subprocess.run([*args, "--resume"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    after = _turn_rows(db)
    assert before <= after, "every turn stored before the kill is kept as it was"
    played = [row for row in after - before if row[2] == "actor"]
    # each actor call of the resumed run played a turn that was not stored before the kill
    assert played and explorer.calls["actor"] - asked == len(played)
    with sqlite3.connect(db) as connection:
        [(root,)] = connection.execute("SELECT id FROM attempts WHERE kind = 'root'")
    stored = max(index for attempt, index, *_ in before if attempt == root)
    # the killed root went on after its last stored turn, rather than starting over
    assert min(index for attempt, index, *_ in played if attempt == root) == stored + 1


def _turn_rows(db: Path) -> set[tuple[int, int, str, float]]:
    with sqlite3.connect(db) as connection:
        return set(connection.execute("SELECT attempt_id, idx, author, created FROM turns"))
