"""A spec tree with an Owner document through the GitHub example's own steps, which
plan and apply one project at a time (`--project "$PROJECT"`): the narrowed plan is
the tree's own (its owner, no takeover), the merge applies it, and the topics keep
the tree's owner. (--project once planned every topic back to the owner `default`,
and apply refused it as a takeover.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gitops.ci_support import Repo, copy_reference_specs
from tests.gitops.test_pr_flow import (
    ORDERS,
    PAYMENTS,
    applied_repo,
    apply_run,
    labels,
    pr_run,
    sticky,
)
from tests.specs_support import owner_doc

OWNER = "team-payments"


def _owned_tree(root: Path) -> None:
    copy_reference_specs(root)
    (root / "specs" / "owner.yaml").write_text(owner_doc(OWNER))


@pytest.fixture
def repo(tmp_path: Path, local_server: Any, run_cli: Any) -> Iterator[Repo]:
    yield applied_repo(tmp_path, local_server, run_cli, _owned_tree)


def test_the_examples_plan_and_apply_steps_keep_the_trees_owner(
    repo: Repo, publisher_client: Any
) -> None:
    # Converged, and narrowed to one project: nothing to do, under the tree's owner.
    narrowed = repo.reconcile("plan", "specs/", "--project", PAYMENTS, "--detailed-exitcode")
    assert narrowed.code == 0, narrowed.out + narrowed.err
    assert f"Owner: {OWNER}\n" in narrowed.out
    assert "No changes. The live topics match the specs." in narrowed.out

    number, branch = repo.open_pr([ORDERS])
    assert pr_run(repo, number, branch, 101) == [PAYMENTS]
    body = sticky(repo, number)
    assert "### `acme-payments`: 0 to add, 1 to change, 0 to destroy" in body
    assert "owned-by-another-tree" not in body and '-> "default"' not in body

    _, sha = repo.merge(number, branch)
    run = apply_run(repo, sha, 201)
    assert (run.mode, run.result, run.state, run.failed) == ("apply", "applied", "applied", None)
    assert run.outcome is not None and run.outcome["reason"] is None
    live = labels(publisher_client)
    assert live["orders"]["tier"] == "gold"
    assert {t["reconcile-owner"] for t in live.values()} == {OWNER}
