"""The effective org policy's verdicts on each declared topic of a plan, as the
service would give them: on the call the plan makes, and, for a topic that exists,
on what the topic is and keeps (the rules themselves: spec/orgrules.py, which
`validate` applies to the snapshot).

    OrgCheck().verdicts(desired, facts, live, change) -> [Diagnostic]
        errors stop the topic before any call; warnings are reported

Existing is not new. A new topic meets every rule on its CreateTopic. A topic that
exists meets only what its UpdateTopic carries: a location refusal when the call sets
the storage policy (a labels-only mask does not carry it), nothing of the CMEK
constraints, which bind only creation. What the org would refuse of it today and the
plan leaves as it is (no key under CMEK, a key of a project the org no longer allows,
a region the location constraint no longer allows, in-transit enforcement off under
the in-transit constraint, a publishers' endpoint outside the topic's regions with
enforcement on: reconcile's own guard, as the service refuses no label) is reported
once per rule and topic, in the existing family (`orgexisting.existing_problems`), and
changed only where the spec asks.

A plan of many topics meets few distinct subjects: the rules' verdict on a subject
(`orgrules.OrgSubject`, everything of a topic they read but its name) is worked out
once and worded for each topic (`OrgProblem.worded`), so no verdict can carry one
topic's name to another.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reconciler.backends.base import ObservedTopic
from reconciler.diagnostics import Diagnostic
from reconciler.hedging.labels import endpoint as endpoint_label
from reconciler.plan.differ import live_policy_of
from reconciler.plan.model import ResourceChange
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.orgexisting import Standing, existing_problems
from reconciler.spec.orgrules import (
    EXISTING_CMEK,
    EXISTING_ENDPOINT,
    EXISTING_IN_TRANSIT,
    EXISTING_KEY_PROJECT,
    EXISTING_LOCATION,
    OrgFacts,
    OrgProblem,
    OrgSubject,
    org_problems,
    subject_of,
)
from reconciler.spec.positions import position
from reconciler.topic import StoragePolicy, region_set
from reconciler.topicfields import STORAGE_POLICY

# The refusals a topic that exists does not meet on a call that leaves the value: the
# standing verdict (`existing_problems`) speaks for them instead.
_CREATE_ONLY = frozenset({EXISTING_CMEK, EXISTING_KEY_PROJECT})


@dataclass
class OrgCheck:
    """The verdicts of one plan: the rules' problems remembered per subject."""

    _seen: dict[OrgSubject, list[OrgProblem]] = field(default_factory=dict)

    def problems(self, desired: DesiredTopic, facts: OrgFacts) -> list[OrgProblem]:
        subject = subject_of(desired)
        found = self._seen.get(subject)
        if found is None:
            found = self._seen[subject] = org_problems(subject, facts)
        return found

    def verdicts(
        self,
        desired: DesiredTopic,
        facts: OrgFacts,
        live: ObservedTopic | None,
        change: ResourceChange,
    ) -> list[Diagnostic]:
        """The org policy's verdicts on `desired` and the call `change` makes (a create
        when `live` is None). Errors: the service would refuse the call."""
        problems = self.problems(desired, facts)
        if live is None:
            return _diagnostics(desired, problems)
        sends_policy = STORAGE_POLICY.proto in change.update_mask
        kept = live_policy_of(live.shape.policy)
        has = endpoint_label(live.shape.labels)
        endpoint = has if has is not None and has == desired.publisher_endpoint else None
        on_call = [
            _carried(p, kept, change) if p.existing == EXISTING_LOCATION else p
            for p in problems if _meets_update(p, sends_policy, kept, endpoint)
        ]
        found = _diagnostics(desired, on_call)
        if any(d.is_error for d in found):  # the call is refused: nothing is left
            return found
        key = desired.kms_key_name if desired.kms_key_name is not None else (
            live.shape.kms_key_name
        )
        standing = Standing(
            desired.project, key, kept, sends_policy, desired.storage.mode == "explicit",
            endpoint,
        )
        return found + _diagnostics(desired, existing_problems(standing, facts))


def _meets_update(
    problem: OrgProblem, sends_policy: bool, kept: StoragePolicy | None, endpoint: str | None
) -> bool:
    """Does the UpdateTopic of a topic that exists meet this problem of its spec?
    (`endpoint`: the publishers' endpoint the topic has and keeps.)"""
    if problem.existing in _CREATE_ONLY:
        return False  # the CMEK constraints bind only creation
    if problem.existing == EXISTING_LOCATION:
        return sends_policy  # refused only in a call that sets the storage policy
    if problem.existing == EXISTING_IN_TRANSIT:
        # Said by existing-in-transit-off when the plan keeps the live value off.
        return sends_policy or kept is None or kept.enforce_in_transit
    if problem.existing == EXISTING_ENDPOINT:
        # Said by existing-publisher-endpoint when the topic keeps both the endpoint
        # and its storage policy: the service refuses no label.
        return sends_policy or endpoint is None or problem.value != endpoint
    return True


def _carried(problem: OrgProblem, kept: StoragePolicy | None, change: ResourceChange
             ) -> OrgProblem:
    """A region refusal met by the UpdateTopic of a topic that exists: said as what it
    is, the call that sets the storage policy (and why it does) while the region
    stays, not as a creation."""
    after = StoragePolicy.from_json((change.change.after or {}).get(STORAGE_POLICY.proto))
    if after is None:
        why = "the org policy's, recomputed"
    elif region_set(kept) != region_set(after):
        why = f"regions {', '.join(after.regions)}"
    else:
        was = "on" if kept is not None and kept.enforce_in_transit else "off"
        now = "on" if after.enforce_in_transit else "off"
        why = f"enforceInTransit {was} -> {now}"
    return problem.on_update(why)


def _diagnostics(desired: DesiredTopic, problems: list[OrgProblem]) -> list[Diagnostic]:
    """Each problem at the key or value at fault, as validate places it (the file is
    read again: a plan keeps no positions, and topics with org problems are few), in
    the Defaults document the topic inherits it from where the topic does not write
    it, naming the topic."""
    out = []
    for p in problems:
        where, line, col = position(desired.file, desired.line, p.path, p.value) or (
            desired.file or desired.address, desired.line, 1 if desired.line else 0
        )
        message, hint = p.worded(desired.address)
        out.append(Diagnostic(
            where, line, col, p.severity, p.code, message, hint, topic=desired.address,
        ))
    return out
