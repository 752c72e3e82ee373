"""`reconcile apply` end to end: the CLI, the real client libraries, the local server."""

from __future__ import annotations

import json
import signal
import time
from typing import Any

import pytest
from apply_support import mutating_calls, wait_for_topics
from google.protobuf import duration_pb2, field_mask_pb2
from google.pubsub_v1.types import Encoding, SchemaSettings, Topic

from reconciler.orgpolicy.snapshot import load_snapshot
from tests.cli_support import ReconcileProcess, reconcile, start_reconcile
from tests.specs_support import Tree, owner_doc

OWNED = {"reconcile-managed": "true", "reconcile-owner": "default"}
US = {"allowedPersistenceRegions": ["us-central1", "us-east1"], "enforceInTransit": False}


def target(local_server: Any, tree: Tree) -> list[str]:
    """Point the CLI at the server, with the snapshot; the server gets the same policy,
    so that what it computes for `inherit` topics agrees with the snapshot."""
    local_server.seed_policies(load_snapshot(tree.policy))
    return ["--emulator", local_server.address, "--org-policy", str(tree.policy)]


def three_topics() -> dict[str, dict[str, Any]]:
    return {
        "orders": {"labels": {"team": "payments"}, "messageStoragePolicy": US},
        "refunds": {"labels": {"team": "payments"}, "messageStoragePolicy": "inherit"},
        "audit": {"labels": {"retention": "long"}},
    }


def live(client: Any, name: str) -> Topic:
    topic: Topic = client.get_topic(request={"topic": name})
    return topic


def test_apply_converges_and_a_second_apply_makes_no_mutating_call(
    local_server: Any, tree: Tree
) -> None:
    tree.write(three_topics())
    first = reconcile("apply", "specs", *target(local_server, tree), "--auto-approve")
    assert first.exit_code == 0, first.output
    assert "3 applied (3 created" in first.output
    assert mutating_calls(local_server)["CreateTopic"] == 3

    plan = reconcile("plan", "specs", *target(local_server, tree), "--detailed-exitcode")
    assert plan.exit_code == 0, plan.output

    local_server.counters.reset()
    second = reconcile("apply", "specs", *target(local_server, tree), "--auto-approve")
    assert second.exit_code == 0, second.output
    assert "No changes" in second.output
    assert mutating_calls(local_server) == {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}


def test_json_format_prints_per_topic_results(local_server: Any, tree: Tree) -> None:
    tree.write(three_topics())
    run = reconcile(
        "apply", "specs", *target(local_server, tree), "--auto-approve", "--format", "json"
    )
    assert run.exit_code == 0, run.output
    data = json.loads(run.stdout)
    assert data["summary"]["applied"] == 3 and data["summary"]["failed"] == 0
    assert {r["address"] for r in data["results"]} == {
        tree.address(n) for n in ("orders", "refunds", "audit")
    }
    assert all(r["status"] == "applied" and r["method"] == "CreateTopic" for r in data["results"])


def test_foreign_labels_retention_and_schema_survive(
    local_server: Any, tree: Tree, client: Any
) -> None:
    name = tree.address("orders")
    from reconciler.backends.clients import schema_client

    schemas = schema_client(local_server.address)
    schemas.create_schema(
        parent=f"projects/{tree.project}",
        schema={"type_": "AVRO", "definition": '"string"'},
        schema_id="orders-v1",
    )
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
    run = reconcile("apply", "specs", *target(local_server, tree), "--auto-approve")
    assert run.exit_code == 0, run.output
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
    local_server: Any, tree: Tree, client: Any
) -> None:
    tree.write(three_topics())
    assert reconcile("apply", "specs", *target(local_server, tree), "--auto-approve").exit_code == 0
    tree.write(
        {**three_topics(), "orders": {"labels": {"team": "risk"}, "messageStoragePolicy": US}}
    )
    made = reconcile("plan", "specs", *target(local_server, tree), "--out", "plan.json")
    assert made.exit_code == 0, made.output

    # Someone changes a topic behind the plan's back.
    client.update_topic(
        request={
            "topic": Topic(name=tree.address("audit"), labels={"retention": "short"}),
            "update_mask": field_mask_pb2.FieldMask(paths=["labels"]),
        }
    )
    local_server.counters.reset()
    run = reconcile("apply", "plan.json", *target(local_server, tree))
    assert run.exit_code == 4, run.output
    assert (
        "stale" in run.stderr and f"{tree.address('audit')}: modified since the plan" in run.stderr
    )
    assert mutating_calls(local_server) == {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}
    assert live(client, tree.address("orders")).labels["team"] == "payments"


def test_saved_plan_is_refused_after_the_org_policy_changed(local_server: Any, tree: Tree) -> None:
    """The plan used a snapshot file that changed since: named as a changed snapshot
    (issue 10), not as a changed org policy."""
    tree.write(three_topics())
    made = reconcile("plan", "specs", *target(local_server, tree), "--out", "plan.json")
    assert made.exit_code == 0, made.output
    tree.set_allowed("in:us-locations, in:eu-locations")
    local_server.counters.reset()
    run = reconcile("apply", "plan.json", *target(local_server, tree))
    assert run.exit_code == 4, run.output
    assert f"the org-policy snapshot {tree.policy} changed since plan.json was made" in run.stderr
    assert "effective org policy changed" not in run.stderr
    assert mutating_calls(local_server) == {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}


def test_saved_plan_applies_without_asking_when_fresh(local_server: Any, tree: Tree) -> None:
    tree.write(three_topics())
    assert (
        reconcile("plan", "specs", *target(local_server, tree), "--out", "plan.json").exit_code == 0
    )
    run = reconcile("apply", "plan.json", *target(local_server, tree))
    assert run.exit_code == 0, run.output
    assert (
        reconcile("plan", "specs", *target(local_server, tree), "--detailed-exitcode").exit_code
        == 0
    )


def test_refuses_without_a_terminal_and_without_auto_approve(local_server: Any, tree: Tree) -> None:
    tree.write(three_topics())
    local_server.counters.reset()
    run = reconcile("apply", "specs", *target(local_server, tree))
    assert run.exit_code == 1
    assert "refusing to apply without confirmation" in run.stderr
    assert "--auto-approve" in run.stderr
    assert sum(local_server.counters.snapshot().values()) == 0


def many(n: int, team: str) -> dict[str, dict[str, Any]]:
    return {f"t{i:02d}": {"labels": {"team": team}} for i in range(n)}


def test_flaky_updates_still_converge(local_server: Any, tree: Tree) -> None:
    tree.write(many(12, "a"))
    assert reconcile("apply", "specs", *target(local_server, tree), "--auto-approve").exit_code == 0
    tree.write(many(12, "b"))
    local_server.faults.add(method="UpdateTopic", error="UNAVAILABLE", error_fraction=0.2)
    run = reconcile("apply", "specs", *target(local_server, tree), "--auto-approve")
    assert run.exit_code == 0, run.output
    assert "12 applied" in run.output
    assert local_server.counters.get("UpdateTopic") >= 12
    plan = reconcile("plan", "specs", *target(local_server, tree), "--detailed-exitcode")
    assert plan.exit_code == 0, plan.output


def test_one_permission_denied_topic_fails_alone(
    local_server: Any, tree: Tree, client: Any
) -> None:
    tree.write(many(6, "a"))
    assert reconcile("apply", "specs", *target(local_server, tree), "--auto-approve").exit_code == 0
    tree.write(many(6, "b"))
    denied = tree.address("t03")
    local_server.faults.add(method="UpdateTopic", error="PERMISSION_DENIED", resource=denied)
    local_server.counters.reset()
    run = reconcile("apply", "specs", *target(local_server, tree), "--auto-approve")
    assert run.exit_code == 3, run.output
    assert "5 applied" in run.output and "1 failed" in run.output
    assert f"{denied} (update):" in run.output and "PERMISSION_DENIED" in run.output
    assert local_server.counters.get("UpdateTopic") == 6  # permanent: never retried
    for i in range(6):
        want = "a" if i == 3 else "b"
        assert live(client, tree.address(f"t{i:02d}")).labels["team"] == want


def test_prune_never_touches_a_topic_without_the_ownership_label(
    local_server: Any, tree: Tree, client: Any
) -> None:
    client.create_topic(request=Topic(name=tree.address("foreign"), labels={"team": "x"}))
    owned = {**OWNED, "reconcile-owner": "team-a"}  # prune needs an Owner document
    client.create_topic(request=Topic(name=tree.address("leftover"), labels=owned))
    client.create_topic(request=Topic(name=tree.address("another-trees"), labels=OWNED))
    tree.write({"kept": {"labels": {"team": "payments"}}})
    (tree.specs / "owner.yaml").write_text(owner_doc("team-a"))
    run = reconcile("apply", "specs", *target(local_server, tree), "--auto-approve", "--prune")
    assert run.exit_code == 0, run.output
    names = {t.name for t in client.list_topics(request={"project": f"projects/{tree.project}"})}
    assert names == {tree.address(t) for t in ("kept", "foreign", "another-trees")}
    assert local_server.counters.get("DeleteTopic") == 1
    # One DeleteTopic, no retry: one attempt (the read before it changes nothing).
    assert f"{tree.address('leftover')}: deleted\n" in run.output, run.output
    assert "attempts" not in run.output


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



def _assert_a_rerun_converges(local_server: Any, tree: Tree) -> None:
    """After an interrupted apply: applying again succeeds, and then nothing is left."""
    rerun = reconcile("apply", "specs", *target(local_server, tree), "--auto-approve")
    assert rerun.exit_code == 0, rerun.output
    assert (
        reconcile("plan", "specs", *target(local_server, tree), "--detailed-exitcode").exit_code
        == 0
    )

def _start_apply(local_server: Any, tree: Tree) -> ReconcileProcess:
    """An apply of 16 creates, two at a time, as a process."""
    tree.write(many(16, "a"))
    return start_reconcile(
        "apply", "specs", *target(local_server, tree), "--auto-approve", "--concurrency", "2",
        cwd=tree.root,
    )


def _apply_under_way(local_server: Any, tree: Tree) -> ReconcileProcess:
    """An apply of 16 slow creates, as a process, once its first topic is created."""
    local_server.faults.add(method="CreateTopic", delay=0.25)
    run = _start_apply(local_server, tree)
    _wait_for_line(run.proc, ": created")
    return run


@pytest.mark.parametrize(
    ("signum", "code", "notice"),
    [(signal.SIGINT, 130, "Interrupt:"), (signal.SIGTERM, 143, "Terminate signal (SIGTERM):")],
)
def test_a_stop_signal_midway_reports_and_a_rerun_converges(
    local_server: Any, tree: Tree, client: Any, signum: int, code: int, notice: str
) -> None:
    """Ctrl-C, and SIGTERM (what CI runners send on cancel): calls in flight finish, the
    summary says what was and was not done, and the rerun makes exactly the rest."""
    run = _apply_under_way(local_server, tree)
    run.proc.send_signal(signum)
    interrupted = run.finish(timeout=30)
    assert interrupted.exit_code == code, interrupted.output
    assert f"{notice} starting no new calls" in interrupted.output
    assert "Apply interrupted" in interrupted.stdout and "not attempted" in interrupted.stdout
    assert "Not attempted:" in interrupted.stdout
    assert "Traceback" not in interrupted.stderr

    local_server.faults.clear()
    made = len(list(client.list_topics(request={"project": f"projects/{tree.project}"})))
    assert 0 < made < 16
    local_server.counters.reset()
    _assert_a_rerun_converges(local_server, tree)
    assert local_server.counters.get("CreateTopic") == 16 - made
    assert local_server.counters.get("UpdateTopic") == 0


def test_sigkill_midway_then_a_rerun_converges(
    local_server: Any, tree: Tree, client: Any
) -> None:
    """Killed with creates in flight: the server still carries them out (they are held
    until the process is dead, then let through and seen landing), and a rerun over
    what they left converges."""
    creates = local_server.faults.hold("CreateTopic", count=16)
    run = _start_apply(local_server, tree)
    creates.wait_arrived(1)[0].release()
    _wait_for_line(run.proc, ": created")
    creates.wait_arrived(3)  # two more creates in flight, held
    run.proc.kill()
    assert run.finish(timeout=30).exit_code == -signal.SIGKILL
    in_flight = [call.resource for call in creates.arrived() if call.outcome is None]
    assert len(in_flight) == 2

    local_server.faults.clear()  # the dead client's calls go on to the handler
    wait_for_topics(client, in_flight)
    _assert_a_rerun_converges(local_server, tree)


def test_on_a_terminal_apply_asks_and_only_yes_applies(
    local_server: Any, tree: Tree, monkeypatch: Any
) -> None:
    import reconciler.commands.apply as apply_command

    monkeypatch.setattr(apply_command, "_interactive", lambda: True)
    tree.write(three_topics())
    args = ("apply", "specs", *target(local_server, tree))
    declined = reconcile(*args, input="no\n")
    assert declined.exit_code == 1 and "Apply cancelled; nothing was changed." in declined.stderr
    assert "Do you want to perform these actions?" in declined.stdout
    assert mutating_calls(local_server)["CreateTopic"] == 0
    accepted = reconcile(*args, input="yes\n")
    assert accepted.exit_code == 0, accepted.output
    assert mutating_calls(local_server)["CreateTopic"] == 3


def test_saved_plan_is_refused_after_the_org_policy_changed_through_the_api(
    local_server: Any, tree: Tree
) -> None:
    from google.cloud.orgpolicy_v2 import types as op

    from reconciler.backends.clients import orgpolicy_client

    tree.write(three_topics())
    target(local_server, tree)  # seed the server's Org Policy service from the snapshot
    api = ["--emulator", local_server.address]  # no --org-policy: the Org Policy API decides
    assert reconcile("plan", "specs", *api, "--out", "plan.json").exit_code == 0
    policies = orgpolicy_client(local_server.address)
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
    local_server.counters.reset()
    run = reconcile("apply", "plan.json", *api)
    assert run.exit_code == 4, run.output
    assert f"projects/{tree.project}: effective org policy changed" in run.stderr
    assert mutating_calls(local_server) == {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}


def test_apply_shows_validation_warnings_in_its_plan(local_server: Any, tree: Tree) -> None:
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
    run = reconcile("apply", "specs", *target(local_server, tree), "--auto-approve")
    assert run.exit_code == 0, run.output
    assert "publisher-region-rerouted" not in run.stderr  # said once: in the plan
    plan_part = run.stdout.split("Warnings:", 1)
    assert len(plan_part) == 2, run.stdout
    assert plan_part[1].count("warning[publisher-region-rerouted]") == 1
    assert "1 applied (1 created" in run.output
