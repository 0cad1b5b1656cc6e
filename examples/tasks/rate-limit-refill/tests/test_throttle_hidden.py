"""Hidden tests of rate-limit-refill: continuous refill, capped; n > capacity fails at once."""

import pytest
from monoclock import FakeClock
from throttle import RateLimiter, TokenBucket


def empty_bucket(rate, capacity):
    clock = FakeClock()
    bucket = TokenBucket(rate=rate, capacity=capacity, clock=clock)
    assert bucket.try_acquire(capacity)
    return bucket, clock


def test_half_a_second_brings_half_the_rate():
    bucket, clock = empty_bucket(rate=4, capacity=4)
    clock.advance(0.5)
    assert bucket.available() == 2
    assert bucket.try_acquire(2)


def test_quarter_seconds_add_up():
    bucket, clock = empty_bucket(rate=4, capacity=4)
    taken = []
    for _ in range(4):
        clock.advance(0.25)
        taken.append(bucket.try_acquire())
    assert taken == [True, True, True, True]


def test_refill_never_exceeds_capacity():
    bucket, clock = empty_bucket(rate=10, capacity=3)
    clock.advance(5)
    assert bucket.available() == 3
    clock.advance(0.5)
    assert bucket.available() == 3


def test_wait_time_in_fractions_of_a_second():
    bucket, _ = empty_bucket(rate=4, capacity=4)
    assert bucket.wait_time(1) == 0.25


def test_acquire_sleeps_just_long_enough():
    clock = FakeClock()
    limiter = RateLimiter(rate=4, capacity=2, clock=clock)
    assert limiter.acquire("api", 2) == 0
    assert limiter.acquire("api") == 0.25
    assert clock.slept == [0.25]


def test_more_than_the_capacity_fails_at_once():
    clock = FakeClock()
    limiter = RateLimiter(rate=1, capacity=5, clock=clock)
    with pytest.raises(ValueError, match="5"):
        limiter.acquire("api", 6)
    assert clock.slept == []


def test_exactly_the_capacity_is_fine():
    clock = FakeClock()
    limiter = RateLimiter(rate=2, capacity=5, clock=clock)
    assert limiter.acquire("api", 5) == 0
    assert limiter.acquire("api", 5) == 2.5
