"""The plan for machines: `--format json` prints the plan object itself (the same
document `--out` saves), keys as docs/plan-format.md lists them."""

from __future__ import annotations

from reconciler.plan.model import Plan


def render(plan: Plan) -> str:
    return plan.dumps()
