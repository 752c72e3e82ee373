"""Why a change is planned, as typed values: what the differ and prune decide, and what
apply reads back (the owner a change takes a topic over from), with no text parsed.

The plan document writes each reason as the text it always had (`str(reason)`), and
reading a plan file turns the text back into the value (`Reason.from_text`); a text
that is none of the forms is not a reason, and the plan file is refused. A `Reason` is
a text type of reconciler/codec.py (`from_text`, `TEXT_PATTERN`), not a dataclass,
which the codec would write as an object.

    Reason(ReasonKind.ADOPT_FROM, "payments")   "adopt-from:payments"
"""

from __future__ import annotations

import re
from enum import StrEnum

from reconciler.ownership import OWNER_LABEL


class ReasonKind(StrEnum):
    ADOPT = "adopt"
    """A label update that gives an unowned topic this tree's owner label."""
    ADOPT_FROM = "adopt-from"
    """A label update that takes over a topic another spec tree owns (`subject`): apply
    refuses it unless told `--adopt-from SUBJECT`."""
    ALLOWS_DISALLOWED = "allows-disallowed-locations"
    """An `inherit` topic recomputed: it allows locations the org policy does not."""
    MISSES_ALLOWED = "misses-allowed-locations"
    """An `inherit` topic recomputed: it misses locations the org policy allows."""
    BOTH_STALE = "allowed-and-disallowed-stale"
    """An `inherit` topic recomputed: both of the above."""
    IN_TRANSIT = "in-transit-differs-from-org-policy"
    """An `inherit` topic recomputed: its in-transit enforcement is not the org's."""
    PRUNE = "prune"
    """A delete: the topic is not declared and this tree (`subject`, its owner) owns it."""
    DETACHES = "detaches"
    """A delete that may detach subscriptions, and what allows it (`subject`)."""


# Each kind's text in the plan document; "{}" stands for the subject.
TEXT: dict[ReasonKind, str] = {
    ReasonKind.ADOPT: "adopt",
    ReasonKind.ADOPT_FROM: "adopt-from:{}",
    ReasonKind.ALLOWS_DISALLOWED: "allows-disallowed-locations",
    ReasonKind.MISSES_ALLOWED: "misses-allowed-locations",
    ReasonKind.BOTH_STALE: "allowed-and-disallowed-stale",
    ReasonKind.IN_TRANSIT: "in-transit-differs-from-org-policy",
    ReasonKind.PRUNE: f"prune: not declared, owned by this spec tree ({OWNER_LABEL}={{}})",
    ReasonKind.DETACHES: "its subscriptions may be detached: allowed by {}",
}


def _escape(text: str) -> str:
    """`text` matched literally, escaping only the characters that are syntax in both
    Python's and ECMA-262's regular expressions (the schema's pattern is read by
    both)."""
    return re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", text)


def _form(text: str) -> str:
    before, brace, after = text.partition("{}")
    return _escape(before) + ("(.+)" if brace else "") + _escape(after)


_FORMS = [(kind, re.compile(_form(text))) for kind, text in TEXT.items()]
EXPECTED = "a reason: " + ", ".join(repr(text.replace("{}", "X")) for text in TEXT.values())
PATTERN = "^(?:" + "|".join(f"(?:{form.pattern})" for _, form in _FORMS) + ")$"


class Reason:
    """One reason a change is planned: its kind, and what it names (an owner, what
    allows a delete; "" for the kinds that name nothing). Immutable and compared by
    value."""

    __slots__ = ("kind", "subject")
    TEXT_PATTERN = PATTERN  # what reconciler/codec.py checks its text against
    kind: ReasonKind
    subject: str

    def __init__(self, kind: ReasonKind, subject: str = "") -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "subject", subject)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Reason is read-only: {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Reason):
            return NotImplemented
        return (self.kind, self.subject) == (other.kind, other.subject)

    def __hash__(self) -> int:
        return hash((self.kind, self.subject))

    def __repr__(self) -> str:
        return f"Reason({self.kind!r}, {self.subject!r})"

    def __str__(self) -> str:
        return TEXT[self.kind].format(self.subject)

    @classmethod
    def from_text(cls, text: str) -> Reason:
        """The reason a plan document's text says; ValueError if it says none."""
        for kind, form in _FORMS:
            found = form.fullmatch(text)
            if found is not None:
                return cls(kind, found.group(1) if form.groups else "")
        raise ValueError(f"expected {EXPECTED}, not {text!r}")


DRIFT_REASONS = {
    kind.value: kind
    for kind in (ReasonKind.ALLOWS_DISALLOWED, ReasonKind.MISSES_ALLOWED, ReasonKind.BOTH_STALE)
}
