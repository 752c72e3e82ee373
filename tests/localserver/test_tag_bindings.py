"""Tags through Resource Manager: a topic created with `tags` has them as tag bindings,
listed by the real `TagBindingsClient` (google-cloud-resource-manager) with the topic's
full resource name as parent; never returned by the Publisher service; kept across a
restart with --state and gone with the topic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.backends.clients import insecure_channel
from reconciler.backends.clients import publisher_client as make_publisher
from reconciler.localserver import LocalServer
from reconciler.localserver.resourcemanager.tagbindings import tag_value_id

TOPIC = "projects/proj-alpha/topics/orders"
PARENT = f"//pubsub.googleapis.com/{TOPIC}"
TAGS = {"123/environment": "production", "tagKeys/77": "tagValues/456"}


def tag_bindings_client(address: str) -> Any:
    from google.cloud.resourcemanager_v3 import TagBindingsClient
    from google.cloud.resourcemanager_v3.services.tag_bindings.transports import (
        TagBindingsGrpcTransport,
    )

    return TagBindingsClient(transport=TagBindingsGrpcTransport(channel=insecure_channel(address)))


def listed(client: Any, parent: str = PARENT, **kw: Any) -> list[tuple[str, str, str, str]]:
    return [
        (b.name, b.parent, b.tag_value, b.tag_value_namespaced_name)
        for b in client.list_tag_bindings(request={"parent": parent, **kw})
    ]


EXPECTED = [
    (f"tagBindings/%2F%2Fpubsub.googleapis.com%2Fprojects%2Fproj-alpha%2Ftopics%2Forders/"
     f"{tag_value_id('123/environment/production')}",
     PARENT, tag_value_id("123/environment/production"), "123/environment/production"),
    ("tagBindings/%2F%2Fpubsub.googleapis.com%2Fprojects%2Fproj-alpha%2Ftopics%2Forders/"
     "tagValues/456", PARENT, "tagValues/456", ""),
]


def test_a_topics_tags_are_its_bindings_across_a_restart(tmp_path: Path) -> None:
    with LocalServer(state_dir=tmp_path) as server:
        publisher = make_publisher(server.address)
        created = publisher.create_topic(request={"name": TOPIC, "tags": TAGS})
        assert not created.tags  # input-only: never returned by Pub/Sub
        publisher.create_topic(name="projects/proj-alpha/topics/untagged")
        client = tag_bindings_client(server.address)
        assert listed(client) == EXPECTED
        assert listed(client, "//pubsub.googleapis.com/projects/proj-alpha/topics/untagged") == []
        # paged: one at a time, the client's pager follows the token
        pages = client.list_tag_bindings(request={"parent": PARENT, "page_size": 1}).pages
        assert [len(p.tag_bindings) for p in pages] == [1, 1]
        assert not publisher.get_topic(topic=TOPIC).tags
        assert not any(t.tags for t in publisher.list_topics(project="projects/proj-alpha"))
    with LocalServer(state_dir=tmp_path) as again:  # durable with the topic
        client = tag_bindings_client(again.address)
        assert listed(client) == EXPECTED
        make_publisher(again.address).delete_topic(topic=TOPIC)
        assert listed(client) == []


def test_parents_without_bindings_and_a_malformed_one(local_server: Any) -> None:
    client = tag_bindings_client(local_server.address)
    assert listed(client) == []  # no such topic
    assert listed(client, "//cloudresourcemanager.googleapis.com/projects/123") == []
    with pytest.raises(exceptions.InvalidArgument) as info:
        listed(client, TOPIC)
    assert "expected a full resource name" in str(info.value.message)


def test_googles_rest_client_lists_them(local_server: Any) -> None:
    """`GET /v3/tagBindings?parent=...` (tag_bindings.proto's binding), sent by the
    client library's own REST transport."""
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.resourcemanager_v3 import TagBindingsClient

    make_publisher(local_server.address).create_topic(request={"name": TOPIC, "tags": TAGS})
    client = TagBindingsClient(
        transport="rest", credentials=AnonymousCredentials(),
        client_options=ClientOptions(api_endpoint=f"http://{local_server.address}"),
    )
    assert listed(client) == EXPECTED
