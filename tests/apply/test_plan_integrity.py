"""What is reviewed is what is applied (issue 10, bullets 1 and 2): `apply PLANFILE`
sends only requests derived from the changes `show` renders, refuses a file whose
content does not match its digest, and `--expect-digest` pins the reviewed plan.
Every refusal happens before any RPC (the local server's counters stay at zero)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from apply_support import mutating_calls
from google.pubsub_v1.types import Topic

from reconciler.orgpolicy.snapshot import load_snapshot
from reconciler.ownership import PLAN_LABEL, plan_marker
from reconciler.plan.model import digest_of
from tests.cli_support import reconcile
from tests.specs_support import Tree

NONE = {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}
VICTIM = "projects/victim-proj/topics/billing"


def target(local_server: Any, tree: Tree) -> list[str]:
    local_server.seed_policies(load_snapshot(tree.policy))
    return ["--emulator", local_server.address, "--org-policy", str(tree.policy)]


def saved_update_plan(local_server: Any, tree: Tree, client: Any) -> Path:
    """A saved plan updating the labels of `orders` (team: old -> payments); another
    project's topic exists that the plan never names."""
    client.create_topic(request=Topic(name=VICTIM, labels={"owner": "finance"}))
    client.create_topic(
        request=Topic(name=tree.address("orders"), labels={"team": "old", "keep": "me"})
    )
    tree.write({"orders": {"labels": {"team": "payments"}}})
    made = reconcile("plan", "specs", *target(local_server, tree), "--out", "plan.json")
    assert made.exit_code == 0, made.output
    return tree.root / "plan.json"


def edit(path: Path, change: Callable[[dict[str, Any]], None], redigest: bool = True) -> None:
    """Edit the plan file as a hostile user would; by default the digest is recomputed
    (anyone can), so that the request checks, not the digest, must catch it."""
    data = json.loads(path.read_text())
    change(data)
    if redigest:
        data["digest"] = digest_of(data)
    path.write_text(json.dumps(data, indent=2))


def refused(local_server: Any, run: Any, code: int = 4) -> None:
    """Nothing called; exit 4 (the saved plan refused) or 1 (a usage error)."""
    assert run.exit_code == code, run.output
    assert "internal error" not in run.output
    assert local_server.counters.total() == 0, local_server.counters.snapshot()


def test_a_request_naming_another_topic_refuses_the_whole_plan(
    local_server: Any, tree: Tree, client: Any
) -> None:
    path = saved_update_plan(local_server, tree, client)

    def retarget(data: dict[str, Any]) -> None:
        data["resource_changes"][0]["request"]["topic"]["name"] = VICTIM

    edit(path, retarget)
    local_server.counters.reset()
    run = reconcile("apply", str(path), *target(local_server, tree))
    refused(local_server, run)
    assert f"{path}: the plan's requests are not the changes it shows" in run.stderr
    assert f"{tree.address('orders')}: the request names topic '{VICTIM}'" in run.stderr
    assert dict(client.get_topic(request={"topic": VICTIM}).labels) == {"owner": "finance"}


def test_an_edited_label_value_in_the_request_is_refused(
    local_server: Any, tree: Tree, client: Any
) -> None:
    path = saved_update_plan(local_server, tree, client)

    def sneak(data: dict[str, Any]) -> None:
        data["resource_changes"][0]["request"]["label_merge"]["set"]["team"] = "attacker"

    edit(path, sneak)
    shown = reconcile("show", str(path))
    assert (
        shown.exit_code == 1
        and "the request's label_merge is not the change's label changes" in shown.stderr
    )
    local_server.counters.reset()
    run = reconcile("apply", str(path), *target(local_server, tree))
    refused(local_server, run)
    assert f"{tree.address('orders')}: the request's label_merge is not" in run.stderr
    assert client.get_topic(request={"topic": tree.address("orders")}).labels["team"] == "old"


def test_a_field_outside_the_update_mask_is_refused(
    local_server: Any, tree: Tree, client: Any
) -> None:
    path = saved_update_plan(local_server, tree, client)

    def widen(data: dict[str, Any]) -> None:
        data["resource_changes"][0]["request"]["topic"]["message_storage_policy"] = {
            "allowed_persistence_regions": ["us-east1"],
            "enforce_in_transit": False,
        }

    edit(path, widen)
    local_server.counters.reset()
    run = reconcile("apply", str(path), *target(local_server, tree))
    refused(local_server, run)
    assert "the request sets message_storage_policy, which is outside the change's mask" in (
        run.stderr
    )


def test_an_after_edited_without_its_fields_is_refused(
    local_server: Any, tree: Tree, client: Any
) -> None:
    """Editing `after` and the request together still leaves `fields` (what the text
    plan shows per key) behind: refused too."""
    path = saved_update_plan(local_server, tree, client)

    def both(data: dict[str, Any]) -> None:
        rc = data["resource_changes"][0]
        rc["change"]["after"]["labels"]["team"] = "attacker"
        rc["request"]["label_merge"]["set"]["team"] = "attacker"

    edit(path, both)
    local_server.counters.reset()
    run = reconcile("apply", str(path), *target(local_server, tree))
    refused(local_server, run)
    assert "its `fields` do not follow from `before`/`after`" in run.stderr


def test_apply_planfile_prints_the_plan_it_applies_and_keeps_foreign_labels(
    local_server: Any, tree: Tree, client: Any
) -> None:
    path = saved_update_plan(local_server, tree, client)
    digest = json.loads(path.read_text())["digest"]
    run = reconcile("apply", str(path), *target(local_server, tree))
    assert run.exit_code == 0, run.output
    shown_at = run.stdout.index('"old" -> "payments"')
    assert f"Digest: {digest}" in run.stdout
    assert shown_at < run.stdout.index(f"{tree.address('orders')}: updated")
    labels = dict(client.get_topic(request={"topic": tree.address("orders")}).labels)
    assert labels == {
        "team": "payments", "keep": "me", "reconcile-managed": "true",
        "reconcile-owner": "default", PLAN_LABEL: plan_marker(digest),
    }


# -- the digest ------------------------------------------------------------------------


def test_the_digest_is_sha256_of_the_canonical_content_in_every_rendering(
    local_server: Any, tree: Tree, client: Any
) -> None:
    path = saved_update_plan(local_server, tree, client)
    data = json.loads(path.read_text())
    body = {k: v for k, v in data.items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert data["digest"] == digest
    assert f"Digest: {digest}" in reconcile("show", str(path)).stdout
    assert f"- Digest: `{digest}`" in reconcile("show", str(path), "--format", "markdown").stdout
    assert json.loads(reconcile("show", str(path), "--format", "json").stdout)["digest"] == digest


def test_content_that_does_not_match_its_digest_is_refused(
    local_server: Any, tree: Tree, client: Any
) -> None:
    path = saved_update_plan(local_server, tree, client)

    def cosmetic(data: dict[str, Any]) -> None:
        data["resource_changes"][0]["reasons"] = ["in-transit-differs-from-org-policy"]

    edit(path, cosmetic, redigest=False)
    local_server.counters.reset()
    run = reconcile("apply", str(path), *target(local_server, tree))
    refused(local_server, run)
    assert f"{path}: the plan's content does not match its digest" in run.stderr
    assert "the file was changed after it was made" in run.stderr


def test_a_reason_that_is_none_of_the_forms_is_refused_naming_the_field(
    local_server: Any, tree: Tree, client: Any
) -> None:
    """Reasons are read back as values (apply acts on `adopt-from:OWNER`): a text that
    is none of the forms is a damaged plan, even with a digest made to match."""
    path = saved_update_plan(local_server, tree, client)

    def freeform(data: dict[str, Any]) -> None:
        data["resource_changes"][0]["reasons"] = ["adopt from: team-a"]

    edit(path, freeform)
    local_server.counters.reset()
    run = reconcile("apply", str(path), *target(local_server, tree))
    refused(local_server, run)
    assert "field resource_changes[0].reasons[0]: expected a reason: 'adopt', " in run.stderr


def test_expect_digest_pins_the_reviewed_plan(local_server: Any, tree: Tree, client: Any) -> None:
    path = saved_update_plan(local_server, tree, client)
    reviewed = json.loads(path.read_text())["digest"]
    other = "sha256:" + "0" * 64
    local_server.counters.reset()
    run = reconcile("apply", str(path), *target(local_server, tree), "--expect-digest", other)
    refused(local_server, run)
    assert f"the plan's digest is {reviewed}, not the expected {other}" in run.stderr
    assert "not the plan that was reviewed; nothing was applied" in run.stderr

    bad = reconcile("apply", str(path), *target(local_server, tree), "--expect-digest", "abc")
    refused(local_server, bad, code=1)
    assert "--expect-digest must be sha256: followed by 64 hex digits" in bad.stderr

    # A re-made plan (same changes, new created_at) is a different plan.
    edit(path, lambda data: data.update(created_at="2000-01-01T00:00:00+00:00"))
    again = reconcile("apply", str(path), *target(local_server, tree), "--expect-digest", reviewed)
    refused(local_server, again)

    edit(path, lambda data: None)
    now = json.loads(path.read_text())["digest"]
    ok = reconcile("apply", str(path), *target(local_server, tree), "--expect-digest", now.upper())
    assert ok.exit_code == 0, ok.output
    assert mutating_calls(local_server) == {**NONE, "UpdateTopic": 1}


def test_expect_digest_needs_a_saved_plan(local_server: Any, tree: Tree) -> None:
    tree.write({"orders": {"labels": {"team": "payments"}}})
    run = reconcile(
        "apply", "specs", *target(local_server, tree), "--auto-approve", "--expect-digest",
        "sha256:" + "0" * 64,
    )
    refused(local_server, run, code=1)
    assert "--expect-digest applies to a saved plan" in run.stderr
