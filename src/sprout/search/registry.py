"""Every schedule by name: the one table from a `--method` name to the schedule that plays it.

An entry of `SCHEDULES` says which `--method` names are its own and the `Method` each names,
how `sprout run` describes it, whether it needs the model's log-probabilities, and how it
is played. `parse_methods`, `describe`, `needs_logprobs` and `play` all read the table, so
a new schedule is one more entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sprout.search.methods import (
    DEFAULT_ROUNDS,
    MAX_K,
    TRAINING_ROOTS,
    Method,
    MethodError,
    Schedule,
    training_method,
)
from sprout.search.schedule_roles import ScheduleRoles
from sprout.search.schedules import run_entropy, run_pass_at_k, run_shepherd, run_sprout
from sprout.search.task_search import Search
from sprout.search.train_rollouts import run_training


@dataclass(frozen=True)
class MethodSettings:
    """The command line's settings of the methods (`parse_methods`'s keywords, checked)."""

    roots: int | None
    rounds: tuple[int, ...]
    stop_at_pass: bool
    children: int | None
    group_size: int | None
    selector: str
    seed: int


@dataclass(frozen=True)
class ScheduleEntry:
    """One schedule: its names, its methods, its description and how it is played."""

    forms: tuple[str, ...]
    """Its `--method` names, as the error for an unknown one lists them."""
    method: Callable[[str, MethodSettings], Method | None]
    """The method a `--method` name names, with the settings; None for another's name."""
    describe: Callable[[Method], str]
    """What `sprout run` says a pair of this schedule will do."""
    play: Callable[[Search, ScheduleRoles], None]
    """Play the schedule (again, after a resume: it continues from the run database)."""
    needs_logprobs: Callable[[Method], bool] = lambda method: False
    """Whether its method reads per-token log-probabilities (refused for a model without)."""
    training: bool = False
    """A training schedule (`sprout train`'s), not a search to compare."""


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
    settings = MethodSettings(roots, rounds, stop_at_pass, children, group_size, selector, seed)
    methods: list[Method] = []
    for name in (part.strip() for part in text.split(",")):
        if not name:
            raise MethodError(f"--method {text!r}: an empty name; expected e.g. pass@4,sprout")
        method = _method(name, settings)
        if any(known.name == name for known in methods):
            raise MethodError(f"--method {text!r}: {name} is given twice")
        methods.append(method)
    return tuple(methods)


def describe(method: Method) -> str:
    """What a pair of `method` will do, in one line."""
    return SCHEDULES[method.schedule].describe(method)


def needs_logprobs(method: Method) -> bool:
    """Whether `method` reads the model's per-token log-probabilities."""
    return SCHEDULES[method.schedule].needs_logprobs(method)


def play(method: Method, search: Search, roles: ScheduleRoles) -> None:
    """Play `method`'s schedule on `search`, with the roles it asks `roles` for."""
    SCHEDULES[method.schedule].play(search, roles)


def _method(name: str, settings: MethodSettings) -> Method:
    """The method `name` names; MethodError listing every name when no schedule has it."""
    for entry in SCHEDULES.values():
        method = entry.method(name, settings)
        if method is not None:
            return method
    search = [form for e in SCHEDULES.values() if not e.training for form in e.forms]
    training = [form for e in SCHEDULES.values() if e.training for form in e.forms]
    raise MethodError(
        f"--method {name!r}: expected {', '.join(search[:-1])} or {search[-1]} (search), "
        f"or {' or '.join(training)} (training)"
    )


def _pass_at_k(name: str, settings: MethodSettings) -> Method | None:
    if not (match := re.fullmatch(r"pass@(\d+)(-first)?", name)):
        return None
    k = int(match.group(1))
    if not 1 <= k <= MAX_K:
        raise MethodError(f"--method {name}: K must be from 1 to {MAX_K}")
    return Method(name, "pass@k", roots=k, stop_at_pass=bool(match.group(2)))


def _describe_pass_at_k(method: Method) -> str:
    stop = "; stop at the first pass" if method.stop_at_pass else ""
    return f"{method.roots} independent roots{stop}"


def _rounds(schedule: Schedule) -> Callable[[str, MethodSettings], Method | None]:
    """The methods of a schedule of roots then rounds, named by the schedule's own name."""

    def method(name: str, settings: MethodSettings) -> Method | None:
        if name != schedule:
            return None
        roots, rounds = settings.roots or 1, settings.rounds
        return Method(
            name, schedule, roots=roots, rounds=rounds, stop_at_pass=settings.stop_at_pass
        )

    return method


def _describe_rounds(kind: str) -> Callable[[Method], str]:
    """How a schedule of roots then rounds of `kind` branches is described."""

    def describe(method: Method) -> str:
        rounds = ", ".join(str(size) for size in method.rounds)
        stop = "stop at the first pass" if method.stop_at_pass else "run every round"
        return f"{method.roots} root(s), then rounds of {rounds} {kind} branches; {stop}"

    return describe


def _shepherd(name: str, settings: MethodSettings) -> Method | None:
    if name != "shepherd":
        return None
    # Shepherd forks once, with the branch budget SPROUT's rounds add up to.
    return Method(name, "shepherd", roots=settings.roots or 1, rounds=(sum(settings.rounds),))


def _describe_shepherd(method: Method) -> str:
    return (
        f"{method.roots} root(s), then one round of {sum(method.rounds)} branches a "
        "supervisor plans from the trace alone (no verifier); stop at the first pass"
    )


def _training(name: str, settings: MethodSettings) -> Method | None:
    if name != "train-rollouts":
        return None
    return training_method(
        roots=settings.roots or TRAINING_ROOTS,
        children=settings.children,
        group_size=settings.group_size,
        selector=settings.selector,
        seed=settings.seed,
    )


def _describe_training(method: Method) -> str:
    return (
        f"{method.roots} roots and {method.children} children per root (a group of "
        f"{method.group_size}); guided children when every root fails, else unguided "
        f"from {method.selector}-chosen boundaries"
    )


SCHEDULES: dict[Schedule, ScheduleEntry] = {
    "pass@k": ScheduleEntry(
        ("pass@K", "pass@K-first"),
        _pass_at_k,
        _describe_pass_at_k,
        lambda search, roles: run_pass_at_k(search),
    ),
    "sprout": ScheduleEntry(
        ("sprout",),
        _rounds("sprout"),
        _describe_rounds("reviewer-guided"),
        lambda search, roles: run_sprout(search, *roles.analyst_and_reviewer()),
    ),
    "entropy": ScheduleEntry(
        ("entropy",),
        _rounds("entropy"),
        _describe_rounds("unguided, highest entropy"),
        lambda search, roles: run_entropy(search),
        needs_logprobs=lambda method: True,
    ),
    "shepherd": ScheduleEntry(
        ("shepherd",),
        _shepherd,
        _describe_shepherd,
        lambda search, roles: run_shepherd(search, roles.supervisor()),
    ),
    "train-rollouts": ScheduleEntry(
        ("train-rollouts",),
        _training,
        _describe_training,
        lambda search, roles: run_training(search, *roles.analyst_and_reviewer()),
        needs_logprobs=lambda method: method.selector == "entropy",
        training=True,
    ),
}
"""Every schedule by the name `Method.schedule` stores, in the order the error for an
unknown `--method` lists their names."""
