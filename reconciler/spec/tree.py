"""What the loader hands the checks: typed records with their positions, and what
the walk of the spec tree found."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from reconciler.acceptance import Acceptance
from reconciler.spec.documents import DefaultsDoc, HedgingProfileDoc, OwnerDoc, TopicDoc
from reconciler.yamlio import Document, PathKey

M = TypeVar("M")  # a record of `documents.py`


@dataclass(slots=True)
class Located(Generic[M]):
    """A validated document and where it came from, for positioned diagnostics.

    `invalid` holds the paths whose values failed the shape check (already reported
    and replaced by defaults or placeholders), so that the semantic checks still run
    on the rest of the document but stay silent about those values."""

    model: M
    doc: Document
    path: Path
    invalid: frozenset[PathKey] = frozenset()

    @property
    def directory(self) -> Path:
        return self.path.parent

    @property
    def partial(self) -> bool:
        return bool(self.invalid)

    def is_invalid(self, path: PathKey) -> bool:
        """True when the value at `path`, or one enclosing it, failed the shape check."""
        if not self.invalid:
            return False
        return any(path[: len(bad)] == bad for bad in self.invalid)

    def invalid_within(self, path: PathKey) -> bool:
        """True when the value at `path` or anything inside it failed the shape check."""
        if not self.invalid:
            return False
        return any(bad[: len(path)] == path for bad in self.invalid) or self.is_invalid(path)


@dataclass
class SpecTree:
    topics: list[Located[TopicDoc]] = field(default_factory=list)
    profiles: list[Located[HedgingProfileDoc]] = field(default_factory=list)
    defaults: list[Located[DefaultsDoc]] = field(default_factory=list)
    owners: list[Located[OwnerDoc]] = field(default_factory=list)  # one, or none
    snapshot: Path | None = None
    # Directories searched for an org-policy snapshot, nearest first.
    snapshot_looked: list[Path] = field(default_factory=list)
    files: int = 0
    # The acceptance comments found in the files (spec/acceptances.py).
    acceptances: list[Acceptance] = field(default_factory=list)

    def projects(self) -> set[str]:
        """Every project the specs name (broken documents included)."""
        named = {t.model.metadata.project for t in self.topics}
        named |= {d.model.spec.project for d in self.defaults}
        return {p for p in named if p}
