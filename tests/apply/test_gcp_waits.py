"""Behaving like Google Cloud while applying (issue 13): creates cost what the plan
already knows (no GetTopic before CreateTopic), a recently created project's
"retry this operation" refusals are waited out, and a new topic's read-back is
polled and then only warned about. Through `reconcile apply`, the real clients and
the local server's fault injection and RPC counters."""

from __future__ import annotations

import threading
from typing import Any

from google.pubsub_v1.types import Topic

from reconciler.orgpolicy.snapshot import load_snapshot
from tests.cli_support import reconcile
from tests.specs_support import Tree

# The service's words (FAILED_PRECONDITION, knative-gcp #1701; 400, terraform-provider-
# google #4349), shortened.
NOT_PROPAGATED = (
    "The requested message storage policy contains the following GCP regions that are "
    "not allowed by the project's organization policy: us-east1. If the project was "
    "recently created, you may need to wait a few minutes for the organization policy "
    "to take effect."
)
NO_REGION_YET = (
    "Topic cannot be created or updated due to an organization policy that does not "
    "allow message storage in any GCP region where Cloud Pub/Sub is present. If the "
    "topic's project was recently created, please retry this operation in a few minutes."
)


def target(local_server: Any, tree: Tree) -> list[str]:
    local_server.seed_policies(load_snapshot(tree.policy))
    return ["--emulator", local_server.address, "--org-policy", str(tree.policy)]


def topics(n: int) -> dict[str, dict[str, Any]]:
    return {f"topic-{i:03d}": {"labels": {"team": "a"}} for i in range(n)}


def test_creates_cost_one_create_and_one_read_back_each(local_server: Any, tree: Tree) -> None:
    tree.write(topics(25))
    local_server.counters.reset()
    run = reconcile("apply", "specs", *target(local_server, tree), "--auto-approve")
    assert run.exit_code == 0, run.output
    assert "25 applied (25 created" in run.output
    # The plan's one ListTopics already saw they do not exist: no GetTopic before any
    # CreateTopic, only the read-back after it (and the plan's one ListSubscriptions).
    assert local_server.counters.snapshot() == {
        "ListTopics": 1, "ListSubscriptions": 1, "CreateTopic": 25, "GetTopic": 25
    }


def test_a_create_answered_already_exists_reads_once_and_counts_as_done(
    local_server: Any, tree: Tree, client: Any
) -> None:
    tree.write(topics(1))
    # The topic appears between the plan (which saw it absent) and the CreateTopic,
    # with the declared settings: an earlier, killed apply, or a concurrent one.
    hold = local_server.faults.hold("CreateTopic", count=1)
    result: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: result.update(
            run=reconcile("apply", "specs", *target(local_server, tree), "--auto-approve")
        )
    )
    local_server.counters.reset()
    worker.start()
    held = hold.wait_arrived(1)[0]
    client.create_topic(
        request=Topic(
            name=tree.address("topic-000"),
            labels={"team": "a", "reconcile-managed": "true", "reconcile-owner": "default"},
        )
    )
    held.release()
    worker.join()
    run = result["run"]
    assert run.exit_code == 0, run.output
    assert "already existed with the declared settings" in run.output
    # Apply's CreateTopic (ALREADY_EXISTS) and one read of the topic; ours is the other.
    assert local_server.counters.snapshot() == {
        "ListTopics": 1, "ListSubscriptions": 1, "CreateTopic": 2, "GetTopic": 1
    }


def test_a_recently_created_project_is_waited_for_and_converges(
    local_server: Any, tree: Tree
) -> None:
    tree.write(topics(3))
    # The project's first five CreateTopic calls answer as a project whose org policy
    # has not propagated yet.
    local_server.faults.add(
        method="CreateTopic",
        error="FAILED_PRECONDITION",
        error_next=5,
        resource=f"projects/{tree.project}",
        message=NOT_PROPAGATED,
    )
    run = reconcile(
        "apply", "specs", *target(local_server, tree), "--auto-approve", "--propagation-wait", "120"
    )
    assert run.exit_code == 0, run.output
    waiting = [line for line in run.output.splitlines() if "waiting up to 120 s" in line]
    assert len(waiting) == 1, run.output  # said once for the project, not per topic
    assert f"projects/{tree.project}:" in waiting[0]
    assert "organization policy" in waiting[0] and "recently created" in waiting[0]
    assert "3 applied (3 created" in run.output
    assert "waited for the org policy to propagate" in run.output
    assert local_server.counters.get("CreateTopic") == 3 + 5
    again = reconcile("plan", "specs", *target(local_server, tree), "--detailed-exitcode")
    assert again.exit_code == 0, again.output


def test_a_400_asking_to_retry_this_operation_is_waited_for_too(
    local_server: Any, tree: Tree
) -> None:
    tree.write(topics(1))
    local_server.faults.add(
        method="CreateTopic", error="INVALID_ARGUMENT", error_next=1, message=NO_REGION_YET
    )
    run = reconcile("apply", "specs", *target(local_server, tree), "--auto-approve")
    assert run.exit_code == 0, run.output
    assert "1 applied (1 created" in run.output
    assert local_server.counters.get("CreateTopic") == 2


def test_other_failed_preconditions_stay_permanent(local_server: Any, tree: Tree) -> None:
    tree.write(topics(1))
    local_server.faults.add(
        method="CreateTopic",
        error="FAILED_PRECONDITION",
        message="The requested message storage policy contains regions that are not allowed.",
    )
    run = reconcile("apply", "specs", *target(local_server, tree), "--auto-approve")
    assert run.exit_code == 3, run.output
    assert "FAILED_PRECONDITION" in run.output and "not allowed" in run.output
    assert "waiting up to" not in run.output
    assert local_server.counters.get("CreateTopic") == 1


def test_propagation_wait_is_bounded_and_says_so(local_server: Any, tree: Tree) -> None:
    tree.write(topics(1))
    local_server.faults.add(
        method="CreateTopic", error="FAILED_PRECONDITION", message=NOT_PROPAGATED
    )
    run = reconcile(
        "apply", "specs", *target(local_server, tree), "--auto-approve", "--propagation-wait", "0"
    )
    assert run.exit_code == 3, run.output
    failed = [line for line in run.output.splitlines() if "create FAILED" in line]
    assert len(failed) == 1, run.output
    assert "FAILED_PRECONDITION" in failed[0] and "recently created" in failed[0]
    assert "--propagation-wait" in failed[0]
    assert local_server.counters.get("CreateTopic") == 1


def test_read_back_polls_then_converges_without_a_warning(local_server: Any, tree: Tree) -> None:
    tree.write(topics(1))
    address = tree.address("topic-000")
    local_server.faults.add(method="GetTopic", error="NOT_FOUND", error_next=4, resource=address)
    run = reconcile("apply", "specs", *target(local_server, tree), "--auto-approve")
    assert run.exit_code == 0, run.output
    assert "warning" not in run.output
    assert local_server.counters.get("GetTopic") == 5


def test_read_back_that_never_sees_the_topic_warns_without_failing(
    local_server: Any, tree: Tree
) -> None:
    tree.write(topics(2))
    address = tree.address("topic-001")
    local_server.faults.add(method="GetTopic", error="NOT_FOUND", resource=address)
    run = reconcile(
        "apply", "specs", *target(local_server, tree), "--auto-approve", "--readback-wait", "0.5"
    )
    assert run.exit_code == 0, run.output
    line = next(x for x in run.output.splitlines() if x.startswith(address))
    assert "created; warning: created, but still not visible on read-back" in line
    assert "--readback-wait" in line
    assert "2 applied (2 created" in run.output and "0 failed" in run.output
    assert local_server.counters.get("GetTopic") >= 3  # one good read-back + polls of the other
