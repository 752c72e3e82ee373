"""Policies of a resource hierarchy, and the effective policy of any node in it.

Org Policy v2 hierarchy evaluation: a node without a policy inherits its parent's
effective policy; `reset` restores the constraint's default; `inheritFromParent` merges
a list policy with the parent's (allowed and denied values both accumulate, denied
wins); otherwise the node's policy replaces the parent's. Boolean constraints never
merge: the nearest policy decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from reconciler.orgpolicy.locations import expanded_values
from reconciler.orgpolicy.model import (
    ENFORCE_IN_TRANSIT,
    MANAGED_CONSTRAINTS,
    Policy,
    PolicyRule,
    PolicySpec,
    is_custom,
)

if TYPE_CHECKING:  # the constraints' module loads only when a snapshot holds one
    from reconciler.orgpolicy.custom import CustomConstraint

BOOLEAN_CONSTRAINTS = frozenset({ENFORCE_IN_TRANSIT, *MANAGED_CONSTRAINTS})
MAX_HIERARCHY_DEPTH = 32
Enforcement = Literal["enforced", "dry-run"]


def is_boolean(constraint: str) -> bool:
    """Boolean constraints (enforced or not) never merge down the hierarchy; custom
    constraints are boolean too."""
    constraint = constraint.removeprefix("constraints/")
    return constraint in BOOLEAN_CONSTRAINTS or is_custom(constraint)


@dataclass
class PolicyStore:
    policies: dict[str, Policy] = field(default_factory=dict)
    ancestry: dict[str, str] = field(default_factory=dict)
    # projects/P that Resource Manager places in no folder or organization (a
    # snapshot's `projects/P: none`): known to obey no custom constraint, where a
    # project the ancestry leaves out is unknown.
    unparented: set[str] = field(default_factory=set)
    # organizations/ORG/customConstraints/custom.NAME -> the constraint
    custom_constraints: dict[str, CustomConstraint] = field(default_factory=dict)

    def put(self, policy: Policy) -> None:
        self.policies[policy.name] = policy

    def put_custom(self, constraint: CustomConstraint) -> None:
        self.custom_constraints[constraint.name] = constraint

    def organization(self, resource: str) -> str | None:
        """The organizations/ORG at the top of `resource`'s ancestry, if recorded."""
        top = self.chain(resource)[-1]
        return top if top.startswith("organizations/") else None

    def enforcement(self, constraint: str, resource: str) -> Enforcement | None:
        """How a boolean constraint applies at `resource`: enforced, dry run (the
        effective dryRunSpec enforces it: violations are only logged), or not."""
        if _enforces(self.effective_spec(constraint, resource)):
            return "enforced"
        if _enforces(self.effective_spec(constraint, resource, dry_run=True)):
            return "dry-run"
        return None

    def custom_constraints_for(
        self, resource: str, resource_type: str
    ) -> list[tuple[CustomConstraint, Enforcement]]:
        """The custom constraints of `resource`'s organization that restrict
        `resource_type` and are enforced or dry-run there, by name."""
        org = self.organization(resource)
        out = []
        for _, constraint in sorted(self.custom_constraints.items()):
            if constraint.organization != org or resource_type not in constraint.resource_types:
                continue
            mode = self.enforcement(constraint.constraint_id, resource)
            if mode is not None:
                out.append((constraint, mode))
        return out

    def chain(self, resource: str) -> list[str]:
        """The resource and its ancestors, nearest first (cycles cut off)."""
        return ancestry_chain(self.ancestry, resource)

    def effective_spec(
        self, constraint: str, resource: str, *, dry_run: bool = False
    ) -> PolicySpec | None:
        """None means the constraint's default (no restriction, not enforced).
        `dry_run`: the same evaluation over the policies' dryRunSpec."""
        constraint = constraint.removeprefix("constraints/")
        effective: PolicySpec | None = None
        for node in reversed(self.chain(resource)):
            policy = self.policies.get(f"{node}/policies/{constraint}")
            spec = None if policy is None else policy.dry_run_spec if dry_run else policy.spec
            if spec is None:
                continue
            if spec.reset:
                effective = None
            elif (
                spec.inherit_from_parent
                and effective is not None
                and not is_boolean(constraint)
            ):
                effective = PolicySpec(rules=effective.rules + spec.rules)
            else:
                effective = PolicySpec(rules=spec.rules)
        return effective

    def effective_policy(self, constraint: str, resource: str) -> Policy:
        """What GetEffectivePolicy answers: the merged spec with value groups expanded."""
        constraint = constraint.removeprefix("constraints/")
        name = f"{resource}/policies/{constraint}"
        spec = self.effective_spec(constraint, resource)
        if is_boolean(constraint):
            dry = self.effective_spec(constraint, resource, dry_run=True)
            return Policy(
                name,
                PolicySpec(rules=(PolicyRule(enforce=_enforces(spec)),)),
                dry_run_spec=None if dry is None
                else PolicySpec(rules=(PolicyRule(enforce=_enforces(dry)),)),
            )
        if spec is None:
            return Policy(name, PolicySpec(rules=(PolicyRule(allow_all=True),)))
        rules = [r for r in spec.rules if not r.condition]
        if any(r.deny_all for r in rules):
            return Policy(name, PolicySpec(rules=(PolicyRule(deny_all=True),)))
        allowed = tuple(v for r in rules for v in r.allowed_values)
        denied = tuple(v for r in rules for v in r.denied_values)
        allow_all = any(r.allow_all for r in rules) or not allowed
        rule = PolicyRule(
            allowed_values=() if allow_all else expanded_values(allowed),
            denied_values=expanded_values(denied),
            allow_all=allow_all and not denied,
        )
        return Policy(name, replace(PolicySpec(), rules=(rule,)))


def ancestry_chain(ancestry: Mapping[str, str], resource: str) -> list[str]:
    """`resource` and its ancestors as `ancestry` (child -> parent) records them,
    nearest first (cycles cut off)."""
    nodes = [resource]
    while nodes[-1] in ancestry and len(nodes) < MAX_HIERARCHY_DEPTH:
        parent = ancestry[nodes[-1]]
        if parent in nodes:
            break
        nodes.append(parent)
    return nodes


def _enforces(spec: PolicySpec | None) -> bool:
    """A boolean policy's unconditional rules enforce it."""
    return bool(spec and any(r.enforce for r in spec.rules if not r.condition))
