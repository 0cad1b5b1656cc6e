"""Token-exact rollouts: every model call's prompt is the stored ids of its path, branches too.

The tiny model is real (it speaks gibberish, so its turns are format errors
with an observation each); a hook on its torch module records the ids each
generation actually started from.
"""

from __future__ import annotations

import sqlite3

import pytest

from sprout.agent import ActorConfig
from sprout.models import ModelError
from sprout.tree import RolloutTree, RunMeta, TokenizerFingerprint, TreeError, Turn
from sprout.tree.database.schema import SCHEMA_VERSION
from tests.support.old_databases import database_at_version
from tests.support.world import make_world

STARTING_TURN = "The listing first.\n\n```bash\necho fixed > notes && ls\n```"


@pytest.fixture
def recorded(tiny_model_path):
    """An `hf/` model whose module records the ids of every prefill (a call without a cache)."""
    from sprout.models.hf import HFModel

    model = HFModel(tiny_model_path, max_new_tokens=16, seed=0)
    model.prompts = []

    def hook(module, args, kwargs):
        if kwargs.get("cache") is None and kwargs.get("past_key_values") is None:
            model.prompts.append(tuple(kwargs["input_ids"][0].tolist()))

    model.module.register_forward_pre_hook(hook, with_kwargs=True)
    return model


def flat(path) -> list[int]:
    return [i for context, completion, _ in path for i in (*context, *completion)]


def check_every_call(world, attempt, prompts, model):
    """Each actor turn's real prompt == the stored ids before it + its own context_ids."""
    path = world.tree.token_path(attempt)
    actor_turns = [k for k, (_, _, turn) in enumerate(path) if turn.author == "actor"]
    own = [k for k in actor_turns if path[k][2].attempt_id == attempt.id]
    assert len(prompts) == len(own) >= 1
    for prompt, k in zip(prompts, own, strict=True):
        context, completion, turn = path[k]
        assert list(prompt) == flat(path[:k]) + list(context)
        assert turn.prompt_tokens == len(prompt)
        assert turn.completion_tokens == len(completion)
        assert len(turn.completion_logprobs) == len(completion)
        # and the ids say what the messages say
        messages = world.tree.messages(attempt, turn.index - 1)
        assert model.decode(prompt) == model.render(messages)


@pytest.mark.sandbox
def test_every_turn_stores_the_ids_its_call_was_given(overlay_store, tmp_path, recorded):
    world = make_world(overlay_store, tmp_path, files={"README": "a task\n"})
    actor = world.actor(recorded, ActorConfig(max_turns=3, logprobs=True))
    root = actor.run(world.root(actor))

    assert root.status == "limit"
    check_every_call(world, root, recorded.prompts, recorded)
    path = world.tree.token_path(root)
    assert len(path) == 3
    # the first turn's context is the whole initial prompt
    first = world.tree.messages(root, 0)
    assert list(path[0][0]) == recorded.encode(recorded.render(first))
    # later contexts hold the observation and the generation prompt
    assert recorded.decode(path[1][0]).endswith("<|im_end|>\n<|im_start|>assistant\n")
    assert world.tree.meta().tokenizer.to_json() == recorded.tokenizer_fingerprint()
    # what was stored reads back the same from a reopened store
    again = RolloutTree(world.tree.database)
    assert again.own_turns(root) == world.tree.own_turns(root)


@pytest.mark.sandbox
def test_a_branch_continues_from_its_parents_stored_ids(overlay_store, tmp_path, recorded):
    world = make_world(overlay_store, tmp_path, files={"README": "a task\n"})
    actor = world.actor(recorded, ActorConfig(max_turns=3, logprobs=True))
    root = actor.run(world.root(actor))
    retained = flat(world.tree.token_path(root, 1))
    recorded.prompts.clear()

    branch = actor.run(world.tree.branch(root, 1, STARTING_TURN))

    assert branch.status == "limit"
    starting = world.tree.own_turns(branch)[0]
    assert (starting.author, starting.index) == ("reviewer", 2)
    assert starting.calls[0].output == "README\nnotes\n"
    assert starting.completion_ids == recorded.encode_reply(STARTING_TURN)
    assert starting.completion_ids[-1] == recorded.end_of_turn_id
    assert starting.completion_logprobs is None
    first_prompt = recorded.prompts[0]
    expected = retained + list(starting.context_ids) + list(starting.completion_ids)
    assert list(first_prompt[: len(expected)]) == expected
    check_every_call(world, branch, recorded.prompts, recorded)
    # a branch of the branch, from the starting turn's boundary, with no turn of its own
    recorded.prompts.clear()
    deeper = actor.run(world.tree.branch(branch, 2))
    check_every_call(world, deeper, recorded.prompts, recorded)
    assert list(recorded.prompts[0][: len(expected)]) == expected


def test_a_run_whose_ids_another_tokenizer_made_is_refused(tmp_path, recorded):
    from sprout.agent import Actor

    tree = RolloutTree(tmp_path / "sprout.db")
    Actor(recorded, tree, None)  # nothing recorded yet: accepted
    elsewhere = TokenizerFingerprint(sha256="0" * 64, model="hf/elsewhere")
    tree.update_meta(RunMeta(tokenizer=elsewhere))
    with pytest.raises(ModelError) as raised:
        Actor(recorded, tree, None)
    assert raised.value.kind == "tokenizer_mismatch"
    message = str(raised.value)
    assert str(tree.database) in message and "hf/elsewhere" in message and recorded.name in message
    ours = TokenizerFingerprint.model_validate(recorded.tokenizer_fingerprint())
    tree.update_meta(RunMeta(tokenizer=ours))
    Actor(recorded, tree, None)


def grow(tree: RolloutTree) -> tuple[int, int]:
    """A root with two turns (the second without ids) and a branch at boundary 1."""
    tree.add_task("t1", {})
    root = tree.root("t1", [{"role": "system", "content": "sys"}], "base0")
    common = {"calls": (), "messages": (), "format_error": True}
    tree.commit_turn(
        Turn(
            root.id,
            1,
            "actor",
            "a",
            checkpoint="l1",
            context_ids=(1, 2, 3),
            completion_ids=(4, 5),
            completion_logprobs=(-0.5, -0.25),
            **common,
        )
    )
    tree.commit_turn(Turn(root.id, 2, "actor", "b", checkpoint="l2", **common))
    branch = tree.branch(root, 1, "c")
    return root.id, branch.id


def test_token_path_reads_the_stored_ids_and_names_a_turn_without_them(tmp_path):
    tree = RolloutTree(tmp_path / "sprout.db")
    root_id, branch_id = grow(tree)
    root, branch = tree.attempt(root_id), tree.attempt(branch_id)
    [(context, completion, turn)] = tree.token_path(branch)
    assert (context, completion, turn.completion_logprobs) == ((1, 2, 3), (4, 5), (-0.5, -0.25))
    assert tree.token_path(root, 0) == []
    with pytest.raises(TreeError) as raised:
        tree.token_path(root)
    assert f"attempt {root_id}: turn {root_id}:2" in str(raised.value)


def test_migration_3_adds_the_id_columns_to_an_older_store(tmp_path):
    path = tmp_path / "sprout.db"
    with database_at_version(path, 2) as db:
        db.execute("INSERT INTO tasks VALUES ('t1', '{}', 0)")
        db.execute(
            "INSERT INTO attempts (task_id, boundary, kind, round, method, guided, prefix, "
            "status, created) VALUES ('t1', 0, 'root', 0, '', 0, '[]', 'running', 0)"
        )
        db.execute(
            "INSERT INTO turns VALUES (1, 1, 'actor', 'a', '[]', '[]', 'l1', 3, 2, NULL, 0, "
            "NULL, 0.5, 1, 0)"
        )
    tree = RolloutTree(path)
    [turn] = tree.own_turns(tree.attempt(1))
    assert (turn.context_ids, turn.completion_ids, turn.completion_logprobs) == (None, None, None)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
