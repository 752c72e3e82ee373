"""The validate pipeline: files -> documents -> models -> checks -> desired state.

`plan` and `apply` call the same function first, so a plan is never made from a tree
that `validate` would reject (an unreadable folder included: `--prune` never acts on
a partial tree).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from reconciler.acceptance import seen_by_validate, settle
from reconciler.diagnostics import Diagnostics
from reconciler.errors import InputError
from reconciler.orgpolicy.snapshot import read_snapshot
from reconciler.orgpolicy.store import PolicyStore
from reconciler.orgpolicy.unjudged import Gate
from reconciler.spec.checks import check_tree
from reconciler.spec.desired import DesiredState
from reconciler.spec.loader import load_tree
from reconciler.spec.orgrules import promote_inferred
from reconciler.spec.tree import SpecTree

# What a missing snapshot is: nothing (plan/apply check the live org policy), a
# warning (validate), or an error (validate --require-org-policy).
MissingSnapshot = Literal["ignore", "warn", "require"]

DEFAULT_PATH = Path("specs")  # PATH when none is given (validate, plan, apply)


@dataclass
class ValidationResult:
    desired: DesiredState
    diagnostics: Diagnostics
    policy_store: PolicyStore | None
    policy_source: Path | None
    files: int

    def settle_acceptances(self) -> None:
        """The tree's acceptances applied to its findings as validate reports them
        (reconciler/acceptance.py): an unused one is said where validate could have
        seen its finding (not an org-policy one when no snapshot was read)."""
        org_checked = self.policy_store is not None
        self.diagnostics.items = settle(
            self.diagnostics.items, self.desired.acceptances,
            lambda a: seen_by_validate(a, org_checked),
        )


def validate_paths(
    paths: Sequence[Path],
    org_policy: Path | None = None,
    missing_snapshot: MissingSnapshot = "ignore",
    on_document: Callable[[str | None], None] | None = None,
    strict_groups: bool = False,
    gate: Gate | None = None,
) -> ValidationResult:
    """Load and check every spec under `paths` (default: specs/); `org_policy`
    overrides the snapshot discovered at the spec root; `on_document`: see load_tree;
    `strict_groups`: refusals resting on inferred value-group membership are errors
    (spec/orgrules.py); `gate`: how custom constraints that cannot be judged are
    treated (reconciler/orgpolicy/unjudged.py; by default as `missing_snapshot`
    says: "ignore" is a plan's validation, which leaves them to the live org policy,
    "require" is --require-org-policy). Offline (`not gate.live`), what cannot be
    judged is named per project, and the opt-out's use is reported. Raises InputError
    only for a named snapshot file that does not exist (one that is not a regular
    file is a diagnostic). The commands pause the cyclic collector around this
    (reconciler/perf.py)."""
    if gate is None:
        gate = Gate(live=missing_snapshot == "ignore", require=missing_snapshot == "require")
    diags = Diagnostics()
    if paths:
        paths = list(paths)
    elif DEFAULT_PATH.exists() or DEFAULT_PATH.is_symlink():
        paths = [DEFAULT_PATH]
    else:
        _report_no_default(diags)
        paths = []
    tree = load_tree(paths, diags, on_document)
    source = org_policy or tree.snapshot
    store = None
    if source is not None:
        if not source.exists():  # anything else is the reader's to name
            raise InputError(
                f"{source}: org-policy file not found",
                hint="pass an existing file to --org-policy, or write one with "
                "`reconcile policy pull`",
            )
        store = read_snapshot(source, diags, tree.projects(), gate)
    elif missing_snapshot != "ignore":
        _report_missing(tree, paths, diags, missing_snapshot)
    desired = check_tree(tree, store, diags, gate)
    if strict_groups:
        diags.items = promote_inferred(diags.items)
    if not gate.live:
        known = None if store is None else [
            c.constraint_id for c in store.custom_constraints.values()
        ]
        report = gate.report(str(paths[0]) if paths else str(DEFAULT_PATH), known)
        if report is not None:
            diags.add(report)
    return ValidationResult(desired, diags, store, source, tree.files)


def _report_no_default(diags: Diagnostics) -> None:
    """No PATH given and no specs/ here (e.g. run inside the spec tree itself)."""
    diags.error(
        str(DEFAULT_PATH), 0, 0, "path-missing",
        f"no spec tree here: {DEFAULT_PATH}/, the default PATH, is not in the current "
        "directory",
        hint=f"run from the directory that holds {DEFAULT_PATH}/, or name the tree as "
        "PATH: `.` for the current directory",
    )


def _report_missing(
    tree: SpecTree, paths: Sequence[Path], diags: Diagnostics, mode: MissingSnapshot
) -> None:
    if not tree.snapshot_looked:
        return  # no spec root was found: the path errors say what to fix
    looked = ", ".join(str(p) for p in tree.snapshot_looked) or "nowhere (no spec root)"
    message = (
        f"no org-policy snapshot found (looked for org-policy.yaml in {looked}), so the "
        "org-policy checks (allowed regions, in-transit enforcement, publishers' regions, "
        "customer-managed keys, custom constraints) did not run"
    )
    hint = (
        "write one with `reconcile policy pull --project P... --out org-policy.yaml` at "
        "the spec root, or pass --org-policy FILE"
    )
    where = str(paths[0]) if paths else "."
    if mode == "require":
        diags.error(where, 0, 0, "org-policy-missing", message, hint)
    else:
        diags.warning(where, 0, 0, "org-policy-missing", message, hint)
