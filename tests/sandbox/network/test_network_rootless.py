"""A rootless sandbox's network, attacked from inside as in test_network.py: run by `nobody`
on the host of a world of namespaces the test made (tests/support/net_world.py), in an
image of its own holding curl, ip and nft, with what reached each server read from the
servers' logs."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.net_world import (
    ABSTRACT_SOCKET,
    ELSEWHERE,
    ELSEWHERE_NAME,
    HOST_PRIVATE,
    INTERNET_NAME,
    NETWORK_MARKS,
    World,
)
from tests.support.net_world import TARGETS as NET_TARGETS
from tests.support.nobody import NOBODY, switch_user_prefix
from tests.support.rootfs import build_rootfs

pytestmark = [*NETWORK_MARKS, pytest.mark.timeout(300)]

TARGETS = {
    **NET_TARGETS,
    "elsewhere-by-name": f"http://{ELSEWHERE_NAME}/elsewhere-by-name",
    "elsewhere": f"http://{ELSEWHERE}/elsewhere",
}
ATTACKS = {
    "address": "ip addr add 10.0.2.50/24 dev tap0",
    "route": f"ip route add {HOST_PRIVATE}/32 via 10.0.2.2",
    "link": "ip link set tap0 down",
    "new link": "ip link add sprout0 type veth peer name sprout1",
    "firewall": "nft flush ruleset",
}
SCRIPT = r"""
import json, sys
from sprout.sandbox import LayerStore, Sandbox
image, path, network, targets, attacks, abstract = sys.argv[1:7]
network = json.loads(network)
out = {"fetched": {}}
with Sandbox.create(LayerStore(path), image=image, network=network) as box:
    out["codes"] = {k: box.run(c).exit_code for k, c in json.loads(attacks).items()}
    for name, url in json.loads(targets).items():
        out["fetched"][name] = box.run(f"curl -gsS -m 3 {url}", timeout=60).output
    out["fetched"]["abstract"] = box.run(
        f"curl -sS -m 3 --abstract-unix-socket {abstract} http://canary/abstract", timeout=60
    ).output
    out["net"] = box.run("readlink /proc/self/ns/net").output
    network = box._backend.network
    out["pids"] = [network.holder.pid, network.stack.pid]
print(json.dumps(out))
"""


@pytest.fixture
def net_image(nobody_dir: Path) -> Path:
    """`nobody`'s image: the minimal one with curl, ip and nft, DNS pointed at the stack."""
    missing = [tool for tool in ("curl", "ip", "nft", "readlink") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the rootless network image needs {', '.join(missing)} on this machine")
    image = nobody_dir / "net-image"
    build_rootfs(image, extra=("curl", "ip", "nft", "readlink"))
    (image / "etc/resolv.conf").write_text("nameserver 10.0.2.3\n")
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(image)], check=True)
    return image


def _run_as_nobody(
    world: World, env: dict[str, str], folder: Path, image: Path, network: object
) -> dict[str, object]:
    arguments = (str(image), str(folder / "store"), json.dumps(network), json.dumps(TARGETS))
    return world.run(
        SCRIPT,
        env=env,
        arguments=(*arguments, json.dumps(ATTACKS), ABSTRACT_SOCKET),
        user=tuple(switch_user_prefix()),
    )


def test_a_rootless_public_sandbox_reaches_the_internet_and_no_canary(
    world: World, nobody_env: dict[str, str], nobody_dir: Path, net_image: Path
) -> None:
    """Rootless, root inside owns its user namespace but not its network's: the firewall
    sprout wrote holds, and no host address is reached."""
    out = _run_as_nobody(world, nobody_env, nobody_dir, net_image, True)
    _assert_held(world, out)
    assert world.hits("internet") == ["/by-name", "/direct"], out["fetched"]
    assert world.hits("elsewhere") == ["/elsewhere-by-name", "/elsewhere"], out["fetched"]


def test_a_rootless_allowlist_reaches_its_host_alone(
    world: World, nobody_env: dict[str, str], nobody_dir: Path, net_image: Path
) -> None:
    """The allow-list's resolver and firewall work for an unprivileged owner too: the
    listed name is reached, by name and by the address it resolved to; the other host of
    the same "internet" is not, by name or by address."""
    out = _run_as_nobody(world, nobody_env, nobody_dir, net_image, [INTERNET_NAME])
    _assert_held(world, out)
    assert world.hits("internet") == ["/by-name", "/direct"], out["fetched"]
    assert world.hits("elsewhere") == [], out["fetched"]
    assert ELSEWHERE_NAME not in world.hits("resolver"), "an unlisted name was never asked"


def _assert_held(world: World, out: dict[str, object]) -> None:
    codes = out["codes"]
    assert isinstance(codes, dict) and all(code != 0 for code in codes.values()), codes
    assert 127 not in codes.values(), f"a tool of the attack is missing from the image: {codes}"
    assert world.canary_hits() == {}, out["fetched"]
    host_net = subprocess.run(
        [*world.enter(), "readlink", "/proc/self/ns/net"], capture_output=True, text=True
    ).stdout
    assert out["net"] != host_net, "the sandbox has a network namespace of its own"
    pids = out["pids"]
    assert isinstance(pids, list)
    assert _gone_soon(pids), "the holder and the stack end with their sandbox"


def _gone_soon(pids: list[int]) -> bool:
    """Killed at the close, they may take a moment to be reaped."""
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
