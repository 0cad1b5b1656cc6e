"""The heuristic roles: traceback files, candidate boundaries from real turns, spread plans."""

from __future__ import annotations

from sprout.roles import Analysis, candidate_boundaries
from sprout.roles.heuristics import heuristic_review, traceback_files, warning_turn
from sprout.roles.touched import turn_files
from sprout.tree import Attempt
from tests.support.role_inputs import diagnostics, finish, task_for
from tests.support.scripted_model import ScriptedModel, bash, submit
from tests.support.world import World

PYTEST_LOG = """\
    def test_double():
>       assert double(2) == 4
E       assert 6 == 4

tests/test_app.py:4: AssertionError
src/util.py:2: in double
    return x * 3
../lib/helpers.js:10:5
"""


def test_traceback_files_come_from_failing_tests_and_the_log_tail_resolved_in_the_workdir():
    frames = '  File "<string>", line 1, in <module>\n  File "/app/src/x.py", line 3, in f'
    found = diagnostics(message=frames, log_tail=PYTEST_LOG)
    found["tests"].append({"name": "ok", "outcome": "passed", "message": 'File "/no.py", line 1'})
    assert traceback_files(found, "/app") == [
        "/app/src/x.py",
        "/app/tests/test_app.py",
        "/app/src/util.py",
        "/lib/helpers.js",
    ]
    assert traceback_files(None, "/app") == []


def test_the_boundary_is_just_before_the_first_turn_that_touched_a_traceback_file(world: World):
    attempt, _ = world.play(
        [
            bash("cat README"),
            bash("sed -i 's/x \\* 2/x * 3/' src/util.py"),
            bash("echo notes > notes.txt"),
            bash("echo '# again' >> src/util.py"),
            submit(),
        ]
    )
    attempt = finish(world, attempt)
    files = turn_files(world.tree, attempt)
    assert files == {
        1: [],
        2: ["/workspace/src/util.py"],
        3: ["/workspace/notes.txt"],
        4: ["/workspace/src/util.py"],
        5: [],
    }
    task = task_for(world)
    assert candidate_boundaries(world.tree, task, attempt) == (1, 3, 2, 0)

    # pytest's relative `src/util.py:2: in double` names the same file
    relative = diagnostics(message="", log_tail=PYTEST_LOG)
    attempt = finish(world, attempt, relative)
    assert candidate_boundaries(world.tree, task, attempt) == (1, 3, 2, 0)


def test_a_branch_reads_its_inherited_turns_too(world: World):
    root, _ = world.play([bash("echo 'def double(x): return 0' > src/util.py"), submit()])
    branch = world.tree.branch(root, 1, "Check.\n\n```bash\ncat src/util.py\n```")
    branch = world.actor(ScriptedModel([bash("echo more >> notes.txt"), submit()])).run(branch)
    branch = finish(world, branch)
    task = task_for(world)
    assert candidate_boundaries(world.tree, task, branch) == (2, 0)
    files = turn_files(world.tree, branch)
    assert files[1] == ["/workspace/src/util.py"] and files[3] == ["/workspace/notes.txt"]


def test_with_no_traceback_file_touched_the_latest_workdir_edits_come_first(world: World):
    attempt, _ = world.play(
        [
            bash("cat README"),
            bash("echo a > notes.txt"),
            bash("echo scratch > /tmp/scratch.txt"),
            bash("mkdir -p deep/er && echo b > deep/er/b.txt"),
            bash("mkdir -p src/__pycache__ && echo x > src/__pycache__/util.cpython-311.pyc"),
            submit(),
        ]
    )
    attempt = finish(world, attempt, diagnostics(message='File "/workspace/src/other.py", line 1'))
    task = task_for(world)
    # turn 4 then turn 2 edited the workdir; /tmp and caches are not edits
    assert candidate_boundaries(world.tree, task, attempt) == (3, 1, 0)

    untouched, _ = world.play([bash("cat README"), submit()])
    untouched = finish(world, untouched)
    # nothing edited, nothing failed: half-way, never only a restart
    assert candidate_boundaries(world.tree, task, untouched) == (1, 0)


def test_a_command_that_ran_a_failing_test_is_a_candidate_before_the_later_edits(world: World):
    attempt, _ = world.play(
        [
            bash("cat README"),
            bash("python3 -c 'print(1)' # stands for: pytest -k test_double"),
            bash("echo done > notes.txt"),
            bash("false"),
            submit(),
        ]
    )
    attempt = finish(world, attempt, diagnostics(message="assert 0 == 4"))
    # turn 2 named the failing test; turn 3 edited; turn 4 failed; then half-way is turn 3
    assert candidate_boundaries(world.tree, task_for(world), attempt) == (1, 2, 3, 0)


def test_deleting_a_directory_touches_every_file_in_it(world: World):
    attempt, _ = world.play([bash("cat README"), bash("rm -rf src"), submit()])
    attempt = finish(world, attempt)
    assert candidate_boundaries(world.tree, task_for(world), attempt) == (1, 0)


def _attempt(attempt_id: int) -> Attempt:
    return Attempt(id=attempt_id, task_id="t1", parent_id=None, boundary=0, kind="root")


def _analysis(attempt_id: int, *boundaries: int) -> Analysis:
    return Analysis(attempt_id, "why", "keep", boundaries, "heuristic", "test")


def test_plans_spread_over_recent_attempts_best_boundaries_first_skipping_tried_pairs():
    parents = [_attempt(3), _attempt(5), _attempt(7)]
    analyses = {3: _analysis(3, 4, 2), 5: _analysis(5, 6, 1, 0), 7: _analysis(7, 2)}
    review = heuristic_review(
        parents, analyses, branches=4, tried=[(5, 6)], workdir="/app", reason="oracle"
    )
    assert [(p.parent_id, p.boundary) for p in review.plans] == [(7, 2), (3, 4), (5, 1), (3, 2)]
    assert all("Let me look at this again" in str(p.starting_turn) for p in review.plans)
    assert review.source == "heuristic" and review.fallback_reason == "oracle"


def test_plans_cycle_when_there_are_fewer_pairs_than_branches_and_reuse_tried_ones_last():
    review = heuristic_review(
        [_attempt(2)], {2: _analysis(2, 1, 0)}, branches=3, tried=[], workdir="/app", reason="r"
    )
    assert [(p.parent_id, p.boundary) for p in review.plans] == [(2, 1), (2, 0), (2, 1)]
    everything_tried = heuristic_review(
        [_attempt(2)], {2: _analysis(2, 1)}, branches=2, tried=[(2, 1)], workdir="/app", reason="r"
    )
    assert [(p.parent_id, p.boundary) for p in everything_tried.plans] == [(2, 1), (2, 1)]
    no_analysis = heuristic_review(
        [_attempt(4)], {}, branches=1, tried=[], workdir="/app", reason=""
    )
    assert [(p.parent_id, p.boundary) for p in no_analysis.plans] == [(4, 0)]


def test_a_warning_turn_says_what_the_verifier_found_and_nothing_else():
    diagnostics = {
        "tests": [
            {
                "name": "tests/test_ops.py::test_add",
                "outcome": "failed",
                "message": 'File "/app/calc/ops.py", line 2, in add\nAssertionError: 5 != -1',
            },
            {"name": "tests/test_ops.py::test_sub", "outcome": "passed", "message": ""},
            {"name": "tests/test_ops.py::test_mul", "outcome": "error", "message": ""},
        ],
        "summary": "1 of 3 tests passed",
    }
    turn = warning_turn(diagnostics, "/app")
    assert turn.startswith(
        "The checks that failed: tests/test_ops.py::test_add, tests/test_ops.py::test_mul "
        '(File "/app/calc/ops.py", line 2, in add). Their traces point at /app/calc/ops.py.'
    )
    assert turn.endswith("```bash\ncat /app/calc/ops.py\n```")
    assert "test_sub" not in turn
    bare = warning_turn({"tests": [], "summary": "the verifier failed: timeout"}, "/app")
    assert bare.startswith("The result was not accepted: the verifier failed: timeout.")
    assert bare.endswith("```bash\nls -la /app\n```")
