"""`reconcile import` against the loopback server through the real clients: the
written tree validates, and plans as nothing but the ownership-label adoption."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from reconciler.hedging import labels as hl
from reconciler.hedging.profile import HedgingProfile, RetryTimeouts
from reconciler.orgpolicy.model import Policy
from reconciler.ownership import OWNER_LABEL

PROJECT = "acme-import"
OTHER = "acme-import-two"


def create(
    client: Any,
    project: str,
    topic: str,
    labels: dict[str, str] | None = None,
    regions: list[str] | None = None,
    eit: bool = False,
) -> None:
    body: dict[str, Any] = {"name": f"projects/{project}/topics/{topic}", "labels": labels or {}}
    if regions is not None:
        body["message_storage_policy"] = {
            "allowed_persistence_regions": regions,
            "enforce_in_transit": eit,
        }
    client.create_topic(request=body)


def seed(client: Any) -> None:
    inline = hl.encode(HedgingProfile(250, 20, 0.05), RetryTimeouts(3000, 90_000))
    named = hl.encode(HedgingProfile(500, 100, 0.05, name="low-latency"), RetryTimeouts())
    create(
        client,
        PROJECT,
        "orders",
        {"team": "payments", "tier": "1"},
        ["us-east1", "us-central1"],
        eit=True,
    )
    create(client, PROJECT, "plain")
    create(client, PROJECT, "hedged", {"team": "payments", **inline}, ["europe-west1"])
    create(client, PROJECT, "named", named)
    create(client, OTHER, "also-named", {**named, "owner": "x"})


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_import_validates_and_plans_only_the_adoption(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    seed(publisher_client)
    addr = local_server.address
    out = tmp_path / "imported"

    result = run_cli(
        "import", "--project", PROJECT, "--project", OTHER, "--out", str(out), "--emulator", addr
    )
    assert result.exit_code == 0, result.stderr
    assert {p.name for p in out.iterdir()} == {f"{PROJECT}.yaml", f"{OTHER}.yaml"}
    text = (out / f"{PROJECT}.yaml").read_text()
    assert text.startswith("# Imported by `reconcile import`")
    by_name = {d["metadata"]["name"]: d for d in docs(out / f"{PROJECT}.yaml")}
    assert set(by_name) == {"low-latency", "orders", "plain", "hedged", "named"}

    orders = by_name["orders"]["spec"]
    assert orders["labels"] == {"team": "payments", "tier": "1"}
    assert orders["messageStoragePolicy"] == {
        "allowedPersistenceRegions": ["us-central1", "us-east1"],
        "enforceInTransit": True,
    }
    assert "publishers" not in orders
    assert by_name["plain"]["spec"] == {}  # no policy, no labels: nothing managed
    hedged = by_name["hedged"]["spec"]
    # enforceInTransit false is the proto default: written as absent, never `false`.
    assert hedged["messageStoragePolicy"] == {  # off, as live: written, not left to the org
        "allowedPersistenceRegions": ["europe-west1"], "enforceInTransit": False,
    }
    assert not any(k.startswith("reconcile-") for k in hedged["labels"])
    assert hedged["publishers"] == {
        "retry": {"initialRpcTimeout": "3s", "totalTimeout": "1m30s"},
        "hedging": {"hedgeDelay": "250ms", "maxTokens": 20, "refillRatio": 0.05},
    }
    # A named profile is defined once (first project's file) and referenced by name.
    assert by_name["named"]["spec"]["publishers"]["hedging"] == "low-latency"
    assert by_name["low-latency"]["kind"] == "HedgingProfile"
    assert by_name["low-latency"]["spec"] == {
        "hedgeDelay": "500ms",
        "maxTokens": 100,
        "refillRatio": 0.05,
    }
    other = docs(out / f"{OTHER}.yaml")
    assert [d["kind"] for d in other] == ["Topic"]
    assert other[0]["spec"]["publishers"]["hedging"] == "low-latency"

    assert run_cli("validate", str(out)).exit_code == 0

    plan = run_cli("plan", str(out), "--emulator", addr, "--format", "json")
    assert plan.exit_code == 0, plan.stderr
    changes = json.loads(plan.stdout)["resource_changes"]
    assert len(changes) == 5
    for rc in changes:
        # The only change a fresh import plans: adopting the topic (ownership labels).
        assert rc["change"]["actions"] == ["update"], rc["address"]
        assert rc["update_mask"] == ["labels"]
        before = rc["change"]["before"]["labels"]
        after = rc["change"]["after"]["labels"]
        assert after == {**before, hl.OWNERSHIP_LABEL: hl.OWNERSHIP_VALUE, OWNER_LABEL: "default"}


def test_topic_filter_and_reuse_of_an_existing_profile(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    seed(publisher_client)
    out = tmp_path / "specs"
    out.mkdir()
    (out / "profiles.yaml").write_text(
        "apiVersion: reconcile.pubsub/v1\nkind: HedgingProfile\n"
        "metadata: {name: low-latency}\n"
        "spec: {hedgeDelay: 500ms, maxTokens: 100, refillRatio: 0.05}\n"
    )
    result = run_cli(
        "import",
        "--project",
        PROJECT,
        "--topic",
        "named",
        "--topic",
        f"projects/{PROJECT}/topics/plain",
        "--out",
        str(out),
        "--emulator",
        local_server.address,
    )
    assert result.exit_code == 0, result.stderr
    written = docs(out / f"{PROJECT}.yaml")
    assert [d["metadata"]["name"] for d in written] == ["named", "plain"]
    assert written[0]["spec"]["publishers"]["hedging"] == "low-latency"
    assert run_cli("validate", str(out)).exit_code == 0


def test_refuses_to_overwrite_without_force(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    create(publisher_client, PROJECT, "orders", {"team": "a"})
    out = tmp_path / "specs"
    out.mkdir()
    target = out / f"{PROJECT}.yaml"
    target.write_text("# hand-written, keep me\n")
    args = ["import", "--project", PROJECT, "--out", str(out), "--emulator", local_server.address]

    refused = run_cli(*args)
    assert refused.exit_code == 1
    assert "refusing to overwrite" in refused.stderr and str(target) in refused.stderr
    assert "--force" in refused.stderr
    assert target.read_text() == "# hand-written, keep me\n"

    forced = run_cli(*args, "--force")
    assert forced.exit_code == 0, forced.stderr
    assert docs(target)[0]["metadata"] == {"project": PROJECT, "name": "orders"}


def test_unknown_topic_is_an_error_and_writes_nothing(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    create(publisher_client, PROJECT, "orders")
    out = tmp_path / "specs"
    result = run_cli(
        "import",
        "--project",
        PROJECT,
        "--topic",
        "nope",
        "--out",
        str(out),
        "--emulator",
        local_server.address,
    )
    assert result.exit_code == 1
    assert "nope" in result.stderr and "nothing written" in result.stderr
    assert not out.exists()


def test_an_out_that_names_a_file_is_refused_before_any_read(
    run_cli: Any, local_server: Any, tmp_path: Path
) -> None:
    """Once `--out specs/acme.yaml` made a directory named acme.yaml holding
    specs/acme.yaml/PROJECT.yaml."""
    out = tmp_path / "specs" / "acme.yaml"
    local_server.counters.reset()
    result = run_cli("import", "--project", PROJECT, "--out", str(out),
                     "--emulator", local_server.address)
    assert result.exit_code == 1
    assert f"--out {out} looks like a file name" in result.stderr
    assert "nothing was written" in result.stderr
    assert not out.exists() and not out.parent.exists()
    assert local_server.counters.get("ListTopics") == 0


def test_damaged_hedging_labels_are_reported_not_fatal(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    create(publisher_client, PROJECT, "partial", {hl.DELAY: "500", "team": "a"})
    out = tmp_path / "specs"
    result = run_cli(
        "import", "--project", PROJECT, "--out", str(out), "--emulator", local_server.address
    )
    assert result.exit_code == 0, result.stderr
    assert "incomplete" in result.stderr
    assert docs(out / f"{PROJECT}.yaml")[0]["spec"] == {"labels": {"team": "a"}}
    assert run_cli("validate", str(out)).exit_code == 0


def test_empty_project_writes_nothing(run_cli: Any, local_server: Any, tmp_path: Path) -> None:
    out = tmp_path / "specs"
    result = run_cli(
        "import", "--project", PROJECT, "--out", str(out), "--emulator", local_server.address
    )
    assert result.exit_code == 0
    assert "no topics" in result.stderr
    assert not (out / f"{PROJECT}.yaml").exists()


def test_a_profile_name_with_other_settings_is_written_inline_with_a_warning() -> None:
    from reconciler.backends.base import ObservedTopic
    from reconciler.spec.export import build_documents

    def topic(name: str, delay: int) -> ObservedTopic:
        labels = hl.encode(HedgingProfile(delay, 10, 0.1, name="fast"), RetryTimeouts())
        return ObservedTopic(f"projects/{PROJECT}/topics/{name}", {"labels": labels})

    result = build_documents({PROJECT: [topic("a", 200), topic("b", 300)]})
    kinds = [(d["kind"], d["metadata"]["name"]) for d in result.documents[PROJECT]]
    assert kinds == [("HedgingProfile", "fast"), ("Topic", "a"), ("Topic", "b")]
    b = result.documents[PROJECT][2]["spec"]["publishers"]["hedging"]
    assert b == {"hedgeDelay": "300ms", "maxTokens": 10, "refillRatio": 0.1}
    assert len(result.warnings) == 1 and "fast" in result.warnings[0]


def test_a_topic_with_the_policy_the_org_policy_computes_is_imported_as_inherit(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    """Issue 26 item 9: not the computed region list (21 regions under in:us-locations,
    restricted us-central2 among them, which would then warn), but `inherit`."""
    project = "acme-import-inherit"
    local_server.put_policy(
        Policy.from_dict(
            {
                "name": f"projects/{project}/policies/gcp.resourceLocations",
                "spec": {"rules": [{"values": {"allowedValues": ["in:us-locations"]}}]},
            }
        )
    )
    create(publisher_client, project, "computed")  # the server computes its policy
    create(publisher_client, project, "pinned", regions=["us-east1"])
    live = publisher_client.get_topic(request={"topic": f"projects/{project}/topics/computed"})
    assert len(live.message_storage_policy.allowed_persistence_regions) > 1  # computed
    out = tmp_path / "imported"
    addr = local_server.address
    result = run_cli("import", "--project", project, "--out", str(out), "--emulator", addr)
    assert result.exit_code == 0, result.stderr
    by_name = {d["metadata"]["name"]: d["spec"] for d in docs(out / f"{project}.yaml")}
    assert by_name["computed"] == {"messageStoragePolicy": "inherit"}
    assert by_name["pinned"] == {
        "messageStoragePolicy": {
            "allowedPersistenceRegions": ["us-east1"], "enforceInTransit": False,
        }
    }
    assert "us-central2" not in (out / f"{project}.yaml").read_text()
    plan = run_cli("plan", str(out), "--emulator", addr, "--format", "json")
    assert plan.exit_code == 0, plan.stderr
    assert "us-central2" not in plan.stderr  # no restricted-region warning
    for rc in json.loads(plan.stdout)["resource_changes"]:
        assert rc["update_mask"] == ["labels"], rc  # only the adoption
