"""A topic's `tags` on a topic that exists: never silent. Tags are input-only and
immutable (googleapis `google/pubsub/v1/pubsub.proto`, `Topic.tags`: INPUT_ONLY,
IMMUTABLE): CreateTopic binds them, GetTopic never returns them and UpdateTopic cannot
change them. So for a live topic the plan sends none and cannot say whether the
declared ones are bound: a warning at the `tags` line says so, each time.
"""

from __future__ import annotations

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.positions import position
from reconciler.topicfields import TAGS

TAGS_UNVERIFIED = "tags-unverified"  # the diagnostic code


def tags_unverified(topic: DesiredTopic) -> Diagnostic:
    """The warning for `topic`, which exists and declares tags."""
    where, line, col = position(topic.file, topic.line, TAGS.spec_path, None) or (
        topic.file or topic.address, topic.line, 1 if topic.line else 0
    )
    keys = ", ".join(sorted(topic.tags))
    return Diagnostic(
        where, line, col, Severity.WARNING, TAGS_UNVERIFIED,
        f"{topic.address} exists: its tags ({keys}) are bound only when a topic is "
        "created (input-only, immutable), and a live topic does not show them, so this "
        "plan sends none and cannot verify them",
        hint=(
            "check the bindings with `gcloud resource-manager tags bindings list "
            f"--parent=//pubsub.googleapis.com/{topic.address}`; bind or change one "
            "there, or remove `tags` from the spec once they are bound"
        ),
        topic=topic.address,
    )
