"""A sandbox's network, attacked from inside as a hostile policy would, in a world of
namespaces the test makes (tests/support/net_world.py): what reached each server is read
from its log on the host side of that world.

The probes run in the sandbox with the host image's python3; a probe's own verdict is
printed for the failure message only."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from sprout.sandbox.errors import BadArgument
from sprout.sandbox.network.namespace import REFUSE_ENV, refuse_addresses, refused_by_run
from tests.support.net_world import (
    ELSEWHERE,
    HOST_PRIVATE,
    INTERNET,
    INTERNET_NAME,
    NETWORK_MARKS,
    TARGETS,
    World,
    probe_command,
)

pytestmark = [*NETWORK_MARKS, pytest.mark.timeout(300)]


def _probe_command() -> str:
    return probe_command(TARGETS)


def test_public_reaches_the_internet_by_address_and_name_and_no_canary(world: World) -> None:
    out = world.in_sandbox(
        f"with Sandbox.create(store, network=True) as box:\n"
        f"    out['probe'] = box.run({_probe_command()!r}, timeout=120).output\n",
    )
    assert world.hits("internet") == ["/by-name", "/direct"], out["probe"]
    assert world.canary_hits() == {}, out["probe"]
    assert INTERNET_NAME in world.hits("resolver"), "the name went to this machine's resolver"


def test_none_reaches_nothing_but_its_own_loopback(world: World) -> None:
    out = world.in_sandbox(
        f"with Sandbox.create(store, network=False) as box:\n"
        f"    out['probe'] = box.run({_probe_command()!r}, timeout=120).output\n"
        "    out['lo'] = box.run('python3 -c \"import socket; s = socket.socket(); "
        "s.bind((\\'127.0.0.1\\', 0)); s.listen(); "
        "socket.create_connection(s.getsockname()); print(\\'ok\\')\"').output\n",
    )
    assert world.hits("internet") == [] and world.canary_hits() == {}, out["probe"]
    assert world.hits("resolver") == []
    assert out["lo"] == "ok\n"


RECONFIGURE = {
    "address": "ip addr add 10.0.2.50/24 dev tap0",
    "route": f"ip route add {HOST_PRIVATE}/32 via 10.0.2.2",
    "link": "ip link set tap0 down",
    "new link": "ip link add sprout0 type veth peer name sprout1",
    "firewall": "nft flush ruleset",
    "sysctl": "echo 1 > /proc/sys/net/ipv4/ip_forward",
    "raw socket": "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 6)'",
    "packet socket": "python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)'",
}


def test_root_inside_cannot_change_its_network_and_the_rules_still_hold(world: World) -> None:
    out = world.in_sandbox(
        f"with Sandbox.create(store, network=True) as box:\n"
        f"    out['codes'] = {{k: box.run(c).exit_code for k, c in {RECONFIGURE!r}.items()}}\n"
        f"    out['probe'] = box.run({_probe_command()!r}, timeout=120).output\n",
    )
    codes = out["codes"]
    assert isinstance(codes, dict) and all(code != 0 for code in codes.values()), codes
    assert 127 not in codes.values(), f"a tool of the attack is missing from the image: {codes}"
    assert world.canary_hits() == {}, out["probe"]
    assert world.hits("internet") == ["/by-name", "/direct"], out["probe"]


def test_a_fork_has_a_namespace_of_its_own_and_a_closed_sandbox_leaves_nothing(
    world: World,
) -> None:
    out = world.in_sandbox(
        "import os\n"
        "box = Sandbox.create(store, network=True)\n"
        "out['parent'] = box.run('readlink /proc/self/ns/net').output\n"
        "fork = Sandbox.fork(store, box.checkpoint(always=True))\n"
        "out['fork'] = fork.run('readlink /proc/self/ns/net').output\n"
        "out['again'] = box.run('readlink /proc/self/ns/net').output\n"
        "net = fork._backend.network\n"
        "pids = [net.holder.pid, net.stack.pid]\n"
        "out['links_open'] = os.popen('ip -o link').read().count('\\n')\n"
        "fork.close(); box.close()\n"
        "import time\n"
        "deadline = time.monotonic() + 10\n"  # reaped by a thread of their own
        "while any(os.path.exists(f'/proc/{p}') for p in pids) and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "out['alive'] = [p for p in pids if os.path.exists(f'/proc/{p}')]\n"
        "out['links_closed'] = os.popen('ip -o link').read().count('\\n')\n",
    )
    assert out["parent"] == out["again"] != out["fork"], out
    assert out["alive"] == [], "the holder and the stack end with their sandbox"
    assert out["links_open"] == out["links_closed"] == 2, "the host side gains no interface"


def test_the_stack_unmounts_nothing_of_the_hosts_shared_mounts(tmp_path: Path) -> None:
    """slirp4netns's own sandbox detaches its old root; from a namespace sharing the host's
    mounts that unmounted their host copies (the host's /run/netns/* were seen to go)."""
    shared, inner = tmp_path / "shared", tmp_path / "shared" / "inner"
    shared.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "sprout-canary", str(shared)], check=True)
    try:
        subprocess.run(["mount", "--make-shared", str(shared)], check=True)
        inner.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "sprout-canary-inner", str(inner)], check=True)
        with Sandbox.create(LayerStore(tmp_path / "layers"), network=True) as box:
            assert box.run("true").exit_code == 0
        assert inner.is_mount(), "the host's shared mount is still there"
    finally:
        subprocess.run(["umount", "-R", str(shared)], check=False)


def test_the_runs_model_server_is_refused_on_another_machines_public_address(
    world: World,
) -> None:
    """What `sprout run` does with --base-url (commands/common.refuse_model_servers): the
    "internet" stays reachable, the server at ELSEWHERE does not."""
    attempts = {"model": f"http://{ELSEWHERE}/v1/models", "internet": f"http://{INTERNET}/direct"}
    out = world.in_sandbox(
        "from sprout.commands.common import refuse_model_servers\n"
        f"refuse_model_servers(['http://{ELSEWHERE}:80/v1', None])\n"
        "with Sandbox.create(store, network=True) as box:\n"
        f"    out['probe'] = box.run({probe_command(attempts)!r}, timeout=120).output\n"
    )
    assert world.hits("elsewhere") == [], out
    assert world.hits("internet") == ["/direct"], out


def test_a_refused_address_that_is_none_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REFUSE_ENV, "198.51.100.8,not-an-address")
    with pytest.raises(BadArgument, match=f"^{REFUSE_ENV}: expected IPv4 .* got 'not-an-address'$"):
        refused_by_run()
    with pytest.raises(BadArgument, match=REFUSE_ENV):  # read, and refused, with nothing to add
        refuse_addresses([])
    monkeypatch.setenv(REFUSE_ENV, "")
    refuse_addresses(["198.51.100.8", "198.51.100.9", "198.51.100.8"])
    refuse_addresses(["198.51.100.9"])
    assert refused_by_run() == ["198.51.100.8/32", "198.51.100.9/32"]
