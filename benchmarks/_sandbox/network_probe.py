"""The network rows' measurements, run by `network_world.py` on the "host" of a world of
namespaces it made (so that every byte goes to a server of the benchmark's own):

    python network_probe.py STORE_DIR REPEAT URL

prints one JSON object: calls under each policy (interleaved; the allow-list names URL's
host), the time each policy's network takes to come up, and a download of URL by the same
program on the host and in a `public` sandbox, rounds interleaved.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from urllib.parse import urlsplit

from sprout.sandbox import LayerStore, Sandbox
from sprout.sandbox.jail.helper import helper_path
from sprout.sandbox.network.namespace import SandboxNetwork
from sprout.sandbox.network.policy import Network

DOWNLOAD = (
    "import sys, time, urllib.request\n"
    "start = time.perf_counter(); n = 0\n"
    "with urllib.request.urlopen(sys.argv[1], timeout=60) as r:\n"
    "    while chunk := r.read(1 << 20): n += len(chunk)\n"
    "print(n, time.perf_counter() - start)\n"
)
DOWNLOAD_ROUNDS = 3


def _policies(url: str) -> dict[str, Network]:
    return {"none": False, "public": True, "allowlist": (str(urlsplit(url).hostname),)}


def _calls(store: LayerStore, repeat: int, url: str) -> dict[str, list[float]]:
    boxes = {
        name: Sandbox.create(store, network=network) for name, network in _policies(url).items()
    }
    seconds: dict[str, list[float]] = {name: [] for name in boxes}
    for i in range(repeat + 2):
        for name, box in boxes.items():
            start = time.perf_counter()
            box.run("true")
            if i >= 2:  # two warm-up rounds
                seconds[name].append(time.perf_counter() - start)
    for box in boxes.values():
        box.close()
    return seconds


def _starts(repeat: int, url: str) -> dict[str, list[float]]:
    helper = helper_path()
    policies = _policies(url)
    seconds: dict[str, list[float]] = {name: [] for name in policies}
    for _ in range(repeat):
        for name, policy in policies.items():
            start = time.perf_counter()
            network = SandboxNetwork.start(helper, policy)
            seconds[name].append(time.perf_counter() - start)
            network.close()
    return seconds


def _downloads(store: LayerStore, url: str) -> dict[str, list[list[float]]]:
    """[bytes, seconds] of each round, timed by the downloading program itself."""
    found: dict[str, list[list[float]]] = {"host": [], "public": []}
    with Sandbox.create(store, network=True) as box:
        for _ in range(DOWNLOAD_ROUNDS):
            here = subprocess.run(
                [sys.executable, "-c", DOWNLOAD, url], capture_output=True, text=True, check=True
            ).stdout
            inside = box.run(f"python3 -c '{DOWNLOAD}' {url}", timeout=300)
            if inside.exit_code != 0:
                raise SystemExit(f"the download in the sandbox failed: {inside.output}")
            found["host"].append([float(v) for v in here.split()])
            found["public"].append([float(v) for v in inside.output.split()])
    return found


def main(argv: list[str]) -> None:
    store = LayerStore(argv[0])
    repeat = int(argv[1])
    print(
        json.dumps(
            {
                "calls_s": _calls(store, repeat, argv[2]),
                "starts_s": _starts(max(repeat // 2, 3), argv[2]),
                "downloads": _downloads(store, argv[2]),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
