"""Why a change is planned, as typed values: what the differ and prune decide, and what
apply reads back (the owner a change takes a topic over from), with no text parsed.

The plan document writes each reason as the text it always had (`str(reason)`), and
reading a plan file turns the text back into the value (`Reason.from_text`); a text
that is none of the forms is not a reason, and the plan file is refused.

    Reason(ReasonKind.ADOPT_FROM, "payments")   "adopt-from:payments"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from reconciler.ownership import OWNER_LABEL
from reconciler.plan.shape import Pattern


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


def _form(text: str) -> str:
    before, brace, after = text.partition("{}")
    return re.escape(before) + ("(.+)" if brace else "") + re.escape(after)


_FORMS = [(kind, re.compile(_form(text))) for kind, text in TEXT.items()]
PATTERN = Pattern(
    "|".join(f"(?:{form.pattern})" for _, form in _FORMS),
    "a reason: " + ", ".join(repr(text.replace("{}", "X")) for text in TEXT.values()),
)


@dataclass(frozen=True)
class Reason:
    """One reason a change is planned: its kind, and what it names (an owner, what
    allows a delete; "" for the kinds that name nothing)."""

    kind: ReasonKind
    subject: str = ""

    TEXT_PATTERN = PATTERN  # what plan/shape.py writes and checks it as

    def __str__(self) -> str:
        return TEXT[self.kind].format(self.subject)

    @classmethod
    def from_text(cls, text: str) -> Reason:
        """The reason a plan document's text says; ValueError if it says none."""
        for kind, form in _FORMS:
            found = form.fullmatch(text)
            if found is not None:
                return cls(kind, found.group(1) if form.groups else "")
        raise ValueError(f"not a reason: {text!r}")


DRIFT_REASONS = {
    kind.value: kind
    for kind in (ReasonKind.ALLOWS_DISALLOWED, ReasonKind.MISSES_ALLOWED, ReasonKind.BOTH_STALE)
}
