"""The boundary pickers of unguided branches, which the entropy schedule and the training
schedule's selectors share: their rankings, and how a round takes from them."""

from __future__ import annotations

from pathlib import Path

from sprout.roles import BranchPlan
from sprout.search.boundaries import highest_entropy, take, uniform
from sprout.tree import Attempt, RolloutTree, Turn


def a_tree(tmp_path: Path, *entropies: list[float | None]) -> tuple[RolloutTree, list[Attempt]]:
    """One root per list, whose actor turns have those entropies (None: no log-probabilities)."""
    tree = RolloutTree(tmp_path / "sprout.db")
    tree.add_task("t1", {})
    roots = [tree.root("t1", [{"role": "system", "content": "s"}], "base0") for _ in entropies]
    for root, values in zip(roots, entropies, strict=True):
        for index, entropy in enumerate(values, start=1):
            tree.commit_turn(
                Turn(root.id, index, "actor", "t", (), (), f"layer{index}", entropy=entropy)
            )
    return tree, roots


def test_the_least_certain_turns_come_first_ties_to_the_older_attempt_and_earlier_turn(
    tmp_path: Path,
) -> None:
    tree, (first, second) = a_tree(tmp_path, [0.5, 2.0, None], [2.0, 0.1])
    ranked = highest_entropy(tree, [second, first])
    assert [(p.parent_id, p.boundary) for p in ranked] == [
        (first.id, 1),
        (second.id, 0),
        (first.id, 0),
        (second.id, 1),
    ]
    assert ranked[0] == BranchPlan(first.id, 1, None, "turn 2 has entropy 2.000")
    assert highest_entropy(tree, []) == []


def test_no_log_probabilities_rank_nothing(tmp_path: Path) -> None:
    tree, roots = a_tree(tmp_path, [None, None])
    assert highest_entropy(tree, roots) == []


def plans(*points: tuple[int, int]) -> list[BranchPlan]:
    return [BranchPlan(parent, boundary, None, "why") for parent, boundary in points]


def test_a_round_takes_the_untried_best_first_and_cycles_when_short() -> None:
    ranked = plans((1, 2), (1, 0), (3, 1))
    assert take(ranked, 2) == ranked[:2]
    assert take(ranked, 2, tried={(1, 2)}) == [ranked[1], ranked[2]]
    assert take(ranked, 5, tried={(1, 0)}) == [
        ranked[0],
        ranked[2],
        ranked[0],
        ranked[2],
        ranked[0],
    ]
    # every point tried: they are taken again rather than none
    assert take(ranked, 4, tried={(1, 2), (1, 0), (3, 1)}) == [*ranked, ranked[0]]


def test_uniform_draws_the_same_from_the_same_seed_and_never_the_last_boundary(
    tmp_path: Path,
) -> None:
    tree, (root,) = a_tree(tmp_path, [None, None, None, None])
    drawn = uniform(tree, root, 12, "7:t1:1")
    assert drawn == uniform(tree, root, 12, "7:t1:1")
    assert {p.boundary for p in drawn} <= {0, 1, 2, 3}
    assert drawn[0].reason == f"uniform: boundary {drawn[0].boundary} of 0..3"
    assert [p.boundary for p in uniform(tree, root, 12, "7:t1:2")] != [p.boundary for p in drawn]
