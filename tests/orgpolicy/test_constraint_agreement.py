"""Property: for generated topics and custom constraints, what `validate` says about a
topic is what the local server answers to the CreateTopic reconcile would send,
through the real Pub/Sub and Org Policy clients: refused by exactly the constraints
validate reports as errors, accepted when validate reports none (dry run: a warning,
and the call goes through).

The request is the test's own model of what apply sends (the declared labels plus
reconcile's three, the storage policy as declared, enforceInTransit forced on by the
org's in-transit policy); `test_the_request_model_is_what_apply_sends` checks that
model against a topic `reconcile apply` really created."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.api_core import exceptions
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reconciler.diagnostics import Severity
from reconciler.spec.validate import validate_paths
from tests.server_support import running_local_server

REGIONS = ("europe-west1", "europe-west4", "us-east1", "us-central1")
LABEL_KEYS = ("team", "tier", "tmp-x")
LABEL_VALUES = ("pay", "ops", "")
_numbers = itertools.count(1)

# One family of conditions per managed topic field: (template, parameter choices).
NAME = [
    ("resource.name.endsWith('{0}')", ("-test", "s", "x")),
    ("resource.name.matches('^projects/[a-z0-9-]+/topics/{0}')", ("ord", "a[a-z]+", "t")),
    ("resource.name.contains('{0}')", ("der", "/topics/a", "zz")),
]
LABELS = [
    ("'{0}' in resource.labels", LABEL_KEYS),
    ("resource.labels['{0}'] == 'pay'", LABEL_KEYS),  # fails on a missing key
    ("size(resource.labels) <= {0}", ("4", "5", "6")),
    ("resource.labels.exists(k, k.startsWith('{0}'))", ("tmp-", "te", "reconcile-")),
]
STORAGE = [
    ("has(resource.messageStoragePolicy) && resource.messageStoragePolicy"
     ".allowedPersistenceRegions.all(r, r.startsWith('{0}'))", ("europe-", "us-")),
    ("resource.messageStoragePolicy.allowedPersistenceRegions.exists(r, r == '{0}')",
     REGIONS),  # fails when no policy is sent
    ("has(resource.messageStoragePolicy) && size(resource.messageStoragePolicy"
     ".allowedPersistenceRegions) <= {0}", ("1", "2")),
]
IN_TRANSIT = [
    ("has(resource.messageStoragePolicy.enforceInTransit){0}", ("", " == false")),
]
FAMILIES = (NAME, LABELS, STORAGE, IN_TRANSIT)


@st.composite
def conditions(draw: Any) -> str:
    family = draw(st.sampled_from(FAMILIES))
    template, choices = draw(st.sampled_from(family))
    return template.format(draw(st.sampled_from(choices)))


constraints = st.lists(
    st.tuples(
        conditions(),
        st.sampled_from(["ALLOW", "DENY"]),
        st.sampled_from([["CREATE"], ["CREATE", "UPDATE"]]),
        st.sampled_from(["enforced", "enforced", "dry-run"]),
    ),
    min_size=1, max_size=4,
)
topics = st.fixed_dictionaries({
    "name": st.sampled_from(["orders", "orders-test", "audit", "tmpx"]),
    "labels": st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES),
                              max_size=3),
    "regions": st.one_of(st.none(), st.lists(st.sampled_from(REGIONS), min_size=1,
                                             max_size=3, unique=True)),
    "in_transit": st.sampled_from([None, True, False]),
})


def _spec(project: str, topic: dict[str, Any], unmanaged: bool = False) -> str:
    """The Topic document (`regions` None: `inherit`, or, `unmanaged`, no policy)."""
    spec: dict[str, Any] = {"labels": topic["labels"]} if topic["labels"] else {}
    if topic["regions"] is None and unmanaged:
        pass
    elif topic["regions"] is None:
        spec["messageStoragePolicy"] = "inherit"
    else:
        policy: dict[str, Any] = {"allowedPersistenceRegions": topic["regions"]}
        if topic["in_transit"] is not None:
            policy["enforceInTransit"] = topic["in_transit"]
        spec["messageStoragePolicy"] = policy
    return yaml.safe_dump({
        "apiVersion": "reconcile.pubsub/v1", "kind": "Topic",
        "metadata": {"project": project, "name": topic["name"]}, "spec": spec,
    })


def _request(project: str, topic: dict[str, Any], org_in_transit: bool) -> dict[str, Any]:
    """What reconcile's CreateTopic sends for the spec."""
    labels = {**topic["labels"], "reconcile-managed": "true", "reconcile-owner": "default",
              "reconcile-plan": "0123456789abcdef"}
    request: dict[str, Any] = {"name": f"projects/{project}/topics/{topic['name']}",
                               "labels": labels}
    if topic["regions"] is not None:
        request["message_storage_policy"] = {
            "allowed_persistence_regions": topic["regions"],
            "enforce_in_transit": bool(org_in_transit or topic["in_transit"]),
        }
    return request


def _documents(org: str, project: str, generated: list[Any], org_in_transit: bool
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(custom constraints, policies) in the Org Policy v2 JSON shape."""
    custom, policies = [], []
    for i, (condition, action, methods, mode) in enumerate(generated):
        constraint_id = f"custom.rule{i}"
        custom.append({
            "name": f"{org}/customConstraints/{constraint_id}",
            "resourceTypes": ["pubsub.googleapis.com/Topic"], "methodTypes": methods,
            "condition": condition, "actionType": action, "description": f"Rule {i}.",
        })
        key = "spec" if mode == "enforced" else "dryRunSpec"
        policies.append({"name": f"projects/{project}/policies/{constraint_id}",
                         key: {"rules": [{"enforce": True}]}})
    if org_in_transit:
        policies.append({"name": f"{org}/policies/pubsub.enforceInTransitRegions",
                         "spec": {"rules": [{"enforce": True}]}})
    return custom, policies


def _put(orgpolicy: Any, org: str, custom: list[dict[str, Any]],
         policies: list[dict[str, Any]]) -> None:
    """The constraints and policies, through the real Org Policy client."""
    for constraint in custom:
        orgpolicy.create_custom_constraint(parent=org, custom_constraint={
            "name": constraint["name"], "resource_types": constraint["resourceTypes"],
            "method_types": constraint["methodTypes"], "condition": constraint["condition"],
            "action_type": constraint["actionType"], "description": constraint["description"],
        })
    for policy in policies:
        orgpolicy.create_policy(parent=policy["name"].split("/policies/")[0], policy={
            "name": policy["name"], **{
                ("dry_run_spec" if k == "dryRunSpec" else k): v
                for k, v in policy.items() if k != "name"
            }})


def _validate(tmp: Path, project: str, topic: dict[str, Any], org: str,
              custom: list[dict[str, Any]], policies: list[dict[str, Any]]) -> Any:
    specs = tmp / "specs"
    specs.mkdir(parents=True)
    (specs / "topic.yaml").write_text(_spec(project, topic))
    snapshot = tmp / "org-policy.yaml"
    snapshot.write_text(yaml.safe_dump_all(
        [*custom, *policies, {"ancestry": {f"projects/{project}": org}}]
    ))
    return validate_paths([specs], snapshot)


@pytest.fixture(scope="module")
def world() -> Any:
    from reconciler.backends.clients import orgpolicy_client, publisher_client

    with running_local_server() as server:
        yield server, publisher_client(server.address), orgpolicy_client(server.address)


@settings(max_examples=40, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(topic=topics, generated=constraints, org_in_transit=st.booleans())
@example(  # reconcile's own three labels count: one declared label makes four
    topic={"name": "orders", "labels": {"team": "pay"}, "regions": ["us-east1"],
           "in_transit": None},
    generated=[("size(resource.labels) <= 3", "ALLOW", ["CREATE"], "enforced")],
    org_in_transit=False,
)
@example(  # the org's in-transit policy sends enforceInTransit: true
    topic={"name": "orders", "labels": {}, "regions": ["us-east1"], "in_transit": None},
    generated=[("has(resource.messageStoragePolicy.enforceInTransit)", "DENY", ["CREATE"],
                "enforced")],
    org_in_transit=True,
)
def test_validate_agrees_with_the_local_server(
    world: Any, tmp_path_factory: pytest.TempPathFactory, topic: dict[str, Any],
    generated: list[Any], org_in_transit: bool,
) -> None:
    server, publisher, orgpolicy = world
    n = next(_numbers)
    org, project = f"organizations/{9000 + n}", f"agree-{n}"
    custom, policies = _documents(org, project, generated, org_in_transit)
    result = _validate(tmp_path_factory.mktemp("agree"), project, topic, org, custom, policies)
    found = [d for d in result.diagnostics.items if d.code.startswith("org-custom")]
    assert not [d for d in found if d.code == "org-custom-at-plan"]  # managed fields only
    errors = [d for d in found if d.severity is Severity.ERROR]
    unevaluable = any(d.code == "org-custom-unevaluable" for d in errors)
    refused_by = {d.message.split("custom constraint ", 1)[1].split()[0].rstrip(":")
                  for d in errors if d.code == "org-custom-constraint"}

    server.set_ancestry(f"projects/{project}", org)
    _put(orgpolicy, org, custom, policies)
    request = _request(project, topic, org_in_transit)
    try:
        publisher.create_topic(request=request)
    except exceptions.FailedPrecondition as exc:
        assert errors, f"the server refused what validate accepts: {exc.message}"
        if not unevaluable:
            named = set(exc.metadata["customConstraints"].split(","))
            assert named == {f"customConstraints/{c}" for c in refused_by}, exc.message
        return
    assert not errors, f"validate refuses what the server accepts: {errors}"


def test_the_request_model_is_what_apply_sends(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    topic = {"name": "orders", "labels": {"team": "pay"}, "regions": ["europe-west1"],
             "in_transit": None}
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "topic.yaml").write_text(_spec("model-proj", topic))
    result = run_cli("apply", str(specs), "--emulator", local_server.address,
                     "--auto-approve")
    assert result.exit_code == 0, result.stderr
    live = publisher_client.get_topic(topic="projects/model-proj/topics/orders")
    modelled = _request("model-proj", topic, org_in_transit=False)
    assert set(live.labels) == set(modelled["labels"])
    assert {k: v for k, v in live.labels.items() if k != "reconcile-plan"} == {
        k: v for k, v in modelled["labels"].items() if k != "reconcile-plan"
    }
    assert list(live.message_storage_policy.allowed_persistence_regions) == ["europe-west1"]


# -- plan: creates and updates of live topics ----------------------------------------

live_topics = st.one_of(st.none(), st.fixed_dictionaries({
    "labels": st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES),
                              max_size=2),
    "regions": st.one_of(st.none(), st.lists(st.sampled_from(REGIONS), min_size=1,
                                             max_size=2, unique=True)),
}))
plan_constraints = st.lists(
    st.tuples(
        conditions(),
        st.sampled_from(["ALLOW", "DENY"]),
        st.just(["CREATE", "UPDATE"]),
        st.sampled_from(["enforced", "enforced", "dry-run"]),
    ),
    min_size=1, max_size=3,
)


def _plan_json(run_cli: Any, server: Any, root: Path) -> tuple[int, dict[str, Any] | None, str]:
    result = run_cli("plan", str(root), "--emulator", server.address, "--format", "json")
    data = json.loads(result.stdout) if result.stdout.strip().startswith("{") else None
    return result.exit_code, data, result.stderr


@settings(max_examples=20, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(live=live_topics, topic=topics, generated=plan_constraints)
@example(  # a live topic that already violates; the change only adds a label
    live={"labels": {}, "regions": ["us-east1"]},
    topic={"name": "orders", "labels": {"team": "pay"}, "regions": None, "in_transit": None},
    generated=[(STORAGE[0][0].format("europe-"), "ALLOW", ["CREATE", "UPDATE"], "enforced")],
)
def test_plan_agrees_with_the_local_server(
    world: Any, run_cli: Any, tmp_path_factory: pytest.TempPathFactory,
    live: dict[str, Any] | None, topic: dict[str, Any], generated: list[Any],
) -> None:
    server, publisher, orgpolicy = world
    n = next(_numbers)
    org, project = f"organizations/{19000 + n}", f"plan-{n}"
    name = f"projects/{project}/topics/{topic['name']}"
    if live is not None:  # the live topic, made before any constraint
        request: dict[str, Any] = {"name": name, "labels": {
            **live["labels"], "reconcile-managed": "true", "reconcile-owner": "default"}}
        if live["regions"] is not None:
            request["message_storage_policy"] = {"allowed_persistence_regions": live["regions"]}
        publisher.create_topic(request=request)
    root = tmp_path_factory.mktemp("plan") / "specs"
    root.mkdir()
    # No regions: `inherit` for a new topic, left unmanaged for a live one.
    (root / "topic.yaml").write_text(_spec(project, topic, unmanaged=live is not None))
    (root / "org-policy.yaml").write_text(f"ancestry:\n  projects/{project}: {org}\n")
    server.set_ancestry(f"projects/{project}", org)
    # The call apply would make, from a plan made before the constraints exist.
    code, before, stderr = _plan_json(run_cli, server, root)
    assert code == 0 and before is not None, stderr
    (rc,) = [c for c in before["resource_changes"] if c["address"] == name]
    custom, policies = _documents(org, project, generated, False)
    _put(orgpolicy, org, custom, policies)
    code, planned, stderr = _plan_json(run_cli, server, root)
    # The tree's snapshot knows none of the constraints: the plan says it is stale.
    codes = {d["code"] for d in (planned or {}).get("diagnostics", [])}
    assert "org-policy-stale" in codes or "warning[org-policy-stale]" in stderr
    said = [line for line in stderr.splitlines() if "[org-custom" in line]
    errors = [line for line in said if "error[org-custom" in line]
    assert not [line for line in said if "org-custom-not-checked" in line]
    if rc["request"] is None:  # nothing to send: nothing to judge
        assert not errors
        return
    body = dict(rc["request"]["topic"])
    marker = "0123456789abcdef"
    if rc["request"]["method"] == "CreateTopic":
        body["labels"] = {**body.get("labels", {}), "reconcile-plan": marker}
        call = lambda: publisher.create_topic(request=body)  # noqa: E731
    else:  # as apply makes it: the labels read now, merged, and the plan's marker
        labels = dict(publisher.get_topic(topic=name).labels)
        merge = rc["request"].get("label_merge") or {}
        labels = {k: v for k, v in labels.items() if k not in merge.get("remove", [])}
        labels.update(merge.get("set", {}))
        body["labels"] = {**labels, "reconcile-plan": marker}
        mask = sorted(set(rc["request"]["update_mask"]) | {"labels"})
        call = lambda: publisher.update_topic(  # noqa: E731
            request={"topic": body, "update_mask": {"paths": mask}}
        )
    try:
        call()
    except exceptions.FailedPrecondition as exc:
        assert code == 1 and errors, f"the server refused what plan accepts: {exc.message}"
        return
    assert code == 0 and not errors, f"plan refuses what the server accepts: {errors}"
