"""Policies of a resource hierarchy, and the effective policy of any node in it.

Org Policy v2 hierarchy evaluation: a node without a policy inherits its parent's
effective policy; `reset` restores the constraint's default; `inheritFromParent` merges
a list policy with the parent's (allowed and denied values both accumulate, denied
wins); otherwise the node's policy replaces the parent's. Boolean constraints never
merge: the nearest policy decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from reconciler.orgpolicy.locations import expanded_values
from reconciler.orgpolicy.model import (
    ENFORCE_IN_TRANSIT,
    Policy,
    PolicyRule,
    PolicySpec,
)

BOOLEAN_CONSTRAINTS = frozenset({ENFORCE_IN_TRANSIT})
MAX_HIERARCHY_DEPTH = 32


@dataclass
class PolicyStore:
    policies: dict[str, Policy] = field(default_factory=dict)
    ancestry: dict[str, str] = field(default_factory=dict)

    def put(self, policy: Policy) -> None:
        self.policies[policy.name] = policy

    def chain(self, resource: str) -> list[str]:
        """The resource and its ancestors, nearest first (cycles cut off)."""
        nodes = [resource]
        while nodes[-1] in self.ancestry and len(nodes) < MAX_HIERARCHY_DEPTH:
            parent = self.ancestry[nodes[-1]]
            if parent in nodes:
                break
            nodes.append(parent)
        return nodes

    def effective_spec(self, constraint: str, resource: str) -> PolicySpec | None:
        """None means the constraint's default (no restriction, not enforced)."""
        constraint = constraint.removeprefix("constraints/")
        effective: PolicySpec | None = None
        for node in reversed(self.chain(resource)):
            policy = self.policies.get(f"{node}/policies/{constraint}")
            if policy is None or policy.spec is None:
                continue
            spec = policy.spec
            if spec.reset:
                effective = None
            elif (
                spec.inherit_from_parent
                and effective is not None
                and constraint not in BOOLEAN_CONSTRAINTS
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
        if constraint in BOOLEAN_CONSTRAINTS:
            enforced = bool(spec and any(r.enforce for r in spec.rules if not r.condition))
            return Policy(name, PolicySpec(rules=(PolicyRule(enforce=enforced),)))
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
