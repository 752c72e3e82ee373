"""Property: for generated topics and custom constraints, what `validate` and `plan`
say is what the local server answers to the call reconcile would make, through the
real Pub/Sub, Schema and Org Policy clients. Each field family a condition may read
has its constraints: the name, labels, storage policy and in-transit flag, the
retention, the key, the schema settings (the schemas exist on the server), and the
ingestion source and message transforms, which specs do not manage: `validate`
defers those to plan time, and `plan` decides them against the live topic, where
the test sets them through the real client.

- `validate` (its exit code and JSON diagnostics): the server refuses CreateTopic
  with the constraints validate reports as errors, each at the spec line of a field
  its condition reads, plus at most the enforced ones validate defers to plan time
  (one `org-custom-at-plan` warning per constraint reading a field the spec leaves
  unmanaged, naming it); validate reporting no error and deferring none, the server
  accepts. A dry-run constraint is a warning and never refuses.
- `plan` (its exit code and error lines), from a snapshot made before the
  constraints (stale: the plan names each constraint the snapshot lacks): the call
  the plan makes (CreateTopic, or UpdateTopic of a live topic that may already
  violate) is refused by the server exactly when the plan reports an error.

The CreateTopic request `validate` is compared with is the test's own model of what
apply sends (the declared labels plus reconcile's three, the storage policy as
declared, enforceInTransit forced on by the org's in-transit policy, the retention,
key and schema settings as declared); `test_the_request_model_is_what_apply_sends`
checks that model against a topic `reconcile apply` really created."""

from __future__ import annotations

import itertools
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.api_core import exceptions
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reconciler.spec.orgrules import PLAN_DECIDES
from reconciler.yamltext import dump_all
from tests.server_support import resource_manager, running_local_server

REGIONS = ("europe-west1", "europe-west4", "us-east1", "us-central1")
LABEL_KEYS = ("team", "tier", "tmp-x")
LABEL_VALUES = ("pay", "ops", "")
KEYS = (
    "projects/keys-eu/locations/europe-west1/keyRings/eu/cryptoKeys/k1",
    "projects/keys-us/locations/us-east1/keyRings/us/cryptoKeys/k2",
)
RETENTIONS = {"10m": 600, "2d": 172800}  # as declared: seconds on the wire
SCHEMA_IDS = ("orders", "audit")
AVRO = json.dumps({"type": "record", "name": "Order",
                   "fields": [{"name": "id", "type": "string"}]})
INGESTION = {
    "awsKinesis": {"aws_kinesis": {
        "stream_arn": "arn:aws:kinesis:us-east-1:111111111111:stream/s",
        "consumer_arn": "arn:aws:kinesis:us-east-1:111111111111:stream/s/consumer/c:1",
        "aws_role_arn": "arn:aws:iam::111111111111:role/r",
        "gcp_service_account": "ingest@proj.iam.gserviceaccount.com",
    }},
    "cloudStorage": {"cloud_storage": {"bucket": "landing", "text_format": {}}},
}
MARKER = "0123456789abcdef"
_numbers = itertools.count(1)

# One family of conditions per field of a topic: (template, parameter choices). A
# condition that reads a field without has() cannot be evaluated on a topic without
# it: that verdict must agree too.
FAMILIES: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "name": [
        ("resource.name.endsWith('{0}')", ("-test", "s", "x")),
        ("resource.name.matches('^projects/[a-z0-9-]+/topics/{0}')", ("ord", "a[a-z]+", "t")),
        ("resource.name.contains('{0}')", ("der", "/topics/a", "zz")),
    ],
    "labels": [
        ("'{0}' in resource.labels", LABEL_KEYS),
        ("resource.labels['{0}'] == 'pay'", LABEL_KEYS),  # fails on a missing key
        ("size(resource.labels) <= {0}", ("4", "5", "6")),
        ("resource.labels.exists(k, k.startsWith('{0}'))", ("tmp-", "te", "reconcile-")),
    ],
    "storage": [
        ("has(resource.messageStoragePolicy) && resource.messageStoragePolicy"
         ".allowedPersistenceRegions.all(r, r.startsWith('{0}'))", ("europe-", "us-")),
        ("resource.messageStoragePolicy.allowedPersistenceRegions.exists(r, r == '{0}')",
         REGIONS),  # fails when no policy is sent
        ("has(resource.messageStoragePolicy) && size(resource.messageStoragePolicy"
         ".allowedPersistenceRegions) <= {0}", ("1", "2")),
    ],
    "in_transit": [
        ("has(resource.messageStoragePolicy.enforceInTransit){0}", ("", " == false")),
    ],
    "retention": [
        ("has(resource.messageRetentionDuration){0}", ("", " == false")),
        ("has(resource.messageRetentionDuration) && resource.messageRetentionDuration == '{0}'",
         ("600s", "172800s")),
        ("duration(resource.messageRetentionDuration) >= duration('{0}')", ("1h", "24h")),
    ],
    "kms": [
        ("has(resource.kmsKeyName){0}", ("", " == false")),
        ("has(resource.kmsKeyName) && resource.kmsKeyName.contains('/keyRings/{0}/')",
         ("eu", "us")),
        ("resource.kmsKeyName.startsWith('projects/keys-{0}')", ("eu", "us")),
    ],
    "schema": [
        ("has(resource.schemaSettings) && resource.schemaSettings.encoding == '{0}'",
         ("JSON", "BINARY")),
        ("has(resource.schemaSettings) && has(resource.schemaSettings.{0})",
         ("firstRevisionId", "lastRevisionId")),
        ("resource.schemaSettings.schema.endsWith('/schemas/{0}')", SCHEMA_IDS),
    ],
    "ingestion": [
        ("has(resource.ingestionDataSourceSettings){0}", ("", " == false")),
        ("has(resource.ingestionDataSourceSettings) && "
         "has(resource.ingestionDataSourceSettings.{0})", ("awsKinesis", "cloudStorage")),
    ],
    "transforms": [
        ("has(resource.messageTransforms){0}", ("", " == false")),
        ("has(resource.messageTransforms) && resource.messageTransforms.exists(t, "
         "t.javascriptUdf.functionName == '{0}')", ("redact", "f")),
    ],
}
# The resource fields each family reads, and the spec keys that declare them.
READS = {
    "resource.name": ("name", {"name"}),
    "resource.labels": ("labels", {"labels", *LABEL_KEYS}),
    "resource.messageStoragePolicy": (
        "messageStoragePolicy",
        {"messageStoragePolicy", "allowedPersistenceRegions", "enforceInTransit"},
    ),
    "resource.messageRetentionDuration": ("retention", {"messageRetentionDuration"}),
    "resource.kmsKeyName": ("kms", {"kmsKeyName"}),
    "resource.schemaSettings": (
        "schema", {"schemaSettings", "schema", "encoding", "firstRevisionId", "lastRevisionId"},
    ),
    "resource.ingestionDataSourceSettings": ("ingestion", set()),
    "resource.messageTransforms": ("transforms", set()),
}
_ID = re.compile(r"custom constraint (custom\.rule\d+)")


def condition(family: str, index: int = 0, choice: int = 0) -> str:
    template, choices = FAMILIES[family][index]
    return template.format(choices[choice])


@st.composite
def conditions(draw: Any) -> str:
    family = draw(st.sampled_from(sorted(FAMILIES)))
    template, choices = draw(st.sampled_from(FAMILIES[family]))
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
schema_settings = st.one_of(st.none(), st.fixed_dictionaries({
    "id": st.sampled_from(SCHEMA_IDS), "encoding": st.sampled_from(["JSON", "BINARY"]),
    "first": st.booleans(), "last": st.booleans(),
}))
topics = st.fixed_dictionaries({
    "name": st.sampled_from(["orders", "orders-test", "audit", "tmpx"]),
    "labels": st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES),
                              max_size=3),
    "regions": st.one_of(st.none(), st.lists(st.sampled_from(REGIONS), min_size=1,
                                             max_size=3, unique=True)),
    "in_transit": st.sampled_from([None, True, False]),
    "retention": st.sampled_from([None, *RETENTIONS]),
    "kms": st.sampled_from([None, *KEYS]),
    "schema": schema_settings,
})


def _topic(**fields: Any) -> dict[str, Any]:
    """A generated topic's shape, for the explicit examples."""
    out: dict[str, Any] = {"name": "orders", "labels": {}, "regions": None,
                           "in_transit": None, "retention": None, "kms": None, "schema": None}
    out.update(fields)
    return out


def _schema_settings(project: str, schema: dict[str, Any], revisions: dict[str, str],
                     spec: bool) -> dict[str, Any]:
    """A topic's schema settings: the spec's keys (`spec`) or the request's."""
    name = f"projects/{project}/schemas/{schema['id']}"
    revision = revisions[schema["id"]]
    if spec:
        out = {"schema": name, "encoding": schema["encoding"]}
        if schema["first"]:
            out["firstRevisionId"] = revision
        if schema["last"]:
            out["lastRevisionId"] = revision
        return out
    return {"schema": name, "encoding": schema["encoding"],
            "first_revision_id": revision if schema["first"] else "",
            "last_revision_id": revision if schema["last"] else ""}


def _spec(project: str, topic: dict[str, Any], revisions: dict[str, str],
          unmanaged: bool = False) -> str:
    """The Topic document (`regions` None: `inherit`, or, `unmanaged`, no policy;
    retention, key and schema None: not declared)."""
    # The tool's own writer: a revision id such as 4e354008 is quoted (bare, YAML 1.2
    # reads a number).
    return dump_all([_doc(project, topic, revisions, unmanaged)])


def _doc(project: str, topic: dict[str, Any], revisions: dict[str, str],
         unmanaged: bool = False) -> dict[str, Any]:
    """The Topic document `_spec` writes."""
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
    if topic["retention"] is not None:
        spec["messageRetentionDuration"] = topic["retention"]
    if topic["kms"] is not None:
        spec["kmsKeyName"] = topic["kms"]
    if topic["schema"] is not None:
        spec["schemaSettings"] = _schema_settings(project, topic["schema"], revisions, True)
    return {
        "apiVersion": "reconcile.pubsub/v1", "kind": "Topic",
        "metadata": {"project": project, "name": topic["name"]}, "spec": spec,
    }


def _request(project: str, topic: dict[str, Any], org_in_transit: bool,
             revisions: dict[str, str]) -> dict[str, Any]:
    """What reconcile's CreateTopic sends for the spec."""
    labels = {**topic["labels"], "reconcile-managed": "true", "reconcile-owner": "default",
              "reconcile-plan": MARKER}
    request: dict[str, Any] = {"name": f"projects/{project}/topics/{topic['name']}",
                               "labels": labels}
    if topic["regions"] is not None:
        request["message_storage_policy"] = {
            "allowed_persistence_regions": topic["regions"],
            "enforce_in_transit": bool(org_in_transit or topic["in_transit"]),
        }
    return {**request, **_settings_request(project, topic, revisions)}


def _settings_request(project: str, shape: dict[str, Any], revisions: dict[str, str]
                      ) -> dict[str, Any]:
    """The retention, key and schema settings of a topic's shape, as a request sends
    them (a field not set is not sent)."""
    out: dict[str, Any] = {}
    if shape["retention"] is not None:
        out["message_retention_duration"] = {"seconds": RETENTIONS[shape["retention"]]}
    if shape["kms"] is not None:
        out["kms_key_name"] = shape["kms"]
    if shape["schema"] is not None:
        out["schema_settings"] = _schema_settings(project, shape["schema"], revisions, False)
    return out


def _documents(org: str, project: str, generated: list[Any], org_in_transit: bool,
               org_cmek: bool = False, enforced_at: str | None = None,
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(custom constraints, policies) in the Org Policy v2 JSON shape; `org_cmek`: the
    organization requires a customer-managed key of new topics; `enforced_at`: the
    resource whose policies enforce the custom constraints (the project by default)."""
    custom, policies = [], []
    for i, (text, action, methods, mode) in enumerate(generated):
        constraint_id = f"custom.rule{i}"
        custom.append({
            "name": f"{org}/customConstraints/{constraint_id}",
            "resourceTypes": ["pubsub.googleapis.com/Topic"], "methodTypes": methods,
            "condition": text, "actionType": action, "description": f"Rule {i}.",
        })
        key = "spec" if mode == "enforced" else "dryRunSpec"
        policies.append({"name": f"{enforced_at or 'projects/' + project}/policies/"
                                 f"{constraint_id}",
                         key: {"rules": [{"enforce": True}]}})
    if org_in_transit:
        policies.append({"name": f"{org}/policies/pubsub.enforceInTransitRegions",
                         "spec": {"rules": [{"enforce": True}]}})
    if org_cmek:
        policies.append({"name": f"{org}/policies/gcp.restrictNonCmekServices", "spec": {
            "rules": [{"values": {"deniedValues": ["pubsub.googleapis.com"]}}]}})
    return custom, policies


def _snake(value: Any) -> Any:
    """A policy's JSON with the field names the client's proto-plus types take."""
    if isinstance(value, dict):
        return {re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower(): _snake(v)
                for k, v in value.items()}
    return [_snake(v) for v in value] if isinstance(value, list) else value


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
            "name": policy["name"], **_snake({k: v for k, v in policy.items() if k != "name"}),
        })


def _schemas(client: Any, project: str) -> dict[str, str]:
    """Both schemas in the project, through the real Schema client: id -> revision."""
    return {
        schema_id: client.create_schema(
            parent=f"projects/{project}", schema={"type_": "AVRO", "definition": AVRO},
            schema_id=schema_id,
        ).revision_id
        for schema_id in SCHEMA_IDS
    }


def _fields_read(text: str) -> set[str]:
    """The resource fields (`READS` keys) a condition reads."""
    return {field for field in READS if field in text}


def _unmanaged_reads(text: str, topic: dict[str, Any]) -> set[str]:
    """The fields a condition reads that the topic's spec leaves unmanaged."""
    out = set()
    for field in _fields_read(text):
        what = READS[field][0]
        if what in ("ingestion", "transforms") or (
            what in ("retention", "kms", "schema") and topic[what] is None
        ) or (what == "messageStoragePolicy" and topic["regions"] is None):  # inherit
            out.add(field)
    return out


def _key_at(spec: str, line: int) -> str:
    """The YAML key declared at `line` (1-based), or, on a list item, its list's key."""
    lines = spec.splitlines()
    for text in reversed(lines[:line]):
        stripped = text.strip()
        if not stripped.startswith("- ") and ":" in stripped:
            return stripped.split(":", 1)[0]
    return ""


class DryRuns(logging.Handler):
    """What the local server logs of dry-run constraints: (constraint id, method,
    resource name) for each it says would refuse a call."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seen: list[tuple[str, str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "would refuse" in record.getMessage():
            constraint, method, name = record.args  # type: ignore[misc]
            self.seen.append((str(constraint), str(method), str(name)))

    def of(self, name: str) -> set[str]:
        """The dry-run constraints that would have refused a call on `name`."""
        return {c for c, _, n in self.seen if n == name}


@pytest.fixture(scope="module")
def world() -> Any:
    from reconciler.backends.clients import orgpolicy_client, publisher_client, schema_client

    logger = logging.getLogger("reconciler.localserver.pubsub.constraints")
    dry_runs, level = DryRuns(), logger.level
    logger.addHandler(dry_runs)
    logger.setLevel(logging.INFO)
    try:
        with running_local_server() as server:
            hierarchy = resource_manager(server.address)
            try:
                yield (server, publisher_client(server.address),
                       orgpolicy_client(server.address), schema_client(server.address),
                       dry_runs, hierarchy)
            finally:
                hierarchy.close()
    finally:
        logger.removeHandler(dry_runs)
        logger.setLevel(level)


trees = st.lists(st.tuples(topics, st.booleans()), min_size=1, max_size=2,
                 unique_by=lambda t: t[0]["name"])


@settings(max_examples=50, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(tree=trees, generated=constraints, org_in_transit=st.booleans(),
       org_cmek=st.booleans())
@example(  # enforceInTransit: false written under the org's in-transit policy: a new
    # topic is refused (the service sets it true), an existing one may keep it off
    tree=[(_topic(regions=["europe-west1"], in_transit=False), False)],
    generated=[
        ("has(resource.messageStoragePolicy.enforceInTransit)", "ALLOW", ["CREATE"],
         "enforced"),
        ("has(resource.messageStoragePolicy.enforceInTransit)", "DENY", ["CREATE", "UPDATE"],
         "enforced"),
    ],
    org_in_transit=True, org_cmek=False,
)
@example(  # the same, on a topic that exists with it on: the UPDATE check refuses it
    tree=[(_topic(name="orders", regions=["europe-west1"], in_transit=False), True)],
    generated=[
        ("has(resource.messageStoragePolicy.enforceInTransit)", "DENY", ["CREATE", "UPDATE"],
         "enforced"),
    ],
    org_in_transit=True, org_cmek=False,
)
@example(  # reconcile's own three labels count: one declared label makes four
    tree=[(_topic(labels={"team": "pay"}, regions=["us-east1"]), False)],
    generated=[("size(resource.labels) <= 3", "ALLOW", ["CREATE"], "enforced")],
    org_in_transit=False, org_cmek=False,
)
@example(  # enforceInTransit not written under the org's in-transit policy: the plan
    # turns it on for an existing topic too, so an UPDATE-binding refusal is an error
    tree=[(_topic(name="orders-test", regions=["europe-west1"]), False)],
    generated=[("has(resource.messageStoragePolicy.enforceInTransit)", "DENY",
                ["CREATE", "UPDATE"], "enforced")],
    org_in_transit=True, org_cmek=False,
)
@example(  # the org's in-transit policy sends enforceInTransit: true
    tree=[(_topic(regions=["us-east1"]), False)],
    generated=[(condition("in_transit"), "DENY", ["CREATE"], "enforced")],
    org_in_transit=True, org_cmek=False,
)
@example(  # one declared field of each family the specs manage, each refused ...
    tree=[(_topic(retention="10m", kms=KEYS[1],
                  schema={"id": "audit", "encoding": "JSON", "first": True, "last": False}),
           False)],
    generated=[
        (condition("retention", 1, 1), "ALLOW", ["CREATE"], "enforced"),
        (condition("kms", 1, 0), "ALLOW", ["CREATE", "UPDATE"], "enforced"),
        (condition("schema", 0, 1), "ALLOW", ["CREATE"], "enforced"),
        (condition("schema", 1, 0), "DENY", ["CREATE"], "dry-run"),  # ... but this one
    ],
    org_in_transit=False, org_cmek=False,
)
@example(  # the fields a spec leaves unmanaged: deferred, and what the server says
    tree=[(_topic(name="audit"), False)],
    generated=[
        (condition("ingestion"), "DENY", ["CREATE"], "enforced"),
        (condition("transforms", 1, 0), "ALLOW", ["CREATE", "UPDATE"], "enforced"),
        (condition("kms", 2, 0), "ALLOW", ["CREATE"], "dry-run"),
    ],
    org_in_transit=False, org_cmek=False,
)
@example(  # create-only and CMEK: the new topic is refused, the existing one is not
    tree=[(_topic(labels={"team": "pay"}), True), (_topic(name="audit"), False)],
    generated=[(condition("labels", 0, 1), "ALLOW", ["CREATE"], "enforced")],
    org_in_transit=False, org_cmek=True,
)
@example(  # create-and-update: refused whether or not the topic exists
    tree=[(_topic(regions=["us-east1"]), True), (_topic(name="audit", regions=["us-east1"]),
                                                 False)],
    generated=[(condition("storage", 0, 0), "ALLOW", ["CREATE", "UPDATE"], "enforced")],
    org_in_transit=True, org_cmek=False,
)
def test_validate_agrees_with_the_local_server(
    world: Any, run_cli: Any, tmp_path_factory: pytest.TempPathFactory,
    tree: list[tuple[dict[str, Any], bool]], generated: list[Any], org_in_transit: bool,
    org_cmek: bool,
) -> None:
    """Offline, nothing says whether a topic exists: what validate reports as an error
    the server refuses whether it creates the topic or updates it to what the spec
    says; what it leaves to plan (a constraint that binds only creation, CMEK) the
    server refuses of a new topic only. Some topics of the tree exist (made through
    the real client before the constraints, as the spec says but for reconcile's plan
    marker, so that the call reconcile makes, an UpdateTopic of the labels, leaves the
    topic as the CreateTopic would make it)."""
    server, publisher, orgpolicy, schemas, dry_runs, _ = world
    n = next(_numbers)
    org, project = f"organizations/{9000 + n}", f"agree-{n}"
    revisions = _schemas(schemas, project)
    custom, policies = _documents(org, project, generated, org_in_transit, org_cmek)
    tmp = tmp_path_factory.mktemp("agree")
    spec = dump_all([_doc(project, topic, revisions) for topic, _ in tree])
    (tmp / "specs").mkdir()
    (tmp / "specs" / "topic.yaml").write_text(spec)
    (tmp / "org-policy.yaml").write_text(yaml.safe_dump_all(
        [*custom, *policies, {"ancestry": {f"projects/{project}": org}}]
    ))
    result = run_cli("validate", str(tmp / "specs"), "--org-policy",
                     str(tmp / "org-policy.yaml"), "--format", "json")
    said = json.loads(result.stdout)
    errors = [d for d in said if d["severity"] == "error"]
    assert result.exit_code == (1 if errors else 0), result.output
    assert all(d["code"].startswith("org-custom") for d in errors), (
        [d["message"] for d in errors], spec)
    modes = {f"custom.rule{i}": g[3] for i, g in enumerate(generated)}
    updates = {f"custom.rule{i}" for i, g in enumerate(generated) if "UPDATE" in g[2]}
    # Deferred: once per constraint reading a field some spec does not manage, naming it.
    deferred = {_ID.search(d["message"]).group(1): d  # type: ignore[union-attr]
                for d in said if d["code"] == "org-custom-at-plan"}
    unmanaged = {(f"custom.rule{i}", t["name"]): _unmanaged_reads(g[0], t)
                 for i, g in enumerate(generated) for t, _ in tree}
    assert set(deferred) == {c for (c, _), fields in unmanaged.items() if fields}, said
    assert len([d for d in said if d["code"] == "org-custom-at-plan"]) == len(deferred)
    for (cid, _), fields in unmanaged.items():
        assert all(field in deferred[cid]["message"] for field in fields), deferred[cid]
    for d in said:  # a finding about one topic names it and sits in its document
        if d["code"] != "org-custom-at-plan" and d["topic"] is not None:
            assert d["topic"] in d["message"], d
            assert f"name: {d['topic'].rsplit('/', 1)[1]}" in _document_at(spec, d["line"])

    server.set_ancestry(f"projects/{project}", org)
    live = [t for t, exists in tree if exists]
    for topic in live:  # made before the constraints, as the spec says
        request = _request(project, topic, org_in_transit, revisions)
        request["labels"] = {k: v for k, v in request["labels"].items()
                             if k != "reconcile-plan"}
        publisher.create_topic(request=request)
    _put(orgpolicy, org, custom, policies)
    for topic, exists in tree:
        name = f"projects/{project}/topics/{topic['name']}"
        mine = [d for d in said if d["topic"] == name]

        def ids(code: str, severity: str, mine: list[dict[str, Any]] = mine) -> set[str]:
            return {_ID.search(d["message"]).group(1)  # type: ignore[union-attr]
                    for d in mine if d["code"] == code and d["severity"] == severity}

        refused_by = ids("org-custom-constraint", "error")
        unevaluable = ids("org-custom-unevaluable", "error")
        left = {_ID.search(d["message"]).group(1)  # type: ignore[union-attr]
                for d in mine if d["code"].startswith("org-custom") and PLAN_DECIDES
                in d["message"]}
        dry_warned = {c for code in ("org-custom-constraint", "org-custom-unevaluable")
                      for c in ids(code, "warning")} - left
        # Each refusal at the line of a field its condition reads (the name when the
        # document declares none of them).
        for cid in refused_by:
            text = generated[int(cid.removeprefix("custom.rule"))][0]
            keys = {"name"}.union(*(READS[f][1] for f in _fields_read(text)))
            (line,) = [d["line"] for d in mine if d["code"] == "org-custom-constraint"
                       and cid in d["message"]]
            assert _key_at(spec, line) in keys, (cid, line, spec)
        assert all(modes[c] == "dry-run" for c in dry_warned), said
        assert all(modes[c] == "enforced" for c in [*refused_by, *unevaluable, *left]), said
        # An error is a refusal whether the topic is created or updated (it may exist);
        # what binds creation alone is left to plan, and what binds updates too where
        # the spec writes enforceInTransit: false under the org's in-transit policy (a
        # topic that exists keeps it off through the plan's update, whose check may
        # pass: docs/custom-constraints.md).
        assert refused_by | unevaluable <= updates, said
        kept_off = org_in_transit and topic["in_transit"] is False and (
            topic["regions"] is not None)
        assert kept_off or not left & updates, said
        cmek = [d for d in mine if d["code"] == "org-cmek-required"]
        assert len(cmek) == (1 if org_cmek and topic["kms"] is None else 0), mine
        assert all(PLAN_DECIDES in d["message"] and d["severity"] == "warning" for d in cmek)
        mine_deferred = {c for (c, t), fields in unmanaged.items()
                         if t == topic["name"] and fields}
        deferred_enforced = {c for c in mine_deferred if modes[c] == "enforced"}
        deferred_dry = mine_deferred - deferred_enforced
        request = _request(project, topic, org_in_transit, revisions)
        if exists:  # the call reconcile makes: the labels, with its plan marker
            refused_by &= updates
            unevaluable &= updates
            deferred_enforced &= updates
            deferred_dry &= updates
            dry_warned &= updates
            # What validate left to plan binds the UpdateTopic only where the spec keeps
            # enforceInTransit off (above); the rest binds creation alone.
            left, cmek = (left & updates if kept_off else set()), []
            call = lambda request=request: publisher.update_topic(  # noqa: E731
                request={"topic": {"name": request["name"], "labels": request["labels"]},
                         "update_mask": {"paths": ["labels"]}})
        else:
            call = lambda request=request: publisher.create_topic(  # noqa: E731
                request=request)
        try:
            call()
        except exceptions.FailedPrecondition as exc:
            assert refused_by or unevaluable or left or cmek or deferred_enforced, (
                f"the server refused what validate accepts and decides: {exc.message}"
            )
            if exc.reason == "CUSTOM_ORG_POLICY_VIOLATION":
                assert not unevaluable and not cmek, exc.message
                named = {c.removeprefix("customConstraints/")
                         for c in exc.metadata["customConstraints"].split(",")}
                assert refused_by | left <= named <= refused_by | left | deferred_enforced, (
                    exc.message, said)
                logged = dry_runs.of(name)  # every constraint was judged: each dry run too
                assert dry_warned <= logged <= dry_warned | deferred_dry, (logged, said)
            elif "restrictNonCmekServices" in exc.message:
                assert cmek, exc.message  # checked first, before the custom constraints
            else:  # a condition the server could not evaluate
                assert "could not evaluate" in exc.message, exc.message
                assert unevaluable or left or deferred_enforced, exc.message
            continue
        assert not (refused_by or unevaluable or left or cmek), (
            f"validate refuses what the server accepts: {mine}")
        logged = dry_runs.of(name)
        assert dry_warned <= logged <= dry_warned | deferred_dry, (logged, said)


def _document_at(spec: str, line: int) -> str:
    """The YAML document of a multi-document file that holds `line` (1-based)."""
    start = 0
    lines = spec.splitlines()
    for i, text in enumerate(lines[:line]):
        if text.startswith("---"):
            start = i
    end = next((i for i in range(line, len(lines)) if lines[i].startswith("---")), len(lines))
    return "\n".join(lines[start:end])


def test_the_request_model_is_what_apply_sends(
    run_cli: Any, local_server: Any, publisher_client: Any, schema_client: Any,
    tmp_path: Path,
) -> None:
    revisions = _schemas(schema_client, "model-proj")
    topic = _topic(labels={"team": "pay"}, regions=["europe-west1"], retention="2d",
                   kms=KEYS[0],
                   schema={"id": "orders", "encoding": "BINARY", "first": True, "last": False})
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "topic.yaml").write_text(_spec("model-proj", topic, revisions))
    result = run_cli("apply", str(specs), "--emulator", local_server.address,
                     "--auto-approve")
    assert result.exit_code == 0, result.stderr
    live = publisher_client.get_topic(topic="projects/model-proj/topics/orders")
    modelled = _request("model-proj", topic, org_in_transit=False, revisions=revisions)
    assert set(live.labels) == set(modelled["labels"])
    assert {k: v for k, v in live.labels.items() if k != "reconcile-plan"} == {
        k: v for k, v in modelled["labels"].items() if k != "reconcile-plan"
    }
    assert list(live.message_storage_policy.allowed_persistence_regions) == ["europe-west1"]
    assert live.message_retention_duration.total_seconds() == (
        modelled["message_retention_duration"]["seconds"]
    )
    assert live.kms_key_name == modelled["kms_key_name"]
    settings_sent = modelled["schema_settings"]
    assert (live.schema_settings.schema, live.schema_settings.encoding.name,
            live.schema_settings.first_revision_id, live.schema_settings.last_revision_id) == (
        settings_sent["schema"], settings_sent["encoding"],
        settings_sent["first_revision_id"], settings_sent["last_revision_id"],
    )


# -- plan: creates and updates of live topics ----------------------------------------

live_topics = st.one_of(st.none(), st.fixed_dictionaries({
    "labels": st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES),
                              max_size=2),
    "regions": st.one_of(st.none(), st.lists(st.sampled_from(REGIONS), min_size=1,
                                             max_size=2, unique=True)),
    "retention": st.sampled_from([None, *RETENTIONS]),
    "kms": st.sampled_from([None, *KEYS]),
    "schema": schema_settings,
    "ingestion": st.sampled_from([None, *INGESTION]),
    "transforms": st.sampled_from([None, "redact", "f"]),
}))
plan_constraints = st.lists(
    st.tuples(
        conditions(),
        st.sampled_from(["ALLOW", "DENY"]),
        st.sampled_from([["CREATE", "UPDATE"], ["CREATE", "UPDATE"], ["CREATE"]]),
        st.sampled_from(["enforced", "enforced", "dry-run"]),
    ),
    min_size=1, max_size=3,
)
# Where the policies that enforce the custom constraints are set, in a hierarchy of
# organization > folder > project built through Resource Manager.
LEVELS = ("organization", "folder", "project")
# Trees where some topics exist and some do not.
plan_trees = st.lists(st.tuples(live_topics, topics), min_size=1, max_size=2,
                      unique_by=lambda entry: entry[1]["name"])


def _agrees_on_a_change(
    publisher: Any, name: str, mine: list[dict[str, Any]], binds_updates: set[str]
) -> None:
    """A live topic the plan makes no call to: the server refuses an UpdateTopic that
    sets its labels as they are exactly when it breaks an enforced constraint binding
    updates, which the plan then reports as an existing violation (or as a condition
    it could not evaluate on the topic)."""
    said = [d for d in mine if d["code"] == "existing-custom-constraint"
            and _ID.search(d["message"]).group(1) in binds_updates]  # type: ignore[union-attr]
    labels = dict(publisher.get_topic(topic=name).labels)
    try:
        publisher.update_topic(request={
            "topic": {"name": name, "labels": labels}, "update_mask": {"paths": ["labels"]},
        })
    except exceptions.FailedPrecondition as exc:
        if exc.reason == "CUSTOM_ORG_POLICY_VIOLATION":
            assert said or [d for d in mine if d["code"] == "org-custom-unevaluable"], (
                f"the server refuses changing {name} ({exc.message}); the plan said nothing",
                mine,
            )
        return
    assert not said, f"the server lets {name} change; the plan says it would not: {said}"


def _live(**fields: Any) -> dict[str, Any]:
    """A live topic's shape, for the explicit examples."""
    out: dict[str, Any] = {"labels": {}, "regions": None, "retention": None, "kms": None,
                           "schema": None, "ingestion": None, "transforms": None}
    out.update(fields)
    return out


def _create_live(publisher: Any, name: str, live: dict[str, Any], project: str,
                 revisions: dict[str, str]) -> None:
    """The live topic, made through the real client before any constraint: what
    reconcile manages, and an ingestion source and message transforms besides."""
    request: dict[str, Any] = {"name": name, "labels": {
        **live["labels"], "reconcile-managed": "true", "reconcile-owner": "default"}}
    if live["regions"] is not None:
        request["message_storage_policy"] = {"allowed_persistence_regions": live["regions"]}
    request.update(_settings_request(project, live, revisions))
    if live["ingestion"] is not None:
        request["ingestion_data_source_settings"] = INGESTION[live["ingestion"]]
    if live["transforms"] is not None:
        request["message_transforms"] = [{"javascript_udf": {
            "function_name": live["transforms"],
            "code": f"function {live['transforms']}(message, metadata) {{ return message; }}",
        }}]
    publisher.create_topic(request=request)


def _plan_json(run_cli: Any, server: Any, root: Path) -> tuple[int, dict[str, Any] | None, str]:
    result = run_cli("plan", str(root), "--emulator", server.address, "--format", "json")
    data = json.loads(result.stdout) if result.stdout.strip().startswith("{") else None
    return result.exit_code, data, result.stderr


@settings(max_examples=25, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(tree=plan_trees, generated=plan_constraints, org_cmek=st.booleans(),
       snapshot=st.booleans(), level=st.sampled_from(LEVELS))
@example(  # a live topic that already violates; the change only adds a label
    tree=[(_live(regions=["us-east1"]), _topic(labels={"team": "pay"}))],
    generated=[(condition("storage", 0, 0), "ALLOW", ["CREATE", "UPDATE"], "enforced")],
    org_cmek=False, snapshot=True, level="project",
)
@example(  # already violating by its retention: a label change is refused ...
    tree=[(_live(retention="10m"), _topic(labels={"team": "pay"}))],
    generated=[(condition("retention", 2, 1), "ALLOW", ["CREATE", "UPDATE"], "enforced")],
    org_cmek=False, snapshot=True, level="project",
)
@example(  # ... and a change that fixes it goes through
    tree=[(_live(retention="10m"), _topic(labels={"team": "pay"}, retention="2d"))],
    generated=[(condition("retention", 2, 1), "ALLOW", ["CREATE", "UPDATE"], "enforced")],
    org_cmek=False, snapshot=True, level="project",
)
@example(  # the live ingestion source and transforms, which specs do not manage, decide
    tree=[(_live(ingestion="cloudStorage", transforms="redact", kms=KEYS[0]),
           _topic(labels={"team": "pay"}))],
    generated=[
        (condition("ingestion", 1, 1), "DENY", ["CREATE", "UPDATE"], "enforced"),
        (condition("transforms", 1, 1), "ALLOW", ["CREATE", "UPDATE"], "dry-run"),
        (condition("kms", 1, 1), "ALLOW", ["CREATE", "UPDATE"], "enforced"),
    ],
    org_cmek=False, snapshot=True, level="project",
)
@example(  # a schema set by another tool is kept, and judged, when the spec omits it
    tree=[(_live(schema={"id": "orders", "encoding": "JSON", "first": False, "last": True}),
           _topic(labels={"tier": "ops"}))],
    generated=[(condition("schema", 0, 1), "ALLOW", ["CREATE", "UPDATE"], "enforced")],
    org_cmek=False, snapshot=True, level="project",
)
@example(  # a topic that already violates one binding updates, and no call: reported
    tree=[(_live(), _topic())],
    generated=[(condition("ingestion", 0, 0), "ALLOW", ["CREATE", "UPDATE"], "enforced")],
    org_cmek=False, snapshot=False, level="organization",
)
@example(  # what binds only creation: the new topic refused, the existing one reported
    tree=[(_live(), _topic(labels={"team": "pay"})), (None, _topic(name="audit"))],
    generated=[(condition("labels", 0, 1), "ALLOW", ["CREATE"], "enforced")],
    org_cmek=True, snapshot=False, level="folder",
)
def test_plan_agrees_with_the_local_server(
    world: Any, run_cli: Any, tmp_path_factory: pytest.TempPathFactory,
    tree: list[tuple[dict[str, Any] | None, dict[str, Any]]], generated: list[Any],
    org_cmek: bool, snapshot: bool, level: str,
) -> None:
    """Per topic of a tree where some exist and some do not: the call the plan makes
    (CreateTopic, or UpdateTopic of a live topic that may already violate) is refused
    by the server exactly when the plan reports an error for that topic; what the org
    would refuse of a new topic only (CMEK, a constraint that binds only creation) is
    reported for a topic that exists as an existing violation, once, never an error.
    The project sits in a folder of an organization, built through Resource Manager;
    the constraints are enforced at the organization, the folder or the project; the
    tree has a snapshot made before them (`snapshot`), or none, and the plan learns
    the project's place from Resource Manager."""
    from reconciler.backends.topicproto import topic_to_proto

    server, publisher, orgpolicy, schemas, dry_runs, hierarchy = world
    n = next(_numbers)
    org, project = f"organizations/{19000 + n}", f"plan-{n}"
    folder = hierarchy.folder(org, f"Team {n}")
    hierarchy.project(project, folder)
    enforced_at = {"organization": org, "folder": folder, "project": f"projects/{project}"}
    revisions = _schemas(schemas, project)
    for live, topic in tree:
        if live is not None:
            name = f"projects/{project}/topics/{topic['name']}"
            _create_live(publisher, name, live, project, revisions)
    root = tmp_path_factory.mktemp("plan") / "specs"
    root.mkdir()
    # No regions: `inherit` for a new topic, left unmanaged for a live one.
    (root / "topic.yaml").write_text(dump_all([
        _doc(project, topic, revisions, unmanaged=live is not None) for live, topic in tree
    ]))
    if snapshot:
        (root / "org-policy.yaml").write_text(
            f"ancestry:\n  projects/{project}: {folder}\n  {folder}: {org}\n")
    # The calls apply would make, from a plan made before the constraints exist.
    code, before, stderr = _plan_json(run_cli, server, root)
    assert code == 0 and before is not None, stderr
    calls = {c["address"]: c for c in before["resource_changes"]}
    custom, policies = _documents(org, project, generated, False, org_cmek,
                                  enforced_at[level])
    _put(orgpolicy, org, custom, policies)
    code, planned, stderr = _plan_json(run_cli, server, root)
    assert planned is not None, stderr
    diagnostics = planned["diagnostics"]
    # The tree's snapshot knows none of the constraints: the plan names each of them.
    stale = [d["message"] for d in diagnostics if d["code"] == "org-policy-stale"]
    assert len(stale) == snapshot, stale
    for i, (_, _, _, mode) in enumerate(generated if snapshot else ()):
        assert f"custom.rule{i} is {mode} now, and not in the snapshot" in stale[0], stale
    # Every enforced custom constraint was judged, wherever it is set.
    assert not [d for d in diagnostics if d["code"].startswith(
        ("org-custom-no-ancestry", "org-custom-unreadable", "org-custom-uncompilable"))]
    assert not [d for d in diagnostics if d["code"] == "org-custom-not-checked"], diagnostics
    assert code == (1 if any(d["severity"] == "error" for d in diagnostics) else 0), stderr
    create_only = {f"custom.rule{i}" for i, g in enumerate(generated)
                   if "UPDATE" not in g[2] and g[3] == "enforced"}
    binds_updates = {f"custom.rule{i}" for i, g in enumerate(generated)
                     if "UPDATE" in g[2] and g[3] == "enforced"}
    for live, topic in tree:
        name = f"projects/{project}/topics/{topic['name']}"
        mine = [d for d in diagnostics if d["topic"] == name]
        assert all(name in d["message"] for d in mine), mine
        errors = [d for d in mine if d["severity"] == "error"]
        for d in errors:  # on the terminal too, at the topic's line (alone or grouped)
            at = f"{d['file']}:{d['line']}:{d['col']}"
            assert f"{at}: error[{d['code']}]" in stderr or (
                f"\n  {at}: {name}\n" in stderr and f": error[{d['code']}]: " in stderr
            ), stderr
        said = [d for d in mine if d["code"].startswith("org-custom")]
        dry_warned = {_ID.search(d["message"]).group(1)  # type: ignore[union-attr]
                      for d in said if d["severity"] == "warning"}
        assert all(generated[int(c.removeprefix("custom.rule"))][3] == "dry-run"
                   for c in dry_warned), said
        # Existing violations: reported once each, never errors, only of a live topic.
        existing = [d for d in mine if d["code"].startswith("existing-")]
        assert all(d["severity"] == "warning" for d in existing), existing
        assert live is not None or not existing, existing
        key = topic["kms"] if topic["kms"] is not None else (live or {}).get("kms")
        keyless = org_cmek and key is None
        if live is not None:
            assert [d["code"] for d in existing].count("existing-cmek-required") == keyless
            assert not [d for d in mine if d["code"] == "org-cmek-required"], mine
            for d in existing:
                if d["code"] != "existing-custom-constraint":
                    continue
                constraint = _ID.search(d["message"]).group(1)  # type: ignore[union-attr]
                if constraint in create_only:
                    continue
                # One that binds updates too: said of a topic the plan makes no call to
                # (the server's verdict on changing it: below).
                assert constraint in binds_updates and calls[name]["request"] is None, d
        rc = calls[name]
        if rc["request"] is None:  # nothing to send: nothing refused
            assert not errors
            if live is not None:  # ... but what would the service say of changing it?
                _agrees_on_a_change(publisher, name, mine, binds_updates)
            continue
        body = dict(rc["request"]["topic"])
        if rc["request"]["method"] == "CreateTopic":
            body["labels"] = {**body.get("labels", {}), "reconcile-plan": MARKER}
            call = lambda body=body: publisher.create_topic(  # noqa: E731
                request=topic_to_proto(body))
        else:  # as apply makes it: the labels read now, merged, and the plan's marker
            labels = dict(publisher.get_topic(topic=name).labels)
            merge = rc["request"].get("label_merge") or {}
            labels = {k: v for k, v in labels.items() if k not in merge.get("remove", [])}
            labels.update(merge.get("set", {}))
            body["labels"] = {**labels, "reconcile-plan": MARKER}
            mask = sorted(set(rc["request"]["update_mask"]) | {"labels"})
            call = lambda body=body, mask=mask: publisher.update_topic(  # noqa: E731
                request={"topic": topic_to_proto(body), "update_mask": {"paths": mask}}
            )
        try:
            call()
        except exceptions.FailedPrecondition as exc:
            assert errors, f"the server refused what plan accepts for {name}: {exc.message}"
            if exc.reason == "CUSTOM_ORG_POLICY_VIOLATION":  # every constraint was judged
                assert dry_runs.of(name) == dry_warned, said
            elif "restrictNonCmekServices" in exc.message:
                assert [d["code"] for d in errors] == ["org-cmek-required"], errors
            continue
        assert not errors, f"plan refuses what the server accepts for {name}: {errors}"
        assert dry_runs.of(name) == dry_warned, said  # the dry runs it would log, warned of
