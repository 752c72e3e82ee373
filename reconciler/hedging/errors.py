"""What a publish future fails with when the publisher is closed before it completes.

Two types, because they call for opposite actions: a message that was never sent is
safe to publish again; one whose request reached the wire may already be stored, and
publishing it again may store it twice. Both subclass `PublisherClosedError` (a
`RuntimeError`, as the official client's "publisher stopped" errors are).
"""

from __future__ import annotations


class PublisherClosedError(RuntimeError):
    """The publisher closed before this publish completed."""


class PublishNotSent(PublisherClosedError):
    """No request carrying this message left the client: publishing it again is safe."""


class PublishOutcomeUnknown(PublisherClosedError):
    """A request carrying this message was sent and no answer arrived before close:
    the service may have stored it (publishing it again may duplicate it)."""


def closed_error(sent: bool) -> PublisherClosedError:
    """The error for a publish still pending at close; `sent`: a request carrying it
    left the client."""
    if sent:
        return PublishOutcomeUnknown(
            "publisher closed before the publish completed; a request carrying this "
            "message was sent, so the service may have stored it (publishing it again "
            "may store it twice)"
        )
    return PublishNotSent(
        "publisher closed before this message was sent; publishing it again is safe"
    )
