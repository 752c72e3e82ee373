"""Resource Manager v3 on the local server, through Google's own Projects, Folders and
Organizations clients: a hierarchy built through the API, read back and searched; the
service's refusals; the Org Policy evaluation and the Pub/Sub constraint checks
following that hierarchy at once; a hierarchy that survives a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.localserver import LocalServer
from tests.server_support import ResourceManager, resource_manager
from tests.specs_support import custom_constraint

ORG = "organizations/4040"
LOCATIONS = "gcp.resourceLocations"


def test_a_hierarchy_built_through_the_clients_reads_back(hierarchy: ResourceManager) -> None:
    eng = hierarchy.folder(ORG, "Engineering")
    team = hierarchy.folder(eng, "Team A")
    made = hierarchy.project("acme-payments", team)
    assert (made.project_id, made.parent, made.state.name) == ("acme-payments", team, "ACTIVE")
    assert made.name.removeprefix("projects/").isdigit()  # named by number, as the service
    # Found by ID and by number alike.
    by_id = hierarchy.projects.get_project(name="projects/acme-payments")
    assert hierarchy.projects.get_project(name=made.name) == by_id
    assert hierarchy.folders.get_folder(name=team).parent == eng
    assert hierarchy.folders.get_folder(name=eng).parent == ORG
    assert hierarchy.organizations.get_organization(name=ORG).state.name == "ACTIVE"
    assert [p.project_id for p in hierarchy.projects.list_projects(parent=team)] == [
        "acme-payments"
    ]
    assert not list(hierarchy.projects.list_projects(parent=eng))  # children only
    assert [f.display_name for f in hierarchy.folders.list_folders(parent=ORG)] == ["Engineering"]
    assert [f.name for f in hierarchy.folders.search_folders(query="displayName=team*")] == [team]
    searched = hierarchy.projects.search_projects(query=f"parent:{team}")
    assert [p.project_id for p in searched] == ["acme-payments"]
    assert [o.name for o in hierarchy.organizations.search_organizations()] == [ORG]


def test_a_project_nobody_created_has_no_parent_and_is_not_listed(
    hierarchy: ResourceManager, publisher_client: Any
) -> None:
    """As the Pub/Sub side creates topics in any project (local-only)."""
    publisher_client.create_topic(name="projects/loose-project/topics/orders")
    found = hierarchy.projects.get_project(name="projects/loose-project")
    assert (found.project_id, found.parent, found.state.name) == (
        "loose-project", "", "ACTIVE"
    )
    assert not list(hierarchy.projects.search_projects(query="id:loose-project"))


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda h: h.projects.get_project(name="projects/Bad_Id"), exceptions.InvalidArgument,
         "project ID 'Bad_Id'"),
        (lambda h: h.projects.get_project(name="folders/1"), exceptions.InvalidArgument,
         "expected projects/PROJECT_ID_OR_NUMBER"),
        (lambda h: h.projects.get_project(name="projects/123456789"),
         exceptions.PermissionDenied, "(or it may not exist)"),
        (lambda h: h.folders.get_folder(name="folders/77"), exceptions.PermissionDenied,
         "Permission 'resourcemanager.folders.get' denied on resource "
         "'//cloudresourcemanager.googleapis.com/folders/77' (or it may not exist)."),
        (lambda h: h.folders.get_folder(name="folders/eng"), exceptions.InvalidArgument,
         "expected folders/NUMBER"),
        (lambda h: h.organizations.get_organization(name="organizations/9"),
         exceptions.PermissionDenied, "resourcemanager.organizations.get"),
        (lambda h: h.folder("organizations/9", "-dash"), exceptions.InvalidArgument,
         "must start and end with a letter or digit"),
        (lambda h: h.folder("organizations/9", "x" * 31), exceptions.InvalidArgument,
         "1 to 30 characters"),
        (lambda h: h.folder("projects/p", "Eng"), exceptions.InvalidArgument,
         "expected folders/FOLDER_ID or organizations/ORGANIZATION_ID"),
        (lambda h: h.folder("folders/55", "Eng"), exceptions.PermissionDenied,
         "resourcemanager.folders.create"),
        (lambda h: h.project("UPPER-case", ORG), exceptions.InvalidArgument,
         "must start with a lowercase letter"),
        (lambda h: h.project("acme-typo", "folders/55"), exceptions.PermissionDenied,
         "resourcemanager.projects.create"),
        (lambda h: h.projects.search_projects(query="NOT id:x").pages.__next__(),
         exceptions.InvalidArgument, "does not support NOT"),
        (lambda h: h.projects.search_projects(query="colour:red").pages.__next__(),
         exceptions.InvalidArgument, "unknown field 'colour'"),
        (lambda h: h.projects.list_projects(parent="").pages.__next__(),
         exceptions.InvalidArgument, "parent is required"),
    ],
    ids=["bad-id", "not-a-project", "unknown-number", "unknown-folder", "folder-by-name",
         "unknown-org", "folder-display", "folder-too-long", "folder-under-project",
         "folder-under-unknown", "project-id", "project-under-unknown", "query-not",
         "query-field", "list-no-parent"],
)
def test_what_the_service_refuses(
    hierarchy: ResourceManager, call: Any, error: type[Exception], words: str
) -> None:
    with pytest.raises(error) as raised:
        call(hierarchy)
    assert words in str(raised.value)


def test_siblings_ids_and_depth(hierarchy: ResourceManager) -> None:
    eng = hierarchy.folder(ORG, "Engineering")
    with pytest.raises(exceptions.FailedPrecondition, match="unique among its siblings"):
        hierarchy.folder(ORG, "Engineering")
    hierarchy.project("acme-one", eng)
    with pytest.raises(exceptions.AlreadyExists, match="'acme-one' is in use"):
        hierarchy.project("acme-one", ORG)
    node = eng
    for depth in range(2, 11):  # ten folders deep is the most
        node = hierarchy.folder(node, f"Level {depth}")
    with pytest.raises(exceptions.FailedPrecondition, match="more than 10 folders deep"):
        hierarchy.folder(node, "Level 11")


def test_policies_of_the_organization_and_folder_apply_at_once(
    hierarchy: ResourceManager, orgpolicy_client: Any, publisher_client: Any,
    local_server: Any,
) -> None:
    """No seed, no snapshot: the hierarchy made through Resource Manager, the
    policies and the custom constraint through the Org Policy API."""
    eng = hierarchy.folder(ORG, "Engineering")
    hierarchy.project("acme-orders", eng)
    orgpolicy_client.create_custom_constraint(parent=ORG, custom_constraint={
        **custom_constraint(ORG, "custom.noTmp", "'tmp' in resource.labels"),
        "action_type": "DENY",
    })
    orgpolicy_client.create_policy(parent=ORG, policy={
        "name": f"{ORG}/policies/custom.noTmp", "spec": {"rules": [{"enforce": True}]},
    })
    orgpolicy_client.create_policy(parent=eng, policy={
        "name": f"{eng}/policies/{LOCATIONS}",
        "spec": {"rules": [{"values": {"allowed_values": ["in:europe-west1-locations"]}}]},
    })
    name = "projects/acme-orders/policies/custom.noTmp"
    assert orgpolicy_client.get_effective_policy(name=name).spec.rules[0].enforce
    allowed = orgpolicy_client.get_effective_policy(
        name=f"projects/acme-orders/policies/{LOCATIONS}"
    ).spec.rules[0].values.allowed_values
    assert "europe-west1" in allowed and "us-east1" not in allowed
    topic = {"name": "projects/acme-orders/topics/orders", "labels": {"tmp": "yes"},
             "message_storage_policy": {"allowed_persistence_regions": ["europe-west1"]}}
    with pytest.raises(exceptions.FailedPrecondition) as refused:
        publisher_client.create_topic(request=topic)
    assert refused.value.message == (
        'Operation denied by custom org policy: ["customConstraints/custom.noTmp": '
        '"custom.noTmp says no."]'
    )
    us = {**topic, "labels": {}, "message_storage_policy": {
        "allowed_persistence_regions": ["us-east1"]}}
    with pytest.raises(exceptions.FailedPrecondition, match=r"gcp\.resourceLocations"):
        publisher_client.create_topic(request=us)  # the folder's policy
    # Moved out of the organization, the project is under neither any more.
    hierarchy.projects.move_project(
        name="projects/acme-orders", destination_parent="organizations/5050"
    ).result()
    assert not orgpolicy_client.get_effective_policy(name=name).spec.rules[0].enforce
    publisher_client.create_topic(request={**topic, "message_storage_policy": {
        "allowed_persistence_regions": ["us-east1"]}})
    assert local_server.counters.get("MoveProject") == 1


def test_a_seeds_ancestry_is_the_same_hierarchy(
    local_server: Any, hierarchy: ResourceManager
) -> None:
    local_server.set_ancestry("projects/seeded-proj", "folders/42")
    local_server.set_ancestry("folders/42", ORG)
    assert hierarchy.projects.get_project(name="projects/seeded-proj").parent == "folders/42"
    assert hierarchy.folders.get_folder(name="folders/42").parent == ORG
    assert [p.project_id for p in hierarchy.projects.list_projects(parent="folders/42")] == [
        "seeded-proj"
    ]
    # A folder made through the API beside it gets a number of its own.
    assert hierarchy.folder(ORG, "New") not in ("folders/42",)


def test_the_hierarchy_survives_a_restart(tmp_path: Path) -> None:
    with LocalServer(state_dir=tmp_path) as server:
        clients = resource_manager(server.address)
        eng = clients.folder(ORG, "Engineering")
        made = clients.project("acme-durable", eng)
        clients.close()
    with LocalServer(state_dir=tmp_path) as again:
        clients = resource_manager(again.address)
        try:
            found = clients.projects.get_project(name="projects/acme-durable")
            assert (found.name, found.parent, found.create_time) == (
                made.name, eng, made.create_time
            )
            assert clients.folders.get_folder(name=eng).display_name == "Engineering"
            assert again.state.policy_store.chain("projects/acme-durable") == [
                "projects/acme-durable", eng, ORG
            ]
            # The next folder is numbered after those the state holds.
            assert clients.folder(ORG, "Other") > eng
        finally:
            clients.close()
