"""A token bucket: up to `capacity` tokens, refilled at `rate` tokens per second."""

from __future__ import annotations

from monoclock import MonotonicClock


class TokenBucket:
    """Each request takes tokens; an empty bucket means: wait."""

    def __init__(self, rate: float, capacity: int, clock: object | None = None) -> None:
        if rate <= 0 or capacity < 1:
            raise ValueError(f"rate must be positive and capacity at least 1: {rate}, {capacity}")
        self.rate = rate
        self.capacity = capacity
        self.clock = clock or MonotonicClock()
        self.tokens = float(capacity)
        self.updated = self.clock.now()

    def _refill(self) -> None:
        now = self.clock.now()
        elapsed = int(now - self.updated)
        if elapsed > 0:
            self.tokens = min(self.capacity, self.tokens + elapsed * self.rate)
            self.updated = now

    def available(self) -> float:
        """Tokens in the bucket now."""
        self._refill()
        return self.tokens

    def try_acquire(self, n: int = 1) -> bool:
        """Take `n` tokens if the bucket has them; False (taking none) if not."""
        self._refill()
        if self.tokens >= n:
            self.tokens -= n
            return True
        return False

    def wait_time(self, n: int = 1) -> float:
        """Seconds until `n` tokens are in the bucket (0 when they are now)."""
        self._refill()
        return max(0.0, (n - self.tokens) / self.rate)
