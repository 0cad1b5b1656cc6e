"""A tour of the rollout tree: an attempt that goes wrong, and a branch that does not.

The actor plays `oracle-noise`, a stand-in model that follows a reference
solution but makes seeded mistakes. Its attempt is checked at the end; the
branch restores the checkpoint before the first mistaken turn (files and
messages, nothing re-executed) and starts with a corrective turn, which the
model obeys. Choosing that boundary and writing that turn is the reviewer's
job, which comes with the verifier; here the reference solution stands in.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from sprout.agent import Actor
from sprout.models.oracle import OracleNoiseModel, Step
from sprout.runfolder import RunFolder
from sprout.sandbox import Sandbox, SandboxWorkspace
from sprout.tree import Attempt, RolloutTree

STEPS = [
    Step("ls -la && cat README"),
    Step("mkdir -p calc && touch calc/__init__.py"),
    Step(
        "printf 'def add(a, b):\\n    return a + b\\n' > calc/ops.py",
        wrong=("printf 'def add(a, b):\\n    return a - b\\n' > calc/ops.py",),
    ),
    Step("python3 -c 'from calc.ops import add; print(add(2, 3))'"),
]
CHECK = "python3 -c 'from calc.ops import add; assert add(2, 3) == 5' && echo PASS || echo FAIL"
SEED = 7
"""A seed whose first attempt goes wrong, so the tour has something to repair."""


def summarise(tree: RolloutTree, attempt: Attempt) -> None:
    for turn in tree.path(attempt):
        mine = turn.attempt_id == attempt.id
        command = turn.calls[0].command if turn.calls else "(format error)"
        origin = f"{turn.author:8}" if mine else f"reused from attempt {turn.attempt_id}"
        print(f"  turn {turn.index}  {origin:22} $ {command[:60]}")


def check(run: RunFolder, attempt: Attempt) -> bool:
    with Sandbox.fork(run.layers, run.tree.checkpoint(attempt)) as sandbox:
        return sandbox.run(CHECK).output.strip().endswith("PASS")


def first_mistake(tree: RolloutTree, attempt: Attempt) -> int:
    """The first turn whose command is not the reference step at that position."""
    for turn, step in zip(tree.path(attempt), STEPS, strict=False):
        if not turn.calls or turn.calls[0].command != step.command:
            return turn.index
    return len(STEPS) + 1


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="sprout-branch-tour-") as tmp:
        files = Path(tmp) / "task"
        files.mkdir()
        (files / "README").write_text("Create a package calc with calc.ops.add(a, b).\n")
        run = RunFolder.create(Path(tmp) / "run")
        with Sandbox.create(run.layers, files=files) as sandbox:
            base = sandbox.parent
        run.tree.add_task("calc", {"instruction": "Create calc.ops.add."})
        model = OracleNoiseModel(STEPS, p=0.4, seed=SEED)
        actor = Actor(model, run.tree, SandboxWorkspace(run.layers))
        root = actor.run(
            run.tree.root("calc", actor.prefix("Create calc.ops.add.", "/workspace"), base)
        )
        print(f"model: {model.name}")
        print(f"root attempt {root.id}: {root.status} ({root.end_reason})")
        summarise(run.tree, root)
        passed = check(run, root)
        print(f"  check: {'PASS' if passed else 'FAIL'}")
        if passed:
            print("the root passed; nothing to repair")
            return 0

        mistake = first_mistake(run.tree, root)
        boundary = mistake - 1
        starting_turn = (
            f"The step before this went wrong; redo step {mistake} properly.\n\n"
            f"```bash\n{STEPS[boundary].command}\n```"
        )
        branch = actor.run(run.tree.branch(root, boundary, starting_turn))
        print(f"\nbranch attempt {branch.id} from checkpoint {root.id}:{boundary}: {branch.status}")
        summarise(run.tree, branch)
        print(f"  check: {'PASS' if check(run, branch) else 'FAIL'}")
        same = run.tree.messages(branch, boundary) == run.tree.messages(root, boundary)
        print(f"  context at the boundary equals the root's: {same}")
        for attempt in (root, branch):
            tokens = run.tree.tokens(attempt_id=attempt.id)
            print(
                f"  attempt {attempt.id}: {len(run.tree.own_turns(attempt))} turns executed, "
                f"{tokens.spent} tokens spent (estimated: {tokens.estimated})"
            )
        total = run.tree.tokens(task_id="calc")
        print(f"task: {total.spent} tokens spent, {total.prefix_once} with prefixes counted once")
        run.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
