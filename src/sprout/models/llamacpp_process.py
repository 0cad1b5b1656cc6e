"""A `llama-server` process that sprout starts, waits for, restarts and stops.

For rollouts whose server sprout owns: the tests and `sprout bench rollouts`
start one on loopback, and an on-policy loop restarts it with the weights of
the latest step. The binary is the one `scripts/llama-server` builds once per
machine (or `SPROUT_LLAMA_SERVER`); the process is stopped by its own id,
however the caller ends.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from sprout.durable import cache_dir

START_TIMEOUT_S = 180.0


class ServerError(RuntimeError):
    """A llama-server that cannot be found, started, or that died."""


def find_llama_server() -> Path | None:
    """`SPROUT_LLAMA_SERVER`, else the newest binary `scripts/llama-server` cached."""
    named = os.environ.get("SPROUT_LLAMA_SERVER", "")
    if named:
        return Path(named) if os.access(named, os.X_OK) else None
    built = sorted((cache_dir() / "tools").glob("llama-server-*/llama-server"))
    return built[-1] if built else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaServer:
    """`llama-server -m MODEL` on a loopback port; a context manager that stops it."""

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        log: str | os.PathLike[str],
        binary: str | os.PathLike[str] | None = None,
        options: Sequence[str] = ("-c", "4096", "-np", "1"),
    ) -> None:
        found = Path(binary) if binary else find_llama_server()
        if found is None or not os.access(found, os.X_OK):
            raise ServerError(
                "no llama-server binary: build one with scripts/llama-server (cached per "
                "machine) or name it in SPROUT_LLAMA_SERVER"
            )
        self.binary = found
        self.model = Path(model)
        self.log = Path(log)
        self.options = tuple(options)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        """Start the server and wait until it answers `/health`; its base URL."""
        if not self.model.is_file():
            raise ServerError(f"{self.model}: no such model file (a GGUF file)")
        command = [str(self.binary), "-m", str(self.model), "--host", "127.0.0.1"]
        command += ["--port", str(self.port), *self.options]
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._healthy():
            if self.process.poll() is not None:
                raise ServerError(f"llama-server exited {self.process.returncode}: {self._tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise ServerError(
                    f"llama-server not ready in {START_TIMEOUT_S:g} s: {self._tail()}"
                )
            time.sleep(0.2)
        return self.url

    def restart(self, model: str | os.PathLike[str] | None = None) -> str:
        """Stop the server and start it again (on `model`, when given) on the same port."""
        self.stop()
        if model is not None:
            self.model = Path(model)
        return self.start()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as answer:
                return bool(answer.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def _tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(text.strip().splitlines()[-lines:])

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
