"""Where a project sits, read from Cloud Resource Manager v3: GetProject gives its
parent (a folder or an organization, or none), GetFolder each folder's, up to the
organization. One GetProject per project and one GetFolder per distinct folder in a
run (the answers are kept); what cannot be read is a value saying why (`Ancestry.
unavailable`), never an exception: the plan goes on and says what it could not judge.

    HierarchyReader(projects_client, folders_client, options).ancestry(project) -> Ancestry
    snapshot_ancestry(store, project) -> Ancestry          an --org-policy snapshot's

What each read needs (docs/authentication.md): `resourcemanager.projects.get` on the
project and `resourcemanager.folders.get` on each folder above it (both in
`roles/browser`). The service answers PERMISSION_DENIED alike for a project the caller
may not see and one that does not exist.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exc

from reconciler.backends.base import Ancestry
from reconciler.errors import BackendError
from reconciler.orgpolicy.store import MAX_HIERARCHY_DEPTH, PolicyStore

ROLE = "roles/browser"
PERMISSION = {"projects": "resourcemanager.projects.get", "folders": "resourcemanager.folders.get"}


def snapshot_ancestry(store: PolicyStore, project: str) -> Ancestry:
    """The project's parents as a snapshot's `ancestry:` records them (none for
    `projects/P: none`). A project it does not place is unknown, not "in no
    organization" (a project left out by mistake must not pass as one without custom
    constraints), unless the snapshot holds no custom constraint and no policy of one:
    then none can apply, wherever the project sits."""
    parents = tuple(store.chain(f"projects/{project}")[1:])
    if parents or f"projects/{project}" in store.unparented or not _has_custom(store):
        return Ancestry(parents)
    return Ancestry(unavailable=(
        f"the org-policy snapshot's `ancestry:` does not place projects/{project} "
        "under a folder or organization"
    ))


def _has_custom(store: PolicyStore) -> bool:
    """Does the snapshot hold a custom constraint, or a policy on one?"""
    return bool(store.custom_constraints) or any(
        "/policies/custom." in name for name in store.policies
    )


def why_not(exc: Exception, name: str) -> str:
    """Why `name` (projects/P, folders/F) could not be read, as a sentence."""
    need = f"needs {PERMISSION[name.split('/')[0]]}, e.g. {ROLE}"
    if isinstance(exc, gexc.PermissionDenied):
        return (
            f"Resource Manager refused to show {name}: no permission, or no such "
            f"resource ({need})"
        )
    if isinstance(exc, gexc.NotFound):
        return f"Resource Manager has no {name}"
    if isinstance(exc, gexc.Unauthenticated | auth_exc.GoogleAuthError):
        return f"not authenticated to Resource Manager to read {name} ({need})"
    if isinstance(exc, gexc.MethodNotImplemented):
        return f"the target serves no Resource Manager API to read {name}"
    if isinstance(exc, BackendError):  # e.g. Google Cloud unreachable (ConnectFirst)
        return f"cannot read {name} from Resource Manager: {exc.message}"
    if isinstance(exc, gexc.RetryError | gexc.DeadlineExceeded | gexc.ServiceUnavailable):
        return f"Resource Manager did not answer for {name} in time or is unavailable"
    code = getattr(getattr(exc, "grpc_status_code", None), "name", None) or type(exc).__name__
    detail = getattr(exc, "message", None) or ""
    return f"cannot read {name} from Resource Manager ({code}{': ' if detail else ''}{detail})"


READ_ERRORS = (gexc.GoogleAPIError, gexc.RetryError, auth_exc.GoogleAuthError, BackendError)


class HierarchyReader:
    """Ancestry reads over Resource Manager's Projects and Folders clients, each answer
    kept for the run (thread-safe: projects are read in parallel, and a folder shared
    by several is asked for once)."""

    def __init__(self, projects: Any, folders: Any, options: Callable[[], dict[str, Any]]
                 ) -> None:
        self.projects = projects
        self.folders = folders
        self._options = options  # the per-call deadline and retry (backends/deadline.py)
        self._lock = threading.Lock()
        self._parents: dict[str, str | Exception] = {}  # name -> parent ("" none) or failure
        self._reading: dict[str, threading.Lock] = {}

    def ancestry(self, project: str) -> Ancestry:
        parents: list[str] = []
        node = f"projects/{project}"
        while len(parents) < MAX_HIERARCHY_DEPTH:
            parent = self._parent(node)
            if isinstance(parent, Exception):
                return Ancestry(tuple(parents), why_not(parent, node))
            if not parent:
                return Ancestry(tuple(parents))
            if parent in parents:
                return Ancestry(tuple(parents), f"Resource Manager's ancestry of {node} "
                                f"loops back to {parent}")
            parents.append(parent)
            if not parent.startswith("folders/"):
                return Ancestry(tuple(parents))
            node = parent
        return Ancestry(tuple(parents), f"projects/{project} is more than "
                        f"{MAX_HIERARCHY_DEPTH} levels deep in Resource Manager")

    def _parent(self, name: str) -> str | Exception:
        """The parent Resource Manager names for `name`, read once per run."""
        with self._lock:
            if name in self._parents:
                return self._parents[name]
            reading = self._reading.setdefault(name, threading.Lock())
        with reading:  # a second asker waits for the first's answer
            with self._lock:
                if name in self._parents:
                    return self._parents[name]
            found = self._read(name)
            with self._lock:
                self._parents[name] = found
            return found

    def _read(self, name: str) -> str | Exception:
        try:
            if name.startswith("projects/"):
                return str(self.projects.get_project(name=name, **self._options()).parent)
            return str(self.folders.get_folder(name=name, **self._options()).parent)
        except READ_ERRORS as exc:
            return exc
