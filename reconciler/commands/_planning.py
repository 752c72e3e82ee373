"""The steps `plan` and `apply PATH...` share: validate the tree (a tree with errors
is never planned; --strict-groups is an input to validation and to `make_plan`, never
applied afterwards), open the target; and the plan document shown for errors.

    validate_specs(paths, org_policy, strict_groups, on_document=None, planned=False)
        -> ValidationResult   every diagnostic printed on stderr (with `planned`, only
                              when errors stop the plan: the plan shows its warnings)
    open_target(options, result, client_retry=True) -> Backend   (the caller closes it)
    open_reads(options, result, read_ahead, projects, custom) -> Reads   what the read-ahead
                                          read, or the target opened here
    say_target(info)                      what the target turned out to be, on stderr
    errors_only(diagnostics, origin, owner) -> Plan   no changes, only the errors
    conflict(diagnostics) -> str          what the live state conflicts with
    show_plan(plan, fmt, colour=False, to=stdout)   (plan, show, apply)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from reconciler.backends.base import Backend, BackendInfo, Reads, TargetOptions
from reconciler.commands import output
from reconciler.diagnostics import Diagnostic
from reconciler.localstate import shown
from reconciler.orgpolicy.store import PolicyStore
from reconciler.ownership import DEFAULT_OWNER
from reconciler.plan.differ import LABEL_BUDGET
from reconciler.plan.model import Plan, PlanTarget
from reconciler.plan.observe import organizations
from reconciler.plan.readahead import ReadAhead
from reconciler.render import diagnostics as report
from reconciler.render.formats import render
from reconciler.spec.validate import ValidationResult, validate_paths


def validate_specs(
    paths: Sequence[Path],
    org_policy: Path | None,
    strict_groups: bool = False,
    on_document: Callable[[str | None], None] | None = None,
    planned: bool = False,
) -> ValidationResult:
    """Validate PATH... (default specs/), printing every diagnostic on stderr;
    `strict_groups` is an input to validation (spec/validate.py); `on_document`:
    spec/loader.py's load_tree (the plan's read-ahead). `planned`: a plan is made from
    the tree and shows its warnings (and decides what validation left to it), so they
    are printed here only when errors stop the plan: each finding said once."""
    result = validate_paths(
        paths, org_policy, on_document=on_document, strict_groups=strict_groups
    )
    diagnostics = result.diagnostics.sorted()
    if diagnostics and (not planned or result.diagnostics.has_errors):
        output.stderr().document(report.text(diagnostics))
    return result


def tree_snapshot(result: ValidationResult) -> tuple[Path, PolicyStore] | None:
    """The org-policy snapshot validation read (the tree's or --org-policy's): a plan
    reads the projects' organizations from its ancestry, and names how it differs
    from the live org policy."""
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
    projects: Sequence[str], custom: bool = False,
) -> Reads:
    """What the read-ahead's second process read (plan, residency), or the target
    opened in this process: the read-ahead did not run or failed (its note says why),
    or it found Google's emulator (no Org Policy API) where the spec tree has a
    snapshot to answer for it, which `open_target` does here. `custom`: a plan's, the
    read-ahead reads each project's custom constraints too, for the organization the
    spec tree's snapshot names (as observe asks for them). The caller closes it."""
    served = None
    if read_ahead is not None:
        orgs = organizations(tree_snapshot(result), projects) if custom else None
        served = read_ahead.served(projects, orgs)
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
            f"Org policy: the spec tree's snapshot {info.snapshot} (Google's Pub/Sub "
            f"emulator at {info.address} serves no Org Policy API; --org-policy FILE "
            "names another)."
        )




def conflict(diagnostics: Sequence[Diagnostic]) -> str:
    """Why a plan with errors is not made or applied: the live org policy, or the labels
    others set on the live topics (plan/differ.py's label budget), or both."""
    codes = {d.code for d in diagnostics if d.is_error}
    labels = LABEL_BUDGET in codes
    if labels and codes == {LABEL_BUDGET}:
        return "the labels on the live topics leave no room for the declared ones"
    if labels:
        return "the specs conflict with the live org policy and the live topics' labels"
    return "the specs conflict with the live org policy"


def errors_only(
    diagnostics: Sequence[Diagnostic], origin: PlanTarget, owner: str = DEFAULT_OWNER
) -> Plan:
    """No plan is made from a tree with errors; JSON and markdown still print a plan
    document carrying them (and the tree's owner)."""
    return Plan(
        owner=owner,
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
