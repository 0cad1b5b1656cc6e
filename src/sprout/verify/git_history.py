"""The git history cut from checkpoint 0, back on the verifier's throw-away fork.

`sprout.tasks.setup.git_history` cut every object and ref beyond the task's base commit out
of checkpoint 0, so that the agent cannot read the fix in `git log --all`; a grader may
need them (SWE-bench Pro's harness checks test files out of the fix's commit). Before the
verifier's command runs, its fork gets the cut objects back from checkpoint 0's private
bundle and the refs back under their names, all but the branch the fork has checked out
(the attempt's own work stays where it is); commits no ref named come back as
`refs/sprout-cut/SHA`. Nothing of it reaches a layer: the fork is thrown away.
"""

from __future__ import annotations

import secrets
import shlex

from sprout.sandbox import LayerStore, Sandbox
from sprout.task import Task
from sprout.tasks.setup.git_history import BUNDLE, GIT, REFS, saved_history
from sprout.verify.types import VerifierSetupError

RESTORE = (
    GIT
    + """message="sprout: cut from checkpoint 0, put back for the verifier"
cd "$repo" || exit 1
if [ -f "$bundle" ]; then g bundle unbundle "$bundle" > /dev/null || exit 1; fi
branch=$(g symbolic-ref -q HEAD) || branch=
while read -r sha ref; do
  [ "$ref" = "$branch" ] || echo "update $ref $sha"
done < "$refs" | g update-ref -m "$message" --create-reflog --stdin 2>/dev/null \\
|| while read -r sha ref; do
  [ "$ref" = "$branch" ] || g update-ref -m "$message" --create-reflog "$ref" "$sha" \\
    || echo "not restored: $ref"
done < "$refs"
rm -f "$bundle" "$refs"
"""
)
"""Run in the fork with `repo`, `bundle` and `refs` set: the objects in, then the refs in
one transaction, or one by one where the attempt made a ref that stands in the way."""


def restore_history(sandbox: Sandbox, task: Task, layers: LayerStore, base_checkpoint: str) -> None:
    """Put the history cut from `base_checkpoint` (checkpoint 0) back into the repository of
    `task.git_history` in the verifier's fork `sandbox`; VerifierSetupError when git cannot
    take it (the verifier's verdict would not be the grader's), naming the task and folder."""
    history = task.git_history
    saved = saved_history(layers, base_checkpoint) if history is not None else {}
    if history is None or not saved:
        return
    stem = f"/.sprout-git-history-{secrets.token_hex(8)}"
    names = {"repo": history.repo, "bundle": f"{stem}.bundle", "refs": f"{stem}.refs"}
    for name, key in ((BUNDLE, "bundle"), (REFS, "refs")):
        if name in saved:
            sandbox.put(saved[name], names[key])
    assign = "".join(f"{name}={shlex.quote(value)}\n" for name, value in names.items())
    done = sandbox.run(assign + RESTORE, task.verifier_timeout_s)
    if done.exit_code != 0:
        last = (done.output.strip().splitlines() or ["(no output)"])[-1]
        why = "timed out" if done.timed_out else last
        raise VerifierSetupError(
            f"{task.id}: git_history: the history cut from {history.repo} could not be put "
            f"back on the verifier's fork: {why}"
        )
