"""The checks of one Topic with its Defaults chain: names, labels, storage policy and
publishers, producing the topic's desired state. Each value taken from a Defaults
document is reported where that document says it."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from functools import lru_cache

from reconciler.diagnostics import Diagnostics
from reconciler.hedging import labels as hedging_labels
from reconciler.hedging.profile import HedgingProfile, RetryTimeouts, combination_problems
from reconciler.names import (
    MAX_LABELS,
    label_key_problem,
    label_value_problem,
    project_id_problem,
    topic_id_problem,
)
from reconciler.ownership import OWN_LABELS
from reconciler.spec.defaults import merged, nearest
from reconciler.spec.desired import DesiredTopic, StorageIntent
from reconciler.spec.documents import DefaultsDoc, Publishers, StoragePolicySpec, TopicDoc
from reconciler.spec.positioned import PositionedDiagnostics
from reconciler.spec.profiles import Profiles, profile_from_settings, report_profile_problems
from reconciler.spec.regions import check_endpoint, check_regions
from reconciler.spec.restfields import check_rest_fields
from reconciler.spec.settings import check_settings
from reconciler.spec.tree import Located
from reconciler.topicfields import HEDGING, LABELS, STORAGE_POLICY
from reconciler.yamlio import PathKey

PUBLISHERS: PathKey = HEDGING.spec_path


def check_topic(
    located: Located[TopicDoc],
    profiles: Profiles,
    chain: list[Located[DefaultsDoc]],
    diags: Diagnostics,
) -> DesiredTopic | None:
    doc = located.model
    rep = PositionedDiagnostics(located, diags)

    project = doc.metadata.project
    project_rep, project_path = rep, ("metadata", "project")
    if project is None:
        for d in chain:
            if d.model.spec.project:
                project = d.model.spec.project
                project_rep, project_path = PositionedDiagnostics(d, diags), ("spec", "project")
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

    labels = merged(LABELS, located, chain, diags, check_labels) or {}

    storage_model, storage_rep = nearest(doc.spec.message_storage_policy, STORAGE_POLICY,
                                         rep, chain)
    storage = check_storage(storage_model, storage_rep)
    settings = check_settings(located, chain, diags)
    extras = check_rest_fields(located, chain, diags)

    publishers, publishers_rep = nearest(doc.spec.publishers, HEDGING, rep, chain)
    hedging = None
    publisher_regions: tuple[str, ...] = ()
    ordering = False
    endpoint = None
    if publishers is not None:
        hedging = check_publishers(publishers, publishers_rep, profiles)
        publisher_regions = tuple(sorted(set(publishers.regions) - {""}))
        ordering = publishers.message_ordering
        endpoint = check_endpoint(publishers.endpoint, publishers_rep)
    if hedging is not None:
        hedging, encoded = _shared_hedging(hedging)
        labels.update(encoded)
    if endpoint is not None:
        labels[hedging_labels.ENDPOINT] = endpoint
    total = len(labels) + len(OWN_LABELS)
    if total > MAX_LABELS:
        rep.error(
            ("spec", "labels"), "label-count",
            f"the topic would carry {total} labels (its own, hedging labels and reconcile's "
            f"{len(OWN_LABELS)}: {', '.join(OWN_LABELS)}); the limit is {MAX_LABELS}",
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
        message_retention_duration=settings.retention,
        kms_key_name=settings.kms_key_name,
        schema_settings=settings.schema_settings,
        message_transforms=extras.message_transforms,
        ingestion=extras.ingestion,
        tags=extras.tags,
        file=located.doc.file,
        line=located.doc.start.line,
    )


def check_labels(labels: Mapping[str, str], rep: PositionedDiagnostics, base: PathKey) -> None:
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


def check_storage(
    model: str | StoragePolicySpec | None, rep: PositionedDiagnostics
) -> StorageIntent:
    if model is None:
        return StorageIntent("unmanaged")
    if model == "inherit":
        return StorageIntent("inherit")
    assert isinstance(model, StoragePolicySpec)
    base: PathKey = (*STORAGE_POLICY.spec_path, "allowedPersistenceRegions")
    if not model.allowed_persistence_regions:
        rep.error(
            base, "storage-empty-regions",
            "allowedPersistenceRegions is empty, which allows no region at all; list at "
            "least one region, write `messageStoragePolicy: inherit`, or omit the policy",
        )
    good = check_regions(model.allowed_persistence_regions, rep, base)
    return StorageIntent("explicit", tuple(sorted(set(good))), model.enforce_in_transit)


def check_publishers(
    publishers: Publishers, rep: PositionedDiagnostics, profiles: Profiles
) -> tuple[HedgingProfile, RetryTimeouts] | None:
    base = PUBLISHERS
    check_regions(publishers.regions, rep, (*base, "regions"))
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
        profile = profile_from_settings(hedging, None)
        report_profile_problems(profile, rep, (*base, "hedging"))
    if rep.located.invalid_within((*base, "retry")) or rep.located.invalid_within(
        (*base, "hedging")
    ):
        return profile, retry  # a setting was unreadable: combinations would mislead
    for p in combination_problems(profile, retry, publishers.message_ordering):
        if p.code == "hedging-ordering":
            rep.error((*base, "messageOrdering"), p.code, p.message)
        else:
            rep.error((*base, "retry", p.field), p.code, p.message)
    return profile, retry


@lru_cache(maxsize=256)
def _shared_hedging(
    hedging: tuple[HedgingProfile, RetryTimeouts],
) -> tuple[tuple[HedgingProfile, RetryTimeouts], tuple[tuple[str, str], ...]]:
    """One copy of a hedging setting and its labels for every topic that uses it (a
    large tree has a few profiles and 100,000 topics)."""
    return hedging, tuple(hedging_labels.encode(*hedging).items())
