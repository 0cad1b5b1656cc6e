"""Checkpoint 0 without the repository's future: what a published image's git keeps beyond
the task's base commit is cut, and kept for the verifier alone.

Images of SWE-bench's family often hold the repository's whole history, and the fix is
one `git log --all` away. After the task's set-up, in the set-up's sandbox (the image's own
git, as root), `CUT` saves what it is about to cut, inside the sandbox: a bundle of every
object a ref, a reflog entry or nothing at all points to beyond the base commit (commits
only a reflog or nothing names get refs of their own, `refs/sprout-cut/SHA`) and the list
of the refs it deletes. Then it keeps HEAD (its branch, or detached) at the base commit and
nothing else: no other ref, no remote, reflog, pseudo-ref, grafts or alternates; shallow
lines only for the base's ancestry; every object nothing left points to pruned, the index
and the working tree untouched. The two files are read out of the unsealed layer and
removed from it before it is sealed, so no layer any sandbox mounts holds them, and kept
as private files of checkpoint 0 (`sprout.sandbox.keep_private`): they live exactly as
long as that layer, are linked with it into every run store that uses it, and travel with
it to another node. The verifier's throw-away fork alone gets them back
(`sprout.verify.git_history`).
"""

from __future__ import annotations

import secrets
import shlex

from sprout.sandbox import LayerStore, Sandbox, keep_private, private_file
from sprout.task import Task, TaskError

BUNDLE = "git-history.bundle"
"""Checkpoint 0's private file of the objects cut (absent when none was beyond the base)."""
REFS = "git-history.refs"
"""Checkpoint 0's private file of the refs cut, `SHA REFNAME` a line."""
NO_GIT, NO_REPOSITORY, NOT_AT_BASE = 3, 4, 5
"""`CUT`'s exit codes for what the task, not git, got wrong."""

GIT = """unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_COMMON_DIR \\
  GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_NAMESPACE GIT_CEILING_DIRECTORIES
export GIT_NO_REPLACE_OBJECTS=1 GIT_TERMINAL_PROMPT=0 LC_ALL=C
g() { git -c safe.directory='*' -c core.hooksPath=/dev/null -c gc.auto=0 \\
  -c maintenance.auto=false "$@"; }
"""
"""What both scripts start with: the repository's own git as it is on disk, whoever owns
it, no hook or automatic gc, and no variable of the image's that points elsewhere."""

CUT = (
    GIT
    + """fail() { echo "$*"; exit 1; }
command -v git >/dev/null 2>&1 || exit 3
cd "$repo" 2>/dev/null && top=$(g rev-parse --show-toplevel 2>/dev/null) || exit 4
[ "$top" = "$(pwd -P)" ] && gitdir=$(g rev-parse --git-dir) || exit 4
gitdir=$(cd "$gitdir" && pwd -P) || exit 4
head=$(g rev-parse -q --verify 'HEAD^{commit}') || head="no commit"
[ "$head" = "$base" ] || { echo "$head"; exit 5; }
branch=$(g symbolic-ref -q HEAD) || branch=
mkdir -p "$work" || fail "cannot make $work"
g for-each-ref --format='%(objectname) %(refname)' > "$work/all" || fail "git for-each-ref failed"
while read -r sha ref; do
  [ "$ref" = "$branch" ] || echo "$sha $ref"
done < "$work/all" > "$work/refs"
g fsck --connectivity-only --no-reflogs --no-progress > "$work/fsck" 2>/dev/null
while read -r what kind sha; do
  [ "$what" = dangling ] && case $kind in commit|tag) echo "$sha refs/sprout-cut/$sha";; esac
done < "$work/fsck" > "$work/dangling"
while read -r sha ref; do echo "create $ref $sha"; done < "$work/dangling" \\
  | g update-ref --stdin || fail "git update-ref failed"
cat "$work/dangling" >> "$work/refs"
if ! g bundle create "$work/bundle" --all --not "$base" > "$work/bundled" 2>&1; then
  rm -f "$work/bundle"
  [ -z "$(g rev-list --objects --all --not "$base")" ] || { cat "$work/bundled"; exit 1; }
fi
g remote > "$work/remotes" || fail "git remote failed"
while read -r name; do g config --remove-section "remote.$name" 2>/dev/null; done < "$work/remotes"
while read -r sha ref; do echo "delete $ref"; done < "$work/refs" \\
  | g update-ref --no-deref --stdin || fail "git update-ref failed to delete the refs"
g pack-refs --all --prune || fail "git pack-refs failed"
g reflog expire --expire=now --expire-unreachable=now --all || fail "git reflog expire failed"
if [ -f "$gitdir/shallow" ]; then
  while read -r sha; do
    g merge-base --is-ancestor "$sha" "$base" 2>/dev/null && echo "$sha"
  done < "$gitdir/shallow" > "$work/shallow"
  if [ -s "$work/shallow" ]; then cat "$work/shallow" > "$gitdir/shallow"
  else rm -f "$gitdir/shallow"; fi
fi
cd "$gitdir" || fail "cannot enter $gitdir"
rm -rf logs ./*_HEAD AUTO_MERGE MERGE_MSG MERGE_MODE MERGE_RR SQUASH_MSG BISECT_* \\
  COMMIT_EDITMSG TAG_EDITMSG rebase-merge rebase-apply sequencer rr-cache lost-found \\
  info/refs info/grafts objects/info/commit-graph objects/info/commit-graphs \\
  objects/info/packs objects/pack/multi-pack-index* objects/pack/*.keep \\
  || fail "cannot remove git's leftovers"
cd "$repo" || fail "cannot enter $repo"
g -c repack.writeBitmaps=false repack -a -d -q || fail "git repack failed"
rm -f "$gitdir/objects/info/alternates" "$gitdir/objects/info/http-alternates" \\
  || fail "cannot remove the alternates"
g prune --expire=now || fail "git prune failed"
g rev-list --objects HEAD > /dev/null || fail "the base commit is not whole without the rest"
"""
)
"""Run as root in the repository with `repo`, `base` and `work` set: saves what it cuts
under `work` (`bundle`, `refs`), then cuts it (see the module's docstring)."""


def cut_history(task: Task, sandbox: Sandbox, timeout: float) -> dict[str, bytes]:
    """Cut the history beyond `task.git_history`'s base commit out of `sandbox` (the
    set-up's, its steps done): the private files to keep with checkpoint 0 (none when
    nothing was cut or the task has no `git_history`). A missing git, a folder that is no
    repository, a HEAD not at the base commit or a failing git is a one-line TaskError."""
    history = task.git_history
    if history is None:
        return {}
    work = f"/.sprout-git-cut-{secrets.token_hex(8)}"
    names = {"repo": history.repo, "base": history.base_commit, "work": work}
    assign = "".join(f"{name}={shlex.quote(value)}\n" for name, value in names.items())
    try:
        done = sandbox.run(assign + CUT, timeout)
        last = (done.output.strip().splitlines() or ["(no output)"])[-1]
        where = f"{task.id}: git_history: {history.repo}"
        if done.timed_out:
            raise TaskError(f"{where}: cutting the history after the base commit timed out")
        if done.exit_code == NO_GIT:
            raise TaskError(f"{where}: the image has no git to cut its later history with")
        if done.exit_code == NO_REPOSITORY:
            raise TaskError(
                f"{task.id}: git_history.repo: {history.repo} is no git repository's top folder"
            )
        if done.exit_code == NOT_AT_BASE:
            raise TaskError(
                f"{where}: HEAD is at {last}, not at base commit {history.base_commit} "
                "(the task's set-up must check it out)"
            )
        if done.exit_code != 0:
            raise TaskError(f"{where}: cutting the history after the base commit: {last}")
        kept = {REFS: sandbox.read(f"{work}/refs"), BUNDLE: sandbox.read(f"{work}/bundle")}
    finally:  # before the layer is sealed: no sandbox may ever mount what was cut
        removed = sandbox.run(f"rm -rf {work}", timeout)
    if removed.exit_code != 0:
        raise TaskError(f"{task.id}: git_history: {work} could not be removed: {removed.output}")
    return {name: data for name, data in kept.items() if data}


def keep_history(layers: LayerStore, checkpoint: str, kept: dict[str, bytes]) -> None:
    """Keep what `cut_history` returned as private files of `checkpoint` (checkpoint 0)."""
    for name, data in kept.items():
        keep_private(layers, checkpoint, name, data)


def saved_history(layers: LayerStore, base_checkpoint: str) -> dict[str, str]:
    """The private files the history cut from checkpoint 0 went to (name -> host path), of
    the nearest layer under `base_checkpoint` that has them (the oracle's checkpoint 0
    stacks on the task's); empty when nothing was cut."""
    for layer_id in layers.ancestry(base_checkpoint):
        found = {name: private_file(layers, layer_id, name) for name in (REFS, BUNDLE)}
        if any(found.values()):
            return {name: path for name, path in found.items() if path is not None}
    return {}
