"""docs/authentication.md lists, per command, every IAM permission it uses (issue 46:
the plan account lacked `roles/monitoring.viewer`, the permission to list custom
constraints and to read projects and folders). Each command is run against the local
server through the real clients, in the case that makes every call it can make (a
change that removes a region with messages stored there, a prune, an organization
with a custom constraint, a project under a folder); the calls the server counts are
mapped to permissions by the page's own table of calls (each row citing Google's
reference), and the page's permissions column for the command must be exactly those.
`ci checklist` names the roles of the `plan` and `apply` rows for its two accounts."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import pytest
from google.api_core.exceptions import NotFound

from reconciler.localserver import CLIENT_REGION_KEY
from reconciler.ownership import OWNER_LABEL, OWNERSHIP_LABEL
from tests.specs_support import owner_doc, topic_doc

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "authentication.md"
PROJECT = "proj-a"
ORG = "organizations/4646"
OWN = {OWNERSHIP_LABEL: "true", OWNER_LABEL: "team-a"}
PERMISSION = re.compile(r"`([a-z]+\.[a-zA-Z]+\.[a-zA-Z]+)`")
TOPIC = f"projects/{PROJECT}/topics/orders"
TARGET = ("--emulator",)  # the server's address follows
# Each command's runs: what a user types (the last run's calls are the command's; the
# earlier ones make what it needs, e.g. the saved plan).
RUNS: dict[str, list[list[tuple[str, ...]]]] = {
    "plan": [[("plan", "specs")]],
    "apply": [
        [("apply", "specs", "--auto-approve", "--prune")],
        [("plan", "specs", "--prune", "--out", "plan.json"), ("apply", "plan.json",
                                                              "--auto-approve")],
    ],
    "residency": [[("residency", "specs")]],
    "import": [[("import", "--project", PROJECT, "--out", "imported")]],
    "policy pull": [[("policy", "pull", "--project", PROJECT, "--out", "pulled.yaml")]],
    "hedging advise": [[("hedging", "advise", "--topic", TOPIC)]],
}


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table(text: str, header: str) -> list[list[str]]:
    lines = text.splitlines()
    start = lines.index(header)
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(_cells(line))
    return rows


def documented() -> tuple[dict[str, set[str]], dict[str, str], dict[str, str]]:
    """(command -> its permissions, call -> its permission, command -> its roles cell)."""
    text = PAGE.read_text()
    rows = _table(text, "| command | calls | permissions | least-privilege roles |")
    permissions: dict[str, set[str]] = {}
    roles: dict[str, str] = {}
    for command, _calls, listed, granted in rows:
        name = command.strip("`")
        found = set(PERMISSION.findall(listed))
        if listed.startswith("`plan`'s"):
            found |= permissions["plan"]
        permissions[name], roles[name] = found, granted
    calls = {
        call.strip("`"): PERMISSION.findall(permission)[0]
        for call, _method, permission, _source in _table(
            text, "| call | API method | permission | source |"
        )
    }
    return permissions, calls, roles


def estate(hierarchy: Any, orgpolicy_client: Any, publisher_client: Any,
           subscriber_client: Any) -> None:
    """PROJECT under a folder under ORG, which enforces a custom constraint on topics;
    two owned topics in two regions: `orders` subscribed, with messages in us-east1,
    `retired` in no spec (pruned)."""
    folder = hierarchy.folder(ORG, "Platform")
    hierarchy.project(PROJECT, folder)
    orgpolicy_client.create_custom_constraint(parent=ORG, custom_constraint={
        "name": f"{ORG}/customConstraints/custom.noTmp",
        "resource_types": ["pubsub.googleapis.com/Topic"],
        "method_types": ["CREATE", "UPDATE"],
        "condition": "'tmp' in resource.labels", "action_type": "DENY",
    })
    orgpolicy_client.create_policy(parent=ORG, policy={
        "name": f"{ORG}/policies/custom.noTmp", "spec": {"rules": [{"enforce": True}]},
    })
    for name in ("orders", "retired"):
        publisher_client.create_topic(request={
            "name": f"projects/{PROJECT}/topics/{name}", "labels": OWN,
            "message_storage_policy": {
                "allowed_persistence_regions": ["us-east1", "us-central1"],
            },
        })
    subscriber_client.create_subscription(request={
        "name": f"projects/{PROJECT}/subscriptions/orders-pull", "topic": TOPIC,
    })
    publisher_client.publish(
        topic=TOPIC, messages=[{"data": b"x" * 10} for _ in range(3)],
        metadata=[(CLIENT_REGION_KEY, "us-east1")], retry=None,
    )


@pytest.mark.parametrize("command", RUNS)
def test_the_page_lists_every_permission_the_command_uses(
    command: str, run_cli: Any, local_server: Any, hierarchy: Any, orgpolicy_client: Any,
    publisher_client: Any, subscriber_client: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    permissions, calls, _ = documented()
    made: set[str] = set()
    for i, steps in enumerate(RUNS[command]):
        where = tmp_path / str(i)
        (where / "specs").mkdir(parents=True)
        monkeypatch.chdir(where)
        if i == 0:
            estate(hierarchy, orgpolicy_client, publisher_client, subscriber_client)
        else:  # the same estate again: what the first run changed, undone
            _restore(publisher_client)
        (where / "specs" / "topics.yaml").write_text("---\n".join([
            owner_doc("team-a"),
            topic_doc("orders", PROJECT, storage=(["us-central1"], False)),
            topic_doc("refunds", PROJECT),
        ]))
        for n, args in enumerate(steps):
            if n == len(steps) - 1:
                local_server.counters.reset()
            result = run_cli(*args, *TARGET, local_server.address)
            assert result.exit_code == 0, (args, result.stdout, result.stderr)
        made |= set(local_server.counters.snapshot())
    unlisted = made - set(calls)
    assert not unlisted, f"calls docs/authentication.md does not map: {sorted(unlisted)}"
    assert permissions[command] == {calls[c] for c in made}, sorted(made)


def _restore(publisher_client: Any) -> None:
    """Back to the estate's topics: `retired` again, `refunds` gone, `orders` in both
    regions (the first run applied the specs)."""
    for name in ("refunds", "retired"):
        with contextlib.suppress(NotFound):  # absent already
            publisher_client.delete_topic(request={"topic": f"projects/{PROJECT}/topics/{name}"})
    publisher_client.create_topic(request={
        "name": f"projects/{PROJECT}/topics/retired", "labels": OWN,
        "message_storage_policy": {"allowed_persistence_regions": ["us-east1", "us-central1"]},
    })
    publisher_client.update_topic(request={
        "topic": {"name": TOPIC, "labels": OWN, "message_storage_policy": {
            "allowed_persistence_regions": ["us-east1", "us-central1"]}},
        "update_mask": {"paths": ["labels", "message_storage_policy"]},
    })


def test_the_checklist_names_the_roles_of_the_plan_and_apply_rows(run_cli: Any) -> None:
    _, _, roles = documented()
    spec = "pubsub-reconcile @ git+https://github.com/acme/reconcile@" + "a" * 40
    out = run_cli("ci", "checklist", str(ROOT / "specs"), "--install", spec).stdout
    for variable, command in (("GCP_PLAN_SA", "plan"), ("GCP_APPLY_SA", "apply")):
        line = next(x for x in out.splitlines() if f"- [ ] {variable} = " in x)
        wanted = set(re.findall(r"roles/[a-zA-Z.]+[a-zA-Z]", roles[command]))
        assert wanted and wanted <= set(re.findall(r"roles/[a-zA-Z.]+[a-zA-Z]", line)), line
