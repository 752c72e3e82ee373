"""A saved plan's prune, right before each DeleteTopic: a topic that has gained a
subscription since the plan was made is not deleted (unless the plan was made with
leave to detach subscriptions). End to end: the CLI, the local server, the real
Publisher and Subscriber clients."""

from __future__ import annotations

from typing import Any

from apply_support import mutating_calls

from reconciler.errors import EXIT_OK, EXIT_PARTIAL
from tests.specs_support import Tree, owner_doc

KEEP = {"labels": {"team": "pay"}}


def _seed_unused(publisher_client: Any, tree: Tree, run_cli: Any, target: tuple[str, ...]) -> str:
    """`orders` and `unused` applied from the specs of a tree with an Owner document
    (prune needs one); then `unused` leaves them."""
    (tree.specs / "owner.yaml").write_text(owner_doc("team-a"))
    tree.write({"orders": KEEP, "unused": KEEP})
    assert run_cli("apply", "specs", *target, "--auto-approve").exit_code == EXIT_OK
    tree.write({"orders": KEEP})
    return tree.address("unused")


def _apply_counted(run_cli: Any, local_server: Any, plan: str, target: tuple[str, ...]) -> Any:
    """`apply PLAN` with the server's call counters starting from zero."""
    local_server.counters.reset()
    return run_cli("apply", plan, *target)


def test_a_topic_subscribed_since_the_plan_is_not_deleted(
    run_cli: Any, local_server: Any, publisher_client: Any, subscriber_client: Any, tree: Tree
) -> None:
    target = ("--emulator", local_server.address)
    unused = _seed_unused(publisher_client, tree, run_cli, target)
    made = run_cli("plan", "specs", *target, "--prune", "--out", "prune.json")
    assert made.exit_code == EXIT_OK, made.stderr
    assert "      # note: it has no subscriptions" in made.stdout
    sub = f"projects/{tree.project}/subscriptions/late-consumer"
    subscriber_client.create_subscription(request={"name": sub, "topic": unused})

    applied = _apply_counted(run_cli, local_server, "prune.json", target)
    assert applied.exit_code == EXIT_PARTIAL, applied.stdout + applied.stderr
    out = applied.stdout + applied.stderr
    assert unused in out
    assert (f"refusing to delete: it now has a subscription the plan did not show: {sub}; "
            "deleting it would detach it (it stops receiving messages)") in out
    assert "make a new plan" in out and "--prune-subscribed" in out
    assert "Traceback" not in out
    assert publisher_client.get_topic(topic=unused).name == unused  # still there
    assert mutating_calls(local_server)["DeleteTopic"] == 0
    assert local_server.counters.get("ListTopicSubscriptions") == 1

    # A new plan keeps it and names the subscription.
    again = run_cli("plan", "specs", *target, "--prune")
    assert again.exit_code == EXIT_OK
    assert "late-consumer" in again.stdout + again.stderr


def test_a_plan_made_with_prune_subscribed_deletes_without_the_check(
    run_cli: Any, local_server: Any, publisher_client: Any, subscriber_client: Any, tree: Tree
) -> None:
    target = ("--emulator", local_server.address)
    unused = _seed_unused(publisher_client, tree, run_cli, target)
    made = run_cli("plan", "specs", *target, "--prune-subscribed", "--out", "prune.json",
                   "--format", "json")
    assert made.exit_code == EXIT_OK, made.stderr
    assert '"prune_subscribed_by": "--prune-subscribed"' in made.stdout
    subscriber_client.create_subscription(
        request={"name": f"projects/{tree.project}/subscriptions/late", "topic": unused}
    )
    applied = _apply_counted(run_cli, local_server, "prune.json", target)
    assert applied.exit_code == EXIT_OK, applied.stdout + applied.stderr
    assert mutating_calls(local_server)["DeleteTopic"] == 1
    assert local_server.counters.get("ListTopicSubscriptions") == 0


def test_a_topic_still_without_subscriptions_is_deleted_after_the_check(
    run_cli: Any, local_server: Any, publisher_client: Any, tree: Tree
) -> None:
    target = ("--emulator", local_server.address)
    _seed_unused(publisher_client, tree, run_cli, target)
    assert run_cli("plan", "specs", *target, "--prune", "--out", "p.json").exit_code == EXIT_OK
    applied = _apply_counted(run_cli, local_server, "p.json", target)
    assert applied.exit_code == EXIT_OK, applied.stdout + applied.stderr
    assert mutating_calls(local_server)["DeleteTopic"] == 1
    assert local_server.counters.get("ListTopicSubscriptions") == 1


def test_a_delete_whose_subscriptions_cannot_be_re_listed_is_refused(
    run_cli: Any, local_server: Any, publisher_client: Any, tree: Tree
) -> None:
    target = ("--emulator", local_server.address)
    unused = _seed_unused(publisher_client, tree, run_cli, target)
    assert run_cli("plan", "specs", *target, "--prune", "--out", "p.json").exit_code == EXIT_OK
    local_server.faults.add("ListTopicSubscriptions", error="PERMISSION_DENIED")
    applied = _apply_counted(run_cli, local_server, "p.json", target)
    assert applied.exit_code == EXIT_PARTIAL, applied.stdout + applied.stderr
    out = applied.stdout + applied.stderr
    assert f"{unused}: delete FAILED: refusing to delete: its subscriptions could not be " \
        "re-listed right before the delete (" in out
    assert "roles/pubsub.viewer" in out and "nothing deleted" in out
    assert "Traceback" not in out
    assert mutating_calls(local_server)["DeleteTopic"] == 0
    assert publisher_client.get_topic(topic=unused).name == unused
