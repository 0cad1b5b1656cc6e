"""`sprout view RUN_DIR`: the episode viewer's page and its JSON API, on loopback only.

The run is opened afresh for every request, so a run that `sprout run` is still writing
shows its progress (the page polls `/api/status` while a schedule is running). The server
also holds the run open for its whole life, so its layer store stays claimed and `sprout gc`
refuses, naming the viewer, instead of freeing layers under a turn's diff. Every error is
JSON with a message and a 400 or 404, never a stack trace.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from sprout.errors import SproutError
from sprout.runfolder import RunFolder, RunFolderError
from sprout.tree import RunDatabaseError
from sprout.viewer.data import ViewerError, run_summary, task_tree
from sprout.viewer.turns import turn_detail

HOST = "127.0.0.1"
STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/viewer.js": ("viewer.js", "text/javascript; charset=utf-8"),
    "/viewer.css": ("viewer.css", "text/css; charset=utf-8"),
}


class BadRequest(SproutError, ValueError):
    """A request the API cannot answer as asked (a malformed id): a 400."""


def static_text(name: str) -> str:
    """One of the page's files, shipped as package data in sprout/viewer/static/."""
    return resources.files("sprout.viewer").joinpath("static", name).read_text(encoding="utf-8")


def open_run(path: str | Path) -> RunFolder:
    """The run folder at `path`, checked: not a run, or a newer schema, is an error that
    says so (RunFolderError, RunDatabaseError), raised before the server starts."""
    return RunFolder.open(path)


def run_status(run: RunFolder) -> dict[str, Any]:
    """Which (task, method) schedules are still running: the page polls while any is."""
    schedules = run.tree.schedules()
    running = [
        {"task_id": s["task_id"], "method": s["method"]}
        for s in schedules
        if s["status"] == "running"
    ]
    return {"running": running, "schedules": len(schedules)}


def _int(text: str, what: str) -> int:
    if not re.fullmatch(r"-?\d+", text):
        raise BadRequest(f"{what} {text!r}: expected a whole number")
    return int(text)


def api(run_path: Path, path: str) -> Any:
    """The JSON answer to an API `path` (already split from its query), read fresh from
    the run folder. Raises ViewerError (404), BadRequest (400), or RunFolderError and
    RunDatabaseError (the run went away or changed under the server: 404)."""
    parts = [unquote(p) for p in path.strip("/").split("/")]
    run = open_run(run_path)
    try:
        handlers: dict[tuple[str, ...], Callable[[], Any]] = {
            ("api", "summary"): lambda: run_summary(run),
            ("api", "status"): lambda: run_status(run),
        }
        if tuple(parts) in handlers:
            return handlers[tuple(parts)]()
        if len(parts) == 4 and parts[:2] == ["api", "tasks"] and parts[3] == "tree":
            return task_tree(run, parts[2])
        if len(parts) == 4 and parts[:2] == ["api", "turns"]:
            return turn_detail(run, _int(parts[2], "attempt"), _int(parts[3], "turn"))
        raise ViewerError(
            f"{path}: no such API route (try /api/summary, /api/status, "
            "/api/tasks/TASK/tree, /api/turns/ATTEMPT/INDEX)"
        )
    finally:
        run.close()


def make_handler(run_path: Path) -> type[BaseHTTPRequestHandler]:
    """A request handler bound to one run folder."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "sprout-view"

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path in STATIC:
                name, kind = STATIC[path]
                self._send(HTTPStatus.OK, static_text(name).encode(), kind)
                return
            if path == "/favicon.ico":
                self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
                return
            if not path.startswith("/api/"):
                self._error(HTTPStatus.NOT_FOUND, f"{path}: not found")
                return
            try:
                body = api(run_path, path)
            except BadRequest as error:
                self._error(HTTPStatus.BAD_REQUEST, str(error))
            except (ViewerError, RunFolderError, RunDatabaseError) as error:
                self._error(HTTPStatus.NOT_FOUND, str(error))
            except Exception as error:  # a page shows a message, never a stack trace
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(error).__name__}: {error}")
            else:
                self._json(HTTPStatus.OK, body)

        def _error(self, status: HTTPStatus, message: str) -> None:
            self._json(status, {"error": message, "status": int(status)})

        def _json(self, status: HTTPStatus, body: Any) -> None:
            data = json.dumps(body).encode()
            self._send(status, data, "application/json; charset=utf-8")

        def _send(self, status: HTTPStatus, data: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the page polls; a line per request would drown the terminal

    return Handler


class ViewerServer(ThreadingHTTPServer):
    """The viewer's HTTP server, holding `run` open from before it serves until
    `server_close`: the open run claims its layer store, the lease `sprout run` and `sprout
    shell` hold, so `sprout gc` refuses while the page may still read the run's layers. The
    lease is an flock, so a viewer killed outright drops it with its process."""

    daemon_threads = True

    def __init__(self, run: RunFolder, port: int) -> None:
        self.run = run  # before binding: a failed bind calls server_close, which closes it
        super().__init__((HOST, port), make_handler(run.path))

    def server_close(self) -> None:
        try:
            super().server_close()
        finally:
            self.run.close()


def make_server(run_path: str | Path, port: int = 0) -> ViewerServer:
    """A server for the run at `run_path` on 127.0.0.1:`port` (0: any free port); the run
    is checked first, so a folder that is not a run fails here, not on the first request,
    and stays open (gc refuses) until the server is closed."""
    run = open_run(run_path)
    try:
        return ViewerServer(run, port)
    except BaseException:
        run.close()
        raise


def serve(run_path: str | Path, port: int = 8000) -> int:
    """Serve the viewer until interrupted; prints the address to open. Closing the server,
    on Ctrl-C too, lets go of the run, so gc can free its layers again."""
    server = make_server(run_path, port)
    host, bound = server.server_address[:2]
    print(f"sprout view: {run_path} on http://{host!s}:{bound}/ (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("", file=sys.stderr)
    finally:
        server.server_close()
    return 0
