"""Which labels reconcile owns: the reserved `reconcile-` prefix, the ownership label,
the owner identity of the spec tree that manages a topic, and the marker of the last
plan applied to it.

Core names shared by spec, plan, apply, import and the hedging label codec, so that
none of them has to import another's package to agree on what "managed" and "owned by
this tree" mean (docs/ownership.md).

    reconcile-managed=true   on every topic reconcile created or adopted (since 1.0)
    reconcile-owner=OWNER    the spec tree that manages it (its `Owner` document, or
                             `default`); `--prune` deletes only this owner's topics,
                             and only for a tree with an `Owner` document
    reconcile-plan=MARKER    the first 16 hex digits of the digest of the last plan
                             applied to it: a saved plan applies once
"""

from __future__ import annotations

from collections.abc import Mapping

RESERVED_PREFIX = "reconcile-"
OWNERSHIP_LABEL = "reconcile-managed"
OWNERSHIP_VALUE = "true"
OWNER_LABEL = "reconcile-owner"
PLAN_LABEL = "reconcile-plan"
# The owner of a spec tree without an `Owner` document: one tree per project needs
# nothing declared.
DEFAULT_OWNER = "default"
MARKER_DIGITS = 16  # hex digits of the plan digest: 64 bits, within a label value's 63
# Labels reconcile writes on every topic it creates or changes, whatever the spec says.
OWN_LABELS = (OWNERSHIP_LABEL, OWNER_LABEL, PLAN_LABEL)


def is_reserved(key: str) -> bool:
    """A key reconcile derives itself (never a user label)."""
    return key.startswith(RESERVED_PREFIX)


def ownership_labels(owner: str = DEFAULT_OWNER) -> dict[str, str]:
    """The labels a topic of the spec tree `owner` carries: what creating or adopting
    it sets."""
    return {OWNERSHIP_LABEL: OWNERSHIP_VALUE, OWNER_LABEL: owner}


def is_owned(labels: Mapping[str, str]) -> bool:
    """Does a topic with these labels carry the ownership label (created or adopted by
    some reconcile, of any spec tree or of a version before owners)?"""
    return labels.get(OWNERSHIP_LABEL) == OWNERSHIP_VALUE


def owner_of(labels: Mapping[str, str]) -> str | None:
    """The spec tree that manages the topic; None when it records none."""
    return labels.get(OWNER_LABEL) or None


def is_owned_by(labels: Mapping[str, str], owner: str) -> bool:
    """Managed by this very spec tree: what `--prune` may delete."""
    return is_owned(labels) and owner_of(labels) == owner


def is_legacy(labels: Mapping[str, str]) -> bool:
    """Labelled by a reconcile before owners: managed, but by no tree in particular
    (never pruned on that label alone)."""
    return is_owned(labels) and owner_of(labels) is None


def plan_marker(digest: str) -> str:
    """The `reconcile-plan` value of the plan with this digest ("sha256:HEX")."""
    return digest.split(":", 1)[-1][:MARKER_DIGITS]
