"""The openai/ client against a real chat-completions server on loopback."""

from __future__ import annotations

import math
import socket

import pytest

from sprout.models import ModelError
from sprout.models.config import ModelConfig
from sprout.models.openai_client import OpenAIModel
from tests.support.chat_server import ChatServer, Reply, completion_body

MESSAGES = [{"role": "user", "content": "hello"}]


@pytest.fixture
def server():
    with ChatServer() as running:
        yield running


def model_for(server: ChatServer, **kwargs) -> OpenAIModel:
    return OpenAIModel(
        "test-model", base_url=server.base_url, api_key="k", options=ModelConfig(**kwargs)
    )


def test_usage_comes_from_the_server(server):
    server.replies.append(
        Reply(body=completion_body("hi", prompt_tokens=120, completion_tokens=7, cached_tokens=64))
    )
    completion = model_for(server).complete(MESSAGES)
    assert completion.text == "hi"
    assert (completion.prompt_tokens, completion.completion_tokens) == (120, 7)
    assert completion.cached_tokens == 64
    assert completion.estimated is False
    assert server.requests[0]["messages"] == MESSAGES
    assert server.headers[0]["authorization"] == "Bearer k"


def test_missing_usage_is_estimated_and_marked(server):
    server.replies.append(Reply(body=completion_body("x" * 40, usage=False)))
    completion = model_for(server).complete(MESSAGES)
    assert completion.estimated is True
    assert completion.completion_tokens == 10


def test_logprobs_are_requested_and_parsed(server):
    top = {"a": math.log(0.5), "b": math.log(0.5)}
    server.replies.append(Reply(body=completion_body("a", logprobs=[("a", math.log(0.5), top)])))
    completion = model_for(server).complete(MESSAGES, logprobs=True, temperature=0.7)
    assert server.requests[0]["logprobs"] is True
    assert server.requests[0]["top_logprobs"] >= 2
    assert server.requests[0]["temperature"] == 0.7
    (token,) = completion.logprobs
    assert token.token == "a"
    assert token.entropy() == pytest.approx(math.log(2))


def test_tool_calls_are_parsed(server):
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "bash", "arguments": '{"command": "ls -la"}'},
    }
    server.replies.append(Reply(body=completion_body("", tool_calls=[call])))
    completion = model_for(server).complete(MESSAGES, tools=[{"type": "function"}])
    assert completion.tool_calls[0].name == "bash"
    assert completion.tool_calls[0].arguments == {"command": "ls -la"}


def test_invalid_tool_arguments_are_the_models_mistake_not_a_fault(server):
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{oops"}}
    server.replies.append(Reply(body=completion_body("", tool_calls=[call])))
    (tool_call,) = model_for(server).complete(MESSAGES).tool_calls
    assert tool_call.name == "bash" and tool_call.arguments == {}
    assert "not valid JSON" in (tool_call.problem or "")


@pytest.mark.parametrize(
    "raw, content_type",
    [
        (b"<html><body>502 Bad Gateway</body></html>", "text/html"),
        (b"\x00\xff garbage", "application/json"),
        (b'{"id": "x", "choices": [{"mess', "application/json"),
    ],
    ids=["html", "garbage", "truncated"],
)
def test_a_body_that_is_no_completion_is_malformed(server, raw, content_type):
    server.replies.append(Reply(raw=raw, content_type=content_type))
    with pytest.raises(ModelError) as error:
        model_for(server).complete(MESSAGES)
    assert error.value.kind == "malformed"
    assert len(str(error.value)) < 500 and "\n" not in str(error.value)


def test_a_completion_with_a_null_message_is_malformed_not_a_crash(server):
    body = completion_body()
    body["choices"][0]["message"] = None
    server.replies.append(Reply(body=body))
    with pytest.raises(ModelError) as error:
        model_for(server).complete(MESSAGES)
    assert error.value.kind == "malformed" and server.base_url in str(error.value)


def test_each_retry_is_told_as_it_happens(server):
    told: list[str] = []
    page = b"<html>" + b"x" * 5000 + b"</html>"
    for _ in range(2):
        server.replies.append(Reply(status=502, raw=page, headers={"retry-after": "0.01"}))
    model = OpenAIModel(
        "test-model",
        base_url=server.base_url,
        api_key="k",
        options=ModelConfig(max_retries=1),
        on_retry=told.append,
    )
    with pytest.raises(ModelError, match="after 1 retries") as raised:
        model.complete(MESSAGES)
    assert raised.value.kind == "server"
    assert len(told) == 1 and "HTTP 502" in told[0] and "retry 1 of 1" in told[0]
    assert len(told[0]) < 500


def test_no_choices_is_a_malformed_reply(server):
    body = completion_body()
    body["choices"] = []
    server.replies.append(Reply(body=body))
    with pytest.raises(ModelError, match="no choices") as error:
        model_for(server).complete(MESSAGES)
    assert error.value.kind == "malformed"


def test_429_then_success_is_retried(server):
    error = {"error": {"message": "slow down", "type": "rate_limit"}}
    server.replies.append(Reply(status=429, body=error, headers={"retry-after-ms": "10"}))
    server.replies.append(Reply(status=503, body=error, headers={"retry-after-ms": "10"}))
    server.replies.append(Reply(body=completion_body("after retries")))
    assert model_for(server).complete(MESSAGES).text == "after retries"
    assert len(server.requests) == 3


def test_persistent_500_fails_after_bounded_retries(server):
    error = {"error": {"message": "boom"}}
    for _ in range(3):
        server.replies.append(Reply(status=500, body=error, headers={"retry-after-ms": "1"}))
    with pytest.raises(ModelError) as raised:
        model_for(server, max_retries=2).complete(MESSAGES)
    assert raised.value.kind == "server"
    assert len(server.requests) == 3


def test_wrong_key_is_a_clear_error(server):
    server.replies.append(Reply(status=401, body={"error": {"message": "bad key"}}))
    with pytest.raises(ModelError, match="API key") as raised:
        model_for(server).complete(MESSAGES)
    assert raised.value.kind == "auth"
    assert len(server.requests) == 1


def test_unknown_model_is_named(server):
    server.replies.append(Reply(status=404, body={"error": {"message": "no such model"}}))
    with pytest.raises(ModelError, match="test-model") as raised:
        model_for(server).complete(MESSAGES)
    assert raised.value.kind == "unknown_model"


def test_slow_reply_times_out(server):
    server.replies.append(Reply(delay_s=2.0))
    with pytest.raises(ModelError) as raised:
        model_for(server, timeout_s=0.3, max_retries=0).complete(MESSAGES)
    assert raised.value.kind == "timeout"
    assert "timeout_s" in str(raised.value)


def test_unreachable_server_is_a_clear_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    model = OpenAIModel("m", base_url=url, api_key="k", options=ModelConfig(max_retries=0))
    with pytest.raises(ModelError, match=str(port)) as raised:
        model.complete(MESSAGES)
    assert raised.value.kind == "unreachable"


def test_model_strings_resolve_or_name_the_bad_one(server):
    from sprout.models.resolve import resolve_model

    model = resolve_model("openai/test-model", base_url=server.base_url, api_key="k")
    assert model.complete(MESSAGES).text == "ok"
    with pytest.raises(ModelError, match="'nonsense/x'"):
        resolve_model("nonsense/x")


def test_the_model_table_sets_reply_length_and_extra_fields() -> None:
    with ChatServer() as server:
        server.replies.append(Reply(body=completion_body("hi")))
        options = {"max_tokens": 64, "extra_body": {"chat_template_kwargs": {"a": False}}}
        model_for(server, **options).complete(MESSAGES, seed=7)
        (request,) = server.requests
    assert request["max_tokens"] == 64 and request["seed"] == 7
    assert request["chat_template_kwargs"] == {"a": False}


def test_no_server_named_and_no_key_for_the_official_one_is_refused(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelError, match="no --base-url") as raised:
        OpenAIModel("m")
    assert raised.value.kind == "bad_input"
