"""Tasks' base layers over an image of the cache: built once per machine, linked by every run."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from sprout.images import ImageCache, machine_network
from sprout.images.base_layers import shared_store
from sprout.images.gc import collect
from sprout.images.machine_network import CA_BUNDLE
from sprout.sandbox import LayerStore, Sandbox
from sprout.tasks import base_checkpoint_of, load_native
from tests.support.tool_image import TOOL_IMAGE, greet_task

pytestmark = pytest.mark.sandbox


def test_two_runs_share_one_build_of_a_base_layer(tool_cache: ImageCache, tmp_path: Path):
    task = load_native(greet_task(tmp_path / "tasks"))
    assert task.image == TOOL_IMAGE and task.warnings == ()
    first, second = LayerStore(tmp_path / "run-a" / "layers"), LayerStore(tmp_path / "run-b")
    base = base_checkpoint_of(task, first)
    assert base_checkpoint_of(task, second) == base, "the second run linked the first one's build"
    machine = shared_store(first)
    assert machine is not None and machine.layer(base)
    built = {layer.id for layer in machine.layers()}
    for store in (first, second):
        with Sandbox.fork(store, base) as sandbox:
            seen = sandbox.run("cat twice; cat /etc/hosts")
        assert seen.output.startswith("hello\nhello\n") and "localhost" in seen.output
    assert {layer.id for layer in machine.layers()} == built, "nothing was built twice"
    notes = [json.loads(p.read_text()) for p in Path(machine.path, "users").iterdir()]
    assert all(note["layers"] == [base] for note in notes)
    users = sorted(note["store"] for note in notes)
    assert users == sorted([first.path, second.path])

    first.gc()
    with Sandbox.fork(second, base) as sandbox:  # a run's GC drops its links, not the files
        assert sandbox.run("cat twice").output == "hello\nhello\n"
    (Path(first.path) / "r").rename(Path(first.path) / "r-gone")  # forget every ref of run a
    (Path(first.path) / "r").mkdir()
    first.gc()
    assert {layer.id for layer in machine.layers()} == built


def test_concurrent_runs_wait_for_one_build(tool_cache: ImageCache, tmp_path: Path):
    task = load_native(greet_task(tmp_path / "tasks"))
    stores = [LayerStore(tmp_path / f"run-{i}") for i in range(3)]
    found: list[str] = []
    threads = [
        threading.Thread(target=lambda s=s: found.append(base_checkpoint_of(task, s)))
        for s in stores
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 3 and len(set(found)) == 1


def test_a_host_task_keeps_its_base_layer_in_its_own_run(tool_cache: ImageCache, tmp_path: Path):
    folder = greet_task(tmp_path / "tasks")
    (folder / "task.toml").write_text('version = "1.0"\n[sprout]\nimage = "host"\n')
    store = LayerStore(tmp_path / "run")
    base_checkpoint_of(load_native(folder), store)
    machine = shared_store(store)
    assert machine is not None and machine.layers() == []


def test_gc_keeps_what_runs_link_and_frees_the_rest(tool_cache: ImageCache, tmp_path: Path):
    from sprout.cli import main

    task = load_native(greet_task(tmp_path / "tasks"))
    run_a, run_b = tmp_path / "run-a", tmp_path / "run-b"
    base = base_checkpoint_of(task, LayerStore(run_a / "layers"))
    base_checkpoint_of(task, LayerStore(run_b / "layers"))
    machine = shared_store(LayerStore(run_b / "layers"))
    assert machine is not None
    assert collect(keep_days=0).bases == 0, "both runs link it"
    shutil.rmtree(run_a)
    [digest] = [image.digest for image in tool_cache.images()]
    kept = {digest: "base layers of the machine's cache stand on it"}
    done = collect(keep_days=0, images=True)
    assert (done.bases, done.images, done.kept_images) == (0, [], kept), "run b links it"
    assert done.orphans == [str(run_a / "layers")] and done.bytes_freed == 0, "only counted"
    with Sandbox.fork(LayerStore(run_b / "layers"), base) as sandbox:
        assert sandbox.run("cat twice").output == "hello\nhello\n"
    shutil.rmtree(run_b)
    assert collect().bases == 0, "used today: kept for a week"
    assert main(["gc", "--keep-days", "-1"]) == 2
    assert main(["gc", "--keep-days", "0", "--images"]) == 0
    assert machine.layers() != [], "deleted or moved: the runs' stores may still be used"
    assert main(["gc", "--keep-days", "0", "--images", "--orphan"]) == 0
    assert machine.layers() == [] and tool_cache.images() == []


def test_gc_leaves_images_that_a_base_layer_stands_on(tool_cache: ImageCache, tmp_path: Path):
    base_checkpoint_of(load_native(greet_task(tmp_path / "tasks")), LayerStore(tmp_path / "run"))
    done = collect(keep_days=0, images=True)
    assert done.images == [] and [image.names for image in tool_cache.images()] == [(TOOL_IMAGE,)]


def test_a_base_layer_trusts_what_this_machine_trusts(
    tool_cache: ImageCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A mirror or proxy that re-signs TLS has its own authority: set-up steps and verifiers
    reach it only if the base layer's bundle holds it besides the image's own."""
    proxy_ca = b"-----BEGIN CERTIFICATE-----\nUFJPWFk=\n-----END CERTIFICATE-----\n"
    (tmp_path / "machine.pem").write_bytes(proxy_ca)
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "machine.pem"))
    base = base_checkpoint_of(
        load_native(greet_task(tmp_path / "tasks")), LayerStore(tmp_path / "r")
    )
    store = LayerStore(tmp_path / "r")
    bundle = store.read(base, "/etc/ssl/certs/ca-certificates.crt")
    assert bundle is not None and proxy_ca.strip() in bundle
    with Sandbox.fork(store, base) as sandbox:
        assert sandbox.run("echo $SSL_CERT_FILE").output == f"{CA_BUNDLE}\n", "the agent's too"


def test_the_agent_gets_the_machines_index_settings_and_still_no_network(
    tool_cache: ImageCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The agent's pip and uv ask the registry the machine asks (a task with no network
    gets the same variables, which reach nothing), never with a token of sprout's own
    environment; the task's own variables win."""
    monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "none.conf"))
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://bot:env-token@private.example/simple")
    monkeypatch.setenv("PIP_TRUSTED_HOST", "mirror.example")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    toml = (
        'version = "1.0"\n[sprout]\nnetwork = false\n'
        'env = { UV_DEFAULT_INDEX = "https://own.example" }\n'
    )
    task = load_native(greet_task(tmp_path / "tasks", toml))
    store = LayerStore(tmp_path / "run")
    with Sandbox.fork(store, base_checkpoint_of(task, store)) as agent:
        env = dict(
            line.split("=", 1) for line in agent.run("env").output.splitlines() if "=" in line
        )
        interfaces = agent.run("cat /proc/net/dev").output
    assert env["PIP_INDEX_URL"] == "https://mirror.example/simple"
    assert env["UV_DEFAULT_INDEX"] == "https://own.example", "the task's own wins"
    assert env["PIP_TRUSTED_HOST"] == env["UV_INSECURE_HOST"] == "mirror.example"
    assert env["HTTPS_PROXY"] == "http://proxy.example:3128"
    assert env["SSL_CERT_FILE"] == CA_BUNDLE
    assert "PIP_EXTRA_INDEX_URL" not in env and "env-token" not in str(env)
    names = {line.split(":")[0].strip() for line in interfaces.splitlines() if ":" in line}
    assert names == {"lo"}, "network = false: loopback only"


def test_a_base_layer_is_built_again_only_when_what_its_set_up_saw_changes(
    tool_cache: ImageCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 10.0.0.1\n")
    bundle = tmp_path / "machine.pem"
    bundle.write_bytes(b"-----BEGIN CERTIFICATE-----\nT05F\n-----END CERTIFICATE-----\n")
    monkeypatch.setattr(machine_network, "RESOLV_CONF", resolv)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    task = load_native(greet_task(tmp_path / "tasks"))
    store = LayerStore(tmp_path / "run")
    base = base_checkpoint_of(task, store)
    assert base_checkpoint_of(task, LayerStore(tmp_path / "other")) == base, "nothing changed"
    bundle.write_bytes(b"-----BEGIN CERTIFICATE-----\nVFdP\n-----END CERTIFICATE-----\n")
    with_new_authority = base_checkpoint_of(task, store)
    assert with_new_authority != base
    assert b"VFdP" in (store.read(with_new_authority, CA_BUNDLE) or b"")
    resolv.write_text("nameserver 10.0.0.2\n")
    with_new_resolver = base_checkpoint_of(task, store)
    assert with_new_resolver not in (base, with_new_authority)
    assert store.read(with_new_resolver, "/etc/resolv.conf") == b"nameserver 10.0.0.2\n"
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    assert base_checkpoint_of(task, store) not in (base, with_new_authority, with_new_resolver)
