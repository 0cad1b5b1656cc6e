"""Forks: any checkpoint becomes a new writable sandbox, isolated from every other."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sprout.sandbox import Sandbox
from tests.support.file_tree import tree_snapshot


def test_forks_of_one_checkpoint_are_isolated(layers):
    with Sandbox.create(layers) as original:
        original.run("echo original > shared && mkdir dir && echo inner > dir/inner")
        checkpoint = original.checkpoint()
        sealed_before = tree_snapshot(layers.diff_dir(checkpoint))
        with Sandbox.fork(layers, checkpoint) as a, Sandbox.fork(layers, checkpoint) as b:
            a.run("echo a > only_a && echo changed-by-a > shared && echo a >> dir/inner")
            b.run("echo b > only_b && rm shared && rm -r dir")
            original.run("echo later > only_original")
            assert a.run("ls").output == "dir\nonly_a\nshared\n"
            assert a.run("cat shared dir/inner").output == "changed-by-a\ninner\na\n"
            assert b.run("ls").output == "only_b\n"
            assert original.run("ls").output == "dir\nonly_original\nshared\n"
            assert original.run("cat shared dir/inner").output == "original\ninner\n"
            from_a, from_b = a.checkpoint(), b.checkpoint()
    assert len({checkpoint, from_a, from_b}) == 3
    assert layers.layer(from_a).parent == checkpoint
    assert layers.layer(from_b).parent == checkpoint
    assert tree_snapshot(layers.diff_dir(checkpoint)) == sealed_before
    with Sandbox.fork(layers, checkpoint) as again:
        assert again.run("ls; cat shared dir/inner").output == "dir\nshared\noriginal\ninner\n"
    with Sandbox.fork(layers, from_a) as again:
        assert again.run("ls").output == "dir\nonly_a\nshared\n"
    with Sandbox.fork(layers, from_b) as again:
        assert again.run("ls").output == "only_b\n"


def test_fork_of_a_fork_stacks_on_both(layers):
    with Sandbox.create(layers) as sandbox:
        sandbox.run("echo 1 > one")
        first = sandbox.checkpoint()
    with Sandbox.fork(layers, first) as child:
        child.run("echo 2 > two")
        second = child.checkpoint()
    with Sandbox.fork(layers, second) as grandchild:
        grandchild.run("rm one")
        third = grandchild.checkpoint()
    assert layers.ancestry(third)[:3] == [third, second, first]
    for checkpoint, expected in ((first, "one\n"), (second, "one\ntwo\n"), (third, "two\n")):
        with Sandbox.fork(layers, checkpoint) as fork:
            assert fork.run("ls").output == expected


@pytest.mark.sandbox
def test_fork_copies_nothing(overlay_store):
    with Sandbox.create(overlay_store) as sandbox:
        sandbox.run("head -c 5000000 /dev/urandom > big && mkdir many && touch many/f{1..500}")
        checkpoint = sandbox.checkpoint()
    with Sandbox.fork(overlay_store, checkpoint) as fork:
        assert fork.run("wc -c < big && ls many | wc -l").output == "5000000\n500\n"
        assert os.listdir(overlay_store.diff_dir(fork.upper)) == []


def test_eight_sandboxes_run_concurrently(layers):
    with Sandbox.create(layers) as sandbox:
        sandbox.run("echo base > base")
        base = sandbox.checkpoint()
    start = threading.Barrier(8)

    def attempt(index: int) -> tuple[str, str, str]:
        try:
            with Sandbox.fork(layers, base) as fork:
                start.wait()  # all eight are open at once, however long opening them takes
                fork.run(f"echo {index} > own{index} && sleep 0.2")
                checkpoint = fork.checkpoint()
        except BaseException:
            start.abort()  # the others stop waiting: the test fails with this error, at once
            raise
        with Sandbox.fork(layers, checkpoint) as again:
            return checkpoint, again.run("ls").output, again.run(f"cat own{index}").output

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(attempt, range(8)))
    assert len({checkpoint for checkpoint, _, _ in results}) == 8
    for index, (checkpoint, listing, content) in enumerate(results):
        assert layers.layer(checkpoint).parent == base
        assert listing == f"base\nown{index}\n"
        assert content == f"{index}\n"


def build_wheel(directory: Path, name: str, value: str) -> Path:
    """A minimal pure-Python wheel, written directly (a wheel is a zip with three metadata
    files), so no build backend or network is needed."""
    info = f"{name}-1.0.dist-info"
    files = {
        f"{name}/__init__.py": f'VALUE = "{value}"\n',
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: sprout-tests\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ),
    }
    record = []
    for path, text in files.items():
        digest = hashlib.sha256(text.encode()).digest()
        encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        record.append(f"{path},sha256={encoded},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    wheel = directory / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


SYSTEM_PYTHON = "/usr/bin/python3"
"""The machine's own Python: the `host` image shows /usr, never a checkout's virtualenv."""


@pytest.mark.sandbox
def test_pip_install_lands_in_the_layer_and_forks_never_on_the_host(
    overlay_store, tmp_path, marker
):
    has_pip = subprocess.run([SYSTEM_PYTHON, "-m", "pip", "--version"], capture_output=True)
    if has_pip.returncode != 0:
        pytest.skip(f"{SYSTEM_PYTHON} has no pip (apt-get install python3-pip)")
    name = "sprout_probe_" + marker.replace(".", "_")
    site_packages = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    files = tmp_path / "files"
    files.mkdir()
    wheel = build_wheel(files, name, marker)
    host_import = [SYSTEM_PYTHON, "-c", f"import {name}"]
    install = (
        f"{SYSTEM_PYTHON} -m pip install --no-index --no-deps --no-cache-dir "
        f"--break-system-packages --disable-pip-version-check /workspace/{wheel.name}"
    )
    probe = f"{SYSTEM_PYTHON} -c 'import {name}; print({name}.VALUE)'"
    with Sandbox.create(overlay_store, files=files) as sandbox:
        before = sandbox.parent
        installed = sandbox.run(install, timeout=120)
        assert installed.exit_code == 0, installed.output
        assert sandbox.run(probe).output == f"{marker}\n"
        added = {change.path for change in sandbox.changes() if change.kind == "added"}
        assert f"{site_packages}/{name}/__init__.py" in added
        checkpoint = sandbox.checkpoint()
    layer = Path(overlay_store.diff_dir(checkpoint))
    assert (layer / site_packages.lstrip("/") / name / "__init__.py").is_file()
    assert not os.path.exists(os.path.join(site_packages, name))
    assert subprocess.run(host_import, capture_output=True).returncode != 0
    with Sandbox.fork(overlay_store, checkpoint) as fork:
        assert fork.run(probe).output == f"{marker}\n"
    with Sandbox.fork(overlay_store, before) as fork:
        assert fork.run(probe).exit_code != 0
