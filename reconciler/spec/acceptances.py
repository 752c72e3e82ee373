"""Accepted findings as the spec tree writes them (reconciler/acceptance.py applies
them): a comment in a document, or an entry of the Owner document's
`acceptedFindings`. Both must carry a reason and may carry an expiry date; each
malformed one is an error at its file and line (`acceptance-invalid`), so that a typo
never accepts nothing in silence.

The comment, as checkov's and tflint's inline skips, is written where the finding is:

    metadata: {project: acme-payments, name: legacy}
    # reconcile: accept org-cmek-required reason="keys rotate in Q3" until=2027-03-31

`# reconcile:` starts it (a comment: after a space or at the start of a line), then
`accept CODE`, then `reason="..."` (double or single quotes; required) and
`until=YYYY-MM-DD` (optional, the last day, UTC), in any order. It covers its
document: the findings placed in it and those about the topic it declares.

YAML drops comments, so the loader hands each file's text here
(`InlineReader.read`); a file without `reconcile:` in it costs one substring search.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import replace

from reconciler.acceptance import ACCEPTABLE, INVALID, Acceptance, is_day
from reconciler.diagnostics import Diagnostics
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.documents import OwnerDoc
from reconciler.spec.owner import entry_problem
from reconciler.spec.positioned import PositionedDiagnostics
from reconciler.spec.tree import Located
from reconciler.spec.values import did_you_mean
from reconciler.yamlio import Document

MARKER = "reconcile:"
FORM = '`# reconcile: accept CODE reason="..." until=YYYY-MM-DD` (until optional)'
ENTRIES = ("spec", "acceptedFindings")
# Patterns, compiled (and cached by `re`) only when a file holds MARKER: a tree without
# acceptances pays nothing for them.
_COMMENT = r"(?m)(?:^|(?<=[ \t]))#[ \t]*reconcile:(?P<rest>.*)$"
_SEPARATOR = r"(?m)^(?:---|\.\.\.)(?:[ \t]|$)"
_PAIR = r"""(?P<key>[A-Za-z_]+)=(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\s"']+))"""
_KEYS = ("reason", "until")


def problem(code: str, reason: str | None, until: str | None) -> str | None:
    """What is wrong with an acceptance's code, reason or date, if anything."""
    if code not in ACCEPTABLE:
        return (
            f"{code!r} is not a finding that can be accepted{did_you_mean(code, ACCEPTABLE)} "
            f"(accepted can be: {', '.join(sorted(ACCEPTABLE))}; an error never is)"
        )
    if reason is None or not _legible(reason):
        return (
            f"the acceptance of {code} has no reason: say why it is accepted "
            '(reason="..."), for the reviewer and the auditor'
        )
    if until is not None and not is_day(until):
        return f"until {until!r} is not a date: write YYYY-MM-DD, e.g. 2027-03-31"
    return None


def _written_empty(owner: Located[OwnerDoc], index: int) -> bool:
    """Does entry `index` write `topics: []` (the model reads it as omitted)?"""
    data = owner.doc.data
    spec = data.get("spec") if isinstance(data, dict) else None
    entries = spec.get("acceptedFindings") if isinstance(spec, dict) else None
    if not isinstance(entries, list) or index >= len(entries):
        return False
    entry = entries[index]
    return isinstance(entry, dict) and entry.get("topics") == []


def _legible(reason: str) -> bool:
    """Does the reason hold a character a reader sees? (Not only spaces, nor only
    format characters such as a zero-width space, which look like no reason.)"""
    return any(
        not ch.isspace() and ch.isprintable() and unicodedata.category(ch) != "Cf"
        for ch in reason
    )


class InlineReader:
    """Collects the acceptance comments of each file the loader reads."""

    def __init__(self, diags: Diagnostics) -> None:
        self.diags = diags
        self.found: list[Acceptance] = []

    def read(self, text: str, file: str, documents: Sequence[Document]) -> None:
        if MARKER not in text or not documents:
            return
        starts = [d.start.line for d in documents]
        separators = [text.count("\n", 0, m.start()) + 1 for m in re.finditer(_SEPARATOR, text)]
        spans = _spans(starts, separators, text.count("\n") + 1)
        for m in re.finditer(_COMMENT, text):
            line = text.count("\n", 0, m.start()) + 1
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            span = next((s for s in spans if s[0] <= line <= s[1]), spans[-1])
            self._comment(m["rest"], file, line, col, span)

    def _comment(
        self, rest: str, file: str, line: int, col: int, span: tuple[int, int]
    ) -> None:
        words = rest.strip().split(None, 2)
        if not words or words[0] != "accept":
            said = words[0] if words else ""
            self.diags.error(
                file, line, col, INVALID,
                f"a `# reconcile:` comment says {said!r}, which reconcile does not read; "
                f"write {FORM}",
            )
            return
        if len(words) < 2 or "=" in words[1]:
            self.diags.error(
                file, line, col, INVALID, f"the acceptance names no finding: write {FORM}"
            )
            return
        code = words[1]
        values: dict[str, str] = {}
        tail = words[2] if len(words) > 2 else ""
        for m in re.finditer(_PAIR, tail):
            key = m["key"]
            if key not in _KEYS or key in values:
                what = "twice" if key in values else "unknown"
                self.diags.error(
                    file, line, col, INVALID,
                    f"{key}= is {what} in the acceptance of {code}; write {FORM}",
                )
                return
            values[key] = next(v for v in (m["dq"], m["sq"], m["bare"]) if v is not None)
        left = re.sub(_PAIR, "", tail).strip()
        if left:
            self.diags.error(
                file, line, col, INVALID,
                f"the acceptance of {code} has {left!r}, which is not key=value: write {FORM}",
            )
            return
        found = problem(code, values.get("reason"), values.get("until"))
        if found is not None:
            self.diags.error(file, line, col, INVALID, found)
            return
        self.found.append(Acceptance(
            code, values["reason"].strip(), values.get("until"), file, line, col,
            "inSource", first=span[0], last=span[1],
        ))


def _spans(starts: list[int], separators: list[int], last: int) -> list[tuple[int, int]]:
    """Each document's lines, first to last: from just after the separator before its
    start (or line 1) to just before the separator of the next document."""
    before = [max((s for s in separators if s < start), default=0) for start in starts]
    firsts = [1, *(b + 1 for b in before[1:])]
    ends = [max(b - 1, f) for b, f in zip(before[1:], firsts, strict=False)]
    return list(zip(firsts, [*ends, last], strict=True))


def owner_acceptances(
    owners: Sequence[Located[OwnerDoc]], diags: Diagnostics
) -> list[Acceptance]:
    """The well-formed `acceptedFindings` entries of the (first) Owner document; each
    malformed one an error at its line."""
    if not owners or owners[0].is_invalid(ENTRIES):
        return []
    owner = owners[0]
    report = PositionedDiagnostics(owner, diags)
    out = []
    for i, entry in enumerate(owner.model.spec.accepted_findings):
        path = (*ENTRIES, i)
        if owner.invalid_within(path):
            continue  # its shape is reported already
        found = problem(entry.code, entry.reason, entry.until)
        if found is None and not entry.topics and _written_empty(owner, i):
            report.error(
                (*path, "topics"), INVALID,
                f"the acceptance of {entry.code} lists no topics: an empty `topics` "
                "accepts nothing here (a list a template left empty?); omit `topics` to "
                "accept every such finding in the tree, or list the topics",
            )
            continue
        if found is None:
            bad = [(t, entry_problem(t)) for t in entry.topics]
            bad = [(t, p) for t, p in bad if p is not None]
            if bad:
                found = f"topics entry {bad[0][0]!r}: {bad[0][1]}"
        if found is not None:
            report.error(path, INVALID, found)
            continue
        mark = owner.doc.mark_for(path)
        out.append(Acceptance(
            entry.code, entry.reason.strip(), entry.until, owner.doc.file, mark.line,
            mark.col, "external", topics=list(entry.topics),
        ))
    return out


def with_topics(
    acceptances: Iterable[Acceptance], topics: Iterable[DesiredTopic]
) -> tuple[Acceptance, ...]:
    """Each comment's acceptance with the topic its document declares, if any."""
    declared: dict[str, list[tuple[int, str]]] = {}
    for t in topics:
        declared.setdefault(t.file, []).append((t.line, t.address))
    out = []
    for a in acceptances:
        if a.kind == "inSource":
            topic = next(
                (name for line, name in declared.get(a.file, ()) if a.first <= line <= a.last),
                None,
            )
            a = replace(a, topic=topic)
        out.append(a)
    return tuple(out)
