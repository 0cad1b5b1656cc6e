"""Method names on the command line: what each means, and the errors for the rest."""

from __future__ import annotations

import pytest

from sprout.search.methods import MethodError, parse_methods, parse_rounds


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
    assert entropy.needs_logprobs and not sprout.needs_logprobs
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
