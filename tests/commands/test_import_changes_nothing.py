"""Import that changes nothing (issue 46 item 1), over generated estates: live topics
with every managed field (labels, storage policy regions and in-transit enforcement,
retention, key, schema settings), made through the real clients on the loopback
server, then org policies that agree or disagree with them (locations, in-transit, the
CMEK constraints: set after the topics, as an org tightens its rules), and a Defaults
document above the output directory or none. `reconcile import`, then `reconcile
plan` of the tree: nothing but reconcile's ownership labels is planned, no finding is
an error (nor in `validate` against the pulled snapshot), and every value the org
would refuse today is marked in the file with the finding the plan raises on it."""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.ownership import OWNER_LABEL, OWNERSHIP_LABEL
from reconciler.yamltext import dump_all
from tests.cli_support import reconcile
from tests.server_support import running_local_server

REGIONS = ("us-east1", "us-central1", "europe-west1", "europe-west4", "asia-east1")
# What gcp.resourceLocations allows (None: no such policy).
ALLOWED = (None, ("europe-west1", "europe-west4"), ("us-east1",), ("in:eu-locations",))
KEY_PROJECTS = ("keys-a", "keys-b")
RETENTIONS = (600, 3600, 5400, 86400, 90061, 172800, 2678400)
# With the labels Terraform and Config Connector put on what they manage: left to them.
LABEL_KEYS = ("team", "tier", "cost-center", "yes", "goog-terraform-provisioned",
              "managed-by-cnrm")
LABEL_VALUES = ("payments", "1e3", "yes", "", "0o17", "2001-12-14", "x")
OWNERSHIP = {OWNERSHIP_LABEL, OWNER_LABEL}
_projects = itertools.count()


@dataclass
class Estate:
    topics: list[dict[str, Any]]
    allowed: tuple[str, ...] | None
    in_transit: bool
    cmek: bool
    key_projects: bool  # restrictCmekCryptoKeyProjects allows keys-a only
    defaults: dict[str, Any] | None  # the spec of a Defaults document above, or none


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
        topic["kms_key_name"] = (
            f"projects/{key_project}/locations/us-east1/keyRings/r/cryptoKeys/k"
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
    return Estate(
        topics, allowed, in_transit, draw(st.booleans()), draw(st.booleans()), defaults,
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
    """The topics, then the org policy that now applies to the project."""
    parent = f"projects/{project}"
    schema = f"{parent}/schemas/order"
    if any("schema_settings" in t for t in estate.topics):
        world["schema"].create_schema(parent=parent, schema_id="order", schema={
            "type_": "AVRO",
            "definition": json.dumps({"type": "record", "name": "R",
                                      "fields": [{"name": "id", "type": "string"}]}),
        })
    for i, topic in enumerate(estate.topics):
        request = {"name": f"{parent}/topics/topic-{i}", **topic}
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
        policies.append(("gcp.restrictCmekCryptoKeyProjects",
                         {"rules": [{"values": {"allowed_values": ["under:projects/keys-a"]}}]}))
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
        pulled = reconcile("policy", "pull", "--project", project, "--out",
                           str(root / "org-policy.yaml"), "--emulator", address)
        assert pulled.exit_code == 0, pulled.stderr
        # Offline, nothing says the topics exist: what the org refuses of a new topic
        # is a warning that leaves it to plan, never an error.
        validated = reconcile("validate", str(root), "--require-org-policy")
        assert validated.exit_code == 0, (validated.stdout, text)

        planned = reconcile("plan", str(root), "--emulator", address, "--format", "json",
                            "--detailed-exitcode")
        assert planned.exit_code in (0, 2), planned.stdout + planned.stderr
        plan = json.loads(planned.stdout)
        errors = [d for d in plan["diagnostics"] if d["severity"] == "error"]
        assert not errors, (errors, text)
        changes = [rc for rc in plan["resource_changes"] if rc["change"]["actions"] != ["no-op"]]
        assert len(changes) == len(estate.topics), (plan["resource_changes"], text)
        for rc in changes:
            assert rc["change"]["actions"] == ["update"], (rc, text)
            assert rc["update_mask"] == ["labels"], (rc, text)
            merge = rc["request"]["label_merge"]
            assert set(merge["set"]) == OWNERSHIP and not merge.get("remove"), (rc, text)

        # Each existing-family finding of the plan is marked at its line in the file.
        existing = sorted(
            (d["code"], d["topic"].rsplit("/", 1)[-1]) for d in plan["diagnostics"]
            if d["code"].startswith("existing-")
        )
        marked = sorted(_marks(text))
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
