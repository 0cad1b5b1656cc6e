"""Asking a model server again, and saying so: one retry policy for every HTTP client.

Retries happen here rather than inside an HTTP library so that each one is
told as it happens (`on_retry`): a server that is down or slow says so within
seconds instead of after minutes of silence. What is left after the retries is
a `ModelError` whose kind says whether the server failed (`unreachable`,
`timeout`, `server`, `malformed`) or the input is to fix (`auth`,
`unknown_model`, `bad_request`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

from sprout.models.types import ModelError

CONNECT_TIMEOUT_S = 10.0
"""Seconds to open a connection: a server that is not there is known at once, whatever
`timeout_s` allows a reply."""
WAIT_NOTICE_S = 60.0
"""A request still unanswered after this long is told once, so a hung server is noticed."""
RETRY_AFTER_MAX_S = 60.0
"""The longest Retry-After honoured; a longer one is waited as the usual backoff."""
RETRIED_STATUSES = frozenset({408, 409, 429})
"""Statuses (with every 5xx) that may pass when asked again."""

T = TypeVar("T")


def tell_on_stderr(message: str) -> None:
    print(f"sprout: {message}", file=sys.stderr, flush=True)


class Retryable(Exception):
    """A failure worth asking again: no connection, a timeout, 408/409/429 or a 5xx."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after


def backoff(number: int, retry_after: float | None) -> float:
    """Seconds before retry `number + 1`: the server's Retry-After when it gives a sane one,
    else 0.5, 1, 2, 4, 8, 8, ... (deterministic: runs are compared by their timings too)."""
    if retry_after is not None and 0 <= retry_after <= RETRY_AFTER_MAX_S:
        return retry_after
    return min(0.5 * 2.0**number, 8.0)


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """The server's Retry-After in seconds (`retry-after-ms` too, as OpenAI sends it)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return float((headers or {}).get(name, "")) * scale
        except ValueError:
            continue
    return None


def is_retried_status(status: int) -> bool:
    return status in RETRIED_STATUSES or status >= 500


def short(text: str, limit: int = 300) -> str:
    """One line of at most `limit` characters: server error bodies can be whole pages."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def with_retries(
    ask: Callable[[], T], retries: int, on_retry: Callable[[str], None] = tell_on_stderr
) -> T:
    """`ask()` until it returns, at most `retries` more times after a `Retryable`, each retry
    told with its reason and delay; the last failure becomes a `ModelError` of its kind."""
    for number in range(retries + 1):
        try:
            return ask()
        except Retryable as error:
            if number == retries:
                raise ModelError(
                    error.kind, f"{error} (after {retries} retries, [model] max_retries)"
                ) from None
            delay = backoff(number, error.retry_after)
            on_retry(f"{error}; retry {number + 1} of {retries} in {delay:.1f} s")
            time.sleep(delay)
    raise AssertionError("unreachable: the last try returns or raises")


@contextmanager
def waiting_notice(
    base_url: str, timeout_s: float, on_retry: Callable[[str], None]
) -> Iterator[None]:
    """Tell once, after `WAIT_NOTICE_S`, that a request is still unanswered (when the timeout
    allows it to be), so that a hung server is noticed long before the timeout."""
    notice = threading.Timer(
        WAIT_NOTICE_S,
        on_retry,
        [f"{base_url}: no reply yet after {WAIT_NOTICE_S:g} s; waiting up to {timeout_s:g} s "
         "([model] timeout_s)"],
    )  # fmt: skip
    notice.daemon = True
    if timeout_s > WAIT_NOTICE_S:
        notice.start()
    try:
        yield
    finally:
        notice.cancel()
