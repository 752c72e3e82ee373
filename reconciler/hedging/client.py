"""`PublisherClient`: a drop-in for `google.cloud.pubsub_v1.PublisherClient` that hedges
as each topic's labels declare (docs/hedging.md).

    from reconciler.hedging import pubsub_v1      # instead of: from google.cloud import pubsub_v1
    publisher = pubsub_v1.PublisherClient()       # follows each topic's declared profile

The constructor takes the official client's arguments and builds one (which resolves
`client_options`, `credentials` and `PUBSUB_EMULATOR_HOST` exactly as it does);
`publish` batches per topic with a `HedgedPublisher` on that client's channel, or,
for a topic whose labels declare a locational endpoint, on a channel to it
(channels.py). Messages with an ordering key go through the official client's own
ordered publisher, never hedged. Other attributes (`create_topic`, `get_topic`, ...)
are the official client's.

`hedging`: left out (or "topic-labels"), each topic's profile, retry timeouts and
endpoint are read from its labels, asynchronously (lookup.py): a topic's first
batches wait at most `LOOKUP_WAIT` for them and go unhedged if they do not come,
with one warning and a counter. `hedging=False`: no hedging and no label read (the
official client's behaviour). A `HedgingSettings`: that profile for every topic, no
label read.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from google.api_core import exceptions as api_exceptions
from google.api_core import gapic_v1
from google.cloud import pubsub_v1
from google.cloud.pubsub_v1 import types
from google.cloud.pubsub_v1.publisher.exceptions import FlowControlLimitError
from google.cloud.pubsub_v1.publisher.futures import Future
from google.pubsub_v1.types import pubsub

from reconciler.hedging import labels as hedging_labels
from reconciler.hedging.batching import RetryPolicy
from reconciler.hedging.channels import Endpoints
from reconciler.hedging.errors import PublishNotSent
from reconciler.hedging.flow import FlowGate, GateClosed
from reconciler.hedging.lookup import LOOKUP_TIMEOUT, LOOKUP_WAIT, LabelReader
from reconciler.hedging.policies import policy_from_options
from reconciler.hedging.profile import (
    HedgingConfigError,
    HedgingProfile,
    RetryTimeouts,
    all_problems,
    check,
)
from reconciler.hedging.publisher import HedgedPublisher
from reconciler.hedging.scheduler import Scheduler, TimerHandle
from reconciler.hedging.settings import HedgingSettings
from reconciler.hedging.stats import HedgingCounters, merge
from reconciler.hedging.transport import to_api_error

log = logging.getLogger("reconciler.hedging")

TOPIC_LABELS = "topic-labels"  # the default, spelled out
_RAW_MESSAGE = pubsub.PubsubMessage.pb()
_DEFAULT = gapic_v1.method.DEFAULT
_POLICY_CACHE = 64  # distinct (retry, timeout) arguments remembered
_IGNORE = types.PublishFlowControl(limit_exceeded_behavior=types.LimitExceededBehavior.IGNORE)


@dataclass(frozen=True)
class TopicSetup:
    """What a topic's labels mean for its publishes: the profile (None: unhedged), the
    retry policy, the endpoint; `problem`: why the hedging labels cannot be used
    (damaged: unhedged until fixed); `error`: every publish fails with it."""

    profile: HedgingProfile | None
    policy: RetryPolicy
    endpoint: str
    problem: str | None = None
    error: BaseException | None = None


class PublisherClient:
    """`hedging`: left out to follow each topic's labels, `False` for none, or a
    `HedgingSettings` for every topic (see the module docstring)."""

    def __init__(
        self,
        batch_settings: Any = (),
        publisher_options: Any = (),
        *,
        hedging: HedgingSettings | bool | str | None = None,
        **kwargs: Any,
    ) -> None:
        if hedging is None or (isinstance(hedging, str) and hedging == TOPIC_LABELS):
            self._from_labels, self._profile = True, None
        elif hedging is False:
            self._from_labels, self._profile = False, None
        elif isinstance(hedging, HedgingSettings):
            self._from_labels, self._profile = False, hedging.profile()
        else:
            raise ValueError(
                "hedging must be left out (follow each topic's labels), False (no "
                f"hedging) or a HedgingSettings, not {hedging!r}"
            )
        options = types.PublisherOptions(*publisher_options)
        self._ordering = bool(options.enable_message_ordering)
        # With ordering, keyed messages go through the official client behind our flow
        # control, so that one limit covers every message.
        official_options = options._replace(flow_control=_IGNORE) if self._ordering else options
        self._official = pubsub_v1.PublisherClient(batch_settings, official_options, **kwargs)
        self.publisher_options = options
        self.batch_settings = self._official.batch_settings
        self._configured = policy_from_options(options.retry, options.timeout)
        self._base_policy = self._configured or RetryPolicy()
        if self._profile is not None:
            # As the official clients: explicit hedging with ordering, or a hedge delay
            # not below the retry timeouts, fails at construction.
            check(self._profile, _timeouts(self._base_policy), self._ordering)
        self._flow = FlowGate(options.flow_control)
        self._scheduler = Scheduler(name="hedging-client")
        self._endpoints = Endpoints(self._official, kwargs)
        self._reader = (
            LabelReader(self._official.transport.get_topic, self._on_labels)
            if self._from_labels
            else None
        )
        self._publishers: dict[str, HedgedPublisher] = {}
        self._setups: dict[str, TopicSetup] = {}
        self._waits: dict[str, TimerHandle] = {}
        self._warned: set[str] = set()
        self._ordering_logged = False
        self._policies: dict[tuple[int, int, int], tuple[Any, Any, RetryPolicy, RetryPolicy]] = {}
        self._lock = threading.Lock()
        # Serialises route decisions: a late "no answer yet" never undoes an answer.
        self._route_lock = threading.RLock()
        self._stopped = False

    # -- the official client's surface ----------------------------------------------

    topic_path = staticmethod(pubsub_v1.PublisherClient.topic_path)

    def __getattr__(self, name: str) -> Any:
        # Topic administration and the transport: the official client's own.
        if name == "_official":  # construction failed before it was built
            raise AttributeError(name)
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
        if not isinstance(data, bytes):
            raise TypeError("Data being published to Pub/Sub must be sent as a bytestring.")
        if ordering_key and not self._ordering:
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
        if ordering_key:
            return self._publish_ordered(topic, data, ordering_key, retry, timeout, attributes)
        publisher = self._publisher(topic)
        message = _RAW_MESSAGE(data=data, attributes=attributes)
        return publisher.publish_message(message, self._policy(publisher, retry, timeout))

    def _publish_ordered(
        self,
        topic: str,
        data: bytes,
        key: str,
        retry: Any,
        timeout: Any,
        attributes: dict[str, str],
    ) -> Future:
        """The official client's ordered publishing (one batch in flight per key,
        paused keys, resume_publish), behind our flow control; never hedged."""
        if not self._ordering_logged and (self._from_labels or self._profile is not None):
            self._ordering_logged = True
            log.info(
                "messages with an ordering key (first: topic %s) are published unhedged, "
                "by the official client's ordered publisher: hedged attempts could reach "
                "the service out of order",
                topic,
            )
        size = _RAW_MESSAGE(data=data, attributes=attributes, ordering_key=key).ByteSize()
        try:
            self._flow.acquire(size)
        except (GateClosed, FlowControlLimitError) as exc:
            failed = Future()
            failed.set_exception(
                exc if isinstance(exc, FlowControlLimitError) else PublishNotSent(
                    "publisher closed while this publish waited for flow control; it was "
                    "never sent, publishing it again is safe"
                )
            )
            return failed
        try:
            future: Future = self._official.publish(
                topic, data, key, retry=retry, timeout=timeout, **attributes
            )
        except BaseException:
            self._flow.release(1, size)
            raise
        future.add_done_callback(lambda _: self._flow.release(1, size))
        return future

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
        if self._reader is not None:
            self._reader.close()
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
        """host:port the topic's publishes go to: the locational endpoint its
        `reconcile-publish-endpoint` label declares, unless `PUBSUB_EMULATOR_HOST` or
        a pinned `client_options.api_endpoint` wins; else the official client's.
        Waits for the topic's labels (up to the lookup's timeout) and raises the
        publishes' error for a label naming no region."""
        if self._reader is None:
            return self._endpoints.choose(topic, {}).endpoint
        self._publisher(topic)
        self._reader.wait(topic, LOOKUP_TIMEOUT + 1)
        setup = self._setups.get(topic)
        if setup is None:  # the labels could not be read: where publishes go now
            return self._endpoints.choose(topic, {}).endpoint
        if setup.error is not None:
            raise setup.error
        return setup.endpoint

    # -- per topic ------------------------------------------------------------------

    def _publisher(self, topic: str) -> HedgedPublisher:
        publisher = self._publishers.get(topic)
        if publisher is not None:
            if self._reader is not None and self._reader.ensure(topic):
                publisher.count(profile_lookups=1)  # a refresh, or after a backoff
            return publisher
        with self._lock:
            if self._stopped:
                raise RuntimeError("Cannot publish on a stopped publisher.")
            publisher = self._publishers.get(topic)
            if publisher is not None:
                return publisher
            publisher = HedgedPublisher(
                self._official,
                topic,
                self._profile,
                _timeouts(self._base_policy),
                batch_settings=self.batch_settings,
                policy=self._base_policy,
                scheduler=self._scheduler,
                flow=self._flow,
                when_closed_idle=self._stop_scheduler_if_idle,
                deferred=self._reader is not None,
            )
            self._publishers[topic] = publisher
            if self._reader is not None:
                wait = functools.partial(self._on_lookup_slow, topic)
                self._waits[topic] = self._scheduler.call_later(LOOKUP_WAIT, wait)
        if self._reader is not None and self._reader.ensure(topic):
            publisher.count(profile_lookups=1)
        return publisher

    def _policy(self, publisher: HedgedPublisher, retry: Any, timeout: Any) -> RetryPolicy | None:
        """A publish call's own retry policy; None for the topic's."""
        if retry is _DEFAULT and timeout is _DEFAULT:
            return None
        base = publisher.policy
        key = (id(retry), id(timeout), id(base))
        cached = self._policies.get(key)
        if cached is not None and cached[0] is retry and cached[1] is timeout and (
            cached[2] is base
        ):
            return cached[3]
        made = policy_from_options(retry, timeout, base=base) or base
        if len(self._policies) >= _POLICY_CACHE:
            self._policies.clear()  # a new Retry object per publish: keep it bounded
        self._policies[key] = (retry, timeout, base, made)
        return made

    def _setup(self, topic: str, labels: Mapping[str, str]) -> TopicSetup:
        """What the labels mean; never raises (a bad label is the setup's error)."""
        try:
            endpoint = self._endpoints.choose(topic, labels).endpoint
        except hedging_labels.LabelDecodeError as exc:
            return TopicSetup(None, self._base_policy, "", error=exc)
        try:
            decoded = hedging_labels.decode(labels)
        except hedging_labels.LabelDecodeError as exc:
            return TopicSetup(None, self._base_policy, endpoint, problem=str(exc))
        if decoded is None:
            return TopicSetup(None, self._base_policy, endpoint)
        profile, retry = decoded
        policy = self._configured or RetryPolicy(
            initial_rpc_timeout=retry.initial_rpc_timeout_ms / 1000,
            total_timeout=retry.total_timeout_ms / 1000,
        )
        problems = all_problems(profile, _timeouts(policy), False)
        if problems:
            why = "; ".join(p.message for p in problems)
            return TopicSetup(None, self._base_policy, endpoint, problem=why)
        return TopicSetup(profile, policy, endpoint)

    def _on_labels(
        self, topic: str, labels: Mapping[str, str] | None, error: BaseException | None
    ) -> None:
        """A lookup's answer (on a gRPC thread)."""
        with self._route_lock:
            self._route_by_labels(topic, labels, error)

    def _route_by_labels(
        self, topic: str, labels: Mapping[str, str] | None, error: BaseException | None
    ) -> None:
        publisher = self._publishers[topic]
        wait = self._waits.pop(topic, None)
        if wait is not None:
            wait.cancel()
        if self._stopped and topic in self._setups:
            return  # closing: no new channel for a late answer
        if labels is None:
            assert error is not None
            publisher.count(profile_lookup_failures=1)
            if topic in self._setups:
                return  # keep what the last answer said
            error = to_api_error(error)
            if not isinstance(error, api_exceptions.NotFound):  # the publish says it
                self._warn(topic, f"its labels cannot be read (GetTopic: {error})")
            self._route_fallback(topic)
            return
        setup = self._setup(topic, labels)
        previous = self._setups.get(topic)
        self._setups[topic] = setup
        if setup.problem is not None:
            publisher.count(profile_lookup_failures=1)
            self._warn(topic, f"its hedging labels cannot be used: {setup.problem}")
        if previous == setup:
            return
        if topic in self._warned and previous is None and setup.problem is None:
            log.info("topic %s: its labels were read; publishing as they declare", topic)
        if setup.error is not None:
            publisher.reroute(self._official, None, setup.policy, error=setup.error)
            return
        client = self._endpoints.client_for(setup.endpoint)
        publisher.reroute(client, setup.profile, setup.policy, fallback=setup.problem is not None)

    def _on_lookup_slow(self, topic: str) -> None:
        """LOOKUP_WAIT after a topic's first publish, with no answer yet."""
        with self._route_lock:
            if self._waits.pop(topic, None) is None:
                return  # answered meanwhile
            ms = round(LOOKUP_WAIT * 1000)
            self._warn(topic, f"GetTopic did not answer within {ms} ms")
            self._route_fallback(topic)

    def _route_fallback(self, topic: str) -> None:
        publisher = self._publishers[topic]
        endpoint = self._endpoints.choose(topic, {}).endpoint
        client = self._endpoints.client_for(endpoint)
        publisher.reroute(client, None, self._base_policy, fallback=True)

    def _warn(self, topic: str, why: str) -> None:
        with self._lock:
            first = topic not in self._warned
            self._warned.add(topic)
        log.log(
            logging.WARNING if first else logging.DEBUG,
            "topic %s: %s; publishing unhedged until its hedging profile can be read "
            "(counters: profile_lookup_failures, unhedged_fallback_batches; pass "
            "hedging=False to stop reading labels)",
            topic,
            why,
        )


def _timeouts(policy: RetryPolicy) -> RetryTimeouts:
    return RetryTimeouts(
        round(policy.initial_rpc_timeout * 1000), round(policy.total_timeout * 1000)
    )


__all__ = ["TOPIC_LABELS", "HedgingConfigError", "PublisherClient", "TopicSetup"]
