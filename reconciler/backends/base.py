"""What plan and apply need from a Pub/Sub + Org Policy service, and nothing more.

Implemented once over the real client libraries (`reconciler.backends.gcp`), which
serve Google Cloud, the embedded local server and any emulator alike.
Topic bodies are dicts in the plan's shape (`reconciler.topic.TopicShape` as JSON).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from reconciler.orgpolicy.model import PolicySpec
from reconciler.topic import ObservedTopic

__all__ = ["Backend", "ObservedTopic", "OrgInputs"]


@dataclass(frozen=True)
class OrgInputs:
    """The effective org policy of one project (None = constraint default)."""

    resource_locations: PolicySpec | None
    enforce_in_transit: PolicySpec | None
    source: str  # "api", "snapshot FILE"


class Backend(Protocol):
    target: str  # for humans and the plan file: "local (.reconcile/local)", "gcp", ...

    def list_topics(self, project: str) -> list[ObservedTopic]: ...

    def get_topic(self, name: str) -> ObservedTopic | None: ...

    def effective_policy(self, project: str) -> OrgInputs:
        """The project's effective org policy: from the --org-policy snapshot or the
        Org Policy API, whichever the target was opened with."""
        ...

    def create_topic(self, body: dict[str, Any]) -> ObservedTopic: ...

    def update_topic(self, body: dict[str, Any], update_mask: list[str]) -> ObservedTopic: ...

    def delete_topic(self, name: str) -> None: ...

    def close(self) -> None: ...
