"""Policies of a resource hierarchy, and the effective policy of any node in it.

Org Policy v2 hierarchy evaluation: a node without a policy inherits its parent's
effective policy; `reset` restores the constraint's default; `inheritFromParent` merges
a list policy with the parent's (allowed and denied values both accumulate, denied
wins); otherwise the node's policy replaces the parent's. Boolean constraints never
merge: the nearest policy decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

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


def load_snapshot(path: Path) -> PolicyStore:
    """Read a snapshot file (YAML or JSON documents: Policy resources, plus an optional
    `ancestry:` mapping) for a server or a backend: any error is an InputError listing
    every problem with its line (validate reports them as diagnostics instead)."""
    from reconciler.diagnostics import Diagnostics, Severity
    from reconciler.errors import InputError
    from reconciler.orgpolicy.snapshot import read_snapshot

    diags = Diagnostics()
    store = read_snapshot(path, diags)
    errors = [d for d in diags.sorted() if d.severity is Severity.ERROR]
    if errors:
        raise InputError(
            "the org-policy snapshot has problems:\n  "
            + "\n  ".join(d.render() for d in errors),
            hint="fix the org-policy snapshot, or write a new one with `reconcile policy pull`",
        )
    return store


def dump_snapshot(store: PolicyStore, path: Path, header: str = "") -> None:
    """Write the snapshot atomically (a reader never sees half a file)."""
    from reconciler.fileio import write_atomically
    from reconciler.yamltext import dump_all

    docs: list[object] = [p.to_dict() for _, p in sorted(store.policies.items())]
    if store.ancestry:
        docs.append({"ancestry": dict(sorted(store.ancestry.items()))})
    text = dump_all(docs)  # every string reads back as one (an etag `1e5` is quoted)
    if header:
        text = "".join(f"# {line}\n" for line in header.splitlines()) + text
    write_atomically(path, text, "org-policy snapshot")
