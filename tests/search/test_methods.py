"""Method names on the command line: what each means, and the errors for the rest."""

from __future__ import annotations

from typing import get_args

import pytest

from sprout.search.methods import MethodError, Schedule, parse_rounds
from sprout.search.registry import SCHEDULES, describe, needs_logprobs, parse_methods


def test_pass_at_k_and_sprout_defaults() -> None:
    passk, sprout = parse_methods("pass@4,sprout")
    assert (passk.name, passk.schedule, passk.roots, passk.stop_at_pass) == (
        "pass@4",
        "pass@k",
        4,
        False,
    )
    assert (sprout.schedule, sprout.roots, sprout.rounds, sprout.stop_at_pass) == (
        "sprout",
        1,
        (4, 3),
        True,
    )


def test_settings_apply_to_sprout_and_entropy() -> None:
    sprout, entropy = parse_methods(
        "sprout, entropy", roots=2, rounds=parse_rounds("2,2,1"), stop_at_pass=False
    )
    assert sprout.roots == entropy.roots == 2
    assert sprout.rounds == entropy.rounds == (2, 2, 1)
    assert needs_logprobs(entropy) and not needs_logprobs(sprout)
    assert not sprout.stop_at_pass


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pass@0", "K must be from 1 to 1024"),
        ("pass@99999999999999999999", "K must be from 1 to 1024"),
        ("best-of-n", "expected pass@K, pass@K-first, sprout, entropy or shepherd"),
        ("sprout,sprout", "sprout is given twice"),
        ("pass@4,", "an empty name"),
    ],
)
def test_bad_methods_are_named(text: str, message: str) -> None:
    with pytest.raises(MethodError, match=message):
        parse_methods(text)


def test_bad_rounds_and_roots() -> None:
    with pytest.raises(MethodError, match="--rounds '4,x'"):
        parse_rounds("4,x")
    with pytest.raises(MethodError, match="--rounds"):
        parse_methods("sprout", rounds=(4, 0))
    with pytest.raises(MethodError, match="--roots"):
        parse_methods("sprout", roots=0)


def test_every_schedule_has_one_entry_that_names_describes_and_plays_it() -> None:
    """One table from name to schedule: each schedule a `Method` can store is in it, and
    each of its names parses to a method of that schedule."""
    assert set(SCHEDULES) == set(get_args(Schedule))
    for schedule, entry in SCHEDULES.items():
        for form in entry.forms:
            (method,) = parse_methods(form.replace("K", "3"))
            assert method.schedule == schedule
            assert describe(method) and callable(entry.play)


STOP = "; stop at the first pass"
DESCRIBED = {
    "pass@3": "3 independent roots",
    "pass@3-first": "3 independent roots" + STOP,
    "sprout": "1 root(s), then rounds of 4, 3 reviewer-guided branches" + STOP,
    "entropy": "1 root(s), then rounds of 4, 3 unguided, highest entropy branches" + STOP,
    "shepherd": "1 root(s), then one round of 7 branches a supervisor plans from the trace "
    "alone (no verifier)" + STOP,
    "train-rollouts": "2 roots and 3 children per root (a group of 8); guided children when "
    "every root fails, else unguided from reviewer-chosen boundaries",
}
"""What `sprout run` says each method will do, word for word."""


@pytest.mark.parametrize(("text", "described"), DESCRIBED.items())
def test_each_method_is_described_as_the_run_tells_it(text: str, described: str) -> None:
    (method,) = parse_methods(text)
    assert describe(method) == described


def test_an_unknown_method_lists_every_name() -> None:
    with pytest.raises(MethodError) as raised:
        parse_methods("best-of-n")
    assert str(raised.value) == (
        "--method 'best-of-n': expected pass@K, pass@K-first, sprout, entropy or shepherd "
        "(search), or train-rollouts (training)"
    )


def test_only_entropy_and_the_entropy_selector_need_logprobs() -> None:
    methods = parse_methods("pass@2,sprout,entropy,shepherd,train-rollouts")
    assert [needs_logprobs(m) for m in methods] == [False, False, True, False, False]
    (chosen,) = parse_methods("train-rollouts", selector="entropy")
    assert needs_logprobs(chosen)
