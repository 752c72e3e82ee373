"""The local server enforces the organization's custom constraints and Pub/Sub's
managed transform constraints on CreateTopic, UpdateTopic and the subscription
calls, through the real clients: the service's code, message and ErrorInfo, dry run
only logged, UPDATE of a topic that already violates, and the constraints kept
across a restart of a `--state-dir` server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.backends.clients import orgpolicy_client, publisher_client
from reconciler.localserver import LocalServer
from reconciler.orgpolicy.model import Policy

ORG = "organizations/4242"
PROJECT = "enforced-proj"
TOPICS = f"projects/{PROJECT}/topics"
EU_ONLY = (
    "has(resource.messageStoragePolicy) && "
    "resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r.startsWith('europe-'))"
)
DESCRIPTION = "Topics keep messages in Europe."


def _constraint(name: str = "custom.euOnly", **overrides: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": f"{ORG}/customConstraints/{name}",
        "resource_types": ["pubsub.googleapis.com/Topic"],
        "method_types": ["CREATE", "UPDATE"],
        "condition": EU_ONLY,
        "action_type": "ALLOW",
        "description": DESCRIPTION,
    }
    out.update(overrides)
    return out


def _enforce(server: Any, constraint: str, *, dry_run: bool = False) -> None:
    rules = {"rules": [{"enforce": True}]}
    key = "dryRunSpec" if dry_run else "spec"
    server.put_policy(
        Policy.from_dict({"name": f"projects/{PROJECT}/policies/{constraint}", key: rules})
    )


def _install(server: Any, client: Any, name: str = "custom.euOnly", *,
             dry_run: bool = False, **overrides: Any) -> None:
    """The project under ORG, the constraint created through the API, and enforced
    (or dry-run) for the project."""
    server.set_ancestry(f"projects/{PROJECT}", ORG)
    client.create_custom_constraint(parent=ORG, custom_constraint=_constraint(name, **overrides))
    _enforce(server, name, dry_run=dry_run)


@pytest.fixture
def enforced(local_server: Any, orgpolicy_client: Any) -> Any:
    """custom.euOnly created through the API and enforced on the project."""
    _install(local_server, orgpolicy_client)
    return local_server


def _eu(name: str, region: str = "europe-west1", **labels: str) -> dict[str, Any]:
    return {
        "name": f"{TOPICS}/{name}",
        "labels": labels,
        "message_storage_policy": {"allowed_persistence_regions": [region]},
    }


def test_a_violating_create_is_refused_as_the_service_does(
    enforced: Any, publisher_client: Any
) -> None:
    publisher_client.create_topic(request=_eu("fine"))
    with pytest.raises(exceptions.FailedPrecondition) as info:
        publisher_client.create_topic(request=_eu("in-us", "us-east1"))
    assert info.value.message == (
        'Operation denied by custom org policy: ["customConstraints/custom.euOnly": '
        f'"{DESCRIPTION}"]'
    )
    assert info.value.reason == "CUSTOM_ORG_POLICY_VIOLATION"
    assert info.value.domain == "googleapis.com"
    assert info.value.metadata == {
        "customConstraints": "customConstraints/custom.euOnly",
        "service": "pubsub.googleapis.com",
    }
    with pytest.raises(exceptions.NotFound):
        publisher_client.get_topic(topic=f"{TOPICS}/in-us")


def test_only_the_projects_organization_and_its_policy_count(
    enforced: Any, publisher_client: Any
) -> None:
    # Another project: no policy on custom.euOnly, so nothing is enforced there.
    enforced.set_ancestry("projects/free-proj", ORG)
    elsewhere = {**_eu("xyz", "us-east1"), "name": "projects/free-proj/topics/xyz"}
    publisher_client.create_topic(request=elsewhere)
    # The project's policy without an organization in the ancestry: nothing applies.
    enforced.set_ancestry(f"projects/{PROJECT}", None)
    publisher_client.create_topic(request=_eu("orphan", "us-east1"))


def test_dry_run_only_logs(
    local_server: Any, orgpolicy_client: Any, publisher_client: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _install(local_server, orgpolicy_client, dry_run=True)
    with caplog.at_level("INFO", logger="reconciler.localserver.pubsub.constraints"):
        publisher_client.create_topic(request=_eu("in-us", "us-east1"))
    assert "dry-run custom constraint custom.euOnly would refuse CREATE" in caplog.text


def test_update_of_an_already_violating_topic(
    local_server: Any, orgpolicy_client: Any, publisher_client: Any
) -> None:
    publisher_client.create_topic(request=_eu("legacy", "us-east1"))  # before enforcement
    _install(local_server, orgpolicy_client)
    labels_only = {
        "topic": _eu("legacy", "us-east1", team="a"), "update_mask": {"paths": ["labels"]}
    }
    with pytest.raises(exceptions.FailedPrecondition, match=r"custom\.euOnly"):
        publisher_client.update_topic(request=labels_only)
    assert publisher_client.get_topic(topic=f"{TOPICS}/legacy").labels == {}
    fixed = publisher_client.update_topic(
        request={"topic": _eu("legacy"), "update_mask": {"paths": ["message_storage_policy"]}}
    )
    assert list(fixed.message_storage_policy.allowed_persistence_regions) == ["europe-west1"]


def test_create_only_constraint_leaves_updates_alone(
    local_server: Any, orgpolicy_client: Any, publisher_client: Any
) -> None:
    _install(
        local_server, orgpolicy_client,
        "custom.teamLabel", method_types=["CREATE"], action_type="DENY",
            condition="!('team' in resource.labels)", description="Say which team.",
    )
    with pytest.raises(exceptions.FailedPrecondition, match="Say which team"):
        publisher_client.create_topic(request=_eu("ttt"))
    publisher_client.create_topic(request=_eu("ttt", team="a"))
    publisher_client.update_topic(
        request={"topic": _eu("ttt"), "update_mask": {"paths": ["labels"]}}
    )


def test_every_refusing_constraint_is_named(enforced: Any, orgpolicy_client: Any,
                                            publisher_client: Any) -> None:
    orgpolicy_client.create_custom_constraint(
        parent=ORG,
        custom_constraint=_constraint(
            "custom.noTest", action_type="DENY", condition="resource.name.endsWith('-test')",
            description="No test topics.",
        ),
    )
    _enforce(enforced, "custom.noTest")
    with pytest.raises(exceptions.FailedPrecondition) as info:
        publisher_client.create_topic(request=_eu("a-test", "us-east1"))
    assert info.value.message == (
        'Operation denied by custom org policy: ["customConstraints/custom.euOnly": '
        f'"{DESCRIPTION}", "customConstraints/custom.noTest": "No test topics."]'
    )
    assert info.value.metadata["customConstraints"] == (
        "customConstraints/custom.euOnly,customConstraints/custom.noTest"
    )


def test_an_unevaluable_condition_is_refused_saying_why(
    local_server: Any, orgpolicy_client: Any, publisher_client: Any
) -> None:
    _install(
        local_server, orgpolicy_client,
        "custom.cmek", condition="resource.kmsKeyName.startsWith('projects/keys-')",
    )
    with pytest.raises(exceptions.FailedPrecondition) as info:
        publisher_client.create_topic(request=_eu("nokey"))
    assert "could not evaluate the condition of custom constraint" in info.value.message
    assert "resource.kmsKeyName" in info.value.message


def test_managed_transform_constraints(local_server: Any, publisher_client: Any,
                                       subscriber_client: Any) -> None:
    for constraint in (
        "pubsub.managed.disableTopicMessageTransforms",
        "pubsub.managed.disableSubscriptionMessageTransforms",
    ):
        _enforce(local_server, constraint)
    udf = {"javascript_udf": {"function_name": "f", "code": "function f(m, a) { return m; }"}}
    with pytest.raises(exceptions.FailedPrecondition) as info:
        publisher_client.create_topic(
            request={"name": f"{TOPICS}/ttt", "message_transforms": [udf]}
        )
    assert "constraints/pubsub.managed.disableTopicMessageTransforms" in info.value.message
    assert info.value.reason == "CUSTOM_ORG_POLICY_VIOLATION"
    publisher_client.create_topic(name=f"{TOPICS}/ttt")
    with pytest.raises(exceptions.FailedPrecondition):
        publisher_client.update_topic(
            request={"topic": {"name": f"{TOPICS}/ttt", "message_transforms": [udf]},
                     "update_mask": {"paths": ["message_transforms"]}}
        )
    sub = f"projects/{PROJECT}/subscriptions/sub"
    with pytest.raises(exceptions.FailedPrecondition) as info:
        subscriber_client.create_subscription(
            request={"name": sub, "topic": f"{TOPICS}/ttt", "message_transforms": [udf]}
        )
    assert "disableSubscriptionMessageTransforms" in info.value.message
    subscriber_client.create_subscription(request={"name": sub, "topic": f"{TOPICS}/ttt"})


def test_subscription_custom_constraint(
    local_server: Any, orgpolicy_client: Any, publisher_client: Any, subscriber_client: Any
) -> None:
    _install(
        local_server, orgpolicy_client,
        "custom.shortAck", resource_types=["pubsub.googleapis.com/Subscription"],
            condition="resource.ackDeadlineSeconds <= 60", description="Short deadlines.",
    )
    publisher_client.create_topic(name=f"{TOPICS}/ttt")
    sub = f"projects/{PROJECT}/subscriptions/sub"
    with pytest.raises(exceptions.FailedPrecondition, match="Short deadlines"):
        subscriber_client.create_subscription(
            request={"name": sub, "topic": f"{TOPICS}/ttt", "ack_deadline_seconds": 120}
        )
    subscriber_client.create_subscription(
        request={"name": sub, "topic": f"{TOPICS}/ttt", "ack_deadline_seconds": 30}
    )


def test_constraints_survive_a_restart(tmp_path: Path) -> None:
    with LocalServer(state_dir=tmp_path) as server:
        server.set_ancestry(f"projects/{PROJECT}", ORG)
        client = orgpolicy_client(server.address)
        client.create_custom_constraint(parent=ORG, custom_constraint=_constraint())
        client.create_custom_constraint(
            parent=ORG, custom_constraint=_constraint("custom.gone")
        )
        client.delete_custom_constraint(name=f"{ORG}/customConstraints/custom.gone")
        _enforce(server, "custom.euOnly")
        before = client.get_custom_constraint(name=f"{ORG}/customConstraints/custom.euOnly")
    with LocalServer(state_dir=tmp_path) as server:
        client = orgpolicy_client(server.address)
        listed = [c.name for c in client.list_custom_constraints(parent=ORG)]
        assert listed == [f"{ORG}/customConstraints/custom.euOnly"]
        again = client.get_custom_constraint(name=listed[0])
        assert again.update_time == before.update_time
        with pytest.raises(exceptions.FailedPrecondition, match=r"custom\.euOnly"):
            publisher_client(server.address).create_topic(request=_eu("in-us", "us-east1"))
