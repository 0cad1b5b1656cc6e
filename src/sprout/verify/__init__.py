"""The verifier: hidden tests run on a fork of the final checkpoint, read into a reward."""

from sprout.verify.parsers import parse_ctrf, parse_junit_xml, parse_pytest_summary, read_reward
from sprout.verify.results import FORMATS, diagnose, read_results, score
from sprout.verify.runner import Verdict, run_verifier, workdir_patch
from sprout.verify.tap import parse_tap
from sprout.verify.types import (
    Diagnostics,
    MissingResults,
    Provenance,
    ResultsError,
    TestResult,
)

__all__ = [
    "FORMATS",
    "Diagnostics",
    "MissingResults",
    "Provenance",
    "ResultsError",
    "TestResult",
    "Verdict",
    "diagnose",
    "parse_ctrf",
    "parse_junit_xml",
    "parse_pytest_summary",
    "parse_tap",
    "read_results",
    "read_reward",
    "run_verifier",
    "score",
    "workdir_patch",
]
