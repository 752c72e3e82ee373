"""Per-topic outcomes of an apply and the summary printed after it, whatever happened.

The same summary is printed on success, on failures and on Ctrl-C, so a pipeline log
always says what was applied, what failed (and why) and what was never attempted.
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


def summary_text(result: ApplyResult) -> str:
    """The closing report: counts, then every failure with its reason, then what was
    not attempted (so that a rerun's scope is obvious)."""
    counts = result.counts()
    applied = result.by_status("applied")
    per_action = {
        a: sum(1 for r in applied if r.action == a) for a in ("create", "update", "delete")
    }
    head = "Apply interrupted" if result.interrupted else "Apply complete"
    lines = [
        f"{head}: {counts['applied']} applied ({per_action['create']} created, "
        f"{per_action['update']} updated, {per_action['delete']} deleted), "
        f"{counts['failed']} failed, {counts['not-attempted']} not attempted, "
        f"{counts['unchanged']} unchanged."
    ]
    failed = result.by_status("failed")
    if failed:
        lines.append("Failed:")
        lines += [f"  {r.address} ({r.action}): {r.error}" for r in failed]
    skipped = result.by_status("not-attempted")
    if skipped:
        lines.append("Not attempted:")
        lines += [f"  {r.address} ({r.action})" for r in skipped]
    if skipped or any(r.rerun_helps for r in failed):
        lines.append("Run `reconcile apply` again to converge the rest; applied changes are kept.")
    elif failed:
        lines.append("Running apply again will not fix these failures (see each reason).")
    return "\n".join(lines) + "\n"
