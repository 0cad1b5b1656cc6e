"""Search methods as the command line names them: `pass@4`, `sprout`, `entropy`.

A method is a schedule plus its settings; its name is what the store records
on every attempt and model call, so each method's tokens and turns are
counted apart even when several run on the same task in one run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

DEFAULT_ROUNDS = (4, 3)

Schedule = Literal["pass@k", "sprout", "entropy"]


class MethodError(ValueError):
    """A `--method` (or its settings) that names no schedule sprout has."""


@dataclass(frozen=True)
class Method:
    """One schedule with its settings; `name` labels its attempts in the store."""

    name: str
    schedule: Schedule
    roots: int = 1
    """Independent attempts from the untouched task (`k` for pass@k)."""
    rounds: tuple[int, ...] = ()
    """Branches per round after the roots (sprout and entropy only)."""
    stop_at_pass: bool = True
    """End the search, and the attempts still running, at the first pass (not for pass@k,
    whose Pass@1 needs every root)."""

    @property
    def needs_logprobs(self) -> bool:
        return self.schedule == "entropy"

    def describe(self) -> str:
        if self.schedule == "pass@k":
            return f"{self.roots} independent roots"
        rounds = ", ".join(str(size) for size in self.rounds)
        stop = "stop at the first pass" if self.stop_at_pass else "run every round"
        kind = "reviewer-guided" if self.schedule == "sprout" else "unguided, highest entropy"
        return f"{self.roots} root(s), then rounds of {rounds} {kind} branches; {stop}"


def parse_methods(
    text: str,
    *,
    roots: int = 1,
    rounds: tuple[int, ...] = DEFAULT_ROUNDS,
    stop_at_pass: bool = True,
) -> tuple[Method, ...]:
    """`pass@4,sprout` as methods; `roots`, `rounds` and `stop_at_pass` set sprout and entropy."""
    if roots < 1:
        raise MethodError(f"--roots: expected at least 1, got {roots}")
    if not rounds or any(size < 1 for size in rounds):
        raise MethodError(f"--rounds: expected branch counts of at least 1, got {rounds}")
    methods: list[Method] = []
    for name in (part.strip() for part in text.split(",")):
        if not name:
            raise MethodError(f"--method {text!r}: an empty name; expected e.g. pass@4,sprout")
        if match := re.fullmatch(r"pass@(\d+)", name):
            k = int(match.group(1))
            if k < 1:
                raise MethodError(f"--method {name}: k must be at least 1")
            method = Method(name, "pass@k", roots=k, stop_at_pass=False)
        elif name in ("sprout", "entropy"):
            method = Method(name, name, roots=roots, rounds=rounds, stop_at_pass=stop_at_pass)
        else:
            raise MethodError(f"--method {name!r}: expected pass@K, sprout or entropy")
        if any(known.name == name for known in methods):
            raise MethodError(f"--method {text!r}: {name} is given twice")
        methods.append(method)
    return tuple(methods)


def parse_rounds(text: str) -> tuple[int, ...]:
    """`4,3` as (4, 3): branches per round."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise MethodError(f"--rounds {text!r}: expected branch counts like 4,3") from None
