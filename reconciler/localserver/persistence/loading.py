"""Opening a state directory: read and check the snapshot and the journal, decide
what is a torn tail (dropped), what is damage (refused, or skipped under --recover)
and whether the state must be rewritten (recovery, or a format-1 migration).

Format 1 (before checksummed headers) is read strictly and migrated on open: the
state is rewritten in the current format and the old files are kept beside it as
`*.v1-TIME`; format 2 (the same framing as 3, without subscription and message
records) likewise, kept as `*.v2-TIME`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reconciler.errors import InputError
from reconciler.localserver.persistence import frames as f

SNAPSHOT = "snapshot.bin"
LOG = "journal.log"
RECOVER_HINT = (
    "restart with `reconcile local-server --state {dir} --recover`: it keeps every "
    "intact record, reports what it drops, keeps the damaged files aside and writes a "
    "fresh snapshot"
)


class StateDamaged(InputError):
    """A state file is damaged somewhere other than a torn last journal record."""


@dataclass
class Loaded:
    """What `load_state` found; `records` are the snapshot's, then the journal's."""

    records: list[f.Record] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dropped: list[tuple[str, f.Damage]] = field(default_factory=list)
    kept: dict[str, int] = field(default_factory=dict)
    rewrite: bool = False
    recovering: bool = False
    aside: dict[str, str] = field(default_factory=dict)  # file -> "damaged" / "v1"
    kept_aside: list[str] = field(default_factory=list)
    # Records the state could not use (what, why), set aside by a recovery in
    # `unusable_file`.
    unusable: list[tuple[str, str]] = field(default_factory=list)
    unusable_file: str = ""
    journal_end: int | None = None
    journal_seq: int = 0
    journal_records: int = 0
    snapshot_bytes: int = 0

    def report(self) -> list[str]:
        """What a recovery did, one line each (empty when nothing was recovered)."""
        if not self.recovering:
            return []
        lines = [
            f"recover: set aside {what} ({why}); it is kept in {self.unusable_file}"
            for what, why in self.unusable
        ]
        if not self.dropped and not self.aside:
            return lines or ["recover: no damage found; nothing dropped"]
        for name in (SNAPSHOT, LOG):
            if name not in self.kept and all(n != name for n, _ in self.dropped):
                continue
            mine = [d for n, d in self.dropped if n == name]
            lost = sum(d.records for d in mine)
            ranges = ", ".join(f"bytes {d.start}-{d.end} ({d.reason})" for d in mine)
            lines.append(
                f"recover: {name}: kept {self.kept.get(name, 0)} intact records, dropped "
                f"{lost} damaged" + (f": {ranges}" if ranges else "")
            )
        if self.kept_aside:
            lines.append("recover: damaged files kept as " + ", ".join(self.kept_aside))
        return lines


def _refuse(path: Path, damage: f.Damage, more: int) -> StateDamaged:
    extra = f" and {more} more damaged range(s)" if more else ""
    return StateDamaged(
        f"{path}: damaged state at byte offset {damage.start} ({damage.reason}){extra}; "
        "the local server refuses to start on it",
        hint=RECOVER_HINT.format(dir=path.parent),
    )


def load_state(snapshot: Path, log: Path, *, recover: bool) -> Loaded:
    out = Loaded(recovering=recover)
    v1 = _load_snapshot(snapshot, out, recover)
    _load_journal(log, out, recover, v1)
    if out.aside:
        out.rewrite = True
    return out


def _problems(scan: f.Scan, *, torn_is_damage: bool) -> list[f.Damage]:
    found = list(scan.damage)
    if torn_is_damage and scan.torn is not None:
        found.append(scan.torn)
    return sorted(found, key=lambda d: d.start)


def _settle(path: Path, out: Loaded, recover: bool, problems: list[f.Damage]) -> None:
    """Refuse on damage, or under --recover note it and mark the file for setting aside."""
    if not problems:
        return
    if not recover:
        raise _refuse(path, problems[0], len(problems) - 1)
    out.dropped.extend((path.name, d) for d in problems)
    out.aside[path.name] = "damaged"


def _bad_header(data: bytes, what: str, *, torn_is_damage: bool) -> tuple[f.Scan, list[f.Damage]]:
    """A file whose header is damaged: every intact record found by scanning, and the
    damage, the first range named as the header."""
    scan = f.scan(data, 0)
    problems = _problems(scan, torn_is_damage=torn_is_damage)
    if not problems or problems[0].start != 0:
        problems.insert(0, f.Damage(0, 0, f"damaged {what} header", 0))
    first = problems[0]
    first.reason = "empty file" if not data else f"damaged {what} header"
    if first.end <= f.HEADER_SIZE:
        first.records = 0
    return scan, problems


def _refuse_newer(path: Path, head: f.Header | None, magic: bytes) -> None:
    """A file written by a newer format is neither read nor "recovered"."""
    if head is not None and head.magic == magic and head.version > f.FORMAT_VERSION:
        raise InputError(
            f"{path}: state format {head.version} is newer than this version of "
            f"reconcile understands ({f.FORMAT_VERSION})",
            hint="use the newer reconcile with this state directory",
        )


def _load_snapshot(path: Path, out: Loaded, recover: bool) -> bool:
    """Adds the snapshot's records; True when it is in format 1."""
    if not path.exists():
        return False
    data = path.read_bytes()
    out.snapshot_bytes = len(data)
    if data.startswith(f.V1_SNAPSHOT_MAGIC):
        scan = f.scan_v1(data, len(f.V1_SNAPSHOT_MAGIC))
        # Renamed into place only when complete: even a "torn" end is damage.
        _settle(path, out, recover, _problems(scan, torn_is_damage=True))
        out.aside.setdefault(path.name, "v1")
        out.notes.append(f"{path}: format 1 state, migrated to format {f.FORMAT_VERSION}")
        out.records.extend(scan.records)
        out.kept[path.name] = len(scan.records)
        return True
    head = f.read_header(data)
    _refuse_newer(path, head, f.SNAPSHOT_MAGIC)
    if head is None or head.magic != f.SNAPSHOT_MAGIC or head.version not in f.READABLE_VERSIONS:
        scan, problems = _bad_header(data, "snapshot", torn_is_damage=True)
    else:
        scan = f.scan(data, f.HEADER_SIZE)
        problems = _problems(scan, torn_is_damage=True)
        lost = head.count - len(scan.records)
        if not problems and (lost or scan.end - f.HEADER_SIZE != head.body):
            problems = [
                f.Damage(
                    scan.end,
                    len(data),
                    f"holds {len(scan.records)} records of {head.count}",
                    max(lost, 0),
                )
            ]
        elif problems and lost >= 0:
            # The header's count makes the loss exact (a tail's count is an estimate).
            counted = sum(p.records for p in problems)
            problems[-1].records = max(0, problems[-1].records + lost - counted)
    _settle(path, out, recover, problems)
    if head is not None and head.version < f.FORMAT_VERSION:
        _migrating(path, out, head.version)
    out.records.extend(scan.records)
    out.kept[path.name] = len(scan.records)
    return False


def _migrating(path: Path, out: Loaded, version: int) -> None:
    """A file of an older framing-compatible version: rewritten on open, kept aside."""
    out.aside.setdefault(path.name, f"v{version}")
    out.notes.append(f"{path}: format {version} state, migrated to format {f.FORMAT_VERSION}")


def _load_journal(path: Path, out: Loaded, recover: bool, v1_snapshot: bool) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    head = f.read_header(data)
    _refuse_newer(path, head, f.JOURNAL_MAGIC)
    fresh_header = f.header(f.JOURNAL_MAGIC)
    if head is not None and head.magic == f.JOURNAL_MAGIC and head.version in f.READABLE_VERSIONS:
        scan = f.scan(data, f.HEADER_SIZE)
        _settle(path, out, recover, _problems(scan, torn_is_damage=False))
        if head.version < f.FORMAT_VERSION:
            _migrating(path, out, head.version)
        out.journal_end = scan.end
        out.journal_seq = scan.last_seq
        out.journal_records = len(scan.records)
    elif len(data) < f.HEADER_SIZE and fresh_header.startswith(data):
        out.notes.append(f"{path}: journal header cut short by a crash; started it again")
        return
    elif v1_snapshot or f.looks_like_v1_journal(data):
        scan = f.scan_v1(data, 0)
        _settle(path, out, recover, _problems(scan, torn_is_damage=False))
        out.aside.setdefault(path.name, "v1")
        if not v1_snapshot:
            out.notes.append(f"{path}: format 1 state, migrated to format {f.FORMAT_VERSION}")
    else:
        scan, problems = _bad_header(data, "journal", torn_is_damage=False)
        _settle(path, out, recover, problems)
    if scan.torn is not None:
        out.notes.append(
            f"{path}: dropped an incomplete last record at bytes {scan.torn.start}-"
            f"{scan.torn.end} ({scan.torn.reason}); it was never acknowledged"
        )
    out.records.extend(scan.records)
    out.kept[path.name] = len(scan.records)
