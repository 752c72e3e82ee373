"""Per-topic outcomes of an apply, whatever happened: what was applied, what failed
(the service's message, code first) and what was never attempted. The summary printed
from them (on success, on failures and on Ctrl-C alike) is
reconciler/commands/apply_view.py's; the JSON document is reconciler/apply/outcome.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from reconciler.plan.model import Action

Status = Literal["applied", "failed", "not-attempted"]


@dataclass
class TopicResult:
    """What happened to one planned change."""

    __pydantic_config__ = {  # noqa: RUF012  (read by the schema generator only)
        "use_attribute_docstrings": True,
        "json_schema_serialization_defaults_required": True,
    }

    address: str
    """The topic, `projects/P/topics/T`."""
    action: Action
    """What the plan does to it (create, update or delete)."""
    status: Status
    """applied: done; failed: the service refused or failed (see `error`);
    not-attempted: no call was made (a refusal, an interruption, an earlier error)."""
    method: str = ""
    """The call: CreateTopic, UpdateTopic or DeleteTopic."""
    update_mask: list[str] = field(default_factory=list)
    """The fields an UpdateTopic changes (labels, message_storage_policy)."""
    error: str | None = None
    """The service's message, its status code first (failed only)."""
    attempts: int = 0
    """Calls made for this change, retries included."""
    notes: list[str] = field(default_factory=list)
    """What else happened (e.g. a briefly cached NOT_FOUND after CreateTopic)."""
    seconds: float = 0.0
    """Time spent on it, retries included."""
    rerun_helps: bool = True
    """False when another apply cannot fix this failure (see `error`)."""


@dataclass
class TopicResults:
    """What the executor did: each planned change's TopicResult, and the no-ops
    counted (no call made for them)."""

    results: list[TopicResult] = field(default_factory=list)
    unchanged: int = 0
    interrupted: bool = False

    def by_status(self, status: Status) -> list[TopicResult]:
        return [r for r in self.results if r.status == status]

    @property
    def failed(self) -> bool:
        return any(r.status == "failed" for r in self.results)

    def counts(self) -> dict[str, int]:
        out = {"applied": 0, "failed": 0, "not-attempted": 0, "unchanged": self.unchanged}
        for r in self.results:
            out[r.status] += 1
        return out
