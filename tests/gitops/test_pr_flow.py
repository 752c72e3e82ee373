"""The pull-request flow of examples/github/reconcile.yml end to end, against the local
server: the workflow's own `run:` blocks (validate, plan, apply, re-plan) run under
bash with the installed `reconcile`, and its own github-script steps (the sticky
comment, then "Find the reviewed plan") carry the digest from the plan to the apply,
as on GitHub. Then the stale path: a topic changed between plan and apply is refused
(exit 1, naming the topic, nothing applied) and the re-plan shows the change."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.orgpolicy.snapshot import load_snapshot
from tests.gitops.test_comment_scripts import github_script, run_node
from tests.gitops.test_plan_schema import errors as schema_errors
from tests.gitops.workflow_lines import ROOT

WORKFLOW = yaml.safe_load((ROOT / "examples" / "github" / "reconcile.yml").read_text())
PROJECT = "acme-payments"
OTHERS = ("acme-analytics", "acme-platform")
DIGEST_LINE = re.compile(r"^- Digest: `(sha256:[0-9a-f]{64})`", re.MULTILINE)


def run_block(job: str, step_id: str | None = None, starts: str = "") -> str:
    """The `run:` script of a workflow step, by its id or by how its script starts."""
    for step in WORKFLOW["jobs"][job]["steps"]:
        script = step.get("run")
        if script is None:
            continue
        if (step_id is not None and step.get("id") == step_id) or (
            step_id is None and script.startswith(starts)
        ):
            return str(script)
    raise AssertionError(f"no run step {step_id or starts!r} in job {job!r}")


@dataclass
class Shell:
    code: int
    out: str
    err: str
    outputs: dict[str, str]


@dataclass
class Repo:
    """A spec repository checked out in a temporary directory, as a runner sees it."""

    root: Path
    env: dict[str, str]

    def bash(self, script: str, **extra: str) -> Shell:
        """A step's script the way GitHub Actions runs it (bash -eo pipefail)."""
        outputs = self.root / "github-output"
        outputs.write_text("")
        env = {**self.env, **extra, "GITHUB_OUTPUT": str(outputs)}
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=self.root, env=env, capture_output=True, text=True, timeout=600,
        )
        pairs = (line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line)
        return Shell(done.returncode, done.stdout, done.stderr, dict(pairs))

    def reconcile(self, *args: str) -> Shell:
        return self.bash("reconcile " + " ".join(f"'{a}'" for a in args))


@pytest.fixture
def repo(tmp_path: Path, local_server: Any) -> Iterator[Repo]:
    """The reference specs in a git repository; the local server seeded with their
    org-policy snapshot stands in for Google Cloud (PUBSUB_EMULATOR_HOST, as a CI job
    pointed at an emulator would set it)."""
    root = tmp_path / "spec-repo"
    shutil.copytree(ROOT / "specs", root / "specs")
    assert subprocess.run(["git", "init", "-q", str(root)], capture_output=True).returncode == 0
    local_server.seed_policies(load_snapshot(root / "specs" / "org-policy.yaml"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV"))}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PUBSUB_EMULATOR_HOST=local_server.address, SPECS="specs/", PROJECT=PROJECT,
        NO_COLOR="1",
    )
    yield Repo(root, env)


def live_labels(client: Any, project: str) -> dict[str, dict[str, str]]:
    return {
        t.name.rsplit("/", 1)[1]: dict(t.labels)
        for t in client.list_topics(request={"project": f"projects/{project}"})
    }


def reviewed_digest(repo: Repo) -> str:
    """The digest the way the workflow carries it: the comment step reads the plan
    artifacts and writes the sticky comment, the apply job's script reads the comment."""
    artifact = repo.root / "plans" / f"reconcile-plan-{PROJECT}"
    if artifact.exists():
        shutil.rmtree(artifact)
    shutil.copytree(repo.root / "out", artifact)
    context = {
        "repo": {"owner": "acme", "repo": "specs"}, "runId": 111,
        "serverUrl": "https://github.com",
        "payload": {"pull_request": {"number": 5, "head": {"sha": "headsha"}}},
    }
    state: dict[str, Any] = {"comments": [], "context": context}
    state = run_node(github_script("comment", "Post or update the one sticky plan comment"),
                     state, repo.root)
    body = state["comments"][0]["body"]
    address = repo.env["PUBSUB_EMULATOR_HOST"]
    assert f"target: `emulator {address}`, digest: `sha256:" in body
    state["context"] = {"repo": context["repo"], "runId": 222, "eventName": "push",
                        "sha": "mergesha", "payload": {}}
    state["prs"] = [{"number": 5, "merged_at": "2026-11-30T00:00:00Z",
                     "merge_commit_sha": "mergesha", "head": {"sha": "headsha"}}]
    state["runs"] = [{"id": 111}]
    state["env"] = {"PROJECT": PROJECT}
    found = run_node(github_script("apply", "Find the reviewed plan"), state, repo.root)
    assert found["failed"] is None, found["failed"]
    digest: str = found["outputs"]["digest"]
    return digest


def plan_step(repo: Repo) -> tuple[str, str]:
    """The plan job's step; returns (its recorded exit code, plan.md)."""
    done = repo.bash(run_block("plan", "plan"))
    assert done.code == 0, done.err
    markdown = (repo.root / "out" / "plan.md").read_text()
    code = (repo.root / "out" / "exit-code").read_text().strip()
    return code, markdown


def download(repo: Repo) -> None:
    """The apply job's download of the plan job's artifact into reviewed/."""
    reviewed = repo.root / "reviewed"
    if reviewed.exists():
        shutil.rmtree(reviewed)
    shutil.copytree(repo.root / "out", reviewed)


def apply_step(repo: Repo, digest: str) -> Shell:
    """The apply job's step on the downloaded artifact (reviewed/)."""
    download(repo)
    return repo.bash(run_block("apply", "apply"), DIGEST=digest)


def test_pull_request_plan_comment_apply_then_no_changes(
    repo: Repo, local_server: Any, publisher_client: Any
) -> None:
    validated = repo.bash(run_block("validate", starts="reconcile validate"))
    assert validated.code == 0, validated.err
    local_server.counters.reset()
    code, markdown = plan_step(repo)
    assert code == "2"  # changes
    assert local_server.counters.projects("ListTopics") == {PROJECT}
    assert local_server.counters.projects("GetEffectivePolicy") == {PROJECT}
    shown = DIGEST_LINE.search(markdown)
    assert shown is not None, markdown
    assert f"- Projects: `{PROJECT}` only (`--project`)" in markdown
    plan = json.loads((repo.root / "out" / "plan.json").read_text())
    assert plan["projects"] == [PROJECT]
    assert schema_errors(plan) == []  # docs/plan.schema.json knows `projects`
    digest = reviewed_digest(repo)
    assert digest == shown.group(1) == plan["digest"]

    applied = apply_step(repo, digest)
    assert applied.code == 0, applied.out + applied.err
    assert applied.outputs == {}  # not stale
    assert "Apply complete: 3 applied (3 created" in applied.out
    assert set(live_labels(publisher_client, PROJECT)) == {"orders", "refunds", "payment-audit"}
    for other in OTHERS:
        assert live_labels(publisher_client, other) == {}

    again = repo.reconcile("plan", "specs/", "--project", PROJECT, "--detailed-exitcode")
    assert again.code == 0, again.out + again.err
    assert "No changes. The live topics match the specs." in again.out


def test_a_topic_changed_between_plan_and_apply_is_refused_and_replanned(
    repo: Repo, local_server: Any, publisher_client: Any
) -> None:
    from google.pubsub_v1.types import Topic

    first = repo.reconcile("apply", "specs/", "--project", PROJECT, "--auto-approve")
    assert first.code == 0, first.err
    defaults = repo.root / "specs" / PROJECT / "defaults.yaml"
    defaults.write_text(defaults.read_text().replace("team: payments", "team: payments-core"))
    code, _ = plan_step(repo)
    assert code == "2"
    digest = reviewed_digest(repo)
    # Someone changes a topic by hand after the review, before the merge.
    name = f"projects/{PROJECT}/topics/orders"
    labels = {**live_labels(publisher_client, PROJECT)["orders"], "tier": "hand-edited"}
    publisher_client.update_topic(
        request={"topic": Topic(name=name, labels=labels), "update_mask": {"paths": ["labels"]}}
    )
    local_server.counters.reset()

    download(repo)
    refused = repo.reconcile("apply", "reviewed/plan.json", "--expect-digest", digest)
    assert refused.code == 1
    assert f"  - {name}: modified since the plan" in refused.err
    assert "the saved plan is stale; nothing was applied" in refused.err
    step = apply_step(repo, digest)
    assert step.code == 0, step.out + step.err  # the workflow turns it into a re-plan
    assert step.outputs == {"stale": "true"}
    assert f"{name}: modified since the plan" in (repo.root / "apply.log").read_text()
    assert sum(local_server.counters.get(m) for m in ("CreateTopic", "UpdateTopic")) == 0
    assert live_labels(publisher_client, PROJECT)["orders"]["team"] == "payments"

    replanned = repo.bash(run_block("apply", "replan"))
    assert replanned.code == 0, replanned.err
    fresh = (repo.root / "out" / "plan.md").read_text()
    assert "hand-edited" in fresh and "payments-core" in fresh
    assert replanned.outputs["digest"] != digest
    assert (repo.root / "out" / "exit-code").read_text().strip() == "2"
