"""`sprout train --rollout-server`: each step's rollouts sampled by a server put on the
weights the previous step saved, the learner trained on the ids that server sampled.

The real test runs llama.cpp (SmolLM2-135M: the tiny test model's byte-level BPE
tokenizer is not one llama.cpp's converter recognises, which the conversion error
test shows) behind a recording proxy, so it reads what crossed the wire. SGLang's
weight reload is tested against the loopback fake that speaks its routes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sprout.models.llamacpp_process import find_converter, find_llama_server
from sprout.pipeline.rollout_server import (
    LlamaCppRollouts,
    RolloutServerError,
    SGLangRollouts,
    check_vocabulary,
)
from sprout.runfolder import RunFolder
from tests.support.fake_token_server import FakeTokenServer, serving
from tests.support.llama_server import Recorder, recording_proxy, smollm2_gguf
from tests.support.requirements import require_host_image
from tests.support.smollm2 import cached_folder, missing
from tests.support.taskfolders import two_edits_task
from tests.support.train_command import COIN
from tests.support.train_command import train as train_loop


def train(tmp_path: Path, model: Path, *extra: str, steps: int = 2) -> int:
    """`sprout train` as tests/pipeline/test_train_loop.py runs it, the children chosen by the
    heuristic selector (the 135M model writes no review worth a call)."""
    return train_loop(tmp_path, model, "--selector", "heuristic", *extra, steps=steps)


def coin_task(tmp_path: Path) -> None:
    task = two_edits_task(tmp_path / "tasks", "coin")
    (task / "tests" / "test.sh").write_text(COIN)


def log(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "run" / "train.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (("--rollout-server", "tgi"), "--rollout-server tgi: expected one of llamacpp, sglang"),
        (("--rollout-server", "vllm"), "--rollout-server vllm: vLLM's weight reload"),
        (("--rollout-server", "sglang"), "--rollout-server sglang: needs --base-url"),
        (
            ("--rollout-server", "llamacpp", "--base-url", "http://127.0.0.1:1"),
            "--base-url: --rollout-server llamacpp starts its own server",
        ),
        (("--base-url", "http://127.0.0.1:1"), "--base-url: only with --rollout-server sglang"),
    ],
)
def test_a_rollout_server_sprout_cannot_use_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], expected: str
) -> None:
    two_edits_task(tmp_path / "tasks")
    assert train(tmp_path, tmp_path / "model", *extra) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "run").exists(), "refused before the run folder is made"


def test_weights_llama_cpp_cannot_convert_are_one_line_and_exit_2(
    tmp_path: Path, tiny_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if find_converter() is None:
        pytest.skip("no llama.cpp converter: scripts/llama-server keeps one with the binary")
    require_host_image()
    coin_task(tmp_path)
    assert train(tmp_path, tiny_model_path, "--rollout-server", "llamacpp") == 2
    *warnings, err = capsys.readouterr().err.strip().splitlines()
    assert all("warning" in line for line in warnings), warnings
    assert err.startswith(f"sprout train: --rollout-server llamacpp: {tiny_model_path}: ")
    assert "llama.cpp's converter failed: NotImplementedError: BPE pre-tokenizer" in err
    assert not list((tmp_path / "run" / "rollout-server").glob("*.gguf*")), "no partial file"


def test_a_server_with_another_vocabulary_is_refused_naming_both(
    tmp_path: Path, tiny_model_path: Path
) -> None:
    from transformers import AutoTokenizer

    from sprout.train.tiny import build_tiny_model

    ours = AutoTokenizer.from_pretrained(tiny_model_path)
    other = build_tiny_model(tmp_path / "other", vocab_size=300)
    with serving(FakeTokenServer(ours, [])) as url:
        assert check_vocabulary(url, ours, tiny_model_path)["model_path"] == "fake.gguf"
        with pytest.raises(RolloutServerError) as refused:
            check_vocabulary(url, AutoTokenizer.from_pretrained(other), other)
    message = str(refused.value)
    assert f"(fake.gguf at {url}) and the learner's ({other}) are not one vocabulary" in message


def test_sglang_loads_the_weights_of_each_step_from_disk_a_resume_too(
    tmp_path: Path, tiny_model_path: Path
) -> None:
    from transformers import AutoTokenizer

    require_host_image()
    coin_task(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    fake = FakeTokenServer(tokenizer, ["```bash\nls\n```"] * 99)
    with serving(fake) as url:
        server = ("--rollout-server", "sglang", "--base-url", url)
        assert train(tmp_path, tiny_model_path, *server, steps=1) == 0
        assert train(tmp_path, tiny_model_path, *server, "--resume") == 0
        fake.unloadable.add(str(tiny_model_path))
        with pytest.raises(RolloutServerError) as refused:
            SGLangRollouts(url).serve(tiny_model_path, 0)
    assert str(refused.value).startswith("--rollout-server sglang: ")
    assert f"Failed to load {tiny_model_path}" in str(refused.value)
    steps = log(tmp_path)
    policies = [str(tiny_model_path), steps[0]["policy"]]
    assert fake.loaded == policies, "step 1 on the starting weights, step 2 (resumed) on step 1's"
    assert [s["rollout_server"]["weights"] for s in steps] == policies
    assert all(s["tokens_trained"] > 0 for s in steps)
    prompts = [body["input_ids"] for route, body in fake.requests if route == "/generate"]
    assert prompts == fake.prompts and len(prompts) >= 8, "every reply came from /generate"


def test_a_llama_server_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    """A second Ctrl-C leaves with `os._exit`, where no `stop` runs: the server goes too."""
    if find_llama_server() is None:
        pytest.skip("no llama-server: scripts/llama-server builds one")
    script = (
        "import os, sys\n"
        "from sprout.models.llamacpp_process import LlamaServer\n"
        "server = LlamaServer(sys.argv[1], log=sys.argv[2])\n"
        "server.start()\n"
        "print(server.process.pid, flush=True)\n"
        "os._exit(130)\n"
    )
    log_file = str(tmp_path / "server.log")
    started = subprocess.run(
        [sys.executable, "-c", script, str(smollm2_gguf()), log_file],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert started.returncode == 130, started.stderr
    pid = int(started.stdout)
    deadline = time.monotonic() + 15
    while _alive(pid):
        assert time.monotonic() < deadline, f"llama-server {pid} outlived sprout"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has ended; only its parent has not read its status)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def sampled_per_step(recorder: Recorder, folder: Path) -> dict[int, Counter[tuple[Any, ...]]]:
    """(prompt, sampled ids) of every /completion, by the step whose GGUF file the server
    said it had loaded (its /props, asked after each restart)."""
    calls: dict[int, Counter[tuple[Any, ...]]] = {}
    step = None
    for route, sent, got in recorder.exchanges:
        if route == "/props":
            step = int(Path(got["model_path"]).relative_to(folder).stem.removeprefix("step-"))
        elif route == "/completion":
            assert step is not None
            calls.setdefault(step + 1, Counter())[
                (tuple(sent["prompt"]), tuple(got["tokens"]))
            ] += 1
    return calls


@pytest.mark.slow
def test_llama_cpp_samples_each_step_on_the_weights_the_last_one_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    why = missing() or (
        find_converter() is None and "no llama.cpp converter (scripts/llama-server)"
    )
    if why or find_llama_server() is None:
        pytest.skip(why or "no llama-server: scripts/llama-server builds one")
    require_host_image()
    coin_task(tmp_path)
    model, _, _ = cached_folder()
    served = LlamaCppRollouts.serve
    with ExitStack() as stack:
        proxy: list[tuple[str, Recorder]] = []

        def through_proxy(self: LlamaCppRollouts, policy: Path, step: int) -> Any:
            done = served(self, policy, step)
            if not proxy:  # the server keeps its port across restarts
                proxy.append(stack.enter_context(recording_proxy(done.url)))
            return replace(done, url=proxy[0][0])

        monkeypatch.setattr(LlamaCppRollouts, "serve", through_proxy)
        assert train(tmp_path, model, "--rollout-server", "llamacpp") == 0
        recorder = proxy[0][1]

    folder = tmp_path / "run" / "rollout-server"
    steps = log(tmp_path)
    assert [s["step"] for s in steps] == [1, 2]
    assert [Path(s["rollout_server"]["model_path"]) for s in steps] == [
        folder / "step-0.gguf",
        folder / "step-1.gguf",
    ], "step 2 was sampled by the server restarted on step 1's weights"
    assert all(s["tokens_trained"] > 0 and Path(s["policy"]).is_dir() for s in steps)
    assert [p.name for p in folder.glob("*.gguf")] == ["step-1.gguf"], "only the served file kept"
    server_log = (folder / "llama-server.log").read_text()
    assert str(folder / "step-0.gguf") in server_log and str(folder / "step-1.gguf") in server_log

    calls = sampled_per_step(recorder, folder)
    run = RunFolder.open(tmp_path / "run")
    try:
        for step in (1, 2):
            turns = 0
            for attempt in run.tree.attempts("coin"):
                if attempt.method != f"train@{step}":
                    continue
                path = run.tree.token_path(attempt)
                for k, (context, completion, turn) in enumerate(path):
                    if turn.attempt_id != attempt.id or turn.author != "actor":
                        continue
                    prompt = [i for c, p, _ in path[:k] for i in (*c, *p)] + list(context)
                    assert calls[step][(tuple(prompt), tuple(completion))] > 0, (step, turn)
                    turns += 1
            assert turns >= 4, f"step {step}: each of its rollouts played a turn"
    finally:
        run.close()
