"""Where a Publish from a region lands under a storage policy, from both sides, with
one table: what `reconcile validate` says of publishers declared in that region (or
publishing through its endpoint), and what the local server does with a Publish
received there, through the real google-cloud-pubsub client, declaring the region
and, for the default region, declaring none (the same Publish: the same answer).

The rule both sides apply is reconciler/orgpolicy/publishing.py."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.localserver import CLIENT_REGION_KEY
from reconciler.orgpolicy.publishing import DEFAULT_RECEIVING_REGION
from reconciler.spec.validate import validate_paths
from tests.specs_support import topic_doc

PROJECT = "proj-a"
T = f"projects/{PROJECT}/topics/orders"
S = f"projects/{PROJECT}/subscriptions/orders-sub"
IN_TRANSIT = "refused: in-transit"  # FAILED_PRECONDITION, enforce_in_transit named
ORDERING = "refused: ordering"  # FAILED_PRECONDITION, the ordering key named


@dataclass(frozen=True)
class Case:
    id: str
    allowed: tuple[str, ...] | None  # the topic's allowedPersistenceRegions (None: no policy)
    enforce: bool  # enforceInTransit
    ordering: bool  # the messages carry an ordering key / publishers.messageOrdering
    region: str  # where the Publish is received / where the publishers are
    server: str  # the region the messages are stored in, or IN_TRANSIT / ORDERING
    rerouted: bool  # counted as rerouted by the server
    validate_regions: str | None  # "severity[code]" for publishers.regions: [region]
    validate_endpoint: str | None  # the same for publishers.endpoint: region


CASES = [
    Case("allowed-region", ("europe-west1",), True, True, "europe-west1",
         "europe-west1", False, None, None),
    Case("no-policy", None, False, True, "us-east1",
         "us-east1", False, None, None),
    Case("default-region-allowed", (DEFAULT_RECEIVING_REGION, "europe-west1"), True, False,
         DEFAULT_RECEIVING_REGION, DEFAULT_RECEIVING_REGION, False, None, None),
    Case("rerouted-to-the-only-region", ("europe-west1",), False, False,
         DEFAULT_RECEIVING_REGION, "europe-west1", True,
         "warning[publisher-region-rerouted]", "warning[publisher-region-rerouted]"),
    # The storage-policy page's example: only us-central1 allowed, a publisher in us-east1.
    Case("documented-example", ("us-central1",), False, False, "us-east1",
         "us-central1", True,
         "warning[publisher-region-rerouted]", "warning[publisher-region-rerouted]"),
    Case("nearest-of-several", ("europe-west1", "us-east4"), False, False, "us-east1",
         "us-east4", True,
         "warning[publisher-region-rerouted]", "warning[publisher-region-rerouted]"),
    Case("nearest-of-several-in-europe", ("us-east4", "europe-west1"), False, False,
         "europe-west3", "europe-west1", True,
         "warning[publisher-region-rerouted]", "warning[publisher-region-rerouted]"),
    # Offline, the topic may exist with the endpoint already (existing-publisher-endpoint):
    # a warning that plan decides (tests/commands/test_import_changes_nothing.py).
    Case("in-transit-refused", ("europe-west1",), True, False, DEFAULT_RECEIVING_REGION,
         IN_TRANSIT, False,
         "warning[publisher-region-denied]", "warning[publisher-endpoint-denied]"),
    Case("ordering-refused", ("europe-west1",), False, True, DEFAULT_RECEIVING_REGION,
         ORDERING, False,
         "error[publisher-ordering-region]", "error[publisher-ordering-region]"),
    # Both refuse it: the service answers the in-transit refusal; validate reports the
    # ordering keys for publishers in that region (an error either way).
    Case("in-transit-and-ordering", ("europe-west1",), True, True, "us-east1",
         IN_TRANSIT, False,
         "error[publisher-ordering-region]", "warning[publisher-endpoint-denied]"),
]

# (case, declared): every case declares its region; a case received in the default
# region is also published declaring none.
PUBLISHES = [
    pytest.param(case, declared, id=f"{case.id}-{'declared' if declared else 'undeclared'}")
    for case in CASES
    for declared in (True, False)
    if declared or case.region == DEFAULT_RECEIVING_REGION
]


def test_the_table_publishes_undeclared_where_the_default_is_at_stake() -> None:
    undeclared = {p.values[0].id for p in PUBLISHES if not p.values[1]}
    assert {"in-transit-refused", "ordering-refused", "rerouted-to-the-only-region"} <= undeclared


# ------------------------------------------------------------------------ the validator

NO_RESTRICTION = (  # a snapshot that restricts no location: the spec's policy decides
    f"name: projects/{PROJECT}/policies/pubsub.enforceInTransitRegions\n"
    "spec:\n  rules:\n    - enforce: false\n"
)


def _publisher_diagnostics(tmp_path: Path, case: Case, publishers: str) -> list[str]:
    storage = None if case.allowed is None else (list(case.allowed), case.enforce)
    spec = tmp_path / "topics.yaml"
    spec.write_text(topic_doc("orders", PROJECT, storage=storage, publishers=publishers))
    snapshot = tmp_path / "org-policy.yaml"
    snapshot.write_text(NO_RESTRICTION)
    result = validate_paths([spec], org_policy=snapshot)
    return [
        f"{d.severity.value}[{d.code}]"
        for d in result.diagnostics.sorted()
        if d.code.startswith("publisher-")
    ]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_validate_says_where_declared_publishers_land(tmp_path: Path, case: Case) -> None:
    ordering = str(case.ordering).lower()
    from_region = _publisher_diagnostics(
        tmp_path, case, f"{{regions: [{case.region}], messageOrdering: {ordering}}}"
    )
    through_endpoint = _publisher_diagnostics(
        tmp_path, case, f"{{endpoint: {case.region}, messageOrdering: {ordering}}}"
    )
    assert from_region == ([case.validate_regions] if case.validate_regions else [])
    assert through_endpoint == ([case.validate_endpoint] if case.validate_endpoint else [])


# --------------------------------------------------------------------- the local server


def _stored_by_region(monitoring_client: Any) -> dict[str, int]:
    now = time.time()
    series = monitoring_client.list_time_series(
        request={
            "name": f"projects/{PROJECT}",
            "filter": 'metric.type = "pubsub.googleapis.com/topic/num_unacked_messages_by_region"',
            "interval": {"end_time": {"seconds": int(now) + 1},
                         "start_time": {"seconds": int(now) - 600}},
        }
    )
    return {ts.metric.labels["region"]: ts.points[0].value.int64_value for ts in series}


@pytest.mark.parametrize(("case", "declared"), PUBLISHES)
def test_the_local_server_stores_or_refuses_a_publish_as_the_rule_says(
    case: Case,
    declared: bool,
    local_server: Any,
    publisher_client: Any,
    subscriber_client: Any,
    monitoring_client: Any,
) -> None:
    assert local_server.client_region is None  # no --client-region: the default applies
    topic: dict[str, Any] = {"name": T}
    if case.allowed is not None:
        topic["message_storage_policy"] = {
            "allowed_persistence_regions": list(case.allowed),
            "enforce_in_transit": case.enforce,
        }
    publisher_client.create_topic(request=topic)
    subscriber_client.create_subscription(request={"name": S, "topic": T})
    message: dict[str, Any] = {"data": b"x"}
    if case.ordering:
        message["ordering_key"] = "k"
    metadata = [(CLIENT_REGION_KEY, case.region)] if declared else []

    def publish() -> Any:
        return publisher_client.publish(
            topic=T, messages=[message, message], metadata=metadata, retry=None
        )

    if case.server in (IN_TRANSIT, ORDERING):
        with pytest.raises(exceptions.FailedPrecondition) as info:
            publish()
        said = info.value.message
        assert f"received in region {case.region}" in said or f"from region {case.region}" in said
        assert ("enforce_in_transit is set" in said) == (case.server == IN_TRANSIT), said
        assert ("ordering key" in said) == (case.server == ORDERING), said
        assert ("the default" in said) == (not declared), said
        assert _stored_by_region(monitoring_client) == {}
        assert local_server.message_count(T) == 0
    else:
        assert len(publish().message_ids) == 2
        assert _stored_by_region(monitoring_client) == {case.server: 2}
    assert local_server.rerouted(T) == (2 if case.rerouted else 0)
