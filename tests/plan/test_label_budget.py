"""The label budget (issue 21, item 6): a topic that would carry more than the service's
64 labels after apply (declared + reconcile's own + those others set on it, which apply
keeps) is a plan error naming the foreign keys, and apply makes no call; a failure that
another apply cannot fix is not followed by the advice to run apply again.
Through the CLI against the local server, seeded with the real PublisherClient."""

from __future__ import annotations

from typing import Any

import pytest

from tests.specs_support import topic_doc

MUTATING = ("CreateTopic", "UpdateTopic", "DeleteTopic")
FOREIGN = {f"other-{i}": "x" for i in range(10)}  # set by another tool
DECLARED = {f"k{i:02d}": "v" for i in range(60)}
RERUN = "Run `reconcile apply` again"


def test_declared_plus_foreign_labels_over_64_is_a_plan_error_and_no_apply(
    run_cli: Any, local_server: Any, seed: Any, specs: Any
) -> None:
    seed("orders", FOREIGN)
    root = specs(topic_doc("orders", labels=DECLARED))
    assert run_cli("validate", str(root)).exit_code == 0  # 60 + 3 of ours fit alone
    target = ("--emulator", local_server.address)
    plan = run_cli("plan", str(root), *target)
    assert plan.exit_code == 1
    assert "error[label-budget]" in plan.stderr
    assert "projects/proj-a/topics/orders would carry 73 labels after apply, over the " \
        "service's limit of 64: 60 declared, 3 of reconcile's own" in plan.stderr
    named = ", ".join(sorted(FOREIGN))
    assert f"10 set by others on the live topic, which apply keeps ({named})" in plan.stderr
    assert "--remove-labels=KEY" in plan.stderr
    assert "the labels on the live topics leave no room for the declared ones; no plan made" \
        in plan.stderr
    assert "1 to update" not in plan.stdout

    local_server.counters.reset()
    apply = run_cli("apply", str(root), *target, "--auto-approve")
    assert apply.exit_code == 1
    assert "error[label-budget]" in apply.stderr
    assert "nothing was applied" in apply.stderr
    assert sum(local_server.counters.get(m) for m in MUTATING) == 0
    assert RERUN not in apply.stdout + apply.stderr


def test_at_the_limit_the_plan_is_made(
    run_cli: Any, local_server: Any, seed: Any, specs: Any
) -> None:
    seed("orders", dict(list(FOREIGN.items())[:1]))
    root = specs(topic_doc("orders", labels=DECLARED))  # 60 + 3 + 1 = 64
    plan = run_cli("plan", str(root), "--emulator", local_server.address)
    assert plan.exit_code == 0, plan.stderr
    assert "Plan: 0 to create, 1 to update, 0 to delete." in plan.stdout


@pytest.mark.parametrize("status", ["PERMISSION_DENIED", "INVALID_ARGUMENT"])
def test_a_permanent_failure_does_not_advise_a_rerun(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, status: str
) -> None:
    seed("orders", {"team": "old"})
    root = specs(topic_doc("orders", labels={"team": "new"}))
    local_server.faults.add(method="UpdateTopic", error=status)
    apply = run_cli("apply", str(root), "--emulator", local_server.address, "--auto-approve")
    assert apply.exit_code == 3
    assert f"update FAILED: {status}" in apply.stdout
    assert "Running apply again will not fix these failures" in apply.stdout
    assert RERUN not in apply.stdout + apply.stderr


def test_a_failure_a_new_plan_can_fix_still_advises_a_rerun(
    run_cli: Any, local_server: Any, seed: Any, specs: Any
) -> None:
    """NOT_FOUND: the topic went away under the plan; the next plan sees it."""
    seed("orders", {"team": "old"})
    root = specs(topic_doc("orders", labels={"team": "new"}))
    local_server.faults.add(method="UpdateTopic", error="NOT_FOUND")
    apply = run_cli("apply", str(root), "--emulator", local_server.address, "--auto-approve")
    assert apply.exit_code == 3
    assert RERUN in apply.stdout
