"""Golden files for the three plan renderers.

One fixed plan, built here (creates, an update whose region set changes, a delete, an
update to 'every region', drift, warnings and an error), is rendered as text (no
colour), markdown and JSON and compared byte for byte with tests/render/golden/.

When a renderer changes on purpose, regenerate the files and review the diff:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/render

(the run then rewrites the files and fails, so that a regeneration is never silent).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from reconciler.codec import from_json
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.plan.model import (
    DRIFT_ALLOWS_DISALLOWED,
    Action,
    Change,
    Drift,
    Fingerprints,
    Plan,
    PlanTarget,
    ResourceChange,
)
from reconciler.plan.reasons import Reason, ReasonKind
from reconciler.render.formats import render

GOLDEN = Path(__file__).parent / "golden"
UPDATE = bool(os.environ.get("UPDATE_GOLDEN"))

P = "acme-prod"


def _policy(regions: list[str], eit: bool = False) -> dict[str, object]:
    return {"allowed_persistence_regions": regions, "enforce_in_transit": eit}


def _change(
    topic: str,
    action: Action,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    mask: list[str] | None = None,
    computed: list[str] | None = None,
    **extra: Any,
) -> ResourceChange:
    """A change (its request and fields are derived from it by the model)."""
    return ResourceChange(
        address=f"projects/{P}/topics/{topic}",
        project=P,
        topic=topic,
        change=Change([action], before, after, computed=computed or []),
        update_mask=mask or [],
        **extra,
    )


def fixed_plan() -> Plan:
    """Every kind of thing a plan shows, with fixed values (no clock, no server)."""
    create = _change(
        "orders",
        "create",
        None,
        {
            "labels": {"reconcile-managed": "true", "team": "shop"},
            "message_storage_policy": _policy(["europe-west1", "europe-west4"], True),
        },
        source={"file": "specs/orders.yaml", "line": 1},
    )
    update = _change(
        "payments",
        "update",
        {
            "labels": {"owner": "ops", "team": "pay", "tier": "1"},
            "message_storage_policy": _policy(["europe-west1", "us-east1"]),
        },
        {
            "labels": {"owner": "ops", "reconcile-managed": "true", "team": "payments"},
            "message_storage_policy": _policy(["europe-west1", "europe-west3"]),
        },
        ["labels", "message_storage_policy"],
        reasons=[Reason(ReasonKind.ADOPT)],
        warnings=["narrowing the regions does not move messages already stored in us-east1"],
    )
    widen_before = {
        "labels": {"reconcile-managed": "true"},
        "message_storage_policy": _policy(["us-central1"]),
    }
    widen = _change(
        "audit",
        "update",
        widen_before,
        {**widen_before, "message_storage_policy": None},
        ["message_storage_policy"],
        computed=["message_storage_policy"],
        reasons=[Reason(ReasonKind.MISSES_ALLOWED)],
    )
    delete = _change(
        "legacy",
        "delete",
        {
            "labels": {"reconcile-managed": "true"},
            "message_storage_policy": _policy(["europe-west1"]),
        },
        None,
        reasons=[Reason(ReasonKind.PRUNE, "default")],
    )
    same = {"labels": {}, "message_storage_policy": None}
    noop = _change("steady", "no-op", same, same)
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
        target=PlanTarget("emulator", "127.0.0.1:8085", "snapshot", "org-policy.yaml", "ab" * 32),
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
    back = from_json(Plan, (GOLDEN / "plan.json").read_bytes())
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
