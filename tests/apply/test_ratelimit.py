"""The token bucket, pure: a fake clock; the waits it asks for are the assertions."""

from __future__ import annotations

import pytest

from reconciler.apply.ratelimit import (
    ADMIN_OPS_QUOTA_PER_SECOND,
    DEFAULT_RATE,
    ProjectRateLimiter,
    RateLimiter,
)
from reconciler.names import project_of


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_burst_is_free_then_calls_are_spaced_by_the_rate() -> None:
    clock = FakeClock()
    bucket = RateLimiter(rate=10.0, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    waits = [bucket.reserve() for _ in range(3)]
    assert waits == pytest.approx([0.1, 0.2, 0.3])  # queued in arrival order


def test_tokens_refill_with_time_up_to_the_burst() -> None:
    clock = FakeClock()
    bucket = RateLimiter(rate=2.0, burst=2, clock=clock)
    bucket.reserve()
    bucket.reserve()
    clock.now += 100.0  # long idle: refills to the burst, not beyond
    assert [bucket.reserve() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.5])


def test_sustained_rate_never_exceeds_the_limit() -> None:
    clock = FakeClock()
    limiter = ProjectRateLimiter(rate=50.0, burst=5, clock=clock, sleep=clock.sleep)
    for _ in range(505):
        limiter.acquire("p")
    # 505 calls: 5 from the burst, 500 paid for at 50/s -> 10 s of waiting in total.
    assert clock.now == pytest.approx(10.0)


def test_projects_have_separate_buckets() -> None:
    clock = FakeClock()
    limiter = ProjectRateLimiter(rate=1.0, burst=1, clock=clock, sleep=clock.sleep)
    assert limiter.acquire("a") == 0.0
    assert limiter.acquire("b") == 0.0
    assert limiter.acquire("a") == pytest.approx(1.0)


def test_disabled_limiter_never_waits() -> None:
    clock = FakeClock()
    limiter = ProjectRateLimiter(rate=None, clock=clock, sleep=clock.sleep)
    assert all(limiter.acquire("p") == 0.0 for _ in range(1000))
    assert clock.slept == []


def test_default_limiter_keeps_a_minute_of_calls_under_the_admin_quota() -> None:
    """Apply's limiter with its defaults, driven as hard as possible for a minute of
    (fake) time: the calls it lets through stay under the per-minute quota, and it does
    not throttle below its own rate."""
    clock = FakeClock()
    limiter = ProjectRateLimiter(DEFAULT_RATE, clock=clock, sleep=clock.sleep)
    started: list[float] = []
    while clock.now < 60.0:
        limiter.acquire("p")
        started.append(clock.now)
    in_first_minute = sum(1 for t in started if t < 60.0)
    assert in_first_minute <= 60 * ADMIN_OPS_QUOTA_PER_SECOND  # 6,000 per minute
    assert in_first_minute >= 60 * DEFAULT_RATE  # the burst comes on top of the rate


def test_project_of_topic_names() -> None:
    assert project_of("projects/acme/topics/orders") == "acme"
    assert project_of("acme") == "acme"


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        RateLimiter(rate=0, burst=1, clock=lambda: 0.0)
    with pytest.raises(ValueError):
        RateLimiter(rate=1, burst=0.5, clock=lambda: 0.0)
