"""The comment, label, drift and glue scripts of the CI examples, run for real on real
plan files: GitHub's github-script steps under node against an in-memory GitHub
(github_script_harness.js), GitLab's jobs under bash against a loopback GitLab API,
examples/ci/reconcile_ci.py as the workflows call it. One sticky comment per pull
request (created once, then edited) with the validation diagnostics, each project's
plan and digest, a destroy warning and tfcmt's labels; one drift issue per drifting
project, closed when the drift is gone."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.gitops.ci_support import (
    CI_SCRIPT,
    DRIFT,
    GITHUB,
    GITLAB,
    GITLAB_USERS,
    Repo,
    gitlab_api,
    gitlab_env,
    gitlab_script,
    make_repo,
    run_block,
    runner_env,
)
from tests.gitops.workflow_lines import ROOT
from tests.specs_support import owner_doc

TOPIC = "apiVersion: reconcile.pubsub/v1\nkind: Topic\nmetadata: {{project: {p}, name: {t}}}\n"


def ci(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CI_SCRIPT), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def artifacts(run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """What the plan and validate jobs of a pull request leave, as download-artifact
    lays them out (reconcile-plan-PROJECT/, reconcile-validation/), made with --local:
    for acme-payments a plan with an update and a deletion (--prune), for
    acme-analytics none; the validation's diagnostics with a warning."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    (tmp_path / "specs" / "owner.yaml").write_text(owner_doc("team-a"))  # prune needs one
    assert run_cli("apply", "specs", "--local", "--auto-approve").exit_code == 0
    topics = tmp_path / "specs" / "acme-payments" / "topics.yaml"
    text = topics.read_text()
    topics.write_text(text[: text.index("---\n# Storage policy omitted")].replace(
        "tier: critical", "tier: gold"))
    root = tmp_path / "artifacts"
    for project, code in (("acme-payments", 2), ("acme-analytics", 0)):
        out = root / f"reconcile-plan-{project}"
        out.mkdir(parents=True)
        made = run_cli("plan", "specs", "--local", "--project", project, "--prune",
                       "--out", str(out / "plan.json"), "--format", "markdown",
                       "--detailed-exitcode")
        assert made.exit_code == code, made.stderr
        (out / "plan.md").write_text(made.stdout)
        (out / "exit-code").write_text(f"{code}\n")
        (out / "source").write_text("111\n")
    validation = root / "reconcile-validation"
    validation.mkdir()
    checked = run_cli("validate", "specs", "--format", "json")
    (validation / "diagnostics.json").write_text(json.dumps([
        *json.loads(checked.stdout),
        {"file": "specs/acme-payments/topics.yaml", "line": 3, "col": 1, "severity": "warning",
         "code": "example-warning", "message": "a warning `with` <b>markup</b>", "hint": None},
    ]))
    (validation / "exit-code").write_text("0\n")
    return root


def comment_body(root: Path, touched: str, *, cwd: Path) -> tuple[str, dict[str, Any]]:
    done = ci("comment", "--validation", str(root / "reconcile-validation"), "--plans",
              str(root), "--touched", touched, "--header", "Commit `abc`.",
              "--out", str(cwd / "comment.md"), "--labels", str(cwd / "labels.json"), cwd=cwd)
    assert done.returncode == 0, done.stderr
    return (cwd / "comment.md").read_text(), json.loads((cwd / "labels.json").read_text())


def test_the_comment_shows_validation_plans_digests_and_a_destroy_warning(
    artifacts: Path, tmp_path: Path
) -> None:
    body, labels = comment_body(artifacts, '["acme-analytics", "acme-payments"]', cwd=tmp_path)
    digests = {p: json.loads((artifacts / f"reconcile-plan-{p}" / "plan.json").read_text())
               ["digest"] for p in ("acme-analytics", "acme-payments")}
    # The markers head the comment, one line each, before any content.
    assert body.startswith(
        "<!-- reconcile-plan -->\n"
        f"<!-- reconcile-digest acme-analytics {digests['acme-analytics']} 111 -->\n"
        f"<!-- reconcile-digest acme-payments {digests['acme-payments']} 111 -->\n"
        "## reconcile plan\n\nCommit `abc`.")
    assert body.count("<!--") == 3
    assert "**Validation**: ⚠️ 0 error(s), 1 warning(s)" in body
    assert "warning[example-warning]: a warning `with` <b>markup</b>" in body
    # In a code fence longer than any backtick run inside: inert, whatever it holds.
    assert "```text\nspecs/acme-payments/topics.yaml:3:1: warning[example-warning]" in body
    assert "### `acme-payments`: 0 to add, 1 to change, 1 to destroy" in body
    assert "### `acme-analytics`: no changes" in body
    assert ("> **Topic deletion will happen** in `acme-payments`: "
            "`projects/acme-payments/topics/payment-audit`") in body
    assert labels == {"add": ["add-or-update", "destroy"], "remove": ["no-changes"]}
    assert len(body) < 65536


def test_no_changes_earns_the_no_changes_label(artifacts: Path, tmp_path: Path) -> None:
    body, labels = comment_body(artifacts, '["acme-analytics"]', cwd=tmp_path)
    assert labels == {"add": ["no-changes"], "remove": ["add-or-update", "destroy"]}
    assert "### `acme-payments`" not in body and "reconcile-digest acme-payments" not in body


def test_github_posts_one_sticky_comment_and_keeps_the_labels_current(
    artifacts: Path, tmp_path: Path
) -> None:
    runner = tmp_path / "runner"
    shutil.copytree(artifacts, runner / "artifacts")  # download-artifact, pattern reconcile-*
    repo = Repo(runner, runner, runner_env(None), stash=runner)
    for touched in ('["acme-analytics", "acme-payments"]', '["acme-analytics"]'):
        made = repo.bash(run_block(GITHUB, "comment", "body"), 111, TOUCHED=touched,
                         HEAD_SHA="headsha")
        assert made.code == 0, made.err
        present = [{"name": n} for n in repo.github.get("labels", {}).get("5", [])]
        done = repo.script("comment", "Post or update the one sticky plan comment",
                           {"runId": 111, "payload": {"pull_request": {"number": 5,
                                                                       "labels": present}}})
        assert done["failed"] is None
    assert len(repo.comments_on(5)) == 1  # created once, then edited
    assert "### `acme-payments`" not in repo.comments_on(5)[0]
    assert repo.github["labels"]["5"] == ["no-changes"]  # add-or-update, destroy taken off
    calls = [c[0] for c in done["calls"]]
    assert calls == ["listComments", "updateComment", "addLabels", "removeLabel", "removeLabel"]


def test_covered_says_whether_the_reviewed_plan_showed_every_change(tmp_path: Path) -> None:
    def plan(*changes: tuple[str, str, dict[str, Any]]) -> Path:
        path = tmp_path / f"plan{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps({"resource_changes": [
            {"address": a, "change": {"actions": [act], "after": after}}
            for a, act, after in changes
        ]}))
        return path

    gold = {"labels": {"tier": "gold"}}
    reviewed = plan(("t/a", "update", gold), ("t/b", "create", {"labels": {}}))
    assert ci("covered", str(plan(("t/a", "update", gold))), str(reviewed), cwd=tmp_path) \
        .returncode == 0
    other = ci("covered", str(plan(("t/a", "update", {"labels": {"tier": "x"}}))), str(reviewed),
               cwd=tmp_path)
    assert other.returncode == 1 and "t/a: not in the reviewed plan" in other.stdout
    extra = ci("covered", str(plan(("t/a", "update", gold), ("t/c", "delete", None))),
               str(reviewed), cwd=tmp_path)
    assert extra.returncode == 1 and "t/c" in extra.stdout


@pytest.mark.slow
def test_gitlab_child_pipeline_has_a_job_per_touched_project(tmp_path: Path) -> None:
    (tmp_path / "projects.json").write_text(json.dumps({"touched": ["acme-payments", "acme-x"]}))
    for mode in ("plan", "apply"):
        assert ci("child", "--mode", mode, "--projects", "projects.json", "--out",
                  f"{mode}.yml", cwd=tmp_path).returncode == 0
    plan = yaml.safe_load((tmp_path / "plan.yml").read_text())
    assert plan["include"] == [{"local": ".gitlab-ci.yml"}]
    assert plan["plan acme-payments"] == {"extends": ".reconcile-plan",
                                          "variables": {"PROJECT": "acme-payments"}}
    assert plan["comment"]["needs"] == ["validate", "plan acme-payments", "plan acme-x"]
    assert json.loads(plan["comment"]["variables"]["TOUCHED"]) == ["acme-payments", "acme-x"]
    apply = yaml.safe_load((tmp_path / "apply.yml").read_text())
    assert set(apply) == {"include", "apply acme-payments", "apply acme-x"}
    for template in (".reconcile-plan", ".reconcile-apply", ".reconcile-comment",
                     ".reconcile-nothing"):
        assert template in GITLAB
    (tmp_path / "projects.json").write_text(json.dumps({"touched": []}))
    assert ci("child", "--mode", "apply", "--projects", "projects.json", "--out", "none.yml",
              cwd=tmp_path).returncode == 0
    none = yaml.safe_load((tmp_path / "none.yml").read_text())
    assert none["nothing to apply"] == {"extends": ".reconcile-nothing"}
    exe = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    assert exe is not None
    for name in ("plan.yml", "apply.yml", "none.yml"):
        checked = subprocess.run([exe, "--builtin-schema", "vendor.gitlab-ci", name],
                                 cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert checked.returncode == 0, checked.stdout


def test_gitlab_one_note_with_labels_then_apply_finds_its_digest(
    artifacts: Path, tmp_path: Path
) -> None:
    work = tmp_path / "job"
    work.mkdir()
    shutil.copytree(artifacts / "reconcile-validation", work / "validation")
    for project in ("acme-payments", "acme-analytics"):
        shutil.copytree(artifacts / f"reconcile-plan-{project}", work / "out" / project)
    with gitlab_api() as (url, api):
        env = {**runner_env(None), **gitlab_env(url), "MR_IID": "7", "CI_COMMIT_SHA": "headsha",
               "TOUCHED": '["acme-analytics", "acme-payments"]'}
        for _ in range(2):
            done = subprocess.run(
                ["bash", "-eo", "pipefail", "-c", gitlab_script(".reconcile-comment")],
                cwd=work, env=env, capture_output=True, text=True, timeout=120,
            )
            assert done.returncode == 0, done.stderr
        assert len(api.notes[7]) == 1
        body = api.notes[7][0]["body"]
        assert "### `acme-payments`: 0 to add, 1 to change, 1 to destroy" in body
        assert api.labels[7] == {"add-or-update", "destroy"}
        assert set(api.tokens) == {"note-token"}
        api.merged["mergesha"] = 7
        found = ci("gitlab", "reviewed", "--commit", "mergesha", "--project", "acme-payments",
                   cwd=work, env=env)
        assert found.returncode == 0, found.stderr
        plan = json.loads((work / "out" / "acme-payments" / "plan.json").read_text())
        assert json.loads(found.stdout) == {"mr": 7, "digest": plan["digest"], "job": "111"}


def drift_repo(tmp_path: Path, server: Any) -> Repo:
    def prepare(root: Path) -> None:
        (root / "specs").mkdir()
        (root / "specs" / "t.yaml").write_text(
            TOPIC.format(p="drift-a", t="one") + "spec: {labels: {team: a}}\n---\n"
            + TOPIC.format(p="drift-b", t="two") + "spec: {labels: {team: b}}\n")
        (root / "ci").mkdir()
        shutil.copy2(CI_SCRIPT, root / "ci" / "reconcile_ci.py")

    return make_repo(tmp_path, server.address, prepare)


@pytest.mark.slow
def test_github_drift_schedule_keeps_one_issue_per_drifting_project(
    tmp_path: Path, local_server: Any, publisher_client: Any
) -> None:
    repo = drift_repo(tmp_path, local_server)
    applied = repo.reconcile("apply", "specs/", "--auto-approve")
    assert applied.code == 0, applied.err
    listed = repo.bash(run_block(DRIFT, "projects", "projects"))
    assert listed.outputs["declared"] == '["drift-a","drift-b"]'

    def schedule() -> None:
        for project in ("drift-a", "drift-b"):
            repo.clean("drift")
            plan = repo.bash(run_block(DRIFT, "drift", "plan"), 9, PROJECT=project,
                             GITHUB_SHA="0123456789abcdef")
            assert plan.code == 0, plan.err
            done = repo.script("drift", "Open, update or close the project's drift issue",
                               {"sha": "0123456789abcdef"}, DRIFT, PROJECT=project,
                               DRIFT=plan.outputs["drift"])
            assert done["failed"] is None

    schedule()
    assert repo.github["issues"] == []  # no drift, no issue
    publisher_client.update_topic(request={
        "topic": {"name": "projects/drift-a/topics/one", "labels": {"team": "by-hand"}},
        "update_mask": {"paths": ["labels"]}})
    schedule()
    schedule()  # still drifting: the same issue, updated
    (issue,) = repo.github["issues"]
    assert issue["title"] == "reconcile: drift in drift-a" and issue["state"] == "open"
    assert issue["labels"] == ["reconcile-drift"]
    assert "<!-- reconcile-drift drift-a -->" in issue["body"] and "by-hand" in issue["body"]
    assert repo.reconcile("apply", "specs/", "--auto-approve").code == 0
    schedule()
    (issue,) = repo.github["issues"]
    assert issue["state"] == "closed"
    assert any("No drift any more" in c["body"] for c in repo.github["comments"])


@pytest.mark.slow
def test_github_drift_schedule_fails_on_an_error_rather_than_closing(
    tmp_path: Path, local_server: Any
) -> None:
    repo = drift_repo(tmp_path, local_server)
    local_server.faults.add("ListTopics", error="PERMISSION_DENIED")
    plan = repo.bash(run_block(DRIFT, "drift", "plan"), 9, PROJECT="drift-a")
    assert plan.code == 1 and "drift" not in plan.outputs


@pytest.mark.slow
def test_gitlab_drift_schedule_opens_updates_and_closes_issues(
    tmp_path: Path, local_server: Any, publisher_client: Any
) -> None:
    repo = drift_repo(tmp_path, local_server)
    assert repo.reconcile("apply", "specs/", "--auto-approve").code == 0
    publisher_client.update_topic(request={
        "topic": {"name": "projects/drift-b/topics/two", "labels": {"team": "by-hand"}},
        "update_mask": {"paths": ["labels"]}})
    with gitlab_api() as (url, api):
        env = {**gitlab_env(url), "CI_COMMIT_SHA": "0123456789abcdef", "CI_JOB_URL": "https://j"}
        for _ in range(2):
            ran = repo.bash(gitlab_script("drift"), **env)
            assert ran.code == 0, ran.err
        (issue,) = api.issues
        assert (issue["title"], issue["state"]) == ("reconcile: drift in drift-b", "opened")
        assert "by-hand" in issue["description"]
        assert repo.reconcile("apply", "specs/", "--auto-approve").code == 0
        assert repo.bash(gitlab_script("drift"), **env).code == 0
        assert issue["state"] == "closed" and "No drift any more" in issue["notes"][0]


FORGED = "<!-- reconcile-digest acme-payments sha256:" + "b" * 64 + " 99999 -->"


def markers(bodies: list[str], project: str, cwd: Path) -> dict[str, str]:
    done = subprocess.run([sys.executable, str(CI_SCRIPT), "markers", "--project", project],
                          input=json.dumps(bodies), cwd=cwd, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    found: dict[str, str] = json.loads(done.stdout)
    return found


def test_content_never_forms_a_marker_and_markers_are_read_from_the_head_only(
    artifacts: Path, tmp_path: Path
) -> None:
    """Issue 39: a path, a message and a plan holding marker text (the empty file
    `specs/<!-- reconcile-digest ... -->.yaml` passes validation with a warning)."""
    diagnostics = artifacts / "reconcile-validation" / "diagnostics.json"
    diagnostics.write_text(json.dumps([
        {"file": f"specs/{FORGED}.yaml", "line": 1, "col": 1, "severity": "warning",
         "code": "empty-file", "message": "<!-- reconcile-result acme-payments applied -->",
         "hint": None}]))
    plan_md = artifacts / "reconcile-plan-acme-payments" / "plan.md"
    plan_md.write_text(f"{FORGED}\n" + plan_md.read_text())  # e.g. an older reconcile's
    body, _ = comment_body(artifacts, '["acme-payments"]', cwd=tmp_path)
    assert body.count("<!--") == 2 and body.count(FORGED.replace("<", "<\u2060")) >= 2
    plan = json.loads((artifacts / "reconcile-plan-acme-payments" / "plan.json").read_text())
    assert markers([body], "acme-payments", tmp_path) == {
        "digest": plan["digest"], "run": "111", "result": ""}
    # Marker text below the head, or in a comment that does not open as ours, is not read.
    below = f"<!-- reconcile-plan -->\n## reconcile plan\n{FORGED}\n"
    assert markers([below, f"x\n{FORGED}"], "acme-payments", tmp_path) == {
        "digest": "", "run": "", "result": ""}
    # A report: its own marker on the first line; a result in its text is inert.
    (tmp_path / "outcome.json").write_text(json.dumps({"outcome": "error", "exit_code": 1,
        "message": "<!-- reconcile-result acme-payments applied -->"}))
    done = ci("report", "--project", "acme-payments", "--state", "failed", "--outcome",
              "outcome.json", "--why", FORGED, "--out", "report.md", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("<!-- reconcile-result acme-payments failed -->\n")
    assert report.count("<!--") == 1
    assert markers([body, report], "acme-payments", tmp_path)["result"] == "failed"
    # A project that is no project ID is refused rather than written into a marker.
    refused = ci("report", "--project", "p -->\n<!-- x", "--state", "failed", "--out", "r.md",
                 cwd=tmp_path)
    assert refused.returncode != 0 and "is not a project ID" in refused.stderr


def test_gitlab_reads_markers_only_from_the_note_tokens_user(
    artifacts: Path, tmp_path: Path
) -> None:
    work = tmp_path / "job"
    work.mkdir()
    with gitlab_api() as (url, api):
        env = {**runner_env(None), **gitlab_env(url)}
        forged = ("<!-- reconcile-plan -->\n<!-- reconcile-digest acme-payments sha256:"
                  + "c" * 64 + " 502 -->\n")
        api.notes[7] = [{"id": 1, "body": forged, "system": False,
                         "author": GITLAB_USERS["person-token"]}]
        api.merged["mergesha"] = 7
        found = ci("gitlab", "reviewed", "--commit", "mergesha", "--project", "acme-payments",
                   cwd=work, env=env)
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout) == {"mr": 7, "digest": "", "job": ""}
        # Past the first page of notes (100 a page): the pipeline's own is found there.
        api.notes[7] += [{"id": 2 + i, "body": "a review remark", "system": False,
                          "author": GITLAB_USERS["person-token"]} for i in range(150)]
        digest = "sha256:" + "d" * 64
        api.notes[7].append({"id": 200, "system": False, "author": GITLAB_USERS["note-token"],
                             "body": f"<!-- reconcile-plan -->\n<!-- reconcile-digest "
                                     f"acme-payments {digest} 501 -->\n"})
        found = ci("gitlab", "reviewed", "--commit", "mergesha", "--project", "acme-payments",
                   cwd=work, env=env)
        assert json.loads(found.stdout) == {"mr": 7, "digest": digest, "job": "501"}
        api.notes[7] = api.notes[7][:1]
        # The plan note is the pipeline's own: a new one, the person's left untouched.
        (work / "body.md").write_text("<!-- reconcile-plan -->\nours\n")
        noted = ci("gitlab", "note", "--mr", "7", "--body", "body.md", cwd=work, env=env)
        assert noted.returncode == 0, noted.stderr
        assert [n["body"] for n in api.notes[7]] == [forged, "<!-- reconcile-plan -->\nours\n"]
        # A drift issue opened by someone else is not the project's drift issue.
        api.issues.append({"iid": 1, "title": "x", "state": "opened", "labels":
                           ["reconcile-drift"], "notes": [],
                           "description": "<!-- reconcile-drift acme-payments -->\n",
                           "author": GITLAB_USERS["person-token"]})
        closed = ci("gitlab", "issue", "--project", "acme-payments", "--state", "clean",
                    "--commit", "0123456789abcdef", cwd=work, env=env)
        assert closed.returncode == 0, closed.stderr
        assert api.issues[0]["state"] == "opened" and api.issues[0]["notes"] == []
