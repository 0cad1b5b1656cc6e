"""oracle and oracle-noise attempts on a real sandbox: stored, branched, obeyed."""

from __future__ import annotations

from sprout.models.oracle import OracleModel, OracleNoiseModel, Step
from tests.agent.helpers import World

STEPS = [
    Step("mkdir -p pkg && touch pkg/__init__.py"),
    Step("echo 'VALUE = 1' > pkg/conf.py", wrong=("echo 'VALUE = 0' > pkg/conf.py",)),
    Step("echo 'from pkg.conf import VALUE' > pkg/main.py"),
]
CHECK = "(cat pkg/conf.py pkg/main.py && test -f pkg/__init__.py && echo OK) 2>&1; true"
GOOD = "VALUE = 1\nfrom pkg.conf import VALUE\nOK\n"


def test_the_oracle_solves_the_task_and_is_stored_as_estimated(world: World):
    actor = world.actor(OracleModel(STEPS))
    attempt = actor.run(world.root(actor))
    assert attempt.status == "submitted"
    turns = world.tree.own_turns(attempt)
    assert [t.calls[0].command for t in turns[:3]] == [s.command for s in STEPS]
    assert all(t.estimated for t in turns)
    assert world.tree.tokens(attempt_id=attempt.id).estimated is True
    assert world.shell(world.tree.checkpoint(attempt), CHECK) == GOOD


def test_corrective_branches_repair_oracle_noise_mistakes(world: World):
    model = OracleNoiseModel(STEPS, p=1.0, seed=1)  # every step it may spoil, it spoils
    actor = world.actor(model)
    root = actor.run(world.root(actor))
    assert root.status == "submitted"
    # Step 1 (no wrong variant) is skipped, step 2 runs, step 3 is skipped: it submits early.
    assert [t.calls[0].command for t in world.tree.own_turns(root)] == [
        STEPS[1].command,
        "echo SPROUT_SUBMIT",
    ]
    assert "OK" not in world.shell(world.tree.checkpoint(root), CHECK)

    # A branch from checkpoint 0 starts with step 1; the model obeys and plays step 2.
    first = actor.run(
        world.tree.branch(root, 0, f"Package first.\n\n```bash\n{STEPS[0].command}\n```")
    )
    turns = world.tree.own_turns(first)
    assert [t.author for t in turns] == ["reviewer", "actor", "actor"]
    assert [t.calls[0].command for t in turns] == [
        STEPS[0].command,
        STEPS[1].command,
        "echo SPROUT_SUBMIT",
    ]
    assert "OK" not in world.shell(world.tree.checkpoint(first), CHECK)

    # A branch of that branch, just before its early submit, adds step 3 and passes.
    second = actor.run(world.tree.branch(first, 2, f"```bash\n{STEPS[2].command}\n```"))
    assert second.status == "submitted"
    assert world.shell(world.tree.checkpoint(second), CHECK) == GOOD
    assert [t.attempt_id for t in world.tree.path(second)][:2] == [first.id, first.id]
