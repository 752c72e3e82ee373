"""The backend's Cloud Monitoring reader (backends/metrics.py) against the local server
and Google's emulator: typed series, filters, aggregation, distributions, and a read
that cannot be made becoming a reason rather than a failure."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.backends.base import BackendInfo
from reconciler.backends.client_backend import ClientBackend
from reconciler.backends.clients import monitoring_client, publisher_client, subscriber_client
from reconciler.backends.metrics import (
    Aggregation,
    Distribution,
    MetricQuery,
    MetricsUnavailable,
)
from reconciler.localserver import CLIENT_REGION_KEY

PROJECT = "proj-metrics"
PUBSUB = "pubsub.googleapis.com/"


def _backend(address: str, metrics: bool = True) -> ClientBackend:
    factory = (lambda: (monitoring_client(address), address)) if metrics else None
    info = BackendInfo(kind="emulator", address=address)
    return ClientBackend(publisher_client(address), None, info, metrics_client=factory, timeout=10)


def _topic(backend: ClientBackend, name: str, regions: list[str]) -> str:
    """A topic with one pull subscription (`name`-sub): the topic's by-region gauges
    count what its subscriptions hold."""
    topic = f"projects/{PROJECT}/topics/{name}"
    backend.publisher.create_topic(
        request={"name": topic, "message_storage_policy": {"allowed_persistence_regions": regions}}
    )
    subscriber = subscriber_client(backend.info.address)
    try:
        subscriber.create_subscription(
            request={"name": f"projects/{PROJECT}/subscriptions/{name}-sub", "topic": topic}
        )
    finally:
        subscriber.transport.close()
    return topic


def _publish(publisher: Any, topic: str, region: str, count: int) -> None:
    publisher.publish(
        topic=topic,
        messages=[{"data": b"abcd"} for _ in range(count)],
        metadata=[(CLIENT_REGION_KEY, region)],
        retry=None,
    )


def test_by_region_gauges_filtered_to_topics_and_summed_by_region(local_server: Any) -> None:
    backend = _backend(local_server.address)
    try:
        a = _topic(backend, "t-a", ["us-east1", "europe-west1"])
        b = _topic(backend, "t-b", ["us-east1"])
        c = _topic(backend, "t-c", ["us-east1"])
        _publish(backend.publisher, a, "us-east1", 2)
        _publish(backend.publisher, a, "europe-west1", 3)
        _publish(backend.publisher, b, "us-east1", 5)
        _publish(backend.publisher, c, "us-east1", 7)
        reader = backend.metrics()
        query = MetricQuery(
            PROJECT,
            f"{PUBSUB}topic/num_unacked_messages_by_region",
            window_seconds=600,
            resource={"topic_id": ("t-a", "t-b")},
            aggregation=Aggregation(600, "ALIGN_MAX", "REDUCE_SUM", ("metric.labels.region",)),
        )
        series = reader.read(query)
        totals = {s.metric_labels["region"]: s.latest.value for s in series if s.latest}
        assert totals == {"us-east1": 7, "europe-west1": 3}  # c's 7 are filtered out
        assert reader.calls == 1
    finally:
        backend.close()


def test_latency_distribution_has_its_bucket_options(local_server: Any) -> None:
    """The point as the service returned it, its bucket options in the REST form (the
    bounds are computed by the consumer, once it has checked them)."""
    backend = _backend(local_server.address)
    try:
        topic = _topic(backend, "lat", ["us-east1"])
        for _ in range(4):
            _publish(backend.publisher, topic, "us-east1", 1)
        query = MetricQuery(
            PROJECT,
            f"{PUBSUB}topic/send_request_latencies",
            window_seconds=600,
            resource={"topic_id": "lat"},
            aggregation=Aggregation(
                600, "ALIGN_DELTA", "REDUCE_SUM", ("metric.labels.response_code",)
            ),
        )
        (series,) = backend.metrics().read(query)
        assert series.metric_labels["response_code"] == "success"
        value = series.latest.value if series.latest else None
        assert isinstance(value, Distribution)
        assert value.count == 4 and sum(value.counts) == 4
        assert value.bucket_options == {
            "exponentialBuckets": {"numFiniteBuckets": 66, "growthFactor": 1.4, "scale": 1.0}
        }
        rest = value.rest()
        assert rest["bucketCounts"] == list(value.counts) and rest["count"] == 4
    finally:
        backend.close()


def test_a_refused_query_is_a_reason_not_a_failure(local_server: Any) -> None:
    backend = _backend(local_server.address)
    try:
        query = MetricQuery(PROJECT, f"{PUBSUB}topic/no_such_metric", window_seconds=60)
        with pytest.raises(MetricsUnavailable) as caught:
            backend.metrics().read(query)
        assert f"project {PROJECT}" in caught.value.reason
        assert "refused the query" in caught.value.reason
    finally:
        backend.close()


def test_a_backend_without_monitoring_says_so() -> None:
    backend = _backend("127.0.0.1:1", metrics=False)
    try:
        with pytest.raises(MetricsUnavailable, match="serves no Cloud Monitoring API"):
            backend.metrics()
    finally:
        backend.close()


def test_googles_emulator_serves_no_monitoring(google_emulator: str) -> None:
    backend = _backend(google_emulator)
    try:
        query = MetricQuery(PROJECT, f"{PUBSUB}topic/send_request_count", window_seconds=60)
        with pytest.raises(MetricsUnavailable) as caught:
            backend.metrics().read(query)
        assert "serves no Cloud Monitoring API" in caught.value.reason, caught.value.reason
    finally:
        backend.close()
