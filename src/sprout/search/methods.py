"""Search methods as the command line names them: `pass@4`, `pass@4-first`, `sprout`,
`entropy`, `shepherd`, and the training schedule `train-rollouts`.

A method is a schedule plus its settings; its name is what the store records
on every attempt and model call, so each method's tokens and turns are
counted apart even when several run on the same task in one run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from sprout.errors import SproutError

DEFAULT_ROUNDS = (4, 3)
TRAINING_ROOTS = 2
TRAINING_CHILDREN = 3

Schedule = Literal["pass@k", "sprout", "entropy", "shepherd", "train-rollouts"]
MAX_K = 1024
"""The most roots pass@K takes: past it a run would not end in any useful time."""
Selector = Literal["reviewer", "heuristic", "uniform", "entropy"]
"""Who picks the boundary of an unguided training child (see `sprout.search.training`)."""
SELECTORS: tuple[Selector, ...] = ("reviewer", "heuristic", "uniform", "entropy")


class MethodError(SproutError, ValueError):
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
    children: int = 0
    """train-rollouts only: children per root."""
    selector: Selector = "reviewer"
    """train-rollouts only: who picks an unguided child's boundary."""
    seed: int = 0
    """train-rollouts only: the seed of the `uniform` selector."""

    @property
    def needs_logprobs(self) -> bool:
        return self.schedule == "entropy" or (
            self.schedule == "train-rollouts" and self.selector == "entropy"
        )

    @property
    def group_size(self) -> int:
        """Rollouts per task of pass@k and train-rollouts (a GRPO group); sprout and entropy
        add branches until one passes, so theirs varies."""
        return self.roots * (1 + self.children)

    def to_json(self) -> dict[str, object]:
        """The settings a resume must match; the training fields only for train-rollouts, so
        that the settings stored by a run of another method read back unchanged."""
        data: dict[str, object] = self.__dict__ | {"rounds": list(self.rounds)}
        if self.schedule != "train-rollouts":
            for key in ("children", "selector", "seed"):
                data.pop(key)
        return data

    def describe(self) -> str:
        if self.schedule == "pass@k":
            stop = "; stop at the first pass" if self.stop_at_pass else ""
            return f"{self.roots} independent roots{stop}"
        if self.schedule == "shepherd":
            return (
                f"{self.roots} root(s), then one round of {sum(self.rounds)} branches a "
                "supervisor plans from the trace alone (no verifier); stop at the first pass"
            )
        if self.schedule == "train-rollouts":
            return (
                f"{self.roots} roots and {self.children} children per root (a group of "
                f"{self.group_size}); guided children when every root fails, else unguided "
                f"from {self.selector}-chosen boundaries"
            )
        rounds = ", ".join(str(size) for size in self.rounds)
        stop = "stop at the first pass" if self.stop_at_pass else "run every round"
        kind = "reviewer-guided" if self.schedule == "sprout" else "unguided, highest entropy"
        return f"{self.roots} root(s), then rounds of {rounds} {kind} branches; {stop}"


def training_method(
    *,
    roots: int = TRAINING_ROOTS,
    children: int | None = None,
    group_size: int | None = None,
    selector: str = "reviewer",
    seed: int = 0,
    name: str = "train-rollouts",
) -> Method:
    """The training schedule: `roots` roots and `children` children per root (default 3), or
    as many children as make `group_size` rollouts per task (roots x (1 + children))."""
    if roots < 1:
        raise MethodError(f"--roots: expected at least 1, got {roots}")
    if group_size is not None:
        per_root, extra = divmod(group_size, roots)
        if extra or per_root < 2:
            raise MethodError(
                f"--group-size {group_size}: expected a multiple of --roots ({roots}) with at "
                f"least one child per root, e.g. {roots * (1 + TRAINING_CHILDREN)}"
            )
        if children is not None and children != per_root - 1:
            raise MethodError(
                f"--group-size {group_size} and --children {children} disagree: {roots} roots "
                f"with {children} children each make a group of {roots * (1 + children)}"
            )
        children = per_root - 1
    children = TRAINING_CHILDREN if children is None else children
    if children < 1:
        raise MethodError(f"--children: expected at least 1, got {children}")
    if selector not in SELECTORS:
        raise MethodError(f"--selector {selector!r}: expected one of {', '.join(SELECTORS)}")
    return Method(
        name,
        "train-rollouts",
        roots=roots,
        stop_at_pass=False,
        children=children,
        selector=selector,  # narrowed to a Selector by the check against SELECTORS
        seed=seed,
    )


def parse_methods(
    text: str,
    *,
    roots: int | None = None,
    rounds: tuple[int, ...] = DEFAULT_ROUNDS,
    stop_at_pass: bool = True,
    children: int | None = None,
    group_size: int | None = None,
    selector: str = "reviewer",
    seed: int = 0,
) -> tuple[Method, ...]:
    """`pass@4,sprout` as methods; `roots` (default 1), `rounds` and `stop_at_pass` set sprout
    and entropy; `roots` (default 2), `children`, `group_size`, `selector` and `seed` set
    train-rollouts."""
    if roots is not None and roots < 1:
        raise MethodError(f"--roots: expected at least 1, got {roots}")
    if not rounds or any(size < 1 for size in rounds):
        raise MethodError(f"--rounds: expected branch counts of at least 1, got {rounds}")
    methods: list[Method] = []
    for name in (part.strip() for part in text.split(",")):
        if not name:
            raise MethodError(f"--method {text!r}: an empty name; expected e.g. pass@4,sprout")
        if match := re.fullmatch(r"pass@(\d+)(-first)?", name):
            k = int(match.group(1))
            if not 1 <= k <= MAX_K:
                raise MethodError(f"--method {name}: K must be from 1 to {MAX_K}")
            method = Method(name, "pass@k", roots=k, stop_at_pass=bool(match.group(2)))
        elif name in ("sprout", "entropy"):
            method = Method(name, name, roots=roots or 1, rounds=rounds, stop_at_pass=stop_at_pass)
        elif name == "shepherd":
            # Shepherd forks once, with the branch budget SPROUT's rounds add up to.
            method = Method(name, "shepherd", roots=roots or 1, rounds=(sum(rounds),))
        elif name == "train-rollouts":
            method = training_method(
                roots=roots or TRAINING_ROOTS,
                children=children,
                group_size=group_size,
                selector=selector,
                seed=seed,
            )
        else:
            raise MethodError(
                f"--method {name!r}: expected pass@K, pass@K-first, sprout, entropy or "
                "shepherd (search), or train-rollouts (training)"
            )
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
