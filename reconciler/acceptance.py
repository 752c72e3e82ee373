"""Accepted findings: a warning a team knows of and lives with, recorded with a reason
(and maybe an expiry date), counted and listed but no longer reported as a problem.

An acceptance is written in the spec tree (reconciler/spec/acceptances.py reads
both forms): a comment in a document, `# reconcile: accept CODE reason="..."
until=YYYY-MM-DD`, which covers the findings of that document (those placed in it,
and those about the topic it declares), or an entry of the Owner document's
`acceptedFindings`, which covers the tree or the topics its patterns name. SARIF
calls the first an `inSource` suppression and the second an `external` one.

`settle(findings, acceptances, ...)` is the one place that applies them, for
`validate` and for `plan`:

- a warning an acceptance covers becomes an `AcceptedDiagnostic` (the finding and
  the acceptance): counted and listed, never an annotation, a SARIF result with a
  `suppressions` entry;
- an error is never accepted: an error is a call the service would refuse (a
  create or update this plan sends) or a spec reconcile cannot act on. It stays an
  error, and its message says that the acceptance does not apply;
- an acceptance past its date covers nothing and is reported (`acceptance-expired`),
  and one that covers nothing where the run could have seen its finding is reported
  (`acceptance-unused`), each at the acceptance's line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Literal

from reconciler.diagnostics import Diagnostic, Severity

# Where an acceptance is written, in SARIF's words (a suppression's `kind`).
Kind = Literal["inSource", "external"]

# The findings a team may accept: warnings about a topic's values against the org
# policy, the service or the location data. Each family is one finding as validate
# and plan name it: `validate` cannot know whether a topic exists and reports the
# `org-*` form; `plan` reports an existing topic's standing violation as `existing-*`.
# Accepting either name accepts both.
FAMILIES: tuple[tuple[str, ...], ...] = (
    ("org-cmek-required", "existing-cmek-required"),
    ("org-cmek-key-project", "existing-cmek-key-project"),
    ("org-location-denied", "existing-location-denied"),
    ("org-in-transit", "existing-in-transit-off"),
    ("org-custom-constraint", "existing-custom-constraint"),
    ("org-under-value",),
    ("publisher-region-denied",),
    ("publisher-region-rerouted",),
    ("region-restricted",),
    ("region-duplicate",),
    ("drift-allows-disallowed-locations",),
    ("drift-misses-allowed-locations",),
    ("drift-allowed-and-disallowed-stale",),
    # Where message data goes (reconciler/messagepaths.py): a team that knows where its
    # model, its exports' destinations and its source's boundary are may say so.
    ("org-transforms-disabled", "existing-transforms-disabled"),
    ("transform-model-region",),
    ("transform-exports-at-plan", "export-location-unjudged"),
    ("ingestion-region-unjudged",),
)
ACCEPTABLE: frozenset[str] = frozenset(code for family in FAMILIES for code in family)
# The codes only a plan reports (it reads the live topics): validate never sees them.
PLAN_ONLY: frozenset[str] = frozenset(
    c for c in ACCEPTABLE if c.startswith(("existing-", "drift-"))
)
# The codes that need the org policy (a snapshot for validate).
ORG_POLICY: frozenset[str] = frozenset(
    c for c in ACCEPTABLE if c.startswith(("org-", "existing-", "publisher-"))
)

EXPIRED = "acceptance-expired"
UNUSED = "acceptance-unused"
INVALID = "acceptance-invalid"


def family(code: str) -> tuple[str, ...]:
    """Every name of the finding `code` names (itself alone if it has no other)."""
    return next((f for f in FAMILIES if code in f), (code,))


@dataclass(frozen=True)
class Acceptance:
    """One accepted finding as written: its code, reason and last day (`until`,
    YYYY-MM-DD, inclusive; None: no expiry), where it is written (file, line, col,
    `kind`) and what it covers: a comment (`inSource`) its document, the file's
    lines `first` to `last` and the topic the document declares (`topic`); an Owner
    document's entry (`external`) the topics its patterns match (`topics`,
    `projects/P/topics/T` with `*` and `?`; empty: the whole tree)."""

    code: str
    reason: str
    until: str | None
    file: str
    line: int
    col: int
    kind: Kind
    first: int = 0
    last: int = 0
    topic: str | None = None
    topics: list[str] = field(default_factory=list)

    def covers(self, d: Diagnostic) -> bool:
        if d.code not in family(self.code):
            return False
        if self.kind == "inSource":
            if d.topic is not None and d.topic == self.topic:
                return True
            return d.file == self.file and self.first <= d.line <= self.last
        if not self.topics:
            return True
        return d.topic is not None and any(fnmatchcase(d.topic, p) for p in self.topics)

    def expired(self, today: str) -> bool:
        """Past its last day (`today` and `until` are YYYY-MM-DD: compared as text)."""
        return self.until is not None and self.until < today

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def justification(self) -> str:
        """The reason, and its expiry when it has one (SARIF's `justification`)."""
        return self.reason + (f" (until {self.until})" if self.until else "")

    @property
    def scope(self) -> str:
        """What it covers, in words."""
        if self.kind == "inSource":
            return f"topic {self.topic}" if self.topic else "this document"
        return ", ".join(self.topics) if self.topics else "the whole spec tree"


@dataclass(frozen=True, eq=False)  # Diagnostic's equality and order (the acceptance aside)
class AcceptedDiagnostic(Diagnostic):
    """A finding an acceptance covers: listed and counted, not a problem."""

    # Written as it is (`validate --format json`, a plan's `accepted[]`): one shape.
    acceptance: Acceptance | None = field(default=None, compare=False)


def is_accepted(d: Diagnostic) -> bool:
    return isinstance(d, AcceptedDiagnostic)


def today() -> str:
    """The day acceptances are judged on, YYYY-MM-DD: today in UTC, as CI runners keep
    time (no `datetime` import: validate's cold start stays light)."""
    return time.strftime("%Y-%m-%d", time.gmtime())


_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_day(text: str) -> bool:
    """Is `text` a calendar day written YYYY-MM-DD (2027-02-29 is not)?"""
    if len(text) != 10 or text[4] != "-" or text[7] != "-":
        return False
    year, month, day = text[:4], text[5:7], text[8:]
    if not (year.isdigit() and month.isdigit() and day.isdigit() and year.isascii()
            and month.isascii() and day.isascii()):
        return False
    y, m, d = int(year), int(month), int(day)
    if not 1 <= m <= 12 or d < 1:
        return False
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    return d <= (28 if m == 2 and not leap else _DAYS[m - 1])


def settle(
    findings: Sequence[Diagnostic],
    acceptances: Iterable[Acceptance],
    judged: Callable[[Acceptance], bool] = lambda a: True,
    on: str | None = None,
) -> list[Diagnostic]:
    """The findings with the acceptances applied (in order), then the acceptances'
    own findings: expired ones, and unused ones for which `judged` says the run could
    have seen their finding (validate without a snapshot cannot see an org-policy
    finding; a plan of some projects cannot see another project's)."""
    day = on or today()
    active: list[Acceptance] = []
    own: list[Diagnostic] = []
    for a in acceptances:
        if a.expired(day):
            own.append(_expired(a))
        else:
            active.append(a)
    used: set[int] = set()  # of the acceptances, by id
    # An acceptance whose findings an earlier one took -> that one (a duplicate).
    shadowed: dict[int, Acceptance] = {}
    out: list[Diagnostic] = []
    for d in findings:
        covering = next((a for a in active if a.covers(d)), None)
        if covering is None or is_accepted(d):
            out.append(d)
            continue
        used.add(id(covering))
        for later in active:
            if later is not covering and id(later) not in shadowed and later.covers(d):
                shadowed[id(later)] = covering
        if d.severity is Severity.ERROR:
            out.append(replace(d, message=d.message + _not_hidden(covering)))
        else:
            out.append(AcceptedDiagnostic(
                d.file, d.line, d.col, d.severity, d.code, d.message, d.hint, d.topic,
                acceptance=covering,
            ))
    own += [_unused(a, shadowed.get(id(a))) for a in active
            if id(a) not in used and judged(a)]
    return out + own


def seen_by_validate(a: Acceptance, org_checked: bool) -> bool:
    """Could validate have reported a finding this acceptance covers? Not one only a
    plan reports (drift), nor an org-policy finding when no snapshot was read
    (`org_checked` False)."""
    names = set(family(a.code))
    if names <= PLAN_ONLY:
        return False
    return org_checked or not names <= ORG_POLICY


def seen_by_plan(a: Acceptance, projects: Collection[str]) -> bool:
    """Could a plan of `projects` have reported a finding this acceptance covers? Not
    one about a topic of a project it did not plan (`plan --project`)."""
    if a.kind == "inSource":
        return a.topic is None or _project(a.topic) in projects
    return not a.topics or any(_project(p) in projects for p in a.topics)


def _project(topic: str) -> str:
    return topic.split("/")[1] if topic.count("/") >= 3 else ""


def counts(diagnostics: Iterable[Diagnostic]) -> tuple[int, int, int]:
    """(errors, warnings, accepted): an accepted finding is counted apart."""
    errors = warnings = accepted = 0
    for d in diagnostics:
        if is_accepted(d):
            accepted += 1
        elif d.is_error:
            errors += 1
        else:
            warnings += 1
    return errors, warnings, accepted


def _not_hidden(a: Acceptance) -> str:
    return (
        f" [not accepted: the acceptance at {a.where} does not apply to an error, a call "
        "this plan would send that the service refuses (or a spec reconcile cannot act "
        "on); fix the value]"
    )


def _expired(a: Acceptance) -> Diagnostic:
    return Diagnostic(
        a.file, a.line, a.col, Severity.WARNING, EXPIRED,
        f"the acceptance of {a.code} for {a.scope} expired after {a.until} (reason: "
        f"{a.reason}), so its findings are reported again",
        "fix what it accepted, or write a later `until` if the reason still holds",
    )


def _unused(a: Acceptance, taken_by: Acceptance | None = None) -> Diagnostic:
    if taken_by is not None:  # a duplicate: its findings are accepted, by another
        return Diagnostic(
            a.file, a.line, a.col, Severity.WARNING, UNUSED,
            f"the acceptance of {a.code} for {a.scope} accepts no finding: each one it "
            f"covers is accepted already, by the acceptance at {taken_by.where}",
            "remove one of the two, or narrow its topics",
        )
    return Diagnostic(
        a.file, a.line, a.col, Severity.WARNING, UNUSED,
        f"the acceptance of {a.code} for {a.scope} accepts no finding: there is none "
        "to accept",
        "remove it if what it was written for is fixed, or correct its code or topics",
    )
