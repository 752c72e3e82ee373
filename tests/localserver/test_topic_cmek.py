"""The CMEK org constraints on CreateTopic through the real clients: a project whose
effective gcp.restrictNonCmekServices denies pubsub.googleapis.com refuses a topic
without a key; gcp.restrictCmekCryptoKeyProjects refuses a key of a project outside
the allowed ones (placed by the server's ancestry). Creation only: an update is not
refused (the constraints apply to newly created resources)."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions

PROJECT = "projects/proj-cmek"
TOPIC = f"{PROJECT}/topics/orders"


def _key(project: str) -> str:
    return f"projects/{project}/locations/us-east1/keyRings/ring/cryptoKeys/key"


def _put(client: Any, constraint: str, values: dict[str, list[str]]) -> None:
    client.create_policy(parent=PROJECT, policy={
        "name": f"{PROJECT}/policies/{constraint}", "spec": {"rules": [{"values": values}]},
    })


def test_a_topic_without_a_key_is_refused_where_cmek_is_required(
    orgpolicy_client: Any, publisher_client: Any
) -> None:
    publisher_client.create_topic(name=f"{PROJECT}/topics/before")  # before the policy
    _put(orgpolicy_client, "gcp.restrictNonCmekServices",
         {"denied_values": ["pubsub.googleapis.com"]})
    with pytest.raises(exceptions.FailedPrecondition) as info:
        publisher_client.create_topic(name=TOPIC)
    assert info.value.message == (  # type: ignore[attr-defined]
        "Constraint `constraints/gcp.restrictNonCmekServices` violated for "
        "`projects/proj-cmek` attempting to create a resource without specifying a KMS "
        "CryptoKey."
    )
    created = publisher_client.create_topic(request={"name": TOPIC, "kms_key_name": _key("k1")})
    assert created.kms_key_name == _key("k1")
    # The existing topic is not refused an update.
    publisher_client.update_topic(request={
        "topic": {"name": f"{PROJECT}/topics/before", "labels": {"a": "b"}},
        "update_mask": {"paths": ["labels"]},
    })


def test_a_key_from_a_project_outside_the_allowed_ones_is_refused(
    local_server: Any, orgpolicy_client: Any, publisher_client: Any
) -> None:
    local_server.set_ancestry("projects/keys-ok", "folders/42")
    _put(orgpolicy_client, "gcp.restrictCmekCryptoKeyProjects",
         {"allowed_values": ["under:folders/42"]})
    with pytest.raises(exceptions.FailedPrecondition, match="restrictCmekCryptoKeyProjects"):
        publisher_client.create_topic(request={"name": TOPIC, "kms_key_name": _key("keys-no")})
    with pytest.raises(exceptions.NotFound):
        publisher_client.get_topic(topic=TOPIC)
    created = publisher_client.create_topic(
        request={"name": TOPIC, "kms_key_name": _key("keys-ok")}
    )
    assert created.kms_key_name == _key("keys-ok")
