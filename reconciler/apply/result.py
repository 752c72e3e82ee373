"""Per-topic outcomes of an apply, whatever happened: what was applied, what failed
(the service's message, code first) and what was never attempted. The summary printed
from them (on success, on failures and on Ctrl-C alike) is
reconciler/commands/apply_view.py's; the JSON form is `ApplyResult.dumps()`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["applied", "failed", "not-attempted"]


@dataclass
class TopicResult:
    address: str
    action: str  # create | update | delete
    status: Status
    method: str = ""
    update_mask: list[str] = field(default_factory=list)
    error: str | None = None  # the service's message, code first
    attempts: int = 0
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    rerun_helps: bool = True  # False: another apply cannot fix this failure


@dataclass
class ApplyResult:
    results: list[TopicResult] = field(default_factory=list)
    unchanged: int = 0  # no-op changes: no call made
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

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": {**self.counts(), "interrupted": self.interrupted},
            "results": [asdict(r) for r in self.results],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2) + "\n"
