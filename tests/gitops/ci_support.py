"""Running the CI examples' own steps as their runners would: a spec repository in git
(with a bare `origin`, pull requests as branches, merges as merge commits), each
workflow `run:` block under bash with the installed `reconcile` and the runner's
variables, each `actions/github-script` step under node against an in-memory GitHub
(github_script_harness.js), and artifacts kept per run as the Actions store keeps
them. The local server stands in for Google Cloud (PUBSUB_EMULATOR_HOST, as a job
pointed at an emulator would set it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.gitops.workflow_lines import ROOT

GITHUB = yaml.safe_load((ROOT / "examples" / "github" / "reconcile.yml").read_text())
DRIFT = yaml.safe_load((ROOT / "examples" / "github" / "drift.yml").read_text())
GITLAB = yaml.safe_load((ROOT / "examples" / "gitlab" / ".gitlab-ci.yml").read_text())
CI_SCRIPT = ROOT / "examples" / "ci" / "reconcile_ci.py"
HARNESS = Path(__file__).with_name("github_script_harness.js")
BOT = {"type": "Bot", "login": "github-actions[bot]"}
# Issue 39: an empty spec file named like a digest marker passes validation with a
# warning that quotes its path (and so do its plan's warnings).
FORGED_DIGEST_FILE = ("specs/<!-- reconcile-digest acme-payments sha256:" + "b" * 64
                      + " 99999 -->.yaml")


def step_of(workflow: dict[str, Any], job: str, key: str) -> dict[str, Any]:
    """A step by its id or its name."""
    for step in workflow["jobs"][job]["steps"]:
        if key in (step.get("id"), step.get("name")):
            return dict(step)
    raise AssertionError(f"no step {key!r} in job {job!r}")


def run_block(workflow: dict[str, Any], job: str, key: str) -> str:
    return str(step_of(workflow, job, key)["run"])


def github_script(workflow: dict[str, Any], job: str, key: str) -> str:
    return str(step_of(workflow, job, key)["with"]["script"])


def gitlab_script(job: str) -> str:
    return "\n".join(GITLAB[job]["script"])


def run_node(script: str, state: dict[str, Any], cwd: Path,
             env: dict[str, str] | None = None) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed to run the actions/github-script steps of the examples")
    (cwd / "script.js").write_text(script)
    (cwd / "state.json").write_text(json.dumps(state))
    done = subprocess.run([node, str(HARNESS), "script.js", "state.json"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads((cwd / "state.json").read_text())
    return result


@dataclass
class Shell:
    code: int
    out: str
    err: str
    outputs: dict[str, str]


def runner_env(server_address: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV"))}
    env.pop("PUBSUB_EMULATOR_HOST", None)
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        SPECS="specs/", NO_COLOR="1", RECONCILE_CI=str(CI_SCRIPT),
        GIT_AUTHOR_NAME="test", GIT_AUTHOR_EMAIL="test@example.invalid",
        GIT_COMMITTER_NAME="test", GIT_COMMITTER_EMAIL="test@example.invalid",
        GIT_CONFIG_NOSYSTEM="1",
        GITHUB_SERVER_URL="https://github.com", GITHUB_REPOSITORY="acme/specs",
        GITHUB_REF="refs/heads/main",
    )
    if server_address is not None:
        env["PUBSUB_EMULATOR_HOST"] = server_address
    return env


@dataclass
class Repo:
    """A spec repository on a runner: `root` is the checkout, `origin` the remote; the
    in-memory GitHub (`github`: comments, pull requests by merge commit, labels,
    issues) and the stored artifacts of every run (`artifacts[(run, name)]`)."""

    root: Path
    origin: Path
    env: dict[str, str]
    github: dict[str, Any] = field(default_factory=lambda: {"comments": [], "prsByCommit": {}})
    artifacts: dict[tuple[int, str], Path] = field(default_factory=dict)
    stash: Path = Path()
    prs: int = 0

    # -- git -----------------------------------------------------------------------
    def git(self, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=self.root, env=self.env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
        return done.stdout.strip()

    def edit(self, rel: str, old: str, new: str) -> None:
        path = self.root / rel
        text = path.read_text()
        assert old in text, (rel, old)
        path.write_text(text.replace(old, new, 1))

    def open_pr(self, edits: list[tuple[str, str, str]],
                added: dict[str, str] | None = None) -> tuple[int, str]:
        """A pull request branched from main with these edits, and the `added` files
        (path: text): (number, branch)."""
        self.prs += 1
        branch = f"pr-{self.prs}"
        self.git("checkout", "-q", "-B", branch, "main")
        for rel, old, new in edits:
            self.edit(rel, old, new)
        for rel, text in (added or {}).items():
            (self.root / rel).write_text(text)
            self.git("add", rel)
        self.git("commit", "-q", "-am", f"pull request {self.prs}")
        self.git("checkout", "-q", "main")
        return self.prs, branch

    def pr_checkout(self, branch: str) -> str:
        """What actions/checkout gives a pull_request run: the branch merged into main
        (refs/pull/N/merge), HEAD^1 being main. Returns the branch head."""
        self.git("checkout", "-q", "--detach", "main")
        self.git("merge", "-q", "--no-ff", "--no-edit", branch)
        return self.git("rev-parse", branch)

    def update_branch(self, branch: str) -> None:
        """"Update branch": main merged into the pull request's branch."""
        self.git("checkout", "-q", branch)
        self.git("merge", "-q", "--no-edit", "main")
        self.git("checkout", "-q", "main")

    def merge(self, number: int, branch: str) -> tuple[str, str]:
        """Merge the pull request into main and push: (before, merge commit)."""
        self.git("checkout", "-q", "main")
        before = self.git("rev-parse", "HEAD")
        self.git("merge", "-q", "--no-ff", "-m", f"Merge pull request #{number}", branch)
        sha = self.git("rev-parse", "HEAD")
        self.git("push", "-q", "origin", "main")
        self.github["prsByCommit"][sha] = [
            {"number": number, "merged_at": "2026-12-01T00:00:00Z", "merge_commit_sha": sha}
        ]
        return before, sha

    def checkout(self, sha: str) -> None:
        self.git("checkout", "-q", "--detach", sha)

    # -- steps ---------------------------------------------------------------------
    def bash(self, script: str, run_id: int = 1, **extra: str) -> Shell:
        """A `run:` block the way GitHub Actions runs it (bash -eo pipefail)."""
        outputs = self.stash / "github-output"
        outputs.write_text("")
        env = {**self.env, "GITHUB_RUN_ID": str(run_id), "GITHUB_OUTPUT": str(outputs),
               **extra}
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=self.root, env=env, capture_output=True, text=True, timeout=600,
        )
        pairs = (line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line)
        return Shell(done.returncode, done.stdout, done.stderr, dict(pairs))

    def step(self, job: str, key: str, run_id: int = 1, **extra: str) -> Shell:
        """The workflow's own `run:` block, with the step's `env:` given in `extra`."""
        return self.bash(run_block(GITHUB, job, key), run_id, **extra)

    def script(self, job: str, key: str, context: dict[str, Any],
               workflow: dict[str, Any] = GITHUB, **env: str) -> dict[str, Any]:
        """The workflow's own github-script step against the in-memory GitHub (with
        the workflow's `env:`, as a step has it); the GitHub state is kept for the next
        step."""
        step_env = {**workflow.get("env", {}), "RECONCILE_CI": self.env["RECONCILE_CI"], **env}
        state = {**self.github, "context": {"repo": {"owner": "acme", "repo": "specs"},
                                            **context}, "env": step_env}
        done = run_node(github_script(workflow, job, key), state, self.root, self.env)
        for key_ in ("comments", "prsByCommit", "labels", "issues"):
            if key_ in done:
                self.github[key_] = done[key_]
        return done

    def reconcile(self, *args: str) -> Shell:
        return self.bash("reconcile " + " ".join(f"'{a}'" for a in args))

    # -- artifacts -----------------------------------------------------------------
    def upload(self, run_id: int, name: str, directory: str) -> None:
        kept = self.stash / f"artifact-{run_id}-{name}"
        if kept.exists():
            shutil.rmtree(kept)
        shutil.copytree(self.root / directory, kept)
        self.artifacts[(run_id, name)] = kept

    def download(self, run_id: int, name: str, directory: str) -> None:
        target = self.root / directory
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(self.artifacts[(run_id, name)], target)

    def clean(self, *names: str) -> None:
        """A fresh runner: the previous job's files are gone."""
        for name in names:
            path = self.root / name
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()

    def comments_on(self, number: int) -> list[str]:
        return [c["body"] for c in self.github["comments"] if c["issue_number"] == number]


def make_repo(tmp: Path, server_address: str | None, prepare: Callable[[Path], None]) -> Repo:
    """A repository whose main holds what `prepare` writes into the checkout, pushed
    to a bare origin."""
    origin, root, stash = tmp / "origin.git", tmp / "checkout", tmp / "stash"
    stash.mkdir()
    env = runner_env(server_address)
    env["HOME"] = str(tmp)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True,
                   env=env, capture_output=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=env,
                   capture_output=True)
    repo = Repo(root, origin, env, stash=stash)
    prepare(root)
    # What the steps leave in the checkout (a runner's scratch files) is not committed.
    (root / ".gitignore").write_text(
        "/.reconcile/\n/out/\n/fresh/\n/reviewed/\n/artifacts/\n/validation/\n/drift/\n"
        "/*.json\n/*.md\n/*.txt\n/script.js\n"
    )
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "specs")
    repo.git("remote", "add", "origin", str(origin))
    repo.git("push", "-q", "origin", "main")
    return repo


def copy_reference_specs(root: Path) -> None:
    shutil.copytree(ROOT / "specs", root / "specs")
    (root / "ci").mkdir()
    shutil.copy2(CI_SCRIPT, root / "ci" / "reconcile_ci.py")


# The users behind the tokens GitLab's API is called with: the note token's is the
# project access token's bot user (the pipeline's identity); another is a person.
GITLAB_USERS = {"note-token": {"id": 4242, "username": "project_42_bot_1"},
                "person-token": {"id": 7, "username": "mallory"}}


class GitLabApi(BaseHTTPRequestHandler):
    """The parts of GitLab's REST API the examples call, in memory: the token's user,
    merge-request notes (with their author) and labels, the merge requests of a
    commit, issues (with their author) and their notes, and job artifacts
    (`files[(job, path)]`). Every call's token is kept."""

    notes: dict[int, list[dict[str, Any]]]
    labels: dict[int, set[str]]
    merged: dict[str, int]  # merge commit -> merge request
    issues: list[dict[str, Any]]
    files: dict[tuple[str, str], bytes]
    tokens: list[str]
    prefix = "/api/v4/projects/42"

    def _reply(self, data: Any, raw: bytes | None = None, status: int = 200,
               next_page: str = "") -> None:
        body = raw if raw is not None else json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Next-Page", next_page)
        self.end_headers()
        self.wfile.write(body)

    def _page(self, items: list[Any], query: dict[str, list[str]]) -> None:
        """A listing as GitLab pages it (per_page, default 20; page, from 1)."""
        size = int(query.get("per_page", ["20"])[0])
        page = int(query.get("page", ["1"])[0])
        more = len(items) > page * size
        self._reply(items[(page - 1) * size:page * size], next_page=str(page + 1) if more else "")

    def _body(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        return data

    def _route(self) -> tuple[list[str], dict[str, list[str]]]:
        self.tokens.append(self.headers.get("PRIVATE-TOKEN", ""))
        url = urllib.parse.urlsplit(self.path)
        assert url.path.startswith(self.prefix), url.path
        return url.path[len(self.prefix):].strip("/").split("/"), urllib.parse.parse_qs(url.query)

    def _author(self) -> dict[str, Any]:
        return GITLAB_USERS[self.headers.get("PRIVATE-TOKEN", "")]

    def do_GET(self) -> None:
        if self.path == "/api/v4/user":
            self.tokens.append(self.headers.get("PRIVATE-TOKEN", ""))
            return self._reply(self._author())
        parts, query = self._route()
        if parts[:1] == ["merge_requests"] and parts[2:] == ["notes"]:
            return self._page(self.notes.get(int(parts[1]), []), query)
        if parts[:2] == ["repository", "commits"] and parts[3:] == ["merge_requests"]:
            mr = self.merged.get(parts[2])
            return self._reply([] if mr is None else [{"iid": mr, "state": "merged"}])
        if parts == ["issues"]:
            label = query.get("labels", [""])[0]
            return self._page([i for i in self.issues
                               if i["state"] == "opened" and label in i["labels"]], query)
        if parts[:1] == ["jobs"] and parts[2:3] == ["artifacts"]:
            found = self.files.get((parts[1], "/".join(parts[3:])))
            if found is None:
                return self._reply({"message": "404 Not found"}, status=404)
            return self._reply(None, raw=found)
        return self._reply({"message": f"unexpected GET {self.path}"}, status=500)

    def do_POST(self) -> None:
        parts, _ = self._route()
        body = self._body()
        if parts[:1] == ["merge_requests"] and parts[2:] == ["notes"]:
            notes = self.notes.setdefault(int(parts[1]), [])
            note = {"id": 1 + sum(len(n) for n in self.notes.values()), "body": body["body"],
                    "author": self._author(), "system": False}
            notes.append(note)
            return self._reply(note)
        if parts == ["issues"]:
            issue = {"iid": len(self.issues) + 1, "title": body["title"], "state": "opened",
                     "description": body["description"], "labels": body["labels"].split(","),
                     "notes": [], "author": self._author()}
            self.issues.append(issue)
            return self._reply(issue)
        if parts[:1] == ["issues"] and parts[2:] == ["notes"]:
            issue = next(i for i in self.issues if i["iid"] == int(parts[1]))
            issue["notes"].append(body["body"])
            return self._reply({})
        return self._reply({"message": f"unexpected POST {self.path}"}, status=500)

    def do_PUT(self) -> None:
        parts, _ = self._route()
        body = self._body()
        if parts[:1] == ["merge_requests"] and parts[2:3] == ["notes"]:
            note = next(n for n in self.notes[int(parts[1])] if n["id"] == int(parts[3]))
            note["body"] = body["body"]
            return self._reply(note)
        if parts[:1] == ["merge_requests"] and len(parts) == 2:
            have = self.labels.setdefault(int(parts[1]), set())
            have |= set(filter(None, body.get("add_labels", "").split(",")))
            have -= set(filter(None, body.get("remove_labels", "").split(",")))
            return self._reply({})
        if parts[:1] == ["issues"] and len(parts) == 2:
            issue = next(i for i in self.issues if i["iid"] == int(parts[1]))
            if "description" in body:
                issue["description"] = body["description"]
            if body.get("state_event") == "close":
                issue["state"] = "closed"
            return self._reply(issue)
        return self._reply({"message": f"unexpected PUT {self.path}"}, status=500)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def gitlab_api() -> Iterator[tuple[str, type[GitLabApi]]]:
    """A GitLab API on loopback: (CI_API_V4_URL, the handler class holding its state)."""
    handler = type("Api", (GitLabApi,), {"notes": {}, "labels": {}, "merged": {},
                                         "issues": [], "files": {}, "tokens": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/v4", handler
    finally:
        server.shutdown()
        server.server_close()


def gitlab_env(url: str, **extra: str) -> dict[str, str]:
    """The CI/CD variables the GitLab jobs read (project 42, a note token)."""
    return {"CI_API_V4_URL": url, "CI_PROJECT_ID": "42", "RECONCILE_NOTE_TOKEN": "note-token",
            "CI_DEFAULT_BRANCH": "main", "CI_PIPELINE_URL": "https://gitlab.example/p/-/pipelines/1",
            **extra}
