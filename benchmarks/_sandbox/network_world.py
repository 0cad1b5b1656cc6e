"""The world the network rows of `sprout bench sandbox` are measured in: a "host" and an
"internet" network namespace of the benchmark's own, one veth apart, each held by a
process of its own (killed at the end), and a server in the "internet" sending 100 MB.
`network_probe.py` runs on that "host", so the sandboxes' stack makes its connections
from there and no byte leaves the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SERVER_ADDRESS = "198.51.100.7"
"""A documentation address (RFC 5737), on the world's "internet" only."""
HOST_ADDRESS = "198.51.100.1"
DOWNLOAD_BYTES = 100_000_000
LIFETIME_S = 900
SERVER = f"""
import signal, socketserver
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
signal.alarm({LIFETIME_S})
BLOCK = bytes(1 << 20)
class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str({DOWNLOAD_BYTES}))
        self.end_headers()
        left = {DOWNLOAD_BYTES}
        while left:
            self.wfile.write(BLOCK[: min(left, len(BLOCK))]); left -= min(left, len(BLOCK))
    def log_message(self, *args): pass
class Server(ThreadingHTTPServer):
    def server_bind(self): socketserver.TCPServer.server_bind(self)
server = Server(("{SERVER_ADDRESS}", 80), Handler)
print("ready", flush=True)
server.serve_forever()
"""


def _enter(holder: subprocess.Popen[bytes]) -> list[str]:
    return ["nsenter", f"--net=/proc/{holder.pid}/ns/net"]


@contextmanager
def world() -> Iterator[list[str]]:
    """The world up; yields the command prefix that runs a program on its "host"."""
    processes: list[subprocess.Popen[bytes]] = []
    try:
        host, internet = (
            subprocess.Popen(["unshare", "--net", "sleep", str(LIFETIME_S)]) for _ in range(2)
        )
        processes += [host, internet]
        for holder in (host, internet):
            while os.readlink(f"/proc/{holder.pid}/ns/net") == os.readlink("/proc/self/ns/net"):
                pass  # unshare has not switched yet
        steps = [
            (host, ["link", "add", "h0", "type", "veth", "peer", "name", "i0", "netns",
                    str(internet.pid)]),
            (host, ["addr", "add", f"{HOST_ADDRESS}/24", "dev", "h0"]),
            (internet, ["addr", "add", f"{SERVER_ADDRESS}/24", "dev", "i0"]),
            (host, ["link", "set", "h0", "up"]), (internet, ["link", "set", "i0", "up"]),
            (host, ["link", "set", "lo", "up"]), (internet, ["link", "set", "lo", "up"]),
        ]  # fmt: skip
        for holder, arguments in steps:
            subprocess.run([*_enter(holder), "ip", *arguments], check=True, timeout=30)
        server = subprocess.Popen(
            [*_enter(internet), sys.executable, "-c", SERVER], stdout=subprocess.PIPE
        )
        processes.append(server)
        assert server.stdout is not None
        if server.stdout.readline() != b"ready\n":
            raise RuntimeError("the benchmark's download server did not start")
        yield _enter(host)
    finally:
        for process in processes:
            process.kill()
            process.wait()


def measure(store_dir: str, repeat: int) -> dict[str, object]:
    """network_probe.py's figures, measured on the world's host."""
    probe = Path(__file__).with_name("network_probe.py")
    with world() as on_host:
        done = subprocess.run(
            [
                *on_host,
                sys.executable,
                str(probe),
                store_dir,
                str(repeat),
                f"http://{SERVER_ADDRESS}/",
            ],
            capture_output=True,
            text=True,
            timeout=LIFETIME_S,
        )
    if done.returncode != 0:
        raise RuntimeError(f"network_probe.py: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
