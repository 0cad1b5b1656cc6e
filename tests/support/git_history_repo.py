"""A repository whose history goes on after its base commit, every way a published image's
can: a later commit holding the fix, a tag, a branch, a stash, reflog entries, a remote
with its tracking refs, notes, packed refs, FETCH_HEAD and ORIG_HEAD, a commit and a blob
nothing points to; and a working tree and index set-up left uncommitted. Each thing that
must not reach the agent holds a canary of its own."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

CANARIES = {
    "fix": "CANARY-FIX-5d1e0b",
    "tag": "CANARY-TAG-MESSAGE-77a2c4",
    "stash": "CANARY-STASH-9c41f0",
    "note": "CANARY-NOTE-3b8e12",
    "dangling commit": "CANARY-DANGLING-COMMIT-e02a9d",
    "loose blob": "CANARY-LOOSE-BLOB-4f6a88",
}
"""What must not be found anywhere in checkpoint 0's repository, by name."""
FIX_FILE = "fix.txt"
"""The file the fix commit adds (holding the fix's canary)."""
WORKING_TREE = {
    "calc.py": "def add(a, b):\n    return a - b\n# changed by set-up, not committed\n",
    "staged.txt": "staged by set-up\n",
    "untracked.txt": "left by set-up\n",
}
"""The working tree's files as the image has them, beside what the base commit holds."""


def git(repo: Path, *arguments: str, stdin: str | None = None) -> str:
    """Run this machine's git in `repo` with fixed names and dates (so commits are the same
    on every run) and no configuration of the machine's; its output, less its last newline."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@example.invalid",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@example.invalid",
        "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return done.stdout.rstrip("\n")


def make_history_repo(repo: Path) -> dict[str, str]:
    """Make the repository at `repo`: HEAD on `main` at the base commit. Returns the commits
    by name: `base`, its parent `first`, `fix`, and the `dangling` commit."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    git(repo, "add", "calc.py")
    git(repo, "commit", "-q", "-m", "first")
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "-a", "v0.1", "-m", "an old release", first)  # a tag on the base's past
    (repo / "README").write_text("calc\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / FIX_FILE).write_text(CANARIES["fix"] + "\n")
    git(repo, "add", FIX_FILE)
    git(repo, "commit", "-q", "-m", "the fix")
    fix = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "-a", "v1.0", "-m", CANARIES["tag"])
    git(repo, "branch", "later")
    git(repo, "notes", "add", "-m", CANARIES["note"], fix)
    git(repo, "remote", "add", "origin", "https://example.invalid/acme/calc.git")
    git(repo, "update-ref", "refs/remotes/origin/main", fix)
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    (repo / "stash.txt").write_text(CANARIES["stash"] + "\n")
    git(repo, "add", "stash.txt")
    git(repo, "stash", "-q")
    tree = git(repo, "mktree", stdin=_tree_line(repo, CANARIES["dangling commit"]))
    dangling = git(repo, "commit-tree", tree, "-p", fix, "-m", "nothing points here")
    git(repo, "hash-object", "-w", "--stdin", stdin=CANARIES["loose blob"] + "\n")
    git(repo, "pack-refs", "--all")
    git(repo, "repack", "-a", "-d", "-q")  # the fix and the stash in a pack, the rest loose
    git(repo, "reset", "-q", "--hard", base)  # ORIG_HEAD, and reflog entries at the fix
    (repo / ".git/FETCH_HEAD").write_text(f"{fix}\t\tbranch 'main' of https://example.invalid\n")
    for name, text in WORKING_TREE.items():
        (repo / name).write_text(text)
    git(repo, "add", "staged.txt")
    return {"first": first, "base": base, "fix": fix, "dangling": dangling}


def _tree_line(repo: Path, text: str) -> str:
    """An `ls-tree` line of a blob holding `text`, for `git mktree`."""
    blob = git(repo, "hash-object", "-w", "--stdin", stdin=text + "\n")
    return f"100644 blob {blob}\tsecret.txt\n"
