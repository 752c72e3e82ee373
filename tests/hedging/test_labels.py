"""The hedging profile's topic-label encoding: exact round trip, valid labels."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.hedging import labels
from reconciler.hedging.profile import (
    HEDGE_DELAY_MS,
    MAX_TOKENS,
    HedgingProfile,
    RetryTimeouts,
    all_problems,
)

KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
VALUE = re.compile(r"[a-z0-9_-]{0,63}")

names = st.one_of(
    st.none(),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=63).filter(
        lambda n: n != labels.INLINE_NAME
    ),
)


@st.composite
def valid_settings(draw: st.DrawFn) -> tuple[HedgingProfile, RetryTimeouts]:
    delay = draw(st.integers(*HEDGE_DELAY_MS))
    profile = HedgingProfile(
        hedge_delay_ms=delay,
        max_tokens=draw(st.integers(*MAX_TOKENS)),
        refill_ratio=draw(st.integers(1_000, 200_000)) / 1_000_000,
        name=draw(names),
    )
    initial = draw(st.integers(delay + 1, 600_000))
    retry = RetryTimeouts(initial, draw(st.integers(initial, 3_600_000)))
    return profile, retry


@given(valid_settings())
def test_any_valid_profile_round_trips_exactly(
    settings: tuple[HedgingProfile, RetryTimeouts],
) -> None:
    profile, retry = settings
    assert all_problems(profile, retry, message_ordering=False) == []
    assert labels.decode(labels.encode(profile, retry)) == (profile, retry)


@given(valid_settings())
def test_encoded_labels_follow_google_label_rules(
    settings: tuple[HedgingProfile, RetryTimeouts],
) -> None:
    encoded = labels.encode(*settings)
    assert set(encoded) == set(labels.HEDGING_KEYS)
    for key, value in encoded.items():
        assert KEY.fullmatch(key), key
        assert labels.is_reserved(key)
        assert VALUE.fullmatch(value), value


@given(valid_settings(), st.sampled_from(labels.HEDGING_KEYS))
def test_partial_labels_are_an_error(
    settings: tuple[HedgingProfile, RetryTimeouts], missing: str
) -> None:
    encoded = labels.encode(*settings)
    del encoded[missing]
    with pytest.raises(labels.LabelDecodeError, match=missing):
        labels.decode(encoded)


def test_no_hedging_labels_means_no_profile() -> None:
    assert labels.decode({"team": "payments", labels.OWNERSHIP_LABEL: "true"}) is None


def test_non_numeric_label_is_an_error() -> None:
    encoded = labels.encode(HedgingProfile(), RetryTimeouts())
    encoded[labels.DELAY] = "1s"
    with pytest.raises(labels.LabelDecodeError, match="whole number"):
        labels.decode(encoded)
