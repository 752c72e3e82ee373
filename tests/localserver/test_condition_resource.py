"""Property: the resource a custom constraint's condition sees of a topic is the same
whichever form the topic comes in, all built by the one builder
(reconciler/orgpolicy/cel/resource.py): the local server's protobuf Topic, converted to
reconcile's topic value (`constraints.rest_json`), is what protobuf's JSON writes of
it, the REST JSON shape the service presents to a condition; and the plan's live
topic read from the same message (backends/topicproto.py) gives the same resource for
every field a plan reads (the topic's `state` and `satisfiesPzs` it does not read)."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reconciler.backends.topicproto import observed_pb
from reconciler.localserver.api import protos
from reconciler.localserver.pubsub.constraints import rest_json
from reconciler.orgpolicy.cel.resource import LIVE_FIELDS, shape_resource

REGIONS = ("europe-west1", "europe-west4", "us-central1", "us-east1")
TEXT = st.text(alphabet="abcxyz-_0é", min_size=1, max_size=6)


@st.composite
def topics(draw: Any) -> Any:
    pb = protos.Topic(name=f"projects/p/topics/{draw(st.sampled_from(['a', 'orders']))}")
    pb.labels.update(draw(st.dictionaries(TEXT, st.text(max_size=4), max_size=3)))
    if draw(st.booleans()):
        pb.message_storage_policy.SetInParent()
        pb.message_storage_policy.allowed_persistence_regions.extend(
            sorted(draw(st.sets(st.sampled_from(REGIONS), max_size=3)))
        )
        pb.message_storage_policy.enforce_in_transit = draw(st.booleans())
    if draw(st.booleans()):
        pb.message_retention_duration.seconds = draw(st.integers(0, 31 * 86400))
        pb.message_retention_duration.nanos = draw(st.sampled_from([0, 5 * 10**8, 1234, 10**6]))
    if draw(st.booleans()):
        pb.kms_key_name = "projects/k/locations/us-east1/keyRings/r/cryptoKeys/" + draw(TEXT)
    if draw(st.booleans()):
        pb.schema_settings.schema = "projects/p/schemas/" + draw(TEXT)
        pb.schema_settings.encoding = draw(st.sampled_from([1, 2]))
        pb.schema_settings.first_revision_id = draw(st.sampled_from(["", "r1"]))
        pb.schema_settings.last_revision_id = draw(st.sampled_from(["", "r9"]))
    if draw(st.booleans()):
        source = pb.ingestion_data_source_settings.cloud_storage
        source.bucket = draw(TEXT)
        source.minimum_object_create_time.seconds = draw(st.integers(0, 2**31))
    for name in draw(st.lists(TEXT, max_size=2)):
        transform = pb.message_transforms.add()
        transform.javascript_udf.function_name = name
        transform.disabled = draw(st.booleans())
    if draw(st.booleans()):
        pb.state = 1
        pb.satisfies_pzs = True
    return pb


def _as_protobuf_writes_it(pb: Any) -> dict[str, Any]:
    out: dict[str, Any] = json_format.MessageToDict(pb)
    out.setdefault("labels", {})  # a map has no presence: none is an empty one
    return out


@settings(max_examples=300, deadline=None)
@given(topics())
@example(protos.Topic(name="projects/p/topics/a", message_storage_policy={}))
def test_the_server_topic_is_seen_as_its_rest_json(pb: Any) -> None:
    assert rest_json(pb) == _as_protobuf_writes_it(pb)


@settings(max_examples=300, deadline=None)
@given(topics())
def test_the_plans_live_topic_is_seen_as_the_servers(pb: Any) -> None:
    live = observed_pb(pb)
    seen = shape_resource(live.name, live.shape)
    assert seen == {k: v for k, v in rest_json(pb).items() if k in LIVE_FIELDS}
