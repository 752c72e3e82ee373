"""Helpers shared by the plan tests (importable: conftest modules are not)."""

from __future__ import annotations

from typing import Any

from reconciler.acceptance import Acceptance, AcceptedDiagnostic
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.plan.model import (
    BacklogRef,
    Change,
    Drift,
    Fingerprints,
    LeftBehind,
    Plan,
    PlanTarget,
    ProjectConstraints,
    ResourceChange,
    SubscriptionRef,
)
from reconciler.plan.reasons import Reason, ReasonKind


def every_kind_plan(projects: list[str] | None = None) -> Plan:
    """A plan with one change of each action, a diagnostic, drift and fingerprints
    (with `projects`, also the organizations, the custom constraints judged and an
    accepted finding)."""
    labels = {"team": "a", "reconcile-managed": "true"}
    policy = {"allowed_persistence_regions": ["us-east1"], "enforce_in_transit": True}
    create = ResourceChange(
        "projects/p/topics/new", "p", "new",
        Change(["create"], None, {"labels": labels, "message_storage_policy": policy},
               computed=["message_storage_policy"]),
        source={"file": "specs/p.yaml", "line": 3},
    )
    schema = {"schema": "projects/p/schemas/s", "encoding": "JSON", "first_revision_id": "",
              "last_revision_id": ""}
    update = ResourceChange(
        "projects/p/topics/old", "p", "old",
        Change(["update"], {"labels": {}, "message_storage_policy": None,
                            "message_retention_duration": "600s"},
               {"labels": labels, "message_storage_policy": None,
                "message_retention_duration": "172800s",
                "kms_key_name": "projects/p/locations/l/keyRings/r/cryptoKeys/k",
                "schema_settings": schema}),
        update_mask=["labels", "message_retention_duration", "kms_key_name",
                     "schema_settings"],
        reasons=[Reason(ReasonKind.ADOPT)], warnings=["careful"],
        left_behind=[LeftBehind(
            "us-west1", 3, 30, 60, backlogs=[BacklogRef("s", 3, 30, 60)],
            distinct_messages_min=3, distinct_messages_max=3,
            clears="to clear us-west1: acknowledge s's backlog",
        )],
        unmanaged=["1 message transform(s): javascript_udf redact"],
    )
    delete = ResourceChange(
        "projects/p/topics/gone", "p", "gone",
        Change(["delete"], {"labels": labels, "message_storage_policy": None}, None),
        subscriptions=[SubscriptionRef("projects/p/subscriptions/s", "pull", "ACTIVE", 2)],
        left_behind_unknown="metrics unavailable",
    )
    noop = ResourceChange(
        "projects/p/topics/same", "p", "same",
        Change(["no-op"], {"labels": labels, "message_storage_policy": policy},
               {"labels": labels, "message_storage_policy": policy}),
        source={"file": "specs/p.yaml", "line": 9},
    )
    return Plan(
        resource_changes=[create, update, delete, noop],
        diagnostics=[Diagnostic("specs/p.yaml", 3, 1, Severity.WARNING, "w-code", "a warning")],
        accepted=[AcceptedDiagnostic(
            "specs/p.yaml", 9, 9, Severity.WARNING, "existing-cmek-required", "no key",
            topic="projects/p/topics/same", acceptance=Acceptance(
                "org-cmek-required", "keys rotate", "2999-01-31", "specs/p.yaml", 8, 3,
                "inSource", first=7, last=12, topic="projects/p/topics/same",
            ),
        )] if projects else [],
        drift=[Drift("projects/p/topics/same", "misses-allowed-locations", "m", "f",
                     missing=["us-west1"])],
        fingerprints=Fingerprints(
            {"projects/p/topics/new": "absent"}, {"p": "ab" * 32},
            {"p": "organizations/1"} if projects else None,
        ),
        target=PlanTarget("emulator", "127.0.0.1:1"),
        prune=True,
        created_at="2026-11-30T16:00:00+00:00",
        projects=projects or [],
        custom_constraints={"p": ProjectConstraints(
            ["custom.a (enforced)"], ["custom.b (dry-run): its condition does not compile"]
        )} if projects else {},
    )


def publish_from(publisher: Any, topic: str, region: str, count: int) -> None:
    """`count` 10-byte messages published as if from `region` (the local server reads
    the client's region from CLIENT_REGION_KEY)."""
    from reconciler.localserver import CLIENT_REGION_KEY

    publisher.publish(
        topic=topic,
        messages=[{"data": b"x" * 10} for _ in range(count)],
        metadata=[(CLIENT_REGION_KEY, region)],
        retry=None,
    )
