"""examples/gitlab/.gitlab-ci.yml end to end against the local server: its own job
scripts under bash (the plan job, the note job, the apply job of the child pipeline),
a loopback GitLab API for notes, labels, the merge requests of a commit and the plan
job's artifact, and a git repository whose merges are pushed to a bare origin. A
merged change ends with a result note; with the resource group's queue a job that
main has overtaken waits, and the later merge's job settles it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.orgpolicy.snapshot import load_snapshot
from tests.gitops.ci_support import (
    FORGED_DIGEST_FILE,
    GITLAB_USERS,
    GitLabApi,
    Repo,
    copy_reference_specs,
    gitlab_api,
    gitlab_env,
    gitlab_script,
    make_repo,
)

PAYMENTS = "acme-payments"
TOPICS = "specs/acme-payments/topics.yaml"
ORDERS = (TOPICS, "tier: critical", "tier: gold")
AUDIT = (TOPICS, "retention: long", "retention: longer")


@pytest.fixture
def lab(
    tmp_path: Path, local_server: Any, run_cli: Any
) -> Iterator[tuple[Repo, type[GitLabApi], str]]:
    repo = make_repo(tmp_path, local_server.address, copy_reference_specs)
    local_server.seed_policies(load_snapshot(repo.root / "specs" / "org-policy.yaml"))
    applied = run_cli("apply", str(repo.root / "specs"), "--emulator", local_server.address,
                      "--auto-approve")
    assert applied.exit_code == 0, applied.stderr
    with gitlab_api() as (url, api):
        yield repo, api, url


def plan_mr(repo: Repo, api: type[GitLabApi], url: str, mr: int, branch: str, job: int,
            validate: bool = False) -> None:
    """The merge request's child pipeline: (`validate`: the validate job,) plan
    acme-payments, then the note job."""
    repo.pr_checkout(branch)
    repo.clean("out", "validation")
    if validate:
        validated = repo.bash(gitlab_script("validate"))
        assert validated.code == 0, validated.err
    env = gitlab_env(url, PROJECT=PAYMENTS, CI_JOB_ID=str(job))
    planned = repo.bash(gitlab_script(".reconcile-plan"), **env)
    assert planned.code == 0, planned.err
    plan = repo.root / "out" / PAYMENTS / "plan.json"
    api.files[(str(job), f"out/{PAYMENTS}/plan.json")] = plan.read_bytes()
    noted = repo.bash(gitlab_script(".reconcile-comment"), **gitlab_env(
        url, MR_IID=str(mr), CI_COMMIT_SHA="head", TOUCHED=json.dumps([PAYMENTS])))
    assert noted.code == 0, noted.err
    repo.git("checkout", "-q", "main")


def apply_job(repo: Repo, api: type[GitLabApi], url: str, sha: str, job: int) -> tuple[int, str]:
    """The child pipeline's `apply acme-payments` at merge commit `sha`."""
    repo.checkout(sha)
    repo.clean("out", "fresh", "reviewed", "report.md", "earlier.md", "history.txt",
               "reviewed.json")
    ran = repo.bash(gitlab_script(".reconcile-apply"), **gitlab_env(
        url, PROJECT=PAYMENTS, PARENT_SOURCE="push", MR_IID="", CI_COMMIT_SHA=sha,
        CI_JOB_ID=str(job), CI_JOB_URL=f"https://gitlab.example/p/-/jobs/{job}"))
    repo.git("checkout", "-q", "main")
    return ran.code, ran.out + ran.err


def result(api: type[GitLabApi], mr: int) -> str:
    found = [n["body"] for n in api.notes.get(mr, []) if "<!-- reconcile-result " in n["body"]]
    assert len(found) == 1, found
    state = re.search(rf"<!-- reconcile-result {PAYMENTS} ([a-z-]+) -->", found[0])
    assert state is not None
    return state.group(1)


def merged(repo: Repo, api: type[GitLabApi], mr: int, branch: str) -> str:
    _, sha = repo.merge(mr, branch)
    api.merged[sha] = mr
    return sha


@pytest.mark.slow
def test_a_merge_request_is_noted_then_applied_on_merge(
    lab: tuple[Repo, type[GitLabApi], str], local_server: Any, publisher_client: Any
) -> None:
    repo, api, url = lab
    mr, branch = repo.open_pr([ORDERS])
    plan_mr(repo, api, url, mr, branch, 501)
    (note,) = api.notes[mr]
    assert re.search(rf"<!-- reconcile-digest {PAYMENTS} sha256:[0-9a-f]{{64}} 501 -->",
                     note["body"])
    assert api.labels[mr] == {"add-or-update"}
    sha = merged(repo, api, mr, branch)
    code, log = apply_job(repo, api, url, sha, 601)
    assert code == 0, log
    assert result(api, mr) == "applied"
    topic = publisher_client.get_topic(topic=f"projects/{PAYMENTS}/topics/orders")
    assert topic.labels["tier"] == "gold"


def test_a_partial_failure_fails_the_job_and_is_noted(
    lab: tuple[Repo, type[GitLabApi], str], local_server: Any
) -> None:
    repo, api, url = lab
    mr, branch = repo.open_pr([ORDERS, AUDIT])
    plan_mr(repo, api, url, mr, branch, 501)
    sha = merged(repo, api, mr, branch)
    local_server.faults.add("UpdateTopic", error="PERMISSION_DENIED",
                            resource=f"projects/{PAYMENTS}/topics/payment-audit")
    code, log = apply_job(repo, api, url, sha, 601)
    assert code == 1 and f"{PAYMENTS}: failed" in log
    assert result(api, mr) == "failed"
    outcome = json.loads((repo.root / "out" / "outcome.json").read_text())
    assert (outcome["outcome"], outcome["exit_code"]) == ("partial-failure", 3)


@pytest.mark.slow
def test_queued_jobs_in_any_order_leave_no_merge_unsettled(
    lab: tuple[Repo, type[GitLabApi], str], publisher_client: Any
) -> None:
    """The resource group queues A's, B's and C's jobs. A applies; B's plan is stale
    and main has moved on with C changing the project again: B waits; C applies and
    settles B."""
    repo, api, url = lab
    a, a_branch = repo.open_pr([ORDERS])
    b, b_branch = repo.open_pr([(TOPICS, "  name: refunds\nspec:\n",
                                 "  name: refunds\nspec:\n  labels: {owner: refunds-team}\n")])
    plan_mr(repo, api, url, a, a_branch, 501)
    plan_mr(repo, api, url, b, b_branch, 502)
    a_sha = merged(repo, api, a, a_branch)
    b_sha = merged(repo, api, b, b_branch)
    c, c_branch = repo.open_pr([AUDIT])
    repo.update_branch(c_branch)
    plan_mr(repo, api, url, c, c_branch, 503)
    c_sha = merged(repo, api, c, c_branch)
    assert apply_job(repo, api, url, a_sha, 601)[0] == 0
    code, log = apply_job(repo, api, url, b_sha, 602)
    assert code == 0, log
    assert result(api, b) == "deferred"
    code, log = apply_job(repo, api, url, c_sha, 603)
    assert code == 0, log
    assert [result(api, n) for n in (a, b, c)] == ["applied", "superseded", "applied"]
    topics = {t.name.rsplit("/", 1)[1]: dict(t.labels) for t in
              publisher_client.list_topics(request={"project": f"projects/{PAYMENTS}"})}
    assert topics["refunds"]["owner"] == "refunds-team"
    assert topics["payment-audit"]["retention"] == "longer"


def test_a_file_name_or_another_users_note_cannot_choose_the_plan_a_merge_applies(
    lab: tuple[Repo, type[GitLabApi], str], publisher_client: Any
) -> None:
    """Issue 39: an empty spec file named like a digest marker, and a person's note
    with a whole plan note's markers posted before the pipeline's."""
    repo, api, url = lab
    mr, branch = repo.open_pr([ORDERS], {FORGED_DIGEST_FILE: ""})
    api.notes[mr] = [{"id": 900, "system": False, "author": GITLAB_USERS["person-token"],
                      "body": ("<!-- reconcile-plan -->\n<!-- reconcile-digest acme-payments "
                               "sha256:" + "c" * 64 + " 502 -->\n")}]
    api.files[("502", f"out/{PAYMENTS}/plan.json")] = b"{}"
    plan_mr(repo, api, url, mr, branch, 501, validate=True)
    person, ours = api.notes[mr]
    assert person["id"] == 900 and ours["author"] == GITLAB_USERS["note-token"]
    plan = json.loads((repo.root / "out" / PAYMENTS / "plan.json").read_text())
    assert "1 warning(s)" in ours["body"]
    assert ours["body"].count("<\u2060!-- reconcile-digest acme-payments sha256:bbbb") >= 2
    assert ours["body"].count("<!--") == 2
    assert ours["body"].startswith(
        f"<!-- reconcile-plan -->\n<!-- reconcile-digest {PAYMENTS} {plan['digest']} 501 -->\n")

    sha = merged(repo, api, mr, branch)
    code, log = apply_job(repo, api, url, sha, 601)
    assert code == 0, log
    assert result(api, mr) == "applied"
    outcome = json.loads((repo.root / "out" / "outcome.json").read_text())
    assert (outcome["outcome"], outcome["digest"]) == ("applied", plan["digest"])
    topic = publisher_client.get_topic(topic=f"projects/{PAYMENTS}/topics/orders")
    assert topic.labels["tier"] == "gold"
