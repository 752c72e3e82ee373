"""What one `reconcile apply` came to, as pipelines read it: `apply --format json`
prints exactly one `ApplyOutcome` document, whatever happened (applied, nothing to do,
a partial failure, a refused plan, an error, an interruption), and its `exit_code` is
the command's.

    finished(result, digest, exit_code=None) -> ApplyOutcome   after the executor ran
    no_changes(plan) -> ApplyOutcome                           nothing to apply
    stopped(failure, plan, exit_code) -> ApplyOutcome          refused, failed or
                                                               interrupted before any
                                                               change (no call made)
    ApplyOutcome.dumps()                                       the JSON document

The dataclasses here are the one description of the document: reconciler/codec.py
writes it from their fields, and docs/apply-outcome.schema.json is generated from them
(reconciler/apply/outcomeschema.py; a test fails when it is stale).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from typing_extensions import TypedDict  # msgspec reads its keys on Python 3.11 too

from reconciler.apply.result import TopicResult, TopicResults
from reconciler.codec import doc, indented_json
from reconciler.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_TERMINATED,
    PlanRefused,
    ReconcileError,
    Refusal,
)
from reconciler.plan.model import Plan

FORMAT_VERSION = "1.0"

Outcome = Literal["applied", "no-changes", "partial-failure", "refused", "error", "interrupted"]

# The summary's keys are the result statuses (hyphenated, as in `results[].status`).
Summary = TypedDict(
    "Summary",
    {
        "applied": int,
        "failed": int,
        "not-attempted": int,
        "unchanged": int,
        "interrupted": bool,
    },
)


@dataclass(frozen=True)
class ApplyOutcome:
    """The outcome of one `reconcile apply` (`--format json` prints it on stdout)."""

    outcome: Annotated[
        Outcome,
        doc("applied: every change made; no-changes: nothing to apply; "
              "partial-failure: at least one topic failed (the others may be applied: see "
              "`results`); refused: the saved plan was refused before any change (see "
              "`reason`); error: an error before any change; interrupted: stopped by SIGINT "
              "or SIGTERM (see `results`)."),
    ]
    exit_code: Annotated[
        int,
        doc("The command's exit code: 0 applied or no-changes, 1 error, 3 "
              "partial-failure, 4 refused, 130 interrupted (SIGINT), 143 terminated "
              "(SIGTERM)."),
    ]
    reason: Annotated[
        Refusal | None,
        doc("Why the saved plan was refused (outcome `refused` only): stale, "
              "already-applied, superseded, digest-mismatch, retarget, damaged or takeover."),
    ] = None
    message: Annotated[
        str | None,
        doc("The refusal or the error, as printed on stderr (outcomes refused "
              "and error)."),
    ] = None
    details: Annotated[
        list[str],
        doc("For a refusal: each thing found, one line each (e.g. every topic "
              "changed since the plan: `projects/P/topics/T: modified since the plan`)."),
    ] = field(default_factory=list)
    digest: Annotated[
        str | None,
        doc("The digest of the plan applied or refused (`sha256:...`); null "
              "when no plan was read or made (e.g. a damaged plan file, specs with errors)."),
    ] = None
    summary: Annotated[
        Summary,
        doc("How many topics were applied, failed, not attempted, or needed no "
              "change."),
    ] = field(
        default_factory=lambda: Summary(
            {"applied": 0, "failed": 0, "not-attempted": 0, "unchanged": 0, "interrupted": False}
        )
    )
    results: Annotated[
        list[TopicResult],
        doc("One entry per planned change (create, update, delete): what "
              "happened to it and, when it failed, the service's error. Topics with nothing "
              "to change are counted in `summary.unchanged` only."),
    ] = field(default_factory=list)
    format_version: Annotated[
        str, doc("The version of this document's format (1.x: only fields are "
                   "added).")
    ] = FORMAT_VERSION

    def dumps(self) -> str:
        return indented_json(self, ascii=True)


def _summary(result: TopicResults) -> Summary:
    counts = result.counts()
    return Summary(
        {
            "applied": counts["applied"],
            "failed": counts["failed"],
            "not-attempted": counts["not-attempted"],
            "unchanged": counts["unchanged"],
            "interrupted": result.interrupted,
        }
    )


def finished(result: TopicResults, digest: str, exit_code: int | None = None) -> ApplyOutcome:
    """After the executor ran: `exit_code` is the interruption's (130 SIGINT, 143
    SIGTERM) when `result.interrupted`."""
    if result.interrupted:
        outcome: Outcome = "interrupted"
        code = exit_code if exit_code is not None else EXIT_INTERRUPTED
    elif result.failed:
        outcome, code = "partial-failure", EXIT_PARTIAL
    else:
        outcome, code = "applied", EXIT_OK
    return ApplyOutcome(
        outcome, code, digest=digest, summary=_summary(result), results=list(result.results)
    )


def no_changes(plan: Plan) -> ApplyOutcome:
    result = TopicResults(unchanged=len(plan.resource_changes))
    return ApplyOutcome("no-changes", EXIT_OK, digest=plan.digest, summary=_summary(result))


def untouched(plan: Plan | None) -> TopicResults:
    """Every planned change as not attempted: nothing was called."""
    if plan is None:
        return TopicResults()
    work = [rc for rc in plan.resource_changes if rc.action != "no-op"]
    return TopicResults(
        results=[
            TopicResult(
                address=rc.address,
                action=rc.action,
                status="not-attempted",
                method=rc.request.method if rc.request else "",
                update_mask=list(rc.update_mask),
            )
            for rc in work
        ],
        unchanged=len(plan.resource_changes) - len(work),
    )


def stopped(failure: BaseException, plan: Plan | None, exit_code: int) -> ApplyOutcome:
    """Refused (PlanRefused) or ended before any change by an error, an interruption or
    a bug (`failure`, exit code `exit_code`); `plan`: the plan read or made so far, if
    any (its changes are listed as not attempted)."""
    result = untouched(plan)
    digest = plan.digest if plan is not None else None
    if isinstance(failure, PlanRefused):
        return ApplyOutcome(
            "refused",
            exit_code,
            reason=failure.reason,
            message=str(failure),
            details=list(failure.details),
            digest=digest,
            summary=_summary(result),
            results=list(result.results),
        )
    if exit_code in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        outcome: Outcome = "interrupted"
        message = "interrupted; nothing was applied"
    elif isinstance(failure, ReconcileError):
        outcome, message = "error", str(failure)
    else:
        outcome, message = "error", f"internal error: {type(failure).__name__}: {failure}"
    return ApplyOutcome(
        outcome, exit_code, message=message, digest=digest, summary=_summary(result),
        results=list(result.results),
    )
