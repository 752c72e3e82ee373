"""Issue 50 items 2-4 through the real Python client: ModifyPushConfig (push to pull
and back, push authentication, checked, journaled), update masks with nested paths
as Google's samples and gcloud send them (and the refusals in the service's words),
and export settings checked as the service can check them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions
from subscriber_support import make_subscriber

from reconciler.backends.clients import publisher_client
from reconciler.localserver import LocalServer

P = "projects/proj-alpha"
T = f"{P}/topics/orders"
DLT = f"{P}/topics/orders-dead"
S = f"{P}/subscriptions/orders-sub"
PUSH = "https://push.example.com/orders"
ACCOUNT = "pusher@proj-alpha.iam.gserviceaccount.com"
UNKNOWN_NOTE = "Note that field paths must be of the form 'push_config' rather than 'pushConfig'."


def _full_push(pub: Any, sub: Any) -> Any:
    pub.create_topic(name=T)
    pub.create_topic(name=DLT)
    return sub.create_subscription(request={
        "name": S, "topic": T, "labels": {"team": "pay"},
        "push_config": {
            "push_endpoint": PUSH,
            "oidc_token": {"service_account_email": ACCOUNT, "audience": "a"},
            "no_wrapper": {"write_metadata": True},
        },
        "dead_letter_policy": {"dead_letter_topic": DLT, "max_delivery_attempts": 7},
        "retry_policy": {"minimum_backoff": {"seconds": 10}, "maximum_backoff": {"seconds": 60}},
        "expiration_policy": {"ttl": {"seconds": 86400 * 31}},
    })


def _update(sub: Any, fields: dict[str, Any], paths: list[str]) -> Any:
    return sub.update_subscription(request={
        "subscription": {"name": S, **fields}, "update_mask": {"paths": paths}})


# ------------------------------------------------------------------ update masks


@pytest.mark.parametrize(
    ("paths", "fields", "changed"),
    [
        (["push_config.no_wrapper"], {}, lambda s: "no_wrapper" not in s.push_config),
        (["push_config.oidc_token"], {"push_config": {"oidc_token": {
            "service_account_email": "other@proj-alpha.iam.gserviceaccount.com"}}},
         lambda s: s.push_config.oidc_token.audience == ""
         and s.push_config.oidc_token.service_account_email.startswith("other@")),
        (["push_config.oidc_token.audience"], {"push_config": {"oidc_token": {"audience": "b"}}},
         lambda s: s.push_config.oidc_token.audience == "b"
         and s.push_config.oidc_token.service_account_email == ACCOUNT),
        (["push_config.push_endpoint"], {"push_config": {"push_endpoint": PUSH + "/v2"}},
         lambda s: s.push_config.push_endpoint == PUSH + "/v2"),
        (["dead_letter_policy.max_delivery_attempts"],
         {"dead_letter_policy": {"max_delivery_attempts": 20}},
         lambda s: s.dead_letter_policy == type(s.dead_letter_policy)(
             dead_letter_topic=DLT, max_delivery_attempts=20)),
        (["retry_policy.minimum_backoff"], {"retry_policy": {"minimum_backoff": {"seconds": 20}}},
         lambda s: (s.retry_policy.minimum_backoff.total_seconds(),
                    s.retry_policy.maximum_backoff.total_seconds()) == (20, 60)),
        (["expiration_policy.ttl"], {}, lambda s: "ttl" not in s.expiration_policy),
        (["push_config", "push_config.no_wrapper"], {"push_config": {"push_endpoint": PUSH}},
         lambda s: "oidc_token" not in s.push_config and "no_wrapper" not in s.push_config),
    ],
)
def test_a_nested_path_changes_that_part_only(
    publisher_client: Any, subscriber_client: Any, paths: list[str], fields: dict[str, Any],
    changed: Any,
) -> None:
    before = _full_push(publisher_client, subscriber_client)
    after = _update(subscriber_client, fields, paths)
    assert changed(after), after
    assert dict(after.labels) == {"team": "pay"}
    untouched = {p.split(".", 1)[0] for p in paths}
    for field in ("push_config", "dead_letter_policy", "retry_policy", "expiration_policy"):
        if field not in untouched:
            assert getattr(after, field) == getattr(before, field)
    assert subscriber_client.get_subscription(subscription=S) == after


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("pushConfig", f"pushConfig is not a known Subscription field. {UNKNOWN_NOTE}"),
        ("pushConfig.noWrapper",
         f"pushConfig.noWrapper is not a known Subscription field. {UNKNOWN_NOTE}"),
        ("labels.team", f"labels.team is not a known Subscription field. {UNKNOWN_NOTE}"),
        ("push_config.bogus",
         f"push_config.bogus is not a known Subscription field. {UNKNOWN_NOTE}"),
        ("bigquery_config.state",
         f"bigquery_config.state is not a known Subscription field. {UNKNOWN_NOTE}"),
        ("state", f"state is not a known Subscription field. {UNKNOWN_NOTE}"),
        ("topic", "the topic field in the Subscription is not mutable."),
        ("filter", "the filter field in the Subscription is not mutable."),
        ("enable_message_ordering",
         "the enable_message_ordering field in the Subscription is not mutable."),
    ],
)
def test_a_path_the_service_refuses(
    publisher_client: Any, subscriber_client: Any, path: str, message: str
) -> None:
    before = _full_push(publisher_client, subscriber_client)
    with pytest.raises(exceptions.InvalidArgument) as info:
        _update(subscriber_client, {"ack_deadline_seconds": 30}, ["ack_deadline_seconds", path])
    assert info.value.message == (
        f"Invalid update_mask provided in the UpdateSubscriptionRequest: {message}"
    )
    assert subscriber_client.get_subscription(subscription=S) == before


def test_a_pull_subscription_keeps_its_empty_push_config(
    publisher_client: Any, subscriber_client: Any
) -> None:
    """A mask that clears push_config leaves `pushConfig: {}`, as a pull subscription
    reads from the start."""
    _full_push(publisher_client, subscriber_client)
    after = _update(subscriber_client, {}, ["push_config.no_wrapper", "push_config"])
    assert "push_config" in after and after.push_config == type(after.push_config)()


def test_a_nested_path_that_makes_an_export_clears_push(
    publisher_client: Any, subscriber_client: Any
) -> None:
    _full_push(publisher_client, subscriber_client)
    after = _update(
        subscriber_client, {"bigquery_config": {"table": "proj-alpha.sales.orders"}},
        ["bigquery_config.table"],
    )
    assert after.bigquery_config.table == "proj-alpha.sales.orders"
    assert "push_config" not in after


# ------------------------------------------------------------------ ModifyPushConfig


def _modify(sub: Any, push: dict[str, Any]) -> None:
    sub.modify_push_config(request={"subscription": S, "push_config": push})


def test_modify_push_config_pull_to_push_to_pull(
    local_server: Any, publisher_client: Any, subscriber_client: Any
) -> None:
    publisher_client.create_topic(name=T)
    subscriber_client.create_subscription(name=S, topic=T)
    publisher_client.publish(topic=T, messages=[{"data": b"held"}])
    _modify(subscriber_client, {
        "push_endpoint": PUSH, "oidc_token": {"service_account_email": ACCOUNT},
        "attributes": {"x-goog-version": "v1"},
    })
    pushed = subscriber_client.get_subscription(subscription=S)
    assert pushed.push_config.push_endpoint == PUSH
    assert pushed.push_config.oidc_token.service_account_email == ACCOUNT
    assert local_server.subscription_stats(S).unacked == {}  # a push one delivers on arrival
    _modify(subscriber_client, {})  # back to pull
    assert subscriber_client.get_subscription(subscription=S).push_config == type(
        pushed.push_config)()
    publisher_client.publish(topic=T, messages=[{"data": b"pulled"}])
    got = subscriber_client.pull(subscription=S, max_messages=10, timeout=30).received_messages
    assert [m.message.data for m in got] == [b"pulled"]
    assert local_server.counters.get("ModifyPushConfig") == 2


@pytest.mark.parametrize(
    ("push", "error", "message"),
    [
        ({"push_endpoint": "ftp://example.com/x"}, exceptions.InvalidArgument,
         "Unsupported push_endpoint 'ftp://example.com/x': it must be an https:// (or http://) "
         "URL."),
        ({"push_endpoint": PUSH, "oidc_token": {"service_account_email": "pusher"}},
         exceptions.InvalidArgument,
         "Invalid push_config.oidc_token.service_account_email 'pusher': it is not an email "
         "address (NAME@PROJECT.iam.gserviceaccount.com)."),
        ({"push_endpoint": PUSH, "oidc_token": {"audience": "a"}}, exceptions.InvalidArgument,
         "Invalid push_config.oidc_token.service_account_email '': it is empty; name a service "
         "account (NAME@PROJECT.iam.gserviceaccount.com)."),
        ({"push_endpoint": PUSH, "attributes": {"x-goog-version": "v3"}},
         exceptions.InvalidArgument,
         "Invalid push_config.attributes['x-goog-version'] 'v3': the push format is one of "
         "v1beta1, v1, v1beta2."),
    ],
)
def test_modify_push_config_refuses_what_the_service_refuses(
    publisher_client: Any, subscriber_client: Any, push: dict[str, Any],
    error: type[Exception], message: str,
) -> None:
    publisher_client.create_topic(name=T)
    before = subscriber_client.create_subscription(name=S, topic=T)
    with pytest.raises(error) as info:
        _modify(subscriber_client, push)
    assert info.value.message == message
    assert subscriber_client.get_subscription(subscription=S) == before
    with pytest.raises(exceptions.NotFound, match="Subscription does not exist"):
        subscriber_client.modify_push_config(
            request={"subscription": f"{P}/subscriptions/missing", "push_config": {}})


def test_a_push_config_change_survives_a_crash(tmp_path: Path) -> None:
    server = LocalServer(state_dir=tmp_path).start()
    pub, sub = publisher_client(server.address), make_subscriber(server.address)
    pub.create_topic(name=T)
    sub.create_subscription(name=S, topic=T)
    _modify(sub, {"push_endpoint": PUSH, "no_wrapper": {"write_metadata": True}})
    server.crash()
    with LocalServer(state_dir=tmp_path) as again:
        config = make_subscriber(again.address).get_subscription(subscription=S).push_config
        assert (config.push_endpoint, config.no_wrapper.write_metadata) == (PUSH, True)


# ------------------------------------------------------------------ export settings


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"cloud_storage_config": {"bucket": "gs://fid-bucket"}},
         "Invalid cloud_storage_config.bucket 'gs://fid-bucket': it is a URL; give the bucket's "
         "name alone, without the gs:// prefix."),
        ({"cloud_storage_config": {"bucket": "Fid_Bucket"}},
         "Invalid cloud_storage_config.bucket 'Fid_Bucket': it must hold only lowercase letters, "
         "digits, dashes, underscores and dots, and start and end with a letter or digit."),
        ({"cloud_storage_config": {"bucket": "ab"}},
         "Invalid cloud_storage_config.bucket 'ab': it must be 3 to 63 characters long (222 "
         "with dots)."),
        ({"cloud_storage_config": {"bucket": "goog-exports"}},
         "Invalid cloud_storage_config.bucket 'goog-exports': it must not begin with \"goog\" or "
         "contain \"google\"."),
        ({"cloud_storage_config": {"bucket": "192.168.5.4"}},
         "Invalid cloud_storage_config.bucket '192.168.5.4': it must not be an IP address."),
        ({"cloud_storage_config": {"bucket": "fid-bucket", "filename_suffix": "out/"}},
         "Invalid cloud_storage_config.filename_suffix 'out/': it must not end in \"/\"."),
        ({"cloud_storage_config": {"bucket": "fid-bucket", "filename_prefix": "a\nb"}},
         "Invalid cloud_storage_config.filename_prefix 'a\\nb': it must not contain a carriage "
         "return or line feed."),
        ({"cloud_storage_config": {"bucket": "fid-bucket", "max_duration": {"seconds": 30}}},
         "cloud_storage_config.max_duration out of bounds: 30 s (it must be 1 to 10 minutes)."),
        ({"cloud_storage_config": {"bucket": "fid-bucket", "max_bytes": 999}},
         "cloud_storage_config.max_bytes out of bounds: 999 (it must be 1000 bytes to 10 GiB)."),
        ({"cloud_storage_config": {"bucket": "fid-bucket", "max_messages": 999}},
         "cloud_storage_config.max_messages out of bounds: 999 (it must be at least 1000)."),
        ({"cloud_storage_config": {"bucket": "fid-bucket", "service_account_email": "w"}},
         "Invalid cloud_storage_config.service_account_email 'w': it is not an email address "
         "(NAME@PROJECT.iam.gserviceaccount.com)."),
        ({"bigquery_config": {"table": "sales.orders"}},
         "Invalid bigquery_config.table 'sales.orders': expected PROJECT_ID.DATASET_ID.TABLE_ID."),
        ({"bigquery_config": {"table": "proj-alpha.sales.orders", "use_topic_schema": True,
                              "use_table_schema": True}},
         "bigquery_config: use_topic_schema and use_table_schema cannot be enabled at the same "
         "time."),
    ],
)
def test_export_settings_the_service_refuses(
    local_server: Any, publisher_client: Any, subscriber_client: Any,
    config: dict[str, Any], message: str,
) -> None:
    publisher_client.create_topic(name=T)
    with pytest.raises(exceptions.InvalidArgument) as info:
        subscriber_client.create_subscription(request={"name": S, "topic": T, **config})
    assert info.value.message == message
    assert local_server.state.subs.raw(S) is None


@pytest.mark.parametrize(
    "config",
    [
        {"cloud_storage_config": {
            "bucket": "fid-bucket.example.com", "filename_prefix": "orders/",
            "filename_suffix": ".avro", "filename_datetime_format": "YYYY-MM-DD/hh_mm_ssZ",
            "max_duration": {"seconds": 600}, "max_bytes": 10 * 1024**3, "max_messages": 1000,
            "avro_config": {"write_metadata": True, "use_topic_schema": True},
            "service_account_email": ACCOUNT}},
        {"bigquery_config": {"table": "proj-alpha:sales.orders", "use_table_schema": True,
                             "write_metadata": True, "drop_unknown_fields": True}},
    ],
)
def test_export_settings_within_the_rules_are_stored(
    publisher_client: Any, subscriber_client: Any, config: dict[str, Any]
) -> None:
    publisher_client.create_topic(name=T)
    created = subscriber_client.create_subscription(request={"name": S, "topic": T, **config})
    (kind, given), = config.items()
    stored = getattr(created, kind)
    for key, value in given.items():
        got = getattr(stored, key)
        if key == "max_duration":
            got = {"seconds": int(got.total_seconds())}
        elif isinstance(value, dict):
            got = {k: getattr(got, k) for k in value}
        assert got == value, key
