"""The rollout tree: branches restore both halves of a checkpoint, nothing is re-executed,
and tokens are counted spent and with shared prefixes once."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from sprout.tree import (
    Attempt,
    Change,
    CheckpointRef,
    ModelCallRecord,
    RolloutTree,
    TreeError,
    Turn,
    boundary_problem,
    passes,
)
from tests.support.scripted_model import ScriptedModel, bash, dumps, reply, submit
from tests.support.world import LISTING, World


@pytest.fixture
def world_files() -> dict[str, str]:
    """The world's task (tests/conftest.py) with a nested folder besides README and src/app.py."""
    return {"README": "a task\n", "src/app.py": "print('hi')\n", "src/util/helpers.py": "x = 1\n"}


PARENT_TURNS = [
    ("echo v1 > app.txt", "mkdir -p build && echo o > build/out"),
    ("echo v2 >> app.txt", "rm README"),
    ("mv src lib", "chmod 700 lib/app.py"),
    ("rm -rf build", "ln -s lib/app.py link"),
]
"""Writes, appends, deletions of lower files, a directory rename, a chmod and a symlink;
each turn ends with LISTING, so the parent records what its filesystem held at that boundary."""


def play_parent(world: World) -> tuple:
    script = [bash(*commands, LISTING) for commands in PARENT_TURNS] + [submit()]
    parent, _ = world.play(script)
    assert parent.status == "submitted"
    listings = [world.shell(world.base, LISTING)]
    listings += [turn.calls[-1].output for turn in world.tree.own_turns(parent)[:4]]
    assert len(set(listings)) == 5, "every parent turn changed the filesystem"
    return parent, listings


@pytest.mark.sandbox
@pytest.mark.parametrize("boundary", [0, 1, 2, 3, 4])
def test_a_branch_restores_context_and_filesystem_exactly(world, boundary):
    parent, listings = play_parent(world)
    starting = bash(LISTING, thought="Let me check where things stand.")
    branch = world.tree.branch(parent, boundary, starting_turn=starting)
    assert (branch.parent_id, branch.boundary, branch.kind, branch.guided) == (
        parent.id,
        boundary,
        "branch",
        True,
    )
    model = ScriptedModel([submit()])
    branch = world.actor(model).run(branch)
    assert branch.status == "submitted"

    # context: byte for byte the parent's, at every boundary up to the branch point
    for k in range(boundary + 1):
        assert dumps(world.tree.messages(branch, k)) == dumps(world.tree.messages(parent, k))
        assert world.tree.checkpoint(branch, k) == world.tree.checkpoint(parent, k)
    # filesystem: the fork sees exactly what the parent saw at that boundary
    starting_turn, last = world.tree.own_turns(branch)
    assert (starting_turn.index, starting_turn.author) == (boundary + 1, "reviewer")
    assert (last.index, last.author) == (boundary + 2, "actor")
    assert starting_turn.calls[0].exit_code == 0
    assert starting_turn.calls[0].output == listings[boundary]
    # the model's first call: the parent's context, the starting turn, its observation
    expected = [
        *world.tree.messages(parent, boundary),
        {"role": "assistant", "content": starting},
        {"role": "user", "content": f"exit code 0\n{listings[boundary]}".strip()},
    ]
    assert dumps(model.seen[0]) == dumps(expected)
    assert len(model.seen) == 1
    # the path mixes inherited and own turns, in order
    path = world.tree.path(branch)
    assert [(t.attempt_id, t.index) for t in path] == [
        *((parent.id, k) for k in range(1, boundary + 1)),
        (branch.id, boundary + 1),
        (branch.id, boundary + 2),
    ]
    # the parent is untouched
    assert len(world.tree.own_turns(parent)) == 5
    assert world.shell(world.tree.checkpoint(parent, 4), LISTING) == listings[4]


@pytest.mark.sandbox
def test_an_unguided_branch_at_zero_is_the_untouched_task(world):
    parent, listings = play_parent(world)
    model = ScriptedModel([bash(LISTING), submit()])
    branch = world.actor(model).run(world.tree.branch(parent, 0))

    assert branch.guided is False
    assert branch.starting_turn is None
    assert dumps(model.seen[0]) == dumps(list(parent.prefix))
    assert world.tree.checkpoint(branch, 0) == world.base
    first = world.tree.own_turns(branch)[0]
    assert (first.index, first.author) == (1, "actor")
    assert first.calls[0].output == listings[0]


@pytest.mark.sandbox
def test_branches_of_branches_to_depth_three(world):
    tree = world.tree
    a, _ = world.play(
        [bash("echo a1 >> log"), bash("echo a2 >> log"), bash("echo a3 >> log"), submit()]
    )
    b = world.actor(ScriptedModel([bash("echo b4 >> log"), submit()])).run(
        tree.branch(a, 2, starting_turn=bash("echo b3 >> log"))
    )
    c = world.actor(ScriptedModel([submit()])).run(
        tree.branch(b, 4, starting_turn=bash("echo c5 >> log"))
    )
    d_model = ScriptedModel([bash("echo d6 >> log"), submit()])
    d = world.actor(d_model).run(tree.branch(c, 5))

    assert [x.status for x in (a, b, c, d)] == ["submitted"] * 4
    assert tree.root_of(d).id == a.id
    assert [(t.attempt_id, t.index, t.author) for t in tree.path(d)] == [
        (a.id, 1, "actor"),
        (a.id, 2, "actor"),
        (b.id, 3, "reviewer"),
        (b.id, 4, "actor"),
        (c.id, 5, "reviewer"),
        (d.id, 6, "actor"),
        (d.id, 7, "actor"),
    ]
    assert world.shell(tree.checkpoint(d), "cat log") == "a1\na2\nb3\nb4\nc5\nd6\n"
    assert world.shell(tree.checkpoint(d, 5), "cat log") == "a1\na2\nb3\nb4\nc5\n"
    assert world.shell(tree.checkpoint(d, 2), "cat log") == "a1\na2\n"
    for k in range(6):
        assert dumps(tree.messages(d, k)) == dumps(tree.messages(c, k))
    for k in range(5):
        assert dumps(tree.messages(d, k)) == dumps(tree.messages(b, k))
    for k in range(3):
        assert dumps(tree.messages(d, k)) == dumps(tree.messages(a, k))
    assert dumps(d_model.seen[0]) == dumps(tree.messages(c, 5))
    # each level's own writes stay in its own leaf
    assert world.shell(tree.checkpoint(a), "cat log") == "a1\na2\na3\n"
    assert world.shell(tree.checkpoint(b), "cat log") == "a1\na2\nb3\nb4\n"


@pytest.mark.sandbox
def test_a_branch_never_re_executes_the_parents_turns(world):
    turn = 'date +%s%N > stamp_{n} && echo "turn {n} $(cat stamp_{n})" >> log && cat log'
    script = [bash(turn.format(n=n)) for n in range(1, 5)] + [submit()]
    parent, parent_model = world.play(script)
    assert parent.status == "submitted"
    parent_logs = [t.calls[0].output for t in world.tree.own_turns(parent)[:4]]
    first_two = parent_logs[1]
    assert len(first_two.splitlines()) == 2

    starting = bash(
        'echo "branch $(date +%s%N)" >> log && cat log',
        "cat stamp_1 stamp_2",
        "ls stamp_*",
    )
    model = ScriptedModel([submit()])
    branch = world.actor(model).run(world.tree.branch(parent, 2, starting_turn=starting))

    assert branch.status == "submitted"
    log, stamps, listed = world.tree.own_turns(branch)[0].calls
    lines = log.output.splitlines()
    # exactly the parent's first two lines, once each, with the parent's own timestamps
    assert lines[:2] == first_two.splitlines()
    assert len(lines) == 3 and lines[2].startswith("branch ")
    assert stamps.output.split() == [line.split()[2] for line in first_two.splitlines()]
    assert listed.output == "stamp_1\nstamp_2\n"
    assert int(lines[2].split()[1]) > int(stamps.output.split()[1])
    # the branch's own turn appended once; the parent's log is as the parent left it
    final = world.shell(world.tree.checkpoint(branch), "cat log")
    assert final.splitlines() == lines
    assert world.shell(world.tree.checkpoint(parent), "cat log") == parent_logs[3]
    assert len(model.seen) == 1
    assert len(parent_model.seen) == 5
    assert len(world.tree.model_calls(attempt_id=parent.id)) == 5


def grow_known_tree(world: World) -> dict[str, int]:
    """Task t1: root a (3 turns), guided branch b of a:2, unguided c of a:1 and d of a:3,
    an analyst call on a and a reviewer call; task t2: one root and an estimated analyst call.

    Prompt sizes are those a real tokenizer would give these contexts: a's boundary-1 context
    is 130 tokens (a's second prompt), its boundary-2 context 170, its boundary-3 context 195;
    c's first prompt is exactly a's second (same context), d's first is a's whole context.
    """
    tree = world.tree

    def play(attempt, *script):
        return world.actor(ScriptedModel(script)).run(attempt)

    a, _ = world.play(
        [
            reply(bash("echo a1 >> log"), prompt_tokens=100, completion_tokens=10),
            reply(bash("echo a2 >> log"), prompt_tokens=130, completion_tokens=20),
            reply(submit(), prompt_tokens=170, completion_tokens=5),
        ]
    )
    b = play(
        tree.branch(a, 2, starting_turn=bash("echo b3 >> log")),
        reply(bash("echo b4 >> log"), prompt_tokens=200, completion_tokens=7),
        reply(submit(), prompt_tokens=230, completion_tokens=3),
    )
    c = play(
        tree.branch(a, 1),
        reply(bash("echo c2 >> log"), prompt_tokens=130, completion_tokens=9),
        reply(submit(), prompt_tokens=160, completion_tokens=2),
    )
    d = play(tree.branch(a, 3), reply(submit(), prompt_tokens=195, completion_tokens=4))
    tree.record_call(ModelCallRecord("analyst", "t1", a.id, None, 500, 50))
    tree.record_call(ModelCallRecord("reviewer", "t1", None, None, 800, 80))
    tree.add_task("t2", {})
    actor = world.actor(ScriptedModel([reply(submit(), prompt_tokens=1000, completion_tokens=1)]))
    other = actor.run(tree.root("t2", actor.prefix("Other.", "/workspace"), world.base))
    tree.record_call(ModelCallRecord("analyst", "t2", other.id, None, 40, 4, estimated=True))
    assert [x.status for x in (a, b, c, d, other)] == ["submitted"] * 5
    return {"a": a.id, "b": b.id, "c": c.id, "d": d.id, "other": other.id}


@pytest.mark.sandbox
def test_token_totals_over_a_known_tree(world):
    ids = grow_known_tree(world)

    def totals(**where):
        got = world.tree.tokens(**where)
        return got.spent, got.by_role, got.estimated

    # spent: every prompt and completion token of every call
    assert totals(attempt_id=ids["a"]) == (435 + 550, {"actor": 435, "analyst": 550}, False)
    assert totals(attempt_id=ids["b"]) == (440, {"actor": 440}, False)
    assert totals(attempt_id=ids["c"]) == (301, {"actor": 301}, False)
    assert totals(attempt_id=ids["d"]) == (199, {"actor": 199}, False)
    t1_actor = 435 + 440 + 301 + 199
    assert totals(task_id="t1") == (
        t1_actor + 550 + 880,
        {"actor": t1_actor, "analyst": 550, "reviewer": 880},
        False,
    )
    assert totals(task_id="t2") == (1045, {"actor": 1001, "analyst": 44}, True)
    assert totals() == (
        t1_actor + 1430 + 1045,
        {"actor": t1_actor + 1001, "analyst": 594, "reviewer": 880},
        True,
    )
    assert world.tree.tokens(task_id="t1").to_json()["spent"] == t1_actor + 1430

    # prefix-once where the rule is unambiguous:
    # a (a root): t1 10+100; t2 20+(130-110); t3 5+(170-150) = 110 + 40 + 25 = 175
    # d (branch after a's last turn, whose observation no call has seen yet): 4+(195-175) = 24
    # analyst and reviewer calls share no prefix: charged in full
    def once(**where):
        return world.tree.tokens(**where).prefix_once

    assert once(attempt_id=ids["a"]) == 175 + 550
    assert once(attempt_id=ids["d"]) == 24
    assert once(task_id="t2") == 1045


@pytest.mark.sandbox
def test_prefix_once_charges_a_shared_observation_once(world):
    """Shared prefixes are counted once (RolloutTree.tokens: "the shared
    prefix of a branch is charged once, to the attempt that produced it").

    The context at boundary k ends with turn k's observation. a's call 3 already paid for
    a's observation 2 (its prompt, 170, is the whole boundary-2 context), so b's first call
    owes only what lies beyond those 170 tokens; c's first prompt is the very same 130-token
    context a's call 2 was sent, so c owes only its own completions and what follows.
    """
    ids = grow_known_tree(world)

    def once(**where):
        return world.tree.tokens(**where).prefix_once

    # b: t4 7+(200-170); t5 3+(230-207) = 37 + 26
    assert once(attempt_id=ids["b"]) == 63
    # c: t2 9+(130-130); t3 2+(160-139) = 9 + 23
    assert once(attempt_id=ids["c"]) == 32
    # the tree's distinct tokens: a 175, b 63, c 32, d 24, analyst 550, reviewer 880
    assert once(task_id="t1") == 175 + 63 + 32 + 24 + 550 + 880


def fake_turn(attempt_id: int, index: int) -> Turn:
    return Turn(
        attempt_id=attempt_id,
        index=index,
        author="actor",
        text=f"turn {index}",
        calls=(),
        messages=({"role": "assistant", "content": f"turn {index}"},),
        checkpoint=f"layer{index}",
    )


def test_references_out_of_the_tree_are_tree_errors_naming_them(tmp_path):
    tree = RolloutTree(tmp_path / "sprout.db")
    tree.add_task("t1", {})
    root = tree.root("t1", [{"role": "system", "content": "s"}], "base0")
    for index in (1, 2):
        tree.commit_turn(fake_turn(root.id, index))
    branch = tree.branch(root, 1, starting_turn="```bash\nls\n```")
    assert tree.checkpoint(branch) == "layer1"
    assert tree.checkpoint(root, 0) == "base0"

    for bad in (3, -1, 99):
        with pytest.raises(TreeError) as raised:
            tree.branch(root, bad)
        assert str(bad) in str(raised.value)
        assert f"attempt {root.id}" in str(raised.value)
    with pytest.raises(TreeError, match=r"boundary 2 out of range for attempt 2 \(0\.\.1\)"):
        tree.branch(branch, 2)
    with pytest.raises(TreeError, match="attempt 12345"):
        tree.branch(12345, 0)
    with pytest.raises(TreeError, match="attempt 777"):
        tree.attempt(777)
    with pytest.raises(TreeError, match="boundary 5"):
        tree.messages(root, 5)
    with pytest.raises(TreeError, match="boundary 3"):
        tree.checkpoint(root, 3)
    # an out-of-range request left nothing behind
    assert [a.id for a in tree.attempts()] == [root.id, branch.id]
    # and TreeError is a ValueError, so callers validating input can catch it as one
    assert issubclass(TreeError, ValueError)


def test_a_boundary_is_checked_and_worded_one_way():
    """The tree's refusals and the reviewer's notes to its model share one rule."""
    assert [boundary_problem(4, b, 2) for b in (0, 1, 2)] == [None, None, None]
    for bad in (3, -1, True, "1", 1.0):
        assert boundary_problem(4, bad, 2) == f"boundary {bad!r} out of range for attempt 4 (0..2)"


@pytest.mark.parametrize(
    ("text", "ref"),
    [("3:2", CheckpointRef(3, 2)), ("3:0", CheckpointRef(3, 0)), ("12", CheckpointRef(12))],
)
def test_a_checkpoint_ref_reads_and_writes_attempt_colon_k(text, ref):
    assert CheckpointRef.parse(text) == ref
    assert str(ref) == text
    assert CheckpointRef.parse(str(ref)) == ref


@pytest.mark.parametrize("text", ["one:1", "3:two", "", ":2", "3:2:1", "3.0"])
def test_a_bad_checkpoint_ref_is_one_line_naming_it(text):
    with pytest.raises(TreeError) as raised:
        CheckpointRef.parse(text)
    assert str(raised.value) == (
        f"{text!r}: expected ATTEMPT:k, e.g. 3:2 for attempt 3 after turn 2"
    )


@pytest.mark.parametrize(
    ("status", "reward", "passed", "failed"),
    [
        ("submitted", 1.0, True, False),
        ("submitted", 0.0, False, True),
        ("limit", 0.5, False, True),  # partial credit is no pass
        ("submitted", 2.0, False, False),  # a reward file may say more than a pass: neither
        ("submitted", None, False, False),  # not verified yet
        ("error", None, False, False),  # never verified
        ("running", 0.0, False, False),  # not finished
    ],
)
def test_passed_and_failed_are_read_off_the_attempt(status, reward, passed, failed):
    attempt = Attempt(1, "t1", None, 0, "root", status=status, reward=reward)
    assert (attempt.passed, attempt.failed) == (passed, failed)
    assert passes(reward) == passed, "a verdict's reward reads the same"


def test_messages_are_a_private_copy(tmp_path):
    tree = RolloutTree(tmp_path / "sprout.db")
    tree.add_task("t1", {})
    root = tree.root("t1", [{"role": "system", "content": "s"}], "base0")
    tree.commit_turn(fake_turn(root.id, 1))
    messages = tree.messages(root)
    messages.append({"role": "user", "content": "mine"})
    messages[0]["content"] = "changed"
    assert json.dumps(tree.messages(root)) == json.dumps(
        [{"role": "system", "content": "s"}, {"role": "assistant", "content": "turn 1"}]
    )


def test_what_a_turn_changed_is_read_from_the_tree(tmp_path):
    """Recorded with the turn when it was sealed (JSON in the database); a turn stored before
    sprout recorded it (None) is answered by the reader of whoever holds the layers."""
    asked: list[tuple[str, str]] = []

    def read_changes(since: str, checkpoint: str) -> list[Change] | None:
        asked.append((since, checkpoint))
        return None if checkpoint == "layer3" else [Change("/w/old", "modified", 3)]

    tree = RolloutTree(tmp_path / "sprout.db", read_changes=read_changes)
    tree.add_task("t1", {})
    root = tree.root("t1", [{"role": "system", "content": "s"}], "base0")
    recorded = (Change("/w/new", "added", 12), Change("/w/gone", "deleted", 0))
    tree.commit_turn(replace(fake_turn(root.id, 1), changes=recorded))
    tree.commit_turn(fake_turn(root.id, 2))  # stored before changes were recorded
    tree.commit_turn(fake_turn(root.id, 3))  # and its layers are gone
    tree.commit_turn(replace(fake_turn(root.id, 4), changes=()))

    assert tree.own_turns(root)[0].changes == recorded, "a round trip through the database"
    assert tree.changes(root) == {
        1: recorded,
        2: (Change("/w/old", "modified", 3),),
        3: None,
        4: (),
    }
    assert asked == [("layer1", "layer2"), ("layer2", "layer3")]
    assert RolloutTree(tmp_path / "sprout.db").changes(root)[2] is None, "no reader"
