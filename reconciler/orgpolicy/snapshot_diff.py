"""What differs between two org-policy snapshots, as a short summary a person reads
before replacing one with the other (`policy pull` refuses to overwrite a snapshot
without `--force` and says this; a hand edit is then never lost unseen).

    differences(old, new) -> list[str]   one line per kind of change; [] when the
                                         policies, constraints and ancestry agree

Policies are compared by what they enforce (`spec`, `dryRunSpec`), not by their etag,
which the service changes on any write; custom constraints by every field; the
ancestry entry by entry. Comments and layout are not compared: the caller says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TypeVar

from reconciler.orgpolicy.store import PolicyStore

SHOWN = 3  # names listed per line before "and N more"
T = TypeVar("T")


def differences(old: PolicyStore, new: PolicyStore) -> list[str]:
    """How `new` (just pulled) differs from `old` (the file): policies and custom
    constraints added, removed or changed, and ancestry entries that moved."""
    policies = _compare(
        {n: replace(p, etag="") for n, p in old.policies.items()},
        {n: replace(p, etag="") for n, p in new.policies.items()},
    )
    constraints = _compare(old.custom_constraints, new.custom_constraints)
    lines = [
        f"{what} {change}: {_names(names)}"
        for what, found in (("policies", policies), ("custom constraints", constraints))
        for change, names in found
    ]
    before = {**old.ancestry, **{p: "none" for p in old.unparented}}
    after = {**new.ancestry, **{p: "none" for p in new.unparented}}
    moved = [
        f"{child} {before.get(child, '(not recorded)')} -> {after.get(child, '(not recorded)')}"
        for child in sorted(before.keys() | after.keys())
        if before.get(child) != after.get(child)
    ]
    if moved:
        lines.append(f"ancestry changed: {_names(moved)}")
    return lines


def _compare(old: Mapping[str, T], new: Mapping[str, T]) -> list[tuple[str, list[str]]]:
    """("added", names), ("removed", names), ("changed", names), the empty ones left out."""
    found = [
        ("added", sorted(new.keys() - old.keys())),
        ("removed", sorted(old.keys() - new.keys())),
        ("changed", sorted(n for n in old.keys() & new.keys() if old[n] != new[n])),
    ]
    return [(change, names) for change, names in found if names]


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    more = len(names) - SHOWN
    return f"{len(names)} ({shown}{f' and {more} more' if more > 0 else ''})"
