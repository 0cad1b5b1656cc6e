"""The `allowlist` network, attacked from inside in the world of tests/support/net_world.py:
it reaches the listed host and port and nothing else, whatever the sandbox does to its own
name lookups, and the names it may not reach never leave the sandbox's own resolver.

What reached each server is read from its log on the host side of the world."""

from __future__ import annotations

import pytest

from tests.support.net_world import (
    ELSEWHERE,
    ELSEWHERE_NAME,
    HOST_OWN,
    HOST_PRIVATE,
    INTERNET,
    INTERNET_NAME,
    METADATA,
    NETWORK_MARKS,
    RESOLVER,
    World,
    probe_command,
)

pytestmark = [*NETWORK_MARKS, pytest.mark.timeout(300)]

ATTEMPTS = {
    "listed": f"http://{INTERNET_NAME}/listed",
    "other port": f"http://{INTERNET_NAME}:8081/other-port",
    "other name": f"http://{ELSEWHERE_NAME}/other-name",
    "other address": f"http://{ELSEWHERE}/other-address",
    "host-loopback": "http://127.0.0.1:8080/hostlo",
    "host-private": f"http://{HOST_PRIVATE}:8080/private",
    "host-own": f"http://{HOST_OWN}:8080/own",
    "metadata": f"http://{METADATA}/latest/meta-data/",
}


def _run(world: World, network: list[str], *commands: str) -> dict[str, object]:
    """Each command's output, in a sandbox of `network`, in order."""
    body = f"with Sandbox.create(store, network={network!r}) as box:\n"
    for index, command in enumerate(commands):
        body += f"    out[{str(index)!r}] = box.run({command!r}, timeout=120).output\n"
    return world.in_sandbox(body)


def test_the_listed_host_and_port_and_nothing_else(world: World) -> None:
    out = _run(world, [f"{INTERNET_NAME}:80"], probe_command(ATTEMPTS))
    assert world.hits("internet") == ["/listed"], out
    assert world.hits("internet-8081") == [] and world.hits("elsewhere") == [], out
    assert world.canary_hits() == {}, out
    asked = world.hits("resolver")
    assert INTERNET_NAME in asked and ELSEWHERE_NAME not in asked, "refused before it left"


def test_an_address_is_reached_only_once_its_listed_name_resolved_to_it(world: World) -> None:
    by_address = probe_command({"by address": f"http://{INTERNET}/by-address"})
    by_name = probe_command({"by name": f"http://{INTERNET_NAME}/by-name"})
    out = _run(world, [INTERNET_NAME], by_address, by_name, by_address)
    assert world.hits("internet") == ["/by-name", "/by-address"], out


def test_an_address_entry_reaches_that_address_and_port_alone(world: World) -> None:
    attempts = {
        "listed": f"http://{ELSEWHERE}/listed",
        "by its name": f"http://{ELSEWHERE_NAME}/by-its-name",
        "other host": f"http://{INTERNET}/other-host",
    }
    out = _run(world, [f"{ELSEWHERE}:80"], probe_command(attempts))
    assert world.hits("elsewhere") == ["/listed"], out
    assert world.hits("internet") == [], out
    assert ELSEWHERE_NAME not in world.hits("resolver"), "no name is listed"


def test_editing_hosts_and_resolv_conf_reaches_nothing_more(world: World) -> None:
    """Root inside points the listed name at another host, then names another resolver (the
    world's own, by address) and an address of the internet as resolvers."""
    attempts = {
        "listed name, other address": f"http://{INTERNET_NAME}/through-hosts",
        "other name": f"http://{ELSEWHERE_NAME}/other-name",
    }
    out = _run(
        world,
        [f"{INTERNET_NAME}:80"],
        f"echo '{ELSEWHERE} {INTERNET_NAME}' > /etc/hosts",
        probe_command(attempts),
        f"echo > /etc/hosts; echo 'nameserver {RESOLVER}' > /etc/resolv.conf",
        probe_command(attempts),
        f"echo 'nameserver {ELSEWHERE}' > /etc/resolv.conf",
        probe_command(attempts),
    )
    assert world.hits("elsewhere") == [], out
    assert world.hits("internet") == ["/through-hosts", "/through-hosts"], out
    assert ELSEWHERE_NAME not in world.hits("resolver"), out
    assert world.canary_hits() == {}, out


def test_an_empty_list_reaches_nothing_and_its_names_are_refused(world: World) -> None:
    out = _run(
        world,
        [],
        probe_command(ATTEMPTS),
        f"getent hosts {INTERNET_NAME}; echo $?",
    )
    assert world.hits("internet") == [] and world.hits("elsewhere") == [], out
    assert world.hits("resolver") == [] and world.canary_hits() == {}, out
    assert str(out["1"]).strip().endswith("2"), "getent: the name is not found"


def test_a_wildcard_reaches_subdomains(world: World) -> None:
    """`*.sprout.test` names both hosts, on port 80 only."""
    attempts = {
        "one": f"http://{INTERNET_NAME}/one",
        "two": f"http://{ELSEWHERE_NAME}/two",
        "other port": f"http://{INTERNET_NAME}:8081/other-port",
    }
    out = _run(world, ["*.sprout.test:80"], probe_command(attempts))
    assert world.hits("internet") == ["/one"] and world.hits("elsewhere") == ["/two"], out
    assert world.hits("internet-8081") == [], out


def test_a_fork_gets_its_own_resolver_and_closing_ends_both(world: World) -> None:
    """A fork inherits the allow-list with a namespace and a resolver of its own; the
    resolver's thread ends with its sandbox."""
    out = world.in_sandbox(
        "import time\n"
        f"box = Sandbox.create(store, network=[{INTERNET_NAME + ':80'!r}])\n"
        "box.run('true')\n"
        "fork = Sandbox.fork(store, box.checkpoint(always=True))\n"
        f"out['fork'] = fork.run({probe_command({'fork': f'http://{INTERNET_NAME}/fork'})!r}, "
        "timeout=120).output\n"
        "threads = [s._backend.network.resolver._thread for s in (box, fork)]\n"
        "out['distinct'] = threads[0] is not threads[1]\n"
        "fork.close(); box.close()\n"
        "deadline = time.monotonic() + 10\n"
        "while any(t.is_alive() for t in threads) and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "out['alive'] = sum(t.is_alive() for t in threads)\n"
    )
    assert world.hits("internet") == ["/fork"], out
    assert out["distinct"] is True and out["alive"] == 0, out
