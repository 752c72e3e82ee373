"""What a `gcp.resourceLocations` policy allows, in Pub/Sub region terms.

Regions and value groups are data (`reconciler/data/locations.yaml`); this module only
applies the rules: `in:` expands a group, `is:` names one exact value, a bare region
stands for its `R-locations` group, denied values win over allowed ones. `under:` names
a resource-hierarchy subtree, not a value group: we still read `under:G` as `in:G` (the
nearest meaning) but treat what follows from it as unverified, and say so.

Every refusal records whether it rests on inferred data (`inferred_basis`): a region
left out of an unverified group might be in it, so diagnostics built on such a refusal
are warnings unless `--strict-groups` is given. Only might: an inferred group's
members all lie in its geography (`within`, e.g. `us-*` for in:us-locations), so a
region outside it (asia-east1) is certainly not a member, and refusing it is certain.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

import yaml

from reconciler.orgpolicy.model import PolicySpec

LocationKind = Literal[
    "region", "zone", "multi_region", "dual_region", "group", "exclusion", "unknown"
]

# Package data, read by path: `importlib.resources` would add its imports (tempfile,
# zipfile) to every cold validate, for one file that an install always unpacks.
_DATA = Path(__file__).resolve().parent.parent / "data" / "locations.yaml"
_ZONE = re.compile(r"^([a-z]+-[a-z]+\d+)-[a-z]$")
_DUAL = re.compile(r"^(nam|eur|asia)\d+$")


@dataclass(frozen=True)
class ValueGroup:
    name: str
    regions: frozenset[str]
    verified: bool
    basis: str
    source: str = ""  # where the group and its members come from (locations.yaml)
    # Inferred groups: region-name patterns (`us-*`) or regions every member matches,
    # whatever the members are; () = no bound known (anything may be a member).
    within: tuple[str, ...] = ()

    def may_contain(self, region: str) -> bool:
        """False only when `region` is certainly not a member."""
        if self.verified or region in self.regions:
            return region in self.regions
        if not self.within:
            return True
        return any(
            region.startswith(p[:-1]) if p.endswith("*") else region == p for p in self.within
        )


@dataclass(frozen=True)
class LocationCatalog:
    regions: frozenset[str]
    restricted_regions: frozenset[str]
    multi_regions: frozenset[str]
    dual_regions: dict[str, tuple[str, ...] | None]
    groups: dict[str, ValueGroup]

    @property
    def all_regions(self) -> frozenset[str]:
        return self.regions | self.restricted_regions

    def kind_of(self, value: str) -> LocationKind:
        v = value.strip()
        low = v.lower()
        if v.startswith("-"):
            return "exclusion"
        if v.startswith(("in:", "under:")) or low.endswith("-locations"):
            return "group"
        if v in self.all_regions:
            return "region"
        if low in self.multi_regions:
            return "multi_region"
        if low in self.dual_regions or _DUAL.match(low):
            return "dual_region"
        zone = _ZONE.match(v)
        if zone and zone.group(1) in self.all_regions:
            return "zone"
        return "unknown"

    def group(self, name: str) -> ValueGroup | None:
        """A value group by name (`in:`/`under:` prefix optional), per-region groups too."""
        bare = name.split(":", 1)[1] if name.startswith(("in:", "under:")) else name
        if bare in self.groups:
            return self.groups[bare]
        if bare.endswith("-locations"):
            region = bare.removesuffix("-locations")
            if region in self.all_regions:
                return ValueGroup(
                    bare,
                    frozenset({region}),
                    True,
                    "per-region group",
                    "the R-locations rule (S5, S4, S11)",
                )
        return None

    def suggest_region(self, value: str) -> str | None:
        matches = difflib.get_close_matches(value, sorted(self.all_regions), n=1, cutoff=0.6)
        return matches[0] if matches else None

    def suggest_group(self, value: str) -> str | None:
        bare = value.split(":", 1)[-1]
        names = sorted(self.groups) + [f"{r}-locations" for r in sorted(self.regions)]
        matches = difflib.get_close_matches(bare, names, n=1, cutoff=0.6)
        return f"in:{matches[0]}" if matches else None


@cache
def catalog() -> LocationCatalog:
    text = _DATA.read_text("utf-8")
    raw = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    bodies = raw.get("groups") or {}
    groups = {
        name: ValueGroup(
            name=name,
            regions=frozenset(body.get("regions") or ()),
            verified=bool(body.get("verified")),
            basis=str(body.get("basis", "")),
            source=str(body.get("source", "")),
            within=_within(body.get("within") or [], bodies),
        )
        for name, body in bodies.items()
    }
    return LocationCatalog(
        regions=frozenset(raw["regions"]),
        restricted_regions=frozenset(raw.get("restricted_regions") or ()),
        multi_regions=frozenset(raw.get("multi_regions") or ()),
        dual_regions={
            k: (tuple(v) if v else None) for k, v in (raw.get("dual_regions") or {}).items()
        },
        groups=groups,
    )


def _within(patterns: list[str], bodies: dict[str, dict[str, list[str]]]) -> tuple[str, ...]:
    """A group's geography with `in:GROUP` replaced by that group's regions."""
    out: list[str] = []
    for pattern in patterns:
        if pattern.startswith("in:"):
            out.extend(bodies[pattern[3:]]["regions"])
        else:
            out.append(pattern)
    return tuple(out)


@dataclass(frozen=True)
class ValueExpansion:
    regions: frozenset[str]
    unknown_groups: tuple[str, ...] = ()
    unverified: tuple[ValueGroup, ...] = ()
    certain: frozenset[str] = frozenset()  # named by is:, a region, or a verified group
    under_values: tuple[str, ...] = ()


UNDER_BASIS = "an under: value names a resource-hierarchy subtree; read here as in:"


def expand_values(values: tuple[str, ...]) -> ValueExpansion:
    """Regions named by policy values; zones and multi-regions name no Pub/Sub region."""
    cat = catalog()
    regions: set[str] = set()
    certain: set[str] = set()
    unknown: list[str] = []
    unverified: list[ValueGroup] = []
    under: list[str] = []
    for raw in values:
        value = raw.strip()
        if value.startswith("is:"):
            exact = value[3:]
            if exact in cat.all_regions:
                regions.add(exact)
                certain.add(exact)
            continue
        if value.startswith(("in:", "under:")) or value.endswith("-locations"):
            group = cat.group(value)
            if group is None:
                unknown.append(value)
                continue
            regions |= group.regions
            if value.startswith("under:"):
                under.append(value)  # read as in:, with no bound on what it holds
                group = ValueGroup(group.name, group.regions, False, UNDER_BASIS, group.source)
            if group.verified:
                certain |= group.regions
            else:
                unverified.append(group)
            continue
        if value in cat.all_regions:
            regions.add(value)
            certain.add(value)
    return ValueExpansion(
        frozenset(regions),
        tuple(unknown),
        tuple(unverified),
        frozenset(certain),
        tuple(under),
    )


@dataclass(frozen=True)
class LocationRestriction:
    """The regions a topic may use under one effective policy (None = every region)."""

    allowed: frozenset[str] | None
    unknown_groups: tuple[str, ...] = ()
    unverified: tuple[ValueGroup, ...] = field(default=())
    # What a refusal rests on (see inferred_basis):
    candidates: frozenset[str] = frozenset()  # allowed by the values, before denials
    allowed_inferred: tuple[ValueGroup, ...] = ()  # unverified groups among allowed values
    denied_certain: frozenset[str] = frozenset()
    denied_inferred: tuple[ValueGroup, ...] = ()
    under_values: tuple[str, ...] = ()

    def allows(self, region: str) -> bool:
        return self.allowed is None or region in self.allowed

    def inferred_basis(self, region: str) -> tuple[ValueGroup, ...]:
        """The unverified groups a refusal of `region` rests on; () when the region is
        allowed or its refusal is certain (exact values, verified groups, denyAll, or
        a region outside the geography of every inferred group allowed)."""
        if self.allows(region) or region in self.denied_certain:
            return ()
        if region in self.candidates:  # allowed, then denied by an inferred group only
            return tuple(g for g in self.denied_inferred if region in g.regions)
        # Refused for want of an allowed value: uncertain only where an allowed
        # inferred group might, after all, hold the region.
        return tuple(g for g in self.allowed_inferred if g.may_contain(region))

    def allowed_regions(self) -> tuple[str, ...]:
        if self.allowed is None:
            return tuple(sorted(catalog().regions))
        return tuple(sorted(self.allowed))


UNCONSTRAINED = LocationRestriction(allowed=None)


def location_restriction(spec: PolicySpec | None) -> LocationRestriction:
    """Evaluate an already hierarchy-merged spec (conditional rules are ignored: they
    depend on tags we cannot see offline)."""
    if spec is None or spec.reset:
        return UNCONSTRAINED
    rules = [r for r in spec.rules if not r.condition]
    if not rules:
        return UNCONSTRAINED
    if any(r.deny_all for r in rules):
        return LocationRestriction(allowed=frozenset())
    allowed_values = tuple(v for r in rules for v in r.allowed_values)
    denied_values = tuple(v for r in rules for v in r.denied_values)
    allow_all = any(r.allow_all for r in rules) or not allowed_values
    allowed = expand_values(allowed_values)
    denied = expand_values(denied_values)
    unknown = allowed.unknown_groups + denied.unknown_groups
    unverified = allowed.unverified + denied.unverified
    under = allowed.under_values + denied.under_values
    if allow_all:
        if not denied_values:
            return LocationRestriction(None, unknown, unverified, under_values=under)
        base = catalog().all_regions
        inferred_allowed: tuple[ValueGroup, ...] = ()
    else:
        base = allowed.regions
        inferred_allowed = allowed.unverified
    return LocationRestriction(
        frozenset(base - denied.regions),
        unknown,
        unverified,
        candidates=frozenset(base),
        allowed_inferred=inferred_allowed,
        denied_certain=denied.certain,
        denied_inferred=denied.unverified,
        under_values=under,
    )


def enforce_in_transit(spec: PolicySpec | None) -> bool:
    """A boolean constraint is on when an unconditional rule enforces it."""
    if spec is None or spec.reset:
        return False
    return any(r.enforce for r in spec.rules if not r.condition)


def expanded_values(values: tuple[str, ...]) -> tuple[str, ...]:
    """The value list an effective policy shows: groups replaced by their members
    (regions and their per-region groups), as GetEffectivePolicy prints them."""
    cat = catalog()
    out: set[str] = set()
    for value in values:
        group = cat.group(value) if value.startswith(("in:", "under:")) else None
        if group is None and value in cat.all_regions:
            group = cat.group(f"in:{value}-locations")
        if group is None:
            out.add(value)
            continue
        out.add(group.name)
        for region in group.regions:
            out.add(region)
            out.add(f"{region}-locations")
    return tuple(sorted(out))
