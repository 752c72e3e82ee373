"""Checks of one spec value at a time (labels, regions, the storage policy, the
publishers block), each problem reported at the key or value that breaks it; the
tree-wide rules that combine them are in `reconciler.spec.checks`."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from reconciler.diagnostics import Diagnostics
from reconciler.hedging.profile import HedgingProfile, Problem, RetryTimeouts, combination_problems
from reconciler.names import MAX_LABELS, label_key_problem, label_value_problem
from reconciler.orgpolicy.locations import catalog
from reconciler.ownership import RESERVED_PREFIX, is_reserved
from reconciler.spec.desired import StorageIntent
from reconciler.spec.loader import Located
from reconciler.spec.models import HedgingProfileDoc, Publishers, Retry, StoragePolicy
from reconciler.yamlio import Document, PathKey

Profiles = Mapping[str, tuple[HedgingProfile, Located[HedgingProfileDoc]]]


class Reporter:
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


def check_labels(labels: Mapping[str, str], rep: Reporter, base: PathKey) -> None:
    for key, value in labels.items():
        if problem := label_key_problem(key):
            rep.error((*base, key), "label-key", problem, key=True)
        elif is_reserved(key):
            rep.error(
                (*base, key), "label-reserved",
                f"label key {key!r} uses the prefix {RESERVED_PREFIX!r}, "
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


def region_problem(value: str) -> tuple[str, str] | None:
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


def check_regions(regions: list[str], rep: Reporter, base: PathKey) -> list[str]:
    good = []
    restricted = catalog().restricted_regions
    for i, region in enumerate(regions):
        problem = region_problem(region)
        if problem:
            rep.error((*base, i), problem[0], problem[1])
            continue
        if region in restricted:
            rep.warning(
                (*base, i), "region-restricted",
                f"{region!r} is not a publicly listed region (restricted or not generally "
                "available); make sure your projects can use it",
            )
        good.append(region)
    return good


def check_storage(model: str | StoragePolicy | None, rep: Reporter) -> StorageIntent:
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
    good = check_regions(model.regions, rep, base)
    return StorageIntent("explicit", tuple(sorted(set(good))), model.enforce_in_transit)


def check_publishers(
    publishers: Publishers,
    rep: Reporter,
    profiles: Profiles,
) -> tuple[HedgingProfile, RetryTimeouts] | None:
    base: PathKey = ("spec", "publishers")
    check_regions(publishers.regions, rep, (*base, "regions"))
    retry = (publishers.retry or Retry()).timeouts()
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
