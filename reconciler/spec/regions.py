"""Region lists in specs: each value a plain region Pub/Sub accepts, each once."""

from __future__ import annotations

from reconciler.orgpolicy.locations import catalog
from reconciler.spec.positioned import PositionedDiagnostics
from reconciler.yamlio import PathKey


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


def check_regions(
    regions: list[str], rep: PositionedDiagnostics, base: PathKey, *, item: bool = True
) -> list[str]:
    """The good regions of the list at `base` (or the single value at `base` when
    `item` is false); every bad or repeated one reported."""
    good = []
    restricted = catalog().restricted_regions
    first: dict[str, int] = {}
    for i, region in enumerate(regions):
        at: PathKey = (*base, i) if item else base
        if rep.silent(at):
            continue
        if region in first:
            rep.warning(
                at, "region-duplicate",
                f"{region!r} is listed twice (first as item {first[region] + 1}); "
                "remove the repeat",
            )
            continue
        first[region] = i
        problem = region_problem(region)
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


def check_endpoint(endpoint: str | None, rep: PositionedDiagnostics) -> str | None:
    """publishers.endpoint names a region (its endpoint is REGION-pubsub.googleapis.com)."""
    if endpoint is None:
        return None
    path: PathKey = ("spec", "publishers", "endpoint")
    host = endpoint.removesuffix("-pubsub.googleapis.com")
    if host != endpoint:
        rep.error(path, "bad-value", f"write the endpoint's region ({host!r}), not its host name")
        return None
    return endpoint if check_regions([endpoint], rep, path, item=False) else None
