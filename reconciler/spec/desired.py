"""The desired state: what a valid spec tree asks for, one record per topic.

This is the only shape that leaves the spec package; plan and apply never see YAML.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Literal

from reconciler.acceptance import Acceptance
from reconciler.hedging.profile import HedgingProfile, RetryTimeouts
from reconciler.names import topic_name
from reconciler.ownership import DEFAULT_OWNER
from reconciler.topic import SchemaSettings

StorageMode = Literal["unmanaged", "inherit", "explicit"]


@dataclass(frozen=True)
class StorageIntent:
    """Omitted (unmanaged: never sent), `inherit` (recompute from the org policy), or
    explicit regions (a sorted set) with enforceInTransit (None = omitted)."""

    mode: StorageMode = "unmanaged"
    regions: tuple[str, ...] = ()
    enforce_in_transit: bool | None = None


@dataclass(frozen=True)
class PruneOptIn:
    """One `pruneSubscribed` entry of the Owner document: `projects/P/topics/PATTERN`
    (`*`, `?`), a topic `--prune` may delete though subscriptions are attached."""

    pattern: str
    file: str
    line: int
    column: int = 0

    @property
    def project(self) -> str:
        return self.pattern.split("/")[1]

    def matches(self, name: str) -> bool:
        return fnmatchcase(name, self.pattern)

    @property
    def reason(self) -> str:
        return (
            f"the Owner document's pruneSubscribed entry {self.pattern!r} "
            f"({self.file}:{self.line})"
        )


@dataclass(frozen=True)
class Owner:
    """Who the tree is, and where that was declared ("" = the default: not declared);
    `prune_subscribed`: its opt-ins for pruning subscribed topics."""

    name: str = DEFAULT_OWNER
    file: str = ""
    line: int = 0
    prune_subscribed: tuple[PruneOptIn, ...] = ()

    def prune_opt_in(self, name: str) -> PruneOptIn | None:
        """The first entry that names topic `name` (projects/P/topics/T), if any."""
        return next((e for e in self.prune_subscribed if e.matches(name)), None)

    @property
    def declared(self) -> bool:
        return bool(self.file)

    def where(self) -> str:
        """For messages: `declared at FILE:LINE`, or that it is the default."""
        if self.declared:
            return f"declared at {self.file}:{self.line}"
        return "the default: the spec tree has no Owner document"


@dataclass(frozen=True, slots=True)  # one per topic: no __dict__
class DesiredTopic:
    project: str
    topic: str
    labels: Mapping[str, str] = field(default_factory=dict)  # user + hedging labels
    storage: StorageIntent = StorageIntent()
    hedging: tuple[HedgingProfile, RetryTimeouts] | None = None
    publisher_regions: tuple[str, ...] = ()
    message_ordering: bool = False
    publisher_endpoint: str | None = None  # region of the locational endpoint publishers use
    # The fields below in the service's canonical form; None = omitted (unmanaged).
    message_retention_duration: str | None = None  # seconds, e.g. "172800s"
    kms_key_name: str | None = None  # projects/P/locations/L/keyRings/R/cryptoKeys/K
    schema_settings: SchemaSettings | None = None
    # REST JSON (camelCase), read-only (reconciler/frozen.py): a list of transforms, the
    # ingestion settings, tag key -> tag value short name (topicfields.py).
    message_transforms: Any = None
    ingestion: Any = None
    tags: Any = None
    file: str = ""
    line: int = 0
    # projects/P/topics/T, worked out once: a plan sorts and looks up by it.
    address: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "address", topic_name(self.project, self.topic))


@dataclass
class DesiredState:
    topics: list[DesiredTopic] = field(default_factory=list)
    owner: Owner = field(default_factory=Owner)
    # The tree's accepted findings, well formed (reconciler/acceptance.py applies them).
    acceptances: tuple[Acceptance, ...] = ()

    @property
    def projects(self) -> list[str]:
        return sorted({t.project for t in self.topics})
