"""Semantic checks over a whole spec tree, producing the desired state.

Every semantics rule (README: Checks) that can be decided offline is applied,
each reported at the key or value that breaks it, all of them in one pass: profiles
(`profiles.py`), Defaults chains (`defaults.py`), one topic (`topics.py`), and here
what needs the whole tree: duplicate topics and the org policy.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.diagnostics import Diagnostic, Diagnostics
from reconciler.orgpolicy.store import PolicyStore
from reconciler.spec.acceptances import owner_acceptances, with_topics
from reconciler.spec.datapaths import check_paths
from reconciler.spec.defaults import defaults_chain, index_defaults
from reconciler.spec.desired import DesiredState, DesiredTopic
from reconciler.spec.documents import DefaultsDoc, TopicDoc
from reconciler.spec.orgrules import (
    OrgFacts,
    locate,
    org_facts,
    org_problems,
    plan_decides,
    subject_of,
    unknown_group_problems,
)
from reconciler.spec.owner import check_opt_in_projects, check_owner
from reconciler.spec.profiles import index_profiles
from reconciler.spec.topics import check_topic
from reconciler.spec.tree import Located, SpecTree

if TYPE_CHECKING:  # the CEL evaluator loads only when the snapshot has custom constraints
    from reconciler.orgpolicy.unjudged import Gate
    from reconciler.spec.customrules import CustomRules

__all__ = ["OrgFacts", "check_tree"]


def custom_rules(
    store: PolicyStore | None, owner: str, diags: Diagnostics, gate: Gate | None = None
) -> CustomRules | None:
    """The custom-constraint checks, when the snapshot holds custom constraints."""
    if store is None or not store.custom_constraints:
        return None
    from reconciler.spec.customrules import CustomRules

    return CustomRules(store, owner, diags, gate)


def check_tree(
    tree: SpecTree, store: PolicyStore | None, diags: Diagnostics, gate: Gate | None = None
) -> DesiredState:
    profiles = index_profiles(tree.profiles, diags)
    defaults = index_defaults(tree.defaults, diags)
    state = DesiredState(owner=check_owner(tree.owners, diags))
    seen: dict[tuple[str, str], Located[TopicDoc]] = {}
    facts_cache: dict[str, OrgFacts | None] = {}
    reported_groups: set[tuple[str, str]] = set()
    rules = custom_rules(store, state.owner.name, diags, gate)
    chains: dict[Path, list[Located[DefaultsDoc]]] = {}
    for located in tree.topics:
        if located.directory not in chains:
            chains[located.directory] = defaults_chain(located.directory, defaults)
        start = len(diags.items)
        topic = check_topic(located, profiles, chains[located.directory], diags)
        if topic is None:
            continue
        valid = not diags.has_errors_since(start) and not located.partial
        if located.invalid_within(("metadata",)):
            continue  # its name or project is unknown: nothing to compare or place
        key = (topic.project, topic.topic)
        if key in seen:
            _duplicate(topic, located, seen[key], diags)
            continue
        seen[key] = located
        if topic.project not in facts_cache:
            facts_cache[topic.project] = org_facts(store, topic.project)
        facts = facts_cache[topic.project]
        if facts is not None:
            _check_against_org(topic, located, facts, diags, reported_groups)
        if valid:
            check_paths(topic, located, facts, diags)
            if rules is not None:
                rules.check(topic, located)
            state.topics.append(topic)
    if rules is not None:
        rules.finish()
    check_opt_in_projects(state.owner, (p for p, _ in seen), diags)
    state.acceptances = with_topics(
        [*tree.acceptances, *owner_acceptances(tree.owners, diags)], state.topics
    )
    return state


def _duplicate(
    topic: DesiredTopic, located: Located[TopicDoc], first: Located[TopicDoc], diags: Diagnostics
) -> None:
    here = located.doc.mark_for(("metadata", "name"))
    there = first.doc.mark_for(("metadata", "name"))
    diags.error(
        located.doc.file, here.line, here.col, "duplicate-topic",
        f"topic {topic.address} is declared twice: here and at "
        f"{first.doc.file}:{there.line}; keep one",
    )
    diags.error(
        first.doc.file, there.line, there.col, "duplicate-topic",
        f"topic {topic.address} is declared twice: here and at "
        f"{located.doc.file}:{here.line}; keep one",
    )


def _check_against_org(
    topic: DesiredTopic,
    located: Located[TopicDoc],
    facts: OrgFacts,
    diags: Diagnostics,
    reported_groups: set[tuple[str, str]],
) -> None:
    """The org-policy rules on one topic. A refusal that only a new topic meets is a
    warning here (`plan_decides`): offline, nothing says whether the topic exists."""
    doc = located.doc
    for problem in unknown_group_problems(topic.project, facts):  # once per project
        if (topic.project, problem.message) not in reported_groups:
            reported_groups.add((topic.project, problem.message))
            m = doc.mark_for(locate(doc, problem.path, problem.value))
            diags.add(Diagnostic(
                doc.file, m.line, m.col, problem.severity, problem.code, problem.message,
                problem.hint,
            ))
    for problem in org_problems(subject_of(topic), facts):
        problem = plan_decides(problem)
        m = doc.mark_for(locate(doc, problem.path, problem.value))
        message, hint = problem.worded(topic.address)
        diags.add(Diagnostic(
            doc.file, m.line, m.col, problem.severity, problem.code, message, hint,
            topic=topic.address,
        ))
