import pytest
from monoclock import FakeClock
from throttle import RateLimiter, RateLimitTimeout


def test_one_bucket_per_key():
    limiter = RateLimiter(rate=1, capacity=1, clock=FakeClock())
    assert limiter.acquire("a") == 0
    assert limiter.acquire("b") == 0


def test_acquire_waits_for_tokens():
    clock = FakeClock()
    limiter = RateLimiter(rate=1, capacity=2, clock=clock)
    limiter.acquire("api", 2)
    assert limiter.acquire("api") == 1
    assert clock.slept == [1]


def test_acquire_gives_up_after_max_wait():
    limiter = RateLimiter(rate=1, capacity=5, clock=FakeClock(), max_wait=3)
    limiter.acquire("api", 5)
    with pytest.raises(RateLimitTimeout):
        limiter.acquire("api", 5)
