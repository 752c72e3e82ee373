"""Spec and org-policy builders shared by the tests, so that no YAML is copied between
test files. Each builder writes the text exactly as the tests' positions expect it
(`path:line:col` assertions count on these lines).

    topic_doc(name, ...)            one `kind: Topic` document
    location_policy_doc(parent, allowed)
                                    a gcp.resourceLocations snapshot document
    in_transit_policy_doc(parent)   an enforcing pubsub.enforceInTransitRegions one
    cmek_snapshot(project, org)     a snapshot whose gcp.restrictNonCmekServices denies
                                    pubsub on `project`, placed under `org`
    location_policy(parent, allowed)
                                    the same policy as the dict `Policy.from_dict` takes
    Tree                            a spec tree and its snapshot in a directory
    custom_constraint(org, id, condition)
                                    a custom constraint on topics, as the Org Policy
                                    client takes it (its description "ID says no.")
    custom_refusal(address, id)     what plan and apply say of a create it refuses
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

API_VERSION = "reconcile.pubsub/v1"


def topic_doc(
    name: str,
    project: str | None = "proj-a",
    labels: dict[str, str] | None = None,
    storage: Any = None,
    hedging: str | None = None,
    publishers: str | None = None,
) -> str:
    """One `kind: Topic` YAML document. storage: None, (regions, eit) or a string
    written as is ("inherit", a flow mapping `{allowedPersistenceRegions: [...]}`);
    hedging: an inline profile's hedge delay; publishers: a flow mapping written as
    is (`{regions: [us-east1], messageOrdering: false}`); project None: left to a
    Defaults document."""
    metadata = f"{{project: {project}, name: {name}}}" if project else f"{{name: {name}}}"
    lines = [f"apiVersion: {API_VERSION}", "kind: Topic", f"metadata: {metadata}", "spec:"]
    if labels:
        lines.append("  labels: {" + ", ".join(f"{k}: {v}" for k, v in labels.items()) + "}")
    if isinstance(storage, str):
        lines.append(f"  messageStoragePolicy: {storage}")
    elif storage is not None:
        regions, eit = storage
        lines.append("  messageStoragePolicy:")
        lines.append(f"    allowedPersistenceRegions: [{', '.join(regions)}]")
        if eit is not None:
            lines.append(f"    enforceInTransit: {str(eit).lower()}")
    if hedging:
        lines += [
            "  publishers:",
            "    retry: {initialRpcTimeout: 5s, totalTimeout: 60s}",
            f"    hedging: {{hedgeDelay: {hedging}, maxTokens: 20, refillRatio: 0.05}}",
        ]
    elif publishers:
        lines.append(f"  publishers: {publishers}")
    if lines[-1] == "spec:":
        lines[-1] = "spec: {}"
    return "\n".join(lines) + "\n"


def owner_doc(name: str, prune_subscribed: tuple[str, ...] = ()) -> str:
    """The `kind: Owner` document that names a spec tree (docs/ownership.md), with its
    `pruneSubscribed` entries one a line."""
    doc = f"apiVersion: {API_VERSION}\nkind: Owner\nmetadata: {{name: {name}}}\n"
    if prune_subscribed:
        doc += "spec:\n  pruneSubscribed:\n" + "".join(
            f"    - {entry}\n" for entry in prune_subscribed
        )
    return doc


def location_policy_doc(parent: str, allowed: str) -> str:
    """`constraints/gcp.resourceLocations` of `parent` (projects/P, folders/F,
    organizations/O) allowing `allowed` (written as is: `in:us-locations, us-east1`)."""
    return (
        f"name: {parent}/policies/gcp.resourceLocations\n"
        "spec:\n"
        "  rules:\n"
        "    - values:\n"
        f"        allowedValues: [{allowed}]\n"
    )


def ancestry_doc(*projects: str, org: str = "organizations/1001") -> str:
    """An `ancestry:` document placing each project (`acme-payments` or
    `projects/acme-payments`) under `org`: what tells validate and plan which
    organization's custom constraints apply (none, in a snapshot that defines none)."""
    lines = ["ancestry:"]
    for project in projects:
        name = project if project.startswith("projects/") else f"projects/{project}"
        lines.append(f"  {name}: {org}")
    return "\n".join(lines) + "\n"


def in_transit_policy_doc(parent: str) -> str:
    """`constraints/pubsub.enforceInTransitRegions` enforced on `parent`."""
    return (
        f"name: {parent}/policies/pubsub.enforceInTransitRegions\n"
        "spec:\n"
        "  rules:\n"
        "    - enforce: true\n"
    )


def cmek_snapshot(project: str, org: str) -> str:
    """A snapshot file: `constraints/gcp.restrictNonCmekServices` denying
    pubsub.googleapis.com on `project` (CMEK required), the project under `org`."""
    return (
        f"name: projects/{project}/policies/gcp.restrictNonCmekServices\n"
        "spec:\n"
        "  rules:\n"
        "    - values:\n"
        "        deniedValues: [pubsub.googleapis.com]\n"
        "---\n"
        "ancestry:\n"
        f"  projects/{project}: {org}\n"
    )


def location_policy(parent: str, allowed: list[str]) -> dict[str, Any]:
    """The resourceLocations policy as `Policy.from_dict` takes it (for a server's
    `put_policy`)."""
    return {
        "name": f"{parent}/policies/gcp.resourceLocations",
        "spec": {"rules": [{"values": {"allowedValues": list(allowed)}}]},
    }


class Tree:
    """A spec tree (`specs/topics.yaml`) plus its org-policy snapshot
    (`org-policy.yaml`, allowing in:us-locations until `set_allowed`) under `root`."""

    def __init__(self, root: Path, project: str) -> None:
        self.root = root
        self.project = project
        self.specs = root / "specs"
        self.specs.mkdir()
        self.policy = root / "org-policy.yaml"
        self.set_allowed("in:us-locations")

    def set_allowed(self, allowed: str) -> None:
        self.policy.write_text(location_policy_doc(f"projects/{self.project}", allowed))

    def write(self, topics: dict[str, dict[str, Any]]) -> None:
        """One Topic document per entry, {name: spec}, sorted by name."""
        docs = [
            {
                "apiVersion": API_VERSION,
                "kind": "Topic",
                "metadata": {"project": self.project, "name": name},
                "spec": spec,
            }
            for name, spec in sorted(topics.items())
        ]
        (self.specs / "topics.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))

    def address(self, name: str) -> str:
        return f"projects/{self.project}/topics/{name}"


# Topics whose storage policy lists only European regions.
EU_ONLY = (
    "has(resource.messageStoragePolicy) && "
    "resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r.startsWith('europe-'))"
)


def custom_constraint(org: str, constraint_id: str, condition: str) -> dict[str, Any]:
    """An ALLOW custom constraint on topics' CREATE and UPDATE, described
    "ID says no.", in the shape `create_custom_constraint` takes."""
    return {
        "name": f"{org}/customConstraints/{constraint_id}",
        "resource_types": ["pubsub.googleapis.com/Topic"],
        "method_types": ["CREATE", "UPDATE"],
        "condition": condition,
        "action_type": "ALLOW",
        "description": f"{constraint_id} says no.",
    }


def custom_refusal(address: str, constraint_id: str) -> str:
    """The words of `org-custom-constraint` for a CreateTopic that `custom_constraint`
    refuses."""
    return (
        f"the CreateTopic of {address} breaks custom constraint "
        f'{constraint_id}: "{constraint_id} says no."'
    )
