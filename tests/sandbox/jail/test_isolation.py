"""What a shell call cannot reach: processes outliving it, the host's files, devices,
hostname and network, and the store itself."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from tests.support.requirements import require_host_image

SAME_SESSION = {
    "ampersand": "sleep {m} & echo started",
    "nohup": "nohup sleep {m} >/dev/null 2>&1 & echo started",
    "subshell": "(sleep {m} &); echo started",
    "disown": "sleep {m} & disown; echo started",
    # the output pipe closes well before the command ends
    "closed-output": "echo started; exec >/dev/null 2>&1; sleep {m} & sleep 0.3",
}
"""Ways to leave a process behind that stay in the command's session."""

DETACHED = {
    "setsid": "setsid sleep {m} & echo started",
    "daemon": "setsid nohup sleep {m} </dev/null >/dev/null 2>&1 & echo started",
}
"""Ways that leave the session too: only a PID namespace catches these."""

PROMPT_S = 20
"""A call that returned without waiting for what it left running: it would wait its whole
timeout (30 s) or the sleep (1000 s and more) otherwise; the rest is room for a loaded machine."""

MINIMAL_DEV = {
    "null", "zero", "full", "random", "urandom", "tty",
    "pts", "shm", "ptmx", "fd", "stdin", "stdout", "stderr",
}  # fmt: skip


def test_process_scan_sees_a_live_process(procs, marker):
    """The scan the tests below rely on finds a process that is really there."""
    process = subprocess.Popen(["sleep", marker])
    try:
        deadline = time.monotonic() + 30
        while not procs.matching(marker) and time.monotonic() < deadline:
            time.sleep(0.01)  # Popen may return before the child has exec'd
        assert procs.matching(marker) == [process.pid]
    finally:
        process.kill()
        process.wait()
    assert procs.survivors(marker) == []


@pytest.mark.parametrize("variant", sorted(SAME_SESSION))
def test_background_process_ends_with_its_call(layers, procs, marker, variant):
    with Sandbox.create(layers) as sandbox:
        observation = sandbox.run(SAME_SESSION[variant].format(m=marker), timeout=30)
    assert observation.output == "started\n"
    assert observation.exit_code == 0
    assert observation.duration_s < PROMPT_S, "the call waited for its background child"
    assert procs.survivors(marker) == []


@pytest.mark.sandbox
@pytest.mark.parametrize("variant", sorted(DETACHED))
def test_detached_process_ends_with_its_call(overlay_store, procs, marker, variant):
    with Sandbox.create(overlay_store) as sandbox:
        observation = sandbox.run(DETACHED[variant].format(m=marker), timeout=30)
        assert observation.output == "started\n"
        assert observation.duration_s < PROMPT_S
        assert procs.survivors(marker) == []
        # the next call starts from a clean process table too
        assert "sleep" not in sandbox.run("ps -e -o comm=").output


def test_timeout_kills_the_whole_process_tree(layers, procs, marker):
    command = f"echo before; bash -c 'sleep {marker} & sleep {marker}' & sleep {marker}; echo after"
    with Sandbox.create(layers) as sandbox:
        observation = sandbox.run(command, timeout=1)
        assert observation.timed_out
        assert observation.exit_code is None
        assert 1 <= observation.duration_s < PROMPT_S
        assert observation.output == "before\n"
        assert procs.survivors(marker) == []
        # the sandbox stays usable after a timeout
        assert sandbox.run("echo ok").output == "ok\n"


@pytest.mark.sandbox
def test_write_to_etc_lands_in_the_layer_not_on_the_host(overlay_store, marker):
    name = f"sprout-probe-{marker}"
    hosts_before = Path("/etc/hosts").read_bytes()
    with Sandbox.create(overlay_store) as sandbox:
        observation = sandbox.run(f"echo {marker} > /etc/{name} && echo '# {marker}' >> /etc/hosts")
        assert observation.exit_code == 0, observation.output
        assert not os.path.exists(f"/etc/{name}")
        assert Path("/etc/hosts").read_bytes() == hosts_before
        upper = Path(overlay_store.diff_dir(sandbox.upper))
        assert (upper / "etc" / name).read_text() == f"{marker}\n"
        checkpoint = sandbox.checkpoint()
    sealed = Path(overlay_store.diff_dir(checkpoint))
    assert (sealed / "etc" / name).read_text() == f"{marker}\n"
    assert (sealed / "etc/hosts").read_bytes() == hosts_before + f"# {marker}\n".encode()
    with Sandbox.fork(overlay_store, checkpoint) as fork:
        assert fork.run(f"cat /etc/{name}").output == f"{marker}\n"
    assert not os.path.exists(f"/etc/{name}")
    assert Path("/etc/hosts").read_bytes() == hosts_before


@pytest.mark.sandbox
def test_only_harmless_devices_are_visible(overlay_store):
    host_block = {
        name for name in os.listdir("/dev") if stat.S_ISBLK(os.lstat(f"/dev/{name}").st_mode)
    }
    with Sandbox.create(overlay_store) as sandbox:
        listing = sandbox.run("ls -A /dev").output.split()
        block_devices = sandbox.run("find /dev -type b").output
        sys_block = sandbox.run("ls -A /sys/block 2>/dev/null | wc -l").output
        null_works = sandbox.run("echo gone > /dev/null && head -c 4 /dev/zero | wc -c").output
    assert set(listing) == MINIMAL_DEV
    assert not host_block & set(listing)
    assert block_devices == ""
    assert sys_block.strip() == "0"
    assert null_works.strip() == "4"


@pytest.mark.sandbox
def test_hostname_is_the_sandboxs_and_cannot_be_changed(overlay_store):
    host_name = socket.gethostname()
    with Sandbox.create(overlay_store) as sandbox:
        assert sandbox.run("hostname").output == "sprout\n"
        changed = sandbox.run("hostname changed-inside")
        assert changed.exit_code != 0, "root inside holds no capability over its UTS namespace"
        assert socket.gethostname() == host_name
        assert sandbox.run("hostname").output == "sprout\n"


def _interfaces(proc_net_dev: str) -> set[str]:
    return {line.split(":")[0].strip() for line in proc_net_dev.splitlines()[2:] if ":" in line}


LOOPBACK_PROBE = (
    'python3 -c \'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); '
    'c = socket.create_connection(s.getsockname(), timeout=5); print("loopback ok")\''
)


@pytest.mark.sandbox
def test_no_network_leaves_only_a_working_loopback(overlay_store):
    with Sandbox.create(overlay_store, network=False) as sandbox:
        assert _interfaces(sandbox.run("cat /proc/net/dev").output) == {"lo"}
        probe = sandbox.run(LOOPBACK_PROBE, timeout=30)
        assert probe.output == "loopback ok\n", probe.output
        checkpoint = sandbox.checkpoint()
    # a fork keeps the checkpoint's choice unless told otherwise
    with Sandbox.fork(overlay_store, checkpoint) as fork:
        assert _interfaces(fork.run("cat /proc/net/dev").output) == {"lo"}
    with Sandbox.fork(overlay_store, checkpoint, network=True) as fork:
        inside = _interfaces(fork.run("cat /proc/net/dev").output)
    assert inside == {"lo", "tap0"}


def _host_interfaces() -> set[str]:
    return _interfaces(Path("/proc/net/dev").read_text())


@pytest.mark.sandbox
def test_network_is_a_namespace_of_the_sandboxs_own_by_default(overlay_store):
    """Loopback and the user-mode stack's device, as root and rootless alike
    (tests/sandbox/network/test_network.py and test_network_rootless.py attack it)."""
    with Sandbox.create(overlay_store) as sandbox:
        inside = _interfaces(sandbox.run("cat /proc/net/dev").output)
    assert inside == {"lo", "tap0"} != _host_interfaces()


@pytest.mark.sandbox
def test_store_and_its_run_folder_are_not_in_the_host_image(tmp_path):
    require_host_image()
    run_folder = tmp_path / "run"
    store = LayerStore(run_folder / "layers")
    (run_folder / "sprout.db").write_text("secret")
    with Sandbox.create(store) as sandbox:
        sandbox.run("echo x > f")
        sandbox.checkpoint()
        observation = sandbox.run(
            f"ls -A {store.path}; ls {run_folder}; touch {store.path}/m/x; "
            f"cat {run_folder}/sprout.db"
        )
    assert observation.exit_code != 0
    assert "secret" not in observation.output
    assert observation.output.count("No such file or directory") == 4, observation.output
    assert os.listdir(os.path.join(store.path, "m")) != []
    assert not os.path.exists(os.path.join(store.path, "m", "x"))


@pytest.mark.sandbox
def test_pid_namespace_starts_fresh(overlay_store):
    with Sandbox.create(overlay_store) as sandbox:
        # PID 1 is the namespace's init (or the command itself)
        assert sandbox.run("echo $$").output in {"1\n", "2\n"}
        assert sandbox.run(f"ls -d /proc/{os.getpid()}").exit_code != 0


@pytest.mark.sandbox
def test_directory_image_is_read_only_underneath(overlay_available, tmp_path, minimal_rootfs):
    image_files = sorted(p.name for p in (minimal_rootfs / "etc").iterdir())
    store = LayerStore(tmp_path / "store")
    with Sandbox.create(store, image=str(minimal_rootfs)) as sandbox:
        listing = sandbox.run("ls /").output.split()
        assert set(listing) >= {"bin", "etc", "proc", "dev", "tmp", "workspace"}
        assert sandbox.run("cat /etc/hostname").output == "image\n"
        write = sandbox.run("echo inside > /etc/added && rm /bin/cat && ls /bin/cat")
        assert write.exit_code != 0
        checkpoint = sandbox.checkpoint()
    assert sorted(p.name for p in (minimal_rootfs / "etc").iterdir()) == image_files
    assert (minimal_rootfs / "bin/cat").exists()
    with Sandbox.fork(store, checkpoint) as fork:
        assert fork.run("echo $(ls /etc)").output == "added hostname\n"
        assert fork.run("ls /bin/cat").exit_code != 0
