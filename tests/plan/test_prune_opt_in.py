"""The per-topic opt-in for pruning a subscribed topic: the Owner document's
`pruneSubscribed` (docs/ownership.md). End to end: validate, plan and apply against
the local server through the real Publisher and Subscriber clients."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reconciler.errors import EXIT_ERROR, EXIT_OK
from tests.specs_support import owner_doc, topic_doc

OWN = {"reconcile-managed": "true", "reconcile-owner": "team-pay"}
OLD = "projects/proj-a/topics/old-orders"
ALSO_OLD = "projects/proj-a/topics/old-refunds"
PATTERN = "projects/proj-a/topics/old-or*"


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _subscribe(subscriber_client: Any, topic: str, name: str) -> None:
    subscriber_client.create_subscription(
        request={"name": f"projects/proj-a/subscriptions/{name}", "topic": topic}
    )


def test_an_opted_in_topic_is_pruned_with_its_subscriptions_and_the_plan_says_why(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any,
    publisher_client: Any, subscriber_client: Any, tmp_path: Path,
) -> None:
    seed("orders", labels=OWN)
    seed("old-orders", labels=OWN)
    seed("old-refunds", labels=OWN)
    _subscribe(subscriber_client, OLD, "billing")
    _subscribe(subscriber_client, ALSO_OLD, "refund-audit")
    root = specs(owner_doc("team-pay", (PATTERN,)), topic_doc("orders"))
    policy = org_policy_file(None)
    line = _line_of(root / "topics.yaml", PATTERN)
    target = ("--emulator", local_server.address, "--org-policy", str(policy))

    saved = tmp_path / "p.json"
    made = run_cli("plan", str(root), *target, "--prune", "--format", "json", "--out", str(saved))
    assert made.exit_code == EXIT_OK, made.stderr
    data = json.loads(made.stdout)
    deletes = {rc["address"]: rc for rc in data["resource_changes"]
               if rc["change"]["actions"] == ["delete"]}
    assert list(deletes) == [OLD]  # old-refunds is subscribed and not opted in: kept
    why = f"the Owner document's pruneSubscribed entry '{PATTERN}' ({root / 'topics.yaml'}:{line})"
    assert deletes[OLD]["prune_subscribed_by"] == why
    assert f"its subscriptions may be detached: allowed by {why}" in deletes[OLD]["reasons"]
    assert [s["name"] for s in deletes[OLD]["subscriptions"]] == [
        "projects/proj-a/subscriptions/billing"
    ]
    [kept] = [d for d in data["diagnostics"] if d["code"] == "prune-subscribed"]
    assert kept["file"] == ALSO_OLD
    text = run_cli("plan", str(root), *target, "--prune").stdout
    assert f"allowed by {why}" in text

    applied = run_cli("apply", str(saved), *target)
    assert applied.exit_code == EXIT_OK, applied.stdout + applied.stderr
    names = {t.name for t in publisher_client.list_topics(request={"project": "projects/proj-a"})}
    assert OLD not in names and ALSO_OLD in names
    assert local_server.counters.get("ListTopicSubscriptions") == 0  # leave given: no re-check


def test_validate_reports_each_mistyped_or_unknown_entry_at_its_line(
    run_cli: Any, specs: Any
) -> None:
    entries = (
        "project/proj-a/topics/old-orders",  # not the form
        "projects/proj-b/topics/old-orders",  # a project the tree does not declare
        "projects/proj-a/topics/old orders",  # not a topic ID
        "projects/Proj-A/topics/old-*",  # not a project ID
        "projects/proj-a/topics/old-*",  # fine
    )
    root = specs(owner_doc("team-pay", entries), topic_doc("orders"))
    file = root / "topics.yaml"
    result = run_cli("validate", str(root))
    assert result.exit_code == EXIT_ERROR
    err = result.stdout + result.stderr  # the diagnostics, then the summary
    assert "Traceback" not in err
    expect = {
        entries[0]: "not a topic name: write projects/PROJECT/topics/TOPIC",
        entries[1]: "names project 'proj-b', where this tree declares no topic, so prune "
                    "never looks there; did you mean 'proj-a'?",
        entries[2]: "may contain only letters, digits",
        entries[3]: "must start with a lowercase letter",
    }
    for entry, message in expect.items():
        line = _line_of(file, entry)
        [found] = [x for x in err.splitlines() if f"topics.yaml:{line}:" in x]
        assert f"pruneSubscribed entry '{entry}'" in found and message in found, err
    assert f"topics.yaml:{_line_of(file, entries[4])}:" not in err
    assert "1 file checked: 4 errors" in err, err
