"""Resource Manager v3's `TagBindings.ListTagBindings` for Pub/Sub topics: the tags a
topic was created with (`Topic.tags`, input-only and immutable: googleapis
`google/pubsub/v1/pubsub.proto`) are its tag bindings, as the service attaches tags
"by creating a tag binding resource that links the value to the Google Cloud
resource" (Pub/Sub's "Create and manage tags", docs/local-server.md).

The tags are stored with the topic (journaled with it, so they survive a restart and
go with a DeleteTopic) and never returned by the Publisher service; this is their one
reader. A binding (`google/cloud/resourcemanager/v3/tag_bindings.proto`):

- `parent`: the topic's full resource name, `//pubsub.googleapis.com/projects/P/topics/T`;
- for a tag given by namespaced name (`"123/environment": "production"`, the form the
  Topic proto's example uses): `tag_value_namespaced_name` `123/environment/production`
  and `tag_value` `tagValues/N`, N a number derived from that name (the server holds
  no TagKeys or TagValues, so it cannot know the real ID: stable, not Google's);
- for a tag given by IDs (`"tagKeys/123": "tagValues/456"`): `tag_value` as given and
  no namespaced name (the server cannot resolve it);
- `name`: `tagBindings/{parent, URL-encoded}/{tag_value}`, as the proto's example.

Any other parent (a project, a subscription, a topic that does not exist) has no
bindings here: an empty list.
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import quote

from reconciler.localserver.api import protos
from reconciler.localserver.api.paging import token_offset
from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import invalid
from reconciler.localserver.pubsub.state import ServerState
from reconciler.names import split_topic_name

TAG_BINDINGS_SERVICE = "google.cloud.resourcemanager.v3.TagBindings"
PUBSUB_PREFIX = "//pubsub.googleapis.com/"
DEFAULT_PAGE_SIZE = 100  # "If unspecified, the server will use 100 as the default."
MAX_PAGE_SIZE = 300  # "The server allows a maximum of 300 TagBindings to return."


def tag_value_id(namespaced: str) -> str:
    """`tagValues/N` for a namespaced tag value name: N from its SHA-256 (15 digits at
    most, as Google's IDs are), the same on every run."""
    digest = hashlib.sha256(namespaced.encode()).digest()
    return f"tagValues/{int.from_bytes(digest[:6], 'big')}"


def bindings(parent: str, tags: Any) -> list[Any]:
    """The TagBindings of a resource `parent` created with `tags` (key -> value), in
    key order."""
    out = []
    for key in sorted(tags):
        value = tags[key]
        if key.startswith("tagKeys/"):
            tag_value, namespaced = value, ""
        else:
            namespaced = f"{key}/{value}"
            tag_value = tag_value_id(namespaced)
        out.append(protos.TagBinding(
            name=f"tagBindings/{quote(parent, safe='')}/{tag_value}",
            parent=parent,
            tag_value=tag_value,
            tag_value_namespaced_name=namespaced,
        ))
    return out


class TagBindingsService:
    def __init__(self, state: ServerState) -> None:
        self.state = state

    def list_tag_bindings(self, request: Any, call: CallInfo) -> Any:
        parent = request.parent
        if not parent.startswith("//"):
            raise invalid(
                f"Invalid parent {parent!r}: expected a full resource name, e.g. "
                "//pubsub.googleapis.com/projects/PROJECT/topics/TOPIC."
            )
        if request.page_size < 0:
            raise invalid("page_size must not be negative.")
        found: list[Any] = []
        name = parent.removeprefix(PUBSUB_PREFIX)
        if name != parent and split_topic_name(name) is not None:
            topic = self.state.get_topic(name)
            if topic is not None:
                found = bindings(parent, topic.tags)
        size = min(request.page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        token = request.page_token
        start = token_offset(token, token) if token else 0
        end = start + size
        return protos.ListTagBindingsResponse(
            tag_bindings=found[start:end], next_page_token=str(end) if end < len(found) else ""
        )

    def rpcs(self) -> list[Rpc]:
        p = protos
        return [
            Rpc("ListTagBindings", self.list_tag_bindings, p.ListTagBindingsRequest,
                p.ListTagBindingsResponse, lambda r: r.parent.removeprefix(PUBSUB_PREFIX)),
        ]
