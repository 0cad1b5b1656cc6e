"""A small world of network namespaces the network tests make themselves, so that no packet
goes to a real private or public address: a "host" with canary servers on its loopback, on a
private address, on its own address and posing as the cloud metadata service, a resolver of
its own, and an "internet" one veth away holding 198.51.100.7 (a documentation address).

Sandboxes run from inside the "host" (a Python script under nsenter, with the world's
resolver as its /etc/resolv.conf), and every server logs its hits on this side, so a test
reads what reached a server, not what a probe inside claims. Each namespace is held by a
process of the test's own (no named namespace under /run/netns), and goes when it is killed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HOST_OWN = "198.51.100.1"
INTERNET = "198.51.100.7"
HOST_PRIVATE = "10.77.0.1"
RESOLVER = "10.77.0.53"
METADATA = "169.254.169.254"
HOST_PRIVATE6 = "fd77::1"
INTERNET_NAME = "internet.sprout.test"
ELSEWHERE = "198.51.100.8"
"""A second "internet" host, which an allow-list naming the first must not reach."""
ELSEWHERE_NAME = "elsewhere.sprout.test"
INDEX_NAME = "index.sprout.test"
INDEX_PORT = 8000
"""Where `World.serve_files` serves a folder: a package index, say (on INTERNET)."""
ABSTRACT_SOCKET = "sprout-net-canary"
CANARY = Path(__file__).with_name("net_canary.py")
LIFETIME_S = 600
"""No process of the world outlives this, whatever happens to the test."""
NETWORK_MARKS = [
    pytest.mark.sandbox,
    pytest.mark.skipif(shutil.which("slirp4netns") is None, reason="slirp4netns is missing"),
    pytest.mark.skipif(shutil.which("nft") is None, reason="nft (nftables) is missing"),
]
"""The marks of a test of sandboxes with network: `make test` installs both tools."""

SERVERS = {
    "host-loopback": ("host", ["http", "127.0.0.1", "8080"]),
    "host-loopback6": ("host", ["http", "::1", "8080"]),
    "host-private": ("host", ["http", HOST_PRIVATE, "8080"]),
    "host-private6": ("host", ["http", HOST_PRIVATE6, "8080"]),
    "host-own": ("host", ["http", HOST_OWN, "8080"]),
    "metadata": ("host", ["http", METADATA, "80"]),
    "abstract": ("host", ["unix", ABSTRACT_SOCKET]),
    "resolver": ("host", ["dns", RESOLVER]),
    "internet": ("internet", ["http", INTERNET, "80"]),
    "internet-8081": ("internet", ["http", INTERNET, "8081"]),
    "elsewhere": ("internet", ["http", ELSEWHERE, "80"]),
}
"""Each canary: the namespace it serves in and its arguments (before its log)."""
INTERNET_SERVERS = ("internet", "internet-8081", "elsewhere")
CANARIES = [name for name in SERVERS if name not in (*INTERNET_SERVERS, "resolver")]
"""The servers nothing inside a sandbox may reach, whatever its policy."""
TARGETS = {
    "host-loopback": "http://127.0.0.1:8080/hostlo",
    "host-loopback6": "http://[::1]:8080/hostlo6",
    "host-private": f"http://{HOST_PRIVATE}:8080/private",
    "host-private6": f"http://[{HOST_PRIVATE6}]:8080/private6",
    "host-own": f"http://{HOST_OWN}:8080/own",
    "metadata": f"http://{METADATA}/latest/meta-data/",
    "slirp-gateway": "http://10.0.2.2:8080/gateway",
    "internet-by-name": f"http://{INTERNET_NAME}/by-name",
    "internet": f"http://{INTERNET}/direct",
}
"""What a probe tries: each canary, and the "internet" by name, then by address (an
allow-list lets an address in once its name resolved to it)."""


@dataclass
class World:
    root: Path
    holders: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    servers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def enter(self, namespace: str = "host") -> list[str]:
        return ["nsenter", f"--net=/proc/{self.holders[namespace].pid}/ns/net"]

    def ip(self, namespace: str, *arguments: str) -> None:
        subprocess.run([*self.enter(namespace), "ip", *arguments], check=True, timeout=30)

    def hits(self, server: str) -> list[str]:
        log = self.root / f"{server}.log"
        return log.read_text().splitlines() if log.exists() else []

    def canary_hits(self) -> dict[str, list[str]]:
        return {name: self.hits(name) for name in CANARIES if self.hits(name)}

    def run(
        self,
        script: str,
        env: dict[str, str] | None = None,
        arguments: tuple[str, ...] = (),
        user: tuple[str, ...] = (),
    ) -> dict[str, object]:
        """Run Python `script` with `arguments` on the world's host (its resolver in
        /etc/resolv.conf), under the prefix `user` (another user's, say); the JSON object it
        prints last."""
        resolv = self.root / "resolv.conf"
        inside = f'mount --bind {resolv} /etc/resolv.conf && exec "$@"'
        done = subprocess.run(
            [
                *self.enter(),
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                inside,
                "sh",
                *user,
                sys.executable,
                "-c",
                script,
                *arguments,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, **(env or {})},
            cwd=self.root,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    def serve_files(self, directory: Path) -> str:
        """Serve `directory` over HTTP on the "internet", as INDEX_NAME:INDEX_PORT, logging to
        the server "files"; its URL."""
        self._start("files", "internet", ["files", INTERNET, str(INDEX_PORT), str(directory)])
        return f"http://{INDEX_NAME}:{INDEX_PORT}"

    def _start(self, name: str, namespace: str, arguments: list[str]) -> None:
        extra = [f"{INTERNET_NAME}={INTERNET}", f"{ELSEWHERE_NAME}={ELSEWHERE}"]
        extra.append(f"{INDEX_NAME}={INTERNET}")
        server = subprocess.Popen(
            [
                *self.enter(namespace),
                sys.executable,
                str(CANARY),
                *arguments,
                str(self.root / f"{name}.log"),
                *(extra if arguments[0] == "dns" else []),
            ],
            stdout=subprocess.PIPE,
        )
        self.servers.append(server)
        assert server.stdout is not None and server.stdout.readline() == b"ready\n", name

    def in_sandbox(self, body: str) -> dict[str, object]:
        """`body` run on the world's host with `store` (a LayerStore under the world's
        folder) and `out` (a dict printed as JSON at the end) defined."""
        script = (
            "import json\nfrom sprout.sandbox import LayerStore, Sandbox\n"
            f"store = LayerStore({str(self.root / 'layers')!r})\nout = {{}}\n"
            f"{body}\nprint(json.dumps(out))\n"
        )
        return self.run(script)

    def close(self) -> None:
        for process in [*self.servers, *self.holders.values()]:
            process.kill()
            process.wait()


PROBE = r"""
import json, socket, sys, urllib.request
verdicts = {}
for name, url in json.loads(sys.argv[1]).items():
    try:
        verdicts[name] = urllib.request.urlopen(url, timeout=3).read().decode().strip()
    except Exception as error:
        verdicts[name] = f"refused: {error}"
unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    unix.connect("\0" + sys.argv[2]); verdicts["abstract"] = "connected"
except OSError as error:
    verdicts["abstract"] = f"refused: {error}"
print(json.dumps(verdicts))
"""
"""Fetches each URL and connects to the abstract socket; its verdicts are for failure
messages only (the servers' logs decide)."""


def probe_command(targets: dict[str, str]) -> str:
    """A shell command running PROBE in a sandbox on `targets` (name -> URL)."""
    quoted = json.dumps(targets).replace("'", "'\\''")
    script = PROBE.replace("'", "'\\''")
    return f"python3 -c '{script}' '{quoted}' {ABSTRACT_SOCKET}"


def make_world(root: Path) -> World:
    """The namespaces, their veth, addresses and routes, and every server up and listening."""
    root.mkdir(parents=True, exist_ok=True)
    world = World(root)
    try:
        for name in ("host", "internet"):
            world.holders[name] = subprocess.Popen(["unshare", "--net", "sleep", str(LIFETIME_S)])
        for holder in world.holders.values():
            while os.readlink(f"/proc/{holder.pid}/ns/net") == os.readlink("/proc/self/ns/net"):
                pass  # unshare has not switched yet
        internet_pid = str(world.holders["internet"].pid)
        world.ip("host", "link", "add", "h0", "type", "veth", "peer", "name", "i0", "netns",
                 internet_pid)  # fmt: skip
        for address in (f"{HOST_OWN}/24", f"{HOST_PRIVATE}/24", f"{RESOLVER}/32",
                        f"{METADATA}/32"):  # fmt: skip
            world.ip("host", "addr", "add", address, "dev", "h0")
        world.ip("host", "-6", "addr", "add", f"{HOST_PRIVATE6}/64", "dev", "h0", "nodad")
        world.ip("internet", "addr", "add", f"{INTERNET}/24", "dev", "i0")
        world.ip("internet", "addr", "add", f"{ELSEWHERE}/24", "dev", "i0")
        for namespace, device in (("host", "h0"), ("internet", "i0")):
            world.ip(namespace, "link", "set", "lo", "up")
            world.ip(namespace, "link", "set", device, "up")
        world.ip("host", "route", "add", "default", "via", INTERNET)
        (root / "resolv.conf").write_text(f"nameserver {RESOLVER}\n")
        for name, (namespace, arguments) in SERVERS.items():
            world._start(name, namespace, arguments)
    except BaseException:
        world.close()
        raise
    return world
