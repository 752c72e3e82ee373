"""The retry classifier and backoff, pure: fake clock, fake sleep, seeded randomness."""

from __future__ import annotations

import random

import grpc
import pytest
from google.api_core import exceptions as gexc

from reconciler.apply.retry import (
    AdminRetry,
    Attempts,
    PropagationTimeout,
    Stopped,
    call_with_retry,
    classify,
    error_message,
    error_status_name,
)
from reconciler.errors import BackendError


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        self.now += seconds
        return False


class Coded(Exception):
    def __init__(self, code: str, message: str = "boom") -> None:
        super().__init__(message)
        self.status = code


class RpcError(grpc.RpcError):  # type: ignore[misc]
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "from grpc"


@pytest.mark.parametrize(
    "code", ["UNAVAILABLE", "DEADLINE_EXCEEDED", "ABORTED", "RESOURCE_EXHAUSTED", "INTERNAL"]
)
def test_transient_codes(code: str) -> None:
    assert classify(Coded(code)) == "transient"


@pytest.mark.parametrize(
    "code",
    ["INVALID_ARGUMENT", "FAILED_PRECONDITION", "PERMISSION_DENIED", "NOT_FOUND", "ALREADY_EXISTS"],
)
def test_permanent_codes(code: str) -> None:
    assert classify(Coded(code)) == "permanent"


def test_unknown_errors_are_permanent() -> None:
    assert classify(ValueError("x")) == "permanent"


def test_codes_are_read_from_api_core_grpc_and_wrapped_errors() -> None:
    unavailable = gexc.ServiceUnavailable("down")  # type: ignore[no-untyped-call]
    assert error_status_name(unavailable) == "UNAVAILABLE"
    assert error_status_name(RpcError(grpc.StatusCode.ABORTED)) == "ABORTED"
    # The backend raises BackendError `from None`: the context still carries the code.
    try:
        try:
            raise gexc.PermissionDenied("no update for you")  # type: ignore[no-untyped-call]
        except gexc.PermissionDenied:
            raise BackendError("permission denied to update topic") from None
    except BackendError as exc:
        wrapped = exc
    assert error_status_name(wrapped) == "PERMISSION_DENIED"
    assert error_message(wrapped) == "PERMISSION_DENIED: permission denied to update topic"


def test_backoff_is_capped_and_jittered() -> None:
    policy = AdminRetry(initial=0.5, maximum=4.0, multiplier=2.0)
    rng = random.Random(7)
    for n in range(12):
        cap = min(4.0, 0.5 * 2**n)
        samples = [policy.backoff(n, rng) for _ in range(50)]
        assert all(0.0 <= s <= cap for s in samples)
        assert len(set(samples)) > 1  # jitter: never a fixed lock-step delay


def test_transient_errors_are_retried_until_success() -> None:
    clock = FakeClock()
    outcomes: list[Exception | None] = [Coded("UNAVAILABLE"), Coded("INTERNAL"), None]
    stats = Attempts()

    def fn() -> str:
        err = outcomes.pop(0)
        if err:
            raise err
        return "ok"

    got = call_with_retry(
        fn, AdminRetry(), clock=clock, wait=clock.wait, rng=random.Random(1), attempts=stats
    )
    assert got == "ok"
    assert stats.count == 3 and stats.transient_errors == 2
    assert len(clock.waits) == 2


def test_permanent_error_is_not_retried() -> None:
    clock = FakeClock()
    calls = 0

    def fn() -> None:
        nonlocal calls
        calls += 1
        raise Coded("PERMISSION_DENIED", "denied on projects/p/topics/t")

    with pytest.raises(Coded, match="denied"):
        call_with_retry(fn, AdminRetry(), clock=clock, wait=clock.wait, rng=random.Random(1))
    assert calls == 1 and clock.waits == []


def test_attempts_are_bounded() -> None:
    clock = FakeClock()
    stats = Attempts()

    def fn() -> None:
        raise Coded("UNAVAILABLE")

    policy = AdminRetry(max_attempts=4, deadline=1e9)
    with pytest.raises(Coded):
        call_with_retry(
            fn, policy, clock=clock, wait=clock.wait, rng=random.Random(2), attempts=stats
        )
    assert stats.count == 4


def test_time_is_bounded() -> None:
    clock = FakeClock()

    def fn() -> None:
        clock.now += 3.0  # each attempt takes 3 s
        raise Coded("DEADLINE_EXCEEDED")

    policy = AdminRetry(initial=1.0, maximum=1.0, max_attempts=1000, deadline=10.0)
    with pytest.raises(Coded):
        call_with_retry(fn, policy, clock=clock, wait=clock.wait, rng=random.Random(3))
    assert clock.now <= 10.0 + 3.0  # no attempt starts after the deadline


def test_stop_during_backoff_ends_retrying() -> None:
    def fn() -> None:
        raise Coded("UNAVAILABLE", "try later")

    with pytest.raises(Stopped, match="try later"):
        call_with_retry(
            fn, AdminRetry(), clock=lambda: 0.0, wait=lambda s: True, rng=random.Random(4)
        )


def test_before_attempt_runs_for_every_attempt() -> None:
    clock = FakeClock()
    hooks = 0
    outcomes: list[Exception | None] = [Coded("ABORTED"), None]

    def hook() -> None:
        nonlocal hooks
        hooks += 1

    def fn() -> int:
        err = outcomes.pop(0)
        if err:
            raise err
        return 1

    call_with_retry(
        fn, AdminRetry(), clock=clock, wait=clock.wait, rng=random.Random(5), before_attempt=hook
    )
    assert hooks == 2


# --- org-policy propagation ("recently created" projects) ----------------------------

RECENT = "If the project was recently created, you may need to wait a few minutes."


@pytest.mark.parametrize(
    ("code", "message", "kind"),
    [
        ("FAILED_PRECONDITION", RECENT, "propagation"),
        ("INVALID_ARGUMENT", "... please retry this\n operation in a few minutes", "propagation"),
        ("FAILED_PRECONDITION", "regions not allowed by the organization policy", "permanent"),
        ("PERMISSION_DENIED", RECENT, "permanent"),
        ("UNAVAILABLE", RECENT, "transient"),
    ],
)
def test_propagation_errors_are_told_by_code_and_message(
    code: str, message: str, kind: str
) -> None:
    assert classify(Coded(code, message)) == kind


def test_propagation_errors_wait_up_to_their_own_budget_then_say_so() -> None:
    clock = FakeClock()
    told: list[BaseException] = []
    stats = Attempts()

    def refuse() -> None:
        raise Coded("FAILED_PRECONDITION", RECENT)

    policy = AdminRetry(max_attempts=3, deadline=5.0, propagation_wait=100.0)
    with pytest.raises(PropagationTimeout) as caught:
        call_with_retry(
            refuse,
            policy,
            clock=clock,
            wait=clock.wait,
            rng=random.Random(1),
            attempts=stats,
            on_propagation=told.append,
        )
    assert len(told) == 1  # the progress hook fires once per call
    assert stats.propagation_errors == stats.count > 3  # not bounded by max_attempts
    assert 100.0 - 15.0 <= sum(clock.waits) <= 100.0
    assert error_status_name(caught.value) == "FAILED_PRECONDITION"
    assert "recently created" in error_message(caught.value)
    assert "--propagation-wait" in error_message(caught.value)


def test_transient_budget_starts_afresh_after_propagation() -> None:
    clock = FakeClock()
    answers = [Coded("FAILED_PRECONDITION", RECENT)] * 6 + [Coded("UNAVAILABLE")] * 2

    def fn() -> str:
        if answers:
            raise answers.pop(0)
        return "ok"

    policy = AdminRetry(max_attempts=3, deadline=5.0, propagation_wait=300.0)
    stats = Attempts()
    got = call_with_retry(
        fn, policy, clock=clock, wait=clock.wait, rng=random.Random(2), attempts=stats
    )
    assert got == "ok" and stats.count == 9
    assert (stats.propagation_errors, stats.transient_errors) == (6, 2)


def test_zero_propagation_wait_fails_at_once() -> None:
    clock = FakeClock()
    with pytest.raises(PropagationTimeout):
        call_with_retry(
            lambda: (_ for _ in ()).throw(Coded("INVALID_ARGUMENT", "retry this operation")),
            AdminRetry(propagation_wait=0.0),
            clock=clock,
            wait=clock.wait,
            rng=random.Random(3),
        )
    assert clock.waits == []
