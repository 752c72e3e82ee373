"""Against the local server's real semantics: executing a plan's requests and planning
again gives no changes; plan reads with paged ListTopics, never GetTopic; targets."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from reconciler.backends.base import BackendInfo
from reconciler.backends.client_backend import ClientBackend
from reconciler.backends.clients import orgpolicy_client, publisher_client, subscriber_client
from reconciler.orgpolicy.model import Policy
from reconciler.ownership import plan_marker
from reconciler.plan.make import PlanOptions, make_plan
from reconciler.plan.observe import observe
from reconciler.spec.validate import validate_paths
from tests.specs_support import location_policy, topic_doc

OWN = {"reconcile-managed": "true", "reconcile-owner": "default"}


def execute(backend: ClientBackend, plan: Any) -> None:
    """What apply does, minimally: send each request as planned, an update's labels
    merged onto the topic as read now, the marker label set."""
    marker = plan_marker(plan.digest)
    for rc in plan.resource_changes:
        req = rc.request
        if req is None:
            continue
        body = dict(req.topic)
        if req.method == "CreateTopic":
            backend.create_topic({**body, "labels": {**body["labels"], req.marker_label: marker}})
        elif req.method == "UpdateTopic":
            live = backend.get_topic(rc.address)
            assert live is not None
            labels = req.label_merge.onto(live.shape.labels)
            body["labels"] = {**labels, req.marker_label: marker}
            backend.update_topic(body, list(req.update_mask))
        else:
            backend.delete_topic(req.topic["name"])


def test_plan_after_executing_its_requests_is_empty(
    local_server: Any, seed: Any, specs: Any
) -> None:
    local_server.put_policy(
        Policy.from_dict(location_policy("projects/proj-a", ["us-central1", "us-east1"]))
    )
    local_server.put_policy(Policy.from_dict({
        "name": "projects/proj-a/policies/pubsub.enforceInTransitRegions",
        "spec": {"rules": [{"enforce": True}]},
    }))
    seed("adopted", {"team": "old", "owner": "ops"}, ["us-east1"])
    seed("recompute", OWN, ["us-east1"])
    seed("narrow", OWN, ["us-central1", "us-east1"])
    seed("pruned", OWN)
    root = specs(
        topic_doc("adopted", labels={"team": "pay"}, hedging="250ms"),
        topic_doc("recompute", storage="inherit"),
        topic_doc("narrow", storage=(["us-east1"], None)),
        topic_doc("created", storage=(["us-central1"], True)),
        topic_doc("created-inherit", storage="inherit"),
    )
    desired = validate_paths([root]).desired
    backend = ClientBackend(
        publisher_client(local_server.address),
        orgpolicy_client(local_server.address),
        BackendInfo("emulator", local_server.address),
        subscriber=subscriber_client(local_server.address),  # prune sees no subscription
    )
    try:
        pruning = PlanOptions(prune=True)
        first = make_plan(desired, observe(backend, desired, prune=True), pruning)
        assert first.counts() == {"create": 2, "update": 3, "delete": 1, "no-op": 0}
        execute(backend, first)
        second = make_plan(desired, observe(backend, desired, prune=True), pruning)
        assert second.counts()["no-op"] == 5 and not second.has_changes, second.dumps()
        live = backend.get_topic("projects/proj-a/topics/adopted")
        assert live is not None and live.body["labels"]["owner"] == "ops"
    finally:
        backend.close()


def test_plan_pages_list_topics_and_never_gets_each_topic(
    run_cli: Any, local_server: Any, specs: Any, org_policy_file: Any
) -> None:
    names = [f"projects/proj-a/topics/t-{i:05d}" for i in range(1500)]
    names += [f"projects/proj-b/topics/t-{i:05d}" for i in range(10)]
    local_server.seed_topics(names, labels=OWN)
    root = specs(
        *(topic_doc(f"t-{i:05d}") for i in range(0, 1500, 100)),
        topic_doc("t-00003", project="proj-b"),
    )
    local_server.counters.reset()
    result = run_cli(
        "plan", str(root), "--emulator", local_server.address,
        "--org-policy", str(org_policy_file()), "--detailed-exitcode",
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "No changes." in result.stdout
    counts = local_server.counters.snapshot()
    assert counts.get("ListTopics") == 3  # 2 pages for proj-a, 1 for proj-b
    assert counts.get("GetTopic", 0) == 0


def test_pubsub_emulator_host_env_is_a_target(
    run_cli: Any, local_server: Any, specs: Any, org_policy_file: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = specs(topic_doc("orders"))
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    result = run_cli("plan", str(root), "--org-policy", str(org_policy_file()))
    assert result.exit_code == 0, result.stderr
    assert f"Target: emulator {local_server.address}" in result.stdout
    assert "Plan: 1 to create" in result.stdout


def test_local_target_keeps_state_under_dot_reconcile(
    run_cli: Any, specs: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = specs(topic_doc("orders", storage=(["us-east1"], None)))
    monkeypatch.chdir(tmp_path)
    result = run_cli("plan", str(root), "--local", "--detailed-exitcode")
    assert result.exit_code == 2, result.stderr
    assert "Target: local (.reconcile/local)" in result.stdout
    assert "Plan: 1 to create, 0 to update, 0 to delete." in result.stdout
    assert (tmp_path / ".reconcile" / "local").is_dir()


def test_colour_only_on_a_terminal_and_never_with_no_color(
    run_cli: Any, local_server: Any, specs: Any, org_policy_file: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = specs(topic_doc("orders"))
    args = ("plan", str(root), "--emulator", local_server.address,
            "--org-policy", str(org_policy_file()))
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = run_cli(*args, terminal=True).stdout
    assert "\x1b[32m  + topic" in coloured
    monkeypatch.setenv("NO_COLOR", "1")
    plain = run_cli(*args, terminal=True).stdout
    assert "\x1b[" not in plain and '  + topic "projects/proj-a/topics/orders" {' in plain
    assert os.environ["NO_COLOR"] == "1"
