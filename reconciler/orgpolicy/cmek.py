"""The two CMEK organization policy constraints, evaluated for Pub/Sub topics.

Google's "CMEK organization policies" page (cloud.google.com/kms/docs/cmek-org-policy)
and the constraint reference (cloud.google.com/resource-manager/docs/
organization-policy/org-policy-constraints) say:

- `constraints/gcp.restrictNonCmekServices` is a list constraint of service names;
  a service in its deny list (`pubsub.googleapis.com`), or a policy that denies all,
  requires that new resources of that service be created with a customer-managed key.
- `constraints/gcp.restrictCmekCryptoKeyProjects` is a list constraint of the projects
  whose keys may protect new resources: `under:organizations/O`, `under:folders/F`,
  `under:projects/P` or `projects/P` (and the `is:` form); a key of another project
  is refused.
- Both apply only to newly created resources: an existing topic is not refused
  because of them (the checks here are about the topic a spec would create).

Where the answer depends on what a snapshot cannot show (a key project's place in
the hierarchy when the snapshot's `ancestry` does not record it, a project named by
number where the key names it by ID), the verdict is "unknown", never a guess.
Conditional rules are ignored, as for the other list constraints (they depend on tags
that cannot be seen offline).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from reconciler.orgpolicy.model import PolicySpec

PUBSUB_SERVICE = "pubsub.googleapis.com"
Verdict = Literal["allowed", "denied", "unknown"]


def _values(spec: PolicySpec | None) -> tuple[bool, bool, tuple[str, ...], tuple[str, ...]]:
    """(deny_all, allow_all, allowed, denied) of a merged spec's unconditional rules;
    no policy, or no rule, allows all."""
    if spec is None or spec.reset:
        return False, True, (), ()
    rules = [r for r in spec.rules if not r.condition]
    allowed = tuple(v.removeprefix("is:") for r in rules for v in r.allowed_values)
    denied = tuple(v.removeprefix("is:") for r in rules for v in r.denied_values)
    deny_all = any(r.deny_all for r in rules)
    allow_all = any(r.allow_all for r in rules) or not allowed
    return deny_all, allow_all, allowed, denied


def cmek_required(spec: PolicySpec | None) -> bool:
    """The effective restrictNonCmekServices requires a key for new Pub/Sub topics."""
    deny_all, _, _, denied = _values(spec)
    return deny_all or PUBSUB_SERVICE in denied


def key_project_verdict(spec: PolicySpec | None, chain: Sequence[str]) -> Verdict:
    """May a key of the project whose ancestry is `chain` (projects/P first, then its
    folders and organization as far as known) protect a new topic, under the effective
    restrictCmekCryptoKeyProjects?"""
    deny_all, allow_all, allowed, denied = _values(spec)
    if deny_all:
        return "denied"
    known_top = len(chain) > 1 and chain[-1].startswith("organizations/")

    def matches(values: tuple[str, ...]) -> Verdict:
        found = False
        undecided = False
        for value in values:
            node = value.removeprefix("under:")
            if node in chain and (value.startswith("under:") or node == chain[0]):
                found = True
            elif not known_top and not node.startswith("projects/"):
                undecided = True  # a folder or organization the chain may hold
            elif node.startswith("projects/") and node.split("/", 1)[1].isdigit():
                undecided = True  # a project by number: the key names it by ID
        return "allowed" if found else "unknown" if undecided else "denied"

    if denied and matches(denied) == "allowed":
        return "denied"
    if allow_all:
        return "unknown" if denied and matches(denied) == "unknown" else "allowed"
    verdict = matches(allowed)
    if verdict == "allowed" and denied and matches(denied) == "unknown":
        return "unknown"
    return verdict
