import pytest
from monoclock import FakeClock
from throttle import TokenBucket


def test_a_new_bucket_is_full():
    bucket = TokenBucket(rate=1, capacity=3, clock=FakeClock())
    assert [bucket.try_acquire() for _ in range(4)] == [True, True, True, False]


def test_tokens_come_back_at_the_rate():
    clock = FakeClock()
    bucket = TokenBucket(rate=2, capacity=4, clock=clock)
    assert bucket.try_acquire(4)
    clock.advance(1)
    assert bucket.available() == 2


def test_wait_time():
    clock = FakeClock()
    bucket = TokenBucket(rate=1, capacity=2, clock=clock)
    bucket.try_acquire(2)
    assert bucket.wait_time(2) == 2


def test_bad_settings():
    with pytest.raises(ValueError):
        TokenBucket(rate=0, capacity=1)
