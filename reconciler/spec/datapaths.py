"""Where a declared topic's message data goes, as far as `validate` can tell offline:
the rules of reconciler/messagepaths.py applied to the spec's transforms and
ingestion source, its storage policy and the org-policy snapshot, each finding at the
field's line. What only the live topic decides (whether it exists and has its
transforms already, which export subscriptions it has) is a warning that says
`plan` decides (the same phrase as the org-policy rules': a plan puts its own
verdict in its place, plan/datapaths.py); what nothing can know here nor live (a
Regional Access Boundary) is named as not judged.
"""

from __future__ import annotations

from reconciler.diagnostics import Diagnostic, Diagnostics
from reconciler.messagepaths import (
    EXISTING_TRANSFORMS_DISABLED,
    INGESTION_UNJUDGED,
    TRANSFORMS_DISABLED,
    Bounds,
    Call,
    PathFinding,
    for_topic,
    judged_findings,
    model_paths,
)
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.documents import TopicDoc
from reconciler.spec.orgrules import PLAN_DECIDES, OrgFacts
from reconciler.spec.tree import Located

_AT_PLAN = {
    TRANSFORMS_DISABLED: (
        "a new topic, or a call that sets the transforms, is refused; a topic that has "
        f"them already and keeps them is reported as {EXISTING_TRANSFORMS_DISABLED}"
    ),
    INGESTION_UNJUDGED: (
        "it reads the source's state, and says this again for a call that sets the source"
    ),
}
_EXPORTS = "it reads the topic's export subscriptions and their states"


def bounds_of(topic: DesiredTopic, facts: OrgFacts | None) -> Bounds:
    """The regions and in-transit enforcement the spec asks for (with the snapshot's
    for `inherit` and for the org's in-transit constraint), and the managed
    constraint; unmanaged storage: unknown offline (every region)."""
    storage = topic.storage
    org_in_transit = facts is not None and facts.enforce_in_transit
    disabled = facts is not None and facts.transforms_disabled
    if storage.mode == "explicit":
        return Bounds(frozenset(storage.regions),
                      bool(storage.enforce_in_transit) or org_in_transit, disabled)
    if storage.mode == "inherit" and facts is not None:
        return Bounds(facts.restriction.allowed, org_in_transit, disabled)
    return Bounds(None, False, disabled)


def worded(finding: PathFinding) -> str:
    """The message, with what `plan` decides where only the live topic can."""
    if not finding.at_plan:
        return finding.message
    what = _AT_PLAN.get(finding.code, _EXPORTS)
    return f"{finding.message} [{PLAN_DECIDES}: {what}]"


def check_paths(
    topic: DesiredTopic, located: Located[TopicDoc], facts: OrgFacts | None,
    diags: Diagnostics,
) -> None:
    """The findings on one valid topic, at their lines."""
    transforms, ingestion = topic.message_transforms, topic.ingestion
    if not ingestion and not model_paths(transforms) and not (
        facts is not None and facts.transforms_disabled
    ):
        return  # no model, no source, transforms allowed: nothing to say offline
    doc, address = located.doc, topic.address
    for f in judged_findings(
        topic.project, transforms, ingestion, None, bounds_of(topic, facts), _OFFLINE
    ):
        mark = doc.mark_for(f.spec_path)
        diags.add(Diagnostic(
            doc.file, mark.line, mark.col, f.severity, f.code,
            for_topic(worded(f), address), f.hint and for_topic(f.hint, address),
            topic=address,
        ))


_OFFLINE = Call(live=False)
