"""What plan and apply need from a Pub/Sub + Org Policy service, and nothing more.

Implemented once over the real client libraries (`reconciler.backends.gcp`), which
serve Google Cloud, the embedded local server and any emulator alike.
Topic bodies are dicts in the plan's shape (`reconciler.topic.TopicShape` as JSON).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from reconciler.backends.deadline import DEFAULT_TIMEOUT
from reconciler.orgpolicy.model import PolicySpec
from reconciler.topic import ObservedTopic

__all__ = ["Backend", "BackendInfo", "ObservedTopic", "OrgInputs", "TargetOptions"]


@dataclass(frozen=True)
class OrgInputs:
    """The effective org policy of one project (None = constraint default)."""

    resource_locations: PolicySpec | None
    enforce_in_transit: PolicySpec | None
    source: str  # "api", "snapshot FILE"


@dataclass(frozen=True)
class TargetOptions:
    """Where plan, apply, import and policy pull look: --local, --emulator HOST:PORT,
    --org-policy FILE, and --timeout SECONDS (the deadline of each call to it);
    `state_dir`: --local's absolute state directory (None: anchored at the current
    directory, reconciler/localstate.py)."""

    local: bool = False
    emulator: str | None = None
    org_policy: Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    state_dir: Path | None = None


ServiceKind = Literal["gcp", "local", "emulator"]
OrgPolicySource = Literal["api", "snapshot"]


@dataclass(frozen=True)
class BackendInfo:
    """What a backend is and can do, stated when it is opened (backends/connect.py), so
    that plan, apply and messages never guess it from a label or an attribute.

    `kind` and `address`: Google Cloud, the embedded local server (its state
    directory) or an emulator (HOST:PORT). `google_emulator`: the server there is
    Google's Pub/Sub emulator, which computes no message storage policy and cannot
    update labels or storage policies. `org_policy`: where `effective_policy`
    answers from, the Org Policy API or the snapshot file `snapshot`."""

    kind: ServiceKind = "gcp"
    address: str = ""
    google_emulator: bool = False
    org_policy: OrgPolicySource = "api"
    snapshot: str = ""

    @property
    def label(self) -> str:
        """For messages: "gcp", "local (DIR)", "emulator HOST:PORT"."""
        if self.kind == "local":
            return f"local ({self.address})"
        if self.kind == "emulator":
            return f"emulator {self.address}"
        return "gcp"

    @property
    def computes_storage_policy(self) -> bool:
        """Does the service derive a topic's storage policy from the org policy
        (`messageStoragePolicy: inherit`)? Google's emulator does not."""
        return not self.google_emulator


class Backend(Protocol):
    info: BackendInfo

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
