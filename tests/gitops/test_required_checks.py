"""Checks branch protection can require: GitHub leaves a required check that a `paths:`
filter skipped "pending" forever (a pull request that does not touch the specs could
never merge), so the example workflow has no path filter at all and one job,
`reconcile`, that runs on every pull request whatever happened before it and passes
only when validation and every plan passed (or had nothing to do). GitLab's "Pipelines
must succeed" needs a pipeline on every merge request: no `changes:` rule anywhere."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.gitops.ci_support import GITHUB, GITLAB, run_block, runner_env


def triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert isinstance(on, dict)
    return on


def keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return {str(k) for k in node} | {k for v in node.values() for k in keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in keys(v)}
    return set()


def test_no_path_filter_on_any_trigger() -> None:
    on = triggers(GITHUB)
    assert "pull_request" in on and "push" in on
    assert not {"paths", "paths-ignore"} & keys(on)


def test_the_required_job_always_reports_on_pull_requests() -> None:
    job = GITHUB["jobs"]["reconcile"]
    pr_jobs = set(GITHUB["jobs"]) - {"reconcile", "apply"}  # apply runs on push only
    assert set(job["needs"]) == pr_jobs == {"projects", "validate", "plan", "comment"}
    assert job["if"].startswith("always()")
    assert "steps" in job and all("uses" not in s for s in job["steps"])


def results(**given: str) -> str:
    return json.dumps({name: {"result": r, "outputs": {}} for name, r in given.items()})


@pytest.mark.parametrize(
    ("given", "passes"),
    [
        ({"projects": "success", "validate": "success", "plan": "success",
          "comment": "success"}, True),
        ({"projects": "success", "validate": "success", "plan": "skipped",
          "comment": "success"}, True),  # nothing touched, or a fork
        ({"projects": "success", "validate": "failure", "plan": "success",
          "comment": "success"}, False),
        ({"projects": "success", "validate": "success", "plan": "failure",
          "comment": "success"}, False),
        ({"projects": "failure", "validate": "success", "plan": "skipped",
          "comment": "success"}, False),
        ({"projects": "success", "validate": "success", "plan": "cancelled",
          "comment": "success"}, False),
    ],
)
def test_the_required_job_passes_only_when_everything_did(
    given: dict[str, str], passes: bool
) -> None:
    script = GITHUB["jobs"]["reconcile"]["steps"][0]["run"]
    done = subprocess.run(["bash", "-eo", "pipefail", "-c", script],
                          env={**runner_env(None), "RESULTS": results(**given)},
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode == 0) is passes, done.stdout + done.stderr
    assert "validate: " in done.stdout  # each job's result is in the log


def test_gitlab_runs_a_pipeline_for_every_merge_request() -> None:
    assert "changes" not in keys(GITLAB)
    assert {"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'} in GITLAB["workflow"]["rules"]
    for name, job in GITLAB.items():
        if isinstance(job, dict):
            assert "only" not in job and "except" not in job, name


def test_the_plan_matrix_comes_from_the_specs() -> None:
    """No project list typed into the workflow: the matrix is `projects`' output."""
    touched = "${{ fromJSON(needs.projects.outputs.touched) }}"
    assert GITHUB["jobs"]["plan"]["strategy"]["matrix"]["project"] == touched
    assert GITHUB["jobs"]["apply"]["strategy"]["matrix"]["project"] == touched
    assert "reconcile projects" in run_block(GITHUB, "projects", "projects")
    assert "acme-" not in json.dumps(GITHUB) and "acme-" not in json.dumps(GITLAB)
