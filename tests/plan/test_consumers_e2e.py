"""Subscriptions and stored messages in `reconcile plan`, end to end: the CLI against
the local server through the real Publisher, Subscriber and Monitoring clients."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plan_helpers import publish_from

from reconciler.localserver import CLIENT_REGION_KEY
from tests.specs_support import owner_doc, topic_doc

OWN = {"reconcile-managed": "true", "reconcile-owner": "default"}
TEAM_A = {"reconcile-managed": "true", "reconcile-owner": "team-a"}  # prune needs an owner
T = "projects/proj-a/topics/orders"



def _plan(run_cli: Any, server: Any, root: Path, policy: Path, *extra: str) -> Any:
    return run_cli(
        "plan", str(root), "--emulator", server.address, "--org-policy", str(policy), *extra
    )


def _json(run_cli: Any, server: Any, root: Path, policy: Path, *extra: str) -> dict[str, Any]:
    result = _plan(run_cli, server, root, policy, "--format", "json", *extra)
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _change(data: dict[str, Any], address: str = T) -> dict[str, Any]:
    (rc,) = [rc for rc in data["resource_changes"] if rc["address"] == address]
    return rc




def _narrowing_with_messages_left(
    seed: Any, specs: Any, publisher_client: Any, subscriber_client: Any, count: int
) -> tuple[str, Any]:
    """orders in us-east1 and us-central1 with a pull subscription holding `count`
    messages published in us-east1, and a spec narrowing it to us-central1: the
    subscription's name and the spec tree."""
    seed("orders", labels=OWN, regions=["us-east1", "us-central1"], eit=False)
    sub = "projects/proj-a/subscriptions/orders-pull"
    subscriber_client.create_subscription(request={"name": sub, "topic": T})
    publish_from(publisher_client, T, "us-east1", count)
    return sub, specs(topic_doc("orders", storage=(["us-central1"], False)))


def test_narrowing_reports_messages_left_in_the_removed_region_then_none_once_acked(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
    publisher_client: Any, subscriber_client: Any,
) -> None:
    sub, root = _narrowing_with_messages_left(
        seed, specs, publisher_client, subscriber_client, 3
    )
    policy = org_policy_file(["us-central1", "us-east1"])

    rc = _change(_json(run_cli, local_server, root, policy))
    assert rc["change"]["actions"] == ["update"]
    assert rc["subscriptions"] == [
        {"name": sub, "kind": "pull", "state": "ACTIVE", "backlog": None}
    ]
    [left] = rc["left_behind"]
    assert (left["region"], left["messages"], left["bytes"]) == ("us-east1", 3, 30)
    assert 0 <= left["oldest_age_seconds"] < 3600
    text = _plan(run_cli, local_server, root, policy).stdout
    # The residency report's words: copies in named backlogs, and what clears them.
    assert (
        "3 unacknowledged copies (30 B) in 1 subscription backlog: 3 distinct messages "
        "stay stored in us-east1, which the new policy no longer allows (oldest "
    ) in text
    assert (
        "a policy change does not move stored messages; to clear us-east1: acknowledge "
        "orders-pull's backlog or seek it to now (`gcloud pubsub subscriptions seek "
        "orders-pull --project proj-a --time=$(date -u +%FT%TZ)`), or detach it (`gcloud "
        "pubsub topics detach-subscription orders-pull --project proj-a`: drops what it "
        "stores); otherwise retention "
        "removes the last message within "
    ) in text
    assert "orders-pull (pull)" in text
    assert [b["subscription"] for b in left["backlogs"]] == ["orders-pull"]
    assert (left["distinct_messages_min"], left["distinct_messages_max"]) == (3, 3)

    got = subscriber_client.pull(request={"subscription": sub, "max_messages": 10}, retry=None)
    subscriber_client.acknowledge(
        request={"subscription": sub, "ack_ids": [m.ack_id for m in got.received_messages]}
    )
    rc = _change(_json(run_cli, local_server, root, policy))
    assert "left_behind" not in rc
    # Nothing to act on: a note, not a warning, in the document and in the text.
    assert rc["notes"] == [
        "nothing unacknowledged is stored in the removed regions (by the by-region gauges)"
    ]
    assert not any("nothing unacknowledged" in w for w in rc["warnings"])
    text = _plan(run_cli, local_server, root, policy).stdout
    assert "      # note: nothing unacknowledged is stored in the removed regions" in text
    assert "# warning: nothing unacknowledged" not in text


def test_one_message_left_behind_is_said_in_the_singular(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
    publisher_client: Any, subscriber_client: Any,
) -> None:
    """Issue 46: "1 distinct message stay stored" read wrong; the verb agrees."""
    _, root = _narrowing_with_messages_left(
        seed, specs, publisher_client, subscriber_client, 1
    )
    text = _plan(run_cli, local_server, root, org_policy_file(["us-central1", "us-east1"])).stdout
    assert (
        "1 unacknowledged copy (10 B) in 1 subscription backlog: 1 distinct message "
        "stays stored in us-east1, which the new policy no longer allows"
    ) in text
    assert "stay stored" not in text


@pytest.mark.parametrize("read_ahead", ["0", "off"])
def test_left_behind_figures_cost_two_promql_queries_per_project(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
    publisher_client: Any, subscriber_client: Any, monkeypatch: pytest.MonkeyPatch,
    read_ahead: str,
) -> None:
    """Each project's figures are asked for as the diff of the project ends (through
    the read-ahead's second process, or this one's threads), and each is its own."""
    monkeypatch.setenv("RECONCILE_READ_AHEAD_FROM", read_ahead)
    stored = {"proj-a": 2, "proj-b": 3, "proj-c": 4}  # messages per topic
    docs = []
    for project, count in stored.items():
        for name in ("orders", "refunds"):
            seed(name, labels=OWN, regions=["us-east1", "us-central1"], eit=False,
                 project=project)
            topic = f"projects/{project}/topics/{name}"
            subscriber_client.create_subscription(request={
                "name": f"projects/{project}/subscriptions/{name}-pull", "topic": topic})
            publish_from(publisher_client, topic, "us-east1", count)
            docs.append(topic_doc(name, project=project, storage=(["us-central1"], False)))
    root = specs(*docs)
    local_server.counters.reset()
    data = _json(run_cli, local_server, root, org_policy_file(None))
    for project, count in stored.items():
        # Messages, bytes and oldest age of both topics: one query per project; and
        # as they found messages stored, one of the subscriptions that hold them.
        assert local_server.counters.for_project("PromQLQuery", project) == 2
        for name in ("orders", "refunds"):
            [left] = _change(data, f"projects/{project}/topics/{name}")["left_behind"]
            assert (left["region"], left["messages"], left["bytes"]) == (
                "us-east1", count, 10 * count)
            assert left["oldest_age_seconds"] is not None
    assert local_server.counters.get("ListTimeSeries") == 0


def test_enabling_in_transit_warns_the_pull_subscriber_and_pull_is_refused_after_apply(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
    subscriber_client: Any,
) -> None:
    from google.api_core import exceptions

    seed("orders", labels=OWN, regions=["us-central1"], eit=False)
    sub = "projects/proj-a/subscriptions/orders-pull"
    subscriber_client.create_subscription(request={"name": sub, "topic": T})
    root = specs(topic_doc("orders", storage=(["us-central1"], True)))
    policy = org_policy_file(["us-central1"])
    text = _plan(run_cli, local_server, root, policy).stdout
    assert "pull subscriptions orders-pull (pull): Pull and StreamingPull from outside " \
        "us-central1 will be refused (FAILED_PRECONDITION)" in text

    applied = run_cli(
        "apply", str(root), "--emulator", local_server.address, "--org-policy", str(policy),
        "--auto-approve",
    )
    assert applied.exit_code == 0, applied.stderr
    with pytest.raises(exceptions.FailedPrecondition):
        subscriber_client.pull(
            request={"subscription": sub, "max_messages": 1},
            metadata=[(CLIENT_REGION_KEY, "europe-west1")],
            retry=None,
        )


def test_a_paused_export_is_a_warning_on_the_topic_even_with_no_change(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
    subscriber_client: Any,
) -> None:
    local_server.set_destination_location("bigquery:proj-a.sales", "europe-west1")
    seed("orders", labels=OWN, regions=["us-central1"], eit=True)
    subscriber_client.create_subscription(request={
        "name": "projects/proj-a/subscriptions/to-bq", "topic": T,
        "bigquery_config": {"table": "proj-a.sales.orders"},
    })
    root = specs(topic_doc("orders", storage=(["us-central1"], True)))
    policy = org_policy_file(["us-central1"])
    result = _plan(run_cli, local_server, root, policy, "--detailed-exitcode")
    assert result.exit_code == 0, result.stderr  # a warning, not a change
    assert "warning[export-paused]" in result.stdout
    assert "to-bq (BigQuery export, IN_TRANSIT_LOCATION_RESTRICTION)" in result.stdout


def test_prune_keeps_a_subscribed_topic_unless_prune_subscribed(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
    publisher_client: Any, subscriber_client: Any,
) -> None:
    seed("orders", labels=TEAM_A)
    seed("old-orders", labels=TEAM_A)
    seed("unused", labels=TEAM_A)
    old = "projects/proj-a/topics/old-orders"
    subscriber_client.create_subscription(
        request={"name": "projects/proj-a/subscriptions/billing", "topic": old}
    )
    publish_from(publisher_client, old, "us-central1", 2)
    root = specs(topic_doc("orders"), owner_doc("team-a"))
    policy = org_policy_file(None)

    data = _json(run_cli, local_server, root, policy, "--prune")
    deleted = [rc["address"] for rc in data["resource_changes"] if rc["change"]["actions"]
               == ["delete"]]
    assert deleted == ["projects/proj-a/topics/unused"]
    unused = _change(data, "projects/proj-a/topics/unused")
    assert (unused["warnings"], unused["notes"]) == ([], ["it has no subscriptions"])
    [kept] = [d for d in data["diagnostics"] if d["code"] == "prune-subscribed"]
    assert kept["file"] == old
    assert "billing (pull, 2 unacknowledged)" in kept["message"]

    applied = run_cli(
        "apply", str(root), "--emulator", local_server.address, "--org-policy", str(policy),
        "--auto-approve", "--prune",
    )
    assert applied.exit_code == 0, applied.stderr
    assert publisher_client.get_topic(topic=old).name == old  # still there

    data = _json(run_cli, local_server, root, policy, "--prune-subscribed")
    rc = _change(data, old)
    assert rc["change"]["actions"] == ["delete"]
    assert rc["subscriptions"] == [{
        "name": "projects/proj-a/subscriptions/billing", "kind": "pull", "state": "ACTIVE",
        "backlog": 2,
    }]


def test_a_topic_renamed_in_the_specs_is_flagged(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
) -> None:
    seed("orders", labels={**OWN, "team": "pay"}, regions=["us-central1"], eit=False)
    root = specs(topic_doc("orders-v2", labels={"team": "pay"}, storage=(["us-central1"], False)))
    policy = org_policy_file(None)
    rc = _change(_json(run_cli, local_server, root, policy), "projects/proj-a/topics/orders-v2")
    assert rc["change"]["actions"] == ["create"]
    assert any(w.startswith("probable rename of projects/proj-a/topics/orders ")
               for w in rc["warnings"])


def test_no_permission_to_list_subscriptions_or_read_metrics_is_said_once_per_project(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
) -> None:
    seed("orders", labels=TEAM_A, regions=["us-east1", "us-central1"], eit=False)
    seed("refunds", labels=TEAM_A, regions=["us-east1", "us-central1"], eit=False)
    seed("retired", labels=TEAM_A)
    local_server.faults.add(method="ListSubscriptions", error="PERMISSION_DENIED")
    local_server.faults.add(method="PromQLQuery", error="PERMISSION_DENIED")  # HTTP 403
    root = specs(
        topic_doc("orders", storage=(["us-central1"], False)),
        topic_doc("refunds", storage=(["us-central1"], False)),
        owner_doc("team-a"),
    )
    policy = org_policy_file(None)
    data = _json(run_cli, local_server, root, policy, "--prune")
    [unknown] = [d for d in data["diagnostics"] if d["code"] == "subscriptions-unknown"]
    assert unknown["file"] == "proj-a"
    assert "cannot list subscriptions in proj-a (permission denied; needs " \
        "pubsub.subscriptions.list, e.g. roles/pubsub.viewer)" in unknown["message"]
    rc = _change(data)
    assert rc["left_behind_unknown"].startswith("permission denied to read metrics in project "
                                                "proj-a (needs monitoring.timeSeries.list, "
                                                "e.g. role roles/monitoring.viewer)")
    # Unknown subscriptions: prune does not delete by surprise.
    assert [rc["address"] for rc in data["resource_changes"]
            if rc["change"]["actions"] == ["delete"]] == []
    [kept] = [d for d in data["diagnostics"] if d["code"] == "prune-subscribed"]
    assert "its subscriptions are unknown" in kept["message"]
    residency = run_cli("residency", str(root), "--emulator", local_server.address,
                        "--org-policy", str(policy))
    assert residency.exit_code == 0, residency.stderr
    assert "roles/monitoring.viewer" in residency.stdout
    assert "roles/pubsub.viewer" in residency.stdout


def test_the_read_ahead_process_reads_the_subscriptions_too(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
    publisher_client: Any, subscriber_client: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RECONCILE_READ_AHEAD_FROM", "0")  # a large tree's way, always
    seed("orders", labels=OWN, regions=["us-east1", "us-central1"], eit=False)
    subscriber_client.create_subscription(
        request={"name": "projects/proj-a/subscriptions/orders-pull", "topic": T}
    )
    publish_from(publisher_client, T, "us-east1", 2)
    # No change that removes a region: no metric is read at all.
    same = specs(topic_doc("orders", labels={"team": "a"}, storage=(["us-east1", "us-central1"],
                                                                   False)))
    local_server.counters.reset()
    _json(run_cli, local_server, same, org_policy_file(None))
    counts = local_server.counters.snapshot()
    assert (counts["ListSubscriptions"], counts.get("PromQLQuery", 0)) == (1, 0)
    root = specs(topic_doc("orders", storage=(["us-central1"], True)))
    local_server.counters.reset()
    rc = _change(_json(run_cli, local_server, root, org_policy_file(None)))
    assert [s["name"] for s in rc["subscriptions"]] == ["projects/proj-a/subscriptions/orders-pull"]
    assert [(x["region"], x["messages"]) for x in rc["left_behind"]] == [("us-east1", 2)]
    assert any(w.startswith("pull subscriptions orders-pull (pull)") for w in rc["warnings"])
    counts = local_server.counters.snapshot()
    # Messages, bytes and oldest age of the removed region: one PromQL query; and as
    # it found messages, one of the subscriptions that hold them.
    assert (counts["ListSubscriptions"], counts["PromQLQuery"]) == (1, 2)
    assert [b["subscription"] for b in rc["left_behind"][0]["backlogs"]] == ["orders-pull"]
    assert counts.get("ListTimeSeries", 0) == 0


def test_ctrl_c_while_the_gauges_are_read_ends_the_plan_at_once(
    local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
) -> None:
    """The gauges are read on threads of the plan's process (read-ahead off) while it
    goes on; interrupted while it waits for a slow Cloud Monitoring, the plan exits 130
    at once, not when the read times out (--timeout 120)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    seed("orders", labels=OWN, regions=["us-east1", "us-central1"], eit=False)
    root = specs(topic_doc("orders", storage=(["us-central1"], False)))
    local_server.faults.add(method="PromQLQuery", delay=300.0)
    local_server.counters.reset()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "plan", str(root), "--emulator",
         local_server.address, "--org-policy", str(org_policy_file(None)), "--timeout", "120"],
        env={**os.environ, "RECONCILE_READ_AHEAD_FROM": "off"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        for _ in range(600):  # until the plan is waiting for the gauges
            if local_server.counters.get("PromQLQuery") or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert local_server.counters.get("PromQLQuery") == 1
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)  # a read left to time out takes 120 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
