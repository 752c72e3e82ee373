"""A subscription's enabled message transforms applied at delivery (Pull and
StreamingPull), as the service applies subscription SMTs "before the messages are
delivered to a subscription" (Pub/Sub's "Choose topic or subscription SMTs" page,
cited in docs/local-server.md), by the engine that answers TestMessageTransforms
(`transform_run`), outside the server's write lock.

- The UDF's `metadata` has the stored message's ID, publish time and ordering key.
- A message a transform filters is acknowledged and never sent (the service: "When an
  SMT filters a message on a subscription, Pub/Sub acknowledges it, and the message is
  never sent to subscribers").
- A message a transform fails on is not sent. With a dead-letter policy it is
  nacked at once: each failure is a delivery attempt, so it reaches the dead-letter
  topic after max_delivery_attempts (when the service forwards such a failure is not
  public: a local-server choice), carrying the attribute
  `CloudPubSubDeadLetterSourceSMTErrorMessage` with the failure's text (the
  attribute's name is the service's; its text is not public: here the transform's
  own error, as TestMessageTransforms reports it; `deadletter`). Without one it
  stays leased until its ack deadline, like a delivery not acknowledged, and is
  tried again then (not at once: a stream would spin on it).
- AI Inference passes the message unchanged (`publish_transforms.enabled`).
- Without the JavaScript engine a subscription with an enabled UDF refuses Pull and
  StreamingPull (FAILED_PRECONDITION naming the `udf` extra), before leasing anything:
  never a message delivered untransformed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reconciler.localserver.api.status import ServiceError, grpc_status_from_name
from reconciler.localserver.pubsub.backlog import Delivered
from reconciler.localserver.pubsub.publish_transforms import enabled
from reconciler.localserver.pubsub.transform_run import NO_ENGINE, engine, run_transforms


def check_runnable(transforms: Any) -> None:
    """FAILED_PRECONDITION when an enabled UDF is among `transforms` and the server
    has no JavaScript engine."""
    if engine() is None and any(
        t.WhichOneof("transform") == "javascript_udf" for t in enabled(transforms)
    ):
        raise ServiceError(grpc_status_from_name("FAILED_PRECONDITION"), NO_ENGINE)


# How the failed deliveries are released: (delivery, why it failed) each, and the
# deliveries that passed (so that an earlier failure's text is forgotten).
Release = Callable[[list[tuple[Delivered, str]], list[Delivered]], Any]


def at_delivery(
    transforms: Any,
    got: list[Delivered],
    acknowledge: Callable[[list[str]], Any],
    release: Release | None = None,
) -> tuple[list[Delivered], list[Any] | None]:
    """The deliveries to send and the message each carries, transformed (None: as
    stored, no transform runs); the filtered ones acknowledged through
    `acknowledge(ack_ids)`, the failed ones released through `release(failed,
    sent)` (a nack) when given, else left leased."""
    steps = enabled(transforms) if got else ()
    if not steps:
        return got, None
    sent: list[Delivered] = []
    messages: list[Any] = []
    filtered: list[str] = []
    failed: list[tuple[Delivered, str]] = []
    for d in got:
        message = d.batch.stamped()[d.index]
        ran = run_transforms(steps, message)
        last = ran[-1] if ran else None
        if last is None:
            sent.append(d)
            messages.append(message)
        elif last.filtered:
            filtered.append(d.ack_id)
        elif last.error is None:
            sent.append(d)
            messages.append(last.message)
        else:
            failed.append((d, str(last.error)))
    if filtered:
        acknowledge(filtered)
    if failed and release is not None:
        release(failed, sent)
    return sent, messages
