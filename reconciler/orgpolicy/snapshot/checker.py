"""The snapshot reader's tools: the fields each document may have, a checker that
reports a document's problems at their lines (unknown keys with a suggestion, a field
spelled both ways, values of the wrong type) and what the reader remembers for the
checks made once every document is read."""

from __future__ import annotations

import difflib
import re
from typing import Any

from reconciler.diagnostics import Diagnostics, Severity
from reconciler.orgpolicy.model import KNOWN_CONSTRAINTS, MANAGED_CONSTRAINTS
from reconciler.yamldoc import Mark
from reconciler.yamlio import Document, PathKey

POLICY_FIELDS = ("name", "spec", "dryRunSpec", "etag", "alternate")
SPEC_FIELDS = ("rules", "inheritFromParent", "reset", "etag", "updateTime")
RULE_FIELDS = ("values", "allowAll", "denyAll", "enforce", "condition", "parameters")
VALUES_FIELDS = ("allowedValues", "deniedValues")
CONDITION_FIELDS = ("expression", "title", "description", "location")
RULE_KINDS = ("values", "allowAll", "denyAll", "enforce")
_NAME = re.compile(r"(projects|folders|organizations)/([^/]+)/policies/(constraints/)?([^/]+)")
_RESOURCE = re.compile(r"(projects|folders|organizations)/([^/]+)")
# A constraint's name: dotted words (gcp.resourceLocations, custom.euOnly,
# pubsub.managed.disableTopicMessageTransforms).
_CONSTRAINT = re.compile(r"[A-Za-z][A-Za-z0-9]*(\.[A-Za-z0-9]+)+")
_CHILDREN = ("projects", "folders")  # what an ancestry entry places
_PARENTS = ("folders", "organizations")  # what it places them under
NO_PARENT = "none"  # `projects/P: none`: in no folder or organization
_LOCATION_KINDS = ("region", "zone", "multi_region", "dual_region")
_CUSTOM_KEYS = frozenset(
    {"resourceTypes", "resource_types", "methodTypes", "method_types", "condition",
     "actionType", "action_type"}
)
READ_CONSTRAINTS = (*KNOWN_CONSTRAINTS, *MANAGED_CONSTRAINTS)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class Checker:
    def __init__(self, doc: Document, diags: Diagnostics) -> None:
        self.doc = doc
        self.diags = diags

    def error(self, path: PathKey, code: str, message: str, *, key: bool = False) -> None:
        m = self.doc.key_mark(path) if key else self.doc.mark_for(path)
        self.diags.error(self.doc.file, m.line, m.col, code, message)

    def warning(self, path: PathKey, code: str, message: str) -> None:
        m = self.doc.mark_for(path)
        self.diags.warning(self.doc.file, m.line, m.col, code, message)

    def mapping(
        self, value: Any, path: PathKey, fields: tuple[str, ...], what: str
    ) -> dict[str, tuple[Any, PathKey]]:
        """The mapping at `path` with camelCase keys; unknown keys reported, and a
        field given under both its spellings (camelCase and snake_case)."""
        if not isinstance(value, dict):
            self.error(path, "policy-format", f"{what} must be a mapping")
            return {}
        out: dict[str, tuple[Any, PathKey]] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                self.error(
                    (*path, key), "policy-format",
                    f"{what} has a key {key!r} that is not text", key=True,
                )
                continue
            name = _camel(key)
            if name in out:
                first = out[name][1][-1]
                self.error(
                    (*path, key), "policy-duplicate-field",
                    f"{what} gives field {name!r} twice, as {first!r} and as {key!r} "
                    "(either spelling is read, not both): keep one",
                    key=True,
                )
                continue
            if name not in fields:
                match = difflib.get_close_matches(name, fields, n=1, cutoff=0.6)
                hint = f"; did you mean {match[0]!r}?" if match else ""
                self.error(
                    (*path, key), "policy-unknown-field",
                    f"unknown field {key!r} in {what}{hint} (known: {', '.join(fields)})",
                    key=True,
                )
                continue
            out[name] = (item, (*path, key))
        return out

    def typed(self, entry: tuple[Any, PathKey] | None, kind: type, what: str) -> bool:
        if entry is None:
            return True
        value, path = entry
        if kind is bool and not isinstance(value, bool):
            self.error(path, "policy-format", f"`{what}` must be true or false")
            return False
        if kind is list and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            self.error(path, "policy-format", f"`{what}` must be a list of strings")
            return False
        if kind is str and not isinstance(value, str):
            self.error(path, "policy-format", f"`{what}` must be text")
            return False
        return True


class Read:
    """What the reader remembers beyond the store, for the checks made once every
    document is read: where each ancestry entry and each kept custom constraint
    that does not compile here is."""

    def __init__(self) -> None:
        self.ancestry: dict[str, tuple[Checker, PathKey]] = {}
        self.uncompilable: dict[str, tuple[str, Mark, Any]] = {}  # name -> file, mark, error
        self.ancestry_at: tuple[str, Mark] | None = None  # the first `ancestry:` key
        self.broken: set[str] = set()  # custom constraints named with an error



def structural_errors_since(diags: Diagnostics, start: int) -> bool:
    """Whether an error that makes a policy unusable was added after the first `start`
    items; an unknown value keeps it (the spec checks then name the value for each
    project it affects). Asked of one policy's findings only: counting every item for
    every policy made a snapshot of many policies quadratic to read."""
    return any(
        d.severity is Severity.ERROR and d.code != "policy-value" for d in diags.items[start:]
    )
