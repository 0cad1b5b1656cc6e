"""Per-test results and the diagnostics of one verifier run, stored as plain JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, cast

from sprout.errors import SproutError

Outcome = Literal["passed", "failed", "error", "skipped"]
OUTCOMES: tuple[Outcome, ...] = ("passed", "failed", "error", "skipped")


class ResultsError(SproutError, ValueError):
    """Verifier output or settings that cannot be read; the message names the file or field."""


class VerifierSetupError(ResultsError):
    """What the verifier needs from this machine (a tool fetched from the package index)
    could not be had: the machine's fault, never the attempt's. A ResultsError, so that
    callers end the attempt `error` with fault `verifier`, not as a failed attempt."""


class MissingResults(ResultsError):
    """The verifier ran to its end but left no result where the task requires one (no
    reward file for `results = "reward"`, no report of a named per-test format, or one
    that cannot be read): no verdict, so the verifier's fault, never the attempt's, as
    Harbor counts a missing reward file."""


@dataclass(frozen=True)
class Provenance:
    """Where a verdict came from: the evidence that decided the reward and, beside a reward
    file or the exit code, the per-test results shown with it.

    Stored as one string (`to_json`), the form runs have always stored: the kind, then ":"
    and its files joined by ",", then "+" and the per-test results' provenance:
    "reward:/logs/verifier/reward.txt+junit:/logs/a.xml,/logs/b.xml", "pytest-rA",
    "exit-code+tap". This class is the only code that writes or reads it.
    """

    kind: str
    """"reward" (a reward file), "exit-code", a per-test format ("ctrf", "junit",
    "pytest-rA", "pytest-counts", "tap"); runs stored before a verifier's fault ended the
    attempt `error` also hold
    "verifier-error" (a verifier that did not run, since recorded as the attempt's error)."""
    files: tuple[str, ...] = ()
    """The verifier's files the evidence was read from; none for the log or the exit code."""
    tests: Provenance | None = None
    """The per-test results beside a reward file or the exit code, when there were any."""

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every kind of evidence, the one that decided the reward first."""
        return (self.kind, *(self.tests.kinds if self.tests else ()))

    def to_json(self) -> str:
        head = f"{self.kind}:{','.join(self.files)}" if self.files else self.kind
        return f"{head}+{self.tests.to_json()}" if self.tests else head

    @classmethod
    def from_json(cls, data: object) -> Provenance:
        """Read what `to_json` wrote (any string parses: a kind sprout does not know is
        kept as it is)."""
        if not isinstance(data, str):
            raise ResultsError(f"provenance: expected a string, got {data!r}")
        head, plus, rest = data.partition("+")
        kind, colon, files = head.partition(":")
        return cls(
            kind, tuple(files.split(",")) if colon else (), cls.from_json(rest) if plus else None
        )


@dataclass(frozen=True)
class TestResult:
    """One test as a results format reported it."""

    __test__ = False  # a dataclass named Test*, not a pytest test class

    name: str
    """The test's id: "file::name" or "classname::name" where the format gives them."""
    outcome: Outcome
    message: str = ""
    """Why it failed, errored or was skipped; empty for a plain pass."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"test name: expected a non-empty string, got {self.name!r}")
        if self.outcome not in OUTCOMES:
            raise ValueError(
                f"test {self.name!r}: outcome {self.outcome!r} is not one of {OUTCOMES}"
            )

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "outcome": self.outcome, "message": self.message}

    @classmethod
    def from_json(cls, data: object, where: str = "test") -> TestResult:
        if not isinstance(data, Mapping):
            raise ResultsError(f"{where}: expected an object, got {type(data).__name__}")
        name, outcome, message = data.get("name"), data.get("outcome"), data.get("message", "")
        if not isinstance(name, str) or not name:
            raise ResultsError(f"{where}.name: expected a non-empty string, got {name!r}")
        if outcome not in OUTCOMES:
            raise ResultsError(f"{where}.outcome: expected one of {OUTCOMES}, got {outcome!r}")
        if not isinstance(message, str):
            raise ResultsError(f"{where}.message: expected a string, got {message!r}")
        return cls(name, cast(Outcome, outcome), message)


@dataclass(frozen=True)
class Diagnostics:
    """What the verifier found: the reward and the evidence the analyst reads."""

    reward: float
    tests: tuple[TestResult, ...]
    passed: int
    failed: int
    errored: int
    skipped: int
    required_missing: tuple[str, ...]
    """Required tests that no result matched; each one made the reward 0."""
    source: str
    """Where the reward came from, as `Provenance.to_json` writes it ("pytest-rA",
    "reward:/logs/verifier/reward.txt+junit:/logs/verifier/junit.xml"); `provenance` reads it."""
    log_tail: str
    summary: str
    """One line for people and the analyst: "4 of 9 tests passed; failed: ..."."""

    @property
    def provenance(self) -> Provenance:
        """`source` read: the kind of evidence that decided the reward, and its files."""
        return Provenance.from_json(self.source)

    def to_json(self) -> dict[str, object]:
        return {
            "reward": self.reward,
            "tests": [test.to_json() for test in self.tests],
            "passed": self.passed,
            "failed": self.failed,
            "errored": self.errored,
            "skipped": self.skipped,
            "required_missing": list(self.required_missing),
            "source": self.source,
            "log_tail": self.log_tail,
            "summary": self.summary,
        }

    @classmethod
    def from_json(cls, data: object) -> Diagnostics:
        """Rebuild stored diagnostics; a ResultsError names the first field that is wrong."""
        if not isinstance(data, Mapping):
            raise ResultsError(f"diagnostics: expected an object, got {type(data).__name__}")
        reward = data.get("reward")
        if isinstance(reward, bool) or not isinstance(reward, int | float):
            raise ResultsError(f"diagnostics.reward: expected a number, got {reward!r}")
        counts: dict[str, int] = {}
        for key in ("passed", "failed", "errored", "skipped"):
            value = data.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ResultsError(f"diagnostics.{key}: expected a count, got {value!r}")
            counts[key] = value
        texts: dict[str, str] = {}
        for key in ("source", "log_tail", "summary"):
            value = data.get(key)
            if not isinstance(value, str):
                raise ResultsError(f"diagnostics.{key}: expected a string, got {value!r}")
            texts[key] = value
        tests, missing = data.get("tests"), data.get("required_missing")
        if not isinstance(tests, list):
            raise ResultsError(f"diagnostics.tests: expected a list, got {tests!r}")
        if not isinstance(missing, list) or not all(isinstance(name, str) for name in missing):
            raise ResultsError(f"diagnostics.required_missing: expected names, got {missing!r}")
        return cls(
            reward=float(reward),
            tests=tuple(
                TestResult.from_json(test, f"diagnostics.tests[{i}]")
                for i, test in enumerate(tests)
            ),
            passed=counts["passed"],
            failed=counts["failed"],
            errored=counts["errored"],
            skipped=counts["skipped"],
            required_missing=tuple(missing),
            source=texts["source"],
            log_tail=texts["log_tail"],
            summary=texts["summary"],
        )
