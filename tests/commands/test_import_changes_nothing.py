"""Import that changes nothing (issue 46 item 1), over generated estates: live topics
with every managed field (labels, storage policy regions and in-transit enforcement,
retention, key, schema settings, reconcile's publishers' endpoint label), made through
the real clients on the loopback server, in a project Resource Manager places under an
organization (directly or in a folder), then org policies that agree or disagree with
them (locations, in-transit, the CMEK constraints with key projects named by project,
folder or organization, custom constraints that ALLOW or DENY on labels or the storage
policy for CREATE or CREATE and UPDATE: set after the topics, as an org tightens its
rules), and a Defaults document above the output directory or none. `reconcile
import`, then `reconcile plan` of the tree: nothing but reconcile's ownership labels
is planned, and every value the org would refuse today is marked in the file with the
finding the plan raises on it, one for one. No finding is an error, but where the
service itself refuses the adopting call (a topic that already breaks a custom
constraint restricting UPDATE): import warns of exactly those topics, and plan refuses
exactly those (validate those of them whose spec declares what the condition reads;
plan plans no tree validate refuses)."""

from __future__ import annotations

import itertools
import json
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reconciler.ownership import OWNER_LABEL, OWNERSHIP_LABEL
from reconciler.yamltext import dump_all
from tests.cli_support import reconcile
from tests.server_support import running_local_server

REGIONS = ("us-east1", "us-central1", "europe-west1", "europe-west4", "asia-east1")
# What gcp.resourceLocations allows (None: no such policy).
ALLOWED = (None, ("europe-west1", "europe-west4"), ("us-east1",), ("in:eu-locations",))
KEY_PROJECTS = ("keys-a", "keys-b", "")  # "": the topic's own project
# Custom constraints: (condition, field) pairs; each drawn as ALLOW or DENY, for CREATE
# or CREATE and UPDATE.
CONDITIONS = (
    "'team' in resource.labels",
    "has(resource.labels.tier) && resource.labels.tier == 'yes'",
    "has(resource.messageStoragePolicy) && "
    "resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r.startsWith('europe-'))",
    "has(resource.messageStoragePolicy) && "
    "has(resource.messageStoragePolicy.enforceInTransit)",
)
# gcp.restrictCmekCryptoKeyProjects' allowed value: a project, the folder, the org.
KEY_POLICIES = ("under:projects/keys-a", "under:{folder}", "under:{org}")
RETENTIONS = (600, 3600, 5400, 86400, 90061, 172800, 2678400)
# With the labels Terraform and Config Connector put on what they manage: left to them.
LABEL_KEYS = ("team", "tier", "cost-center", "yes", "goog-terraform-provisioned",
              "managed-by-cnrm", "reconcile-publish-endpoint")
LABEL_VALUES = ("payments", "1e3", "yes", "", "0o17", "2001-12-14", "x")
ENDPOINTS = ("us-east1", "europe-west1")
OWNERSHIP = {OWNERSHIP_LABEL, OWNER_LABEL}
_projects = itertools.count()


@dataclass
class Estate:
    topics: list[dict[str, Any]]
    allowed: tuple[str, ...] | None
    in_transit: bool
    cmek: bool
    key_projects: str | None  # restrictCmekCryptoKeyProjects' allowed value (KEY_POLICIES)
    defaults: dict[str, Any] | None  # the spec of a Defaults document above, or none
    in_folder: bool  # the project sits in a folder of the organization, or directly in it
    # (condition, ALLOW/DENY, methodTypes, enforced or dry run)
    custom: list[tuple[str, str, tuple[str, ...], bool]]


@st.composite
def live_topics(
    draw: Any, defaults: dict[str, Any] | None, computed: tuple[str, ...] | None,
    allowed: tuple[str, ...] | None, in_transit: bool,
) -> dict[str, Any]:
    """One topic's CreateTopic fields. Under a Defaults document the topic has what no
    spec can refuse (its label, a retention; a storage policy where the org computes
    one): the import is refused otherwise (tests/commands/test_import_under_defaults.py)."""
    topic: dict[str, Any] = {}
    labels = draw(st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES),
                                  max_size=3))
    if "reconcile-publish-endpoint" in labels:  # a region: reconcile's own label
        labels["reconcile-publish-endpoint"] = draw(st.sampled_from(ENDPOINTS))
    if defaults and "labels" in defaults:
        labels = {**defaults["labels"], **labels}
    topic["labels"] = labels
    kinds = ["regions", "computed"]
    if not (defaults and "messageStoragePolicy" in defaults and allowed is not None):
        kinds.append("none")
    policy = draw(st.sampled_from(kinds))
    if policy == "computed" and computed is not None:  # what the org policy computes
        topic["message_storage_policy"] = {
            "allowed_persistence_regions": list(computed), "enforce_in_transit": in_transit,
        }
    elif policy != "none":
        topic["message_storage_policy"] = {
            "allowed_persistence_regions": draw(
                st.lists(st.sampled_from(REGIONS), min_size=1, max_size=3, unique=True)
            ),
            "enforce_in_transit": draw(st.booleans()),
        }
    if draw(st.booleans()) or (defaults and "messageRetentionDuration" in defaults):
        topic["message_retention_duration"] = {"seconds": draw(st.sampled_from(RETENTIONS))}
    if draw(st.booleans()):
        key_project = draw(st.sampled_from(KEY_PROJECTS))
        topic["kms_key_name"] = (  # {project}: filled in by _make
            f"projects/{key_project or '{project}'}/locations/us-east1/keyRings/r/cryptoKeys/k"
        )
    if draw(st.booleans()):
        topic["schema_settings"] = {"encoding": draw(st.sampled_from(("JSON", "BINARY")))}
    return topic


@st.composite
def estates(draw: Any) -> Estate:
    allowed = draw(st.sampled_from(ALLOWED))
    in_transit = draw(st.booleans())
    defaults: dict[str, Any] | None = None
    if draw(st.booleans()):
        defaults = {}
        if draw(st.booleans()):
            defaults["labels"] = {"cost-center": draw(st.sampled_from(("c1", "1e3")))}
        if draw(st.booleans()):
            defaults["messageRetentionDuration"] = "7d"
        if draw(st.booleans()):
            defaults["messageStoragePolicy"] = {"allowedPersistenceRegions": ["us-east1"]}
    computed = allowed if allowed is not None and not allowed[0].startswith("in:") else None
    topics = draw(st.lists(
        live_topics(defaults, computed, allowed, in_transit), min_size=1, max_size=4
    ))
    custom = draw(st.lists(st.tuples(
        st.sampled_from(CONDITIONS), st.sampled_from(("ALLOW", "DENY")),
        st.sampled_from((("CREATE",), ("CREATE", "UPDATE"))), st.booleans(),
    ), max_size=2, unique_by=lambda c: c[0]))
    return Estate(
        topics, allowed, in_transit, draw(st.booleans()),
        draw(st.sampled_from((None, *KEY_POLICIES))), defaults, draw(st.booleans()), custom,
    )


@pytest.fixture(scope="module")
def world() -> Iterator[dict[str, Any]]:
    """One loopback server and the real clients for every example (each example works
    in a project of its own)."""
    from reconciler.backends.clients import orgpolicy_client, publisher_client, schema_client

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
        with running_local_server() as server:
            clients = {
                "server": server,
                "publisher": publisher_client(server.address),
                "orgpolicy": orgpolicy_client(server.address),
                "schema": schema_client(server.address),
            }
            try:
                yield clients
            finally:
                for name in ("publisher", "orgpolicy", "schema"):
                    clients[name].transport.close()


def _make(world: dict[str, Any], project: str, estate: Estate) -> None:
    """The topics, then the project's place in its organization (each example an
    organization of its own), then the org policy that now applies to the project."""
    parent = f"projects/{project}"
    number = project.rsplit("-", 1)[1]
    org, folder = f"organizations/{4600 + int(number)}", f"folders/{4600 + int(number)}"
    schema = f"{parent}/schemas/order"
    if any("schema_settings" in t for t in estate.topics):
        world["schema"].create_schema(parent=parent, schema_id="order", schema={
            "type_": "AVRO",
            "definition": json.dumps({"type": "record", "name": "R",
                                      "fields": [{"name": "id", "type": "string"}]}),
        })
    for i, topic in enumerate(estate.topics):
        request = {"name": f"{parent}/topics/topic-{i}", **topic}
        if "kms_key_name" in topic:
            request["kms_key_name"] = topic["kms_key_name"].replace("{project}", project)
        if "schema_settings" in topic:
            request["schema_settings"] = {**topic["schema_settings"], "schema": schema}
        world["publisher"].create_topic(request=request)
    policies: list[tuple[str, dict[str, Any]]] = []
    if estate.allowed is not None:
        policies.append(("gcp.resourceLocations",
                         {"rules": [{"values": {"allowed_values": list(estate.allowed)}}]}))
    if estate.in_transit:
        policies.append(("pubsub.enforceInTransitRegions", {"rules": [{"enforce": True}]}))
    if estate.cmek:
        policies.append(("gcp.restrictNonCmekServices",
                         {"rules": [{"values": {"denied_values": ["pubsub.googleapis.com"]}}]}))
    if estate.key_projects:
        value = estate.key_projects.format(folder=folder, org=org)
        policies.append(("gcp.restrictCmekCryptoKeyProjects",
                         {"rules": [{"values": {"allowed_values": [value]}}]}))
    server = world["server"]
    if estate.in_folder:
        server.set_ancestry(folder, org)
    server.set_ancestry(parent, folder if estate.in_folder else org)
    for i, (condition, action, methods, enforced) in enumerate(estate.custom):
        name = f"custom.generated{i}"
        world["orgpolicy"].create_custom_constraint(parent=org, custom_constraint={
            "name": f"{org}/customConstraints/{name}",
            "resource_types": ["pubsub.googleapis.com/Topic"],
            "method_types": list(methods), "condition": condition, "action_type": action,
        })
        spec = {"rules": [{"enforce": True}]}
        world["orgpolicy"].create_policy(parent=org, policy={
            "name": f"{org}/policies/{name}",
            **({"spec": spec} if enforced else {"dry_run_spec": spec}),
        })
    for constraint, spec in policies:
        world["orgpolicy"].create_policy(
            parent=parent, policy={"name": f"{parent}/policies/{constraint}", "spec": spec}
        )


def _defaults_doc(spec: dict[str, Any]) -> str:
    return dump_all([{
        "apiVersion": "reconcile.pubsub/v1", "kind": "Defaults",
        "metadata": {"name": "org"}, "spec": spec,
    }])


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(estate=estates())
# The topic's own key under a key-project policy naming the folder the project is not
# in: denied only with the project's place in the hierarchy, which import reads.
@example(estate=Estate(
    [{"labels": {}, "kms_key_name": "projects/{project}/locations/us-east1/keyRings/r/"
      "cryptoKeys/k"}], None, False, False, "under:{folder}", None, False, [],
))
# A label a custom constraint binding creation denies, another it requires for updates
# too, which the topic has; and the endpoint label outside the topic's own regions.
@example(estate=Estate(
    [{"labels": {"team": "x", "tier": "yes", "reconcile-publish-endpoint": "us-east1"},
      "message_storage_policy": {"allowed_persistence_regions": ["europe-west1"],
                                 "enforce_in_transit": True}}],
    None, False, False, None, None, True,
    [("'team' in resource.labels", "DENY", ("CREATE",), True),
     ("has(resource.labels.tier) && resource.labels.tier == 'yes'", "ALLOW",
      ("CREATE", "UPDATE"), True)],
))
# In-transit enforced by the org, a topic keeping enforceInTransit off, and a custom
# constraint restricting UPDATE that reads whether enforceInTransit is set (CI's draws).
@example(estate=Estate(
    [{"labels": {}, "message_storage_policy": {"allowed_persistence_regions": ["us-east1"],
                                               "enforce_in_transit": True}},
     {"labels": {}, "message_storage_policy": {"allowed_persistence_regions": ["us-east1"],
                                               "enforce_in_transit": False}}],
    None, True, False, None, None, False,
    [("has(resource.messageStoragePolicy) && "
      "has(resource.messageStoragePolicy.enforceInTransit)", "ALLOW", ("CREATE", "UPDATE"),
      True)],
))
@example(estate=Estate(
    [{"labels": {}, "message_storage_policy": {"allowed_persistence_regions": ["us-east1"],
                                               "enforce_in_transit": False}},
     {"labels": {}, "message_storage_policy": {"allowed_persistence_regions": ["us-east1"],
                                               "enforce_in_transit": True}}],
    None, True, False, None, None, False,
    [("has(resource.messageStoragePolicy) && "
      "has(resource.messageStoragePolicy.enforceInTransit)", "DENY", ("CREATE", "UPDATE"),
      True)],
))
# Two constraints restricting UPDATE that the topic breaks: validate refuses the tree
# offline with two findings on one topic, compared as one (code, topic).
@example(estate=Estate(
    [{"labels": {}, "message_storage_policy": {"allowed_persistence_regions": ["us-east1"],
                                               "enforce_in_transit": False}}],
    None, False, False, None, None, False,
    [("'team' in resource.labels", "ALLOW", ("CREATE", "UPDATE"), True),
     ("has(resource.labels.tier) && resource.labels.tier == 'yes'", "ALLOW",
      ("CREATE", "UPDATE"), True)],
))
# Two constraints binding creation that the topic breaks: two findings, one mark.
@example(estate=Estate(
    [{"labels": {}, "message_storage_policy": {"allowed_persistence_regions": ["us-east1"],
                                               "enforce_in_transit": False}}],
    None, False, False, None, None, False,
    [("'team' in resource.labels", "ALLOW", ("CREATE",), True),
     ("has(resource.labels.tier) && resource.labels.tier == 'yes'", "ALLOW", ("CREATE",),
      True)],
))
def test_import_then_plan_adds_only_the_ownership_labels(
    world: dict[str, Any], estate: Estate
) -> None:
    project = f"estate-{next(_projects)}"
    _make(world, project, estate)
    address = world["server"].address
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / ".git").mkdir()  # the repository root: the search for specs stops here
        if estate.defaults is not None:
            (root / "defaults.yaml").write_text(_defaults_doc(estate.defaults))
        out = root / "imported"
        imported = reconcile("import", "--project", project, "--out", str(out),
                             "--emulator", address)
        assert imported.exit_code == 0, imported.stderr
        text = (out / f"{project}.yaml").read_text()
        # Topics that break a custom constraint restricting UPDATE: the service refuses
        # the call that adopts them, and import says so, naming each one.
        refused = sorted(set(re.findall(
            rf"warning: projects/{project}/topics/(topic-\d+) breaks custom constraint",
            imported.stderr,
        )))
        pulled = reconcile("policy", "pull", "--project", project, "--out",
                           str(root / "org-policy.yaml"), "--emulator", address)
        assert pulled.exit_code == 0, pulled.stderr
        # Offline, nothing says the topics exist: what the org refuses of a new topic
        # is a warning that leaves it to plan, never an error, but for what a constraint
        # restricting UPDATE refuses of those very topics (where the spec declares the
        # field its condition reads: else plan decides).
        validated = reconcile("validate", str(root), "--require-org-policy", "--format", "json")
        offline = sorted({
            (d["code"], d["topic"].rsplit("/", 1)[-1]) for d in json.loads(validated.stdout)
            if d["severity"] == "error"
        })
        assert validated.exit_code == (1 if offline else 0), (validated.stdout, text)
        assert {code for code, _ in offline} <= {"org-custom-constraint"}, (offline, text)
        assert {t for _, t in offline} <= set(refused), (offline, refused, text)

        planned = reconcile("plan", str(root), "--emulator", address, "--format", "json",
                            "--detailed-exitcode")
        assert planned.exit_code in ((1,) if refused else (0, 2)), planned.stdout + planned.stderr
        plan = json.loads(planned.stdout)
        # Distinct (code, topic): two constraints refusing one topic are two findings.
        errors = sorted({
            (d["code"], d["topic"].rsplit("/", 1)[-1])
            for d in plan["diagnostics"] if d["severity"] == "error"
        })
        if offline:  # the tree is refused as validate refuses it, before any read
            assert errors == offline, (errors, text)
            return
        # The plan refuses exactly the calls import warned of; it adopts the others.
        assert errors == [("org-custom-constraint", t) for t in refused], (errors, text)
        changes = [rc for rc in plan["resource_changes"] if rc["change"]["actions"] != ["no-op"]]
        if refused:  # a plan with an error is refused whole: no change, none applied
            assert changes == [], (changes, text)
            return
        assert len(changes) == len(estate.topics) - len(refused), (plan["resource_changes"], text)
        for rc in changes:
            assert rc["change"]["actions"] == ["update"], (rc, text)
            assert rc["update_mask"] == ["labels"], (rc, text)
            merge = rc["request"]["label_merge"]
            assert set(merge["set"]) == OWNERSHIP and not merge.get("remove"), (rc, text)

        # Each existing-family finding of the plan is marked in the file, each code once
        # on its topic (two constraints the topic breaks are two findings of the plan
        # with the same code: one mark says it).
        existing = sorted({
            (d["code"], d["topic"].rsplit("/", 1)[-1]) for d in plan["diagnostics"]
            if d["code"].startswith("existing-")
        })
        marked = sorted(set(_marks(text)))
        assert marked == existing, (marked, existing, text)


def _marks(text: str) -> list[tuple[str, str]]:
    """(code, topic ID) for every `# plan warns:` comment of an imported file."""
    out: list[tuple[str, str]] = []
    name = ""
    for line in text.splitlines():
        if line.startswith("  name: "):
            name = line.split()[1].strip("'\"")
        if "# plan warns: " in line:
            codes = line.split("# plan warns: ", 1)[1]
            out += [(code.strip(), name) for code in codes.split(",")]
    return out


def test_publishers_of_a_topic_that_keeps_in_transit_off_are_not_refused(
    world: dict[str, Any], tmp_path: Path
) -> None:
    """An imported topic with in-transit enforcement off under an org that enforces it,
    whose publishers use an endpoint outside its regions: the topic keeps enforcement
    off, so they are not refused; validate says plan decides, plan reports only
    existing-in-transit-off. The same spec for a topic that does not exist yet is
    refused: the service turns enforcement on for it."""
    project = f"estate-{next(_projects)}"
    parent = f"projects/{project}"
    world["publisher"].create_topic(request={
        "name": f"{parent}/topics/orders",
        "labels": {"reconcile-publish-endpoint": "us-east1"},
        "message_storage_policy": {"allowed_persistence_regions": ["europe-west1"]},
    })
    world["orgpolicy"].create_policy(parent=parent, policy={
        "name": f"{parent}/policies/pubsub.enforceInTransitRegions",
        "spec": {"rules": [{"enforce": True}]},
    })
    address = world["server"].address
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    out = root / "imported"
    assert reconcile("import", "--project", project, "--out", str(out),
                     "--emulator", address).exit_code == 0
    text = (out / f"{project}.yaml").read_text()
    assert "enforceInTransit: false  # plan warns: existing-in-transit-off" in text
    assert "endpoint: us-east1" in text
    assert reconcile("policy", "pull", "--project", project, "--out",
                     str(root / "org-policy.yaml"), "--emulator", address).exit_code == 0

    validated = reconcile("validate", str(root), "--format", "json")
    assert validated.exit_code == 0, validated.stdout
    (endpoint,) = [d for d in json.loads(validated.stdout)
                   if d["code"] == "publisher-endpoint-denied"]
    assert endpoint["severity"] == "warning"
    assert "the topic may exist, so `reconcile plan` decides" in endpoint["message"]

    plan = reconcile("plan", str(root), "--emulator", address, "--format", "json")
    assert plan.exit_code == 0, plan.stdout + plan.stderr
    codes = [d["code"] for d in json.loads(plan.stdout)["diagnostics"] if d["topic"]]
    assert codes == ["existing-in-transit-off"], codes

    (out / "new.yaml").write_text(text.replace("name: orders", "name: payouts"))
    refused = reconcile("plan", str(out / "new.yaml"), "--emulator", address,
                        "--format", "json")
    assert refused.exit_code == 1, refused.stdout
    errors = [(d["code"], d["topic"]) for d in json.loads(refused.stdout)["diagnostics"]
              if d["severity"] == "error"]
    assert errors == [("publisher-endpoint-denied", f"{parent}/topics/payouts")], errors


def test_an_endpoint_outside_the_topics_regions_is_kept_and_not_introduced(
    world: dict[str, Any], tmp_path: Path
) -> None:
    """A topic with its own in-transit enforcement on and reconcile's endpoint label
    outside its regions: publishing through the endpoint fails today, but the service
    refuses no label, so the plan after import adopts it and says
    existing-publisher-endpoint at the endpoint, as import marked it. The same spec for
    a new topic, a change that introduces the endpoint, and one that sets the storage
    policy while it stays are refused before any call."""
    project = f"estate-{next(_projects)}"
    parent = f"projects/{project}"
    policy = {"allowed_persistence_regions": ["europe-west1"], "enforce_in_transit": True}
    world["publisher"].create_topic(request={
        "name": f"{parent}/topics/orders", "message_storage_policy": policy,
        "labels": {"reconcile-publish-endpoint": "us-east1"},
    })
    world["publisher"].create_topic(request={  # another policy: nothing in Defaults
        "name": f"{parent}/topics/plain",
        "message_storage_policy": {**policy, "allowed_persistence_regions": ["europe-west4"]},
    })
    address = world["server"].address
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    out = root / "imported"
    imported = reconcile("import", "--project", project, "--out", str(out),
                         "--emulator", address)
    assert imported.exit_code == 0, imported.stderr
    text = (out / f"{project}.yaml").read_text()
    assert "    endpoint: us-east1  # plan warns: existing-publisher-endpoint" in text, text
    assert _marks(text) == [("existing-publisher-endpoint", "orders")], text

    plan = reconcile("plan", str(root), "--emulator", address, "--format", "json")
    assert plan.exit_code == 0, plan.stdout + plan.stderr
    found = json.loads(plan.stdout)["diagnostics"]
    assert [(d["severity"], d["code"], d["line"]) for d in found if d["topic"]] == [
        ("warning", "existing-publisher-endpoint",
         text.splitlines().index("    endpoint: us-east1  # plan warns: "
                                 "existing-publisher-endpoint") + 1),
    ], found

    def refused(spec: str) -> list[tuple[str, str]]:
        (out / f"{project}.yaml").write_text(spec)
        result = reconcile("plan", str(out), "--emulator", address, "--format", "json")
        assert result.exit_code == 1, result.stdout + result.stderr
        return [(d["code"], d["topic"].rsplit("/", 1)[-1])
                for d in json.loads(result.stdout)["diagnostics"] if d["severity"] == "error"]

    new = text.replace("name: orders", "name: payouts")
    assert refused(new) == [("publisher-endpoint-denied", "payouts")]
    introduced = text.replace("name: orders", "name: was-orders").replace(
        "name: plain", "name: orders").replace("name: was-orders", "name: plain")
    assert refused(introduced) == [("publisher-endpoint-denied", "plain")]
    moved = text.replace("- europe-west1\n", "- europe-west4\n")
    assert moved.count("- europe-west4\n") == 2, moved
    assert refused(moved) == [("publisher-endpoint-denied", "orders")]
