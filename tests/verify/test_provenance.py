"""Where a reward came from, as one small type that stores the strings runs have always stored."""

from __future__ import annotations

import pytest

from sprout.verify import Diagnostics, Provenance, ResultsError, diagnose, read_results

LOGS = "/logs/verifier/"
JUNIT = b'<testsuite><testcase classname="t" name="test_a"/></testsuite>'
CTRF = b'{"results": {"tests": [{"name": "test_b", "status": "failed"}]}}'


@pytest.mark.parametrize(
    ("stored", "read"),
    [
        ("pytest-rA", Provenance("pytest-rA")),
        ("verifier-error", Provenance("verifier-error")),
        ("junit:/a.xml,/b.xml", Provenance("junit", ("/a.xml", "/b.xml"))),
        ("exit-code+tap", Provenance("exit-code", tests=Provenance("tap"))),
        (
            "reward:/logs/verifier/reward.txt+ctrf:/logs/verifier/ctrf.json",
            Provenance(
                "reward",
                ("/logs/verifier/reward.txt",),
                tests=Provenance("ctrf", ("/logs/verifier/ctrf.json",)),
            ),
        ),
    ],
)
def test_stored_strings_read_back_and_are_written_the_same(stored: str, read: Provenance):
    assert Provenance.from_json(stored) == read
    assert read.to_json() == stored


def test_kinds_list_the_deciding_evidence_first():
    found = Provenance.from_json("exit-code+pytest-counts")
    assert found.kinds == ("exit-code", "pytest-counts")
    assert found.kind == "exit-code" and found.tests == Provenance("pytest-counts")


def test_only_a_string_is_a_stored_provenance():
    with pytest.raises(ResultsError, match="provenance: expected a string"):
        Provenance.from_json({"kind": "tap"})


def test_read_results_says_what_decided_and_what_named_the_tests():
    files = {LOGS + "reward.txt": b"1\n", LOGS + "junit.xml": JUNIT}
    found = read_results(files, "", 1)
    assert found.provenance == Provenance(
        "reward", (LOGS + "reward.txt",), tests=Provenance("junit", (LOGS + "junit.xml",))
    )
    exit_code = read_results({LOGS + "ctrf.json": CTRF}, "", 1, format="exit-code")
    assert exit_code.provenance.kinds == ("exit-code", "ctrf")
    assert "reward 0 from the exit code" in exit_code.summary


def test_diagnose_takes_a_provenance_or_its_string_and_stores_the_string():
    given = Provenance("reward", (LOGS + "reward.txt",))
    for source in (given, given.to_json()):
        found = diagnose([], source=source, reward=1.0)
        assert found.source == "reward:/logs/verifier/reward.txt"
        assert "reward 1 from /logs/verifier/reward.txt" in found.summary
        assert Diagnostics.from_json(found.to_json()).provenance == given


def test_a_missing_reward_file_names_no_file():
    found = read_results({}, "", None, format="reward")  # timed out: scored 0
    assert found.provenance == Provenance("reward")
    assert "reward 0 from" not in found.summary
