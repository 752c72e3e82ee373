"""Findings that repeat across topics, grouped for people: one finding per code and
project, worded once, with each topic it concerns listed at its own file and line.

Adopting many topics under the same constraint gives the same finding on each of them
(37 topics without a key under the CMEK constraint: 37 lines that differ only in the
topic's name). The text reporters (validate's, plan's stderr and its Warnings and
Errors, the pull-request comment) show them as one; `json`, `github` and `sarif` keep
one finding per topic and line, each complete, for machines and annotations.

A diagnostic about a topic names it (`Diagnostic.topic`, and its message says
`topic projects/P/topics/T` or the name alone). Two such diagnostics are one finding
when severity, code, project and the words around the name (message and hint) are
the same; the group's message says "each of these N topics" where each said its own.
A finding that names its topic anywhere else (a value the condition saw, a command in
its hint) is its own: grouped, the stand-in would replace the evidence too.

    grouped(diagnostics) -> [Diagnostic | Group]   in order, each group where its
                                                    first topic was
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.names import split_topic_name

# Where the topic's name was, in a message's generic form (a control character: a
# message never holds one of its own, or it would have been escaped before).
_SLOT = "\x00"


@dataclass(frozen=True)
class Group:
    """One finding about several topics of one project (`members`, two or more, in
    order), worded for all of them."""

    severity: Severity
    code: str
    project: str
    message: str
    hint: str | None
    members: tuple[Diagnostic, ...]


def _generic(text: str, topic: str) -> str:
    return text.replace(f"topic {topic}", _SLOT).replace(topic, _SLOT)


def _key(d: Diagnostic) -> tuple[object, ...] | None:
    """What makes two diagnostics one finding; None for one that is not about a topic
    (or does not name it)."""
    topic = d.topic
    if topic is None or d.message.count(topic) != 1:
        # Not about a topic, or names it besides as its subject (a condition that saw
        # resource.name quotes it): "each of these N topics" would stand in for the
        # evidence too, so each topic's finding is said on its own.
        return None
    if d.hint is not None and d.hint.replace(f"topic {topic}", "").count(topic):
        return None  # the hint names it in a command or a value: its own, too
    split = split_topic_name(topic)
    if split is None:
        return None
    hint = None if d.hint is None else _generic(d.hint, topic)
    return d.severity, d.code, split[0], _generic(d.message, topic), hint


def grouped(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic | Group]:
    """The diagnostics in order, those that are one finding about several topics
    made into a `Group` at the place of the first of them."""
    members: dict[tuple[object, ...], list[Diagnostic]] = {}
    keys = [_key(d) for d in diagnostics]
    for d, key in zip(diagnostics, keys, strict=True):
        if key is not None:
            members.setdefault(key, []).append(d)
    out: list[Diagnostic | Group] = []
    for d, key in zip(diagnostics, keys, strict=True):
        found = members.get(key) if key is not None else None
        if found is None or len(found) < 2:
            out.append(d)
        elif found[0] is d:
            assert key is not None
            _, _, project, message, hint = key
            each = f"each of these {len(found)} topics"
            out.append(Group(
                d.severity, d.code, str(project), str(message).replace(_SLOT, each),
                None if hint is None else str(hint).replace(_SLOT, each), tuple(found),
            ))
    return out
