"""A topic's `tags` on a topic that exists: never silent. Tags are input-only and
immutable (googleapis `google/pubsub/v1/pubsub.proto`, `Topic.tags`: INPUT_ONLY,
IMMUTABLE): CreateTopic binds them, GetTopic never returns them and UpdateTopic cannot
change them. So for a live topic the plan sends none; it reads the topic's tag
bindings from Resource Manager (`ListTagBindings`, parent
`//pubsub.googleapis.com/projects/P/topics/T`) and says, at the `tags` line, which
declared tags are not bound (`tags-unbound`), or that it could not tell and why
(`tags-unverified`); all bound: nothing to say.
"""

from __future__ import annotations

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.positions import position
from reconciler.topicfields import TAGS

TAGS_UNVERIFIED = "tags-unverified"  # the diagnostic codes
TAGS_UNBOUND = "tags-unbound"


def bound_as(key: str, value: str) -> str:
    """How a declared tag reads among a topic's bindings: `tagValues/ID` when given
    by IDs, else its namespaced value name `PARENT/KEY/VALUE`."""
    return value if key.startswith("tagKeys/") else f"{key}/{value}"


def tags_finding(topic: DesiredTopic, bound: frozenset[str] | str | None) -> Diagnostic | None:
    """The finding for `topic`, which exists and declares tags, given what is bound
    to it (`bound`: the bindings read, or why they could not be; None: not read)."""
    where, line, col = position(topic.file, topic.line, TAGS.spec_path, None) or (
        topic.file or topic.address, topic.line, 1 if topic.line else 0
    )
    tags = topic.tags
    if isinstance(bound, frozenset):
        missing = [k for k, v in sorted(tags.items()) if bound_as(k, v) not in bound]
        if not missing:
            return None
        shown = ", ".join(f"{k}={tags[k]}" for k in missing)
        return Diagnostic(
            where, line, col, Severity.WARNING, TAGS_UNBOUND,
            f"{topic.address} exists without the tags {shown} bound to it (its tag "
            "bindings, read from Resource Manager): tags are bound only when a topic is "
            "created (input-only, immutable), so this plan cannot bind them",
            hint=(
                "bind each with `gcloud resource-manager tags bindings create "
                f"--tag-value=VALUE --parent=//pubsub.googleapis.com/{topic.address}`, "
                "or remove it from the spec"
            ),
            topic=topic.address,
        )
    why = bound if isinstance(bound, str) else "its tag bindings were not read"
    keys = ", ".join(sorted(tags))
    return Diagnostic(
        where, line, col, Severity.WARNING, TAGS_UNVERIFIED,
        f"{topic.address} exists: its tags ({keys}) are bound only when a topic is "
        "created (input-only, immutable), and a live topic does not show them, so this "
        f"plan sends none and cannot verify them ({why})",
        hint=(
            "check the bindings with `gcloud resource-manager tags bindings list "
            f"--parent=//pubsub.googleapis.com/{topic.address}`; bind or change one "
            "there, or remove `tags` from the spec once they are bound"
        ),
        topic=topic.address,
    )
