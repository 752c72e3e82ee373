"""Ownership per spec tree (issue 21, item 2): two trees split one project; each records
its owner on the topics it creates or adopts, `--prune` deletes only its own, a topic
another tree owns is named in the plan and taken over only with `--adopt-from`, and
topics labelled by a reconcile before owners are claimed or left alone, never pruned.
Through the CLI against the local server, read back with the real PublisherClient."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reconciler.ownership import OWNER_LABEL, OWNERSHIP_LABEL
from tests.specs_support import owner_doc, topic_doc

MUTATING = ("CreateTopic", "UpdateTopic", "DeleteTopic")
LEGACY = {OWNERSHIP_LABEL: "true"}  # what a reconcile before owners left on its topics


def tree(root: Path, *docs: str) -> Path:
    """A spec tree of its own (two trees live side by side in one test)."""
    root.mkdir(exist_ok=True)
    (root / "topics.yaml").write_text("---\n".join(docs))
    return root


def labels(client: Any, name: str) -> dict[str, str] | None:
    topics = client.list_topics(request={"project": "projects/proj-a"})
    found = {t.name.rsplit("/", 1)[1]: dict(t.labels) for t in topics}
    return found.get(name)


def mutations(server: Any) -> int:
    return sum(server.counters.get(m) for m in MUTATING)


def apply(run_cli: Any, server: Any, root: Path, *extra: str) -> Any:
    return run_cli("apply", str(root), "--emulator", server.address, "--auto-approve", *extra)


def test_two_trees_split_a_project_and_prune_only_their_own(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    team_a = tree(tmp_path / "a", owner_doc("team-a"), topic_doc("orders-a"))
    team_b = tree(tmp_path / "b", owner_doc("team-b"), topic_doc("orders-b"))
    assert apply(run_cli, local_server, team_a).exit_code == 0
    assert apply(run_cli, local_server, team_b).exit_code == 0
    assert (labels(publisher_client, "orders-a") or {})[OWNER_LABEL] == "team-a"
    assert (labels(publisher_client, "orders-b") or {})[OWNER_LABEL] == "team-b"

    local_server.counters.reset()
    run = apply(run_cli, local_server, team_b, "--prune")
    assert run.exit_code == 0, run.stdout + run.stderr
    assert "No changes" in run.stdout
    assert local_server.counters.get("DeleteTopic") == 0
    assert labels(publisher_client, "orders-a") is not None

    # Team B replaces its topic: its prune deletes that one, and only that one.
    tree(tmp_path / "b", owner_doc("team-b"), topic_doc("payments-b"))
    run = apply(run_cli, local_server, team_b, "--prune")
    assert run.exit_code == 0, run.stdout + run.stderr
    assert "orders-b will be destroyed (prune: not declared, owned by this spec tree " \
        f"({OWNER_LABEL}=team-b))" in run.stdout
    assert "orders-a" not in run.stdout
    assert labels(publisher_client, "orders-b") is None
    assert labels(publisher_client, "orders-a") is not None


def test_a_tree_without_an_owner_document_is_owner_default(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    root = tree(tmp_path / "specs", topic_doc("orders"))
    run = run_cli("plan", str(root), "--emulator", local_server.address)
    assert "Owner: default" in run.stdout
    assert f'+ "{OWNER_LABEL}"   = "default"' in run.stdout
    assert apply(run_cli, local_server, root).exit_code == 0
    assert (labels(publisher_client, "orders") or {})[OWNER_LABEL] == "default"


def test_another_trees_topic_is_named_and_taken_over_only_when_told(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    team_a = tree(tmp_path / "a", owner_doc("team-a"), topic_doc("orders"))
    assert apply(run_cli, local_server, team_a).exit_code == 0
    team_b = tree(tmp_path / "b", owner_doc("team-b"),
                  topic_doc("orders", labels={"team": "b"}))

    plan = run_cli("plan", str(team_b), "--emulator", local_server.address)
    assert plan.exit_code == 0, plan.stderr
    assert "is owned by the spec tree 'team-a' (reconcile-owner=team-a)" in plan.stdout
    # Once, as a diagnostic with the spec's line (it was also repeated in the change).
    assert plan.stdout.count("apply refuses unless given --adopt-from team-a") == 1
    assert f"{team_b}/" in plan.stdout.split("owned-by-another-tree")[0].splitlines()[-1]
    as_json = run_cli("plan", str(team_b), "--emulator", local_server.address,
                      "--format", "json")
    [rc] = json.loads(as_json.stdout)["resource_changes"]
    assert rc["reasons"] == ["adopt-from:team-a"]

    local_server.counters.reset()
    refused = apply(run_cli, local_server, team_b)
    assert refused.exit_code == 4
    assert "refusing to take over topics that another spec tree owns" in refused.stderr
    assert "projects/proj-a/topics/orders (owner team-a)" in refused.stderr
    assert (
        "hint: if this tree takes them over, remove them from the specs of 'team-a' and "
        "apply with --adopt-from team-a; otherwise remove them from this tree's specs"
    ) in refused.stderr
    assert mutations(local_server) == 0
    assert (labels(publisher_client, "orders") or {})[OWNER_LABEL] == "team-a"

    # A misspelt owner adopts nothing and says so.
    wrong = apply(run_cli, local_server, team_b, "--adopt-from", "team-x")
    assert wrong.exit_code == 4
    assert "--adopt-from team-x: no topic of this plan is owned by 'team-x'" in wrong.stderr
    assert mutations(local_server) == 0

    taken = apply(run_cli, local_server, team_b, "--adopt-from", "team-a")
    assert taken.exit_code == 0, taken.stdout + taken.stderr
    now = labels(publisher_client, "orders") or {}
    assert now[OWNER_LABEL] == "team-b" and now["team"] == "b"
    # Team A's prune now leaves it alone.
    tree(tmp_path / "a", owner_doc("team-a"), topic_doc("refunds"))
    local_server.counters.reset()
    assert apply(run_cli, local_server, team_a, "--prune").exit_code == 0
    assert local_server.counters.get("DeleteTopic") == 0


def test_topics_of_a_reconcile_before_owners_are_claimed_or_left_alone(
    run_cli: Any, local_server: Any, publisher_client: Any, seed: Any, tmp_path: Path
) -> None:
    seed("declared", {"team": "a", **LEGACY})
    seed("undeclared", dict(LEGACY))
    root = tree(tmp_path / "specs", owner_doc("team-a"),
                topic_doc("declared", labels={"team": "a"}))
    run = apply(run_cli, local_server, root, "--prune")
    assert run.exit_code == 0, run.stdout + run.stderr
    # The declared one is claimed (one label added); the other is not pruned, and the
    # plan says why and how to claim it.
    assert "Plan: 0 to create, 1 to update, 0 to delete." in run.stdout
    assert f'+ "{OWNER_LABEL}"' in run.stdout
    assert "not pruned: projects/proj-a/topics/undeclared carries reconcile-managed=true " \
        "from a reconcile before owners" in run.stdout
    assert f"--update-labels={OWNER_LABEL}=team-a" in run.stdout
    assert local_server.counters.get("DeleteTopic") == 0
    assert labels(publisher_client, "undeclared") == LEGACY
    assert (labels(publisher_client, "declared") or {})[OWNER_LABEL] == "team-a"
    again = run_cli("plan", str(root), "--emulator", local_server.address,
                    "--detailed-exitcode")
    assert again.exit_code == 0, again.stdout + again.stderr


def test_the_owner_is_declared_once_with_a_label_value_for_a_name(
    run_cli: Any, tmp_path: Path
) -> None:
    root = tree(tmp_path / "specs", owner_doc("team-a"), topic_doc("orders"))
    (root / "more.yaml").write_text(owner_doc("team-b"))
    run = run_cli("validate", str(root))
    assert run.exit_code == 1
    assert "declares its owner twice: 'team-b' here and 'team-a' at" in run.stdout + run.stderr
    assert f"{root / 'more.yaml'}:3" in run.stdout + run.stderr

    bad = tree(tmp_path / "bad", owner_doc("Team A"), topic_doc("orders"))
    run = run_cli("validate", str(bad))
    assert run.exit_code == 1
    assert "the owner name 'Team A' may contain only lowercase letters" in (
        run.stdout + run.stderr
    )


def test_a_tree_without_an_owner_cannot_prune_so_two_such_trees_never_delete_each_others(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    team_a = tree(tmp_path / "a", topic_doc("orders-a"))
    team_b = tree(tmp_path / "b", topic_doc("orders-b"))
    assert apply(run_cli, local_server, team_a).exit_code == 0
    assert apply(run_cli, local_server, team_b).exit_code == 0
    local_server.counters.reset()
    for command in ("plan", "apply"):
        extra = ("--auto-approve",) if command == "apply" else ()
        run = run_cli(command, str(team_b), "--emulator", local_server.address, "--prune",
                      *extra)
        assert run.exit_code == 1, run.stdout + run.stderr
        assert run.stderr.startswith(
            "Error: --prune deletes only the topics this spec tree owns, and this tree "
            "declares no owner: every tree without an Owner document is the owner 'default', "
            "so a prune here could delete a topic another tree created; nothing was changed\n"
            "  hint: add an Owner document naming this tree"
        ), run.stderr
    assert mutations(local_server) == 0
    assert labels(publisher_client, "orders-a") is not None


def test_old_topics_of_owner_default_move_to_a_named_tree_then_prune_works(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    """The migration docs/ownership.md states: name the tree, take its topics over
    once with --adopt-from default, then prune deletes its own undeclared topics."""
    old = tree(tmp_path / "specs", topic_doc("orders"), topic_doc("retired"))
    assert apply(run_cli, local_server, old).exit_code == 0
    named = tree(tmp_path / "specs", owner_doc("team-a"), topic_doc("orders"),
                 topic_doc("retired"))
    refused = apply(run_cli, local_server, named)
    assert refused.exit_code == 4, refused.stdout + refused.stderr
    # Issue 46: the advice fits a migration in the same tree: no "other tree's specs"
    # to remove them from, adopt them (said alike by the plan and by apply).
    advice = (
        "owner 'default' is any tree without an Owner document: if that was this tree "
        "before its Owner document named it 'team-a', there is nothing to remove "
        "anywhere, apply with --adopt-from default to move {} to 'team-a'; if it is "
        "another tree, remove {} from its specs first; otherwise remove {} from this "
        "tree's specs"
    )
    assert "hint: " + advice.format("them", "them", "them") in refused.stderr
    assert "other tree's specs" not in refused.stderr
    plan = run_cli("plan", str(named), "--emulator", local_server.address)
    assert advice.format("it", "it", "it") in plan.stdout
    assert "remove it from the specs of 'default'" not in plan.stdout
    moved = apply(run_cli, local_server, named, "--adopt-from", "default")
    assert moved.exit_code == 0, moved.stdout + moved.stderr
    assert (labels(publisher_client, "retired") or {})[OWNER_LABEL] == "team-a"
    tree(tmp_path / "specs", owner_doc("team-a"), topic_doc("orders"))
    pruned = apply(run_cli, local_server, named, "--prune")
    assert pruned.exit_code == 0, pruned.stdout + pruned.stderr
    assert labels(publisher_client, "retired") is None
    assert labels(publisher_client, "orders") is not None


def test_an_owner_document_cannot_name_the_default(run_cli: Any, tmp_path: Path) -> None:
    root = tree(tmp_path / "specs", owner_doc("default"), topic_doc("orders"))
    run = run_cli("validate", str(root))
    assert run.exit_code == 1
    assert "error[owner-name]: 'default' is the owner of every tree without an Owner " \
        "document" in run.stdout
