"""Resource names as the service checks them: the rules of `reconciler.names`, answered
with the emulator's wording (`Invalid [topics] name: (name=...)`) plus the reason."""

from __future__ import annotations

from functools import lru_cache

from reconciler.localserver.api.status import invalid
from reconciler.names import project_id_problem, split_topic_name, topic_id_problem


@lru_cache(maxsize=4096)
def parse_topic(name: str) -> tuple[str, str]:
    """(project_id, topic_id) of a valid "projects/P/topics/T"; else INVALID_ARGUMENT.
    Valid names are remembered (bounded; an error is never cached): every Publish
    checks its topic's name, and the checks' regular expressions are a visible part of
    a Publish's own work."""
    split = split_topic_name(name)
    if split is None:
        raise invalid(
            f"Invalid [topics] name: (name={name}). Expected projects/PROJECT_ID/topics/TOPIC_ID."
        )
    problem = project_id_problem(split[0]) or topic_id_problem(split[1])
    if problem or "\n" in name:
        raise invalid(f"Invalid [topics] name: (name={name}). {problem or 'bad character'}.")
    return split


def parse_child(collection: str, name: str) -> tuple[str, str]:
    """(project_id, id) of "projects/P/COLLECTION/ID" ("subscriptions", "snapshots",
    "schemas"), whose IDs follow the topic ID rules; else INVALID_ARGUMENT in the
    emulator's words plus the reason."""
    project_id, resource_id, _ = _parse_pubsub_name(name, collection, revision=False)
    return project_id, resource_id


def parse_project(name: str) -> str:
    """The project ID of a valid "projects/P"; else INVALID_ARGUMENT."""
    parts = name.split("/")
    if len(parts) != 2 or parts[0] != "projects":
        raise invalid(f"Invalid [projects] name: (name={name}). Expected projects/PROJECT_ID.")
    problem = project_id_problem(parts[1])
    if problem or "\n" in name:
        raise invalid(f"Invalid [projects] name: (name={name}). {problem or 'bad character'}.")
    return parts[1]


def policy_parent(name: str) -> str:
    """Check an org-policy parent ("projects/P", "folders/F", "organizations/O")."""
    parts = name.split("/")
    if len(parts) != 2 or parts[0] not in ("projects", "folders", "organizations") or not parts[1]:
        raise invalid(
            f"Invalid parent {name!r}: expected projects/P, folders/F or organizations/O."
        )
    return name


def split_policy_name(name: str) -> tuple[str, str]:
    """(parent, constraint) of "projects/P/policies/C" ("constraints/" prefix dropped)."""
    parent, sep, constraint = name.partition("/policies/")
    if not sep or not constraint or "/" in constraint.removeprefix("constraints/"):
        raise invalid(
            f"Invalid policy name {name!r}: expected "
            "projects/P/policies/CONSTRAINT (or folders/F/..., organizations/O/...)."
        )
    policy_parent(parent)
    return parent, constraint.removeprefix("constraints/")


def parse_schema(name: str, *, revision: bool = False) -> tuple[str, str, str]:
    """(project_id, schema_id, revision_id) of "projects/P/schemas/S", or with
    `revision` also of "projects/P/schemas/S@REVISION" (revision_id "" when none is
    named); else INVALID_ARGUMENT in the service's words plus the reason. Schema IDs
    follow the topic ID rules (the resource-name rules the API reference points to)."""
    return _parse_pubsub_name(name, "schemas", revision=revision)


def _parse_pubsub_name(name: str, collection: str, *, revision: bool) -> tuple[str, str, str]:
    parts = name.split("/")
    singular = collection.removesuffix("s")
    if len(parts) != 4 or parts[0] != "projects" or parts[2] != collection:
        raise invalid(
            f"Invalid [{collection}] name: (name={name}). Expected "
            f"projects/PROJECT_ID/{collection}/{singular.upper()}_ID."
        )
    resource_id, at, revision_id = parts[3].partition("@") if revision else (parts[3], "", "")
    problem = project_id_problem(parts[1]) or topic_id_problem(resource_id)
    if not problem and at and not revision_id:
        problem = "the revision ID after '@' is empty"
    if problem or "\n" in name:
        reason = (problem or "bad character").replace("topic ID", f"{singular} ID", 1)
        raise invalid(f"Invalid [{collection}] name: (name={name}). {reason}.")
    return parts[1], resource_id, revision_id
