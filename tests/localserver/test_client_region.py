"""Issue 39 item 4: the region a request declares (`x-reconcile-client-region`) is a
Google Cloud region name, checked before anything is stored or numbered: a long one
no longer answers 500 and uses up a message ID, a path is no longer stored as a
region. Through the real Publisher/Subscriber clients, real HTTP/1.1 and the real
command."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions
from rest_support import rest

from reconciler.localserver import CLIENT_REGION_KEY

P = "projects/proj-alpha"
T = f"{P}/topics/regions"
S = f"{P}/subscriptions/regions-sub"


@pytest.fixture
def topic(publisher_client: Any, subscriber_client: Any) -> None:
    publisher_client.create_topic(name=T)
    subscriber_client.create_subscription(request={"name": S, "topic": T})


@pytest.mark.parametrize(
    ("region", "why"),
    [
        ("x" * 300, "is not a Google Cloud region"),
        ("../../etc", "is not a Google Cloud region"),
        ("us-east1-b", "is a zone; name its region, us-east1"),
        ("us-centrl1", "did you mean us-central1?"),
        ("EU", "is not a region"),
    ],
)
def test_a_declared_region_that_is_no_region_is_refused_before_any_id_is_used(
    local_server: Any, publisher_client: Any, topic: None, region: str, why: str
) -> None:
    with pytest.raises(exceptions.InvalidArgument) as refused:
        publisher_client.publish(
            topic=T, messages=[{"data": b"x"}], metadata=[(CLIENT_REGION_KEY, region)], retry=None
        )
    assert refused.value.message.startswith(f"Invalid {CLIENT_REGION_KEY}: ")
    assert why in refused.value.message
    assert len(refused.value.message) < 300  # a long value is shown cut short
    ids = publisher_client.publish(
        topic=T, messages=[{"data": b"y"}], metadata=[(CLIENT_REGION_KEY, "europe-west1")]
    ).message_ids
    assert list(ids) == ["1"]  # the refused Publish numbered nothing
    stats = local_server.subscription_stats(S)
    assert set(stats.regions) == {"europe-west1"}


def test_rest_and_pull_check_it_too(local_server: Any, subscriber_client: Any, topic: None) -> None:
    answer = rest(
        local_server.address,
        "POST",
        f"/v1/{T}:publish",
        {"messages": [{"data": "eA=="}]},
        headers={CLIENT_REGION_KEY: "y" * 300},
    )
    assert answer.status == 400
    assert answer.body["error"]["status"] == "INVALID_ARGUMENT"
    assert answer.body["error"]["message"].startswith(f"Invalid {CLIENT_REGION_KEY}: ")
    with pytest.raises(exceptions.InvalidArgument, match="is not a Google Cloud region"):
        subscriber_client.pull(
            request={"subscription": S, "max_messages": 1},
            metadata=[(CLIENT_REGION_KEY, "../../etc")],
        )
    assert local_server.message_count(T) == 0


def test_the_command_refuses_a_client_region_that_is_no_region(refused_start: Any) -> None:
    code, err = refused_start("--client-region", "us-east1-b")
    assert code == 1
    assert "--client-region: 'us-east1-b' is a zone; name its region, us-east1" in err
    assert "Traceback" not in err
