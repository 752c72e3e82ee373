"""Google's system parameters on the REST face, sent as a plain HTTP client would (the
standard library's): both spellings, what each changes in the answer, the ones that
are refused and why, and the headers that stand for them."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from rest_support import rest

P = "projects/proj-alpha"
TOPIC = f"{P}/topics/orders"
SUB = f"{P}/subscriptions/orders-sub"


@pytest.fixture
def world(local_server: Any, publisher_client: Any, subscriber_client: Any) -> str:
    publisher_client.create_topic(
        request={
            "name": TOPIC,
            "labels": {"team": "payments"},
            "message_storage_policy": {"allowed_persistence_regions": ["us-east1"]},
        }
    )
    subscriber_client.create_subscription(name=SUB, topic=TOPIC)
    return str(local_server.address)


def _get(address: str, path: str, params: list[tuple[str, str]], **kw: Any) -> Any:
    return rest(address, "GET", f"/v1/{path}?{urlencode(params, quote_via=quote)}", **kw)


@pytest.mark.parametrize("spelling", ["$alt", "alt"])
def test_enums_as_numbers_when_asked(world: str, spelling: str) -> None:
    named = _get(world, SUB, [])
    assert named.status == 200 and named.body["state"] == "ACTIVE"
    numbered = _get(world, SUB, [(spelling, "json;enum-encoding=int")])
    assert numbered.status == 200 and numbered.body["state"] == 1  # Subscription.State.ACTIVE
    assert {k: v for k, v in numbered.body.items() if k != "state"} == {
        k: v for k, v in named.body.items() if k != "state"
    }
    assert _get(world, SUB, [(spelling, "json")]).body == named.body


@pytest.mark.parametrize(("spelling", "value"), [("$prettyPrint", "false"), ("prettyPrint", "0")])
def test_pretty_print_off_is_compact(world: str, spelling: str, value: str) -> None:
    pretty = rest(world, "GET", f"/v1/{TOPIC}")
    compact = _get(world, TOPIC, [(spelling, value)])
    assert "\n" in pretty.raw.decode() and "\n" not in compact.raw.decode()
    assert compact.body == pretty.body
    assert _get(world, TOPIC, [(spelling, "true")]).raw == pretty.raw


@pytest.mark.parametrize(
    ("params", "headers", "expected"),
    [
        ([("fields", "name,labels")], {}, {"name": TOPIC, "labels": {"team": "payments"}}),
        (
            [("$fields", "messageStoragePolicy/allowedPersistenceRegions")],
            {},
            {"messageStoragePolicy": {"allowedPersistenceRegions": ["us-east1"]}},
        ),
        ([("fields", "message_storage_policy(allowed_persistence_regions),name")], {},
         {"name": TOPIC, "messageStoragePolicy": {"allowedPersistenceRegions": ["us-east1"]}}),
        ([], {"X-Goog-FieldMask": "labels.team"}, {"labels": {"team": "payments"}}),
        ([("fields", "*")], {}, None),  # the whole answer
    ],
)
def test_fields_is_a_partial_response(
    world: str, params: list[tuple[str, str]], headers: dict[str, str], expected: Any
) -> None:
    whole = rest(world, "GET", f"/v1/{TOPIC}").body
    answer = _get(world, TOPIC, params, headers=headers)
    assert answer.status == 200, answer.body
    assert answer.body == (whole if expected is None else expected)


def test_fields_reaches_into_each_listed_item(world: str) -> None:
    answer = _get(world, f"{P}/topics", [("fields", "topics/name,nextPageToken")])
    assert answer.body == {"topics": [{"name": TOPIC}]}


@pytest.mark.parametrize(
    ("mask", "says"),
    [
        ("labelz", "'labelz' is not a field of google.pubsub.v1.Topic"),
        ("name/first", "name has no fields"),
        ("labels(", "a field name is missing"),
        ("labels(team", "a '(' is not closed"),
        ("a,,b", "unexpected ','"),
        ("name;x", "unexpected ';'"),
    ],
)
def test_a_bad_fields_selector_is_invalid_argument(world: str, mask: str, says: str) -> None:
    answer = _get(world, TOPIC, [("fields", mask)])
    assert answer.status == 400, answer.body
    assert says in answer.body["error"]["message"]


def test_output_defaults_renders_default_values(world: str) -> None:
    plain = _get(world, SUB, []).body
    full = _get(world, SUB, [("$outputDefaults", "true")]).body
    assert "retainAckedMessages" not in plain and full["retainAckedMessages"] is False
    assert full["filter"] == "" and set(plain) < set(full)


@pytest.mark.parametrize(
    "param",
    [
        ("key", "AIza-anything"),
        ("$key", "k"),
        ("quotaUser", "someone"),
        ("$quotaUser", "someone"),
        ("access_token", "ya29.x"),
        ("oauth_token", "ya29.x"),
        ("$.xgafv", "2"),
        ("$.xgafv", "1"),
        ("upload_protocol", "raw"),
        ("uploadType", "media"),
        ("$unique", "123"),
        ("$apiVersion", "v1"),
        ("userIp", "192.0.2.1"),
        ("$ct", "application/json; charset=utf-8"),
    ],
)
def test_parameters_without_meaning_here_are_accepted(world: str, param: tuple[str, str]) -> None:
    answer = _get(world, TOPIC, [param])
    assert answer.status == 200, answer.body
    assert answer.body == rest(world, "GET", f"/v1/{TOPIC}").body


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ([("$alt", "proto")], "$alt=proto is not served"),
        ([("alt", "media")], "alt=media is not served"),
        ([("callback", "steal")], "JSONP callbacks are not served"),
        ([("$callback", "x")], "JSONP"),
        ([("passwd", "hunter2")], "no password is ever put in a URL"),
        ([("password", "hunter2")], "no password"),
        ([("prettyPrint", "maybe")], "expected true or false"),
        ([("$.xgafv", "3")], "the error format is 1 or 2"),
        ([("$ct", "application/x-protobuf")], "request bodies are JSON"),
        ([("alt", "json"), ("$alt", "json;enum-encoding=int")], "given twice"),
        ([("$foo", "1")], 'Unknown name "$foo": Cannot bind query parameter.'),
    ],
)
def test_refused_parameters_say_why(world: str, params: list[tuple[str, str]], says: str) -> None:
    answer = _get(world, TOPIC, params)
    assert answer.status == 400
    assert answer.body["error"]["status"] == "INVALID_ARGUMENT"
    assert says in answer.body["error"]["message"]


def test_the_same_parameter_twice_with_one_value_is_fine(world: str) -> None:
    enum_int = "json;enum-encoding=int"
    answer = _get(world, SUB, [("alt", enum_int), ("$alt", enum_int)])
    assert answer.status == 200 and answer.body["state"] == 1


def test_enums_in_the_query_by_number_or_by_name(world: str, publisher_client: Any) -> None:
    from google.cloud.monitoring_v3 import Aggregation

    base = [
        ("filter", 'metric.type = "pubsub.googleapis.com/topic/send_request_count"'),
        ("interval.startTime", "2020-01-01T00:00:00Z"),
        ("interval.endTime", "2100-01-01T00:00:00Z"),
        ("aggregation.alignmentPeriod", "3600s"),
    ]
    delta = Aggregation.Aligner.ALIGN_DELTA
    by_name = rest(world, "GET", f"/v3/{P}/timeSeries?" + urlencode([*base, (
        "aggregation.perSeriesAligner", delta.name)]))
    by_number = rest(world, "GET", f"/v3/{P}/timeSeries?" + urlencode([*base, (
        "aggregation.perSeriesAligner", str(int(delta)))]))
    assert by_name.status == by_number.status == 200, (by_name.body, by_number.body)
    assert by_name.body == by_number.body


def test_a_post_may_stand_for_a_get_with_its_query_as_a_form(world: str) -> None:
    answer = rest(
        world,
        "POST",
        f"/v1/{P}/topics",
        raw_body=b"pageSize=1&fields=topics%2Fname",
        headers={
            "X-HTTP-Method-Override": "GET",
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    assert answer.status == 200, answer.body
    assert answer.body == {"topics": [{"name": TOPIC}]}
    refused = rest(world, "PUT", f"/v1/{TOPIC}", {}, headers={"X-HTTP-Method-Override": "GET"})
    assert refused.status == 400 and "POST only" in refused.body["error"]["message"]


def test_the_batching_python_publisher_on_rest(world: str) -> None:
    """The client most programs use, `google.cloud.pubsub_v1.PublisherClient` (which
    batches and returns futures), on the REST transport, with the subscriber's
    synchronous pull."""
    from google.cloud import pubsub_v1

    options = ClientOptions(api_endpoint=f"http://{world}")
    credentials = AnonymousCredentials()
    publisher = pubsub_v1.PublisherClient(
        transport="rest", client_options=options, credentials=credentials
    )
    subscriber = pubsub_v1.SubscriberClient(
        transport="rest", client_options=options, credentials=credentials
    )
    try:
        futures = [publisher.publish(TOPIC, f"m{i}".encode(), n=str(i)) for i in range(5)]
        ids = [f.result(timeout=60) for f in futures]
        pulled = subscriber.pull(subscription=SUB, max_messages=10, timeout=60)
        got = sorted((m.message.data, m.message.attributes["n"]) for m in pulled.received_messages)
        assert got == [(f"m{i}".encode(), str(i)) for i in range(5)]
        assert sorted(m.message.message_id for m in pulled.received_messages) == sorted(ids)
        subscriber.acknowledge(
            subscription=SUB, ack_ids=[m.ack_id for m in pulled.received_messages], timeout=60
        )
    finally:
        publisher.stop()
        subscriber.transport.close()  # the wrapper's close() assumes a gRPC channel


def test_an_answer_is_utf8_json(world: str, publisher_client: Any) -> None:
    publisher_client.update_topic(
        request={"topic": {"name": TOPIC, "labels": {"team": "zürich"}},
                 "update_mask": {"paths": ["labels"]}}
    )
    answer = _get(world, TOPIC, [("$prettyPrint", "false")])
    assert answer.headers["content-type"].startswith("application/json")
    assert json.loads(answer.raw.decode("utf-8"))["labels"] == {"team": "zürich"}


def test_a_bad_selector_fails_a_change_before_it_is_made(world: str, local_server: Any) -> None:
    fresh = f"{P}/topics/fresh"
    before = local_server.counters.get("CreateTopic")
    answer = rest(world, "PUT", f"/v1/{fresh}?fields=labelz", {})
    assert answer.status == 400 and "labelz" in answer.body["error"]["message"]
    assert rest(world, "GET", f"/v1/{fresh}").status == 404
    assert local_server.counters.get("CreateTopic") == before  # never called
