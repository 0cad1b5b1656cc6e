"""The viewer's data layer on a real small run: pass@2 and sprout on the two-edit task with
oracle-noise's trap errors at q=1 (every attempt falls into the trap unless warned), so the
tree's shape is known."""

from __future__ import annotations

import json

import pytest

from sprout.runfolder import RunFolder
from sprout.tree import CallRecord, Turn
from sprout.viewer import ViewerError, run_summary, task_tree, turn_detail
from tests.support.taskfolders import TWO_EDITS


def test_summary_has_both_methods_with_the_numbers_of_results_json(run: RunFolder) -> None:
    summary = run_summary(run)
    json.dumps(summary)
    written = json.loads((run.path / "results.json").read_text())
    assert set(summary["methods"]) == {"pass@2", "sprout"}
    assert summary["methods"] == written["methods"]
    assert [t["id"] for t in summary["tasks"]] == [TWO_EDITS]
    assert summary["tasks"][0]["methods"] == written["tasks"][TWO_EDITS]
    for method, figures in written["methods"].items():
        curve = summary["curves"][method]
        assert curve["order"] == "finished"
        (point,) = curve["points"]
        assert point["task_id"] == TWO_EDITS
        assert point["tokens"] == figures["tokens"]["spent"]
        assert point["solved"] == figures["resolved"]
    assert summary["curves"]["sprout"]["points"][0]["solved"] == 1
    assert summary["curves"]["pass@2"]["points"][0]["solved"] == 0


def test_tree_has_every_attempt_and_its_branch_points(run: RunFolder) -> None:
    tree = task_tree(run, TWO_EDITS)
    json.dumps(tree)
    stored = run.tree.attempts(TWO_EDITS)
    assert [a["id"] for a in tree["attempts"]] == [a.id for a in stored]
    by_method = {m: [a for a in tree["attempts"] if a["method"] == m] for m in ("pass@2", "sprout")}
    assert [a["kind"] for a in by_method["pass@2"]] == ["root", "root"]
    root, *branches = by_method["sprout"]
    assert root["kind"] == "root" and branches
    expected = {(b["parent"], b["boundary"]) for b in branches}
    assert {(p["attempt"], p["boundary"]) for p in tree["branch_points"]} == expected
    assert sorted(i for p in tree["branch_points"] for i in p["branches"]) == sorted(
        b["id"] for b in branches
    )
    # turns are the attempt's own, compact
    turns = root["turns"]
    assert [t["index"] for t in turns] == [
        t.index for t in run.tree.own_turns(run.tree.attempt(root["id"]))
    ]
    assert all(t["author"] == "actor" and t["calls"] == 1 for t in turns), "one call a step"
    assert root["diagnostics"]["summary"] and root["reward"] == 0.0
    assert root["tokens"]["spent"] > 0


def test_a_branch_has_its_parent_boundary_analysis_and_review(run: RunFolder) -> None:
    tree = task_tree(run, TWO_EDITS)
    attempts = {a["id"]: a for a in tree["attempts"]}
    branch = next(a for a in tree["attempts"] if a["kind"] == "branch")
    stored = run.tree.find_attempt(branch["id"])
    assert stored is not None
    assert (branch["parent"], branch["boundary"]) == (stored.parent_id, stored.boundary)
    assert branch["guided"] and branch["turns"][0]["author"] == "reviewer"
    assert branch["turns"][0]["index"] == branch["boundary"] + 1
    parent = attempts[branch["parent"]]
    assert parent["analysis"] == run.tree.analyses(TWO_EDITS)[parent["id"]]
    review = branch["review"]
    assert review is not None and review["round"] == branch["round"] == 1
    assert review["plan"]["parent_id"] == branch["parent"]
    assert review["plan"]["boundary"] == branch["boundary"]
    assert review["plan"]["starting_turn"] == branch["starting_turn"]
    assert tree["reviews"] and tree["reviews"][0]["method"] == "sprout"
    # a round that plans the same branch twice: each branch gets its own plan
    planned = [a["review"]["plan_index"] for a in tree["attempts"] if a["kind"] == "branch"]
    assert len(set(planned)) == len(planned)


def test_the_passing_path_ends_at_a_passing_attempt(run: RunFolder) -> None:
    tree = task_tree(run, TWO_EDITS)
    attempts = {a["id"]: a for a in tree["attempts"]}
    assert set(tree["passing_paths"]) == {"sprout"}, "pass@2's roots both fall into the trap"
    path = tree["passing_paths"]["sprout"]
    last_attempt, last_index = path[-1]
    assert attempts[last_attempt]["reward"] == 1.0
    assert last_index == attempts[last_attempt]["last_index"]
    assert [index for _, index in path] == list(range(1, len(path) + 1))


def test_turn_detail_shows_the_file_the_turn_changed(run: RunFolder) -> None:
    root = next(a for a in run.tree.attempts(TWO_EDITS) if a.method == "pass@2")
    first = run.tree.own_turns(root)[0]
    detail = turn_detail(run, root.id, first.index)
    json.dumps(detail)
    assert detail["text"] == first.text and detail["owner"] == root.id
    assert [c["command"] for c in detail["calls"]] == [c.command for c in first.calls]
    assert all(c["cut"] == 0 for c in detail["calls"])
    (changed,) = [f for f in detail["files"] if f["path"].endswith("/a.txt")]
    assert changed["kind"] == "modified" and changed["size"] == 2
    assert "-0\n" in changed["diff"] and "+1\n" in changed["diff"]
    assert changed["diff_cut"] == 0 and detail["files_error"] is None


def test_an_inherited_index_resolves_to_the_ancestors_turn(run: RunFolder) -> None:
    branch = next(a for a in run.tree.attempts(TWO_EDITS) if a.kind == "branch" and a.boundary >= 1)
    detail = turn_detail(run, branch.id, 1)
    assert detail["owner"] == branch.parent_id and detail["attempt_id"] == branch.id


def test_long_output_and_diff_are_cut_with_the_count_marked(run: RunFolder) -> None:
    root = next(a for a in run.tree.attempts(TWO_EDITS) if a.method == "pass@2")
    turns = run.tree.own_turns(root)
    long = CallRecord(command="yes x | head -c 50000", output="x" * 50_000, exit_code=0)
    assert root.base_checkpoint is not None
    new = run.tree.root(TWO_EDITS, list(root.prefix), root.base_checkpoint, method="viewer-test")
    run.tree.commit_turn(
        Turn(
            attempt_id=new.id,
            index=1,
            author="actor",
            text="print a lot\nthen stop",
            calls=(long,),
            messages=(),
            checkpoint=turns[0].checkpoint,
        )
    )
    detail = turn_detail(run, new.id, 1, max_output_chars=1000)
    (call,) = detail["calls"]
    assert len(call["output"]) == 1000 and call["cut"] == 49_000
    json.dumps(detail)
    assert detail["files_error"] is None
    small = turn_detail(run, root.id, turns[0].index, max_diff_chars=5)
    (changed,) = [f for f in small["files"] if f["path"].endswith("/a.txt")]
    assert len(changed["diff"]) == 5 and changed["diff_cut"] > 0
    item = next(a for a in task_tree(run, TWO_EDITS)["attempts"] if a["id"] == new.id)
    assert item["turns"][0]["first_line"] == "print a lot"


def test_unknown_ids_are_a_viewer_error_naming_the_run(run: RunFolder) -> None:
    with pytest.raises(ViewerError, match=r"no attempt 99999") as error:
        turn_detail(run, 99999, 1)
    assert str(run.path) in str(error.value)
    root = run.tree.attempts(TWO_EDITS)[0]
    with pytest.raises(ViewerError, match=rf"attempt {root.id} has no turn 77"):
        turn_detail(run, root.id, 77)
    with pytest.raises(ViewerError, match="no task 'nope'"):
        task_tree(run, "nope")


def test_a_restarted_root_names_the_lost_one_and_its_fault(run: RunFolder) -> None:
    root = next(a for a in run.tree.attempts(TWO_EDITS) if a.method == "pass@2")
    assert root.base_checkpoint is not None
    lost = run.tree.root(TWO_EDITS, list(root.prefix), root.base_checkpoint, method="viewer-lost")
    run.tree.finish_attempt(lost.id, "error", "sandbox: checkpoint c: lost", fault="lost")
    again = run.tree.root(
        TWO_EDITS, list(root.prefix), root.base_checkpoint, method="viewer-lost", restarts=lost.id
    )
    items = {a["id"]: a for a in task_tree(run, TWO_EDITS)["attempts"]}
    assert (items[lost.id]["fault"], items[lost.id]["restarts"]) == ("lost", None)
    assert (items[again.id]["fault"], items[again.id]["restarts"]) == (None, lost.id)
