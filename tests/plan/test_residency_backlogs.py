"""`reconcile residency` says what the gauges count (issue 37): copies in
per-subscription backlogs, each backlog named, the distinct messages as bounds, and
for a region outside the allowed one line of what clears it; with --all-live, the
live topics no spec declares (one made with the real `gcloud`) are covered too.
Through the real Publisher, Subscriber and Monitoring clients and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plan_helpers import publish_from

from tests.localserver.test_gcloud import GCLOUD, gcloud
from tests.specs_support import topic_doc

OWN = {"reconcile-managed": "true", "reconcile-owner": "default"}
T = "projects/proj-a/topics/orders"


def residency(run_cli: Any, server: Any, root: Path, policy: Path, *extra: str) -> Any:
    return run_cli("residency", str(root), "--emulator", server.address,
                   "--org-policy", str(policy), *extra)


def test_two_subscriptions_hold_copies_and_what_clears_them_is_named(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
    publisher_client: Any, subscriber_client: Any,
) -> None:
    seed("orders", labels=OWN, regions=["europe-west4", "us-central1"], eit=False)
    for sub in ("orders-audit", "orders-bi"):
        subscriber_client.create_subscription(request={
            "name": f"projects/proj-a/subscriptions/{sub}", "topic": T})
    for _ in range(8):
        publish_from(publisher_client, T, "europe-west4", 10)  # 80 messages of 10 B
    # Live, the topic still allows europe-west4; its spec and the org no longer do.
    root = specs(topic_doc("orders", storage=(["us-central1"], False)))
    policy = org_policy_file(["us-central1"])

    result = residency(run_cli, local_server, root, policy, "--detailed-exitcode")
    assert result.exit_code == 2, result.stderr
    lines = result.stdout.splitlines()
    [region] = [line for line in lines if line.startswith("    europe-west4: ")]
    assert region.startswith(
        "    europe-west4: 160 unacknowledged copies (1600 B) in 2 subscription backlogs, "
        "oldest ")
    assert region.endswith(
        ": 80 to 160 distinct messages (which ones the backlogs share is not in the "
        "metrics)  NOT ALLOWED by the declared policy, org policy")
    at = lines.index(region)
    assert lines[at + 1].startswith("      orders-audit: 80 unacknowledged (800 B, oldest ")
    assert lines[at + 2].startswith("      orders-bi: 80 unacknowledged (800 B, oldest ")
    assert lines[at + 3].startswith(
        "      to clear europe-west4: acknowledge orders-audit and orders-bi's backlogs or "
        "seek them to now (`gcloud pubsub subscriptions seek SUB --project proj-a "
        "--time=$(date -u +%FT%TZ)`, for each), or detach them (`gcloud pubsub topics "
        "detach-subscription SUB --project proj-a`: drops "
        "what it stores); otherwise retention removes the last message within ")

    # One backlog acknowledged: the other is what is left, and the only one named.
    audit = "projects/proj-a/subscriptions/orders-audit"
    acked = 0
    while acked < 80:
        got = subscriber_client.pull(request={"subscription": audit, "max_messages": 100},
                                     retry=None)
        subscriber_client.acknowledge(request={
            "subscription": audit, "ack_ids": [m.ack_id for m in got.received_messages]})
        acked += len(got.received_messages)
    data = json.loads(residency(run_cli, local_server, root, policy, "--format",
                                "json").stdout)
    [topic] = data["topics"]
    [stored] = topic["regions"]
    assert (stored["unacked_messages"], stored["distinct_messages_min"],
            stored["distinct_messages_max"]) == (80, 80, 80)
    assert [b["subscription"] for b in stored["backlogs"]] == ["orders-bi"]
    assert stored["clears"].startswith(
        "to clear europe-west4: acknowledge orders-bi's backlog or seek it to now")
    assert data["format_version"] == "1.1"


@pytest.mark.skipif(GCLOUD is None, reason="gcloud is not installed")
def test_a_topic_made_outside_review_is_named_and_covered_with_all_live(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
    publisher_client: Any, subscriber_client: Any, tmp_path: Path,
) -> None:
    seed("orders", labels=OWN, regions=["us-central1"], eit=False)
    made = gcloud(local_server.address, tmp_path / "gcloud", "topics", "create",
                  "console-made", project="proj-a")
    assert made.code == 0, made.err
    console = "projects/proj-a/topics/console-made"
    subscriber_client.create_subscription(request={
        "name": "projects/proj-a/subscriptions/console-sub", "topic": console})
    publish_from(publisher_client, console, "europe-west4", 3)
    root = specs(topic_doc("orders", storage=(["us-central1"], False)))
    policy = org_policy_file(["us-central1"])

    # plan names it (never as a change), with the command that adopts it.
    planned = run_cli("plan", str(root), "--emulator", local_server.address,
                      "--org-policy", str(policy))
    assert planned.exit_code == 0, planned.stderr
    assert ("projects/proj-a: warning[undeclared-topics]: 1 live topic in project proj-a "
            "that no spec declares (not planned; `reconcile residency --all-live` reports "
            "where their messages are stored): console-made") in planned.stdout
    assert ("(adopt them with `reconcile import --project proj-a --topic console-made "
            "--out imported` and move the file into the spec tree") in planned.stdout
    assert "No changes." in planned.stdout

    # residency without --all-live: named, with the command that adopts it.
    plain = residency(run_cli, local_server, root, policy, "--detailed-exitcode")
    assert plain.exit_code == 0, plain.stdout + plain.stderr
    assert (
        "  1 live topic of the managed projects that no spec declares (not reported: "
        "--all-live reports where their messages are stored): "
        "projects/proj-a/topics/console-made; adopt them with `reconcile import --project "
        "proj-a --topic console-made --out imported`"
    ) in plain.stdout.splitlines()

    # With it: judged against its live policy (none) and the effective org policy.
    covered = residency(run_cli, local_server, root, policy, "--all-live",
                        "--detailed-exitcode")
    assert covered.exit_code == 2, covered.stderr
    assert covered.stdout.startswith(
        "Residency of 2 topics (1 declared, 1 live that no spec declares) on ")
    assert ("! projects/proj-a/topics/console-made (1 subscription, not declared by any "
            "spec)") in covered.stdout.splitlines()
    assert ("    europe-west4: 3 unacknowledged copies (30 B) in 1 subscription backlog, "
            "oldest ") in covered.stdout
    assert "3 distinct messages  NOT ALLOWED by the org policy" in covered.stdout
    data = json.loads(residency(run_cli, local_server, root, policy, "--all-live",
                                "--format", "json").stdout)
    console_made = next(t for t in data["topics"] if t["topic"] == "console-made")
    assert console_made["declared"] is False and console_made["outside"] == ["europe-west4"]
    assert data["undeclared"] == [console]
