"""examples/github/reconcile.yml end to end against the local server: the workflow's own
`run:` blocks under bash and its own github-script steps under node (an in-memory
GitHub), in a git repository with pull requests as branches and merges pushed to a
bare origin, artifacts kept per run. A pull request is planned for the projects it
touches only and commented once; a merge applies the reviewed plan and every merged
pull request ends with a comment: applied, applied by a later merge's run
(superseded), stale with the command to apply the fresh plan, or failed; the
workflow branches on apply's exit codes and JSON outcome, never on its text."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reconciler.orgpolicy.snapshot import load_snapshot
from tests.gitops.ci_support import (
    FORGED_DIGEST_FILE,
    GITHUB,
    Repo,
    copy_reference_specs,
    make_repo,
    step_of,
)
from tests.gitops.test_plan_schema import errors as schema_errors

PAYMENTS = "acme-payments"
ORDERS = ("specs/acme-payments/topics.yaml", "tier: critical", "tier: gold")
AUDIT = ("specs/acme-payments/topics.yaml", "retention: long", "retention: longer")
REFUNDS = ("specs/acme-payments/topics.yaml", "  name: refunds\nspec:\n",
           "  name: refunds\nspec:\n  labels: {owner: refunds-team}\n")
DIGEST = re.compile(r"<!-- reconcile-digest (\S+) (sha256:[0-9a-f]{64}) (\d+) -->")


def applied_repo(
    tmp_path: Path, local_server: Any, run_cli: Any, prepare: Callable[[Path], None]
) -> Repo:
    """A repository of what `prepare` writes on main, already applied to the local
    server (seeded with its org-policy snapshot), which stands in for Google Cloud."""
    made = make_repo(tmp_path, local_server.address, prepare)
    local_server.seed_policies(load_snapshot(made.root / "specs" / "org-policy.yaml"))
    applied = run_cli("apply", str(made.root / "specs"), "--emulator", local_server.address,
                      "--auto-approve")
    assert applied.exit_code == 0, applied.stderr
    return made


@pytest.fixture
def repo(tmp_path: Path, local_server: Any, run_cli: Any) -> Iterator[Repo]:
    """The reference specs on main, already applied."""
    yield applied_repo(tmp_path, local_server, run_cli, copy_reference_specs)


def labels(client: Any, project: str = PAYMENTS) -> dict[str, dict[str, str]]:
    return {
        t.name.rsplit("/", 1)[1]: dict(t.labels)
        for t in client.list_topics(request={"project": f"projects/{project}"})
    }


def writes(server: Any) -> int:
    return sum(server.counters.get(m) for m in ("CreateTopic", "UpdateTopic", "DeleteTopic"))


def pr_run(repo: Repo, number: int, branch: str, run_id: int) -> list[str]:
    """The pull_request run: projects, validate, plan per touched project (artifacts),
    the comment job. Returns the touched projects."""
    head = repo.pr_checkout(branch)
    repo.clean("out", "validation", "artifacts")
    projects = repo.step("projects", "projects", run_id, EVENT="pull_request", BEFORE="",
                         DISPATCHED="")
    assert projects.code == 0, projects.err
    touched = projects.outputs["touched"]
    repo.step("validate", "validate", run_id)
    repo.upload(run_id, "reconcile-validation", "validation")
    for project in json.loads(touched):
        repo.clean("out")
        repo.step("plan", "plan", run_id, PROJECT=project)  # a failed plan fails its job
        repo.upload(run_id, f"reconcile-plan-{project}", "out")  # uploaded always()
    repo.clean("artifacts")
    for (rid, name), _ in list(repo.artifacts.items()):
        if rid == run_id:
            repo.download(rid, name, f"artifacts/{name}")
    body = repo.step("comment", "body", run_id, TOUCHED=touched, HEAD_SHA=head)
    assert body.code == 0, body.err
    pull = {"number": number, "labels": [{"name": n} for n in repo.github.get("labels", {})
                                         .get(str(number), [])]}
    posted = repo.script("comment", "Post or update the one sticky plan comment",
                         {"runId": run_id, "payload": {"pull_request": pull}})
    assert posted["failed"] is None
    repo.git("checkout", "-q", "main")
    return list(json.loads(touched))


@dataclass
class ApplyRun:
    mode: str
    result: str
    state: str
    failed: str | None
    outcome: dict[str, Any] | None


def apply_run(repo: Repo, sha: str, run_id: int, project: str = PAYMENTS,
              context: dict[str, Any] | None = None) -> ApplyRun:
    """One matrix entry of the apply job at merge commit `sha`, step by step, each
    step's `if:` as the workflow writes it."""
    repo.checkout(sha)
    repo.clean("out", "fresh", "reviewed", "report.md", "earlier.md", "history.txt")
    env = {"PROJECT": project, "GITHUB_SHA": sha}
    ctx = context or {"eventName": "push", "sha": sha, "payload": {}}
    found = repo.script("apply", "reviewed", {**ctx, "runId": run_id}, PROJECT=project)
    assert found["failed"] is None, found["failed"]
    out = found["outputs"]
    mode = out["mode"]
    assert step_of(GITHUB, "apply", "apply")["if"] == "steps.reviewed.outputs.mode == 'apply'"
    applied = replanned = ""
    if mode == "apply":
        repo.download(int(out["run_id"]), f"reconcile-plan-{project}", "reviewed")
        step = repo.step("apply", "apply", run_id, DIGEST=out["digest"], **env)
        assert step.code == 0, step.err
        applied = step.outputs["result"]
    assert step_of(GITHUB, "apply", "replan")["if"] == (
        "steps.reviewed.outputs.mode != 'apply' || steps.apply.outputs.result == 'replan'"
    )
    if mode != "apply" or applied == "replan":
        step = repo.step("apply", "replan", run_id, MODE=mode, **env)
        assert step.code == 0, step.err
        replanned = step.outputs["result"]
        if replanned == "stale":
            repo.upload(run_id, f"reconcile-plan-{project}", "fresh")
    settle = repo.step("apply", "settle", run_id, APPLIED=applied, REPLANNED=replanned,
                       MODE=mode, PR=out["pr"], **env)
    assert settle.code == 0, settle.err
    state = settle.outputs["state"]
    reported = repo.script("apply", "Report", {**ctx, "runId": run_id}, PROJECT=project,
                           PR=out["pr"], STATE=state)
    outcome_file = repo.root / "out" / "outcome.json"
    outcome = json.loads(outcome_file.read_text()) if outcome_file.exists() else None
    repo.git("checkout", "-q", "main")
    return ApplyRun(mode, replanned or applied, state, reported["failed"], outcome)


def result_of(repo: Repo, number: int, project: str = PAYMENTS) -> tuple[str, str]:
    """The one result comment on the pull request for the project: (state, body)."""
    found = [b for b in repo.comments_on(number) if f"<!-- reconcile-result {project} " in b]
    assert len(found) == 1, found
    state = re.search(rf"<!-- reconcile-result {project} ([a-z-]+) -->", found[0])
    assert state is not None
    return state.group(1), found[0]


def sticky(repo: Repo, number: int) -> str:
    found = [b for b in repo.comments_on(number) if b.startswith("<!-- reconcile-plan -->")]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.slow
def test_a_pull_request_is_planned_for_what_it_touches_and_applied_on_merge(
    repo: Repo, local_server: Any, publisher_client: Any
) -> None:
    number, branch = repo.open_pr([ORDERS])
    local_server.counters.reset()
    assert pr_run(repo, number, branch, 101) == [PAYMENTS]
    # Only the touched project is read: no other project's plan, nor approval.
    assert local_server.counters.projects("ListTopics") == {PAYMENTS}
    body = sticky(repo, number)
    assert "**Validation**: ✅ no errors, no warnings." in body
    found = DIGEST.findall(body)
    plan = json.loads((repo.stash / "artifact-101-reconcile-plan-acme-payments" / "plan.json")
                      .read_text())
    assert found == [(PAYMENTS, plan["digest"], "101")]
    assert schema_errors(plan) == []
    assert "### `acme-payments`: 0 to add, 1 to change, 0 to destroy" in body
    assert repo.github["labels"][str(number)] == ["add-or-update"]

    before, sha = repo.merge(number, branch)
    repo.checkout(sha)
    pushed = repo.step("projects", "projects", 201, EVENT="push", BEFORE=before, DISPATCHED="")
    assert pushed.outputs["touched"] == '["acme-payments"]'
    run = apply_run(repo, sha, 201)
    assert (run.mode, run.result, run.state, run.failed) == ("apply", "applied", "applied", None)
    assert run.outcome is not None and run.outcome["outcome"] == "applied"
    assert run.outcome["digest"] == plan["digest"] and run.outcome["exit_code"] == 0
    state, text = result_of(repo, number)
    assert state == "applied" and "The reviewed plan was applied" in text
    assert labels(publisher_client)["orders"]["tier"] == "gold"
    again = repo.reconcile("plan", "specs/", "--project", PAYMENTS, "--detailed-exitcode")
    assert again.code == 0, again.out + again.err


def test_an_untouched_pull_request_plans_nothing_and_passes_the_required_check(
    repo: Repo, local_server: Any
) -> None:
    (repo.root / "NOTES.txt").write_text("not a spec\n")
    repo.git("checkout", "-q", "-B", "docs", "main")
    repo.git("add", "-f", "NOTES.txt")
    repo.git("commit", "-q", "-m", "docs only")
    repo.git("checkout", "-q", "main")
    local_server.counters.reset()
    assert pr_run(repo, 1, "docs", 101) == []
    assert local_server.counters.get("ListTopics") == 0
    body = sticky(repo, 1)
    assert "No project is touched by this change: nothing to plan or apply." in body
    assert "add-or-update" not in repo.github.get("labels", {}).get("1", [])


@pytest.mark.slow
def test_validation_errors_and_plan_warnings_reach_the_comment(repo: Repo) -> None:
    number, branch = repo.open_pr([
        ("specs/acme-platform/topics.yaml", "[us-east4, us-west1, europe-west1]",
         "[us-east4, europe-west1]"),
    ])
    assert pr_run(repo, number, branch, 101) == ["acme-platform"]
    body = sticky(repo, number)
    assert "narrows the storage regions (no longer allowed: us-west1)" in body
    assert [p for p, _, _ in DIGEST.findall(body)] == ["acme-platform"]
    # A second push breaks the tree: the same comment now shows the errors, no digest.
    repo.git("checkout", "-q", branch)
    repo.edit("specs/acme-analytics/topics.yaml", "europe-west4", "europe-west4-b")
    repo.git("commit", "-q", "-am", "a zone where a region goes")
    repo.git("checkout", "-q", "main")
    assert pr_run(repo, number, branch, 102) == ["acme-analytics", "acme-platform"]
    body = sticky(repo, number)
    assert "**Validation**: ❌ 1 error(s), 0 warning(s)" in body
    assert "error[region-zone]: 'europe-west4-b' is a zone" in body
    assert "### `acme-analytics`: ❌ ERROR" in body and "### `acme-platform`: ❌ ERROR" in body
    assert DIGEST.findall(body) == []  # a plan that failed has no digest to apply
    assert "add-or-update" not in repo.github["labels"][str(number)]
    # A third: a region the org policy denies. Validation cannot know whether the topic
    # exists (a warning); the project's plan refuses the call, the other plans go on.
    repo.git("checkout", "-q", branch)
    repo.edit("specs/acme-analytics/topics.yaml", "europe-west4-b", "asia-east1")
    repo.git("commit", "-q", "-am", "a region the org policy denies")
    repo.git("checkout", "-q", "main")
    assert pr_run(repo, number, branch, 103) == ["acme-analytics", "acme-platform"]
    body = sticky(repo, number)
    assert "**Validation**: ⚠️ 0 error(s), 1 warning(s)" in body
    assert "error\\[org-location-denied\\]: region 'asia-east1' is not allowed" in body
    assert "### `acme-analytics`: ❌ ERROR" in body
    assert [p for p, _, _ in DIGEST.findall(body)] == ["acme-platform"]
    # acme-platform's plan does not speak of acme-analytics' topics
    platform = body.split("### `acme-platform`", 1)[1]
    assert "asia-east1" not in platform


def test_a_partial_failure_is_reported_as_such_not_as_a_stale_plan(
    repo: Repo, local_server: Any, publisher_client: Any
) -> None:
    topics = "specs/acme-payments/topics.yaml"
    new = "\n---\napiVersion: reconcile.pubsub/v1\nkind: Topic\nmetadata:\n  name: {}\n"
    text = (repo.root / topics).read_text()
    added = text + new.format("ledger") + new.format("payouts")
    number, branch = repo.open_pr([(topics, text, added)])
    pr_run(repo, number, branch, 101)
    _, sha = repo.merge(number, branch)
    local_server.faults.add("CreateTopic", error="PERMISSION_DENIED",
                            resource=f"projects/{PAYMENTS}/topics/payouts")
    run = apply_run(repo, sha, 201)
    assert (run.result, run.state) == ("partial-failure", "failed")
    assert run.failed is not None and "acme-payments: failed" in run.failed
    assert run.outcome is not None
    assert (run.outcome["outcome"], run.outcome["exit_code"]) == ("partial-failure", 3)
    assert run.outcome["summary"]["applied"] == 1 and run.outcome["summary"]["failed"] == 1
    state, body = result_of(repo, number)
    assert state == "failed"
    assert "stale" not in body.lower()
    assert f"projects/{PAYMENTS}/topics/payouts (create): PERMISSION_DENIED" in body
    assert "ledger" in labels(publisher_client) and "payouts" not in labels(publisher_client)


def hand_edit(client: Any, topic: str, key: str, value: str) -> None:
    from google.pubsub_v1.types import Topic

    name = f"projects/{PAYMENTS}/topics/{topic}"
    current = labels(client)[topic]
    client.update_topic(request={"topic": Topic(name=name, labels={**current, key: value}),
                                 "update_mask": {"paths": ["labels"]}})


@pytest.mark.slow
def test_a_stale_plan_whose_changes_were_reviewed_is_applied_from_a_fresh_plan(
    repo: Repo, local_server: Any, publisher_client: Any
) -> None:
    number, branch = repo.open_pr([ORDERS])
    pr_run(repo, number, branch, 101)
    hand_edit(publisher_client, "orders", "tier", "hand-edited")  # after review
    _, sha = repo.merge(number, branch)
    run = apply_run(repo, sha, 201)
    assert (run.result, run.state, run.failed) == ("applied-fresh", "applied-fresh", None)
    state, body = result_of(repo, number)
    assert state == "applied" and "refused as **stale**" in body
    assert labels(publisher_client)["orders"]["tier"] == "gold"


@pytest.mark.slow
def test_a_stale_plan_with_unreviewed_changes_is_not_applied_and_says_how_to_apply_it(
    repo: Repo, local_server: Any, publisher_client: Any
) -> None:
    number, branch = repo.open_pr([ORDERS])
    pr_run(repo, number, branch, 101)
    hand_edit(publisher_client, "refunds", "team", "someone-else")  # a topic not reviewed
    _, sha = repo.merge(number, branch)
    local_server.counters.reset()
    run = apply_run(repo, sha, 201)
    assert (run.result, run.state) == ("stale", "stale")
    assert run.failed is not None
    assert writes(local_server) == 0  # nothing applied
    assert run.outcome is not None
    assert (run.outcome["outcome"], run.outcome["reason"]) == ("refused", "stale")
    assert f"projects/{PAYMENTS}/topics/refunds: modified since the plan" in run.outcome["details"]
    state, body = result_of(repo, number)
    assert state == "stale"
    fresh = json.loads((repo.stash / "artifact-201-reconcile-plan-acme-payments" / "plan.json")
                       .read_text())
    command = (f"gh workflow run reconcile.yml -f project={PAYMENTS} -f run_id=201 "
               f"-f digest={fresh['digest']} -f pr={number}")
    assert command in body
    assert "someone-else" in body  # the fresh plan, shown

    # The command, as a dispatch: the fresh plan is applied and the comment updated.
    dispatch = {"eventName": "workflow_dispatch", "sha": sha, "payload": {"inputs": {
        "project": PAYMENTS, "run_id": "201", "digest": fresh["digest"], "pr": str(number)}}}
    again = apply_run(repo, sha, 301, context=dispatch)
    assert (again.result, again.state, again.failed) == ("applied", "applied", None)
    assert result_of(repo, number)[0] == "applied"
    live = labels(publisher_client)
    assert live["orders"]["tier"] == "gold" and live["refunds"]["team"] == "payments"


def test_a_digest_mismatch_is_refused_and_nothing_is_applied(
    repo: Repo, local_server: Any, publisher_client: Any
) -> None:
    number, branch = repo.open_pr([ORDERS])
    pr_run(repo, number, branch, 101)
    # The artifact is replaced after review by another plan (same project, other change).
    repo.edit(*AUDIT)
    made = repo.reconcile("plan", "specs/", "--project", PAYMENTS, "--out",
                          str(repo.artifacts[(101, "reconcile-plan-acme-payments")] / "plan.json"))
    assert made.code == 0, made.err
    repo.git("checkout", "-q", "--", "specs")
    _, sha = repo.merge(number, branch)
    local_server.counters.reset()
    run = apply_run(repo, sha, 201)
    assert (run.result, run.state) == ("refused", "refused")
    assert run.outcome is not None
    assert (run.outcome["reason"], run.outcome["exit_code"]) == ("digest-mismatch", 4)
    assert writes(local_server) == 0
    state, body = result_of(repo, number)
    assert state == "refused" and "digest-mismatch" in body
    assert f"gh workflow run reconcile.yml -f project={PAYMENTS} -f pr={number}" in body
    assert labels(publisher_client)["orders"]["tier"] == "critical"


@pytest.mark.slow
def test_three_quick_merges_every_pull_request_ends_with_a_comment(
    repo: Repo, local_server: Any, publisher_client: Any
) -> None:
    """GitHub keeps one running and one pending run per concurrency group; C queueing
    cancels B's pending run. All three were planned before A's apply (quick merges,
    each branch brought up to date first): C's run finds its plan stale, applies the
    fresh plan of main (every change in it is one C's plan showed), and settles B."""
    a, a_branch = repo.open_pr([ORDERS])
    pr_run(repo, a, a_branch, 101)
    _, a_sha = repo.merge(a, a_branch)
    b, b_branch = repo.open_pr([REFUNDS])
    pr_run(repo, b, b_branch, 102)
    c, c_branch = repo.open_pr([AUDIT])
    repo.update_branch(c_branch)
    # A's run: applied. B merges; C is brought up to date and planned (A not applied
    # when it was made: its plan shows A's change too); C merges.
    _, b_sha = repo.merge(b, b_branch)
    repo.update_branch(c_branch)
    pr_run(repo, c, c_branch, 103)
    first = apply_run(repo, a_sha, 201)
    assert first.state == "applied"
    _, c_sha = repo.merge(c, c_branch)
    # B's run was pending when C's queued: GitHub cancelled it; it never ran.
    last = apply_run(repo, c_sha, 203)
    assert (last.result, last.state, last.failed) == ("applied-fresh", "applied-fresh", None)
    assert result_of(repo, a)[0] == "applied"
    state, body = result_of(repo, b)
    assert state == "superseded" and f"#{c}'s apply" in body
    assert result_of(repo, c)[0] == "applied"
    live = labels(publisher_client)
    assert (live["orders"]["tier"], live["refunds"]["owner"], live["payment-audit"]["retention"]) \
        == ("gold", "refunds-team", "longer")
    assert b_sha != c_sha


@pytest.mark.slow
def test_a_run_overtaken_by_a_later_merge_waits_and_is_settled_by_it(
    repo: Repo, local_server: Any, publisher_client: Any
) -> None:
    """B's run starts after C merged (GitLab's queue, or a re-run): its plan is stale
    and main changes the project again, so it waits; C's run settles it."""
    a, a_branch = repo.open_pr([ORDERS])
    b, b_branch = repo.open_pr([REFUNDS])
    pr_run(repo, a, a_branch, 101)
    pr_run(repo, b, b_branch, 102)
    _, a_sha = repo.merge(a, a_branch)
    assert apply_run(repo, a_sha, 201).state == "applied"
    _, b_sha = repo.merge(b, b_branch)  # B's plan predates A's apply
    c, c_branch = repo.open_pr([AUDIT])
    pr_run(repo, c, c_branch, 103)
    _, c_sha = repo.merge(c, c_branch)
    waiting = apply_run(repo, b_sha, 202)
    assert (waiting.result, waiting.state, waiting.failed) == ("deferred", "deferred", None)
    assert result_of(repo, b)[0] == "deferred"
    last = apply_run(repo, c_sha, 203)
    assert last.state == "applied" and last.failed is None
    assert result_of(repo, b)[0] == "superseded"  # the same comment, now final
    assert result_of(repo, a)[0] == "applied"
    assert labels(publisher_client)["refunds"]["owner"] == "refunds-team"


@pytest.mark.slow
def test_a_push_without_a_reviewed_plan_applies_nothing(
    repo: Repo, local_server: Any, publisher_client: Any
) -> None:
    repo.edit(*ORDERS)
    repo.git("commit", "-q", "-am", "straight to main")
    repo.git("push", "-q", "origin", "main")
    sha = repo.git("rev-parse", "HEAD")
    local_server.counters.reset()
    run = apply_run(repo, sha, 201)
    assert (run.mode, run.state) == ("none", "stale")
    assert run.failed is not None
    assert writes(local_server) == 0
    report = (repo.root / "report.md").read_text()
    assert "this merge has no reviewed plan for acme-payments" in report


OTHER_APP = {"type": "Bot", "login": "other-app[bot]"}


@pytest.mark.slow
def test_a_file_name_or_another_bot_cannot_choose_the_plan_a_merge_applies(
    repo: Repo, local_server: Any, publisher_client: Any
) -> None:
    number, branch = repo.open_pr([ORDERS], {FORGED_DIGEST_FILE: ""})
    # Another app comments first, a whole plan comment with a digest of its choosing.
    repo.github["comments"].append({
        "id": 1, "issue_number": number, "user": OTHER_APP,
        "body": ("<!-- reconcile-plan -->\n<!-- reconcile-digest acme-payments sha256:"
                 + "c" * 64 + " 99998 -->\n<!-- reconcile-result acme-payments applied -->\n")})
    assert pr_run(repo, number, branch, 101) == [PAYMENTS]
    (body,) = [c["body"] for c in repo.github["comments"]
               if c["issue_number"] == number and c["user"]["login"] == "github-actions[bot]"]
    plan = json.loads((repo.stash / "artifact-101-reconcile-plan-acme-payments" / "plan.json")
                      .read_text())
    # The path is in the comment (validation and plan warnings), shown but inert: the
    # only markers are the two lines the glue wrote at its head.
    assert "**Validation**: ⚠️ 0 error(s), 1 warning(s)" in body
    assert body.count("<\u2060!-- reconcile-digest acme-payments sha256:bbbb") >= 2
    assert body.count("<!--") == 2
    assert body.startswith(f"<!-- reconcile-plan -->\n<!-- reconcile-digest {PAYMENTS} "
                           f"{plan['digest']} 101 -->\n## reconcile plan\n")

    _, sha = repo.merge(number, branch)
    run = apply_run(repo, sha, 201)
    assert (run.mode, run.result, run.state, run.failed) == ("apply", "applied", "applied", None)
    assert run.outcome is not None and run.outcome["digest"] == plan["digest"]
    assert labels(publisher_client)["orders"]["tier"] == "gold"
    ours = [c["body"] for c in repo.github["comments"] if c["issue_number"] == number
            and c["user"]["login"] == "github-actions[bot]"
            and c["body"].startswith("<!-- reconcile-result ")]
    assert [b.split("\n", 1)[0] for b in ours] == [f"<!-- reconcile-result {PAYMENTS} applied -->"]
    assert repo.github["comments"][0]["user"] == OTHER_APP  # its comment left as it was
