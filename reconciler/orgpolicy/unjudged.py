"""Custom constraints that a command could not judge: why, how severe that is, and the
user's explicit opt-out (`--allow-unjudged`), so that `validate`, `plan` and `apply`
treat a constraint they could not judge the same way and never as a pass.

    Gate(live, require, allow)               how a command treats them
    gate.severity(why, mode, constraint)     error or warning (the opt-out recorded)
    gate.note(why, constraint)               what a let-through finding adds to its message
    gate.report() -> Diagnostic | None       the opt-out's own report (whenever it is given)
    uncompilable_hint(error)                 what to do about a condition that does not compile
    AllowUnjudged.parse(values)              --allow-unjudged CONSTRAINT|all, repeatable

Why a constraint may go unjudged (`Why`), each with its diagnostic code:

- NO_ANCESTRY (`org-custom-no-ancestry`): the project's organization is unknown, so
  its custom constraints were not read at all;
- UNREADABLE (`org-custom-unreadable`): reading them failed (a permission, the
  network);
- UNCOMPILABLE (`org-custom-uncompilable`): the condition uses what reconcile's CEL
  library does not have (reconciler/orgpolicy/cel/, `ConditionError.unsupported`);
- NOT_READ (`org-custom-not-checked`): an UpdateTopic's verdict depends on a field of
  the live topic that the plan does not read;
- UNEVALUABLE (`org-custom-unevaluable`): the condition cannot be evaluated on the
  topic (a field it reads is not set, an undocumented presentation decides);
- AT_PLAN (`org-custom-at-plan`, validate only): only the live topic can decide it,
  so `plan` does; never a failure.

What each command does with them: a dry-run constraint only warns (the service would
only log). `plan` and `apply` (`live`) fail on every other one (an unknown
organization counts as enforced: it may enforce anything). `validate` fails on
UNEVALUABLE (the spec decides, and the verdict cannot be known), and with
`--require-org-policy` (`require`) on NO_ANCESTRY and UNCOMPILABLE too; it warns of
the others. `--allow-unjudged CONSTRAINT` (or `all`) turns those failures into
warnings that say so, and the run reports that the opt-out let them through (or that
it let nothing through): an opt-out is never silent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from reconciler.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:  # the evaluator loads only where a condition is compiled
    from reconciler.orgpolicy.cel import ConditionError

ALL = "all"
FLAG = "--allow-unjudged"


class Why(Enum):
    NO_ANCESTRY = "org-custom-no-ancestry"
    UNREADABLE = "org-custom-unreadable"
    UNCOMPILABLE = "org-custom-uncompilable"
    NOT_READ = "org-custom-not-checked"
    UNEVALUABLE = "org-custom-unevaluable"
    AT_PLAN = "org-custom-at-plan"

    @property
    def code(self) -> str:
        return self.value


ALLOWED = "org-custom-unjudged-allowed"  # the opt-out's own report
# The codes of what could not be judged (org-custom-unevaluable included: the
# condition could not be evaluated on the topic).
UNJUDGED_CODES = frozenset(w.code for w in Why if w is not Why.AT_PLAN)
# Where the opt-out's hint points (docs/validate.md's section on constraints not judged).
ALLOW_HINT = (
    f"to let the service decide at the call instead, pass {FLAG} CONSTRAINT or all: "
    "docs/validate.md#custom-constraints-not-judged"
)


def uncompilable_hint(error: ConditionError) -> str:
    """What to do about a condition reconcile cannot compile."""
    if error.unsupported:
        return (
            "reconcile cannot judge it until its CEL library has what the condition "
            "uses; have the condition written with the functions reconcile knows, "
            "docs/custom-constraints.md#the-cel-that-conditions-use; " + ALLOW_HINT
        )
    return "correct the condition, which the service refuses too; " + ALLOW_HINT


class AllowUnjudgedError(ValueError):
    """A --allow-unjudged value that names no custom constraint."""


@dataclass(frozen=True)
class AllowUnjudged:
    """The custom constraints (`custom.NAME`) a user accepts not being judged, or all
    of them (`everything`); nothing by default."""

    constraints: frozenset[str] = frozenset()
    everything: bool = False

    @classmethod
    def parse(cls, values: Iterable[str]) -> AllowUnjudged:
        """`custom.NAME` or `all` each (also `customConstraints/custom.NAME` and the
        full organizations/ORG/customConstraints/custom.NAME, as the service and
        gcloud write them); AllowUnjudgedError names a value that is neither."""
        names: set[str] = set()
        everything = False
        for value in values:
            text = value.strip()
            if text == ALL:
                everything = True
                continue
            from reconciler.orgpolicy.custom import id_problem

            constraint_id = text.rsplit("/", 1)[-1]
            problem = id_problem(constraint_id)
            if problem is not None:
                raise AllowUnjudgedError(
                    f"{FLAG} {value!r}: {problem}; give a custom constraint id such as "
                    f"custom.euOnly, or `{ALL}`"
                )
            names.add(constraint_id)
        return cls(frozenset(names), everything)

    def __bool__(self) -> bool:
        return self.everything or bool(self.constraints)

    def covers(self, constraint_id: str | None) -> bool:
        """Does the opt-out accept `constraint_id` going unjudged (None: constraints
        not known by name, such as all of an organization whose custom constraints
        were not read: only `all` covers them)?"""
        if self.everything:
            return True
        return constraint_id is not None and constraint_id in self.constraints

    def describe(self) -> str:
        """The flag as given, for messages: `--allow-unjudged all`,
        `--allow-unjudged custom.a --allow-unjudged custom.b`."""
        values = [ALL] if self.everything else sorted(self.constraints)
        return " ".join(f"{FLAG} {v}" for v in values)


@dataclass
class Gate:
    """How one command run treats constraints it could not judge (see the module's
    docstring); it also records what the opt-out let through, for `report`. One gate
    serves a whole run (plan: its validation and the plan)."""

    live: bool = False
    require: bool = False
    allow: AllowUnjudged = field(default_factory=AllowUnjudged)
    where: str = ""  # the file the opt-out's report names: the spec tree
    let_through: list[str] = field(default_factory=list)

    def fails(self, why: Why, mode: str | None) -> bool:
        """Would the command fail on it, without the opt-out? (`mode`: "enforced",
        "dry-run", or None when not known: counted as enforced.)"""
        if mode == "dry-run" or why is Why.AT_PLAN:
            return False
        if self.live or why is Why.UNEVALUABLE:
            return True
        return self.require and why in (Why.NO_ANCESTRY, Why.UNCOMPILABLE)

    def severity(self, why: Why, mode: str | None, constraint_id: str | None,
                 what: str = "") -> Severity:
        """Error where the command fails on it, unless the opt-out covers the
        constraint (recorded, with `what` naming the finding for the report)."""
        if not self.fails(why, mode):
            return Severity.WARNING
        if self.allow.covers(constraint_id):
            self.let_through.append(what or (constraint_id or "custom constraints"))
            return Severity.WARNING
        return Severity.ERROR

    def note(self, why: Why, mode: str | None, constraint_id: str | None) -> str:
        """What a finding the opt-out let through adds to its message ("" otherwise)."""
        if not self.fails(why, mode) or not self.allow.covers(constraint_id):
            return ""
        return (
            f"; not judged, and let through by {self.allow.describe()}: the service "
            "decides at the call"
        )

    def report(
        self, where: str | None = None, known: Iterable[str] | None = None,
        known_as: str = "that the org-policy snapshot defines",
    ) -> Diagnostic | None:
        """The opt-out's own report, whenever it was given: what it let through (each
        finding is also marked), or that it let nothing through; at `where` (default:
        the gate's). `known`: the ids of the custom constraints the run read (the
        snapshot's, or those in effect for the planned projects: `known_as` says
        which): a named one that is not among them is said to be unknown, with the
        nearest known id (a misspelt opt-out in CI would otherwise read as one that is
        no longer needed)."""
        if not self.allow:
            return None
        unknown = _unknown(self.allow.constraints, known, known_as)
        if unknown and not self.let_through:
            message = (
                f"{self.allow.describe()} was given, and let nothing through: {unknown}"
            )
        elif self.let_through:
            n = len(self.let_through)
            named = ", ".join(dict.fromkeys(self.let_through))
            message = (
                f"{self.allow.describe()}: {n} custom-constraint finding"
                f"{'s' if n != 1 else ''} that reconcile could not judge did not stop "
                f"this run ({named}); the service decides them when the calls are made"
            ) + (f"; {unknown}" if unknown else "")
        else:
            message = (
                f"{self.allow.describe()} was given, and let nothing through: every "
                "constraint it names was judged or needed no judging"
            )
        return Diagnostic(
            self.where if where is None else where, 0, 0, Severity.WARNING, ALLOWED, message,
            f"remove {FLAG} once reconcile can judge these constraints",
        )


def _unknown(named: frozenset[str], known: Iterable[str] | None, known_as: str) -> str:
    """What a report says of the named constraints that are not `known` ("" when each
    one is, or when nothing was read to know them by)."""
    if known is None:
        return ""
    ids = sorted(set(known))
    missing = sorted(named - set(ids))
    if not missing:
        return ""
    import difflib

    said = []
    for constraint_id in missing:
        close = difflib.get_close_matches(constraint_id, ids, n=1, cutoff=0.6)
        said.append(constraint_id + (f" (did you mean {close[0]}?)" if close else ""))
    verb = "is" if len(missing) == 1 else "are"
    return f"{', '.join(said)} {verb} not a custom constraint {known_as}"
