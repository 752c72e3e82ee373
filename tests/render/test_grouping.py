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


def _refused_by_name(name: str, line: int) -> Diagnostic:
    """A custom constraint on resource.name: the message quotes the name it saw."""
    address = f"projects/proj-a/topics/{name}"
    return Diagnostic(
        "specs/t.yaml", line, 42, Severity.ERROR, "org-custom-constraint",
        f"topic {address} breaks custom constraint custom.noTestTopics; the condition saw "
        f'resource.name = "{address}"', None, topic=address,
    )


def test_a_finding_that_quotes_its_topic_as_evidence_is_not_grouped() -> None:
    """Once grouped as 'the condition saw resource.name = "each of these 2 topics"':
    the value a condition saw is evidence, and differs from topic to topic."""
    found = [_refused_by_name("a-test", 3), _refused_by_name("b-test", 7)]
    assert all(isinstance(d, Diagnostic) for d in grouped(found))
    lines = report.text(found).splitlines()
    assert lines == [
        'specs/t.yaml:3:42: error[org-custom-constraint]: topic projects/proj-a/topics/a-test '
        'breaks custom constraint custom.noTestTopics; the condition saw resource.name = '
        '"projects/proj-a/topics/a-test"',
        'specs/t.yaml:7:42: error[org-custom-constraint]: topic projects/proj-a/topics/b-test '
        'breaks custom constraint custom.noTestTopics; the condition saw resource.name = '
        '"projects/proj-a/topics/b-test"',
    ]
    assert "each of these" not in report.text(found)


def test_a_hint_that_names_the_topic_in_a_command_is_not_grouped() -> None:
    def one(name: str, line: int) -> Diagnostic:
        address = f"projects/proj-a/topics/{name}"
        return Diagnostic(
            "specs/t.yaml", line, 9, Severity.WARNING, "existing-cmek-required",
            f"topic {address} exists without a key", f"run `gcloud pubsub topics describe "
            f"{address}`", topic=address,
        )

    assert all(isinstance(d, Diagnostic) for d in grouped([one("a", 3), one("b", 9)]))
