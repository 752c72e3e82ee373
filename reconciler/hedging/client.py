"""`PublisherClient`: a drop-in for `google.cloud.pubsub_v1.PublisherClient` with hedging.

    from reconciler.hedging import PublisherClient, HedgingSettings
    publisher = PublisherClient(hedging=HedgingSettings(hedge_delay=0.1))

The constructor takes the official client's arguments and builds one (which resolves
`client_options`, `credentials` and `PUBSUB_EMULATOR_HOST` exactly as it does);
`publish` batches per topic with a `HedgedPublisher` on that client's channel, or,
for a topic whose labels declare a locational endpoint, on a channel to it
(channels.py). With message ordering on (hedging must be off), publishing is the
official client's own: ordered keys, pausing and `resume_publish` behave as they do
there. Other attributes (`create_topic`, `get_topic`, ...) are the official client's.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any

from google.api_core import gapic_v1
from google.cloud import pubsub_v1
from google.cloud.pubsub_v1.publisher.futures import Future
from google.pubsub_v1.types import pubsub

from reconciler.hedging import labels as hedging_labels
from reconciler.hedging.batching import RetryPolicy
from reconciler.hedging.channels import Endpoints
from reconciler.hedging.flow import FlowGate
from reconciler.hedging.policies import policy_from_options
from reconciler.hedging.profile import HedgingProfile, RetryTimeouts, check
from reconciler.hedging.publisher import HedgedPublisher
from reconciler.hedging.scheduler import Scheduler
from reconciler.hedging.settings import HedgingSettings
from reconciler.hedging.stats import HedgingCounters, merge

TOPIC_LABELS = "topic-labels"
_Setup = tuple[HedgingProfile | None, RetryTimeouts, str]  # profile, retry, endpoint
_RAW_MESSAGE = pubsub.PubsubMessage.pb()
_DEFAULT = gapic_v1.method.DEFAULT


class PublisherClient:
    """`hedging=None` (off), a `HedgingSettings`, or "topic-labels" (each topic's
    profile, retry timeouts and declared locational endpoint read from its labels on
    its first publish; see `endpoint_for`)."""

    def __init__(
        self,
        batch_settings: Any = (),
        publisher_options: Any = (),
        *,
        hedging: HedgingSettings | str | None = None,
        **kwargs: Any,
    ) -> None:
        if hedging not in (None, TOPIC_LABELS) and not isinstance(hedging, HedgingSettings):
            raise ValueError(
                    f"hedging must be None, a HedgingSettings or {TOPIC_LABELS!r}, "
                    f"not {hedging!r}"
                )
        self._official = pubsub_v1.PublisherClient(batch_settings, publisher_options, **kwargs)
        options = self._official.publisher_options
        self.publisher_options = options
        self.batch_settings = self._official.batch_settings
        self._ordering = bool(options.enable_message_ordering)
        self._profile = hedging.profile() if isinstance(hedging, HedgingSettings) else None
        self._from_labels = hedging == TOPIC_LABELS
        self._configured = policy_from_options(options.retry, options.timeout)
        retry = _timeouts(self._configured)
        if self._ordering and hedging is not None:
            check(self._profile or HedgingProfile(), retry, True)  # names the rule
        if self._profile is not None:
            check(self._profile, retry, False)
        self._flow = FlowGate(options.flow_control)
        self._scheduler = Scheduler(name="hedging-client")
        self._endpoints = Endpoints(self._official, kwargs)
        self._setups: dict[str, _Setup] = {}
        self._publishers: dict[str, HedgedPublisher] = {}
        self._policies: dict[tuple[int, int], tuple[Any, Any, RetryPolicy]] = {}
        self._lock = threading.Lock()
        self._stopped = False

    # -- the official client's surface ----------------------------------------------

    topic_path = staticmethod(pubsub_v1.PublisherClient.topic_path)

    def __getattr__(self, name: str) -> Any:
        # Topic administration and the transport: the official client's own.
        return getattr(self._official, name)

    def publish(
        self,
        topic: str,
        data: bytes,
        ordering_key: str = "",
        retry: Any = _DEFAULT,
        timeout: Any = _DEFAULT,
        **attrs: bytes | str,
    ) -> Future:
        """As `google.cloud.pubsub_v1.PublisherClient.publish`: a future of the ID."""
        if self._ordering:
            future: Future = self._official.publish(
                topic, data, ordering_key, retry=retry, timeout=timeout, **attrs
            )
            return future
        if not isinstance(data, bytes):
            raise TypeError("Data being published to Pub/Sub must be sent as a bytestring.")
        if ordering_key != "":
            raise ValueError(
                "Cannot publish a message with an ordering key when message "
                "ordering is not enabled."
            )
        attributes: dict[str, str] = {}
        for key, value in attrs.items():
            if isinstance(value, bytes):
                value = value.decode("utf-8")
            if not isinstance(value, str):
                raise TypeError(
                    "All attributes being published to Pub/Sub must be sent as text strings."
                )
            attributes[key] = value
        if self._stopped:
            raise RuntimeError("Cannot publish on a stopped publisher.")
        try:
            publisher = self._publisher(topic)
        except Exception as exc:  # the topic's labels could not be read or are wrong
            failed = Future()
            failed.set_exception(exc)
            return failed
        message = _RAW_MESSAGE(data=data, attributes=attributes)
        return publisher.publish_message(message, self._policy(publisher, retry, timeout))

    def resume_publish(self, topic: str, ordering_key: str) -> None:
        if not self._ordering:
            raise ValueError(
                "Cannot resume publish on a topic/ordering key if ordering is not enabled."
            )
        self._official.resume_publish(topic, ordering_key)

    def stop(self) -> None:
        """Send everything queued and refuse new messages; does not wait (as the
        official client). Raises RuntimeError when already stopped."""
        with self._lock:
            if self._stopped:
                raise RuntimeError("Cannot stop a publisher already stopped.")
            self._stopped = True
            publishers = list(self._publishers.values())
        if self._ordering:
            self._official.stop()
        self._flow.close()
        for p in publishers:
            p.stop()

    def close(self, timeout: float | None = None) -> bool:
        """Stop, then wait up to `timeout` s; what is still pending then fails with
        `PublishNotSent` (safe to publish again) or `PublishOutcomeUnknown` (may be
        stored). True when everything finished in time. From a future's callback it
        does not wait (see HedgedPublisher.close)."""
        if not self._stopped:
            self.stop()
        end = None if timeout is None else time.monotonic() + timeout
        finished = True
        for p in list(self._publishers.values()):
            left = None if end is None else max(0.0, end - time.monotonic())
            finished = p.close(left) and finished
        self._stop_scheduler_if_idle()
        return finished

    def _stop_scheduler_if_idle(self) -> None:
        if self._stopped and not any(p.pending() for p in list(self._publishers.values())):
            self._scheduler.stop()

    def __enter__(self) -> PublisherClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
        self._official.transport.close()
        self._endpoints.close()

    def counters(self, topic: str | None = None) -> HedgingCounters:
        """One topic's counters, or the sum over every topic published to."""
        if topic is not None:
            publisher = self._publishers.get(topic)
            return publisher.counters() if publisher else HedgingCounters()
        return merge([p.counters() for p in list(self._publishers.values())])

    def endpoint_for(self, topic: str) -> str:
        """host:port the topic's publishes go to: with `hedging="topic-labels"` the
        locational endpoint its `reconcile-publish-endpoint` label declares, unless
        `PUBSUB_EMULATOR_HOST` or a pinned `client_options.api_endpoint` wins; else
        the official client's. Reads the labels once (as the first publish does);
        raises the publish's error for a missing topic or a bad label."""
        return self._setup(topic)[2]

    # -- per topic ------------------------------------------------------------------

    def _setup(self, topic: str) -> _Setup:
        setup = self._setups.get(topic)
        if setup is not None:
            return setup
        profile, retry = self._profile, _timeouts(self._configured)
        labels: dict[str, str] = {}
        if self._from_labels:
            labels = dict(self._official.get_topic(request={"topic": topic}).labels)
            try:
                decoded = hedging_labels.decode(labels)
            except hedging_labels.LabelDecodeError as exc:
                raise type(exc)(f"topic {topic}: {exc}") from exc
            if decoded is not None:
                profile, retry = decoded
        setup = (profile, retry, self._endpoints.choose(topic, labels).endpoint)
        return self._setups.setdefault(topic, setup)

    def _publisher(self, topic: str) -> HedgedPublisher:
        publisher = self._publishers.get(topic)
        if publisher is not None:
            return publisher
        profile, retry, endpoint = self._setup(topic)
        policy = self._configured
        if policy is None:
            policy = RetryPolicy(
                initial_rpc_timeout=retry.initial_rpc_timeout_ms / 1000,
                total_timeout=retry.total_timeout_ms / 1000,
            )
        created = HedgedPublisher(
            self._endpoints.client_for(endpoint),
            topic,
            profile,
            retry,
            batch_settings=self.batch_settings,
            policy=policy,
            scheduler=self._scheduler,
            flow=self._flow,
            when_closed_idle=self._stop_scheduler_if_idle,
        )
        with self._lock:
            if self._stopped:
                raise RuntimeError("Cannot publish on a stopped publisher.")
            return self._publishers.setdefault(topic, created)

    def _policy(self, publisher: HedgedPublisher, retry: Any, timeout: Any) -> RetryPolicy:
        if retry is _DEFAULT and timeout is _DEFAULT:
            return publisher.policy
        key = (id(retry), id(timeout))
        cached = self._policies.get(key)
        if cached is None or cached[0] is not retry or cached[1] is not timeout:
            made = policy_from_options(retry, timeout, base=publisher.policy)
            cached = (retry, timeout, made or publisher.policy)
            self._policies[key] = cached
        return cached[2]


def _timeouts(policy: RetryPolicy | None) -> RetryTimeouts:
    if policy is None:
        return RetryTimeouts()
    return RetryTimeouts(
        round(policy.initial_rpc_timeout * 1000), round(policy.total_timeout * 1000)
    )
