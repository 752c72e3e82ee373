"""What the PromQL client makes of answers the local server never gives: a series
without a usable value is left out, a body that is not an instant vector is a reason
(never a traceback)."""

from __future__ import annotations

import json

import pytest

from reconciler.backends.metrics import MetricsUnavailable
from reconciler.backends.promql import _samples

WHERE = "project proj-a"


def _vector(*values: object) -> bytes:
    result = [{"metric": {"__name__": "m", "region": "us-east1"}, "value": [0, v]} for v in values]
    data = {"resultType": "vector", "result": result}
    return json.dumps({"status": "success", "data": data}).encode()


def test_values_that_are_not_finite_numbers_are_left_out() -> None:
    samples = _samples(200, _vector("3", "NaN", "+Inf", "-Inf", "x", None), WHERE)
    assert [s.value for s in samples] == [3.0]


@pytest.mark.parametrize(
    "body",
    [b"", b"not json", b"[" * 100_000, b'{"data": {"resultType": "matrix", "result": []}}'],
    ids=["empty", "not-json", "too-deep", "matrix"],
)
def test_an_answer_that_is_not_an_instant_vector_is_a_reason(body: bytes) -> None:
    with pytest.raises(MetricsUnavailable, match="not an instant vector"):
        _samples(200, body, WHERE)
