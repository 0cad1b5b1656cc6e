"""An HTTP server on a loopback port for the length of a `with` block, answering with a
function: the fake model servers and the recording proxy of the tests are each one
function of (method, path, body)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ACCEPT_POLL_S = 0.5
"""How often `serve_forever` looks for a new connection (its default poll interval)."""
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


def wait_for_requests_in_flight(timeout: float = 10.0) -> None:
    """Until every request the loopback servers of this process began has been answered: a
    client killed mid-request leaves its handler running, and what that handler counts
    must be counted before a test reads the counts. A request sent just before the kill
    may wait for the accept loop's next poll (every 0.5 s) before its handler starts."""
    time.sleep(ACCEPT_POLL_S + 0.1)
    deadline = time.monotonic() + timeout
    while any(t.name.endswith("(process_request_thread)") for t in threading.enumerate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"loopback requests still in flight after {timeout} s")
        time.sleep(0.01)
