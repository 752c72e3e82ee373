"""The scripts inside the CI examples, run for real on real plan files: the comment
step writes ONE sticky comment (created once, then updated) carrying each project's
digest behind a hidden marker, and the apply step reads back exactly that digest and
the run that made the plan. GitHub's scripts run under node with an in-memory
repository (tests/gitops/github_script_harness.js); GitLab's note script runs under
Python against a loopback HTTP server speaking the Notes API, and the apply job's jq
program extracts the digest from the notes it wrote."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.gitops.workflow_lines import ROOT

GITHUB = yaml.safe_load((ROOT / "examples" / "github" / "reconcile.yml").read_text())
GITLAB = yaml.safe_load((ROOT / "examples" / "gitlab" / ".gitlab-ci.yml").read_text())
HARNESS = Path(__file__).with_name("github_script_harness.js")
FAKE_DIGEST = "sha256:" + "ab" * 32


def github_script(job: str, name: str) -> str:
    for step in GITHUB["jobs"][job]["steps"]:
        if step.get("name") == name:
            return str(step["with"]["script"])
    raise AssertionError(f"no step {name!r} in job {job!r}")


@pytest.fixture
def plans(run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Real plan files (reference specs, --local), one directory per project as the
    plan jobs leave them: plan.json, plan.md, exit-code. Returns project -> digest."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    made = run_cli("plan", "specs", "--local", "--out", "plan.json")
    assert made.exit_code == 0, made.stderr
    shown = run_cli("show", "plan.json", "--format", "markdown")
    assert shown.exit_code == 0, shown.stderr
    plan = json.loads((tmp_path / "plan.json").read_text())
    plan.setdefault("digest", FAKE_DIGEST)  # until plans carry their own digest
    digests = {}
    for project, code in (("acme-payments", "2"), ("acme-analytics", "0")):
        for root in (tmp_path / "plans" / f"reconcile-plan-{project}", tmp_path / "out" / project):
            root.mkdir(parents=True)
            (root / "plan.json").write_text(json.dumps(plan))
            (root / "plan.md").write_text(shown.stdout)
            (root / "exit-code").write_text(code + "\n")
        digests[project] = plan["digest"]
    return digests


def plans_dir(root: Path) -> str:
    """Where the `plans` fixture's --local plans record their state."""
    return str(root.resolve() / ".reconcile" / "local")


def run_node(script: str, state: dict[str, Any], cwd: Path) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed to run the actions/github-script steps of the example")
    (cwd / "script.js").write_text(script)
    (cwd / "state.json").write_text(json.dumps(state))
    done = subprocess.run([node, str(HARNESS), "script.js", "state.json"], cwd=cwd,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads((cwd / "state.json").read_text())
    return result


def test_github_one_sticky_comment_then_apply_reads_its_digest(
    plans: dict[str, str], tmp_path: Path
) -> None:
    comment = github_script("comment", "Post or update the one sticky plan comment")
    context = {
        "repo": {"owner": "acme", "repo": "specs"}, "runId": 111,
        "serverUrl": "https://github.com",
        "payload": {"pull_request": {"number": 5, "head": {"sha": "headsha"}}},
    }
    state: dict[str, Any] = {"comments": [], "context": context}
    state = run_node(comment, state, tmp_path)
    assert [c[0] for c in state["calls"]] == ["listComments", "createComment"]
    state = run_node(comment, state, tmp_path)  # a second push: the same comment
    assert [c[0] for c in state["calls"]] == ["listComments", "updateComment"]
    assert len(state["comments"]) == 1
    body = state["comments"][0]["body"]
    assert body.startswith("<!-- reconcile-plan -->\n")
    for project, digest in plans.items():
        assert f"<!-- reconcile-digest {project} {digest} -->" in body
        assert f"digest: `{digest}`" in body
    assert "### `acme-payments`: changes" in body
    assert "### `acme-analytics`: no changes" in body
    assert f"target: `local {plans_dir(tmp_path)}`, digest" in body
    assert "Plan: 7 to create" in body
    assert len(body) < 65536  # GitHub's comment limit

    find = github_script("apply", "Find the reviewed plan")
    state["context"] = {"repo": context["repo"], "runId": 222, "eventName": "push",
                        "sha": "mergesha", "payload": {}}
    state["prs"] = [{"number": 5, "merged_at": "2026-11-30T00:00:00Z",
                     "merge_commit_sha": "mergesha", "head": {"sha": "headsha"}}]
    state["runs"] = [{"id": 111}]
    state["env"] = {"PROJECT": "acme-payments"}
    found = run_node(find, state, tmp_path)
    assert found["failed"] is None, found["failed"]
    assert found["outputs"] == {"run_id": "111", "digest": plans["acme-payments"], "pr": "5"}
    listed = next(args for name, args in found["calls"] if name == "listWorkflowRuns")
    assert listed == {"owner": "acme", "repo": "specs", "workflow_id": 4242,
                      "event": "pull_request", "head_sha": "headsha", "status": "success"}

    state["env"] = {"PROJECT": "acme-unknown"}
    missing = run_node(find, state, tmp_path)
    assert missing["failed"] == "no reviewed digest for acme-unknown in the plan comment of #5"
    assert "run_id" not in missing["outputs"]


class NotesApi(BaseHTTPRequestHandler):
    """GitLab's merge-request Notes API, in memory: GET list, POST create, PUT update."""

    notes: list[dict[str, Any]]
    tokens: list[str]

    def _reply(self, data: Any) -> None:
        body = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        return data

    def do_GET(self) -> None:
        self.tokens.append(self.headers.get("PRIVATE-TOKEN", ""))
        self._reply(self.notes)

    def do_POST(self) -> None:
        self.tokens.append(self.headers.get("PRIVATE-TOKEN", ""))
        note = {"id": len(self.notes) + 1, "body": self._body()["body"], "path": self.path}
        self.notes.append(note)
        self._reply(note)

    def do_PUT(self) -> None:
        self.tokens.append(self.headers.get("PRIVATE-TOKEN", ""))
        note_id = int(self.path.rsplit("/", 1)[1])
        note = next(n for n in self.notes if n["id"] == note_id)
        note["body"] = self._body()["body"]
        self._reply(note)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def notes_api() -> Iterator[tuple[str, type[NotesApi]]]:
    handler = type("Notes", (NotesApi,), {"notes": [], "tokens": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/v4", handler
    finally:
        server.shutdown()
        server.server_close()


def test_gitlab_one_note_then_apply_extracts_its_digest(
    plans: dict[str, str], tmp_path: Path, notes_api: tuple[str, type[NotesApi]]
) -> None:
    url, api = notes_api
    script = GITLAB["comment"]["script"][0]
    program = script.split("<<'PY'\n", 1)[1].rsplit("PY", 1)[0]
    env = {"CI_API_V4_URL": url, "CI_PROJECT_ID": "42", "CI_MERGE_REQUEST_IID": "7",
           "RECONCILE_NOTE_TOKEN": "note-token", "CI_COMMIT_SHA": "headsha",
           "CI_PIPELINE_URL": "https://gitlab.example/p/-/pipelines/1", "PATH": "/usr/bin:/bin"}
    for _ in range(2):
        done = subprocess.run([sys.executable, "-"], input=program, cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    assert len(api.notes) == 1
    assert api.notes[0]["path"] == "/api/v4/projects/42/merge_requests/7/notes"
    assert set(api.tokens) == {"note-token"}
    body = api.notes[0]["body"]
    assert body.startswith("<!-- reconcile-plan -->\n")
    assert f"target: `local {plans_dir(tmp_path)}`, digest" in body
    for project, digest in plans.items():
        assert f"<!-- reconcile-digest {project} {digest} -->" in body

    jq = shutil.which("jq")
    if jq is None:
        pytest.fail("jq is needed to run the apply job's digest extraction")
    apply_script = "\n".join(GITLAB["apply"]["script"])
    line = next(li for li in apply_script.splitlines() if li.startswith("DIGEST="))
    jq_program = re.search(r"--arg p \"\$PROJECT\" '(.*)'\)$", line)
    assert jq_program is not None, line
    extracted = subprocess.run(
        [jq, "-r", "--arg", "p", "acme-payments", jq_program.group(1)],
        input=json.dumps(api.notes), capture_output=True, text=True, timeout=60,
    )
    assert extracted.returncode == 0, extracted.stderr
    assert extracted.stdout.strip() == plans["acme-payments"]
