"""What a plan reports at the spec lines, as diagnostics, for the CI reporters
(`plan --format github|sarif`): the plan's own diagnostics (validation and the live
org policy), each topic's warnings at the line that declares it, and each drifting
topic at its declaration.

The plan's reasons and warnings are sentences without a code; here they take the
codes `plan-warning` and `drift-CATEGORY`, so that an annotation's title and a SARIF
rule say which kind of finding each one is.
"""

from __future__ import annotations

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.plan.model import Plan, ResourceChange


def findings(plan: Plan) -> list[Diagnostic]:
    where = {rc.address: _source(rc) for rc in plan.resource_changes}
    found = list(plan.diagnostics)
    for rc in plan.resource_changes:
        file, line = where[rc.address]
        found += [
            Diagnostic(file, line, 0, Severity.WARNING, "plan-warning", f"{rc.address}: {w}")
            for w in rc.warnings
        ]
    for d in plan.drift:
        file, line = where.get(d.address, ("", 0))
        found.append(
            Diagnostic(
                file, line, 0, Severity.WARNING, f"drift-{d.category}",
                f"{d.address}: {d.message}", f"fix: {d.fix}",
            )
        )
    return found


def _source(rc: ResourceChange) -> tuple[str, int]:
    source = rc.source or {}
    return str(source.get("file") or ""), int(source.get("line") or 0)
