"""Per-topic outcomes of an apply, whatever happened: what was applied, what failed
(the service's message, code first) and what was never attempted. The summary printed
from them (on success, on failures and on Ctrl-C alike) is
reconciler/commands/apply_view.py's; the JSON document is reconciler/apply/outcome.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from reconciler.codec import doc
from reconciler.plan.model import Action

Status = Literal["applied", "failed", "not-attempted"]


@dataclass
class TopicResult:
    """What happened to one planned change."""

    address: Annotated[str, doc("The topic, `projects/P/topics/T`.")]
    action: Annotated[
        Action, doc("What the plan does to it (create, update or delete).")
    ]
    status: Annotated[
        Status,
        doc("applied: done; failed: the service refused or failed (see "
              "`error`); not-attempted: no call was made (a refusal, an interruption, an "
              "earlier error)."),
    ]
    method: Annotated[
        str, doc("The call: CreateTopic, UpdateTopic or DeleteTopic.")
    ] = ""
    update_mask: Annotated[
        list[str],
        doc("The fields an UpdateTopic changes (labels, message_storage_policy)."),
    ] = field(default_factory=list)
    error: Annotated[
        str | None,
        doc("The service's message, its status code first (failed only)."),
    ] = None
    attempts: Annotated[
        int,
        doc("Calls that made or tried to make this change (CreateTopic, UpdateTopic, "
            "DeleteTopic), retries included; the reads around them are not counted."),
    ] = 0
    notes: Annotated[
        list[str],
        doc("What else happened (e.g. a briefly cached NOT_FOUND after "
              "CreateTopic)."),
    ] = field(default_factory=list)
    seconds: Annotated[float, doc("Time spent on it, retries included.")] = 0.0
    rerun_helps: Annotated[
        bool, doc("False when another apply cannot fix this failure (see `error`).")
    ] = True


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
