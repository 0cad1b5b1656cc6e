"""Search methods as the command line names them: `pass@4`, `pass@4-first`, `sprout`,
`entropy`, `shepherd`, and the training schedule `train-rollouts`.

A method is a schedule plus its settings; its name is what the tree records
on every attempt and model call, so each method's tokens and turns are
counted apart even when several run on the same task in one run. Which names
`--method` takes, and the schedule each names, is `sprout.search.registry`'s table.
"""

from __future__ import annotations

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
"""Who picks the boundary of an unguided training child (see `sprout.search.train_rollouts`)."""
SELECTORS: tuple[Selector, ...] = ("reviewer", "heuristic", "uniform", "entropy")


class MethodError(SproutError, ValueError):
    """A `--method` (or its settings) that names no schedule sprout has."""


@dataclass(frozen=True)
class Method:
    """One schedule with its settings; `name` labels its attempts in the tree."""

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
    known = next((s for s in SELECTORS if s == selector), None)
    if known is None:
        raise MethodError(f"--selector {selector!r}: expected one of {', '.join(SELECTORS)}")
    return Method(
        name,
        "train-rollouts",
        roots=roots,
        stop_at_pass=False,
        children=children,
        selector=known,
        seed=seed,
    )


def parse_rounds(text: str) -> tuple[int, ...]:
    """`4,3` as (4, 3): branches per round."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise MethodError(f"--rounds {text!r}: expected branch counts like 4,3") from None
