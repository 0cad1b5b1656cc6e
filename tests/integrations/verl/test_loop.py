"""The `sprout` agent loop as verl builds and runs it, on CPU: verl's own `AgentLoopWorker`
(from verl's own trainer config, the loop named in an agent-loop config file as a user
names it), its `server_manager` a real llama.cpp server with SmolLM2 behind verl's
`generate` interface, sandboxes and verifier sprout's. What a verl user relies on:

- the `n` samples of one prompt are one sprout group, 2 roots then 6 children, each child
  played from its parent's checkpoint, its ids its parent's up to the boundary then its own;
- every model call of the group went through verl's `generate` with token ids;
- masks train each token once, in the rollout that produced it; rewards are the verifier's;
- verl's own post-processing and GRPO advantage function give, for these rewards, the
  advantages sprout's own learner gives;
- the samples of one prompt split between two workers still form one group.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verl", reason="verl is not installed (the Makefile installs it)")
ray = pytest.importorskip("ray", reason="verl runs on Ray: pip install 'sprout-rl[dist]'")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from hydra.errors import InstantiationException  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker  # noqa: E402
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage  # noqa: E402

from sprout.integrations.verl.loop import VerlLoopError  # noqa: E402
from sprout.integrations.verl.rows import TaskOptions, dataset_rows  # noqa: E402
from sprout.runfolder import RunFolder  # noqa: E402
from sprout.tasks.discover import load_tasks  # noqa: E402
from sprout.train.credit import GroupCredit, Leaf  # noqa: E402
from sprout.train.groups import finished_groups  # noqa: E402
from tests.support.llama_server import llama_server  # noqa: E402
from tests.support.smollm2 import cached_folder  # noqa: E402
from tests.support.verl_llamacpp import LlamaCppVerlClient  # noqa: E402

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

EXAMPLES = Path(__file__).parents[3] / "examples" / "tasks"
TASK = "log-hourly-utc"
N = 8
PROMPT_LENGTH = 3072
RESPONSE_LENGTH = 6144


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(llama-server's URL, the same model as a Hugging Face folder for verl's tokenizer)."""
    folder, _, _ = cached_folder()
    with llama_server(tmp_path_factory.mktemp("llama") / "server.log") as url:
        yield url, folder


def _config(model: Path, tmp_path: Path, roots: int = 2, children: int = 3, **more: Any) -> Any:
    """verl's own trainer config for a CPU agent-loop worker, the `sprout` loop named in an
    agent-loop config file as docs/integrations.md shows."""
    loops = tmp_path / "agent_loop.yaml"
    loop = {
        "name": "sprout",
        "_target_": "sprout.integrations.verl.loop.SproutAgentLoop",
        "runs": str(tmp_path / "runs"),
        "roots": roots,
        "children": children,
        "max_turns": 2,
        "reply_tokens": 48,
        "roles": {"max_retries": 0},  # SmolLM2 writes no JSON: once is enough to fall back
        **more,
    }
    loops.write_text(yaml.safe_dump([loop]))
    import verl

    configs = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=configs, version_base=None):
        return compose(
            config_name="ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={model}",
                "actor_rollout_ref.rollout.name=vllm",
                f"actor_rollout_ref.rollout.n={roots * (1 + children)}",
                f"actor_rollout_ref.rollout.prompt_length={PROMPT_LENGTH}",
                f"actor_rollout_ref.rollout.response_length={RESPONSE_LENGTH}",
                "actor_rollout_ref.rollout.calculate_log_probs=True",
                # the llama.cpp adapter samples from the whole distribution only
                "actor_rollout_ref.rollout.top_k=-1",
                "actor_rollout_ref.rollout.top_p=1.0",
                f"actor_rollout_ref.rollout.agent.agent_loop_config_path={loops}",
                "trainer.val_before_train=False",
                "trainer.test_freq=-1",
            ],
        )


def _batch(uid: str, samples: int) -> DataProto:
    """`samples` rows of the example task as verl hands them to its workers: the dataset's
    row (`sprout export --format verl-dataset`) repeated, with the step's `uid`."""
    loaded = load_tasks([EXAMPLES / TASK])
    [row] = dataset_rows(loaded.tasks, TaskOptions())
    fields = {**row, "raw_prompt": row["prompt"], "uid": uid}
    fields.pop("prompt")
    columns = {}
    for key, value in fields.items():
        column = np.empty(samples, dtype=object)
        column[:] = [value] * samples
        columns[key] = column
    return DataProto(batch=None, non_tensor_batch=columns, meta_info={"global_steps": 1})


async def _generate(workers: list[AgentLoopWorker], batches: list[DataProto]) -> list[DataProto]:
    return list(
        await asyncio.gather(
            *(w.generate_sequences(b) for w, b in zip(workers, batches, strict=True))
        )
    )


class _Recording(LlamaCppVerlClient):
    """The adapter, keeping the length of every prompt it was sent."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.prompts: list[int] = []

    async def generate(self, request_id: str, **asked: Any) -> Any:
        self.prompts.append(len(asked["prompt_ids"]))
        return await super().generate(request_id, **asked)


def _worker(config: Any, client: LlamaCppVerlClient) -> AgentLoopWorker:
    return AgentLoopWorker(config, llm_client=client)


def _sequences(output: DataProto) -> list[tuple[list[int], list[int], list[int]]]:
    """(prompt ids, response ids, response mask) of each row, verl's padding taken off."""
    found = []
    batch = output.batch
    for i in range(len(output)):
        prompt = batch["prompts"][i][batch["attention_mask"][i][: batch["prompts"].shape[1]] == 1]
        width = batch["prompts"].shape[1]
        kept = batch["attention_mask"][i][width:] == 1
        response = batch["responses"][i][kept]
        mask = batch["response_mask"][i][kept]
        found.append((prompt.tolist(), response.tolist(), mask.tolist()))
    return found


def _advantages(
    output: DataProto, leaves: list[Leaf], rewards: dict[int, float]
) -> tuple[list[float], list[float]]:
    """Each row's advantage (on its trained tokens) by verl's GRPO function, its reward where
    verl's post-processing puts a score, and the same by sprout's learner's credit."""
    batch = output.batch
    width = batch["prompts"].shape[1]
    last = batch["attention_mask"][:, width:].sum(dim=1) - 1
    ids = [int(i) for i in output.non_tensor_batch["sprout_attempt_id"]]
    token_rewards = torch.zeros_like(batch["response_mask"], dtype=torch.float32)
    token_rewards[torch.arange(len(ids)), last] = torch.tensor([rewards[i] for i in ids])
    found, _ = compute_grpo_outcome_advantage(
        token_level_rewards=token_rewards,
        response_mask=batch["response_mask"],
        index=output.non_tensor_batch["uid"],
    )
    mask = batch["response_mask"].bool()
    verl_found = [row[trained][0].item() for row, trained in zip(found, mask, strict=True)]
    credit = GroupCredit([dataclasses.replace(f, reward=rewards[f.attempt_id]) for f in leaves])
    return verl_found, [credit(i, 1) for i in ids]


def test_one_prompts_samples_are_one_sprout_group_with_verls_own_advantages(
    served, local_ray, tmp_path
):
    url, model = served
    config = _config(model, tmp_path)
    client = _Recording(url)
    [output] = asyncio.run(_generate([_worker(config, client)], [_batch("prompt-0", N)]))

    assert len(output) == N
    errors = list(output.non_tensor_batch["sprout_error"])
    assert errors == [None] * N, errors
    [folder] = set(output.non_tensor_batch["sprout_run"])
    run = RunFolder.open(folder)
    try:
        [group], unfinished = finished_groups(run.tree)
        assert unfinished == []
        attempts = {a.id: a for a in group.attempts}
        roots = [a for a in group.attempts if a.parent_id is None]
        assert len(roots) == 2 and len(attempts) == N
        leaves = group.leaves()
        calls = run.tree.model_calls()
    finally:
        run.close()

    ids = output.non_tensor_batch["sprout_attempt_id"]
    assert sorted(ids) == sorted(attempts), "every attempt of the group is one sample"
    sequences = dict(zip(ids, _sequences(output), strict=True))
    for attempt_id, (prompt, response, mask) in sequences.items():
        attempt = attempts[attempt_id]
        whole = prompt + response
        if attempt.parent_id is not None:
            parent_prompt, parent_response, _ = sequences[attempt.parent_id]
            parent = parent_prompt + parent_response
            kept = int(output.non_tensor_batch["sprout_prefix_tokens"][list(ids).index(attempt_id)])
            assert (kept > 0) == (attempt.boundary > 0), "a child keeps its parent's turns"
            assert whole[:kept] == parent[:kept], "a child starts on its parent's ids"
            assert all(m == 0 for m in ([0] * len(prompt) + mask)[:kept]), "a prefix trains once"
        assert any(mask), f"attempt {attempt_id} trains on its own tokens"
    scores = output.batch["rm_scores"].sum(dim=-1).tolist()
    assert scores == [float(attempts[i].reward or 0.0) for i in ids], "the verifier's rewards"
    verifier = {i: float(a.reward or 0.0) for i, a in attempts.items()}
    varied = {i: float(i % 3 == 0) for i in attempts}  # SmolLM2 passes nothing: vary them
    for rewards in (verifier, varied):
        verl_found, sprout_found = _advantages(output, leaves, rewards)
        assert verl_found == pytest.approx(sprout_found, abs=1e-5), rewards
    assert sorted(c.prompt_tokens for c in calls) == sorted(client.prompts), (
        "every model call of the group, the roles' too, went through verl's generate"
    )
    if not any(verifier[root.id] for root in roots):  # the children were guided
        assert {"analyst", "reviewer"} <= {c.role for c in calls}


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"n": 4}, "actor_rollout_ref.rollout.n=4: the sprout agent loop plays groups of roots 2"),
        ({"runs": "runs"}, "`sprout` entry: runs: Value error, runs: 'runs' is not an absolute"),
    ],
)
def test_settings_that_cannot_hold_a_group_are_refused_in_one_line(served, tmp_path, changed, said):
    url, model = served
    config = _config(model, tmp_path)
    if "n" in changed:
        config.actor_rollout_ref.rollout.n = changed["n"]
    if "runs" in changed:
        loops = Path(config.actor_rollout_ref.rollout.agent.agent_loop_config_path)
        loops.write_text(loops.read_text().replace(str(tmp_path / "runs"), changed["runs"]))
    with pytest.raises(InstantiationException) as caught:  # hydra's, around the loop's own
        asyncio.run(_generate([_worker(config, LlamaCppVerlClient(url))], [_batch("bad", 4)]))
    assert isinstance(caught.value.__cause__, VerlLoopError), caught.value
    assert said in str(caught.value.__cause__) and "\n" not in str(caught.value.__cause__)


def test_a_group_sprout_cannot_play_trains_nothing_and_says_why(served, local_ray, tmp_path):
    """A failure of sprout's own before any attempt (here: a file where the group's run folder
    goes) is every sample's error, with nothing trained, never a failure of the model's."""
    url, model = served
    config = _config(model, tmp_path)
    taken = tmp_path / "runs" / f"{TASK}-prompt-crash"
    taken.parent.mkdir(parents=True)
    taken.write_text("not a run folder\n")
    [output] = asyncio.run(
        _generate([_worker(config, LlamaCppVerlClient(url))], [_batch("prompt-crash", N)])
    )
    errors = list(output.non_tensor_batch["sprout_error"])
    assert all(e and e.startswith("the group could not be played: ") for e in errors), errors
    assert str(taken) in errors[0]
    assert output.batch["response_mask"].sum().item() == 0, "nothing of it trains"


def test_samples_of_one_prompt_split_over_two_workers_form_one_group(served, local_ray, tmp_path):
    """A root and its child (the smallest group), one sample on each of two workers, the
    group's sandboxes placed on the Ray cluster as `sprout run --ray` places them."""
    url, model = served
    stores = str(tmp_path / "stores" / "{node}")
    config = _config(model, tmp_path, roots=1, children=1, ray=True, ray_store=stores)
    workers = [_worker(config, LlamaCppVerlClient(url)), _worker(config, LlamaCppVerlClient(url))]
    halves = [_batch("prompt-split", 1), _batch("prompt-split", 1)]
    outputs = asyncio.run(_generate(workers, halves))

    runs = {r for output in outputs for r in output.non_tensor_batch["sprout_run"]}
    assert len(runs) == 1, f"one group, one run folder: {runs}"
    errors = [e for output in outputs for e in output.non_tensor_batch["sprout_error"]]
    assert errors == [None, None], errors
    ids = [i for output in outputs for i in output.non_tensor_batch["sprout_attempt_id"]]
    parents = [p for output in outputs for p in output.non_tensor_batch["sprout_parent_id"]]
    assert sorted(ids) == [1, 2] and sorted(parents, key=str) == [1, None], (ids, parents)
    run = RunFolder.open(runs.pop())
    try:
        placed = [placement.to_json() for placement in run.tree.meta().ray.placements]
    finally:
        run.close()
    assert [p["task"] for p in placed] == ["log-hourly-utc"], placed
