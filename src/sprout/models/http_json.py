"""JSON over HTTP to a model server's native endpoints (`/completion`, `/generate`, ...).

The token-exact clients speak routes the OpenAI client does not know; they
share its retry policy (`models.retrying`) and its kinds of failure, so a
server that is down is a server fault here too, never the model failing.
"""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

from sprout.models.retrying import (
    CONNECT_TIMEOUT_S,
    Retryable,
    is_retried_status,
    retry_after,
    short,
    tell_on_stderr,
    waiting_notice,
    with_retries,
)
from sprout.models.servers import ServerPool, split_urls
from sprout.models.types import ModelError


class JsonServer:
    """A server's base URL (or several, comma-separated, spread by `models.servers`), asked
    with JSON bodies and answered with JSON objects (the standard library's HTTP client: one
    connection per request, nothing to leak)."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float,
        retries: int,
        api_key: str | None = None,
        on_retry: Callable[[str], None] = tell_on_stderr,
    ) -> None:
        urls = split_urls(base_url)
        self.base_url = ",".join(urls)
        self.pool = ServerPool(urls)
        self._parts = {url: urllib.parse.urlsplit(url) for url in urls}
        self.timeout_s = timeout_s
        self.retries = retries
        self.on_retry = on_retry
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def post(
        self, route: str, body: dict[str, Any], *, prompt: Sequence[int] | None = None
    ) -> dict[str, Any]:
        """The JSON object `route` answers `body` with, retried as `models.retrying` says;
        `prompt` (the ids sampled after) keeps a tree's calls on one server."""
        return with_retries(
            lambda: self.pool.call(lambda url: self._once(url, "POST", route, body), prompt),
            self.retries,
            self.on_retry,
        )

    def get(self, route: str) -> dict[str, Any]:
        return with_retries(
            lambda: self.pool.call(lambda url: self._once(url, "GET", route, None)),
            self.retries,
            self.on_retry,
        )

    def _connection(self, base_url: str) -> http.client.HTTPConnection:
        """A connection opened within `CONNECT_TIMEOUT_S`, then given `timeout_s` to answer."""
        parts, connect = self._parts[base_url], min(CONNECT_TIMEOUT_S, self.timeout_s)
        if parts.scheme == "https":
            context = ssl.create_default_context()
            made: http.client.HTTPConnection = http.client.HTTPSConnection(
                parts.hostname or "", parts.port, timeout=connect, context=context
            )
        else:
            made = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=connect)
        made.connect()
        if made.sock is not None:
            made.sock.settimeout(self.timeout_s)
        return made

    def _once(
        self, base_url: str, method: str, route: str, body: dict[str, Any] | None
    ) -> dict[str, Any]:
        url = f"{base_url}{route}"
        data = None if body is None else json.dumps(body).encode()
        try:
            with waiting_notice(url, self.timeout_s, self.on_retry):
                connection = self._connection(base_url)
                try:
                    path = self._parts[base_url].path + route
                    connection.request(method, path, data, self.headers)
                    response = connection.getresponse()
                    status, headers, raw = (
                        response.status,
                        dict(response.getheaders()),
                        response.read(),
                    )
                finally:
                    connection.close()
        except TimeoutError:
            raise Retryable(
                "timeout", f"{url}: no reply within {self.timeout_s:g} s ([model] timeout_s)"
            ) from None
        except (OSError, http.client.HTTPException) as error:
            raise Retryable("unreachable", f"{url}: cannot reach the server ({error})") from None
        text = raw.decode("utf-8", "replace")
        if status >= 400:
            raise _refusal(url, status, text, {k.lower(): v for k, v in headers.items()})
        try:
            found = json.loads(text)
        except json.JSONDecodeError:
            found = None
        if not isinstance(found, dict):
            raise ModelError("malformed", f"{url}: the reply is not a JSON object: {short(text)}")
        return found


def _refusal(url: str, status: int, text: str, headers: dict[str, str]) -> Exception:
    """The error an HTTP error status stands for: `Retryable` when asking again may pass."""
    message = f"{url}: HTTP {status}: {short(text)}"
    if is_retried_status(status):
        return Retryable("server", message, retry_after(headers))
    if status in (401, 403):
        return ModelError("auth", f"{url}: the API key was refused ({short(text)})")
    if status == 404:
        return ModelError("server", f"{message} (is this the right kind of server?)")
    return ModelError("bad_request", f"{url}: request refused: {short(text)}")
