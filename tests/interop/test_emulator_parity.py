"""The local server beside Google's Pub/Sub emulator (`gcloud beta emulators pubsub
start`), measured: the same client code, Google's own Python clients on gRPC and on
REST, runs against both, and each row of docs/local-server.md's comparison table that
this module names is asserted cell by cell, so the table cannot drift from what the
two servers do. Each probe works in a project of its own (the emulator is shared by
the module). Skipped, with the reason printed, only where gcloud or its emulator
component is absent (the suite's `google_emulator` fixture)."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from google.api_core import exceptions
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials

CALL = {"retry": None, "timeout": 60}


@dataclass
class Probe:
    """Clients of one server, and a project of the probe's own."""

    address: str
    project: str
    publisher: Any
    subscriber: Any
    orgpolicy: Any

    def name(self, kind: str, resource: str) -> str:
        return f"projects/{self.project}/{kind}/{resource}"

    @property
    def topic(self) -> str:
        return self.name("topics", "probe-topic")

    @property
    def subscription(self) -> str:
        return self.name("subscriptions", "probe-sub")

    def rest_clients(self) -> tuple[Any, Any]:
        from google.pubsub_v1 import PublisherClient, SubscriberClient

        options = ClientOptions(api_endpoint=f"http://{self.address}")
        return tuple(  # type: ignore[return-value]
            cls(transport="rest", client_options=options, credentials=AnonymousCredentials())
            for cls in (PublisherClient, SubscriberClient)
        )

    def get(self, path: str) -> tuple[int, bytes]:
        """A plain HTTP GET on the server's REST face."""
        try:
            with urllib.request.urlopen(f"http://{self.address}{path}", timeout=60) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()


    def post(self, path: str, body: Any) -> int:
        """A plain HTTP POST of JSON on the server's REST face: its status."""
        request = urllib.request.Request(
            f"http://{self.address}{path}", data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as err:
            return int(err.code)


def _probe(address: str, project: str) -> Iterator[Probe]:
    from reconciler.backends.clients import orgpolicy_client, publisher_client, subscriber_client

    probe = Probe(
        address,
        project,
        publisher_client(address),
        subscriber_client(address),
        orgpolicy_client(address),
    )
    probe.publisher.create_topic(name=probe.topic)
    probe.subscriber.create_subscription(name=probe.subscription, topic=probe.topic)
    yield probe
    for client in (probe.publisher, probe.subscriber, probe.orgpolicy):
        client.transport.close()


def _outcome(call: Callable[[], Any]) -> str:
    """"OK", or the status the server answered."""
    try:
        call()
    except exceptions.GoogleAPICallError as err:
        return err.grpc_status_code.name if err.grpc_status_code else f"HTTP {err.code}"
    return "OK"


def _publish(p: Probe, **message: Any) -> str:
    return _outcome(lambda: p.publisher.publish(
        topic=p.topic, messages=[{"data": b"m", **message}], **CALL))


def _rest_round_trip(p: Probe) -> str:
    """Google's Python REST clients (each call carries `$alt=json;enum-encoding=int`)."""
    publisher, subscriber = p.rest_clients()
    topic, sub = p.name("topics", "rest-topic"), p.name("subscriptions", "rest-sub")

    def calls() -> None:
        publisher.create_topic(name=topic, **CALL)
        subscriber.create_subscription(name=sub, topic=topic, **CALL)
        publisher.publish(topic=topic, messages=[{"data": b"x"}], **CALL)
        pulled = subscriber.pull(subscription=sub, max_messages=5, **CALL)
        subscriber.acknowledge(
            subscription=sub, ack_ids=[m.ack_id for m in pulled.received_messages], **CALL
        )
        publisher.get_topic(topic=topic, **CALL)

    return _outcome(calls)


def _partial_response(p: Probe) -> str:
    status, body = p.get(f"/v1/{p.topic}?fields=name&prettyPrint=false")
    if status != 200:
        return f"HTTP {status}"
    compact_name_only = json.dumps({"name": p.topic}, separators=(",", ":")).encode()
    return "honoured" if body == compact_name_only else "ignored"


def _unknown_parameter(p: Probe) -> str:
    status, _ = p.get(f"/v1/{p.topic}?%24unknownParameter=1")
    return "refused" if status == 400 else "ignored"


def _jsonp(p: Probe) -> str:
    status, _ = p.get(f"/v1/{p.topic}?callback=steal")
    return "refused" if status == 400 else "ignored"


def _big_ack(p: Probe) -> str:
    """600 KB of ack IDs (the service refuses over 512 KiB): the server's own ack ID,
    repeated."""
    p.publisher.publish(topic=p.topic, messages=[{"data": b"x"}], **CALL)
    pulled = p.subscriber.pull(subscription=p.subscription, max_messages=1, **CALL)
    ack_id = pulled.received_messages[0].ack_id
    ids = [ack_id] * (600_000 // (len(ack_id) + 2))
    return _outcome(lambda: p.subscriber.acknowledge(
        subscription=p.subscription, ack_ids=ids, **CALL))


def _dead_letter(p: Probe, expire_last: bool = False) -> str:
    """A subscription with a dead-letter policy of 5 attempts, its message nacked 5
    times (the last delivery left to expire with `expire_last`), then pulled once more
    (Google's emulator forwards only then; the local server does not wait for it): what
    the dead-letter subscription receives ("forwarded N": the delivery count attribute;
    the attributes the service adds, each named)."""
    dead_topic, dead_sub = p.name("topics", "dead"), p.name("subscriptions", "dead-sub")
    source = p.name("subscriptions", "dl-source")
    p.publisher.create_topic(name=dead_topic, **CALL)
    p.subscriber.create_subscription(name=dead_sub, topic=dead_topic, **CALL)
    p.subscriber.create_subscription(request={
        "name": source, "topic": p.topic,
        "dead_letter_policy": {"dead_letter_topic": dead_topic, "max_delivery_attempts": 5}},
        **CALL)
    p.publisher.publish(topic=p.topic, messages=[{"data": b"poison"}], **CALL)
    for attempt in range(5):
        got = p.subscriber.pull(subscription=source, max_messages=1, **CALL).received_messages
        seconds = 1 if expire_last and attempt == 4 else 0
        p.subscriber.modify_ack_deadline(
            subscription=source, ack_ids=[got[0].ack_id], ack_deadline_seconds=seconds, **CALL)
    if expire_last:
        time.sleep(1.5)  # the lease's own deadline, not a timing bound
    again = p.subscriber.pull(
        request={"subscription": source, "max_messages": 1, "return_immediately": True}, **CALL)
    if again.received_messages:
        return f"delivered again: attempt {again.received_messages[0].delivery_attempt}"
    got = p.subscriber.pull(subscription=dead_sub, max_messages=1, **CALL).received_messages
    if not got:
        return "not forwarded"
    attributes = got[0].message.attributes
    names = ", ".join(sorted(k for k in attributes if k.startswith("CloudPubSub")))
    return f"forwarded {attributes.get(DELIVERY_COUNT)}: {names}"


def _update_sub(p: Probe, paths: list[str], **fields: Any) -> str:
    return _outcome(lambda: p.subscriber.update_subscription(request={
        "subscription": {"name": p.subscription, **fields}, "update_mask": {"paths": paths}},
        **CALL))


def _create_sub(p: Probe, **fields: Any) -> str:
    return _outcome(lambda: p.subscriber.create_subscription(request={
        "name": p.name("subscriptions", "configured"), "topic": p.topic, **fields}, **CALL))


def _create_topic(p: Probe, **fields: Any) -> str:
    return _outcome(lambda: p.publisher.create_topic(request={
        "name": p.name("topics", "extras"), **fields}, **CALL))


KINESIS = {
    "stream_arn": "arn:aws:kinesis:us-east-1:111:stream/s",
    "consumer_arn": "arn:aws:kinesis:us-east-1:111:stream/s/consumer/c:1",
    "aws_role_arn": "arn:aws:iam::111:role/r",
    "gcp_service_account": "ingest@parity.iam.gserviceaccount.com",
}


def _returned_extras(p: Probe) -> str:
    """What GetTopic returns of tags and of an ingestion source's state sent on
    create."""
    name = p.name("topics", "extras")
    p.publisher.create_topic(request={
        "name": name, "tags": {"123/environment": "production"},
        "ingestion_data_source_settings": {"aws_kinesis": {
            **KINESIS, "state": "CONFLICTING_REGION_CONSTRAINTS"}}}, **CALL)
    got = p.publisher.get_topic(topic=name, **CALL)
    tags = "tags returned" if got.tags else "no tags"
    return f"{tags}, {got.ingestion_data_source_settings.aws_kinesis.state.name}"


def _udf(code: str = "function f(m) { return m; }", name: str = "f") -> dict[str, Any]:
    return {"javascript_udf": {"function_name": name, "code": code}}


UPPER = "function up(m) { return {data: m.data.toUpperCase(), attributes: m.attributes}; }"
THROWS = "function bad(m) { throw new Error('no ' + m.data); }"


def _topic_udf_on_publish(p: Probe, code: str, name: str, data: bytes) -> str:
    """A topic with the UDF, one message published and pulled: its data, or the
    Publish's status."""
    topic, sub = p.name("topics", "transformed"), p.name("subscriptions", "transformed")
    p.publisher.create_topic(request={"name": topic, "message_transforms": [_udf(code, name)]},
                             **CALL)
    p.subscriber.create_subscription(name=sub, topic=topic, **CALL)
    status = _outcome(lambda: p.publisher.publish(
        topic=topic, messages=[{"data": data}], **CALL))
    if status != "OK":
        return status
    got = p.subscriber.pull(subscription=sub, max_messages=1, **CALL).received_messages
    stored = got[0].message.data
    return stored.decode() if len(stored) <= 100 else f"stored {len(stored)} bytes"


def _dead_letter_after_a_failing_udf(p: Probe) -> str:
    """A subscription whose UDF throws, with a dead-letter policy of 5 attempts: what
    each of 5 pulls hands out (nacked at once), then what the dead-letter subscription
    gets (the attributes the service adds, each named)."""
    dead_topic, dead_sub = p.name("topics", "dead"), p.name("subscriptions", "dead-sub")
    source = p.name("subscriptions", "udf-source")
    p.publisher.create_topic(name=dead_topic, **CALL)
    p.subscriber.create_subscription(name=dead_sub, topic=dead_topic, **CALL)
    p.subscriber.create_subscription(request={
        "name": source, "topic": p.topic, "message_transforms": [_udf(THROWS, "bad")],
        "dead_letter_policy": {"dead_letter_topic": dead_topic, "max_delivery_attempts": 5}},
        **CALL)
    p.publisher.publish(topic=p.topic, messages=[{"data": b"poison"}], **CALL)
    handed = 0
    for _ in range(6):  # Google's emulator forwards at the pull after the fifth nack
        got = p.subscriber.pull(request={
            "subscription": source, "max_messages": 1, "return_immediately": True},
            **CALL).received_messages
        handed += len(got)
        if got:
            p.subscriber.modify_ack_deadline(
                subscription=source, ack_ids=[got[0].ack_id], ack_deadline_seconds=0, **CALL)
    got = p.subscriber.pull(subscription=dead_sub, max_messages=1, **CALL).received_messages
    if not got:
        return f"handed out {handed}, not forwarded"
    names = ", ".join(sorted(k for k in got[0].message.attributes if k.startswith("CloudPubSub")))
    return f"handed out {handed}, forwarded: {names}"


def _tag_bindings(p: Probe) -> str:
    """Resource Manager's ListTagBindings for a topic created with a tag."""
    from google.cloud.resourcemanager_v3 import TagBindingsClient
    from google.cloud.resourcemanager_v3.services.tag_bindings.transports import (
        TagBindingsGrpcTransport,
    )

    from reconciler.backends.clients import insecure_channel

    name = p.name("topics", "tagged")
    p.publisher.create_topic(request={"name": name, "tags": {"123/environment": "production"}},
                             **CALL)
    client = TagBindingsClient(
        transport=TagBindingsGrpcTransport(channel=insecure_channel(p.address)))
    found: list[str] = []
    status = _outcome(lambda: found.extend(
        b.tag_value_namespaced_name for b in client.list_tag_bindings(
            request={"parent": f"//pubsub.googleapis.com/{name}"}, **CALL)))
    return ", ".join(found) if status == "OK" else status


DELIVERY_COUNT = "CloudPubSubDeadLetterSourceDeliveryCount"
FORWARD = (
    f"{DELIVERY_COUNT}, CloudPubSubDeadLetterSourceSubscription, "
    "CloudPubSubDeadLetterSourceSubscriptionProject, CloudPubSubDeadLetterSourceTopicPublishTime"
)
DEAD_LETTER_ATTRIBUTES = f"forwarded 5: {FORWARD}"
# The attribute the service adds when a subscription's transform failed on the message
SMT_FORWARD = FORWARD.replace(
    "Count, ", "Count, CloudPubSubDeadLetterSourceSMTErrorMessage, ", 1)


@dataclass
class Row:
    id: str
    probe: Callable[[Probe], str]
    local: str
    emulator: str


ROWS = [
    Row("topics: create, get, list, delete", lambda p: _outcome(lambda: (
        p.publisher.get_topic(topic=p.topic, **CALL),
        list(p.publisher.list_topics(project=f"projects/{p.project}", **CALL)),
        p.publisher.delete_topic(topic=p.topic, **CALL))), "OK", "OK"),
    Row("UpdateTopic of labels", lambda p: _outcome(lambda: p.publisher.update_topic(request={
        "topic": {"name": p.topic, "labels": {"team": "x"}},
        "update_mask": {"paths": ["labels"]}}, **CALL)), "OK", "INVALID_ARGUMENT"),
    Row("storage policy of a zone refused", lambda p: _outcome(lambda: p.publisher.create_topic(
        request={"name": p.name("topics", "zoned"),
                 "message_storage_policy": {"allowed_persistence_regions": ["us-east1-b"]}},
        **CALL)), "INVALID_ARGUMENT", "OK"),
    Row("Org Policy API", lambda p: _outcome(lambda: list(p.orgpolicy.list_policies(
        parent=f"projects/{p.project}", **CALL))), "OK", "UNIMPLEMENTED"),
    Row("1,001 messages per Publish", lambda p: _outcome(lambda: p.publisher.publish(
        topic=p.topic, messages=[{"data": b"m"}] * 1001, **CALL)),
        "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    Row("101 attributes", lambda p: _publish(p, attributes={f"k{i}": "v" for i in range(101)}),
        "INVALID_ARGUMENT", "OK"),
    Row("attribute key of 257 bytes", lambda p: _publish(p, attributes={"k" * 257: "v"}),
        "INVALID_ARGUMENT", "OK"),
    Row("attribute value of 1,025 bytes", lambda p: _publish(p, attributes={"k": "v" * 1025}),
        "INVALID_ARGUMENT", "OK"),
    Row("ordering key of 1,025 bytes", lambda p: _publish(p, ordering_key="o" * 1025),
        "INVALID_ARGUMENT", "OK"),
    Row("Publish request of 10,000,100 bytes", lambda p: _outcome(lambda: p.publisher.publish(
        topic=p.topic, messages=[{"data": b"x" * 10_000_040}], **CALL)),
        "INVALID_ARGUMENT", "OK"),
    Row("Acknowledge of 600 KB", _big_ack, "INVALID_ARGUMENT", "OK"),
    Row("ack deadline of 5 s", lambda p: _outcome(lambda: p.subscriber.create_subscription(
        request={"name": p.name("subscriptions", "short-deadline"), "topic": p.topic,
                 "ack_deadline_seconds": 5}, **CALL)), "INVALID_ARGUMENT", "OK"),
    Row("topic ID of 256 characters", lambda p: _outcome(lambda: p.publisher.create_topic(
        name=p.name("topics", "a" * 256), **CALL)), "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    Row("65 labels", lambda p: _outcome(lambda: p.publisher.create_topic(request={
        "name": p.name("topics", "labelled"), "labels": {f"k{i}": "v" for i in range(65)}},
        **CALL)), "INVALID_ARGUMENT", "OK"),
    Row("label value of 64 characters", lambda p: _outcome(lambda: p.publisher.create_topic(
        request={"name": p.name("topics", "labelled"), "labels": {"k": "v" * 64}}, **CALL)),
        "INVALID_ARGUMENT", "OK"),
    Row("DetachSubscription", lambda p: _outcome(lambda: p.publisher.detach_subscription(
        request={"subscription": p.subscription}, **CALL)), "OK", "UNIMPLEMENTED"),
    Row("IAM: GetIamPolicy", lambda p: _outcome(lambda: p.publisher.get_iam_policy(
        request={"resource": p.topic}, **CALL)), "OK", "UNIMPLEMENTED"),
    Row("IAM: SetIamPolicy", lambda p: _outcome(lambda: p.subscriber.set_iam_policy(request={
        "resource": p.subscription,
        "policy": {"bindings": [{"role": "roles/pubsub.subscriber", "members": ["allUsers"]}]}},
        **CALL)), "OK", "UNIMPLEMENTED"),
    Row("IAM: TestIamPermissions", lambda p: _outcome(lambda: p.publisher.test_iam_permissions(
        request={"resource": p.topic, "permissions": ["pubsub.topics.publish"]}, **CALL)),
        "OK", "UNIMPLEMENTED"),
    Row("dead-letter: 5 nacks forward the message", _dead_letter,
        DEAD_LETTER_ATTRIBUTES, DEAD_LETTER_ATTRIBUTES),
    Row("dead-letter: the fifth deadline expires", lambda p: _dead_letter(p, expire_last=True),
        DEAD_LETTER_ATTRIBUTES, DEAD_LETTER_ATTRIBUTES),
    Row("dead-letter: max_delivery_attempts of 4", lambda p: _create_sub(p, dead_letter_policy={
        "dead_letter_topic": p.topic, "max_delivery_attempts": 4}), "OUT_OF_RANGE", "OUT_OF_RANGE"),
    Row("dead-letter: a topic that does not exist", lambda p: _create_sub(p, dead_letter_policy={
        "dead_letter_topic": p.name("topics", "missing")}), "NOT_FOUND", "NOT_FOUND"),
    Row("ModifyPushConfig", lambda p: _outcome(lambda: p.subscriber.modify_push_config(request={
        "subscription": p.subscription,
        "push_config": {"push_endpoint": "https://push.example.com/x"}}, **CALL)), "OK", "OK"),
    Row("push: an OIDC service account that is no email", lambda p: _outcome(
        lambda: p.subscriber.modify_push_config(request={
            "subscription": p.subscription, "push_config": {
                "push_endpoint": "https://push.example.com/x",
                "oidc_token": {"service_account_email": "pusher"}}}, **CALL)),
        "INVALID_ARGUMENT", "OK"),
    Row("update mask push_config.no_wrapper", lambda p: _update_sub(
        p, ["push_config.no_wrapper"]), "OK", "INVALID_ARGUMENT"),
    Row("update mask dead_letter_policy.max_delivery_attempts", lambda p: _update_sub(
        p, ["dead_letter_policy.max_delivery_attempts"]), "OK", "INVALID_ARGUMENT"),
    Row("update mask pushConfig (camelCase over gRPC)", lambda p: _update_sub(
        p, ["pushConfig"]), "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    Row("update mask labels.team", lambda p: _update_sub(
        p, ["labels.team"], labels={"team": "x"}), "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    Row("Cloud Storage bucket gs://fid-bucket", lambda p: _create_sub(
        p, cloud_storage_config={"bucket": "gs://fid-bucket"}), "INVALID_ARGUMENT", "OK"),
    Row("Cloud Storage max_messages of 999", lambda p: _create_sub(
        p, cloud_storage_config={"bucket": "fid-bucket", "max_messages": 999}),
        "INVALID_ARGUMENT", "OK"),
    Row("BigQuery use_topic_schema with use_table_schema", lambda p: _create_sub(
        p, bigquery_config={"table": "proj-alpha.sales.orders", "use_topic_schema": True,
                            "use_table_schema": True}), "INVALID_ARGUMENT", "OK"),
    Row("message transforms: a UDF without code", lambda p: _create_topic(
        p, message_transforms=[_udf("")]), "INVALID_ARGUMENT", "OK"),
    Row("message transforms: six enabled", lambda p: _create_topic(
        p, message_transforms=[_udf(f"function f{i}() {{}}", f"f{i}") for i in range(6)]),
        "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    Row("message transforms: two UDFs of one function name", lambda p: _create_topic(
        p, message_transforms=[_udf()] * 2), "INVALID_ARGUMENT", "OK"),
    Row("message transforms: six, one disabled", lambda p: _create_topic(
        p, message_transforms=[{**_udf(f"function f{i}() {{}}", f"f{i}"), "disabled": i == 0}
                               for i in range(6)]), "OK", "OK"),
    Row("message transforms: an AI Inference endpoint us-central1/endpoints/1", lambda p:
        _create_topic(p, message_transforms=[{"ai_inference": {
            "endpoint": "us-central1/endpoints/1"}}]), "INVALID_ARGUMENT", "OK"),
    Row("ingestion: Kinesis without its consumer ARN", lambda p: _create_topic(
        p, ingestion_data_source_settings={"aws_kinesis": {
            k: v for k, v in KINESIS.items() if k != "consumer_arn"}}),
        "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    Row("ingestion: Cloud Storage with a bucket alone", lambda p: _create_topic(
        p, ingestion_data_source_settings={"cloud_storage": {"bucket": "landing"}}),
        "OK", "INVALID_ARGUMENT"),
    Row("tags and ingestion state returned by GetTopic", _returned_extras,
        "no tags, ACTIVE", "tags returned, CONFLICTING_REGION_CONSTRAINTS"),
    Row("message transforms: a topic UDF on Publish", lambda p: _topic_udf_on_publish(
        p, UPPER, "up", b"abc"), "ABC", "abc"),
    Row("message transforms: a UDF making a message of 10,000,001 bytes", lambda p:
        _topic_udf_on_publish(p, "function big(m) { return {data: 'x'.repeat(10000001)}; }",
                              "big", b"abc"), "INVALID_ARGUMENT", "abc"),
    Row("message transforms: a subscription UDF that throws, dead-lettered",
        _dead_letter_after_a_failing_udf, f"handed out 0, forwarded: {SMT_FORWARD}",
        f"handed out 5, forwarded: {FORWARD}"),
    Row("tags: ListTagBindings of a topic created with tags", _tag_bindings,
        "123/environment/production", "UNIMPLEMENTED"),
    Row("update mask tags", lambda p: _outcome(lambda: p.publisher.update_topic(request={
        "topic": {"name": p.topic, "tags": {"123/environment": "test"}},
        "update_mask": {"paths": ["tags"]}}, **CALL)), "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    Row("REST: validateMessageTransform", lambda p: str(p.post(
        f"/v1/projects/{p.project}:validateMessageTransform",
        {"messageTransform": {"javascriptUdf": {"functionName": "f",
                                                "code": "function f(m) { return m; }"}}})),
        "200", "404"),
    Row("REST: testMessageTransforms", lambda p: str(p.post(
        f"/v1/projects/{p.project}:testMessageTransforms",
        {"message": {"data": "eA=="}, "topic": p.topic})), "200", "404"),
    Row("REST: Google's Python REST clients", _rest_round_trip, "OK", "OK"),
    Row("REST: fields and prettyPrint", _partial_response, "honoured", "ignored"),
    Row("REST: an unknown $parameter", _unknown_parameter, "refused", "ignored"),
    Row("REST: a JSONP callback", _jsonp, "refused", "ignored"),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_the_table_row_as_measured(local_server: Any, google_emulator: str, row: Row) -> None:
    project = "parity-" + str(ROWS.index(row))
    measured = {}
    for server, address in (("local", local_server.address), ("emulator", google_emulator)):
        probe = _probe(address, project)
        try:
            measured[server] = row.probe(next(probe))
        finally:
            probe.close()
    assert measured == {"local": row.local, "emulator": row.emulator}
