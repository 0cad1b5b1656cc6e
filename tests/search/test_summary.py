"""The lines under the comparison table: what its figures leave out, said per method."""

from __future__ import annotations

from sprout.search import table


def content(model: str) -> dict:
    method = {
        "tasks": 2, "resolved": 1, "resolve_rate": 0.5, "pass_at_1": 0.5,
        "tokens": {"spent": 10, "prefix_once": 5, "estimated": False},
        "attempts": 3, "turns_executed": 4, "turns_reused": 0, "wall_s": 1.0,
        "errors": 1, "incomplete": 0, "faults": {"model": 2},
        "role_sources": {"analyst": {"model": 1, "heuristic": 2}},
    }  # fmt: skip
    return {"model": model, "methods": {"sprout": method}, "tasks": {}}


def test_errors_and_fallbacks_of_a_served_model_are_said_under_the_table():
    text = table(content("openai/m"))
    assert "sprout: 1 of 2 tasks ended in error (attempts: 2 model)" in text
    assert "the analyst fell back to the heuristic 2 of 3 times" in text
    assert "errors are not failures" in text


def test_models_that_cannot_write_role_output_have_no_fallbacks_to_tell():
    text = table(content("oracle-noise:errors=trap"))
    assert "fell back" not in text
    assert "1 of 2 tasks ended in error" in text
