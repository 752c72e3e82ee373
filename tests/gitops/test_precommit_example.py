"""examples/pre-commit-config.yaml works as written once `repo:` and `rev:` are set:
real `pre-commit install` and `git commit` in a throwaway spec repository, with the
hook taken from a commit of this working tree (uncommitted changes included). A tree
whose topic asks for a region the org-policy snapshot forbids cannot be committed; a
clean one can; a tree without a snapshot is refused by --require-org-policy."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitops.repo_support import git_env, run_git
from tests.gitops.workflow_lines import PRE_COMMIT_EXAMPLE, ROOT
from tests.hooksource import HookSource

SNAPSHOT = """\
name: projects/acme-analytics/policies/gcp.resourceLocations
spec:
  rules:
    - values:
        allowedValues: [in:eu-locations]
---
ancestry:
  projects/acme-analytics: organizations/1001
"""
TOPIC = """\
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {project: acme-analytics, name: NAME}
spec:
  messageStoragePolicy:
    allowedPersistenceRegions: [REGION]
"""


def _config_from_example(source: Path, rev: str) -> str:
    """The example with only its two placeholders filled in."""
    text = PRE_COMMIT_EXAMPLE.read_text()
    text, repos = re.subn(r"(?m)^(\s*- repo: ).*$", rf"\g<1>{source}", text)
    text, revs = re.subn(r"(?m)^(\s*rev: ).*$", rf"\g<1>{rev}", text)
    assert (repos, revs) == (1, 1), "the example has one repo with one rev to pin"
    return text


@pytest.mark.slow
def test_example_config_blocks_a_broken_spec_and_lets_a_clean_tree_in(
    tmp_path: Path, local_wheels: dict[str, str], hook_source: HookSource
) -> None:
    if shutil.which("git") is None:
        pytest.fail("git is required for the pre-commit test")
    source, rev = hook_source.repo, hook_source.rev
    env = git_env(tmp_path / "home")
    (tmp_path / "home").mkdir()
    env["PRE_COMMIT_HOME"] = str(hook_source.home)  # the hook environment, built once
    env.update(local_wheels)  # the hook environment's dependencies from the session's wheels

    repo = tmp_path / "specs-repo"
    (repo / "specs").mkdir(parents=True)
    assert run_git(repo, env, "init", "-q").returncode == 0
    (repo / ".pre-commit-config.yaml").write_text(_config_from_example(source, rev))
    (repo / "specs" / "org-policy.yaml").write_text(SNAPSHOT)
    (repo / "specs" / "topics.yaml").write_text(
        TOPIC.replace("NAME", "clickstream").replace("REGION", "europe-west1")
    )
    installed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr

    run_git(repo, env, "add", "-A")
    clean = run_git(repo, env, "commit", "-m", "clean specs")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert re.search(r"reconcile validate\.+Passed", clean.stdout + clean.stderr)

    # A zone where a region goes, and a region the org policy does not allow: the zone
    # blocks the commit; the region is a warning (a topic that lists it already keeps
    # it: `plan` decides).
    (repo / "specs" / "exports.yaml").write_text(
        TOPIC.replace("NAME", "exports").replace("REGION", "us-east1, europe-west1-b")
    )
    run_git(repo, env, "add", "-A")
    blocked = run_git(repo, env, "commit", "-m", "a topic in a zone")
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, output
    assert re.search(r"reconcile validate\.+Failed", output), output
    assert "specs/exports.yaml:6:43: error[region-zone]: 'europe-west1-b' is a zone" in output
    assert (
        "specs/exports.yaml:6:33: warning[org-location-denied]: region 'us-east1' is not "
        "allowed by the effective constraints/gcp.resourceLocations of project acme-analytics"
    ) in output
    assert run_git(repo, env, "rev-list", "--count", "HEAD").stdout.strip() == "1"

    # No snapshot at all: --require-org-policy refuses rather than check less.
    run_git(repo, env, "rm", "-q", "-f", "specs/exports.yaml", "specs/org-policy.yaml")
    unchecked = run_git(repo, env, "commit", "-m", "drop the snapshot")
    output = unchecked.stdout + unchecked.stderr
    assert unchecked.returncode != 0, output
    assert "org-policy" in output.split("Failed", 1)[-1], output
    assert run_git(repo, env, "rev-list", "--count", "HEAD").stdout.strip() == "1"

    # The repository's own examples/specs, as the example's `specs/`: it passes as
    # written (it ships the snapshot --require-org-policy needs).
    run_git(repo, env, "reset", "-q", "--hard")
    shutil.rmtree(repo / "specs")
    shutil.copytree(ROOT / "examples" / "specs", repo / "specs")
    run_git(repo, env, "add", "-A")
    examples = run_git(repo, env, "commit", "-m", "the example specs")
    assert examples.returncode == 0, examples.stdout + examples.stderr
    assert re.search(r"reconcile validate\.+Passed", examples.stdout + examples.stderr)


@pytest.mark.slow
def test_the_hook_checks_what_is_committed_not_the_working_tree(
    tmp_path: Path, local_wheels: dict[str, str], hook_source: HookSource
) -> None:
    """An untracked file does not block a commit that leaves it out; a staged deletion
    blocks one although the file is still on disk; one validation of the whole staged
    tree, not one per staged file (the topic's profile is in a file it does not stage)."""
    source, rev = hook_source.repo, hook_source.rev
    env = git_env(tmp_path / "home")
    (tmp_path / "home").mkdir()
    env["PRE_COMMIT_HOME"] = str(hook_source.home)  # the hook environment, built once
    env.update(local_wheels)  # the hook environment's dependencies from the session's wheels
    repo = tmp_path / "specs-repo"
    shutil.copytree(ROOT / "examples" / "specs", repo / "specs")
    assert run_git(repo, env, "init", "-q").returncode == 0
    (repo / ".pre-commit-config.yaml").write_text(_config_from_example(source, rev))
    installed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    run_git(repo, env, "add", "-A")
    assert run_git(repo, env, "commit", "-m", "the example specs").returncode == 0

    # Work in progress, not staged: the commit of another change goes through.
    wip = TOPIC.replace("NAME", "goog-wip").replace("REGION", "us-east1")
    (repo / "specs" / "wip.yaml").write_text(wip)
    minimal = repo / "specs" / "minimal.yaml"
    minimal.write_text(minimal.read_text() + "# reviewed\n")
    run_git(repo, env, "add", "specs/minimal.yaml")
    passed = run_git(repo, env, "commit", "-m", "a comment")
    output = passed.stdout + passed.stderr
    assert passed.returncode == 0, output
    assert re.search(r"reconcile validate\.+Passed", output), output
    assert "wip.yaml" not in output

    # The profile's file removed from the commit only (still on disk): the staged topic
    # that uses it has no profile, which only a whole-tree check can see.
    run_git(repo, env, "rm", "-q", "--cached", "specs/hedging.yaml")
    hedged = (repo / "specs" / "hedging.yaml").read_text().split("---\n", 1)[1]
    (repo / "specs" / "payments.yaml").write_text(hedged)
    run_git(repo, env, "add", "specs/payments.yaml")
    blocked = run_git(repo, env, "commit", "-m", "the topic without its profile")
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, output
    assert re.search(r"reconcile validate\.+Failed", output), output
    unknown_profile = r"specs/payments\.yaml:\d+:\d+: error\[[a-z-]+\]: .*low-latency"
    assert re.search(unknown_profile, output), output
    assert "wip.yaml" not in output
    assert run_git(repo, env, "rev-list", "--count", "HEAD").stdout.strip() == "2"

    # A staged symlink out of the repository (issue 49): the commit records the link,
    # not the file; the hook names the link and never reads what it points at.
    run_git(repo, env, "reset", "-q", "--hard")
    outside = tmp_path / "outside.yaml"
    outside.write_text(TOPIC.replace("NAME", "goog-outside").replace("REGION", "us-east1"))
    (repo / "specs" / "linked.yaml").symlink_to(outside)
    run_git(repo, env, "add", "specs/linked.yaml")
    linked = run_git(repo, env, "commit", "-m", "a link out of the repository")
    output = linked.stdout + linked.stderr
    assert linked.returncode != 0, output
    assert re.search(r"reconcile validate\.+Failed", output), output
    assert f"specs/linked.yaml: error[path-link-outside]: this symlink leads outside the " \
        f"repository (to {outside})" in output, output
    assert "goog-outside" not in output  # the file it points at was never read
    assert run_git(repo, env, "rev-list", "--count", "HEAD").stdout.strip() == "2"
