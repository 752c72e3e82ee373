"""`reconcile residency` end to end: the CLI against the local server through the real
Publisher, Subscriber and Monitoring clients."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plan_helpers import publish_from

from reconciler.localserver import CLIENT_REGION_KEY
from reconciler.residency.schema import residency_schema
from tests.specs_support import topic_doc

OWN = {"reconcile-managed": "true", "reconcile-owner": "default"}
T = "projects/proj-a/topics/orders"
SUB = "projects/proj-a/subscriptions/orders-pull"



def residency(run_cli: Any, server: Any, root: Path, policy: Path, *extra: str) -> Any:
    return run_cli(
        "residency", str(root), "--emulator", server.address, "--org-policy", str(policy),
        *extra,
    )


def report(run_cli: Any, server: Any, root: Path, policy: Path) -> dict[str, Any]:
    result = residency(run_cli, server, root, policy, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data




def _narrow(publisher: Any, regions: list[str], eit: bool = False) -> None:
    publisher.update_topic(request={
        "topic": {"name": T, "message_storage_policy": {
            "allowed_persistence_regions": regions, "enforce_in_transit": eit}},
        "update_mask": {"paths": ["message_storage_policy"]},
    })


@pytest.mark.parametrize("read_ahead", ["off", "0"])  # in this process; the second one's
def test_messages_left_in_a_removed_region_are_reported_then_nothing_once_acked(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
    publisher_client: Any, subscriber_client: Any, monkeypatch: pytest.MonkeyPatch,
    read_ahead: str,
) -> None:
    monkeypatch.setenv("RECONCILE_READ_AHEAD_FROM", read_ahead)
    seed("orders", labels=OWN, regions=["us-east1", "us-central1"], eit=False)
    subscriber_client.create_subscription(request={
        "name": SUB, "topic": T, "message_retention_duration": {"seconds": 3600},
    })
    publish_from(publisher_client, T, "us-east1", 4)
    _narrow(publisher_client, ["us-central1"])
    publish_from(publisher_client, T, "us-east1", 1)  # stored in us-central1 now
    root = specs(topic_doc("orders", storage=(["us-central1"], False)))
    policy = org_policy_file(["us-central1", "us-east1"])

    local_server.counters.reset()
    data = report(run_cli, local_server, root, policy)
    # The project's topic gauges in one PromQL query and, as they show something
    # stored, its subscription gauges in one more; none through ListTimeSeries.
    assert local_server.counters.for_project("PromQLQuery", "proj-a") == 2
    assert local_server.counters.get("ListTimeSeries") == 0
    [topic] = data["topics"]
    regions = {r["region"]: r for r in topic["regions"]}
    assert regions["us-east1"]["unacked_messages"] == 4
    assert regions["us-east1"]["unacked_bytes"] == 40
    assert [b["subscription"] for b in regions["us-east1"]["backlogs"]] == ["orders-pull"]
    assert regions["us-east1"]["clears"].startswith(
        "to clear us-east1: acknowledge orders-pull's backlog or seek it to now")
    assert regions["us-east1"]["not_allowed_by"] == ["live", "declared"]
    assert 3500 <= regions["us-east1"]["ages_out_within_seconds"] <= 3600
    assert regions["us-central1"]["unacked_messages"] == 1
    assert regions["us-central1"]["not_allowed_by"] == []
    assert topic["outside"] == ["us-east1"]
    assert topic["subscriptions"] == 1
    result = residency(run_cli, local_server, root, policy, "--detailed-exitcode")
    assert result.exit_code == 2, result.stderr
    assert (
        "    us-east1: 4 unacknowledged copies (40 B) in 1 subscription backlog, oldest "
    ) in result.stdout
    assert (": 4 distinct messages  NOT ALLOWED by the live policy, declared policy\n"
            in result.stdout)
    assert "      orders-pull: 4 unacknowledged (40 B, oldest " in result.stdout
    assert ("      to clear us-east1: acknowledge orders-pull's backlog or seek it to now "
            "(`gcloud pubsub subscriptions seek orders-pull --project proj-a "
            "--time=$(date -u +%FT%TZ)`), or detach it (`gcloud pubsub topics "
            "detach-subscription orders-pull --project proj-a`: drops what it "
            "stores); otherwise retention removes the last message within ") in result.stdout
    md = residency(run_cli, local_server, root, policy, "--format", "markdown").stdout
    assert "| `projects/proj-a/topics/orders` | `us-east1` | 4 | 40 B | " in md
    assert " | `orders-pull` 4 | 0 | live policy, declared policy | " in md

    got = subscriber_client.pull(request={"subscription": SUB, "max_messages": 10}, retry=None)
    subscriber_client.acknowledge(
        request={"subscription": SUB, "ack_ids": [m.ack_id for m in got.received_messages]}
    )
    [topic] = report(run_cli, local_server, root, policy)["topics"]
    assert topic["regions"] == [] and topic["outside"] == []
    assert residency(run_cli, local_server, root, policy, "--detailed-exitcode").exit_code == 0


def test_in_transit_refuses_an_outside_puller_and_a_paused_export_is_shown(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
    subscriber_client: Any,
) -> None:
    from google.api_core import exceptions

    local_server.set_destination_location("storage:eu-bucket", "europe-west1")
    seed("orders", labels=OWN, regions=["us-central1"], eit=True)
    subscriber_client.create_subscription(request={"name": SUB, "topic": T})
    subscriber_client.create_subscription(request={
        "name": "projects/proj-a/subscriptions/to-gcs", "topic": T,
        "cloud_storage_config": {"bucket": "eu-bucket"},
    })
    with pytest.raises(exceptions.FailedPrecondition):
        subscriber_client.pull(request={"subscription": SUB, "max_messages": 1},
                        metadata=[(CLIENT_REGION_KEY, "europe-west1")], retry=None)
    root = specs(topic_doc("orders", storage=(["us-central1"], True)))
    policy = org_policy_file(["us-central1"])
    [topic] = report(run_cli, local_server, root, policy)["topics"]
    assert topic["paused_exports"] == [{
        "name": "projects/proj-a/subscriptions/to-gcs", "kind": "cloud_storage",
        "state": "IN_TRANSIT_LOCATION_RESTRICTION",
    }]
    result = residency(run_cli, local_server, root, policy, "--detailed-exitcode")
    assert result.exit_code == 2
    assert "export projects/proj-a/subscriptions/to-gcs (cloud_storage) paused" in result.stdout


def test_refused_metrics_leave_a_subscribed_topic_unchecked_and_exit_2(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
    publisher_client: Any, subscriber_client: Any,
) -> None:
    """Issue 39: with the metrics refused (HTTP 403) while a message is stored in a
    region no policy allows, residency cannot say "nothing stored outside": the topic
    is not checked, said so, and --detailed-exitcode exits 2. A topic that can hold
    nothing (no subscription, no retention) is still clean."""
    seed("orders", labels=OWN, regions=["us-east1", "us-central1"], eit=False)
    seed("quiet", labels=OWN)
    subscriber_client.create_subscription(request={"name": SUB, "topic": T})
    publish_from(publisher_client, T, "us-east1", 1)
    _narrow(publisher_client, ["us-central1"])
    root = specs(topic_doc("orders", storage=(["us-central1"], False)), topic_doc("quiet"))
    policy = org_policy_file(["us-central1"])
    readable = residency(run_cli, local_server, root, policy, "--detailed-exitcode")
    assert readable.exit_code == 2 and "NOT ALLOWED" in readable.stdout

    local_server.faults.add(method="PromQLQuery", error="PERMISSION_DENIED")  # HTTP 403
    refused = residency(run_cli, local_server, root, policy, "--detailed-exitcode")
    assert refused.exit_code == 2, refused.stdout + refused.stderr
    assert "nothing stored outside" not in refused.stdout
    assert ("2 topics: none found storing messages outside the allowed regions or with "
            "an export paused, but 1 could not be checked (figures unknown: see notes)."
            in refused.stdout)
    assert "? projects/proj-a/topics/orders (1 subscription)" in refused.stdout
    assert "    unknown: stored messages: permission denied to read metrics in project " \
        "proj-a (needs monitoring.timeSeries.list, e.g. role roles/monitoring.viewer)" \
        in refused.stdout
    assert "  projects/proj-a/topics/quiet (0 subscriptions)\n    nothing stored" \
        in refused.stdout
    assert residency(run_cli, local_server, root, policy).exit_code == 0  # without the flag
    data = json.loads(residency(run_cli, local_server, root, policy, "--format", "json").stdout)
    unknown = {t["topic"]: t.get("unknown", []) for t in data["topics"]}
    assert len(unknown["orders"]) == 1 and unknown["quiet"] == []


def test_a_project_with_no_subscriptions_and_a_missing_topic_is_clean(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
) -> None:
    seed("orders", labels=OWN)
    root = specs(topic_doc("orders"), topic_doc("later"))
    policy = org_policy_file(None)
    result = residency(run_cli, local_server, root, policy, "--detailed-exitcode")
    assert result.exit_code == 0, result.stderr
    assert "projects/proj-a/topics/later: does not exist" in result.stdout
    assert "nothing stored outside the allowed regions, no export paused" in result.stdout


def test_a_typo_d_project_and_a_broken_spec_exit_1_naming_them(
    run_cli: Any, local_server: Any, specs: Any, org_policy_file: Any, tmp_path: Path,
) -> None:
    root = specs(topic_doc("orders"))
    policy = org_policy_file(None)
    typo = residency(run_cli, local_server, root, policy, "--project", "proj-b")
    assert typo.exit_code == 1
    assert "--project proj-b: no spec declares a topic in this project" in typo.stderr
    assert "did you mean 'proj-a'?" in typo.stderr
    (root / "topics.yaml").write_text("apiVersion: reconcile.pubsub/v1\nkind: Topic\n")
    broken = residency(run_cli, local_server, root, policy)
    assert broken.exit_code == 1
    assert "topics.yaml:" in broken.stderr and "no residency report made" in broken.stderr
    assert "Traceback" not in broken.stderr


def test_google_s_emulator_has_no_monitoring_and_residency_says_unknown(
    run_cli: Any, google_emulator: str, specs: Any, org_policy_file: Any,
) -> None:
    from reconciler.backends.clients import close_client, publisher_client, subscriber_client

    client = publisher_client(google_emulator)
    client.create_topic(request={"name": "projects/proj-a/topics/orders", "labels": OWN})
    close_client(client)
    root = specs(topic_doc("orders"))
    policy = org_policy_file(None)

    def report() -> dict[str, Any]:
        result = run_cli("residency", str(root), "--emulator", google_emulator,
                         "--org-policy", str(policy), "--format", "json")
        assert result.exit_code == 0, result.stderr
        [topic] = json.loads(result.stdout)["topics"]
        return dict(topic)

    # No subscription and no retention: nothing can be stored, no gauge is needed.
    topic = report()
    assert topic["subscriptions"] == 0 and "unknown" not in topic and topic["regions"] == []
    subscriber = subscriber_client(google_emulator)
    subscriber.create_subscription(request={
        "name": "projects/proj-a/subscriptions/orders-pull", "topic": T,
    })
    close_client(subscriber)
    topic = report()
    assert topic["subscriptions"] == 1
    assert any("serves no Cloud Monitoring API" in u for u in topic["unknown"])


def test_the_json_matches_the_published_schema(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
) -> None:
    import jsonschema

    seed("orders", labels=OWN)
    root = specs(topic_doc("orders"))
    data = report(run_cli, local_server, root, org_policy_file(None))
    jsonschema.validate(data, residency_schema())
    published = Path(__file__).parents[2] / "docs" / "residency.schema.json"
    assert json.loads(published.read_text()) == residency_schema(), (
        "docs/residency.schema.json is stale: run `python -m reconciler.residency.schema "
        "> docs/residency.schema.json`"
    )


def test_residency_applies_the_tree_s_acceptances_as_validate_does(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
) -> None:
    """Once residency printed an accepted finding as a plain warning and said nothing of
    an acceptance that had expired: a compliance run the team could not act on."""
    seed("orders", labels=OWN, regions=["us-east1"], eit=False)
    owner = (
        "apiVersion: reconcile.pubsub/v1\nkind: Owner\nmetadata: {name: platform}\nspec:\n"
        "  acceptedFindings:\n"
        '    - {code: org-location-denied, reason: "SEC-3: legacy US publishers"}\n'
        '    - {code: org-in-transit, reason: "old", until: 2001-01-31}\n'
    )
    root = specs(owner, topic_doc("orders", storage=(["us-east1"], False)))
    policy = org_policy_file(["in:eu-locations"], enforce=True)
    validated = run_cli("validate", str(root), "--org-policy", str(policy))
    result = residency(run_cli, local_server, root, policy)
    assert result.exit_code == 0, result.stderr
    for said in (validated.stdout, result.stderr):
        assert "accepted[org-location-denied]" in said, said
        assert "warning[org-location-denied]" not in said, said
        assert "warning[acceptance-expired]" in said, said
