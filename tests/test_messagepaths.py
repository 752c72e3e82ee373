"""reconciler/messagepaths.py on plain values: what the local server cannot make (a
source in CONFLICTING_REGION_CONSTRAINTS: it models no Regional Access Boundary) and
the edges of what each path says (a disabled transform sends nothing, a source is
never named by a credential, an ARN's region)."""

from __future__ import annotations

from typing import NamedTuple

from reconciler.diagnostics import Severity
from reconciler.messagepaths import (
    INGESTION_CONFLICT,
    INGESTION_UNJUDGED,
    MODEL_REGION,
    Bounds,
    Call,
    arn_region,
    data_paths,
    path_findings,
)

T = "projects/p/topics/t"
EU = {"aiInference": {"endpoint": "projects/p/locations/europe-west4/endpoints/e"}}
AZURE = {"azureEventHubs": {
    "namespace": "ns", "eventHub": "hub", "clientId": "c-1d", "tenantId": "t-1d",
    "subscriptionId": "s-1d", "resourceGroup": "rg", "state": "CONFLICTING_REGION_CONSTRAINTS",
}}
US_ONLY = Bounds(frozenset({"us-central1"}), True)


class Sub(NamedTuple):
    name: str
    kind: str
    state: str


def test_a_source_in_conflicting_region_constraints_is_said_live() -> None:
    found = path_findings(T, "p", None, AZURE, [], US_ONLY, Call(True, True, False, False))
    assert [(f.severity, f.code, f.spec_path) for f in found] == [
        (Severity.WARNING, INGESTION_CONFLICT,
         ("spec", "ingestionDataSourceSettings", "azureEventHubs")),
    ]
    assert "reads CONFLICTING_REGION_CONSTRAINTS" in found[0].message


def test_a_kept_source_is_not_said_again_a_set_one_is() -> None:
    active = {"awsKinesis": {"streamArn": "arn:aws:kinesis:eu-west-1:1:stream/s"}}
    kept = path_findings(T, "p", None, active, [], US_ONLY, Call(True, True, False, False))
    assert kept == []
    [set_] = path_findings(T, "p", None, active, [], US_ONLY, Call(True, True, False, True))
    assert set_.code == INGESTION_UNJUDGED and not set_.at_plan


def test_a_disabled_transform_sends_nothing() -> None:
    disabled = [{**EU, "disabled": True}]
    assert data_paths(disabled, None) == []
    assert path_findings(T, "p", disabled, None, None, US_ONLY, Call(False)) == []
    [found] = path_findings(T, "p", [EU], None, None, US_ONLY, Call(False))[:1]
    assert found.code == MODEL_REGION


def test_a_source_is_named_without_its_credentials() -> None:
    [path] = data_paths(None, AZURE, [Sub("projects/p/subscriptions/pull", "pull", "ACTIVE")])
    assert path.detail == "namespace ns, eventHub hub"
    assert path.location is None and path.state == "CONFLICTING_REGION_CONSTRAINTS"


def test_an_arn_s_region() -> None:
    assert arn_region("arn:aws:kafka:us-east-2:1:cluster/c/u") == "us-east-2"
    assert arn_region("arn:aws:iam::1:role/r") is None  # IAM is global: no region
    assert arn_region("not an arn") is None
