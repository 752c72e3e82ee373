"""Org Policy v2 `Policy` resources as plain frozen data, independent of the protos.

The same model serves the offline snapshot file, the local server and the live API,
so that one evaluator decides what a policy allows everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

RESOURCE_LOCATIONS = "gcp.resourceLocations"
ENFORCE_IN_TRANSIT = "pubsub.enforceInTransitRegions"
# The CMEK constraints (reconciler/orgpolicy/cmek.py evaluates them for topics).
RESTRICT_NON_CMEK = "gcp.restrictNonCmekServices"
RESTRICT_KEY_PROJECTS = "gcp.restrictCmekCryptoKeyProjects"
KNOWN_CONSTRAINTS = (
    RESOURCE_LOCATIONS, ENFORCE_IN_TRANSIT, RESTRICT_NON_CMEK, RESTRICT_KEY_PROJECTS
)
# Managed (boolean) Pub/Sub constraints: enforced, they refuse message transforms on
# topics and on subscriptions.
DISABLE_TOPIC_TRANSFORMS = "pubsub.managed.disableTopicMessageTransforms"
DISABLE_SUBSCRIPTION_TRANSFORMS = "pubsub.managed.disableSubscriptionMessageTransforms"
MANAGED_CONSTRAINTS = (DISABLE_TOPIC_TRANSFORMS, DISABLE_SUBSCRIPTION_TRANSFORMS)
# A custom constraint's id (reconciler/orgpolicy/custom.py has its rules).
CUSTOM_PREFIX = "custom."


def is_custom(constraint: str) -> bool:
    """A policy's constraint (`custom.NAME`) is a custom one."""
    return constraint.removeprefix("constraints/").startswith(CUSTOM_PREFIX)


class PolicyFormatError(ValueError):
    """A policy document does not have the Org Policy v2 shape; `path` locates it."""

    def __init__(self, message: str, path: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.path = path


@dataclass(frozen=True)
class PolicyRule:
    allowed_values: tuple[str, ...] = ()
    denied_values: tuple[str, ...] = ()
    allow_all: bool = False
    deny_all: bool = False
    enforce: bool | None = None
    condition: str | None = None


@dataclass(frozen=True)
class PolicySpec:
    rules: tuple[PolicyRule, ...] = ()
    inherit_from_parent: bool = False
    reset: bool = False


@dataclass(frozen=True)
class Policy:
    name: str
    spec: PolicySpec | None = field(default=None)
    etag: str = ""
    # Audit only: what the policy would enforce (custom constraints' dry run).
    dry_run_spec: PolicySpec | None = None

    @property
    def parent(self) -> str:
        return self.name.split("/policies/", 1)[0]

    @property
    def constraint(self) -> str:
        return self.name.split("/policies/", 1)[1] if "/policies/" in self.name else ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        """Parse the JSON form (camelCase or snake_case keys)."""
        if not isinstance(data, Mapping):
            raise PolicyFormatError("a policy must be a mapping")
        name = data.get("name")
        if not isinstance(name, str) or "/policies/" not in name:
            raise PolicyFormatError(
                "a policy needs a `name` like projects/P/policies/gcp.resourceLocations",
                ("name",),
            )
        parent = name.split("/policies/", 1)[0]
        kind = parent.split("/", 1)[0]
        if kind not in ("projects", "folders", "organizations") or "/" not in parent:
            raise PolicyFormatError(
                f"policy name {name!r} must start with projects/, folders/ or organizations/",
                ("name",),
            )
        constraint = name.split("/policies/", 1)[1]
        if constraint.startswith("constraints/"):
            name = f"{parent}/policies/{constraint.removeprefix('constraints/')}"
        raw_spec = data.get("spec")
        spec = None if raw_spec is None else _spec_from_dict(raw_spec, ("spec",))
        dry_key = "dryRunSpec" if "dryRunSpec" in data else "dry_run_spec"
        raw_dry = data.get(dry_key)
        dry = None if raw_dry is None else _spec_from_dict(raw_dry, (dry_key,))
        etag = data.get("etag", "")
        return cls(
            name=name, spec=spec, etag=etag if isinstance(etag, str) else "", dry_run_spec=dry
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.spec is not None:
            out["spec"] = _spec_to_dict(self.spec)
        if self.dry_run_spec is not None:
            out["dryRunSpec"] = _spec_to_dict(self.dry_run_spec)
        if self.etag:
            out["etag"] = self.etag
        return out


def _get(data: Mapping[str, Any], camel: str) -> Any:
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return data.get(camel, data.get(snake))


def _strings(value: Any, path: tuple[str | int, ...]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyFormatError("expected a list of strings", path)
    return tuple(value)


def _bool(value: Any, path: tuple[str | int, ...]) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise PolicyFormatError("expected true or false", path)
    return value


def _spec_from_dict(data: Any, path: tuple[str | int, ...]) -> PolicySpec:
    if not isinstance(data, Mapping):
        raise PolicyFormatError("`spec` must be a mapping", path)
    raw_rules = data.get("rules") or []
    if not isinstance(raw_rules, list):
        raise PolicyFormatError("`rules` must be a list", (*path, "rules"))
    rules = []
    for i, raw in enumerate(raw_rules):
        rpath = (*path, "rules", i)
        if not isinstance(raw, Mapping):
            raise PolicyFormatError("a rule must be a mapping", rpath)
        values = raw.get("values") or {}
        if not isinstance(values, Mapping):
            raise PolicyFormatError("`values` must be a mapping", (*rpath, "values"))
        condition = raw.get("condition")
        enforce = raw.get("enforce")
        if enforce is not None and not isinstance(enforce, bool):
            raise PolicyFormatError("`enforce` must be true or false", (*rpath, "enforce"))
        rules.append(
            PolicyRule(
                allowed_values=_strings(
                    _get(values, "allowedValues"), (*rpath, "values", "allowedValues")
                ),
                denied_values=_strings(
                    _get(values, "deniedValues"), (*rpath, "values", "deniedValues")
                ),
                allow_all=_bool(_get(raw, "allowAll"), (*rpath, "allowAll")),
                deny_all=_bool(_get(raw, "denyAll"), (*rpath, "denyAll")),
                enforce=enforce,
                condition=str(condition.get("expression", ""))
                if isinstance(condition, Mapping)
                else None,
            )
        )
    return PolicySpec(
        rules=tuple(rules),
        inherit_from_parent=_bool(_get(data, "inheritFromParent"), (*path, "inheritFromParent")),
        reset=_bool(data.get("reset"), (*path, "reset")),
    )


def _spec_to_dict(spec: PolicySpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    rules = []
    for rule in spec.rules:
        r: dict[str, Any] = {}
        if rule.allowed_values or rule.denied_values:
            values: dict[str, Any] = {}
            if rule.allowed_values:
                values["allowedValues"] = list(rule.allowed_values)
            if rule.denied_values:
                values["deniedValues"] = list(rule.denied_values)
            r["values"] = values
        if rule.allow_all:
            r["allowAll"] = True
        if rule.deny_all:
            r["denyAll"] = True
        if rule.enforce is not None:
            r["enforce"] = rule.enforce
        if rule.condition:
            r["condition"] = {"expression": rule.condition}
        rules.append(r)
    if rules:
        out["rules"] = rules
    if spec.inherit_from_parent:
        out["inheritFromParent"] = True
    if spec.reset:
        out["reset"] = True
    return out
