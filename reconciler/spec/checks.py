"""Semantic checks over a whole spec tree, producing the desired state.

Every rule of DESIGN.md's "Semantics rules" that can be decided offline is here, each
reported at the key or value that breaks it, all of them in one pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from reconciler.diagnostics import Diagnostic, Diagnostics
from reconciler.hedging import labels as hedging_labels
from reconciler.hedging.profile import (
    HedgingProfile,
    Problem,
    RetryTimeouts,
    combination_problems,
)
from reconciler.names import (
    MAX_LABELS,
    label_key_problem,
    label_value_problem,
    project_id_problem,
    topic_id_problem,
)
from reconciler.orgpolicy.locations import catalog
from reconciler.orgpolicy.store import PolicyStore
from reconciler.spec.desired import DesiredState, DesiredTopic, StorageIntent
from reconciler.spec.loader import Located, SpecTree
from reconciler.spec.models import (
    DefaultsDoc,
    HedgingProfileDoc,
    Publishers,
    StoragePolicy,
    TopicDoc,
)
from reconciler.spec.orgrules import OrgFacts, org_facts, org_problems, unknown_group_problems
from reconciler.yamlio import Document, PathKey


class _Reporter:
    """Positions diagnostics inside one document."""

    def __init__(self, doc: Document, diags: Diagnostics) -> None:
        self.doc = doc
        self.diags = diags

    def error(self, path: PathKey, code: str, message: str, *, key: bool = False) -> None:
        m = self.doc.key_mark(path) if key else self.doc.mark_for(path)
        self.diags.error(self.doc.file, m.line, m.col, code, message)

    def warning(self, path: PathKey, code: str, message: str, *, key: bool = False) -> None:
        m = self.doc.key_mark(path) if key else self.doc.mark_for(path)
        self.diags.warning(self.doc.file, m.line, m.col, code, message)


def check_tree(tree: SpecTree, store: PolicyStore | None, diags: Diagnostics) -> DesiredState:
    profiles = _index_profiles(tree.profiles, diags)
    defaults = _index_defaults(tree.defaults, diags)
    state = DesiredState()
    seen: dict[tuple[str, str], Located[TopicDoc]] = {}
    facts_cache: dict[str, OrgFacts | None] = {}
    reported_groups: set[tuple[str, str]] = set()
    chains: dict[Path, list[Located[DefaultsDoc]]] = {}
    for located in tree.topics:
        if located.directory not in chains:
            chains[located.directory] = _defaults_chain(located.directory, defaults)
        errors_before = diags.counts()[0]
        topic = _check_topic(located, profiles, chains[located.directory], diags)
        if topic is None:
            continue
        valid = diags.counts()[0] == errors_before
        key = (topic.project, topic.topic)
        if key in seen:
            first = seen[key]
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
            continue
        seen[key] = located
        if topic.project not in facts_cache:
            facts_cache[topic.project] = org_facts(store, topic.project)
        facts = facts_cache[topic.project]
        if facts is not None:
            _check_against_org(topic, located, facts, diags, reported_groups)
        if valid:
            state.topics.append(topic)
    return state


def _index_profiles(
    profiles: list[Located[HedgingProfileDoc]], diags: Diagnostics
) -> dict[str, tuple[HedgingProfile, Located[HedgingProfileDoc]]]:
    out: dict[str, tuple[HedgingProfile, Located[HedgingProfileDoc]]] = {}
    for located in profiles:
        rep = _Reporter(located.doc, diags)
        name = located.model.metadata.name
        problem = label_value_problem(hedging_labels.PROFILE, name) or (
            None if name else "a profile name must not be empty"
        )
        if problem or name == hedging_labels.INLINE_NAME:
            rep.error(
                ("metadata", "name"), "profile-name",
                f"hedging profile name {name!r} must be 1 to 63 lowercase letters, digits, "
                "'_' or '-' (it is recorded in a topic label), and not 'inline'",
            )
            continue
        if name in out:
            first = out[name][1]
            m = first.doc.mark_for(("metadata", "name"))
            rep.error(
                ("metadata", "name"), "duplicate-profile",
                f"hedging profile {name!r} is also defined at {first.doc.file}:{m.line}; "
                "keep one",
            )
            continue
        profile = located.model.spec.profile(name)
        for p in profile.problems():
            rep.error(("spec", p.field), p.code, p.message)
        out[name] = (profile, located)
    return out


def _index_defaults(
    defaults: list[Located[DefaultsDoc]], diags: Diagnostics
) -> dict[Path, Located[DefaultsDoc]]:
    out: dict[Path, Located[DefaultsDoc]] = {}
    for located in defaults:
        directory = located.directory.resolve()
        if directory in out:
            first = out[directory]
            _Reporter(located.doc, diags).error(
                ("kind",), "duplicate-defaults",
                f"this directory already has a Defaults document at {first.doc.file}:"
                f"{first.doc.start.line}; merge them",
            )
            continue
        out[directory] = located
    return out


def _defaults_chain(
    directory: Path, defaults: Mapping[Path, Located[DefaultsDoc]]
) -> list[Located[DefaultsDoc]]:
    """Defaults of a directory and its ancestors, nearest first."""
    if not defaults:
        return []
    resolved = directory.resolve()
    return [defaults[d] for d in (resolved, *resolved.parents) if d in defaults]


def _check_topic(
    located: Located[TopicDoc],
    profiles: Mapping[str, tuple[HedgingProfile, Located[HedgingProfileDoc]]],
    chain: list[Located[DefaultsDoc]],
    diags: Diagnostics,
) -> DesiredTopic | None:
    doc = located.model
    rep = _Reporter(located.doc, diags)

    project = doc.metadata.project
    project_rep, project_path = rep, ("metadata", "project")
    if project is None:
        for d in chain:
            if d.model.spec.project:
                project = d.model.spec.project
                project_rep, project_path = _Reporter(d.doc, diags), ("spec", "project")
                break
    if project is None:
        rep.error(
            ("metadata",), "missing-field",
            "metadata > project is required (or set `project` in a Defaults document "
            "of this directory)",
            key=True,
        )
        return None
    if problem := project_id_problem(project):
        project_rep.error(project_path, "project-id", problem)
    if problem := topic_id_problem(doc.metadata.name):
        rep.error(("metadata", "name"), "topic-id", problem)

    # Labels: defaults (outermost first) then the topic's own.
    labels: dict[str, str] = {}
    for d in reversed(chain):
        _check_labels(d.model.spec.labels, _Reporter(d.doc, diags), ("spec", "labels"))
        labels.update(d.model.spec.labels)
    _check_labels(doc.spec.labels, rep, ("spec", "labels"))
    labels.update(doc.spec.labels)

    storage_model = doc.spec.message_storage_policy
    storage_rep = rep
    if storage_model is None:
        for d in chain:
            if d.model.spec.message_storage_policy is not None:
                storage_model = d.model.spec.message_storage_policy
                storage_rep = _Reporter(d.doc, diags)
                break
    storage = _check_storage(storage_model, storage_rep)

    publishers = doc.spec.publishers
    publishers_rep = rep
    if publishers is None:
        for d in chain:
            if d.model.spec.publishers is not None:
                publishers, publishers_rep = d.model.spec.publishers, _Reporter(d.doc, diags)
                break
    hedging = None
    publisher_regions: tuple[str, ...] = ()
    ordering = False
    endpoint = None
    if publishers is not None:
        hedging = _check_publishers(publishers, publishers_rep, profiles)
        publisher_regions = tuple(sorted(set(publishers.regions)))
        ordering = publishers.message_ordering
        endpoint = _check_endpoint(publishers.endpoint, publishers_rep)
    if hedging is not None:
        labels.update(hedging_labels.encode(*hedging))
    if endpoint is not None:
        labels[hedging_labels.ENDPOINT] = endpoint
    total = len(labels) + 1  # + the ownership label
    if total > MAX_LABELS:
        rep.error(
            ("spec", "labels"), "label-count",
            f"the topic would carry {total} labels (its own, hedging and ownership "
            f"labels); the limit is {MAX_LABELS}",
            key=True,
        )
    return DesiredTopic(
        project=project,
        topic=doc.metadata.name,
        labels=labels,
        storage=storage,
        hedging=hedging,
        publisher_regions=publisher_regions,
        message_ordering=ordering,
        publisher_endpoint=endpoint,
        file=located.doc.file,
        line=located.doc.start.line,
    )


def _check_labels(labels: Mapping[str, str], rep: _Reporter, base: PathKey) -> None:
    for key, value in labels.items():
        if problem := label_key_problem(key):
            rep.error((*base, key), "label-key", problem, key=True)
        elif hedging_labels.is_reserved(key):
            rep.error(
                (*base, key), "label-reserved",
                f"label key {key!r} uses the prefix {hedging_labels.RESERVED_PREFIX!r}, "
                "reserved for the labels reconcile manages (hedging profile, ownership); "
                "rename it",
                key=True,
            )
        if problem := label_value_problem(key, value):
            rep.error((*base, key), "label-value", problem)
    if len(labels) > MAX_LABELS:
        rep.error(
            base, "label-count",
            f"{len(labels)} labels declared; a topic may carry at most {MAX_LABELS}",
            key=True,
        )


def _region_problem(value: str) -> tuple[str, str] | None:
    """(code, message) when `value` is not a plain region name Pub/Sub accepts."""
    cat = catalog()
    kind = cat.kind_of(value)
    if kind == "region":
        return None
    if kind == "zone":
        region = value.rsplit("-", 1)[0]
        return "region-zone", f"{value!r} is a zone; use its region {region!r}"
    if kind == "multi_region":
        return (
            "region-multi-region",
            f"{value!r} is a multi-region location; list the individual regions instead",
        )
    if kind == "dual_region":
        pair = cat.dual_regions.get(value.lower())
        spelled = f" ({' and '.join(pair)})" if pair else ""
        return (
            "region-dual-region",
            f"{value!r} is a dual-region location; list its two regions{spelled} instead",
        )
    if kind == "exclusion":
        return (
            "region-exclusion",
            f"{value!r} is an exclusion; a storage policy lists only the regions it allows",
        )
    if kind == "group":
        group = cat.group(value)
        members = f" ({', '.join(sorted(group.regions))})" if group else ""
        return (
            "region-value-group",
            f"{value!r} is an org-policy value group; list its regions{members} instead",
        )
    suggestion = cat.suggest_region(value)
    hint = f"; did you mean {suggestion!r}?" if suggestion else ""
    return "region-unknown", f"{value!r} is not a known Google Cloud region{hint}"


def _check_regions(
    regions: list[str], rep: _Reporter, base: PathKey, *, item: bool = True
) -> list[str]:
    good = []
    restricted = catalog().restricted_regions
    for i, region in enumerate(regions):
        at: PathKey = (*base, i) if item else base
        problem = _region_problem(region)
        if problem:
            rep.error(at, problem[0], problem[1])
            continue
        if region in restricted:
            rep.warning(
                at, "region-restricted",
                f"{region!r} is not a publicly listed region (restricted or not generally "
                "available); make sure your projects can use it",
            )
        good.append(region)
    return good


def _check_endpoint(endpoint: str | None, rep: _Reporter) -> str | None:
    """publishers.endpoint names a region (its endpoint is REGION-pubsub.googleapis.com)."""
    if endpoint is None:
        return None
    path: PathKey = ("spec", "publishers", "endpoint")
    host = endpoint.removesuffix("-pubsub.googleapis.com")
    if host != endpoint:
        rep.error(path, "bad-value", f"write the endpoint's region ({host!r}), not its host name")
        return None
    return endpoint if _check_regions([endpoint], rep, path, item=False) else None


def _check_storage(model: str | StoragePolicy | None, rep: _Reporter) -> StorageIntent:
    if model is None:
        return StorageIntent("unmanaged")
    if model == "inherit":
        return StorageIntent("inherit")
    assert isinstance(model, StoragePolicy)
    base: PathKey = ("spec", "messageStoragePolicy", "allowedPersistenceRegions")
    if not model.regions:
        rep.error(
            base, "storage-empty-regions",
            "allowedPersistenceRegions is empty, which allows no region at all; list at "
            "least one region, write `messageStoragePolicy: inherit`, or omit the policy",
        )
    good = _check_regions(model.regions, rep, base)
    return StorageIntent("explicit", tuple(sorted(set(good))), model.enforce_in_transit)


def _check_publishers(
    publishers: Publishers,
    rep: _Reporter,
    profiles: Mapping[str, tuple[HedgingProfile, Located[HedgingProfileDoc]]],
) -> tuple[HedgingProfile, RetryTimeouts] | None:
    base: PathKey = ("spec", "publishers")
    _check_regions(publishers.regions, rep, (*base, "regions"))
    retry_model = publishers.retry
    defaults = RetryTimeouts()
    retry = RetryTimeouts(
        initial_rpc_timeout_ms=retry_model.initial_rpc_timeout
        if retry_model and retry_model.initial_rpc_timeout is not None
        else defaults.initial_rpc_timeout_ms,
        total_timeout_ms=retry_model.total_timeout
        if retry_model and retry_model.total_timeout is not None
        else defaults.total_timeout_ms,
    )
    for p in retry.problems():
        rep.error((*base, "retry", p.field), p.code, p.message)
    hedging = publishers.hedging
    if hedging is None:
        return None
    if isinstance(hedging, str):
        if hedging not in profiles:
            import difflib

            match = difflib.get_close_matches(hedging, list(profiles), n=1, cutoff=0.5)
            hint = (
                f"; did you mean {match[0]!r}?"
                if match
                else "; define it in a `kind: HedgingProfile` document"
            )
            rep.error(
                (*base, "hedging"), "hedging-unknown-profile",
                f"unknown hedging profile {hedging!r}{hint}",
            )
            return None
        profile = profiles[hedging][0]
    else:
        profile = hedging.profile()
        for p in profile.problems():
            rep.error((*base, "hedging", p.field), p.code, p.message)
    problems: list[Problem] = combination_problems(profile, retry, publishers.message_ordering)
    for p in problems:
        if p.code == "hedging-ordering":
            rep.error((*base, "messageOrdering"), p.code, p.message)
        else:
            rep.error((*base, "retry", p.field), p.code, p.message)
    return profile, retry


def _check_against_org(
    topic: DesiredTopic,
    located: Located[TopicDoc],
    facts: OrgFacts,
    diags: Diagnostics,
    reported_groups: set[tuple[str, str]],
) -> None:
    problems = [
        p
        for p in unknown_group_problems(topic.project, facts)
        if (topic.project, p.message) not in reported_groups
    ]
    reported_groups.update((topic.project, p.message) for p in problems)
    for problem in problems + org_problems(topic, facts):
        m = located.doc.mark_for(_locate(located.doc, problem.path, problem.value))
        diags.add(
            Diagnostic(
                located.doc.file, m.line, m.col, problem.severity, problem.code, problem.message
            )
        )


def _locate(doc: Document, path: tuple[str, ...], value: str | None) -> PathKey:
    """The path of `value` inside the list at `path` in this document (a region may be
    declared here or come from a Defaults document: then the topic itself is blamed)."""
    node = doc.data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return ("metadata", "name")
        node = node[part]
    if value is None:
        return path
    if isinstance(node, list) and value in node:
        return (*path, node.index(value))
    return path
