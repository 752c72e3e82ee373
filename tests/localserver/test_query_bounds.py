"""Issue 39 item 4: the query faces do no unbounded work and answer every malformed
parameter as the client's error. PromQL label matchers are matched by RE2 (linear
time), so `{topic_id=~"(a|a)*b"}` against a 30-letter topic no longer holds the
server; `time=NaN`, `time=1e400` and `=~"a{99999999999}"` are Prometheus' bad_data
(HTTP 400), not 500 "local server bug"; ListTimeSeries reads a long filter in one
pass. Through real HTTP/1.1 to a `reconcile local-server` process (a query that ran
away there could not hold the test itself) and the real Monitoring client."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

import pytest
from google.api_core import exceptions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_support import rest

from reconciler.backends.clients import publisher_client

PROJECT = "proj-alpha"
QUERY = f"/v1/projects/{PROJECT}/location/global/prometheus/api/v1/query"
LONG_TOPIC = "a" * 30


@pytest.fixture(scope="module")
def served(server_process_class: Any) -> Any:
    server = server_process_class()
    publisher_client(server.address).create_topic(name=f"projects/{PROJECT}/topics/{LONG_TOPIC}")
    yield server
    server.stop()


def _query(address: str, **params: str) -> Any:
    return rest(address, "GET", f"{QUERY}?{urlencode(params)}", timeout=60)


def test_a_pathological_pattern_is_matched_in_linear_time(served: Any) -> None:
    """The issue's trial: while the query runs, another client's GetTopic is served
    (a 60 s socket timeout and deadline are safety nets: Python's `re` needed 2^30
    steps here, holding the interpreter throughout)."""
    answer = _query(served.address, query='{topic_id=~"(a|a)*b"}')
    assert (answer.status, answer.body["status"], answer.body["data"]["result"]) == (
        200,
        "success",
        [],
    )
    topic = publisher_client(served.address).get_topic(
        topic=f"projects/{PROJECT}/topics/{LONG_TOPIC}", timeout=60, retry=None
    )
    assert topic.name.endswith(LONG_TOPIC)
    matched = _query(served.address, query='{topic_id=~"(a|a)*a"}')
    assert matched.status == 200, matched.body


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"query": "{topic_id=\"x\"}", "time": "NaN"}, 'invalid parameter "time"'),
        ({"query": "{topic_id=\"x\"}", "time": "1e400"}, 'invalid parameter "time"'),
        ({"query": "{topic_id=\"x\"}", "time": "-inf"}, 'invalid parameter "time"'),
        ({"query": "{topic_id=\"x\"}", "time": "1_700_000_000"}, 'invalid parameter "time"'),
        ({"query": "{topic_id=\"x\"}", "time": "١٧٠٠٠٠٠٠٠٠"}, 'invalid parameter "time"'),
        ({"query": "{topic_id=\"x\"}", "time": "0000-01-01T00:00:00Z"}, 'invalid parameter "time"'),
        ({"query": "{topic_id=\"x\"}", "timeout": "soon"}, 'invalid parameter "timeout"'),
        ({"query": '{topic_id=~"a{99999999999}"}'}, "invalid repeat count"),
        ({"query": '{topic_id=~"(?=a)"}'}, "invalid regular expression"),
        ({"query": "{topic_id=~'" + "\\'" * 5000 + "}"}, "unterminated quoted string"),
    ],
)
def test_every_malformed_parameter_is_bad_data(
    served: Any, params: dict[str, str], says: str
) -> None:
    answer = _query(served.address, **params)
    assert answer.status == 400, answer.body
    assert (answer.body["status"], answer.body["errorType"]) == ("error", "bad_data")
    assert says in answer.body["error"]
    assert len(answer.body["error"]) < 1000  # a long value is not echoed whole


def test_well_formed_times_and_timeouts_are_read(served: Any) -> None:
    for params in (
        {"time": f"{time.time():.3f}"},
        {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
        {"time": "2020-01-01T00:00:00.5+02:00"},
        {"timeout": "1m30s"},
        {"timeout": "2.5"},
    ):
        answer = _query(served.address, query='{topic_id="x"}', **params)
        assert answer.status == 200, (params, answer.body)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.text(alphabet=st.sampled_from('{}=~!,"\'`\\ ()|*+?.[]^$ab:_0-9'), max_size=40),
    at=st.text(max_size=12),
)
def test_no_query_or_time_is_a_server_error(served: Any, query: str, at: str) -> None:
    answer = _query(served.address, query=query, time=at)
    assert answer.status in (200, 400), answer.body
    assert answer.body["status"] in ("success", "error")
    if answer.status == 400:
        assert answer.body["errorType"] == "bad_data"


def test_a_long_list_time_series_filter_is_read_in_one_pass(served: Any) -> None:
    from reconciler.backends.clients import monitoring_client

    client = monitoring_client(served.address)
    restriction = ' AND resource.labels.topic_id = "a"'
    text = 'metric.type = "pubsub.googleapis.com/topic/num_unacked_messages_by_region"'
    now = int(time.time())
    series = list(
        client.list_time_series(
            request={
                "name": f"projects/{PROJECT}",
                "filter": text + restriction * 40_000,
                "interval": {"end_time": {"seconds": now}},
            },
            timeout=60,
            retry=None,
        )
    )
    assert series == []
    with pytest.raises(exceptions.InvalidArgument) as refused:
        client.list_time_series(
            request={
                "name": f"projects/{PROJECT}",
                "filter": text + restriction * 40_000 + " OR x",
                "interval": {"end_time": {"seconds": now}},
            },
            timeout=60,
            retry=None,
        )
    assert "OR is not supported" in refused.value.message
    assert len(refused.value.message) < 2000
