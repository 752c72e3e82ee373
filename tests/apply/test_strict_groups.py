"""`--strict-groups` means one thing on validate, plan and apply: refusals that rest on
inferred value-group membership are errors. `apply PATH... --strict-groups` refuses
what `plan PATH... --strict-groups` refuses, whether the refusal comes from the
snapshot (validation) or from the live org policy (the plan's own checks), and
`apply PLANFILE --strict-groups` refuses a saved plan that records such a refusal."""

from __future__ import annotations

from typing import Any

import pytest
from apply_support import mutating_calls

from reconciler.orgpolicy.snapshot import load_snapshot
from tests.specs_support import Tree

# Ordering keys from a region the org policy's inferred group may not hold (the
# snapshot allows in:us-locations, whose members are inferred, not verified: us-west8
# may be one; a region outside the US would be a certain non-member, an error).
ORDERED = {
    "messageStoragePolicy": "inherit",
    "publishers": {"regions": ["us-west8"], "messageOrdering": True},
}
PLAIN = {"labels": {"team": "payments"}}


def _tree(local_server: Any, tree: Tree, *, snapshot: bool = True) -> list[str]:
    """The specs, and the server's Org Policy API seeded as the snapshot says;
    `snapshot` False: the snapshot moved where validation does not find it."""
    tree.write({"ordered": ORDERED, "plain": PLAIN})
    if not snapshot:
        tree.policy = tree.policy.rename(tree.root / "seeded-policy.yaml")
    local_server.seed_policies(load_snapshot(tree.policy))
    return ["--emulator", local_server.address]


@pytest.mark.parametrize(
    ("snapshot", "plan_says", "apply_says"),
    [
        (False, "no plan made, nothing changed",
         "the specs conflict with the live org policy; nothing was applied"),
        (True, "; no plan made", "the specs have errors; nothing was applied"),
    ],
    ids=["live-org-policy", "snapshot"],
)
def test_apply_refuses_what_plan_refuses(
    run_cli: Any, local_server: Any, tree: Tree, snapshot: bool, plan_says: str, apply_says: str
) -> None:
    """Refused by the plan's checks on the live Org Policy API, or by validation on the
    snapshot: the same refusal, before any call, from both verbs."""
    target = _tree(local_server, tree, snapshot=snapshot)
    if snapshot:
        target += ["--org-policy", str(tree.policy)]
    planned = run_cli("plan", "specs", *target, "--strict-groups")
    applied = run_cli("apply", "specs", *target, "--strict-groups", "--auto-approve")
    for result, says in ((planned, plan_says), (applied, apply_says)):
        assert result.exit_code == 1
        assert "error[publisher-ordering-region]" in result.stderr
        assert "membership not verified for in:us-locations" in result.stderr
        assert says in result.stderr
    # The plan apply shows never says it matches: its refused topics are not changes.
    assert "No changes" not in applied.stdout
    if not snapshot:
        assert applied.stdout.splitlines()[-1] == (
            "1 error: this plan cannot be applied. Fix the errors and plan again."
        )
    assert mutating_calls(local_server) == {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}


def test_without_strict_groups_the_refusal_is_a_warning(
    run_cli: Any, local_server: Any, tree: Tree
) -> None:
    target = _tree(local_server, tree, snapshot=False)
    lenient = run_cli("apply", "specs", *target, "--auto-approve")
    assert lenient.exit_code == 0, lenient.stdout + lenient.stderr
    assert "warning[publisher-ordering-region]" in lenient.stdout + lenient.stderr
    assert mutating_calls(local_server)["CreateTopic"] == 2


def test_a_saved_plan_with_an_inferred_refusal_is_refused_with_strict_groups(
    run_cli: Any, local_server: Any, tree: Tree
) -> None:
    target = _tree(local_server, tree, snapshot=False)
    saved = run_cli("plan", "specs", *target, "--out", "plan.json")
    assert saved.exit_code == 0, saved.stderr
    assert "warning[publisher-ordering-region]" in saved.stdout

    refused = run_cli("apply", "plan.json", "--strict-groups")
    assert refused.exit_code == 1
    assert "error[publisher-ordering-region]" in refused.stderr
    assert "nothing was applied" in refused.stderr
    assert mutating_calls(local_server)["CreateTopic"] == 0

    # As reviewed, without the flag, the saved plan applies.
    applied = run_cli("apply", "plan.json")
    assert applied.exit_code == 0, applied.stdout + applied.stderr
    assert mutating_calls(local_server)["CreateTopic"] == 2


def test_every_verb_that_validates_offers_strict_groups(run_cli: Any) -> None:
    for verb in ("validate", "plan", "apply"):
        shown = run_cli(verb, "--help")
        assert shown.exit_code == 0
        assert "--strict-groups" in shown.stdout, verb
