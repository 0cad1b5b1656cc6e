"""An HTTP server on a loopback port for the length of a `with` block, answering with a
function: the fake model servers and the recording proxy of the tests are each one
function of (method, path, body)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, str, bytes | None], tuple[int, bytes]]
"""(method, path, request body or None) -> (status, JSON reply body)."""


@contextmanager
def loopback(answer: Answer) -> Iterator[str]:
    """`answer` served on 127.0.0.1 for the `with` block; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def _serve(self, body: bytes | None) -> None:
            status, data = answer(self.command, self.path, body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            self._serve(self.rfile.read(int(self.headers.get("Content-Length", 0))))

        def do_GET(self) -> None:
            self._serve(None)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
