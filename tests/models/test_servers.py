"""Several model servers behind one `--base-url`: spread by load, failover, stickiness.

Real loopback servers answer; nothing in the HTTP clients is mocked.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from sprout.models import ModelError
from sprout.models.config import ModelConfig
from sprout.models.http_json import JsonServer
from sprout.models.openai_client import OpenAIModel
from sprout.models.resolve import resolve_model
from tests.support.chat_server import ChatServer, Reply
from tests.support.loopback import loopback
from tests.support.repo_paths import EXAMPLE_TASKS

MESSAGES = [{"role": "user", "content": "hello"}]


@pytest.fixture
def two():
    with ChatServer() as first, ChatServer() as second:
        yield first, second


def model_for(urls: list[str], told: list[str] | None = None, **options) -> OpenAIModel:
    return OpenAIModel(
        "m",
        base_url=",".join(urls),
        api_key="k",
        options=ModelConfig(**options),
        on_retry=(told if told is not None else []).append,
    )


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_calls_one_at_a_time_take_turns(two):
    first, second = two
    model = model_for([first.base_url, second.base_url])
    for _ in range(4):
        model.complete(MESSAGES)
    assert (len(first.requests), len(second.requests)) == (2, 2)


def test_a_busy_server_is_passed_over_for_an_idle_one(two):
    first, second = two
    first.replies.append(Reply(delay_s=1.0))
    second.replies.append(Reply(delay_s=1.0))
    model = model_for([first.base_url, second.base_url])
    slow = threading.Thread(target=model.complete, args=(MESSAGES,))
    slow.start()
    while not (first.requests or second.requests):
        time.sleep(0.01)
    busy, idle = (first, second) if first.requests else (second, first)
    idle.replies.clear()  # the idle one answers at once
    for _ in range(3):
        model.complete(MESSAGES)
    slow.join()
    assert (len(busy.requests), len(idle.requests)) == (1, 3)


def test_a_failing_server_is_skipped_while_the_other_answers(two):
    first, second = two
    first.replies.append(Reply(status=503))
    told: list[str] = []
    model = model_for([first.base_url, second.base_url], told)
    for _ in range(4):
        assert model.complete(MESSAGES).choices[0].text == "ok"
    assert (len(first.requests), len(second.requests)) == (1, 4)
    assert told == []  # the other server answered: no retry, no wait


def test_an_unreachable_server_is_skipped(two):
    first, _ = two
    model = model_for([closed_port_url(), first.base_url], max_retries=0)
    for _ in range(3):
        model.complete(MESSAGES)
    assert len(first.requests) == 3


def test_all_servers_failing_is_the_usual_server_fault(two):
    first, second = two
    for server in two:
        server.replies.extend(Reply(status=500) for _ in range(4))
    told: list[str] = []
    model = model_for([first.base_url, second.base_url], told, max_retries=1)
    with pytest.raises(ModelError) as raised:
        model.complete(MESSAGES)
    assert raised.value.kind == "server"
    assert "max_retries" in str(raised.value)
    assert len(told) == 1  # one retry, told once, after both servers failed
    assert len(first.requests) + len(second.requests) == 4


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("http://127.0.0.1:1/v1,,http://127.0.0.1:2/v1", "(an empty entry)"),
        ("http://127.0.0.1:1/v1,127.0.0.1:2", "127.0.0.1:2"),
        ("http://127.0.0.1:1/v1,http://127.0.0.1:1/v1", "named twice"),
    ],
)
def test_a_bad_server_list_names_the_bad_entry(value, named):
    for spec in ("openai/m", "vllm/m"):
        with pytest.raises(ModelError, match="--base-url") as raised:
            resolve_model(spec, base_url=value, api_key="k")
        assert raised.value.kind == "bad_input"
        assert named in str(raised.value)


def generate_servers():
    """Two token servers that record the prompts they were sent."""
    seen: dict[str, list[list[int]]] = {"a": [], "b": []}

    def answering(name: str):
        def answer(method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
            seen[name].append(json.loads(body or b"{}")["input_ids"])
            return 200, b'{"ok": true}'

        return answer

    return seen, loopback(answering("a")), loopback(answering("b"))


def test_a_branch_goes_where_its_parent_prompt_went():
    seen, first, second = generate_servers()
    with first as a, second as b:
        http = JsonServer(f"{a},{b}", timeout_s=5, retries=0)
        root_one, root_two = [1, 2, 3], [7, 8, 9]
        for prompt in (root_one, root_two):  # new roots are spread
            http.post("/generate", {"input_ids": prompt}, prompt=prompt)
        holder = "a" if root_one in seen["a"] else "b"
        other = "b" if holder == "a" else "a"
        assert root_two in seen[other]
        turn_two = [*root_one, 4, 5]
        branches = [[*root_one, 40], [*turn_two, 6], [*turn_two, 60, 61]]
        for prompt in (turn_two, *branches):
            http.post("/generate", {"input_ids": prompt}, prompt=prompt)
        assert seen[holder] == [root_one, turn_two, *branches]
        assert seen[other] == [root_two]


def test_a_branch_falls_back_when_its_server_fails():
    seen: list[list[int]] = []
    calls = {"n": 0}

    def flaky(method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        calls["n"] += 1
        return (200, b"{}") if calls["n"] == 1 else (502, b"{}")

    def steady(method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        seen.append(json.loads(body or b"{}")["input_ids"])
        return 200, b"{}"

    with loopback(flaky) as a, loopback(steady) as b:
        http = JsonServer(f"{a},{b}", timeout_s=5, retries=0)
        http.post("/generate", {"input_ids": [1, 2]}, prompt=[1, 2])  # to a, by turn
        assert calls["n"] == 1 and seen == []
        branch = [1, 2, 3]
        http.post("/generate", {"input_ids": branch}, prompt=branch)
        assert calls["n"] == 2 and seen == [branch]


def test_sprout_run_refuses_a_bad_server_list_before_the_run_folder(tmp_path, capsys):
    from sprout.cli import main

    out = tmp_path / "run"
    argv = ["run", str(EXAMPLE_TASKS / "blog-slugs"), "--model", "openai/m", "--out", str(out)]
    assert main([*argv, "--base-url", "http://127.0.0.1:1/v1,"]) == 2
    assert "--base-url (an empty entry)" in capsys.readouterr().err
    assert not out.exists()
