"""No future in the agent's history: checkpoint 0 of a task with `git_history` keeps the
base commit, its ancestors and nothing else of the image's repository (no later commit,
tag, branch, stash, reflog entry, remote, note, packed ref, pseudo-ref or unreachable
object), with its working tree and index as the image had them; the verifier's throw-away
fork alone gets the rest back, from a place no sandbox mounts that lives as long as the
base layer does.

The image is the tests' minimal root filesystem with git and grep, and a repository made
here (`tests.support.git_history_repo`) at /repo, in a machine cache of the test's own."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sprout.images import ImageCache
from sprout.images.base_layers import shared_store
from sprout.images.gc import collect
from sprout.images.oci import import_image
from sprout.sandbox import LayerStore, Sandbox
from sprout.task import GitHistory, Task, TaskError
from sprout.tasks import base_checkpoint_of
from sprout.tasks.setup.git_history import BUNDLE, REFS, saved_history
from sprout.verify import run_verifier
from tests.support.git_history_repo import CANARIES, FIX_FILE, WORKING_TREE, git, make_history_repo
from tests.support.oci_archives import docker_save, rootfs_layer
from tests.support.requirements import require_host_image
from tests.support.rootfs import build_rootfs

pytestmark = pytest.mark.sandbox

IMAGE = "acme/history:1"
NO_GIT_IMAGE = "acme/no-git:1"
PROBE = """cd /repo
echo "== head"; git rev-parse HEAD
echo "== status"; git status --porcelain
echo "== objects"; git cat-file --batch-all-objects --batch-check='%(objectname)'
echo "== log"; git log --all --format='%H %s'; git rev-list --all --reflog --objects
echo "== contents"; git cat-file --batch-all-objects --batch
echo "== refs"; git for-each-ref; git show-ref; git branch -a -v; git tag -l -n9
echo "== reflog"; git reflog; git stash list; git notes list; git remote -v
echo "== packs"
for i in .git/objects/pack/*.idx; do git verify-pack -v "$i"; git show-index < "$i"; done
echo "== files"; ls -a / .git; cat .git/packed-refs .git/FETCH_HEAD .git/ORIG_HEAD 2>&1
echo "== grep"; grep -r -a -l -e CANARY {shas} /repo/.git /repo /root /tmp
echo "== fsck"; git fsck --unreachable --no-reflogs --lost-found 2>&1; ls -R .git/lost-found
"""
"""Every way the agent could look for what was cut, from inside its sandbox."""


@pytest.fixture
def history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minimal_rootfs: Path
) -> dict[str, str]:
    """IMAGE in a machine cache of this test's own (and NO_GIT_IMAGE, the minimal root
    filesystem): the repository's commits by name, and what the image's repository shows."""
    require_host_image()
    monkeypatch.setenv("SPROUT_CACHE", str(tmp_path / "machine-cache"))
    tarball = docker_save(tmp_path / "no-git.tar", [rootfs_layer(minimal_rootfs)], NO_GIT_IMAGE)
    import_image(tarball, NO_GIT_IMAGE)
    root = tmp_path / "rootfs"
    build_rootfs(root, extra=("git", "grep"))
    commits = make_history_repo(root / "repo")
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
    status = git(root / "repo", "status", "--porcelain") + "\n"  # refreshes the index first
    index = (root / "repo/.git/index").read_bytes()
    kept = git(root / "repo", "rev-list", "--objects", commits["base"]).splitlines()
    staged = git(root / "repo", "ls-files", "--stage").splitlines()
    objects = {line.split()[0] for line in kept} | {line.split()[1] for line in staged}
    tarball = docker_save(tmp_path / "image.tar", [rootfs_layer(root)], IMAGE)
    import_image(tarball, IMAGE)
    return {**commits, "status": status, "index": index.hex(), "objects": " ".join(objects)}


def history_task(tmp_path: Path, base: str, **fields: object) -> Task:
    (tmp_path / "task").mkdir(exist_ok=True)
    values: dict[str, object] = {
        "id": "acme__calc-1",
        "path": tmp_path / "task",
        "instruction": "Make add() add.",
        "image": IMAGE,
        "workdir": "/repo",
        "network": False,
        "setup_network": False,
        "verifier_network": False,
        "results": "exit-code",
        "git_history": GitHistory(repo="/repo", base_commit=base),
        **fields,
    }
    return Task.model_validate(values)


def hidden(history: dict[str, str]) -> list[str]:
    """What must not show anywhere: the canaries, and the ids of the commits after the base."""
    return [*CANARIES.values(), history["fix"], history["dangling"], history["fix"][:12]]


def probe(sandbox: Sandbox, history: dict[str, str]) -> str:
    shas = " ".join(f"-e {sha}" for sha in (history["fix"], history["dangling"]))
    return sandbox.run(PROBE.replace("{shas}", shas), timeout=120).output


def section(output: str, name: str) -> list[str]:
    """The lines the probe printed under `== NAME`."""
    lines = output.splitlines()
    start = lines.index(f"== {name}") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("== ")), len(lines))
    return lines[start:end]


def test_checkpoint_0_keeps_the_base_commit_its_ancestors_and_nothing_after_them(
    history: dict[str, str], tmp_path: Path
) -> None:
    layers = LayerStore(tmp_path / "run" / "layers")
    task = history_task(tmp_path, history["base"])
    base = base_checkpoint_of(task, layers)
    for name, text in WORKING_TREE.items():  # the working tree and index as the image has them
        assert layers.read(base, f"/repo/{name}") == text.encode()
    assert layers.read(base, "/repo/.git/index") == bytes.fromhex(history["index"])
    assert layers.read(base, f"/repo/{FIX_FILE}") is None
    with Sandbox.fork(layers, base) as agent:
        seen = probe(agent, history)
        assert agent.run("git checkout -q -b later && echo work >> calc.py").exit_code == 0
        agent.run("git -c user.name=a -c user.email=a@b commit -qam 'the agent' && git gc -q")
        turn = agent.checkpoint()
    assert section(seen, "head") == [history["base"]]
    assert "\n".join(section(seen, "status")) + "\n" == history["status"]
    assert set(section(seen, "objects")) == set(history["objects"].split())
    assert section(seen, "grep") == [] and not any(".sprout" in n for n in section(seen, "files"))
    for secret in hidden(history):
        assert secret not in seen, f"{secret} found in checkpoint 0:\n{seen}"
    with Sandbox.fork(layers, turn) as later:  # a fork of the agent's own turn
        seen = probe(later, history)
    for secret in hidden(history):
        assert secret not in seen, f"{secret} found after the agent's turn:\n{seen}"


def test_the_verifier_alone_gets_the_cut_history_back(
    history: dict[str, str], tmp_path: Path
) -> None:
    layers = LayerStore(tmp_path / "run" / "layers")
    fix, dangling = history["fix"], history["dangling"]
    check = (
        f"cd /repo && git checkout {fix} -- {FIX_FILE} && grep -q {CANARIES['fix']} {FIX_FILE}"
        f" && git cat-file -e {dangling} && git stash list | grep -q 'stash@{{0}}'"
        f" && test \"$(git rev-parse 'refs/tags/v1.0^{{commit}}')\" = {fix}"
        " && git show-ref -q --verify refs/remotes/origin/main refs/notes/commits refs/tags/v0.1"
        ' && test "$(git rev-parse refs/heads/later)" = "$LATER"'
    )
    task = history_task(tmp_path, history["base"], verifier_command=check)
    base = base_checkpoint_of(task, layers)
    with Sandbox.fork(layers, base) as agent:  # the agent works on a branch of a cut name
        agent.run("git checkout -q -b later && echo work >> calc.py")
        agent.run("git -c user.name=a -c user.email=a@b commit -qam 'the agent'")
        mine = agent.run("git rev-parse HEAD").output.strip()
        turn = agent.checkpoint()
    for checkpoint, later in ((base, fix), (turn, mine)):  # its branch stays the agent's
        judged = task.model_copy(update={"verifier_env": {"LATER": later}})
        verdict = run_verifier(judged, layers, checkpoint, base)
        assert verdict.reward == 1, verdict.diagnostics.log_tail
    with Sandbox.fork(layers, turn) as after:  # nothing of it stayed in a layer
        assert after.run(f"git cat-file -e {fix} || echo gone").output.strip() == "gone"

    saved = saved_history(layers, base)
    assert set(saved) == {BUNDLE, REFS}
    machine = shared_store(layers)
    assert machine is not None
    mounted = [
        os.path.realpath(folder)
        for folder in [
            *(layers.diff_dir(i) for i in [*layers.stack(turn), *layers.stack(base)]),
            *(ImageCache().root,),
        ]
    ]
    for path in saved.values():
        real = os.path.realpath(path)
        assert real.startswith(os.path.realpath(machine.path) + "/p/")
        assert not any(real.startswith(folder + "/") for folder in mounted), real
    heads = subprocess.run(["git", "bundle", "list-heads", saved[BUNDLE]], capture_output=True)
    assert f"{fix} refs/heads/later" in heads.stdout.decode()
    assert f"{dangling} refs/sprout-cut/{dangling}" in Path(saved[REFS]).read_text()


def test_the_cut_history_lives_as_long_as_its_base_layer(
    history: dict[str, str], tmp_path: Path
) -> None:
    first, second = LayerStore(tmp_path / "run-a"), LayerStore(tmp_path / "run-b")
    task = history_task(tmp_path, history["base"])
    base = base_checkpoint_of(task, first)
    assert base_checkpoint_of(task, second) == base
    machine = shared_store(first)
    assert machine is not None
    kept = {name: os.path.realpath(path) for name, path in saved_history(machine, base).items()}
    for run in (first, second):  # each run's store links the machine's files
        linked = saved_history(run, base)
        assert {name: os.path.realpath(path) for name, path in linked.items()} == kept != {}
    collect(keep_days=0)  # the runs link the base layer: it stays, with its history
    assert all(os.path.isfile(path) for path in kept.values())
    for run in (first, second):  # both runs forget it: the base layer and its history go
        for ref in Path(run.refs_dir).iterdir():
            ref.unlink()
        run.gc()
    collect(keep_days=0)
    assert base not in machine.sealed_ids()
    assert not any(os.path.exists(path) for path in kept.values())


@pytest.mark.parametrize("fault", ["head", "repo", "git"])
def test_a_repository_sprout_cannot_cut_is_one_line_naming_the_task(
    fault: str, history: dict[str, str], tmp_path: Path
) -> None:
    base, first = history["base"], history["first"]
    task = {
        "head": history_task(tmp_path, first),
        "repo": history_task(tmp_path, base, git_history=GitHistory(repo="/bin", base_commit=base)),
        "git": history_task(tmp_path, base, image=NO_GIT_IMAGE),
    }[fault]
    with pytest.raises(TaskError) as raised:
        base_checkpoint_of(task, LayerStore(tmp_path / "run"))
    message = str(raised.value)
    assert "\n" not in message and message.startswith("acme__calc-1: git_history")
    assert message.endswith(
        {
            "head": f"/repo: HEAD is at {base}, not at base commit {first} "
            "(the task's set-up must check it out)",
            "repo": ".repo: /bin is no git repository's top folder",
            "git": "/repo: the image has no git to cut its later history with",
        }[fault]
    )
