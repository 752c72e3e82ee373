"""`reconcile apply` end to end: the CLI, the real client libraries, the local server."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from typing import Any

from apply_support import Tree, mutating_calls, reconcile, reconcile_process
from google.protobuf import duration_pb2, field_mask_pb2
from google.pubsub_v1.types import Encoding, SchemaSettings, Topic

from reconciler.orgpolicy.snapshot import load_snapshot

OWNED = {"reconcile-managed": "true"}
US = {"allowedPersistenceRegions": ["us-central1", "us-east1"], "enforceInTransit": False}


def target(server: Any, tree: Tree) -> list[str]:
    """Point the CLI at the server, with the snapshot; the server gets the same policy,
    so that what it computes for `inherit` topics agrees with the snapshot."""
    server.seed_policies(load_snapshot(tree.policy))
    return ["--emulator", server.address, "--org-policy", str(tree.policy)]


def three_topics() -> dict[str, dict[str, Any]]:
    return {
        "orders": {"labels": {"team": "payments"}, "messageStoragePolicy": US},
        "refunds": {"labels": {"team": "payments"}, "messageStoragePolicy": "inherit"},
        "audit": {"labels": {"retention": "long"}},
    }


def live(client: Any, name: str) -> Topic:
    topic: Topic = client.get_topic(request={"topic": name})
    return topic


def test_apply_converges_and_a_second_apply_makes_no_mutating_call(server: Any, tree: Tree) -> None:
    tree.write(three_topics())
    first = reconcile("apply", "specs", *target(server, tree), "--auto-approve")
    assert first.code == 0, first.text
    assert "3 applied (3 created" in first.text
    assert mutating_calls(server)["CreateTopic"] == 3

    plan = reconcile("plan", "specs", *target(server, tree), "--detailed-exitcode")
    assert plan.code == 0, plan.text

    server.counters.reset()
    second = reconcile("apply", "specs", *target(server, tree), "--auto-approve")
    assert second.code == 0, second.text
    assert "No changes" in second.text
    assert mutating_calls(server) == {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}


def test_json_format_prints_per_topic_results(server: Any, tree: Tree) -> None:
    tree.write(three_topics())
    run = reconcile("apply", "specs", *target(server, tree), "--auto-approve", "--format", "json")
    assert run.code == 0, run.text
    data = json.loads(run.out)
    assert data["summary"]["applied"] == 3 and data["summary"]["failed"] == 0
    assert {r["address"] for r in data["results"]} == {
        tree.address(n) for n in ("orders", "refunds", "audit")
    }
    assert all(r["status"] == "applied" and r["method"] == "CreateTopic" for r in data["results"])


def test_foreign_labels_retention_and_schema_survive(server: Any, tree: Tree, client: Any) -> None:
    name = tree.address("orders")
    client.create_topic(
        request=Topic(
            name=name,
            labels={"owner": "someone-else", "team": "old"},
            message_retention_duration=duration_pb2.Duration(seconds=7200),
            schema_settings=SchemaSettings(
                schema=f"projects/{tree.project}/schemas/orders-v1", encoding=Encoding.JSON
            ),
        )
    )
    tree.write({"orders": {"labels": {"team": "payments"}, "messageStoragePolicy": US}})
    run = reconcile("apply", "specs", *target(server, tree), "--auto-approve")
    assert run.code == 0, run.text
    topic = live(client, name)
    assert topic.labels["owner"] == "someone-else"
    assert topic.labels["team"] == "payments"
    assert topic.message_retention_duration.total_seconds() == 7200
    assert topic.schema_settings.schema == f"projects/{tree.project}/schemas/orders-v1"
    assert topic.schema_settings.encoding == Encoding.JSON
    assert sorted(topic.message_storage_policy.allowed_persistence_regions) == [
        "us-central1",
        "us-east1",
    ]


def test_saved_plan_is_refused_after_the_topic_changed(
    server: Any, tree: Tree, client: Any
) -> None:
    tree.write(three_topics())
    assert reconcile("apply", "specs", *target(server, tree), "--auto-approve").code == 0
    tree.write(
        {**three_topics(), "orders": {"labels": {"team": "risk"}, "messageStoragePolicy": US}}
    )
    made = reconcile("plan", "specs", *target(server, tree), "--out", "plan.json")
    assert made.code == 0, made.text

    # Someone changes a topic behind the plan's back.
    client.update_topic(
        request={
            "topic": Topic(name=tree.address("audit"), labels={"retention": "short"}),
            "update_mask": field_mask_pb2.FieldMask(paths=["labels"]),
        }
    )
    server.counters.reset()
    run = reconcile("apply", "plan.json", *target(server, tree))
    assert run.code == 1, run.text
    assert "stale" in run.err and f"{tree.address('audit')}: modified since the plan" in run.err
    assert mutating_calls(server) == {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}
    assert live(client, tree.address("orders")).labels["team"] == "payments"


def test_saved_plan_is_refused_after_the_org_policy_changed(server: Any, tree: Tree) -> None:
    """The plan used a snapshot file that changed since: named as a changed snapshot
    (issue 10), not as a changed org policy."""
    tree.write(three_topics())
    made = reconcile("plan", "specs", *target(server, tree), "--out", "plan.json")
    assert made.code == 0, made.text
    tree.set_allowed("in:us-locations, in:eu-locations")
    server.counters.reset()
    run = reconcile("apply", "plan.json", *target(server, tree))
    assert run.code == 1, run.text
    assert f"the org-policy snapshot {tree.policy} changed since plan.json was made" in run.err
    assert "effective org policy changed" not in run.err
    assert mutating_calls(server) == {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}


def test_saved_plan_applies_without_asking_when_fresh(server: Any, tree: Tree) -> None:
    tree.write(three_topics())
    assert reconcile("plan", "specs", *target(server, tree), "--out", "plan.json").code == 0
    run = reconcile("apply", "plan.json", *target(server, tree))
    assert run.code == 0, run.text
    assert reconcile("plan", "specs", *target(server, tree), "--detailed-exitcode").code == 0


def test_refuses_without_a_terminal_and_without_auto_approve(server: Any, tree: Tree) -> None:
    tree.write(three_topics())
    server.counters.reset()
    run = reconcile("apply", "specs", *target(server, tree))
    assert run.code == 1
    assert "refusing to apply without confirmation" in run.err
    assert "--auto-approve" in run.err
    assert sum(server.counters.snapshot().values()) == 0


def many(n: int, team: str) -> dict[str, dict[str, Any]]:
    return {f"t{i:02d}": {"labels": {"team": team}} for i in range(n)}


def test_flaky_updates_still_converge(server: Any, tree: Tree) -> None:
    tree.write(many(12, "a"))
    assert reconcile("apply", "specs", *target(server, tree), "--auto-approve").code == 0
    tree.write(many(12, "b"))
    server.faults.add(method="UpdateTopic", error="UNAVAILABLE", error_fraction=0.2)
    run = reconcile("apply", "specs", *target(server, tree), "--auto-approve")
    assert run.code == 0, run.text
    assert "12 applied" in run.text
    assert server.counters.get("UpdateTopic") >= 12
    plan = reconcile("plan", "specs", *target(server, tree), "--detailed-exitcode")
    assert plan.code == 0, plan.text


def test_one_permission_denied_topic_fails_alone(server: Any, tree: Tree, client: Any) -> None:
    tree.write(many(6, "a"))
    assert reconcile("apply", "specs", *target(server, tree), "--auto-approve").code == 0
    tree.write(many(6, "b"))
    denied = tree.address("t03")
    server.faults.add(method="UpdateTopic", error="PERMISSION_DENIED", resource=denied)
    server.counters.reset()
    run = reconcile("apply", "specs", *target(server, tree), "--auto-approve")
    assert run.code == 1, run.text
    assert "5 applied" in run.text and "1 failed" in run.text
    assert f"{denied} (update):" in run.text and "PERMISSION_DENIED" in run.text
    assert server.counters.get("UpdateTopic") == 6  # permanent: never retried
    for i in range(6):
        want = "a" if i == 3 else "b"
        assert live(client, tree.address(f"t{i:02d}")).labels["team"] == want


def test_prune_never_touches_a_topic_without_the_ownership_label(
    server: Any, tree: Tree, client: Any
) -> None:
    client.create_topic(request=Topic(name=tree.address("foreign"), labels={"team": "x"}))
    client.create_topic(request=Topic(name=tree.address("leftover"), labels=OWNED))
    tree.write({"kept": {"labels": {"team": "payments"}}})
    run = reconcile("apply", "specs", *target(server, tree), "--auto-approve", "--prune")
    assert run.code == 0, run.text
    names = {t.name for t in client.list_topics(request={"project": f"projects/{tree.project}"})}
    assert names == {tree.address("kept"), tree.address("foreign")}
    assert server.counters.get("DeleteTopic") == 1


def _wait_for_line(proc: Any, needle: str, timeout: float = 20.0) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"never saw {needle!r}; got {seen!r}")


def _apply_under_way(server: Any, tree: Tree) -> subprocess.Popen[str]:
    """An apply of 16 slow creates, as a process, once its first topic is created."""
    tree.write(many(16, "a"))
    server.faults.add(method="CreateTopic", delay=0.25)
    proc = reconcile_process(
        "apply", "specs", *target(server, tree), "--auto-approve", "--concurrency", "2",
        cwd=tree.root,
    )
    _wait_for_line(proc, ": created")
    return proc


def test_sigint_midway_reports_and_a_rerun_converges(server: Any, tree: Tree) -> None:
    proc = _apply_under_way(server, tree)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    assert "Apply interrupted" in out and "not attempted" in out
    assert "Not attempted:" in out

    server.faults.clear()
    rerun = reconcile("apply", "specs", *target(server, tree), "--auto-approve")
    assert rerun.code == 0, rerun.text
    assert reconcile("plan", "specs", *target(server, tree), "--detailed-exitcode").code == 0


def test_sigkill_midway_then_a_rerun_converges(server: Any, tree: Tree) -> None:
    proc = _apply_under_way(server, tree)
    proc.kill()
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    time.sleep(0.3)  # let calls the dead client left in flight land on the server

    server.faults.clear()
    rerun = reconcile("apply", "specs", *target(server, tree), "--auto-approve")
    assert rerun.code == 0, rerun.text
    assert reconcile("plan", "specs", *target(server, tree), "--detailed-exitcode").code == 0


def test_on_a_terminal_apply_asks_and_only_yes_applies(
    server: Any, tree: Tree, monkeypatch: Any
) -> None:
    import reconciler.commands.apply as apply_command

    monkeypatch.setattr(apply_command, "_interactive", lambda: True)
    tree.write(three_topics())
    args = ("apply", "specs", *target(server, tree))
    declined = reconcile(*args, input="no\n")
    assert declined.code == 1 and "Apply cancelled; nothing was changed." in declined.err
    assert "Do you want to perform these actions?" in declined.out
    assert mutating_calls(server)["CreateTopic"] == 0
    accepted = reconcile(*args, input="yes\n")
    assert accepted.code == 0, accepted.text
    assert mutating_calls(server)["CreateTopic"] == 3


def test_saved_plan_is_refused_after_the_org_policy_changed_through_the_api(
    server: Any, tree: Tree
) -> None:
    from google.cloud.orgpolicy_v2 import types as op

    from reconciler.backends.clients import orgpolicy_client

    tree.write(three_topics())
    target(server, tree)  # seed the server's Org Policy service from the snapshot
    api = ["--emulator", server.address]  # no --org-policy: the Org Policy API decides
    assert reconcile("plan", "specs", *api, "--out", "plan.json").code == 0
    policies = orgpolicy_client(server.address)
    name = f"projects/{tree.project}/policies/gcp.resourceLocations"
    policies.update_policy(
        policy=op.Policy(
            name=name,
            spec=op.PolicySpec(
                rules=[
                    op.PolicySpec.PolicyRule(
                        values=op.PolicySpec.PolicyRule.StringValues(
                            allowed_values=["in:eu-locations"]
                        )
                    )
                ]
            ),
        )
    )
    server.counters.reset()
    run = reconcile("apply", "plan.json", *api)
    assert run.code == 1, run.text
    assert f"projects/{tree.project}: effective org policy changed" in run.err
    assert mutating_calls(server) == {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}


def test_apply_shows_validation_warnings_in_its_plan(server: Any, tree: Tree) -> None:
    """`apply PATH` makes its plan like `plan` does: validation's warnings are part of
    the plan it shows (once, not again from the live policy), and it still applies."""
    tree.write(
        {
            "rerouted": {
                "messageStoragePolicy": {"allowedPersistenceRegions": ["us-central1"]},
                "publishers": {"regions": ["us-east1"], "messageOrdering": False},
            }
        }
    )
    run = reconcile("apply", "specs", *target(server, tree), "--auto-approve")
    assert run.code == 0, run.text
    assert "warning[publisher-region-rerouted]" in run.err  # validation, as it runs
    plan_part = run.out.split("Warnings:", 1)
    assert len(plan_part) == 2, run.out
    assert plan_part[1].count("warning[publisher-region-rerouted]") == 1
    assert "1 applied (1 created" in run.text
