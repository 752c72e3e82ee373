"""The resource hierarchy as Resource Manager v3 shows it, over the server's state: one
record of where each project and folder sits (`policy_store.ancestry`, which the
org-policy evaluation walks, so a policy set on an organization or a folder applies
at once to everything under it), plus the fields of the projects and folders created
through the API (`ServerState.resource`).

What the service states (googleapis google/cloud/resourcemanager/v3/*.proto, the
client library's docstrings): a project is named `projects/NUMBER` and also found by
its ID; its `parent` is optional (`folders/F` or `organizations/O`); a project ID is
6 to 30 lowercase letters, digits or hyphens starting with a letter; a display name
4 to 30 letters, digits, hyphens, quotes, spaces or `!`. A folder's parent is
required; its display name matches `[\\p{L}\\p{N}]([\\p{L}\\p{N}_- ]{0,28}[\\p{L}\\p{N}])?`
and is unique among its siblings, at most 10 folders deep and 300 under one parent
(FAILED_PRECONDITION otherwise). A resource the caller cannot see, or that does not
exist, answers PERMISSION_DENIED ("... (or it may not exist)", IAM's permission error
messages). Organizations cannot be created through the API.

What is local-only (docs/local-server.md, "Resource Manager"): a project nobody
created exists implicitly, ACTIVE and with no parent, as the Pub/Sub side creates
topics in any project (its number is derived from its ID; it is not listed until it
is created or placed); a folder or organization exists once the hierarchy names it
(a seed's `ancestry:`, a folder or project created under it, and for an organization
also an org policy or custom constraint stored on it); a project or folder may be
created under any `organizations/NUMBER`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Any

import grpc

from reconciler.localserver.api import protos
from reconciler.localserver.api.status import ServiceError, failed_precondition, invalid
from reconciler.localserver.pubsub.state import ServerState
from reconciler.names import project_id_problem

MAX_FOLDER_HEIGHT = 10
MAX_FOLDER_CHILDREN = 300
FIRST_FOLDER_NUMBER = 100_000_000_000  # folder numbers the server gives start above it
_NUMBER = re.compile(r"[1-9][0-9]{0,18}")
_PROJECT_DISPLAY = re.compile(r"[A-Za-z0-9\-'\" !]{4,30}")
SERVICE = "//cloudresourcemanager.googleapis.com/"


def denied(permission: str, name: str) -> ServiceError:
    """What the service answers for a resource the caller cannot see or that does not
    exist (the two are not told apart)."""
    return ServiceError(
        grpc.StatusCode.PERMISSION_DENIED,
        f"Permission '{permission}' denied on resource '{SERVICE}{name}' (or it may not "
        "exist).",
    )


def project_number(project_id: str) -> int:
    """The number of a project (local: derived from its ID, so a project that exists
    implicitly has the same one as once it is created)."""
    digest = int.from_bytes(hashlib.sha256(project_id.encode()).digest()[:8], "big")
    return 100_000_000_000 + digest % 900_000_000_000


def _etag(message: Any) -> str:
    return hashlib.sha256(message.SerializeToString(deterministic=True)).hexdigest()[:16]


def folder_display_problem(name: str) -> str | None:
    """Why `name` is not a folder display name (the proto's regular expression)."""
    def word(c: str) -> bool:
        return unicodedata.category(c)[0] in "LN"

    if not 1 <= len(name) <= 30:
        return f"display name {name!r} must be 1 to 30 characters long"
    if not (word(name[0]) and word(name[-1])):
        return f"display name {name!r} must start and end with a letter or digit"
    if not all(word(c) or c in "_- " for c in name):
        return (
            f"display name {name!r} may contain only letters, digits, spaces, hyphens "
            "and underscores"
        )
    return None


def project_display_problem(name: str) -> str | None:
    if name and not _PROJECT_DISPLAY.fullmatch(name):
        return (
            f"display name {name!r} must be 4 to 30 letters, digits, hyphens, single or "
            "double quotes, spaces or exclamation points"
        )
    return None


def _number_of(name: str, collection: str) -> str:
    """N of "COLLECTION/N", or INVALID_ARGUMENT."""
    kind, _, number = name.partition("/")
    if kind != collection or not _NUMBER.fullmatch(number):
        raise invalid(
            f"Invalid resource name {name!r}: expected {collection}/NUMBER, e.g. "
            f"{collection}/123456789012."
        )
    return number


def check_parent_name(parent: str) -> None:
    """A parent is folders/N or organizations/N; else INVALID_ARGUMENT."""
    kind = parent.partition("/")[0]
    if kind not in ("folders", "organizations"):
        raise invalid(
            f"Invalid parent {parent!r}: expected folders/FOLDER_ID or "
            "organizations/ORGANIZATION_ID."
        )
    _number_of(parent, kind)


class Hierarchy:
    """Reads of the hierarchy (under the state's lock) and the checks a change makes
    (under its write lock, in `ServerState.write_resource`)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state

    @property
    def _ancestry(self) -> dict[str, str]:
        return self.state.policy_store.ancestry

    # -- projects ------------------------------------------------------------
    def project_id(self, name: str, permission: str) -> str:
        """The ID of the project `name` names (projects/ID or projects/NUMBER)."""
        kind, _, ref = name.partition("/")
        if kind != "projects" or not ref or "/" in ref:
            raise invalid(
                f"Invalid resource name {name!r}: expected projects/PROJECT_ID_OR_NUMBER."
            )
        if not ref.isdigit():
            if problem := project_id_problem(ref):
                raise invalid(f"Invalid resource name {name!r}: {problem}.")
            return ref
        with self.state.lock:
            for project_id in self._project_ids():
                if str(project_number(project_id)) == ref:
                    return project_id
        raise denied(permission, name)

    def _project_ids(self) -> list[str]:
        """The projects the server lists: created, or placed by the ancestry."""
        names = set(self.state.resources("projects")) | {
            n for n in self._ancestry if n.startswith("projects/")
        }
        return sorted(n.removeprefix("projects/") for n in names)

    def project(self, project_id: str) -> Any:
        """The Project of `project_id` as the service answers it."""
        name = f"projects/{project_id}"
        out = protos.Project()
        with self.state.lock:
            stored = self.state.resource(name)
            if stored is not None:
                out.CopyFrom(stored)
            out.parent = self._ancestry.get(name, "")
        if stored is None:  # implicit: never created, ACTIVE, as its topics are
            out.project_id = project_id
            out.display_name = project_id
        out.name = f"projects/{project_number(project_id)}"
        out.state = 1  # ACTIVE
        out.etag = _etag(out)
        return out

    def projects(self) -> list[Any]:
        with self.state.lock:
            ids = self._project_ids()
        return [self.project(i) for i in ids]

    # -- folders -------------------------------------------------------------
    def folder_names(self) -> list[str]:
        with self.state.lock:
            named = set(self.state.resources("folders"))
            for child, parent in self._ancestry.items():
                named.update(n for n in (child, parent) if n.startswith("folders/"))
        return sorted(named)

    def folder(self, name: str, permission: str = "resourcemanager.folders.get") -> Any:
        """The Folder `name` (a seed may name one otherwise than by number: it is
        found all the same)."""
        out = protos.Folder()
        with self.state.lock:
            stored = self.state.resource(name)
            known = stored is not None or name in self._ancestry or (
                name in self._ancestry.values()
            )
            if not known:
                _number_of(name, "folders")
                raise denied(permission, name)
            if stored is not None:
                out.CopyFrom(stored)
            else:  # named by a seed's ancestry only
                out.display_name = name.removeprefix("folders/")
            out.parent = self._ancestry.get(name, "")
        out.name = name
        out.state = 1  # ACTIVE
        out.etag = _etag(out)
        return out

    def folders(self) -> list[Any]:
        return [self.folder(n) for n in self.folder_names()]

    def next_folder(self) -> str:
        """A name for a new folder (under the write lock)."""
        numbers = [int(n) for name in self.folder_names()
                   if (n := name.removeprefix("folders/")).isdigit()]
        return f"folders/{max([FIRST_FOLDER_NUMBER, *numbers]) + 1}"

    def check_new_folder(self, parent: str, display_name: str) -> None:
        """Whether a folder named `display_name` may be created under `parent` (under
        the write lock): unique among its siblings, not too deep, not too many."""
        if problem := folder_display_problem(display_name):
            raise invalid(f"Invalid folder: {problem}.")
        siblings = [f for f in self.folders() if f.parent == parent]
        if any(f.display_name == display_name for f in siblings):
            raise failed_precondition(
                f"A folder named {display_name!r} already exists under {parent}: a "
                "folder's display name must be unique among its siblings."
            )
        if len(siblings) >= MAX_FOLDER_CHILDREN:
            raise failed_precondition(
                f"{parent} already holds {MAX_FOLDER_CHILDREN} folders, the most one "
                "parent may hold."
            )
        if self.height(parent) >= MAX_FOLDER_HEIGHT:
            raise failed_precondition(
                f"A folder under {parent} would be more than {MAX_FOLDER_HEIGHT} folders "
                "deep."
            )

    def height(self, node: str) -> int:
        """How many folders `node` and its ancestors hold (cycles cut off)."""
        chain = self.state.policy_store.chain(node)
        return sum(1 for n in chain if n.startswith("folders/"))

    # -- organizations -------------------------------------------------------
    def organization_names(self) -> list[str]:
        with self.state.lock:
            store = self.state.policy_store
            named = {p for p in self._ancestry.values() if p.startswith("organizations/")}
            named.update(n.split("/policies/")[0] for n in store.policies
                         if n.startswith("organizations/"))
            named.update(c.organization for c in store.custom_constraints.values())
        return sorted(named)

    def organization(
        self, name: str, permission: str = "resourcemanager.organizations.get"
    ) -> Any:
        if name not in self.organization_names():
            _number_of(name, "organizations")
            raise denied(permission, name)
        number = name.removeprefix("organizations/")
        out = protos.Organization(
            name=name, display_name=f"organization-{number}.example",
            directory_customer_id=f"C{number}", state=1,  # ACTIVE
        )
        out.etag = _etag(out)
        return out

    def organizations(self) -> list[Any]:
        return [self.organization(n) for n in self.organization_names()]

    # -- parents -------------------------------------------------------------
    def check_parent(self, parent: str, permission: str) -> None:
        """`parent` may hold a new project or folder: a folder that exists, or any
        organization (local-only: it comes into being as it is named)."""
        check_parent_name(parent)
        if parent.startswith("folders/"):
            self.folder(parent, permission)
