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
from typing import Literal, NamedTuple

from reconciler.orgpolicy.model import PolicySpec

PUBSUB_SERVICE = "pubsub.googleapis.com"
Verdict = Literal["allowed", "denied", "unknown"]


class ListValues(NamedTuple):
    """What a merged list spec's unconditional rules say, however it is written (the
    `is:` prefix dropped, values sorted, each once): what the verdicts read, and what
    plan compares between a snapshot and the live policy and between plan and apply.
    No policy, or no rule, allows all."""

    deny_all: bool
    allow_all: bool
    allowed: tuple[str, ...]
    denied: tuple[str, ...]


ALLOW_ALL = ListValues(False, True, (), ())


def list_values(spec: PolicySpec | None) -> ListValues:
    """The unconditional rules of a merged list spec (conditions depend on tags, which
    cannot be seen offline)."""
    if spec is None or spec.reset:
        return ALLOW_ALL
    rules = [r for r in spec.rules if not r.condition]
    allowed = tuple(sorted({v.removeprefix("is:") for r in rules for v in r.allowed_values}))
    denied = tuple(sorted({v.removeprefix("is:") for r in rules for v in r.denied_values}))
    deny_all = any(r.deny_all for r in rules)
    allow_all = any(r.allow_all for r in rules) or not allowed
    return ListValues(deny_all, allow_all, allowed, denied)


def cmek_required(spec: PolicySpec | None) -> bool:
    """The effective restrictNonCmekServices requires a key for new Pub/Sub topics."""
    deny_all, _, _, denied = list_values(spec)
    return deny_all or PUBSUB_SERVICE in denied


def key_projects_restricted(spec: PolicySpec | None) -> ListValues | None:
    """The effective restrictCmekCryptoKeyProjects as it bears on keys (None: a key
    of any project may protect a new topic)."""
    values = list_values(spec)
    if not values.deny_all and values.allow_all and not values.denied:
        return None
    return values


def describe_key_projects(values: ListValues | None) -> str:
    """For messages: which projects' keys the policy allows."""
    if values is None:
        return "allows keys of every project"
    if values.deny_all:
        return "allows no key project"
    allowed = "every project" if values.allow_all else ", ".join(values.allowed)
    denied = f" except {', '.join(values.denied)}" if values.denied else ""
    return f"allows keys of {allowed}{denied}"


def key_project_verdict(spec: PolicySpec | None, chain: Sequence[str]) -> Verdict:
    """May a key of the project whose ancestry is `chain` (projects/P first, then its
    folders and organization as far as known) protect a new topic, under the effective
    restrictCmekCryptoKeyProjects?"""
    deny_all, allow_all, allowed, denied = list_values(spec)
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
