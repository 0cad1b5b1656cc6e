"""Inside verl, sprout's model calls are verl's: `VerlServer` sends each one, as token ids,
to verl's async `generate`, awaited on verl's event loop from sprout's worker threads.

The real-server tests put llama.cpp (SmolLM2-135M) behind verl's `generate` interface
(tests/support/verl_llamacpp.py) and check what a trained rollout relies on: the ids
sprout stores are the ids sent and sampled, a continuation sends its prefix unchanged.
The others use an in-process client to check how verl's params and failures are treated.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from sprout.integrations.verl.server import VerlServer
from sprout.models import ModelError
from sprout.models.hf_tokenizer import HFTokenizer
from sprout.models.token_server import Sampling, TokenServerModel
from tests.support import smollm2
from tests.support.llama_server import llama_server
from tests.support.requirements import require_train_extra

TokenOutput = pytest.importorskip(
    "verl.workers.rollout.replica", reason="verl is not installed (the Makefile installs it)"
).TokenOutput

VERL_PARAMS = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0}
"""What verl passes an agent loop's `run()` (its rollout config's defaults)."""
YES_OR_NO = [{"role": "user", "content": "Reply with one word: yes or no? Is the sky blue?"}]
"""A question SmolLM2 answers, greedily, in a word and its end of turn."""


class Recorder:
    """A verl client that keeps what each call was sent, then lets `answer` reply."""

    def __init__(self, answer: Callable[[list[int], dict[str, Any]], Awaitable[Any]]) -> None:
        self.answer = answer
        self.sent: list[tuple[str, list[int], dict[str, Any]]] = []

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any]
    ) -> Any:
        self.sent.append((request_id, list(prompt_ids), dict(sampling_params)))
        return await self.answer(prompt_ids, sampling_params)


@pytest.fixture
def verl_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running in its own thread, as verl's agent loop worker runs one."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


@pytest.fixture(scope="module")
def served_smollm2(tmp_path_factory) -> Iterator[tuple[Any, str]]:
    """(SmolLM2's HF tokenizer, the URL of a llama-server serving the same model)."""
    why = smollm2.missing()
    if why:
        pytest.skip(why)
    from transformers import AutoTokenizer

    folder, _, _ = smollm2.cached_folder()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    with llama_server(tmp_path_factory.mktemp("llama") / "server.log") as url:
        yield tokenizer, url


@pytest.fixture
def smollm2_verl(served_smollm2, verl_loop) -> tuple[TokenServerModel, Recorder, Any]:
    """(the model sprout calls, the client verl's server manager stands for, the tokenizer)."""
    from tests.support.verl_llamacpp import LlamaCppVerlClient

    tokenizer, url = served_smollm2
    client = LlamaCppVerlClient(url)
    recorder = Recorder(
        lambda ids, params: client.generate("", prompt_ids=ids, sampling_params=params)
    )
    server = VerlServer(recorder, tokenizer, "smollm2", verl_loop, sampling_params=VERL_PARAMS)
    return TokenServerModel("smollm2", server, max_tokens=16), recorder, tokenizer


def test_replies_are_the_ids_verl_sampled_and_a_continuation_sends_them_back(smollm2_verl):
    model, recorder, tokenizer = smollm2_verl
    end_of_turn = model.server.end_of_turn()
    first = model.complete(YES_OR_NO, n=2, temperature=0.0)

    assert [sent for _, sent, _ in recorder.sent] == [list(first.prompt_ids)] * 2
    assert len({request for request, _, _ in recorder.sent}) == 2, "a request id each"
    for choice in first.choices:
        ids = choice.completion_ids
        assert choice.finish_reason == "stop" and ids[-1] == end_of_turn
        assert tokenizer.decode(ids[:-1]) == choice.text
        assert len(choice.logprobs) == len(ids)
        assert all(token.logprob <= 0 for token in choice.logprobs)

    prefix = (*first.prompt_ids, *first.choices[0].completion_ids)
    conversation = [
        *YES_OR_NO,
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": "Say hello."},
    ]
    before = len(recorder.sent)
    second = TokenServerModel("smollm2", model.server, max_tokens=4).complete(
        conversation, temperature=0.0, prefix_ids=prefix
    )
    (_, sent, params), *_ = recorder.sent[before:]
    assert tuple(sent) == second.prompt_ids and tuple(sent[: len(prefix)]) == prefix
    assert params["max_tokens"] == 4
    cut = second.choices[0]
    assert cut.finish_reason == "length" and len(cut.completion_ids) == 4
    assert end_of_turn not in cut.completion_ids
    assert tokenizer.decode(cut.completion_ids) == cut.text


def test_calls_from_four_threads_at_once_all_complete(smollm2_verl):
    model, recorder, _ = smollm2_verl
    with ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(lambda _: model.complete(YES_OR_NO, temperature=0.0), range(4)))
    assert len(recorder.sent) == 4
    assert all(reply.choices[0].finish_reason == "stop" for reply in replies)
    assert len({reply.prompt_ids for reply in replies}) == 1


@pytest.fixture
def tiny_tokenizer(tiny_model_path):
    require_train_extra()
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_path)


def answering(reply: Any = None, *, error: Exception | None = None, delay_s: float = 0.0):
    """An `answer` for `Recorder`: `reply` (or `error` raised) after `delay_s`."""

    async def answer(ids: list[int], params: dict[str, Any]) -> Any:
        await asyncio.sleep(delay_s)
        if error is not None:
            raise error
        return reply

    return answer


def fake_server(tiny_tokenizer, verl_loop, answer, **options) -> tuple[VerlServer, Recorder]:
    recorder = Recorder(answer)
    server = VerlServer(
        recorder, tiny_tokenizer, "tiny", verl_loop, sampling_params=VERL_PARAMS, **options
    )
    return server, recorder


def test_verl_params_are_sent_with_sprouts_temperature_and_length_on_top(tiny_tokenizer, verl_loop):
    end_of_turn = HFTokenizer.of(tiny_tokenizer, "tiny").end_of_turn_id
    reply = TokenOutput(token_ids=[5, 6, end_of_turn], log_probs=[-0.1, -0.2, -0.3])
    server, recorder = fake_server(tiny_tokenizer, verl_loop, answering(reply))

    generation = server.generate(Sampling((1, 2, 3), n=3, max_tokens=7))
    server.generate(Sampling((1, 2, 3), temperature=0.25))

    (_, prompt, params), *others, (_, _, later) = recorder.sent
    assert prompt == [1, 2, 3] and len(others) == 2
    assert len({request for request, _, _ in recorder.sent}) == 4, "a request id each"
    assert params == {
        **VERL_PARAMS,
        "logprobs": True,
        "max_tokens": 7,
        "stop_token_ids": [end_of_turn],
    }
    assert later["temperature"] == 0.25 and "max_tokens" not in later
    sample = generation.samples[0]
    assert sample.stopped and sample.ids == (5, 6, end_of_turn)
    assert sample.logprobs == (-0.1, -0.2, -0.3)


def test_a_reply_cut_at_the_length_limit_has_not_stopped(tiny_tokenizer, verl_loop):
    reply = TokenOutput(token_ids=[5, 6], log_probs=[-0.1, -0.2], stop_reason="completed")
    server, _ = fake_server(tiny_tokenizer, verl_loop, answering(reply))
    assert not server.generate(Sampling((1,))).samples[0].stopped


def test_a_failing_client_is_a_server_fault_naming_verls_server(tiny_tokenizer, verl_loop):
    failing = answering(error=RuntimeError("replica 0 is gone\ntraceback..."))
    server, _ = fake_server(tiny_tokenizer, verl_loop, failing)
    with pytest.raises(ModelError) as raised:
        server.generate(Sampling((1, 2)))
    assert raised.value.kind == "server"
    assert str(raised.value) == "verl://tiny: verl's server failed: replica 0 is gone"


def test_a_client_that_does_not_answer_in_time_is_a_timeout(tiny_tokenizer, verl_loop):
    server, _ = fake_server(tiny_tokenizer, verl_loop, answering(delay_s=5), timeout_s=0.1)
    with pytest.raises(ModelError) as raised:
        server.generate(Sampling((1, 2)))
    assert raised.value.kind == "timeout" and "verl://tiny" in str(raised.value)


def test_a_reply_without_log_probs_is_refused(tiny_tokenizer, verl_loop):
    reply = TokenOutput(token_ids=[5, 6], log_probs=None, stop_reason="completed")
    server, _ = fake_server(tiny_tokenizer, verl_loop, answering(reply))
    with pytest.raises(ModelError, match="no log-probs") as raised:
        server.generate(Sampling((1, 2)))
    assert raised.value.kind == "malformed"


def test_the_window_is_the_one_verls_config_gives(tiny_tokenizer, verl_loop):
    server, _ = fake_server(tiny_tokenizer, verl_loop, answering(), context_tokens=3072)
    window = server.context_window()
    assert window is not None and window.tokens == 3072
    assert TokenServerModel("tiny", server, max_tokens=16).context_window().reply_tokens == 16
