"""Hedging profiles: resolving a profile's settings with the defaults, and the checks
of named profiles (names, duplicates, ranges), every problem of a profile at once.

`profile_from_settings` is the one place that fills in the defaults for settings a
spec leaves out: validate, import/export and the publisher all resolve profiles the
same way through it.
"""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.diagnostics import Diagnostics
from reconciler.hedging import labels as hedging_labels
from reconciler.hedging.profile import HedgingProfile, Problem
from reconciler.names import label_value_problem
from reconciler.spec.documents import HedgingProfileDoc, HedgingProfileSpec
from reconciler.spec.positioned import PositionedDiagnostics
from reconciler.spec.tree import Located
from reconciler.yamlio import PathKey

Profiles = Mapping[str, tuple[HedgingProfile, Located[HedgingProfileDoc]]]


def profile_from_settings(settings: HedgingProfileSpec, name: str | None) -> HedgingProfile:
    """The profile a spec's settings describe, each setting left out taking the default."""
    base = HedgingProfile()
    return HedgingProfile(
        hedge_delay_ms=settings.hedge_delay
        if settings.hedge_delay is not None
        else base.hedge_delay_ms,
        max_tokens=settings.max_tokens if settings.max_tokens is not None else base.max_tokens,
        refill_ratio=float(settings.refill_ratio)
        if settings.refill_ratio is not None
        else base.refill_ratio,
        name=name,
    )


def report_profile_problems(
    profile: HedgingProfile, rep: PositionedDiagnostics, base: PathKey
) -> None:
    """Range and precision problems of one profile, each value quoted as written."""
    for p in profile.problems():
        rep.error((*base, p.field), p.code, _as_written(p, rep, (*base, p.field)))


def _as_written(problem: Problem, rep: PositionedDiagnostics, path: PathKey) -> str:
    """The problem's message with the value as the file spells it: `0.2000001` must not
    read as `0.2`, nor `1e999` as `inf`."""
    if problem.code != "hedging-range":
        return problem.message
    prefix = f"{problem.field} "
    shown, sep, rest = problem.message.removeprefix(prefix).partition(" is outside")
    if not sep:
        return problem.message
    return f"{prefix}{rep.as_written(path, shown)} is outside{rest}"


def index_profiles(
    profiles: list[Located[HedgingProfileDoc]], diags: Diagnostics
) -> dict[str, tuple[HedgingProfile, Located[HedgingProfileDoc]]]:
    """Named profiles by name. A profile with a bad name is still checked (and can be
    referred to), so that fixing the name does not reveal new errors."""
    out: dict[str, tuple[HedgingProfile, Located[HedgingProfileDoc]]] = {}
    for located in profiles:
        rep = PositionedDiagnostics(located, diags)
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
        profile = profile_from_settings(located.model.spec, name)
        report_profile_problems(profile, rep, ("spec",))
        if name in out:
            first = out[name][1]
            m = first.doc.mark_for(("metadata", "name"))
            rep.error(
                ("metadata", "name"), "duplicate-profile",
                f"hedging profile {name!r} is also defined at {first.doc.file}:{m.line}; "
                "keep one",
            )
            continue
        if not located.is_invalid(("metadata", "name")):
            out[name] = (profile, located)
    return out
