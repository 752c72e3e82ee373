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

Each runs with the project under the organization directly or through a folder, and
without what tells reconcile the project's organization (a snapshot without
`ancestry:`, or none at all): then the verdict on the custom constraints is "not
judged", never a pass: validate names it (an error with --require-org-policy), and
plan fails before any call when it has a call to make.

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

from reconciler.yamltext import dump_all
from tests.server_support import running_local_server

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
    # The tool's own writer: a revision id such as 4e354008 is quoted (bare, YAML 1.2
    # reads a number).
    return dump_all([{
        "apiVersion": "reconcile.pubsub/v1", "kind": "Topic",
        "metadata": {"project": project, "name": topic["name"]}, "spec": spec,
    }])


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


def _documents(org: str, project: str, generated: list[Any], org_in_transit: bool
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(custom constraints, policies) in the Org Policy v2 JSON shape."""
    custom, policies = [], []
    for i, (text, action, methods, mode) in enumerate(generated):
        constraint_id = f"custom.rule{i}"
        custom.append({
            "name": f"{org}/customConstraints/{constraint_id}",
            "resourceTypes": ["pubsub.googleapis.com/Topic"], "methodTypes": methods,
            "condition": text, "actionType": action, "description": f"Rule {i}.",
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
        ):
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
            yield (server, publisher_client(server.address), orgpolicy_client(server.address),
                   schema_client(server.address), dry_runs)
    finally:
        logger.removeHandler(dry_runs)
        logger.setLevel(level)


# Where the project sits, and what the spec tree's snapshot says of it: under the
# organization, or a folder under it; a snapshot without `ancestry:` (pulled without
# --organization), or none.
HIERARCHIES = ("org", "org", "folder", "no-ancestry", "none")


def _placed(server: Any, project: str, org: str, hierarchy: str) -> dict[str, str]:
    """The project placed on the server (directly under `org`, or under a folder of
    it); the ancestry the snapshot records (none, unless the hierarchy is known)."""
    if hierarchy == "folder":
        folder = f"folders/{org.rsplit('/', 1)[1]}01"
        server.set_ancestry(folder, org)
        server.set_ancestry(f"projects/{project}", folder)
        return {f"projects/{project}": folder, folder: org}
    server.set_ancestry(f"projects/{project}", org)
    return {f"projects/{project}": org} if hierarchy == "org" else {}


@settings(max_examples=50, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(topic=topics, generated=constraints, org_in_transit=st.booleans(),
       hierarchy=st.sampled_from(HIERARCHIES))
@example(  # reconcile's own three labels count: one declared label makes four
    topic=_topic(labels={"team": "pay"}, regions=["us-east1"]),
    generated=[("size(resource.labels) <= 3", "ALLOW", ["CREATE"], "enforced")],
    org_in_transit=False, hierarchy="org",
)
@example(  # the org's in-transit policy sends enforceInTransit: true
    topic=_topic(regions=["us-east1"]),
    generated=[(condition("in_transit"), "DENY", ["CREATE"], "enforced")],
    org_in_transit=True, hierarchy="folder",
)
@example(  # a refusal the snapshot cannot see: not judged, never a pass
    topic=_topic(labels={"team": "pay"}),
    generated=[("'team' in resource.labels", "DENY", ["CREATE"], "enforced")],
    org_in_transit=False, hierarchy="no-ancestry",
)
@example(  # ... and without a snapshot at all
    topic=_topic(labels={"team": "pay"}),
    generated=[("'team' in resource.labels", "DENY", ["CREATE"], "enforced")],
    org_in_transit=False, hierarchy="none",
)
@example(  # one declared field of each family the specs manage, each refused ...
    topic=_topic(retention="10m", kms=KEYS[1],
                 schema={"id": "audit", "encoding": "JSON", "first": True, "last": False}),
    generated=[
        (condition("retention", 1, 1), "ALLOW", ["CREATE"], "enforced"),
        (condition("kms", 1, 0), "ALLOW", ["CREATE", "UPDATE"], "enforced"),
        (condition("schema", 0, 1), "ALLOW", ["CREATE"], "enforced"),
        (condition("schema", 1, 0), "DENY", ["CREATE"], "dry-run"),  # ... but this one
    ],
    org_in_transit=False, hierarchy="org",
)
@example(  # the fields a spec leaves unmanaged: deferred, and what the server says
    topic=_topic(name="audit"),
    generated=[
        (condition("ingestion"), "DENY", ["CREATE"], "enforced"),
        (condition("transforms", 1, 0), "ALLOW", ["CREATE", "UPDATE"], "enforced"),
        (condition("kms", 2, 0), "ALLOW", ["CREATE"], "dry-run"),
    ],
    org_in_transit=False, hierarchy="org",
)
def test_validate_agrees_with_the_local_server(
    world: Any, run_cli: Any, tmp_path_factory: pytest.TempPathFactory,
    topic: dict[str, Any], generated: list[Any], org_in_transit: bool, hierarchy: str,
) -> None:
    server, publisher, orgpolicy, schemas, dry_runs = world
    n = next(_numbers)
    org, project = f"organizations/{9000 + n}", f"agree-{n}"
    revisions = _schemas(schemas, project)
    custom, policies = _documents(org, project, generated, org_in_transit)
    tmp = tmp_path_factory.mktemp("agree")
    spec = _spec(project, topic, revisions)
    (tmp / "specs").mkdir()
    (tmp / "specs" / "topic.yaml").write_text(spec)
    ancestry = _placed(server, project, org, hierarchy)
    if hierarchy in ("none", "no-ancestry"):
        _not_judged_by_validate(run_cli, tmp, project, hierarchy, custom, policies)
        return
    (tmp / "org-policy.yaml").write_text(yaml.safe_dump_all(
        [*custom, *policies, {"ancestry": ancestry}]
    ))
    result = run_cli("validate", str(tmp / "specs"), "--org-policy",
                     str(tmp / "org-policy.yaml"), "--format", "json")
    said = json.loads(result.stdout)
    errors = [d for d in said if d["severity"] == "error"]
    assert result.exit_code == (1 if errors else 0), result.output
    assert all(d["code"].startswith("org-custom") for d in errors), (
        [d["message"] for d in errors], spec)

    def ids(code: str, severity: str | None = None) -> dict[str, dict[str, Any]]:
        return {_ID.search(d["message"]).group(1): d  # type: ignore[union-attr]
                for d in said if d["code"] == code and severity in (None, d["severity"])}

    # Deferred: once per constraint reading a field the spec does not manage, naming it.
    deferred = ids("org-custom-at-plan")
    unmanaged = {f"custom.rule{i}": _unmanaged_reads(g[0], topic)
                 for i, g in enumerate(generated)}
    assert set(deferred) == {c for c, fields in unmanaged.items() if fields}, said
    assert len([d for d in said if d["code"] == "org-custom-at-plan"]) == len(deferred)
    for cid, d in deferred.items():
        assert all(field in d["message"] for field in unmanaged[cid]), d["message"]
    refused_by = ids("org-custom-constraint", "error")
    unevaluable = ids("org-custom-unevaluable", "error")
    # Each refusal at the line of a field its condition reads (the name when the
    # document declares none of them).
    for cid, d in refused_by.items():
        text = generated[int(cid.removeprefix("custom.rule"))][0]
        keys = {"name"}.union(*(READS[f][1] for f in _fields_read(text)))
        assert _key_at(spec, d["line"]) in keys, (d, spec)
    modes = {f"custom.rule{i}": g[3] for i, g in enumerate(generated)}
    deferred_enforced = {c for c in deferred if modes[c] == "enforced"}
    # Dry run: warned of (refused or not evaluable), never an error.
    dry_warned = {c for code in ("org-custom-constraint", "org-custom-unevaluable")
                  for c in ids(code, "warning")}
    assert all(modes[c] == "dry-run" for c in dry_warned), said
    assert all(modes[c] == "enforced" for c in [*refused_by, *unevaluable]), said
    deferred_dry = set(deferred) - deferred_enforced
    name = f"projects/{project}/topics/{topic['name']}"

    _put(orgpolicy, org, custom, policies)
    try:
        publisher.create_topic(request=_request(project, topic, org_in_transit, revisions))
    except exceptions.FailedPrecondition as exc:
        assert errors or deferred_enforced, (
            f"the server refused what validate accepts and decides: {exc.message}"
        )
        if exc.reason == "CUSTOM_ORG_POLICY_VIOLATION":
            assert not unevaluable, exc.message  # the server cannot evaluate them either
            named = {c.removeprefix("customConstraints/")
                     for c in exc.metadata["customConstraints"].split(",")}
            assert set(refused_by) <= named <= set(refused_by) | deferred_enforced, (
                exc.message, said)
            logged = dry_runs.of(name)  # every constraint was judged: so was each dry run
            assert dry_warned <= logged <= dry_warned | deferred_dry, (logged, said)
        else:  # a condition the server could not evaluate
            assert "could not evaluate" in exc.message, exc.message
            assert unevaluable or deferred_enforced, exc.message
        return
    assert not errors, f"validate refuses what the server accepts: {errors}"
    logged = dry_runs.of(name)
    assert dry_warned <= logged <= dry_warned | deferred_dry, (logged, said)


def _not_judged_by_validate(
    run_cli: Any, tmp: Path, project: str, hierarchy: str, custom: list[dict[str, Any]],
    policies: list[dict[str, Any]],
) -> None:
    """Without the project's place in the hierarchy, validate judges no custom
    constraint of it and says so: a warning, an error with --require-org-policy."""
    args = ["validate", str(tmp / "specs"), "--format", "json"]
    if hierarchy == "no-ancestry":  # the snapshot `policy pull` writes without --organization
        (tmp / "org-policy.yaml").write_text(yaml.safe_dump_all([*custom, *policies]))
        args += ["--org-policy", str(tmp / "org-policy.yaml")]
    code = "org-custom-no-ancestry" if hierarchy == "no-ancestry" else "org-policy-missing"
    for strict, severity in ((False, "warning"), (True, "error")):
        result = run_cli(*args, *(["--require-org-policy"] if strict else []))
        said = json.loads(result.stdout)
        assert result.exit_code == (1 if strict else 0), said
        assert [d["severity"] for d in said if d["code"] == code] == [severity], said
        if hierarchy == "no-ancestry":
            (found,) = [d for d in said if d["code"] == code]
            assert f"custom constraints not judged for project {project}" in found["message"]
        assert not [d for d in said if d["code"].startswith("org-custom")
                    and d["code"] != code], said  # nothing judged, so nothing passed


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
    (specs / "org-policy.yaml").write_text("ancestry: {projects/model-proj: organizations/1}\n")
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
        st.just(["CREATE", "UPDATE"]),
        st.sampled_from(["enforced", "enforced", "dry-run"]),
    ),
    min_size=1, max_size=3,
)


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


def _plan_json(run_cli: Any, server: Any, root: Path, *extra: str
               ) -> tuple[int, dict[str, Any] | None, str]:
    result = run_cli("plan", str(root), "--emulator", server.address, "--format", "json",
                     *extra)
    data = json.loads(result.stdout) if result.stdout.strip().startswith("{") else None
    return result.exit_code, data, result.stderr


@settings(max_examples=25, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(live=live_topics, topic=topics, generated=plan_constraints,
       hierarchy=st.sampled_from(("org", "org", "folder", "none")))
@example(  # a live topic that already violates; the change only adds a label
    live=_live(regions=["us-east1"]),
    topic=_topic(labels={"team": "pay"}),
    generated=[(condition("storage", 0, 0), "ALLOW", ["CREATE", "UPDATE"], "enforced")],
    hierarchy="org",
)
@example(  # no snapshot: the plan cannot know the organization, so it judges nothing
    live=_live(),
    topic=_topic(labels={"team": "pay"}),
    generated=[("'team' in resource.labels", "DENY", ["CREATE", "UPDATE"], "enforced")],
    hierarchy="none",
)
@example(  # the project under a folder of the organization
    live=None,
    topic=_topic(labels={"team": "pay"}),
    generated=[("'team' in resource.labels", "DENY", ["CREATE", "UPDATE"], "enforced")],
    hierarchy="folder",
)
@example(  # already violating by its retention: a label change is refused ...
    live=_live(retention="10m"),
    topic=_topic(labels={"team": "pay"}),
    generated=[(condition("retention", 2, 1), "ALLOW", ["CREATE", "UPDATE"], "enforced")],
    hierarchy="org",
)
@example(  # ... and a change that fixes it goes through
    live=_live(retention="10m"),
    topic=_topic(labels={"team": "pay"}, retention="2d"),
    generated=[(condition("retention", 2, 1), "ALLOW", ["CREATE", "UPDATE"], "enforced")],
    hierarchy="org",
)
@example(  # the live ingestion source and transforms, which specs do not manage, decide
    live=_live(ingestion="cloudStorage", transforms="redact", kms=KEYS[0]),
    topic=_topic(labels={"team": "pay"}),
    generated=[
        (condition("ingestion", 1, 1), "DENY", ["CREATE", "UPDATE"], "enforced"),
        (condition("transforms", 1, 1), "ALLOW", ["CREATE", "UPDATE"], "dry-run"),
        (condition("kms", 1, 1), "ALLOW", ["CREATE", "UPDATE"], "enforced"),
    ],
    hierarchy="org",
)
@example(  # a schema set by another tool is kept, and judged, when the spec omits it
    live=_live(schema={"id": "orders", "encoding": "JSON", "first": False, "last": True}),
    topic=_topic(labels={"tier": "ops"}),
    generated=[(condition("schema", 0, 1), "ALLOW", ["CREATE", "UPDATE"], "enforced")],
    hierarchy="org",
)
def test_plan_agrees_with_the_local_server(
    world: Any, run_cli: Any, tmp_path_factory: pytest.TempPathFactory,
    live: dict[str, Any] | None, topic: dict[str, Any], generated: list[Any], hierarchy: str,
) -> None:
    from reconciler.backends.topicproto import topic_to_proto

    server, publisher, orgpolicy, schemas, dry_runs = world
    n = next(_numbers)
    org, project = f"organizations/{19000 + n}", f"plan-{n}"
    revisions = _schemas(schemas, project)
    name = f"projects/{project}/topics/{topic['name']}"
    if live is not None:
        _create_live(publisher, name, live, project, revisions)
    root = tmp_path_factory.mktemp("plan") / "specs"
    root.mkdir()
    # No regions: `inherit` for a new topic, left unmanaged for a live one.
    (root / "topic.yaml").write_text(_spec(project, topic, revisions, unmanaged=live is not None))
    ancestry = _placed(server, project, org, hierarchy)
    if ancestry:
        (root / "org-policy.yaml").write_text(yaml.safe_dump({"ancestry": ancestry}))
    # The call apply would make, from a plan made before the constraints exist (without
    # the organization, let through: it is the call that matters here).
    opt_out = () if ancestry else ("--allow-unjudged", "all")
    code, before, stderr = _plan_json(run_cli, server, root, *opt_out)
    assert code == 0 and before is not None, stderr
    (rc,) = [c for c in before["resource_changes"] if c["address"] == name]
    custom, policies = _documents(org, project, generated, False)
    _put(orgpolicy, org, custom, policies)
    code, planned, stderr = _plan_json(run_cli, server, root)
    assert planned is not None, stderr
    diagnostics = planned["diagnostics"]
    if not ancestry:  # not judged, never a pass: a plan with a call to make fails
        said = [d for d in diagnostics if d["code"].startswith("org-custom")]
        if rc["request"] is None:
            assert code == 0 and not said, said  # no call: nothing to judge
            return
        assert code == 1, stderr
        assert [(d["code"], d["severity"]) for d in said] == [
            ("org-custom-no-ancestry", "error")], said
        assert f"custom constraints not judged for project {project}" in said[0]["message"]
        return
    # The tree's snapshot knows none of the constraints: the plan names each of them.
    (stale,) = [d["message"] for d in diagnostics if d["code"] == "org-policy-stale"]
    for i, (_, _, _, mode) in enumerate(generated):
        assert f"custom.rule{i} is {mode} now, and not in the snapshot" in stale, stale
    said = [d for d in diagnostics if d["code"].startswith("org-custom")]
    assert not [d for d in said if d["code"] == "org-custom-not-checked"], said
    errors = [d for d in said if d["severity"] == "error"]
    for d in errors:  # on the terminal too, at the topic's line
        assert f"{d['file']}:{d['line']}:{d['col']}: error[{d['code']}]" in stderr, stderr
    dry_warned = {_ID.search(d["message"]).group(1)  # type: ignore[union-attr]
                  for d in said if d["severity"] == "warning"}
    assert all(generated[int(c.removeprefix("custom.rule"))][3] == "dry-run"
               for c in dry_warned), said
    if rc["request"] is None:  # nothing to send: nothing to judge
        assert not errors
        return
    body = dict(rc["request"]["topic"])
    if rc["request"]["method"] == "CreateTopic":
        body["labels"] = {**body.get("labels", {}), "reconcile-plan": MARKER}
        call = lambda: publisher.create_topic(request=topic_to_proto(body))  # noqa: E731
    else:  # as apply makes it: the labels read now, merged, and the plan's marker
        labels = dict(publisher.get_topic(topic=name).labels)
        merge = rc["request"].get("label_merge") or {}
        labels = {k: v for k, v in labels.items() if k not in merge.get("remove", [])}
        labels.update(merge.get("set", {}))
        body["labels"] = {**labels, "reconcile-plan": MARKER}
        mask = sorted(set(rc["request"]["update_mask"]) | {"labels"})
        call = lambda: publisher.update_topic(  # noqa: E731
            request={"topic": topic_to_proto(body), "update_mask": {"paths": mask}}
        )
    try:
        call()
    except exceptions.FailedPrecondition as exc:
        assert code == 1 and errors, f"the server refused what plan accepts: {exc.message}"
        if exc.reason == "CUSTOM_ORG_POLICY_VIOLATION":  # every constraint was judged
            assert dry_runs.of(name) == dry_warned, said
        return
    assert code == 0 and not errors, f"plan refuses what the server accepts: {errors}"
    assert dry_runs.of(name) == dry_warned, said  # the dry runs it would log, warned of
