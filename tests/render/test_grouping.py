"""A finding that repeats across topics is one finding in text (and markdown), with
each topic at its own line; json, github and sarif keep one per topic and line; every
piece of data in a group is escaped as in a single line (docs/architecture.md,
"Escaping")."""

from __future__ import annotations

import json

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.render import diagnostics as report
from reconciler.render.grouping import Group, grouped


def _keyless(name: str, line: int, file: str = "specs/t.yaml") -> Diagnostic:
    address = f"projects/proj-a/topics/{name}"
    return Diagnostic(
        file, line, 9, Severity.WARNING, "existing-cmek-required",
        f"topic {address} exists without a customer-managed key, which project proj-a "
        "requires of a new topic",
        "to comply, declare kmsKeyName", topic=address,
    )


def test_one_finding_about_several_topics_is_one_group_in_text() -> None:
    found = [_keyless("orders", 3), _keyless("refunds", 9), _keyless("audit", 15)]
    assert report.text(found).splitlines() == [
        "projects/proj-a: warning[existing-cmek-required]: each of these 3 topics exists "
        "without a customer-managed key, which project proj-a requires of a new topic "
        "(to comply, declare kmsKeyName)",
        "  specs/t.yaml:3:9: projects/proj-a/topics/orders",
        "  specs/t.yaml:9:9: projects/proj-a/topics/refunds",
        "  specs/t.yaml:15:9: projects/proj-a/topics/audit",
    ]


def test_machines_keep_one_finding_per_topic_and_line() -> None:
    found = [_keyless("orders", 3), _keyless("refunds", 9)]
    data = json.loads(report.as_json(found))
    assert [(d["line"], d["topic"]) for d in data] == [
        (3, "projects/proj-a/topics/orders"), (9, "projects/proj-a/topics/refunds"),
    ]
    assert all(d["message"].startswith(f"topic {d['topic']} exists") for d in data)
    annotations = report.REPORTERS["github"](found).splitlines()
    assert len(annotations) == 2 and "line=9" in annotations[1]
    assert "projects/proj-a/topics/refunds" in annotations[1]
    results = json.loads(report.as_sarif(found))["runs"][0]["results"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"]
            for r in results] == [3, 9]


def test_what_differs_besides_the_topic_is_not_grouped() -> None:
    other_project = Diagnostic(
        "specs/t.yaml", 21, 9, Severity.WARNING, "existing-cmek-required",
        "topic projects/proj-b/topics/orders exists without a customer-managed key, which "
        "project proj-a requires of a new topic", "to comply, declare kmsKeyName",
        topic="projects/proj-b/topics/orders",
    )
    as_error = Diagnostic(
        "specs/t.yaml", 27, 9, Severity.ERROR, "existing-cmek-required",
        _keyless("b", 27).message.replace("/b ", "/c "), "to comply, declare kmsKeyName",
        topic="projects/proj-a/topics/c",
    )
    unnamed = Diagnostic("specs/t.yaml", 30, 1, Severity.WARNING, "region-duplicate",
                         "'us-east1' is listed twice", topic=None)
    items = grouped([_keyless("orders", 3), other_project, as_error, unnamed])
    assert not any(isinstance(i, Group) for i in items)
    assert len(report.text([_keyless("orders", 3), other_project]).splitlines()) == 2


def test_a_group_escapes_its_data() -> None:
    found = [_keyless("orders", 3, file="specs/\x1b[2Jevil.yaml"), _keyless("refunds", 9)]
    text = report.text(found)
    assert "\x1b" not in text
    assert "  specs/\\x1b[2Jevil.yaml:3:9: projects/proj-a/topics/orders" in text
