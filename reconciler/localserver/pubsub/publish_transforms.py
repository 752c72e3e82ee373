"""A topic's enabled message transforms applied to a Publish request before it is
stored, as the service applies topic SMTs "before the messages are persisted"
(Pub/Sub's "Choose topic or subscription SMTs" page, cited in docs/local-server.md).

One engine runs them: `transform_run.run_transforms`, the same that answers
TestMessageTransforms. This runs outside the server's write lock (a UDF may take up
to its CPU bound); the publish path checks under the lock that the topic's
transforms are still those applied, and applies them again if not.

- A message a transform fails on fails the whole Publish (the service: "any publish
  with an invalid message is going to fail"), with the failure's code
  (INVALID_ARGUMENT for a UDF that throws, runs past its bound or returns no message;
  FAILED_PRECONDITION when the server has no JavaScript engine). Nothing of that
  request is stored.
- An AI Inference transform is passed: the message goes on unchanged (`enabled`).
- A message a transform filters is not stored, yet keeps its message ID in the
  response (a local-server choice: the client libraries take a response with one ID
  per message published; nothing public says which ID a filtered message gets).
- What is stored (and journaled) is the transformed request: a replay reads the
  stored bytes and never runs a transform again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reconciler.localserver.api import protos
from reconciler.localserver.api.status import ServiceError, grpc_status_from_name
from reconciler.localserver.pubsub.transform_run import run_transforms


@dataclass(frozen=True)
class Transformed:
    """A Publish request after its topic's transforms: `raw`, the request of the
    messages kept (serialized, as it is stored), `kept`, the indices in the request
    of those messages, in order, and `total`, how many the request had."""

    raw: bytes
    kept: tuple[int, ...]
    total: int

    @property
    def filtered(self) -> int:
        return self.total - len(self.kept)


def enabled(transforms: Any) -> tuple[Any, ...]:
    """The transforms that run on a message: the enabled ones (a disabled one is
    skipped, as the service skips it) but AI Inference, which the server never sends
    anywhere (a local-server choice: the message passes it unchanged, so that a topic
    with one stays usable, as the export states it sets need); empty when none runs."""
    return tuple(
        t for t in transforms if not t.disabled and t.WhichOneof("transform") != "ai_inference"
    )


def transform_request(topic_name: str, transforms: Any, raw: bytes) -> Transformed:
    """`raw` (a serialized PublishRequest) after `transforms`, each message in turn;
    ServiceError naming the message, the transform and why when one fails."""
    request = protos.PublishRequest.FromString(raw)
    out = protos.PublishRequest(topic=request.topic)
    kept: list[int] = []
    for index, message in enumerate(request.messages):
        steps = run_transforms(transforms, message)
        last = steps[-1] if steps else None
        if last is None:
            out.messages.append(message)
            kept.append(index)
        elif last.error is not None:
            raise ServiceError(
                grpc_status_from_name(last.error.code),
                f"Message {index} of the Publish request failed a message transform of "
                f"{topic_name}, so nothing was published: {last.error}",
            )
        elif last.filtered:
            continue
        else:
            out.messages.append(last.message)
            kept.append(index)
    return Transformed(out.SerializeToString(), tuple(kept), len(request.messages))


def response_ids(first: int, transformed: Transformed) -> bytes:
    """The serialized PublishResponse: the kept messages have the stored IDs
    `first`, `first + 1`, ... in request order; the filtered ones the IDs reserved
    after them."""
    ids = [""] * transformed.total
    stored = first
    for index in transformed.kept:
        ids[index] = str(stored)
        stored += 1
    reserved = stored
    for index in range(transformed.total):
        if not ids[index]:
            ids[index] = str(reserved)
            reserved += 1
    return bytes(protos.PublishResponse(message_ids=ids).SerializeToString())
