"""Golden files for the three plan renderers.

One fixed plan, built here (creates, an update whose region set changes, a delete, an
update to 'every region', drift, warnings and an error), is rendered as text (no
colour), markdown and JSON and compared byte for byte with tests/render/golden/.

When a renderer changes on purpose, regenerate the files and review the diff:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/render

(the run then rewrites the files and fails, so that a regeneration is never silent).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.plan.model import (
    DRIFT_ALLOWS_DISALLOWED,
    Change,
    Drift,
    FieldChange,
    Fingerprints,
    Plan,
    Request,
    ResourceChange,
)
from reconciler.render import render

GOLDEN = Path(__file__).parent / "golden"
UPDATE = bool(os.environ.get("UPDATE_GOLDEN"))

P = "acme-prod"


def _policy(regions: list[str], eit: bool = False) -> dict[str, object]:
    return {"allowed_persistence_regions": regions, "enforce_in_transit": eit}


def fixed_plan() -> Plan:
    """Every kind of thing a plan shows, with fixed values (no clock, no server)."""
    created_after = {
        "name": f"projects/{P}/topics/orders",
        "labels": {"team": "shop", "reconcile-managed": "true"},
        "message_storage_policy": _policy(["europe-west1", "europe-west4"], True),
    }
    create = ResourceChange(
        address=f"projects/{P}/topics/orders",
        project=P,
        topic="orders",
        change=Change(
            ["create"],
            None,
            created_after,
            [
                FieldChange(
                    "labels", None, created_after["labels"], added=["reconcile-managed", "team"]
                ),
                FieldChange(
                    "message_storage_policy",
                    None,
                    created_after["message_storage_policy"],
                    added=["europe-west1", "europe-west4"],
                ),
            ],
        ),
        request=Request("CreateTopic", created_after),
        source={"file": "specs/orders.yaml", "line": 1},
    )
    before = {
        "name": f"projects/{P}/topics/payments",
        "labels": {"team": "pay", "tier": "1"},
        "message_storage_policy": _policy(["europe-west1", "us-east1"]),
    }
    after = {
        "name": f"projects/{P}/topics/payments",
        "labels": {"team": "payments", "reconcile-managed": "true"},
        "message_storage_policy": _policy(["europe-west1", "europe-west3"]),
    }
    update = ResourceChange(
        address=f"projects/{P}/topics/payments",
        project=P,
        topic="payments",
        change=Change(
            ["update"],
            before,
            after,
            [
                FieldChange(
                    "labels", before["labels"], after["labels"], ["reconcile-managed"], ["tier"]
                ),
                FieldChange(
                    "message_storage_policy",
                    before["message_storage_policy"],
                    after["message_storage_policy"],
                    added=["europe-west3"],
                    removed=["us-east1"],
                ),
            ],
        ),
        update_mask=["labels", "message_storage_policy"],
        request=Request("UpdateTopic", after, ["labels", "message_storage_policy"]),
        reasons=["adopting an existing topic"],
        warnings=["narrowing the regions does not move messages already stored in us-east1"],
    )
    widen_before = {
        "name": f"projects/{P}/topics/audit",
        "labels": {"reconcile-managed": "true"},
        "message_storage_policy": _policy(["us-central1"]),
    }
    widen_after = {**widen_before, "message_storage_policy": None}
    widen = ResourceChange(
        address=f"projects/{P}/topics/audit",
        project=P,
        topic="audit",
        change=Change(
            ["update"],
            widen_before,
            widen_after,
            [
                FieldChange(
                    "message_storage_policy",
                    widen_before["message_storage_policy"],
                    None,
                    removed=["us-central1"],
                    note="recomputed from the org policy",
                )
            ],
        ),
        update_mask=["message_storage_policy"],
        request=Request("UpdateTopic", widen_after, ["message_storage_policy"]),
    )
    gone = {
        "name": f"projects/{P}/topics/legacy",
        "labels": {"reconcile-managed": "true"},
        "message_storage_policy": _policy(["europe-west1"]),
    }
    delete = ResourceChange(
        address=f"projects/{P}/topics/legacy",
        project=P,
        topic="legacy",
        change=Change(["delete"], gone, None),
        request=Request("DeleteTopic", {"name": gone["name"]}),
    )
    same = {"name": f"projects/{P}/topics/steady", "labels": {}, "message_storage_policy": None}
    noop = ResourceChange(
        address=f"projects/{P}/topics/steady",
        project=P,
        topic="steady",
        change=Change(["no-op"], same, same),
    )
    return Plan(
        resource_changes=[create, update, widen, delete, noop],
        diagnostics=[
            Diagnostic(
                "specs/orders.yaml",
                12,
                7,
                Severity.WARNING,
                "publisher-rerouted",
                "publisher region us-east1 is not allowed; messages are rerouted to europe-west1",
            ),
            Diagnostic(
                "specs/billing.yaml",
                9,
                5,
                Severity.ERROR,
                "org-location-denied",
                "region asia-east1 is not allowed by constraints/gcp.resourceLocations",
                hint="choose a region the org policy allows",
            ),
        ],
        drift=[
            Drift(
                address=f"projects/{P}/topics/unmanaged",
                category=DRIFT_ALLOWS_DISALLOWED,
                message="the topic allows us-west1, which the org policy no longer allows",
                fix="set the storage policy in the spec, or update the topic's regions",
                disallowed=["us-west1"],
            )
        ],
        fingerprints=Fingerprints(
            topics={f"projects/{P}/topics/orders": "absent"},
            org_policy={P: "0" * 64},
        ),
        target="emulator 127.0.0.1:8085",
        prune=True,
        created_at="2026-01-02T03:04:05+00:00",
    )


@pytest.mark.parametrize(
    ("fmt", "name"), [("text", "plan.txt"), ("markdown", "plan.md"), ("json", "plan.json")]
)
def test_plan_renders_as_the_golden_file(fmt: str, name: str) -> None:
    rendered = render(fixed_plan(), fmt, color=False)
    path = GOLDEN / name
    if UPDATE:
        path.write_text(rendered, encoding="utf-8")
        pytest.fail(f"rewrote {path}; review the diff, then run without UPDATE_GOLDEN")
    assert rendered == path.read_text(encoding="utf-8"), (
        f"{fmt} rendering differs from {path}; if intended: UPDATE_GOLDEN=1 pytest tests/render"
    )


def test_json_golden_file_reads_back_as_the_same_plan() -> None:
    """The JSON golden file is a plan file: it loads back to the plan it was made from,
    typed diagnostics included."""
    data = json.loads((GOLDEN / "plan.json").read_text(encoding="utf-8"))
    back = Plan.from_json(data)
    assert back == fixed_plan()
    assert back.has_errors
    assert [d.code for d in back.errors] == ["org-location-denied"]
    assert back.diagnostics[1].hint == "choose a region the org policy allows"


def test_colour_changes_only_the_escape_codes() -> None:
    """Text with colour is the golden text once the ANSI codes are stripped."""
    import click

    coloured = render(fixed_plan(), "text", color=True)
    assert "\x1b[" in coloured
    assert click.unstyle(coloured) == (GOLDEN / "plan.txt").read_text(encoding="utf-8")
