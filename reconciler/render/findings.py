"""What a plan reports at the spec lines, for every renderer: where each topic is
declared (`sources`), drift summed up in words (`drift_summary`), and, for the CI
reporters (`plan --format github|sarif`), the findings as diagnostics: the plan's own
(validation and the live org policy), each topic's warnings at the line that
declares it, and each drifting topic at its declaration.

The plan's reasons and warnings are sentences without a code; as diagnostics they
take the codes `plan-warning` and `drift-CATEGORY`, so that an annotation's title and
a SARIF rule say which kind of finding each one is.
"""

from __future__ import annotations

from collections import Counter

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.plan.model import (
    DRIFT_ALLOWS_DISALLOWED,
    DRIFT_BOTH,
    DRIFT_MISSES_ALLOWED,
    Plan,
    ResourceChange,
)

# A drift category in words, for a count of topics ("3 allow ...").
DRIFT_WORDS = {
    DRIFT_ALLOWS_DISALLOWED: "allow locations the org policy does not",
    DRIFT_MISSES_ALLOWED: "miss locations the org policy allows",
    DRIFT_BOTH: "both",
}
DRIFT_FIX = (
    "drift is reported, never applied: for each topic set `messageStoragePolicy: inherit` "
    "in its spec, or run `gcloud pubsub topics update TOPIC --project PROJECT "
    "--recompute-message-storage-policy`"
)


def sources(plan: Plan) -> dict[str, tuple[str, int]]:
    """Where each planned topic is declared: (file, line), ("", 0) when it is not."""
    return {rc.address: _source(rc) for rc in plan.resource_changes}


def where_declared(found: tuple[str, int]) -> str:
    file, line = found
    return f"{file}:{line}" if file and line else file


def drift_summary(plan: Plan) -> str:
    """"26 topics drift from the org policy (10 allow ..., 12 miss ..., 4 both); FIX"."""
    counts = Counter(d.category for d in plan.drift)
    parts = [f"{counts[c]} {w}" for c, w in DRIFT_WORDS.items() if counts[c]]
    n = len(plan.drift)
    return (
        f"{n} topic{' drifts' if n == 1 else 's drift'} from the org policy "
        f"({', '.join(parts)}); "
        f"{DRIFT_FIX}."
    )


def findings(plan: Plan) -> list[Diagnostic]:
    where = sources(plan)
    found = list(plan.diagnostics)
    for rc in plan.resource_changes:
        file, line = where[rc.address]
        found += [
            Diagnostic(
                file, line, 0, Severity.WARNING, "plan-warning", f"{rc.address}: {w}",
                topic=rc.address,
            )
            for w in rc.warnings
        ]
    found += [d.finding(*where.get(d.address, ("", 0))) for d in plan.drift]
    return found + list(plan.accepted)  # the reporters list them apart


def _source(rc: ResourceChange) -> tuple[str, int]:
    source = rc.source or {}
    return str(source.get("file") or ""), int(source.get("line") or 0)
