"""The steps `plan` and `apply PATH...` share: validate the tree (a tree with errors
is never planned; --strict-groups is an input to validation and to `make_plan`, never
applied afterwards), open the target; and the plan document shown for errors.

    validate_specs(paths, org_policy, strict_groups, on_document=None, gate=None,
                   planned=False) -> ValidationResult   every diagnostic printed on stderr
                                  (with `planned`, only when errors stop the plan: the
                                  plan shows its warnings)
    planning_gate(paths, allow) -> Gate   how plan and apply treat what they cannot judge
    open_target(options, result, client_retry=True) -> Backend   (the caller closes it)
    open_reads(options, result, read_ahead, projects) -> Reads   what the read-ahead
                                          read, or the target opened here
    say_target(info)                      what the target turned out to be, on stderr
    errors_only(diagnostics, origin, owner) -> Plan   no changes, only the errors
    conflict(diagnostics) -> str          what the live state conflicts with
    show_plan(plan, fmt, colour=False, to=stdout)   (plan, show, apply)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from reconciler.acceptance import AcceptedDiagnostic, settle
from reconciler.backends.base import Backend, BackendInfo, Reads, TargetOptions
from reconciler.commands import output
from reconciler.diagnostics import Diagnostic
from reconciler.localstate import shown
from reconciler.orgpolicy.store import PolicyStore
from reconciler.orgpolicy.unjudged import UNJUDGED_CODES, AllowUnjudged, Gate
from reconciler.ownership import DEFAULT_OWNER
from reconciler.plan.differ import LABEL_BUDGET
from reconciler.plan.model import Plan, PlanTarget, ProjectConstraints
from reconciler.plan.readahead import ReadAhead
from reconciler.render import diagnostics as report
from reconciler.render.formats import render
from reconciler.spec.validate import ValidationResult, validate_paths


def planning_gate(paths: Sequence[Path], allow: AllowUnjudged) -> Gate:
    """How plan and apply treat a custom constraint they could not judge: an error
    unless `allow` (--allow-unjudged) lets it through; one gate for the run's
    validation and its plan, whose report names the spec tree."""
    return Gate(live=True, allow=allow, where=str(paths[0]) if paths else "specs")


def validate_specs(
    paths: Sequence[Path],
    org_policy: Path | None,
    strict_groups: bool = False,
    on_document: Callable[[str | None], None] | None = None,
    gate: Gate | None = None,
    planned: bool = False,
) -> ValidationResult:
    """Validate PATH... (default specs/), printing every diagnostic on stderr;
    `strict_groups` is an input to validation (spec/validate.py); `on_document`:
    spec/loader.py's load_tree (the plan's read-ahead); `gate`: the run's
    (`planning_gate`). `planned`: a plan is made from the tree and shows its warnings
    (and decides what validation left to it), so they are printed here only when
    errors stop the plan: each finding said once."""
    result = validate_paths(
        paths, org_policy, on_document=on_document, strict_groups=strict_groups, gate=gate
    )
    if result.diagnostics.has_errors:  # no plan: the tree's acceptances apply here
        # (none is called unused: the plan that would have used it was not made)
        result.diagnostics.items = settle(
            result.diagnostics.items, result.desired.acceptances, lambda a: False
        )
    elif not planned:  # a report made from the tree (residency): as validate says them
        result.settle_acceptances()
    diagnostics = result.diagnostics.sorted()
    if diagnostics and (not planned or result.diagnostics.has_errors):
        output.stderr().document(report.text(diagnostics))
    return result


def tree_snapshot(result: ValidationResult) -> tuple[Path, PolicyStore] | None:
    """The org-policy snapshot validation read (the tree's or --org-policy's): a plan
    names how it differs from the live org policy and ancestry."""
    if result.policy_source is None or result.policy_store is None:
        return None
    return result.policy_source, result.policy_store


def open_target(
    options: TargetOptions, result: ValidationResult, client_retry: bool = True
) -> Backend:
    """The backend, its org-policy source decided here: the --org-policy snapshot
    (already loaded by validation) or the Org Policy API. The spec tree's snapshot
    seeds a brand-new --local server."""
    # Imported here: with the read-ahead, `plan` never opens the target in this process
    # and so never imports google-cloud (reconciler/perf.py).
    from reconciler.backends.connect import open_backend

    given = options.org_policy is not None
    store = result.policy_store if given else None
    tree = None
    if not given and result.policy_source is not None and result.policy_store is not None:
        tree = (result.policy_source, result.policy_store)
    backend = open_backend(
        options,
        policy_store=store,
        local_seed=result.policy_store,
        client_retry=client_retry,
        tree_snapshot=tree,
    )
    say_target(backend.info)
    return backend


def open_reads(
    options: TargetOptions, result: ValidationResult, read_ahead: ReadAhead | None,
    projects: Sequence[str],
) -> Reads:
    """What the read-ahead's second process read (plan, residency), or the target
    opened in this process: the read-ahead did not run or failed (its note says why),
    or it found Google's emulator (no Org Policy API) where the spec tree has a
    snapshot to answer for it, which `open_target` does here. The caller closes it."""
    served = None
    if read_ahead is not None:
        served = read_ahead.served(projects)
    if read_ahead is not None and read_ahead.note is not None:
        output.stderr().line(read_ahead.note)
    if served is not None:
        info = served.info
        if not (info.google_emulator and info.org_policy == "api"
                and result.policy_store is not None):
            return served
        served.close()
    return open_target(options, result)


def say_target(info: BackendInfo) -> None:
    """What the target turned out to be, when the command line did not say it: the
    running local server that serves the local state, or the spec tree's snapshot
    standing in for an Org Policy API the emulator does not serve."""
    if info.served_by:
        output.stderr().line(
            f"Local state {shown(info.address)}: using the running `reconcile local-server` "
            f"at {info.served_by}."
        )
    if info.snapshot_fallback:
        output.stderr().line(
            f"Org policy and ancestry: the spec tree's snapshot {info.snapshot} (Google's "
            f"Pub/Sub emulator at {info.address} serves neither the Org Policy nor the "
            "Resource Manager API; --org-policy FILE names another)."
        )




def conflict(diagnostics: Sequence[Diagnostic]) -> str:
    """Why a plan with errors is not made or applied: the live org policy, or the labels
    others set on the live topics (plan/differ.py's label budget), or custom
    constraints that could not be judged, or several of them."""
    codes = {d.code for d in diagnostics if d.is_error}
    reasons = []
    if codes - {LABEL_BUDGET} - UNJUDGED_CODES:
        reasons.append("the specs conflict with the live org policy")
    if LABEL_BUDGET in codes:
        reasons.append("the labels on the live topics leave no room for the declared ones")
    if codes & UNJUDGED_CODES:
        reasons.append("custom constraints could not be judged (--allow-unjudged lets "
                       "them through)")
    return "; ".join(reasons) or "the specs conflict with the live org policy"


def errors_only(
    diagnostics: Sequence[Diagnostic], origin: PlanTarget, owner: str = DEFAULT_OWNER,
    custom_constraints: Mapping[str, ProjectConstraints] | None = None,
) -> Plan:
    """No plan is made from a tree with errors; JSON and markdown still print a plan
    document carrying them (and the tree's owner, the accepted findings apart, and,
    from a plan refused for what the live org policy said, which custom constraints
    it judged)."""
    return Plan(
        owner=owner,
        diagnostics=[d for d in diagnostics if not isinstance(d, AcceptedDiagnostic)],
        accepted=[d for d in diagnostics if isinstance(d, AcceptedDiagnostic)],
        target=origin,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        custom_constraints=custom_constraints or {},
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
