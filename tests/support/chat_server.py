"""A real HTTP server on loopback that speaks the chat-completions protocol.

Tests script its replies (status, body, delay) and read back the requests it
received; nothing in the client library is mocked.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: dict[str, Any] | None = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    """Sent as it is instead of `body`: an HTML error page, garbage, a truncated JSON."""
    content_type: str = "application/json"


def completion_body(
    text: str = "ok",
    *,
    prompt_tokens: int = 11,
    completion_tokens: int = 3,
    cached_tokens: int | None = None,
    logprobs: list[tuple[str, float, dict[str, float]]] | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    n: int = 1,
    usage: bool = True,
) -> dict[str, Any]:
    """A chat.completion object as vLLM and hosted APIs send it."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text, "tool_calls": tool_calls},
        "finish_reason": "tool_calls" if tool_calls else "stop",
        "logprobs": None,
    }
    if logprobs is not None:
        choice["logprobs"] = {
            "content": [
                {
                    "token": token,
                    "logprob": lp,
                    "bytes": None,
                    "top_logprobs": [
                        {"token": t, "logprob": v, "bytes": None} for t, v in top.items()
                    ],
                }
                for token, lp, top in logprobs
            ]
        }
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [{**choice, "index": i} for i in range(n)],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if cached_tokens is not None:
            body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return body


class ChatServer:
    """Serve scripted replies on 127.0.0.1; unscripted requests get a default completion."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                server.requests.append(json.loads(self.rfile.read(length) or b"{}"))
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                reply = server.replies.popleft() if server.replies else Reply()
                time.sleep(reply.delay_s)
                payload = reply.raw
                if payload is None:
                    payload = json.dumps(
                        reply.body if reply.body is not None else completion_body()
                    ).encode()
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                self.send_header("content-length", str(len(payload)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def what_a_model_sees(task: Path, command: str, out: Path) -> tuple[int, str]:
    """`sprout run TASK --method pass@1` with a chat model on this server that runs `command`,
    then submits: the run's exit code, and the observation of `command` (as JSON text)."""
    from sprout.cli import main

    look = f"Looking.\n\n```bash\n{command}\n```"
    with ChatServer() as server:
        server.replies.extend(
            [
                Reply(body=completion_body(look)),
                Reply(body=completion_body("Done.\n\n```bash\necho SPROUT_SUBMIT\n```")),
            ]
        )
        args = ["run", str(task), "--model", "openai/m", "--base-url", server.base_url]
        code = main([*args, "--method", "pass@1", "--out", str(out)])
        return code, json.dumps(server.requests[1]["messages"][-1])
