"""One model behind several servers: `--base-url A,B,...` spreads the calls by load.

Many sandboxes on many nodes share a few model servers, as verl's and SkyRL's
rollout servers are shared. Each call goes to the server with the fewest
requests in flight (ties in turn). A server that fails in a way a retry may
fix (unreachable, a timeout, a 5xx, 429) is skipped for `SKIP_S` while the
others answer; the call moves on to the next server at once, and only when
every server has failed is it the usual server fault, retried with backoff by
`models.retrying`.

Token-exact calls pass their prompt ids: a prompt that begins with a prompt
already sent goes to the server that answered it, so a later turn, or a
branch, finds its inherited prefix in that server's prefix cache. Stickiness is
by longest earlier prompt, which keeps a task's tree (root and branches) on
one server, and falls back to the least-loaded server while that one is
skipped. A prompt with no earlier prefix (a new root, or any call after a
restart) is placed by load.
"""

from __future__ import annotations

import itertools
import threading
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

from sprout.models.retrying import Retryable
from sprout.models.types import ModelError

SKIP_S = 10.0
"""Seconds a server that failed is passed over while another can answer."""
REMEMBERED_PROMPTS = 65_536
"""Earlier prompts kept for stickiness (least recently used forgotten first)."""
_MODULUS = (1 << 61) - 1
_BASE = 1_000_003

T = TypeVar("T")


def split_urls(base_url: str) -> tuple[str, ...]:
    """The servers of a `--base-url` value: one URL or several, comma-separated; each must
    be http(s)://HOST[:PORT][/PATH]."""
    urls = tuple(part.strip().rstrip("/") for part in base_url.split(","))
    for url in urls:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            shown = url or "(an empty entry)"
            raise ModelError(
                "bad_input",
                f"--base-url {shown}: expected http://HOST:PORT or https://..., "
                "several separated by commas",
            )
    if len(set(urls)) != len(urls):
        raise ModelError("bad_input", f"--base-url {base_url}: a server is named twice")
    return urls


def _prefix_hashes(ids: Sequence[int]) -> list[int]:
    """The hash of every prefix of `ids` (index k: the first k ids), in one pass."""
    found, running = [0], 0
    for token in ids:
        running = (running * _BASE + token + 1) % _MODULUS
        found.append(running)
    return found


class ServerPool:
    """The servers of one model, with their load, their failures and the prompts each has
    answered; safe to share between threads."""

    def __init__(self, urls: Sequence[str], *, clock: Callable[[], float] = time.monotonic) -> None:
        self.urls = tuple(urls)
        self._clock = clock
        self._lock = threading.Lock()
        self._in_flight = dict.fromkeys(self.urls, 0)
        self._skip_until = dict.fromkeys(self.urls, 0.0)
        self._turn = itertools.count()
        self._answered: OrderedDict[tuple[int, int], str] = OrderedDict()
        self.served = dict.fromkeys(self.urls, 0)
        """Calls each server answered (for tests and benchmarks)."""

    def call(self, ask: Callable[[str], T], prompt: Sequence[int] | None = None) -> T:
        """`ask(url)` on the chosen server, moving on to the next one when it raises
        `Retryable`; the last server's `Retryable` when none answered."""
        hashes = _prefix_hashes(prompt) if prompt is not None else None
        tried: set[str] = set()
        while True:
            url = self._choose(hashes, tried)
            tried.add(url)
            try:
                with self._running(url):
                    answer = ask(url)
            except Retryable:
                with self._lock:
                    self._skip_until[url] = self._clock() + SKIP_S
                if len(tried) == len(self.urls):
                    raise
                continue
            self._remember(url, hashes)
            return answer

    def _choose(self, hashes: list[int] | None, tried: set[str]) -> str:
        """The sticky server when it is up, else the least-loaded up server (ties in turn),
        else, when all are skipped, the one whose skip ends first."""
        with self._lock:
            now, turn = self._clock(), next(self._turn)
            left = [url for url in self.urls if url not in tried]
            up = [url for url in left if self._skip_until[url] <= now]
            sticky = self._sticky(hashes)
            if sticky in up:
                return sticky
            if not up:
                return min(left, key=lambda url: self._skip_until[url])
            count = len(self.urls)
            return min(
                up,
                key=lambda url: (self._in_flight[url], (self.urls.index(url) - turn) % count),
            )

    def _sticky(self, hashes: list[int] | None) -> str | None:
        """The server that answered the longest earlier prompt this one begins with."""
        if hashes is None:
            return None
        for length in range(len(hashes) - 1, 0, -1):
            url = self._answered.get((length, hashes[length]))
            if url is not None:
                self._answered.move_to_end((length, hashes[length]))
                return url
        return None

    def _remember(self, url: str, hashes: list[int] | None) -> None:
        with self._lock:
            self.served[url] += 1
            if hashes is None or len(hashes) < 2:
                return
            key = (len(hashes) - 1, hashes[-1])
            self._answered[key] = url
            self._answered.move_to_end(key)
            while len(self._answered) > REMEMBERED_PROMPTS:
                self._answered.popitem(last=False)

    @contextmanager
    def _running(self, url: str) -> Iterator[None]:
        with self._lock:
            self._in_flight[url] += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight[url] -= 1
