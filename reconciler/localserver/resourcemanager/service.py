"""Resource Manager v3's `Projects`, `Folders` and `Organizations` services (and the
`google.longrunning.Operations` GetOperation their creations point to), over the
hierarchy the org-policy evaluation walks (`hierarchy.Hierarchy`): a folder or a
project created or moved here is under its parent's policies at once.

Served: GetProject, ListProjects, SearchProjects, CreateProject, MoveProject;
GetFolder, ListFolders, SearchFolders, CreateFolder; GetOrganization,
SearchOrganizations; GetOperation. CreateProject, CreateFolder and MoveProject are
long-running in v3: the answer is an Operation already done, its `response` the
resource (the client library's `.result()` returns it without polling) and its
`metadata` the method's; GetOperation answers the operations of this server's run.
Nothing is ever deleted or updated here (no DeleteProject, UpdateFolder, ...: those
answer UNIMPLEMENTED), and IAM on these resources is not modelled: every caller may
read and create.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from reconciler.localserver.api import protos
from reconciler.localserver.api.paging import token_offset
from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import already_exists, invalid, not_found
from reconciler.localserver.pubsub.limits import check_labels
from reconciler.localserver.pubsub.state import ServerState
from reconciler.localserver.resourcemanager.hierarchy import (
    Hierarchy,
    check_parent_name,
    project_display_problem,
)
from reconciler.localserver.resourcemanager.query import parse

PROJECTS_SERVICE = "google.cloud.resourcemanager.v3.Projects"
FOLDERS_SERVICE = "google.cloud.resourcemanager.v3.Folders"
ORGANIZATIONS_SERVICE = "google.cloud.resourcemanager.v3.Organizations"
OPERATIONS_SERVICE = "google.longrunning.Operations"
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
KEPT_OPERATIONS = 1000

PROJECT_FIELDS = {
    "displayname": "displayName", "name": "displayName", "parent": "parent",
    "parent.type": "parent.type", "parent.id": "parent.id", "id": "projectId",
    "projectid": "projectId", "state": "state", "lifecyclestate": "state",
    "labels.": "labels.",
}
FOLDER_FIELDS = {
    "displayname": "displayName", "parent": "parent", "state": "state",
    "lifecyclestate": "state",
}
ORGANIZATION_FIELDS = {
    "domain": "domain", "directorycustomerid": "directoryCustomerId",
    "owner.directorycustomerid": "directoryCustomerId",
}


def _page(items: list[Any], page_size: int, token: str) -> tuple[list[Any], str]:
    """One page of `items` and the next page's token ("" on the last)."""
    if page_size < 0:
        raise invalid("page_size must not be negative.")
    size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    start = token_offset(token, token) if token else 0
    end = start + size
    return items[start:end], str(end) if end < len(items) else ""


def _children(request: Any, resources: list[Any]) -> tuple[list[Any], str]:
    """The page of `resources` whose parent is the List request's `parent` (its
    children only, not their descendants)."""
    if not request.parent:
        raise invalid("parent is required: folders/FOLDER_ID or organizations/ORG_ID.")
    check_parent_name(request.parent)
    mine = [r for r in resources if r.parent == request.parent]
    return _page(mine, request.page_size, request.page_token)


Values = Callable[[Any], Callable[[str], Sequence[str]]]


def _searched(
    request: Any, resources: list[Any], fields: dict[str, str], values: Values,
    side_by_side_or: bool = False,
) -> tuple[list[Any], str]:
    """The page of `resources` the Search request's `query` matches (`values`: a
    resource's values of each field)."""
    query = parse(request.query, fields, side_by_side_or)
    found = [r for r in resources if query.matches(values(r))]
    return _page(found, request.page_size, request.page_token)


def _project_values(project: Any) -> Callable[[str], Sequence[str]]:
    kind, _, number = project.parent.partition("/")

    def values(field: str) -> Sequence[str]:
        if field.startswith("labels."):
            key = field.removeprefix("labels.")
            return [project.labels[key]] if key in project.labels else []
        return {
            "displayName": [project.display_name], "parent": [project.parent],
            "parent.type": [kind.removesuffix("s")] if kind else [],
            "parent.id": [number] if number else [], "projectId": [project.project_id],
            "state": ["ACTIVE"],
        }[field]

    return values


def _folder_values(folder: Any) -> Callable[[str], Sequence[str]]:
    found = {"displayName": [folder.display_name], "parent": [folder.parent],
             "state": ["ACTIVE"]}
    return found.__getitem__


def _organization_values(organization: Any) -> Callable[[str], Sequence[str]]:
    found = {"domain": [organization.display_name],
             "directoryCustomerId": [organization.directory_customer_id]}
    return found.__getitem__


class Operations:
    """The operations this server's run answered (the last KEPT_OPERATIONS), each done
    when made."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: dict[str, Any] = {}
        self._numbers = itertools.count(1)

    def done(self, kind: str, response: Any, metadata: Any) -> Any:
        """A done Operation named operations/KIND.N carrying `response`."""
        op = protos.Operation(done=True)
        with self._lock:
            op.name = f"operations/{kind}.{next(self._numbers)}"
            op.response.Pack(response)
            op.metadata.Pack(metadata)
            self._done[op.name] = op
            while len(self._done) > KEPT_OPERATIONS:
                del self._done[next(iter(self._done))]
        return op

    def get_operation(self, request: Any, call: CallInfo) -> Any:
        with self._lock:
            op = self._done.get(request.name)
        if op is None:
            raise not_found(f"Operation {request.name} not found.")
        return op

    def rpcs(self) -> list[Rpc]:
        return [Rpc("GetOperation", self.get_operation, protos.GetOperationRequest,
                    protos.Operation, lambda r: r.name)]


class ProjectsService:
    def __init__(self, state: ServerState, operations: Operations) -> None:
        self.state = state
        self.hierarchy = Hierarchy(state)
        self.operations = operations

    def get_project(self, request: Any, call: CallInfo) -> Any:
        return self.hierarchy.project(
            self.hierarchy.project_id(request.name, "resourcemanager.projects.get")
        )

    def list_projects(self, request: Any, call: CallInfo) -> Any:
        page, token = _children(request, self.hierarchy.projects())
        return protos.ListProjectsResponse(projects=page, next_page_token=token)

    def search_projects(self, request: Any, call: CallInfo) -> Any:
        page, token = _searched(request, self.hierarchy.projects(), PROJECT_FIELDS,
                                _project_values, side_by_side_or=True)
        return protos.SearchProjectsResponse(projects=page, next_page_token=token)

    def create_project(self, request: Any, call: CallInfo) -> Any:
        given = request.project
        project_id = given.project_id
        if not project_id:
            raise invalid("project.project_id is required.")
        self.hierarchy.project_id(f"projects/{project_id}", "resourcemanager.projects.create")
        if problem := project_display_problem(given.display_name):
            raise invalid(f"Invalid project: {problem}.")
        check_labels(given.labels, "project")
        name = f"projects/{project_id}"
        stored = protos.Project(project_id=project_id, display_name=given.display_name,
                                labels=dict(given.labels))
        stored.create_time.FromNanoseconds(time.time_ns())

        with self.state.locked():  # checked and written with nothing in between
            if self.state.resource(name) is not None:
                raise already_exists(
                    f"Requested entity already exists: project ID {project_id!r} is in use."
                )
            if given.parent:
                self.hierarchy.check_parent(given.parent, "resourcemanager.projects.create")
            self.state.write_resource(name, stored, given.parent or None)
        metadata = protos.CreateProjectMetadata(gettable=True, ready=True)
        metadata.create_time.CopyFrom(stored.create_time)
        return self.operations.done("cp", self.hierarchy.project(project_id), metadata)

    def move_project(self, request: Any, call: CallInfo) -> Any:
        project_id = self.hierarchy.project_id(request.name, "resourcemanager.projects.move")
        destination = request.destination_parent
        if not destination:
            raise invalid("destination_parent is required.")

        with self.state.locked():
            self.hierarchy.check_parent(destination, "resourcemanager.projects.move")
            self.state.write_resource(f"projects/{project_id}", None, destination)
        return self.operations.done(
            "mp", self.hierarchy.project(project_id), protos.MoveProjectMetadata()
        )

    def rpcs(self) -> list[Rpc]:
        p = protos
        return [
            Rpc("GetProject", self.get_project, p.GetProjectRequest, p.Project,
                lambda r: r.name),
            Rpc("ListProjects", self.list_projects, p.ListProjectsRequest,
                p.ListProjectsResponse, lambda r: r.parent),
            Rpc("SearchProjects", self.search_projects, p.SearchProjectsRequest,
                p.SearchProjectsResponse, lambda r: ""),
            Rpc("CreateProject", self.create_project, p.CreateProjectRequest, p.Operation,
                lambda r: f"projects/{r.project.project_id}"),
            Rpc("MoveProject", self.move_project, p.MoveProjectRequest, p.Operation,
                lambda r: r.name),
        ]


class FoldersService:
    def __init__(self, state: ServerState, operations: Operations) -> None:
        self.state = state
        self.hierarchy = Hierarchy(state)
        self.operations = operations

    def get_folder(self, request: Any, call: CallInfo) -> Any:
        return self.hierarchy.folder(request.name)

    def list_folders(self, request: Any, call: CallInfo) -> Any:
        page, token = _children(request, self.hierarchy.folders())
        return protos.ListFoldersResponse(folders=page, next_page_token=token)

    def search_folders(self, request: Any, call: CallInfo) -> Any:
        page, token = _searched(request, self.hierarchy.folders(), FOLDER_FIELDS, _folder_values)
        return protos.SearchFoldersResponse(folders=page, next_page_token=token)

    def create_folder(self, request: Any, call: CallInfo) -> Any:
        given = request.folder
        if not given.parent:
            raise invalid("folder.parent is required: folders/FOLDER_ID or "
                          "organizations/ORG_ID.")
        stored = protos.Folder(display_name=given.display_name)
        stored.create_time.FromNanoseconds(time.time_ns())
        stored.update_time.CopyFrom(stored.create_time)
        with self.state.locked():  # the checks and the new name, then the write
            self.hierarchy.check_parent(given.parent, "resourcemanager.folders.create")
            self.hierarchy.check_new_folder(given.parent, given.display_name)
            name = self.hierarchy.next_folder()
            self.state.write_resource(name, stored, given.parent)
        metadata = protos.CreateFolderMetadata(display_name=given.display_name,
                                               parent=given.parent)
        return self.operations.done("cf", self.hierarchy.folder(name), metadata)

    def rpcs(self) -> list[Rpc]:
        p = protos
        return [
            Rpc("GetFolder", self.get_folder, p.GetFolderRequest, p.Folder, lambda r: r.name),
            Rpc("ListFolders", self.list_folders, p.ListFoldersRequest,
                p.ListFoldersResponse, lambda r: r.parent),
            Rpc("SearchFolders", self.search_folders, p.SearchFoldersRequest,
                p.SearchFoldersResponse, lambda r: ""),
            Rpc("CreateFolder", self.create_folder, p.CreateFolderRequest, p.Operation,
                lambda r: r.folder.parent),
        ]


class OrganizationsService:
    def __init__(self, state: ServerState) -> None:
        self.hierarchy = Hierarchy(state)

    def get_organization(self, request: Any, call: CallInfo) -> Any:
        return self.hierarchy.organization(request.name)

    def search_organizations(self, request: Any, call: CallInfo) -> Any:
        page, token = _searched(request, self.hierarchy.organizations(), ORGANIZATION_FIELDS,
                                _organization_values)
        return protos.SearchOrganizationsResponse(organizations=page, next_page_token=token)

    def rpcs(self) -> list[Rpc]:
        p = protos
        return [
            Rpc("GetOrganization", self.get_organization, p.GetOrganizationRequest,
                p.Organization, lambda r: r.name),
            Rpc("SearchOrganizations", self.search_organizations,
                p.SearchOrganizationsRequest, p.SearchOrganizationsResponse, lambda r: ""),
        ]
