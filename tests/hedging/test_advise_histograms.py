"""`hedging advise` trusts no histogram (issue 49, item 6): every distribution, from
a file's export or from the points Cloud Monitoring returns for `--topic`, is checked
against the service's Distribution rules by one reader (reconciler/hedging/
histogram.py) before anything is computed from it. A bad one is an error naming the
file and the JSON path (or the topic and the point) and the rule, exit 1, no advice;
no input decides how much is computed or allocated beyond its counts."""

from __future__ import annotations

import json
import math
import tempfile
import tracemalloc
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from reconciler.errors import InputError
from reconciler.hedging import histogram
from reconciler.hedging.advise import advise, read_samples

POINT = "timeSeries[0].points[0].value.distributionValue"


def export(dist: dict[str, Any], **series: Any) -> str:
    """An export as projects.timeSeries.list returns it, one series of one point."""
    point = {"value": {"distributionValue": dist}}
    return json.dumps({"timeSeries": [{**series, "points": [point]}]})


def advise_file(run_cli: Callable[..., Any], tmp_path: Path, text: str) -> Any:
    path = tmp_path / "latencies.json"
    path.write_text(text)
    return run_cli("hedging", "advise", str(path), "--batches", "200")


# The three trials of the issue, as a user would run them.
TRIALS = {
    "an exponential bound beyond a double": (
        {"count": "10", "bucketCounts": ["0", "4", "6"], "bucketOptions": {
            "exponentialBuckets": {"numFiniteBuckets": 2000, "growthFactor": 2, "scale": 1}}},
        f"{POINT}.bucketOptions.exponentialBuckets.numFiniteBuckets: 2000 finite buckets "
        "are more than Cloud Monitoring's limit of 200 buckets",
    ),
    "300,000,000 buckets in a small file": (
        {"bucketCounts": ["1", "2"], "bucketOptions": {
            "linearBuckets": {"numFiniteBuckets": 300_000_000, "width": 1, "offset": 0}}},
        f"{POINT}.bucketOptions.linearBuckets.numFiniteBuckets: 300000000 finite buckets "
        "are more than Cloud Monitoring's limit of 200 buckets",
    ),
    "decreasing bounds with a negative count": (
        {"count": "10", "bucketCounts": ["3", "5", "-5", "7"],
         "bucketOptions": {"explicitBuckets": {"bounds": [10, 5, 1]}}},
        f"{POINT}.bucketOptions.explicitBuckets.bounds[1]: 5 is not greater than the bound "
        "before it (10): bounds must be strictly increasing",
    ),
}


@pytest.mark.parametrize("trial", TRIALS)
def test_the_issues_histograms_are_refused_naming_file_and_member(
    run_cli: Callable[..., Any], tmp_path: Path, trial: str
) -> None:
    dist, message = TRIALS[trial]
    result = advise_file(run_cli, tmp_path, export(dist))
    assert result.exit_code == 1, result.output
    assert result.stdout == ""  # no advice
    assert f"Error: {tmp_path / 'latencies.json'}: {message}" in result.stderr
    assert "internal error" not in result.stderr


def exponential(**options: Any) -> dict[str, Any]:
    return {"exponentialBuckets": {"numFiniteBuckets": 3, "growthFactor": 10, "scale": 1,
                                   **options}}


@pytest.mark.parametrize(
    ("dist", "where", "what"),
    [
        ({"bucketOptions": exponential(growthFactor=1), "bucketCounts": [1]},
         "bucketOptions.exponentialBuckets.growthFactor", "1 must be greater than 1"),
        ({"bucketOptions": exponential(scale=0), "bucketCounts": [1]},
         "bucketOptions.exponentialBuckets.scale", "0 must be greater than 0"),
        ({"bucketOptions": exponential(numFiniteBuckets=0), "bucketCounts": [1]},
         "bucketOptions.exponentialBuckets.numFiniteBuckets", "0 must be greater than 0"),
        ({"bucketOptions": exponential(scale=1e300, numFiniteBuckets=100), "bucketCounts": [1]},
         "bucketOptions.exponentialBuckets", "the last bound, scale × growthFactor^"),
        ({"bucketOptions": {"linearBuckets": {"numFiniteBuckets": 2, "width": -1}},
          "bucketCounts": [1]},
         "bucketOptions.linearBuckets.width", "-1 must be greater than 0"),
        ({"bucketOptions": {"explicitBuckets": {"bounds": []}}, "bucketCounts": []},
         "bucketOptions.explicitBuckets.bounds", "at least one bound is needed"),
        ({"bucketOptions": {"explicitBuckets": {"bounds": [1, 1]}}, "bucketCounts": [1]},
         "bucketOptions.explicitBuckets.bounds[1]", "bounds must be strictly increasing"),
        ({"bucketOptions": {"explicitBuckets": {"bounds": [1, "NaN"]}}, "bucketCounts": [1]},
         "bucketOptions.explicitBuckets.bounds[1]", "'NaN' is not a finite number"),
        ({"bucketOptions": exponential(), "bucketCounts": [1, 2, 3, 4, 5, 6]},
         "bucketCounts", "6 counts for 5 buckets"),
        ({"bucketOptions": exponential(), "bucketCounts": ["1", "-2"]},
         "bucketCounts[1]", "-2 must not be negative"),
        ({"bucketOptions": exponential(), "bucketCounts": [1.5]},
         "bucketCounts[0]", "1.5 is not an integer"),
        ({"bucketOptions": exponential(), "bucketCounts": [True]},
         "bucketCounts[0]", "an integer, not a boolean"),
        ({"bucketOptions": exponential(), "bucketCounts": ["99999999999999999999"]},
         "bucketCounts[0]", "is beyond what an int64 holds"),
        ({"bucketOptions": exponential(), "bucketCounts": [1, 2], "count": "4"},
         "count", "4 is not the sum of bucketCounts (3)"),
        ({"bucketOptions": exponential(), "bucketCounts": [1], "sumOfSquaredDeviation": -1},
         "sumOfSquaredDeviation", "-1 must not be negative"),
        ({"bucketOptions": {"explicitBuckets": {"bounds": [-5, 0, 10]}},
          "bucketCounts": [0, 4, 6]},
         "bucketCounts[1]", "4 observations below 0: a latency is never negative"),
        ({"bucketOptions": {"linearBuckets": {"numFiniteBuckets": 2, "width": 1},
                            "explicitBuckets": {"bounds": [1]}}, "bucketCounts": [1]},
         "bucketOptions", "exactly one of linearBuckets, exponentialBuckets, explicitBuckets"),
        ({"bucketCounts": [1]}, "bucketOptions", "missing"),
    ],
)
def test_each_rule_is_an_error_at_its_member(
    run_cli: Callable[..., Any], tmp_path: Path, dist: dict[str, Any], where: str, what: str
) -> None:
    result = advise_file(run_cli, tmp_path, export(dist))
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    line = result.stderr.splitlines()[0]
    assert line.startswith(f"Error: {tmp_path / 'latencies.json'}: {POINT}.{where}: "), line
    assert what in line


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000, "not a JSON document reconcile reads (nested too deeply)"),
        ('{"bucketCounts": [' + "1" * 5000 + "]}", "not a JSON document reconcile reads"),
        (export({"bucketOptions": exponential(), "bucketCounts": [1]}, unit="By"),
         "timeSeries[0].unit: 'By' is not a unit of latency reconcile reads"),
    ],
)
def test_documents_reconcile_cannot_read_are_errors_not_crashes(
    run_cli: Callable[..., Any], tmp_path: Path, text: str, message: str
) -> None:
    result = advise_file(run_cli, tmp_path, text)
    assert result.exit_code == 1, result.output
    assert f"{tmp_path / 'latencies.json'}: {message}" in result.stderr


def test_the_series_unit_gives_the_bounds_in_milliseconds(tmp_path: Path) -> None:
    """The service reports send_request_latencies in µs (`unit: us`), as an export
    of it says; an export without a unit is read in milliseconds."""
    dist = {"bucketOptions": {"explicitBuckets": {"bounds": [4000, 8000]}},
            "bucketCounts": [0, 10]}
    path = tmp_path / "us.json"
    path.write_text(export(dist, unit="us"))
    (bucket,) = read_samples(path).buckets
    assert (bucket.lo, bucket.hi, bucket.count) == (4.0, 8.0, 10)


# -- the property: never a crash, never more than O(counts), the samples counted ------

FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
NUMBER = FINITE | st.integers(-(2**70), 2**70) | st.sampled_from(
    ["NaN", "Infinity", "-1", "1e309", "0x10", "", "1" * 30, True, None, [], {}]
)
COUNT = st.integers(-3, 2**64) | st.sampled_from(["7", "-1", "1.5", "x", 2.0, 1.5, None, True])
GOOD_COUNT = st.integers(0, 50)


def options() -> st.SearchStrategy[Any]:
    n = st.integers(-2, 400) | st.sampled_from([2000, 300_000_000, 2**40])
    return st.one_of(
        st.builds(lambda n, w, o: {"linearBuckets": {"numFiniteBuckets": n, "width": w,
                                                     "offset": o}}, n, NUMBER, NUMBER),
        st.builds(lambda n, g, s: {"exponentialBuckets": {"numFiniteBuckets": n,
                                                          "growthFactor": g, "scale": s}},
                  n, NUMBER, NUMBER),
        st.builds(lambda b: {"explicitBuckets": {"bounds": b}},
                  st.lists(NUMBER, max_size=12) | st.lists(FINITE, max_size=250).map(sorted)),
        st.sampled_from([{}, [], "x", {"linearBuckets": 3}]),
    )


def valid() -> st.SearchStrategy[dict[str, Any]]:
    """Distributions that keep every rule: the advice must come from exactly them."""
    def build(kind: int, n: int, step: float, counts: list[int]) -> dict[str, Any]:
        if kind == 0:
            opts = {"linearBuckets": {"numFiniteBuckets": n, "width": step, "offset": step}}
        elif kind == 1:
            opts = {"exponentialBuckets": {"numFiniteBuckets": n, "growthFactor": 1 + step,
                                           "scale": 0.5}}
        else:
            opts = {"explicitBuckets": {"bounds": [step * (i + 1) for i in range(n)]}}
        return {"bucketOptions": opts, "bucketCounts": [str(c) for c in counts[: n + 2]],
                "count": str(sum(counts[: n + 2]))}

    return st.builds(build, st.integers(0, 2), st.integers(1, 60), st.floats(0.05, 50),
                     st.lists(GOOD_COUNT, min_size=1, max_size=62).map(some))


def some(counts: list[int]) -> list[int]:
    """At least one observation (in the underflow, which reaches above 0 here)."""
    return [counts[0] + 1, *counts[1:]]


def hostile() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"bucketOptions": options()},
        optional={"bucketCounts": st.lists(COUNT, max_size=300) | NUMBER, "count": COUNT,
                  "mean": NUMBER, "sumOfSquaredDeviation": NUMBER},
    )


@contextmanager
def peak_bytes() -> Iterator[list[int]]:
    found = [0]
    tracemalloc.start()
    try:
        yield found
    finally:
        found[0] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(valid(), hostile()))
def test_any_histogram_is_advice_from_its_counts_or_an_error(dist: dict[str, Any]) -> None:
    text = export(dist)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "h.json"
        path.write_text(text)
        with peak_bytes() as peak:
            try:
                latencies = read_samples(path)
            except InputError as exc:
                assert str(path) in str(exc)
                latencies = None
    # O(counts): a bound per count at most, whatever numFiniteBuckets says.
    assert peak[0] <= 1536 * 1024 + 64 * len(text), peak[0]  # 1 MiB: the read buffer
    event("refused" if latencies is None else "advised")
    if latencies is None:
        return
    counts = [int(c) for c in dist["bucketCounts"]]
    assert latencies.count == sum(counts)
    advice = advise(latencies, batches=100)
    assert advice.samples == sum(counts)
    assert all(b.lo >= 0 and b.hi >= b.lo and math.isfinite(b.hi) for b in latencies.buckets)
    assert advice.baseline.p50_ms >= 0


def test_a_valid_histogram_reads_as_its_buckets() -> None:
    h = histogram.read({"bucketOptions": exponential(), "bucketCounts": ["0", "2", "3", "0", "1"],
                        "count": 6})
    assert [(h.lower(i), h.upper(i)) for i in range(5)] == [
        (-math.inf, 1), (1, 10), (10, 100), (100, 1000), (1000, math.inf)
    ]
    assert h.latencies().count == 6


# -- the live path: the points Cloud Monitoring returns -------------------------------

TOPIC = "projects/advise-proj/topics/orders"


@contextmanager
def monitoring_returning(distribution: dict[str, Any]) -> Iterator[str]:
    """A loopback gRPC server standing in for a service that answers one latency point
    (`distribution`, in the REST form) through the real wire: GetTopic finds the topic,
    ListTimeSeries answers the point for send_request_latencies and nothing else. The
    clients are the real google-cloud-pubsub and google-cloud-monitoring."""
    from google.cloud.monitoring_v3.types import ListTimeSeriesRequest, ListTimeSeriesResponse
    from google.pubsub_v1.types import GetTopicRequest, Topic

    def get_topic(request: Any, context: Any) -> Any:
        return Topic(name=request.topic)

    def list_time_series(request: Any, context: Any) -> Any:
        if "send_request_latencies" not in request.filter:
            return ListTimeSeriesResponse()
        return ListTimeSeriesResponse.from_json(json.dumps({"timeSeries": [{
            "metric": {"type": "pubsub.googleapis.com/topic/send_request_latencies",
                       "labels": {"response_code": "success"}},
            "resource": {"type": "pubsub_topic", "labels": {"topic_id": "orders"}},
            "valueType": "DISTRIBUTION",
            "points": [{"interval": {"startTime": "2026-01-01T00:00:00Z",
                                     "endTime": "2026-01-01T01:00:00Z"},
                        "value": {"distributionValue": distribution}}],
        }]}))

    def unary(fn: Any, request: Any, response: Any) -> Any:
        return grpc.unary_unary_rpc_method_handler(
            fn, request_deserializer=request.deserialize, response_serializer=response.serialize
        )

    server = grpc.server(futures.ThreadPoolExecutor(2))
    server.add_generic_rpc_handlers([
        grpc.method_handlers_generic_handler(
            "google.pubsub.v1.Publisher",
            {"GetTopic": unary(get_topic, GetTopicRequest, Topic)}),
        grpc.method_handlers_generic_handler(
            "google.monitoring.v3.MetricService",
            {"ListTimeSeries": unary(list_time_series, ListTimeSeriesRequest,
                                     ListTimeSeriesResponse)}),
    ])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None)


def test_a_point_from_the_service_is_checked_as_a_file_is(
    run_cli: Callable[..., Any],
) -> None:
    dist = {"count": "10", "bucketCounts": ["0", "4", "6"], "bucketOptions": {
        "exponentialBuckets": {"numFiniteBuckets": 66, "growthFactor": 1.0, "scale": 1}}}
    with monitoring_returning(dist) as address:
        result = run_cli("hedging", "advise", "--topic", TOPIC, "--emulator", address,
                         "--batches", "200")
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert (
        "Error: topic orders (project advise-proj): Cloud Monitoring returned a "
        "topic/send_request_latencies value that breaks its Distribution rules (emulator "
        f"{address}): the point of response_code success ending 2026-01-01T01:00:00Z: "
        "bucketOptions.exponentialBuckets.growthFactor: 1 must be greater than 1; no advice "
        "is drawn from it"
    ) in result.stderr


def test_a_valid_point_from_the_same_server_is_advised_on(
    run_cli: Callable[..., Any],
) -> None:
    """The stand-in answers a valid point as the service would: advice from exactly its
    counts (the check refuses the bad, not the unusual)."""
    dist = {"count": "1000", "mean": 40000, "bucketOptions": {"explicitBuckets": {
        "bounds": [4000, 8000, 1_000_000, 3_000_000]}}, "bucketCounts": ["0", "980", "0", "20"]}
    with monitoring_returning(dist) as address:
        result = run_cli("hedging", "advise", "--topic", TOPIC, "--emulator", address,
                         "--batches", "500")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("1000 latency samples from topic/send_request_latencies")
