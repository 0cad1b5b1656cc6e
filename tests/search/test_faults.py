"""Fault injection on `sprout run`: a loopback server that fails in every way a real one does,
hostile replies, and a crash of sprout itself.

Each test asserts the three things a user relies on: the outcome is recorded as
what it was (an error, never a failed test), nothing finished is lost, and
`--resume` continues once the fault is gone.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from sprout.cli import main
from tests.support.chat_server import ChatServer, Reply, completion_body
from tests.support.requirements import require_host_image
from tests.support.taskfolders import two_edits_task

FAST = "[model]\ntimeout_s = 2\nmax_retries = 1\n"
"""A server that fails is given up on within seconds."""


def turn(command: str) -> Reply:
    return Reply(body=completion_body(f"Next.\n\n```bash\n{command}\n```", prompt_tokens=50))


SOLVING = [turn("echo 1 > a.txt"), turn("echo 2 > b.txt"), turn("echo SPROUT_SUBMIT")]


def run(server: ChatServer, tmp_path: Path, *extra: str, tasks: int = 1) -> int:
    for number in range(tasks):
        if not (tmp_path / "tasks" / f"task-{number}").exists():
            two_edits_task(tmp_path / "tasks", f"task-{number}")
    config = tmp_path / "fast.toml"
    config.write_text(FAST)
    return main(
        [
            "run",
            str(tmp_path / "tasks"),
            "--model",
            "openai/test-model",
            "--base-url",
            server.base_url,
            "--config",
            str(config),
            "--out",
            str(tmp_path / "run"),
            "--method",
            "pass@1",
            *extra,
        ]
    )


def attempts(tmp_path: Path) -> list[tuple]:
    with sqlite3.connect(tmp_path / "run" / "sprout.db") as connection:
        return connection.execute(
            "SELECT id, status, fault, reward, end_reason FROM attempts ORDER BY id"
        ).fetchall()


def results(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "run" / "results.json").read_text())


FAULTS = {
    "refused key": (Reply(status=401, body={"error": {"message": "bad key"}}), "API key"),
    "unknown model": (Reply(status=404, body={"error": {"message": "no model"}}), "not found"),
    "HTTP 500": (Reply(status=500, body={"error": {"message": "boom"}}), "HTTP 500"),
    "no choices": (Reply(body={**completion_body(), "choices": []}), "no choices"),
    "HTML page": (Reply(raw=b"<html>gateway</html>", content_type="text/html"), "not a chat"),
    "silence": (Reply(delay_s=3), "no reply within 2 s"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_server_fault_is_an_error_never_a_failed_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    require_host_image()
    reply, said = FAULTS[fault]
    with ChatServer() as server:
        server.replies.extend([reply] * 4)  # every try of the first attempt
        assert run(server, tmp_path) == 1
    ((_, status, kind, reward, reason),) = attempts(tmp_path)
    assert (status, kind, reward) == ("error", "model", None), "never verified, never a fail"
    assert said in reason
    entry = results(tmp_path)["tasks"]["task-0"]["pass@1"]
    assert said in entry["error"] and entry["faults"] == {"model": 1}
    printed = capsys.readouterr().out
    assert said in printed and "fail:" not in printed
    assert results(tmp_path)["methods"]["pass@1"]["errors"] == 1


def test_a_server_that_fails_every_call_stops_the_run_and_resume_finishes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    down = Reply(status=503, body={"error": {"message": "overloaded"}})
    with ChatServer() as server:
        server.replies.extend([down] * 100)
        assert run(server, tmp_path, tasks=5) == 1
        asked = len(server.requests)
    captured = capsys.readouterr()
    assert "stopped early" in captured.err and "overloaded" in captured.err
    assert asked == 3 * 2, "three attempts (two tries each), then the run stopped"
    content = results(tmp_path)
    assert sum("error" in by["pass@1"] for by in content["tasks"].values()) == 3
    assert len(content["tasks"]) == 3, "the tasks after the halt were not walked through"
    method = content["methods"]["pass@1"]
    assert (method["attempts"], method["turns_executed"]) == (0, 0), "none ran a turn"
    assert (method["faults"], method["failed"]) == ({"model": 3}, 0)

    with ChatServer() as server:
        server.replies.extend(SOLVING * 5)
        assert run(server, tmp_path, "--resume", tasks=5) == 0
    content = results(tmp_path)
    assert content["methods"]["pass@1"]["resolved"] == 5
    assert content["methods"]["pass@1"]["errors"] == 0
    statuses = [row[1] for row in attempts(tmp_path)]
    assert statuses == ["submitted"] * 5, "faulted attempts continued, none created twice"


def test_a_fault_mid_attempt_keeps_its_turns_and_resume_continues_after_them(
    tmp_path: Path,
) -> None:
    require_host_image()
    with ChatServer() as server:
        server.replies.extend([SOLVING[0], *[Reply(status=502, raw=b"<html>x</html>")] * 2])
        assert run(server, tmp_path) == 1
    with sqlite3.connect(tmp_path / "run" / "sprout.db") as connection:
        kept = connection.execute("SELECT idx, created FROM turns").fetchall()
    assert len(kept) == 1
    with ChatServer() as server:
        server.replies.extend(SOLVING[1:])
        assert run(server, tmp_path, "--resume") == 0
        assert len(server.requests) == 2, "turn 1 is not asked again"
    with sqlite3.connect(tmp_path / "run" / "sprout.db") as connection:
        after = connection.execute("SELECT idx, created FROM turns ORDER BY idx").fetchall()
    assert after[0] == kept[0] and len(after) == 3
    assert results(tmp_path)["methods"]["pass@1"]["resolved"] == 1


HOSTILE = {
    "NUL byte": completion_body("```bash\necho a\x00b > a.txt\n```"),
    "command over 1 MiB": completion_body("```bash\necho " + "x" * (1 << 20) + "\n```"),
    "lone surrogate": completion_body(
        "",
        tool_calls=[
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "echo \\ud800"}'},
            }
        ],
    ),
    "tool arguments not JSON": completion_body(
        "",
        tool_calls=[
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{oops"}}
        ],
    ),
}


@pytest.mark.parametrize("reply", list(HOSTILE))
def test_a_hostile_reply_is_a_format_error_the_model_sees_and_the_run_goes_on(
    tmp_path: Path, reply: str
) -> None:
    require_host_image()
    with ChatServer() as server:
        server.replies.extend([Reply(body=HOSTILE[reply]), *SOLVING])
        assert run(server, tmp_path) == 0
        told = json.dumps(server.requests[1]["messages"][-1])
    assert "format" in told.lower() or "not valid" in told or "NUL" in told
    assert results(tmp_path)["methods"]["pass@1"]["resolved"] == 1
    with sqlite3.connect(tmp_path / "run" / "sprout.db") as connection:
        flags = [row[0] for row in connection.execute("SELECT format_error FROM turns")]
    assert flags == [1, 0, 0, 0]


def test_a_command_far_over_argvs_limit_runs(tmp_path: Path) -> None:
    require_host_image()
    big = "printf '%s' " + "y" * 300_000 + " | wc -c > a.txt; echo 1 > a.txt"
    with ChatServer() as server:
        server.replies.extend([turn(big), *SOLVING[1:]])
        assert run(server, tmp_path) == 0
    with sqlite3.connect(tmp_path / "run" / "sprout.db") as connection:
        (calls,) = connection.execute("SELECT calls FROM turns WHERE idx = 1").fetchone()
    (call,) = json.loads(calls)
    assert call["exit_code"] == 0 and len(call["command"]) > 300_000
    assert results(tmp_path)["methods"]["pass@1"]["resolved"] == 1


def test_a_crash_of_sprout_is_recorded_as_such_and_never_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_host_image()
    from sprout.agent import dialect

    real = dialect.turn_messages

    def crash(text, calls, records, render):
        if "b.txt" in calls[0][0]:
            raise RuntimeError("a bug in sprout")
        return real(text, calls, records, render)

    monkeypatch.setattr(dialect, "turn_messages", crash)
    with ChatServer() as server:
        server.replies.extend([*SOLVING[:2], *SOLVING[:2]])  # each crashes at turn 2
        assert run(server, tmp_path, tasks=2) == 1
    rows = attempts(tmp_path)
    assert [(status, fault) for _, status, fault, _, _ in rows] == [("error", "sprout")] * 2
    assert "sprout crashed in turn 2: RuntimeError: a bug in sprout" in rows[0][4]
    assert "Traceback" not in rows[0][4] and "actor.py" in rows[0][4]

    monkeypatch.setattr(dialect, "turn_messages", real)
    with ChatServer() as server:
        assert run(server, tmp_path, "--resume", tasks=2) == 1
        assert server.requests == [], "the crashed turn is not played again"
    assert attempts(tmp_path) == rows


@pytest.fixture
def small_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A 48 MiB tmpfs of the test's own in its temp dir, unmounted by its path afterwards;
    a run's layers stay on it (SPROUT_STORE_FS=off), as on a plain disk that fills up."""
    require_host_image()
    monkeypatch.setenv("SPROUT_STORE_FS", "off")
    folder = tmp_path / "small"
    folder.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=48m", "sprout-test-small", str(folder)], check=True
    )
    try:
        yield folder
    finally:  # lazily when a failed test still holds a file open there
        if subprocess.run(["umount", str(folder)], check=False).returncode:
            subprocess.run(["umount", "--lazy", str(folder)], check=True)


def test_a_sandbox_that_fills_the_disk_keeps_the_turns_before_and_resume_goes_on(
    tmp_path: Path, small_disk: Path
) -> None:
    two_edits_task(tmp_path / "tasks")
    args = ["run", str(tmp_path / "tasks"), "--model", "openai/m", "--method", "pass@1"]
    args += ["--out", str(small_disk / "run")]
    fill = turn("dd if=/dev/zero of=big bs=1M count=100; echo filled")
    with ChatServer() as server:
        server.replies.extend([SOLVING[0], fill])
        assert main([*args, "--base-url", server.base_url]) == 1
    database = small_disk / "run" / "sprout.db"
    with contextlib.closing(sqlite3.connect(database)) as connection:
        kept = connection.execute("SELECT idx, created FROM turns").fetchall()
        ((status, fault, reason),) = connection.execute(
            "SELECT status, fault, end_reason FROM attempts"
        ).fetchall()
    assert len(kept) == 1, "the turn before the disk filled is kept"
    assert (status, fault) == ("error", "sandbox") and "No space left" in reason

    with ChatServer() as server:
        server.replies.extend(SOLVING[1:])
        assert main([*args, "--base-url", server.base_url, "--resume"]) == 0
    with contextlib.closing(sqlite3.connect(database)) as connection:
        after = connection.execute("SELECT idx, created FROM turns ORDER BY idx").fetchall()
    assert after[0] == kept[0] and len(after) == 3
    content = json.loads((small_disk / "run" / "results.json").read_text())
    assert content["methods"]["pass@1"]["resolved"] == 1
