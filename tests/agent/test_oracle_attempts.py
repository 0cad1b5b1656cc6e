"""oracle and oracle-noise attempts on a real sandbox: stored, branched, obeyed."""

from __future__ import annotations

from sprout.models.oracle import Noise, OracleModel, OracleNoiseModel, Step
from tests.support.world import World

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
    model = OracleNoiseModel(STEPS, noise=Noise(p=1.0, seed=1))  # it spoils every step it may
    actor = world.actor(model)
    root = actor.run(world.root(actor))
    assert root.status == "submitted"
    # Step 1 (no wrong variant) is skipped, step 2 runs, step 3 is skipped: it submits early.
    assert [t.calls[0].command for t in world.tree.own_turns(root)] == [
        STEPS[1].command,
        "echo SPROUT_SUBMIT",
    ]
    assert "OK" not in world.shell(world.tree.checkpoint(root), CHECK)

    # A branch from checkpoint 0 starts with step 1; the model goes on to step 2, and
    # draws its noise there too: with p=1 it plays the wrong variant, then skips step 3.
    first = actor.run(
        world.tree.branch(root, 0, f"Package first.\n\n```bash\n{STEPS[0].command}\n```")
    )
    turns = world.tree.own_turns(first)
    assert [t.author for t in turns] == ["reviewer", "actor", "actor"]
    assert [t.calls[0].command for t in turns] == [
        STEPS[0].command,
        STEPS[1].wrong[0],
        "echo SPROUT_SUBMIT",
    ]
    assert "OK" not in world.shell(world.tree.checkpoint(first), CHECK)

    # Branches that correct one step each, from the turn before each mistake, compose.
    second = actor.run(world.tree.branch(first, 1, f"```bash\n{STEPS[1].command}\n```"))
    assert [t.calls[0].command for t in world.tree.own_turns(second)][-1] == "echo SPROUT_SUBMIT"
    third = actor.run(world.tree.branch(second, 2, f"```bash\n{STEPS[2].command}\n```"))
    assert third.status == "submitted"
    assert world.shell(world.tree.checkpoint(third), CHECK) == GOOD
    assert [t.attempt_id for t in world.tree.path(third)][:3] == [first.id, second.id, third.id]
