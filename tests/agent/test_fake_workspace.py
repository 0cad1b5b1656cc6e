"""The actor against an in-memory workspace: no overlayfs, no sandbox, no processes.

The actor knows its sandbox only as a `sprout.workspace.Workspace`, so a dict of
files with a five-word shell is enough to play attempts, branch them and record
what each turn changed. The store and the tree are the real ones.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from sprout.agent import Actor, ActorConfig
from sprout.models import ModelError
from sprout.roles.touched import turn_files
from sprout.sandbox import FlushFailed
from sprout.tree import RolloutTree
from sprout.workspace import Change, Sealed, WorkspaceError
from tests.support.scripted_model import ScriptedModel, bash, submit

Files = dict[str, str]


@dataclass(frozen=True)
class Output:
    output: str
    exit_code: int | None = 0
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0


class FakeFork:
    """A copy of a checkpoint's files; `write PATH TEXT`, `cat PATH`, `rm PATH`, `echo TEXT`
    run on it, and `break` fails the workspace itself."""

    def __init__(self, workspace: FakeWorkspace, checkpoint: str) -> None:
        self.workspace = workspace
        self.parent = checkpoint
        self.files = dict(workspace.checkpoints[checkpoint])

    def check_command(self, command: str) -> str | None:
        return "holds a NUL byte" if "\0" in command else None

    def run(self, command: str, timeout: float) -> Output:
        self.workspace.ran.append(command)
        verb, _, rest = command.partition(" ")
        if verb == "break":
            raise WorkspaceError("the fake disk is full")
        if verb == "write":
            path, _, text = rest.partition(" ")
            self.files[path] = text
            return Output("")
        if verb == "cat":
            return Output(self.files[rest]) if rest in self.files else Output("no such file", 1)
        if verb == "rm":
            self.files.pop(rest, None)
            return Output("")
        return Output(rest + "\n")  # echo

    def seal(self) -> Sealed:
        before = self.workspace.checkpoints[self.parent]
        if self.files == before:
            return Sealed(self.parent, ())
        checkpoint = f"c{len(self.workspace.checkpoints)}"
        self.workspace.checkpoints[checkpoint] = dict(self.files)
        changes = [
            Change(path, "modified" if path in before else "added", len(text))
            for path, text in self.files.items()
            if before.get(path) != text
        ]
        changes += [Change(path, "deleted", 0) for path in before if path not in self.files]
        self.parent = checkpoint
        return Sealed(checkpoint, tuple(sorted(changes, key=lambda c: c.path)))


class FakeWorkspace:
    """Checkpoints as dicts of files, by id; `c0` is the untouched task."""

    def __init__(self, files: Files) -> None:
        self.checkpoints: dict[str, Files] = {"c0": dict(files)}
        self.forked: list[str] = []
        self.ran: list[str] = []
        self.open = 0

    @contextmanager
    def fork(self, checkpoint: str) -> Iterator[FakeFork]:
        self.forked.append(checkpoint)
        self.open += 1
        try:
            yield FakeFork(self, checkpoint)
        finally:
            self.open -= 1


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[RolloutTree]:
    found = RolloutTree(tmp_path / "sprout.db")
    found.add_task("t1", {"instruction": "Fix it."})
    yield found
    found.close()


def play(tree: RolloutTree, workspace: FakeWorkspace, replies: list, config=None):
    model = ScriptedModel(replies)
    actor = Actor(model, tree, workspace, config)
    root = tree.root("t1", actor.prefix("Fix it.", "/w"), "c0")
    return actor.run(root), model


def test_an_attempt_plays_and_records_what_each_turn_changed(tree):
    workspace = FakeWorkspace({"/w/app.py": "bug"})
    attempt, model = play(
        tree,
        workspace,
        [bash("write /w/app.py fixed", "write /w/notes hi"), bash("cat /w/app.py"), submit()],
    )

    assert attempt.status == "submitted"
    first, second, third = tree.own_turns(attempt)
    assert first.checkpoint == "c1" and second.checkpoint == third.checkpoint == "c1"
    assert workspace.checkpoints["c1"] == {"/w/app.py": "fixed", "/w/notes": "hi"}
    assert first.changes == (Change("/w/app.py", "modified", 5), Change("/w/notes", "added", 2))
    assert second.changes == () and third.changes == ()
    assert second.calls[0].output == "fixed"
    assert "fixed" in model.seen[2][-1]["content"], "the model saw the observation"
    # the roles read what a turn changed from the tree, not from any sandbox
    assert turn_files(tree, attempt) == {1: ["/w/app.py", "/w/notes"], 2: [], 3: []}
    assert workspace.forked == ["c0"] and workspace.open == 0


def test_a_branch_forks_its_boundary_and_runs_nothing_again(tree):
    workspace = FakeWorkspace({})
    root, _ = play(tree, workspace, [bash("write /w/a 1"), bash("write /w/a 2"), submit()])
    ran = len(workspace.ran)
    branch = tree.branch(root, 1, bash("cat /w/a", thought="Look first."))

    done = Actor(ScriptedModel([submit()]), tree, workspace).run(branch)

    assert done.status == "submitted"
    assert workspace.forked[-1] == tree.checkpoint(root, 1) == "c1"
    assert workspace.ran[ran:] == ["cat /w/a", "echo SPROUT_SUBMIT"]
    starting = tree.own_turns(done)[0]
    assert starting.author == "reviewer" and starting.calls[0].output == "1"


def test_a_command_the_workspace_refuses_is_a_format_error(tree):
    workspace = FakeWorkspace({})
    attempt, model = play(tree, workspace, [bash("echo a\0b"), submit()])

    assert attempt.status == "submitted"
    refused = tree.own_turns(attempt)[0]
    assert refused.format_error and refused.calls == ()
    assert "command 1 holds a NUL byte" in model.seen[1][-1]["content"]
    assert workspace.ran == ["echo SPROUT_SUBMIT"]


def test_a_failing_workspace_is_a_sandbox_fault(tree):
    workspace = FakeWorkspace({})
    attempt, _ = play(tree, workspace, [bash("write /w/a 1"), bash("break")])

    assert (attempt.status, attempt.fault) == ("error", "sandbox")
    assert attempt.end_reason == "sandbox: the fake disk is full"
    assert [t.index for t in tree.own_turns(attempt)] == [1], "the turns before are kept"
    assert workspace.open == 0


@pytest.mark.parametrize("turns", [2, 8])
def test_limits_keep_running_totals_instead_of_rereading_the_store(tree, turns):
    """The store is read a fixed number of times per attempt, however many turns it plays
    (it used to be read again before every model call)."""
    reads = {"path": 0, "model_calls": 0, "tokens": 0}
    for name in reads:
        method = getattr(tree, name)

        def counted(*args, _name=name, _method=method, **kwargs):
            reads[_name] += 1
            return _method(*args, **kwargs)

        setattr(tree, name, counted)
    config = ActorConfig(max_turns=turns, max_tokens=10_000, max_context_tokens=10_000)
    config = config.model_copy(update={"max_wall_s": 10_000.0})
    attempt, _ = play(tree, FakeWorkspace({}), [bash(f"echo {i}") for i in range(turns)], config)

    assert attempt.status == "limit" and "max_turns" in (attempt.end_reason or "")
    assert reads["tokens"] == 0
    assert reads["model_calls"] == 1
    assert reads["path"] <= 4


def test_the_token_limit_counts_every_call_of_the_attempt(tree):
    """Each scripted reply spends 10 prompt + 5 completion tokens."""
    config = ActorConfig(max_tokens=30)
    attempt, model = play(tree, FakeWorkspace({}), [bash("echo 1"), bash("echo 2")], config)

    assert len(model.seen) == 2
    assert attempt.status == "limit"
    assert attempt.end_reason == "token limit (max_tokens): 30 of 30 spent"


class LoggedModel(ScriptedModel):
    """A scripted model whose calls go into `log`, among what the test logs beside them."""

    def __init__(self, replies: list, log: list[str]) -> None:
        super().__init__(replies)
        self.log = log

    def complete(self, messages, **options):
        self.log.append("model")
        return super().complete(messages, **options)


def test_a_sealed_turn_is_held_while_the_next_model_call_runs_then_settled_and_committed(tree):
    """The tree records a checkpoint once it is settled (on disk); the actor holds each
    sealed turn while its next model call runs, which the flush runs beside, commits it
    before the next turn, and commits the last one before the attempt's end is recorded."""
    log: list[str] = []

    def settle(checkpoint: str) -> None:
        attempts = tree.attempts("t1")
        turns = sum(len(tree.own_turns(a)) for a in attempts)
        log.append(f"settle {checkpoint}: {turns} turns, {[a.status for a in attempts]}")

    tree.settle = settle
    model = LoggedModel([bash("write /w/a 1"), bash("write /w/a 2"), submit()], log)
    actor = Actor(model, tree, FakeWorkspace({}))
    attempt = actor.run(tree.root("t1", actor.prefix("Fix it.", "/w"), "c0"))

    assert attempt.status == "submitted" and len(tree.own_turns(attempt)) == 3
    assert log == [
        "settle c0: 0 turns, []",  # checkpoint 0, before the root is recorded
        "model",
        "model",  # turn 1 (c1) was held while the model answered turn 2
        "settle c1: 0 turns, ['running']",
        "model",
        "settle c2: 1 turns, ['running']",
        "settle c2: 2 turns, ['running']",  # the submitting turn, before the end
    ]


def test_a_checkpoint_whose_flush_failed_ends_the_attempt_as_the_sandboxs_fault(tree):
    def settle(checkpoint: str) -> None:
        if checkpoint == "c1":
            raise FlushFailed("/runs/r/layers", "c1", OSError(errno.EIO, "Input/output error"))

    tree.settle = settle
    attempt, _ = play(tree, FakeWorkspace({}), [bash("write /w/a 1"), bash("echo 2")])

    assert (attempt.status, attempt.fault) == ("error", "sandbox")
    assert attempt.end_reason == (
        "sandbox: /runs/r/layers: checkpoint c1 not flushed to disk: Input/output error"
    )
    assert tree.own_turns(attempt) == [], "no turn names a checkpoint that is not on disk"


@pytest.mark.parametrize(
    ("second", "config", "stops", "ended"),
    [
        (submit(), None, None, ("submitted", None)),
        (ModelError("server", "no reply after 3 tries"), None, None, ("error", "model")),
        (bash("break"), None, None, ("error", "sandbox")),
        (RuntimeError("a bug of sprout's"), None, None, ("error", "sprout")),
        (bash("echo 2"), ActorConfig(max_turns=1), None, ("limit", None)),
        (bash("echo 2"), None, "should_stop", ("stopped", None)),
        (bash("echo 2"), None, "interrupted", ("running", None)),
    ],
    ids=["submitted", "model", "workspace", "crash", "limit", "stopped", "interrupted"],
)
def test_every_way_out_of_the_turn_loop_commits_the_held_turn_first(
    tree, second, config, stops, ended
):
    log: list[str] = []
    tree.settle = lambda checkpoint: log.append(checkpoint)
    model = ScriptedModel([bash("write /w/a 1"), second])
    actor = Actor(model, tree, FakeWorkspace({}), config)
    root = tree.root("t1", actor.prefix("Fix it.", "/w"), "c0")
    after_one = {stops: lambda: len(model.seen) >= 1} if stops else {}
    attempt = actor.run(root, **after_one)

    assert (attempt.status, attempt.fault) == ended
    assert tree.own_turns(attempt)[0].checkpoint == "c1"
    assert log[:2] == ["c0", "c1"], "the held turn was settled before it was recorded"
