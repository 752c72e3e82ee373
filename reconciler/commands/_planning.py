"""The steps `plan` and `apply PATH...` share: validate the tree (a tree with errors
is never planned; --strict-groups is an input to validation and to `make_plan`, never
applied afterwards), open the target; and the plan document shown for errors.

    validate_specs(paths, org_policy, strict_groups, on_document=None) -> ValidationResult
        every diagnostic printed on stderr
    open_target(options, result, client_retry=True) -> Backend   (the caller closes it)
    new_diagnostics(plan, validation)     what the live org policy added
    recorded_or_bare(options) -> PlanTarget
    errors_only(diagnostics, origin) -> Plan   no changes, only the errors
    show_plan(plan, fmt, colour=False, to=stdout)   (plan, show, apply)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from reconciler.backends.base import Backend, TargetOptions
from reconciler.commands import output
from reconciler.diagnostics import Diagnostic
from reconciler.errors import InputError
from reconciler.plan.model import Plan, PlanTarget
from reconciler.plan.origin import record_target
from reconciler.render import diagnostics as report
from reconciler.render.formats import render
from reconciler.spec.validate import ValidationResult, validate_paths


def validate_specs(
    paths: Sequence[Path],
    org_policy: Path | None,
    strict_groups: bool = False,
    on_document: Callable[[str | None], None] | None = None,
) -> ValidationResult:
    """Validate PATH... (default specs/), printing every diagnostic on stderr;
    `strict_groups` is an input to validation (spec/validate.py); `on_document`:
    spec/loader.py's load_tree (the plan's read-ahead)."""
    result = validate_paths(
        paths, org_policy, on_document=on_document, strict_groups=strict_groups
    )
    diagnostics = result.diagnostics.sorted()
    if diagnostics:
        output.stderr().document(report.text(diagnostics))
    return result


def open_target(
    options: TargetOptions, result: ValidationResult, client_retry: bool = True
) -> Backend:
    """The backend, its org-policy source decided here: the --org-policy snapshot
    (already loaded by validation) or the Org Policy API. The spec tree's snapshot
    seeds a brand-new --local server."""
    # Imported here: with the read-ahead, `plan` never opens the target in this process
    # and so never imports google-cloud (reconciler/perf.py).
    from reconciler.backends.connect import open_backend

    store = result.policy_store if options.org_policy is not None else None
    return open_backend(
        options, policy_store=store, local_seed=result.policy_store, client_retry=client_retry
    )


def new_diagnostics(plan: Plan, validation: Sequence[Diagnostic]) -> list[Diagnostic]:
    """What the live org policy added to the plan (validation's were printed already)."""
    seen = set(validation)
    return [d for d in plan.diagnostics if d not in seen]


def recorded_or_bare(options: TargetOptions) -> PlanTarget:
    """The target to show with errors (a snapshot that cannot be read has no hash)."""
    try:
        return record_target(options)
    except InputError:
        return PlanTarget(org_policy="snapshot", snapshot=str(options.org_policy))


def errors_only(diagnostics: Sequence[Diagnostic], origin: PlanTarget) -> Plan:
    """No plan is made from a tree with errors; JSON and markdown still print a plan
    document carrying them."""
    return Plan(
        diagnostics=list(diagnostics),
        target=origin,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def show_plan(
    plan: Plan,
    fmt: str,
    colour: bool = False,
    to: output.Writer | None = None,
) -> None:
    """The plan in `fmt` (stdout by default); colour for text only."""
    writer = to or output.stdout()
    colour = colour and fmt == "text"
    text = render(plan, fmt, colour)
    if fmt == "json":
        writer.data(text)
    else:
        writer.document(text, colour=colour)
