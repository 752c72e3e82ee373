"""The validate pipeline: files -> documents -> models -> checks -> desired state.

`plan` and `apply` call the same function first, so a plan is never made from a tree
that `validate` would reject.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reconciler.diagnostics import Diagnostics
from reconciler.errors import InputError
from reconciler.orgpolicy.store import PolicyStore, load_snapshot
from reconciler.spec.checks import check_tree
from reconciler.spec.desired import DesiredState
from reconciler.spec.loader import load_tree

DEFAULT_PATH = Path("specs")  # PATH when none is given (validate, plan, apply)


@dataclass
class ValidationResult:
    desired: DesiredState
    diagnostics: Diagnostics
    policy_store: PolicyStore | None
    policy_source: Path | None
    files: int


def validate_paths(paths: Sequence[Path], org_policy: Path | None = None) -> ValidationResult:
    """Load and check every spec under `paths`; `org_policy` overrides the snapshot
    discovered at the spec root. Raises InputError only for an unusable snapshot."""
    diags = Diagnostics()
    tree = load_tree(paths, diags)
    source = org_policy or tree.snapshot
    store = None
    if source is not None:
        if not source.is_file():
            raise InputError(
                f"{source}: org-policy file not found",
                hint="pass an existing file to --org-policy, or write one with "
                "`reconcile policy pull`",
            )
        store = load_snapshot(source)
    desired = check_tree(tree, store, diags)
    return ValidationResult(desired, diags, store, source, tree.files)
