"""Which labels reconcile owns: the ownership label and the reserved `reconcile-` prefix.

Core names shared by plan, apply, import and the hedging label codec, so that none of
them has to import another's package to agree on what "managed" means.
"""

from __future__ import annotations

from collections.abc import Mapping

RESERVED_PREFIX = "reconcile-"
OWNERSHIP_LABEL = "reconcile-managed"
OWNERSHIP_VALUE = "true"


def is_reserved(key: str) -> bool:
    """A key reconcile derives itself (never a user label)."""
    return key.startswith(RESERVED_PREFIX)


def is_owned(labels: Mapping[str, str]) -> bool:
    """Does a topic with these labels carry the ownership label (so --prune may delete it)?"""
    return labels.get(OWNERSHIP_LABEL) == OWNERSHIP_VALUE
