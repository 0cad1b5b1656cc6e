"""One token bucket per key (an API host, say), all with the same rate and capacity."""

from __future__ import annotations

from throttle.bucket import TokenBucket


class RateLimitTimeout(TimeoutError):
    """Tokens that did not come free within `max_wait` seconds."""


class RateLimiter:
    def __init__(
        self,
        rate: float,
        capacity: int,
        clock: object | None = None,
        max_wait: float = 30.0,
    ) -> None:
        self.rate = rate
        self.capacity = capacity
        self.clock = clock
        self.max_wait = max_wait
        self.buckets: dict[str, TokenBucket] = {}

    def bucket(self, key: str) -> TokenBucket:
        if key not in self.buckets:
            self.buckets[key] = TokenBucket(self.rate, self.capacity, self.clock)
        return self.buckets[key]

    def acquire(self, key: str, n: int = 1) -> float:
        """Wait until `n` tokens of `key`'s bucket are free, take them; the seconds waited."""
        bucket = self.bucket(key)
        waited = 0.0
        while not bucket.try_acquire(n):
            delay = bucket.wait_time(n)
            if waited + delay > self.max_wait:
                raise RateLimitTimeout(f"{key}: waited {waited:g} s and {n} tokens are not free")
            bucket.clock.sleep(delay)
            waited += delay
        return waited
