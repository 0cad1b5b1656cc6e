"""Tree credit against hand-computed values: all-fail, all-pass and mixed groups, every mode.

The mixed group (ids, parent at boundary, reward):

    1 root 0        2 root 0
    3 of 1 at 1: 1  4 of 1 at 1: 0  5 of 1 at 0: 1  6 of 2 at 2: 1

Rewards 0 0 1 0 1 1: mean 1/2, sample std sqrt(6 * 1/4 / 5) = sqrt(0.3).
"""

from __future__ import annotations

import math

import pytest

from sprout.train.credit import CREDITS, CreditError, GroupCredit, Leaf

MIXED = [
    Leaf(1, None, 0, 0.0),
    Leaf(2, None, 0, 0.0),
    Leaf(3, 1, 1, 1.0),
    Leaf(4, 1, 1, 0.0),
    Leaf(5, 1, 0, 1.0),
    Leaf(6, 2, 2, 1.0),
]


def approx(value: float) -> object:
    return pytest.approx(value, rel=1e-5, abs=1e-9)


@pytest.mark.parametrize("mode", CREDITS)
@pytest.mark.parametrize("reward", [0.0, 1.0])
def test_all_fail_and_all_pass_groups_give_zero_everywhere(mode: str, reward: float) -> None:
    leaves = [Leaf(leaf.attempt_id, leaf.parent_id, leaf.boundary, reward) for leaf in MIXED]
    credit = GroupCredit(leaves, mode)  # type: ignore[arg-type]
    assert credit.zero_variance
    assert all(credit(leaf.attempt_id, turn) == 0.0 for leaf in leaves for turn in (1, 2, 3))


def test_grpo_normalises_by_the_sample_std() -> None:
    credit = GroupCredit(MIXED, "grpo")
    z = 0.5 / math.sqrt(0.3)  # 0.912871
    assert credit(3, 2) == approx(z) and credit(6, 3) == approx(z)
    assert credit(1, 1) == approx(-z) and credit(4, 2) == approx(-z)


def test_grpo_two_rollouts_one_pass() -> None:
    credit = GroupCredit([Leaf(1, None, 0, 1.0), Leaf(2, None, 0, 0.0)], "grpo")
    # mean 1/2, std sqrt(2 * 1/4 / 1) = 0.7071: +-0.7071
    assert credit(1, 1) == approx(0.5 / math.sqrt(0.5))
    assert credit(2, 1) == approx(-0.5 / math.sqrt(0.5))


def test_drgrpo_only_subtracts_the_mean() -> None:
    credit = GroupCredit(MIXED, "drgrpo")
    assert [credit(leaf.attempt_id, 5) for leaf in MIXED] == [-0.5, -0.5, 0.5, -0.5, 0.5, 0.5]


def test_tree_gives_a_shared_turn_the_mean_of_the_leaves_below_it() -> None:
    credit = GroupCredit(MIXED, "tree")
    # Root 1's turn 1 is held by 1, 3 and 4 (5 starts at boundary 0): 1/3 - 1/2.
    assert credit(1, 1) == approx(-1 / 6)
    # Its turn 2 only by itself.
    assert credit(1, 2) == approx(-0.5)
    # Root 2's turns 1 and 2 are held by 2 and 6: mean 1/2, minus 1/2.
    assert credit(2, 1) == approx(0.0) and credit(2, 2) == approx(0.0)
    assert credit(2, 3) == approx(-0.5)
    # A branch's own turns: only itself below them.
    assert credit(3, 2) == approx(0.5) and credit(4, 2) == approx(-0.5)
    assert credit(5, 1) == approx(0.5)


def test_tree_follows_grandchildren_up_to_the_smallest_boundary() -> None:
    # 7 branches 3 at boundary 1, before 3's own turns: it holds root 1's turn 1 only.
    leaves = [*MIXED, Leaf(7, 3, 1, 1.0)]
    credit = GroupCredit(leaves, "tree")
    mean = 4 / 7
    assert credit(1, 1) == approx((0 + 1 + 0 + 1) / 4 - mean)  # 1, 3, 4, 7
    assert credit(3, 2) == approx(1.0 - mean)  # 7 does not hold 3's turn 2


def test_sibling_contrasts_branches_with_the_parent_and_each_other() -> None:
    credit = GroupCredit(MIXED, "sibling")
    assert credit(1, 1) == 0.0 and credit(2, 1) == 0.0  # roots against roots: 0 - 0
    assert credit(3, 2) == approx(1 - 1 / 3)  # 3, 4 and parent 1: mean 1/3
    assert credit(4, 2) == approx(0 - 1 / 3)
    assert credit(5, 1) == approx(0.5)  # alone at boundary 0 with parent 1
    assert credit(6, 3) == approx(0.5)  # alone at boundary 2 with parent 2


def test_bad_modes_and_groups_are_named() -> None:
    with pytest.raises(CreditError, match="credit 'ppo': expected one of grpo"):
        GroupCredit(MIXED, "ppo")  # type: ignore[arg-type]
    with pytest.raises(CreditError, match="at least one rollout"):
        GroupCredit([], "grpo")
    with pytest.raises(CreditError, match="attempt 9 is not in this group"):
        GroupCredit(MIXED, "grpo")(9, 1)
