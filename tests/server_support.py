"""The suite's one way to make a local server: the `local_server` fixture (tests/
conftest.py) is this, and a test that needs a fresh one per hypothesis example calls it
directly."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@contextmanager
def running_local_server() -> Iterator[Any]:
    """An in-memory `LocalServer` on a free loopback port (fault fractions seeded, so
    a run is repeatable), stopped on exit."""
    from reconciler.localserver import LocalServer

    server = LocalServer(fault_seed=1234)
    server.start()
    try:
        yield server
    finally:
        server.stop(grace=None)


@dataclass
class ResourceManager:
    """Resource Manager v3's three real clients, over one plaintext channel to a local
    server; `place` builds a project's place in the hierarchy through them."""

    projects: Any
    folders: Any
    organizations: Any

    def folder(self, parent: str, display_name: str) -> str:
        """A new folder under `parent` (CreateFolder, a long-running operation)."""
        made = self.folders.create_folder(folder={"parent": parent, "display_name": display_name})
        return str(made.result().name)

    def project(self, project_id: str, parent: str) -> Any:
        """Create project `project_id` under `parent` (CreateProject)."""
        return self.projects.create_project(
            project={"project_id": project_id, "parent": parent}
        ).result()

    def close(self) -> None:
        for client in (self.projects, self.folders, self.organizations):
            client.transport.close()


def resource_manager(address: str) -> ResourceManager:
    """The real Resource Manager clients pointed at the local server at `address`."""
    import grpc
    from google.cloud import resourcemanager_v3 as rm
    from google.cloud.resourcemanager_v3.services.folders.transports import FoldersGrpcTransport
    from google.cloud.resourcemanager_v3.services.organizations.transports import (
        OrganizationsGrpcTransport,
    )
    from google.cloud.resourcemanager_v3.services.projects.transports import (
        ProjectsGrpcTransport,
    )

    channel = grpc.insecure_channel(address)
    return ResourceManager(
        rm.ProjectsClient(transport=ProjectsGrpcTransport(channel=channel)),
        rm.FoldersClient(transport=FoldersGrpcTransport(channel=channel)),
        rm.OrganizationsClient(transport=OrganizationsGrpcTransport(channel=channel)),
    )
