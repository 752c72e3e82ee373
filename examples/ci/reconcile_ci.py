#!/usr/bin/env python3
"""The CI glue of reconcile's example pipelines (examples/github/*.yml and
examples/gitlab/.gitlab-ci.yml); copy it into your spec repository as
ci/reconcile_ci.py. Python 3.11+, standard library only: it reads the documents
reconcile writes (`validate --format json`, the plan file, `apply --format json`,
`projects --format json`) and never decides anything from reconcile's text output.

    comment    the one plan comment of a pull/merge request: validation diagnostics,
               each touched project's plan, its digest, labels and destroy warning
    covered    FRESH REVIEWED: exit 0 when every change of the fresh plan is one the
               reviewed plan showed, to the same result (address, action, after)
    report     the comment that settles a merged change for one project (applied,
               superseded, stale, failed...), with the hidden result marker
    drift      the issue body for a project whose scheduled plan found drift
    child      GitLab: the child pipeline (one job per touched project)
    gitlab     GitLab: notes, labels, issues and the walk over earlier merges, through
               the REST API with $RECONCILE_NOTE_TOKEN

Markers (hidden HTML comments) carry what later jobs read back: the reviewed digest of
each project and the run that made it, and each project's result on a merged change.
Content cannot forge one: the glue writes each marker as a whole line at the head of
its comment, from values it checks (a project ID, a sha256 digest, a run or job
number); every other text of a comment (paths, messages, names, plans) is made inert
(`inert`: no `<!--` is left in it); and a reader takes markers only from the head of
the pipeline's own comments (GitHub: the login in $RECONCILE_COMMENTER; GitLab: the
user of $RECONCILE_NOTE_TOKEN).

    markers    GitHub: the markers of this project in the pipeline's own comments
               (a JSON list of their bodies on stdin): digest, run, result
    install    pip install $RECONCILE_PIP_SPEC (a CI variable: the workflow files stay
               as they are); with $RECONCILE_SOURCE_TOKEN, git reads a private
               reconcile repository with it (for that one pip run, never written
               to a file or printed)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

PLAN_MARKER = "<!-- reconcile-plan -->"
PROJECT_ID = r"[a-z][a-z0-9-]{0,62}"  # what a Google Cloud project ID can be, and no more
DIGEST_MARKER = re.compile(
    rf"<!-- reconcile-digest ({PROJECT_ID}) (sha256:[0-9a-f]{{64}}) ([0-9]+) -->")
RESULT_MARKER = re.compile(rf"<!-- reconcile-result ({PROJECT_ID}) ([a-z-]+) -->")
DRIFT_MARKER = "<!-- reconcile-drift {project} -->"
# A word joiner (zero width) after the `<` of every `<!--` in content: shown the same,
# but neither an HTML comment (hiding what follows) nor a marker.
COMMENT_OPENER, INERT_OPENER = "<!--", "<\u2060!--"
# A merged change ends in one of these; `deferred` waits for a later merge's run.
FINAL = ("applied", "in-effect", "superseded", "stale", "failed", "refused")
LABELS = ("add-or-update", "destroy", "no-changes")
COMMENT_LIMIT = 60000  # GitHub allows 65,536 characters; GitLab 1,000,000
DETAILS_SHOWN = 10


def read(path: Path, default: str = "") -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return default


def read_json(path: Path) -> Any:
    try:
        return json.loads(read(path, "null"))
    except ValueError:
        return None


def inert(text: str) -> str:
    """`text` (content: paths, messages, names, plans) with no HTML comment opener."""
    return text.replace(COMMENT_OPENER, INERT_OPENER)


def checked_project(project: str) -> str:
    """A project ID as markers carry it; anything else is refused (it would not be a
    Google Cloud project, and could reshape a marker)."""
    if re.fullmatch(PROJECT_ID, project) is None:
        raise SystemExit(f"reconcile_ci.py: {project!r} is not a project ID")
    return project


def head_lines(body: str) -> list[str]:
    """The lines of a comment body (GitHub may return an edited one with CRLF)."""
    return body.replace("\r\n", "\n").split("\n")


def reviewed_digests(body: str) -> dict[str, tuple[str, str]]:
    """project -> (digest, run) from a plan comment's head: the digest marker lines
    right after its first line, PLAN_MARKER; nothing from anywhere else."""
    lines = head_lines(body)
    if lines[0] != PLAN_MARKER:
        return {}
    found: dict[str, tuple[str, str]] = {}
    for line in lines[1:]:
        match = DIGEST_MARKER.fullmatch(line)
        if match is None:
            break
        found.setdefault(match[1], (match[2], match[3]))
    return found


def result_of(body: str, project: str) -> str | None:
    """The state a result comment gives the project: its first line, and only it."""
    match = RESULT_MARKER.fullmatch(head_lines(body)[0])
    return match[2] if match is not None and match[1] == project else None


def markers_of(bodies: list[str], project: str) -> dict[str, str]:
    """What the pipeline's own comments (oldest first) say about the project: the
    digest and run of its first plan comment, the state of its last result comment."""
    planned = next((reviewed_digests(b) for b in bodies if b.startswith(PLAN_MARKER)), {})
    digest, run = planned.get(project, ("", ""))
    states = [s for s in (result_of(b, project) for b in bodies) if s is not None]
    return {"digest": digest, "run": run, "result": states[-1] if states else ""}


def fence(text: str, info: str = "text") -> str:
    """`text` in a code fence no backtick run inside can close (data stays inert)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text.rstrip()}\n{ticks}"


def code(text: str) -> str:
    """One value in a code span (project names, digests, shas)."""
    return "`" + str(text).replace("`", "'") + "`"


def clip(text: str, limit: int, where: str) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n\n… cut here: the whole plan is in {where}.\n"


# -- the plan comment ----------------------------------------------------------------


def plan_counts(plan: dict[str, Any]) -> dict[str, int]:
    counts = {"create": 0, "update": 0, "delete": 0, "no-op": 0}
    for rc in plan.get("resource_changes") or []:
        action = (rc.get("change") or {}).get("actions", ["no-op"])[0]
        counts[action] = counts.get(action, 0) + 1
    return counts


def deletions(plan: dict[str, Any]) -> list[str]:
    return [
        rc["address"]
        for rc in plan.get("resource_changes") or []
        if (rc.get("change") or {}).get("actions") == ["delete"]
    ]


def validation_section(directory: Path) -> tuple[list[str], bool]:
    """The validation diagnostics, errors and warnings alike, and whether it failed."""
    diagnostics = read_json(directory / "diagnostics.json")
    code_text = read(directory / "exit-code").strip()
    if diagnostics is None:
        return ["**Validation**: no result (see the run log).", ""], True
    failed = code_text not in ("", "0")
    errors = [d for d in diagnostics if d.get("severity") == "error"]
    warnings = [d for d in diagnostics if d.get("severity") != "error"]
    if not diagnostics:
        return ["**Validation**: ✅ no errors, no warnings.", ""], failed
    lines = [
        f"**Validation**: {'❌' if errors else '⚠️'} {len(errors)} error(s), "
        f"{len(warnings)} warning(s)" + (" — fix the errors: nothing can be applied." if errors else ""),
        "",
        fence("\n".join(
            f"{d.get('file')}:{d.get('line')}:{d.get('col')}: {d.get('severity')}"
            f"[{d.get('code')}]: {d.get('message')}" + (f" (hint: {d['hint']})" if d.get("hint") else "")
            for d in diagnostics
        )),
        "",
    ]
    return lines, failed


def project_section(
    project: str, directory: Path, limit: int
) -> tuple[list[str], set[str], str | None]:
    """One project's status line, destroy warning and plan; the labels its plan earns;
    its digest marker (None: no plan to apply)."""
    exit_code = read(directory / "exit-code").strip()
    plan = read_json(directory / "plan.json") or {}
    source = read(directory / "source").strip() or "unknown"
    digest = plan.get("digest", "none")
    counts = plan_counts(plan)
    labels: set[str] = set()
    if exit_code == "2":
        status = (f"{counts['create']} to add, {counts['update']} to change, "
                  f"{counts['delete']} to destroy")
        if counts["create"] or counts["update"]:
            labels.add("add-or-update")
        if counts["delete"]:
            labels.add("destroy")
    elif exit_code == "0":
        status = "no changes"
    else:
        status = "❌ ERROR (the plan below, or the job log, says why)"
    target = plan.get("target") or {}
    where = " ".join(str(target[k]) for k in ("kind", "address") if target.get(k)) or "n/a"
    lines = [f"### {code(project)}: {status}", "",
             f"target: {code(where)}, digest: {code(digest)}", ""]
    marker = None
    if exit_code in ("0", "2"):
        marker = f"<!-- reconcile-digest {project} {digest} {source} -->"
        if DIGEST_MARKER.fullmatch(marker) is None:  # no digest, or not a run number
            marker = None
    gone = deletions(plan)
    if gone:
        lines += [
            f"> [!WARNING]\n> **Topic deletion will happen** in {code(project)}: "
            + ", ".join(code(a) for a in gone)
            + ". Messages in them and their subscriptions' backlog are lost.",
            "",
        ]
    lines += [clip(read(directory / "plan.md"), limit, "the run's artifacts"), ""]
    return lines, labels, marker


def comment(args: argparse.Namespace) -> int:
    touched: list[str] = json.loads(args.touched)
    plans = {d.name.removeprefix("reconcile-plan-"): d for d in Path(args.plans).glob("*/")
             if d.is_dir()}
    body = ["## reconcile plan", "", args.header, ""]
    section, validation_failed = validation_section(Path(args.validation))
    body += section
    labels: set[str] = set()
    markers: list[str] = []
    if not touched:
        body += ["No project is touched by this change: nothing to plan or apply.", ""]
    limit = COMMENT_LIMIT // max(1, len(touched)) - 1000
    for project in map(checked_project, touched):
        directory = plans.get(project)
        if directory is None:
            body += [f"### {code(project)}: not planned (see the run log)", ""]
            continue
        lines, earned, marker = project_section(project, directory, max(limit, 2000))
        body += lines
        labels |= earned
        markers += [marker] if marker else []
    if touched and not labels and not validation_failed and len(plans) >= len(touched):
        labels.add("no-changes")
    # The markers head the comment, written here; everything under them is content.
    Path(args.out).write_text("\n".join([PLAN_MARKER, *markers, inert("\n".join(body))]) + "\n")
    Path(args.labels).write_text(json.dumps(
        {"add": sorted(labels), "remove": sorted(set(LABELS) - labels)}) + "\n")
    return 0


# -- the reviewed plan covers the fresh one ------------------------------------------


def changes_of(plan: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    return {
        rc["address"]: (rc["change"]["actions"][0], rc["change"].get("after"))
        for rc in plan.get("resource_changes") or []
        if rc["change"]["actions"] != ["no-op"]
    }


def covered(args: argparse.Namespace) -> int:
    """Every change of FRESH is in REVIEWED with the same action and result: applying
    FRESH makes no topic other than the reviewers saw it."""
    fresh = changes_of(read_json(Path(args.fresh)) or {})
    reviewed = changes_of(read_json(Path(args.reviewed)) or {})
    outside = sorted(a for a, change in fresh.items() if reviewed.get(a) != change)
    for address in outside:
        print(f"{address}: not in the reviewed plan as it is in the fresh one")
    return 1 if outside else 0


# -- the comment that settles a merged change ----------------------------------------

HEADS = {
    "applied": "✅ {p}: applied",
    "in-effect": "✅ {p}: already in effect",
    "superseded": "✅ {p}: applied by a later merge's run",
    "deferred": "⏳ {p}: waiting for a later merge's apply",
    "stale": "⚠️ {p}: NOT applied: the plan is stale",
    "refused": "❌ {p}: NOT applied: the reviewed plan was refused",
    "failed": "❌ {p}: apply failed",
}


def outcome_lines(outcome: dict[str, Any] | None) -> list[str]:
    if not outcome:
        return []
    s = outcome.get("summary") or {}
    lines = [f"Apply outcome: **{outcome.get('outcome')}** (exit {outcome.get('exit_code')}): "
             f"{s.get('applied', 0)} applied, {s.get('failed', 0)} failed, "
             f"{s.get('not-attempted', 0)} not attempted, {s.get('unchanged', 0)} unchanged."]
    failed = [r for r in outcome.get("results") or [] if r.get("status") == "failed"]
    if failed:
        lines += ["", fence("\n".join(f"{r['address']} ({r['action']}): {r.get('error')}"
                                     for r in failed))]
    if outcome.get("outcome") in ("refused", "error") and outcome.get("message"):
        details = outcome.get("details") or []
        text = outcome["message"] if not details else "\n".join(
            [outcome["message"].splitlines()[0], *details[:DETAILS_SHOWN]]
            + ([f"... and {len(details) - DETAILS_SHOWN} more"] if len(details) > DETAILS_SHOWN else []))
        lines += ["", fence(text)]
    return lines


def report(args: argparse.Namespace) -> int:
    state, project = args.state, args.project
    at = f"{code(args.commit[:12])}"
    run = f"[run]({args.run_url})" if args.run_url else "the run"
    outcome = read_json(Path(args.outcome)) if args.outcome else None
    reason = (outcome or {}).get("reason") or "stale"
    text = {
        "applied": f"The reviewed plan was applied by {run} at {at}.",
        "applied-fresh": (
            f"The reviewed plan was refused as **{reason}** (the live state moved since the "
            f"review, e.g. an earlier merge's apply). {run} applied a fresh plan of the "
            f"merged specs at {at} instead: every change in it is one the reviewed plan "
            "showed, to the same result."),
        "in-effect": (
            f"The reviewed plan was refused as **{reason}**, and a fresh plan of the merged "
            f"specs at {at} shows no changes: this change is live."),
        "superseded": (
            f"This merge's own apply run did not apply it (GitHub cancels a pending run when "
            f"a newer one queues for the project; GitLab may run them out of order). "
            f"{args.by}'s apply {run} applied the merged specs at {at}, which include this "
            "change, and a plan after it shows no changes."),
        "deferred": (
            f"The reviewed plan is stale and later merges change {code(project)} again "
            f"(main is at {code(args.tip[:12])}): the last of their apply runs applies the "
            "merged specs and updates this comment."),
        "stale": (
            f"Nothing was applied: {args.why or f'the reviewed plan was refused as **{reason}**'}"
            f", and the fresh plan of the merged specs at {at} has changes no reviewed plan "
            "showed (e.g. a topic changed by hand, or merges that were not planned "
            "together)."),
        "refused": (
            f"Nothing was applied: the plan was refused as **{reason}** (not a stale plan: "
            "the file, its digest or its target is not what was reviewed)."),
        "failed": "At least one topic failed (others may be applied: see below).",
    }
    head_state = {"applied-fresh": "applied"}.get(state, state)
    if state == "stale" and args.by:
        text["stale"] = (
            f"Nothing was applied for this change: its own apply run did not run or was "
            f"refused, and after {args.by}'s apply a plan of the merged specs still has "
            f"changes for {code(project)}.")
    marker = f"<!-- reconcile-result {checked_project(project)} {head_state} -->"
    body = [f"### {HEADS[head_state].format(p=code(project))}", "", text[state], ""]
    if state != "superseded":
        body += outcome_lines(outcome)
    if args.next and state != "superseded":
        body += ["", args.next]
    if args.fresh and Path(args.fresh).exists() and state in ("stale", "refused", "failed"):
        body += ["", "<details><summary>Fresh plan</summary>", "",
                 clip(read(Path(args.fresh)), COMMENT_LIMIT - 8000, "the run's artifacts"),
                 "", "</details>"]
    Path(args.out).write_text(marker + "\n" + inert("\n".join(body)) + "\n")
    return 0


# -- drift -----------------------------------------------------------------------------


def drift(args: argparse.Namespace) -> int:
    """The issue body for one drifting project (exit code 2 of plan
    --detailed-exitcode): the markdown plan, under its marker."""
    project = checked_project(args.project)
    body = [f"## Drift in {code(project)}", "",
            f"The scheduled plan of the specs at {code(args.commit[:12])} ({args.run_url}) "
            "found changes: the live topics differ from the specs. Apply the specs (merge a "
            "change, or run the apply workflow) or change the specs to match; this issue "
            "is closed by the first scheduled plan that finds no changes.", "",
            clip(read(Path(args.plan)), COMMENT_LIMIT - 4000, "the run's artifacts")]
    marker = DRIFT_MARKER.format(project=project)
    Path(args.out).write_text(marker + "\n" + inert("\n".join(body)) + "\n")
    return 0


def markers(args: argparse.Namespace) -> int:
    """GitHub's scripts ask here: the bodies of the pipeline's own comments on one pull
    request (a JSON list, oldest first, on stdin) -> this project's digest, run and
    result, as JSON (empty strings: none)."""
    bodies = json.load(sys.stdin)
    if not isinstance(bodies, list) or not all(isinstance(b, str) for b in bodies):
        raise SystemExit("reconcile_ci.py markers: stdin must be a JSON list of strings")
    print(json.dumps(markers_of(bodies, checked_project(args.project))))
    return 0


# -- GitLab: the child pipeline and the REST API -------------------------------------


def child(args: argparse.Namespace) -> int:
    """The child pipeline: the stage's hidden template once per touched project (the
    jobs' scripts stay in .gitlab-ci.yml, included again here)."""
    touched = json.loads(read(Path(args.projects), "{}")).get("touched") or []
    lines = ["include:", f"  - local: {json.dumps(args.include)}", ""]
    names = []
    for project in touched:
        name = f"{args.mode} {project}"
        names.append(name)
        lines += [f"{json.dumps(name)}:", f"  extends: .reconcile-{args.mode}",
                  f"  variables: {{PROJECT: {json.dumps(project)}}}", ""]
    if args.mode == "plan":
        lines += ["comment:", "  extends: .reconcile-comment",
                  f"  needs: {json.dumps(['validate', *names])}",
                  f"  variables: {{TOUCHED: {json.dumps(json.dumps(touched))}}}", ""]
    elif not names:
        lines += ["nothing to apply:", "  extends: .reconcile-nothing", ""]
    Path(args.out).write_text("\n".join(lines))
    return 0


class GitLab:
    def __init__(self) -> None:
        self.base = os.environ["CI_API_V4_URL"]
        self.api = f"{self.base}/projects/{os.environ['CI_PROJECT_ID']}"
        self.token = os.environ["RECONCILE_NOTE_TOKEN"]
        self._me: int | None = None

    def call(self, method: str, path: str, data: Any = None, base: str = "") -> Any:
        return self._call(method, path, data, base)[0]

    def _call(self, method: str, path: str, data: Any = None, base: str = "") -> tuple[Any, str]:
        """The answer, and the next page's number (GitLab's X-Next-Page; "" on the last)."""
        request = urllib.request.Request(
            (base or self.api) + path, method=method,
            headers={"PRIVATE-TOKEN": self.token, "Content-Type": "application/json"},
            data=json.dumps(data).encode() if data is not None else None)
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response), response.headers.get("X-Next-Page") or ""

    def every(self, path: str) -> list[Any]:
        """Every item of a listing, page after page (100 a page)."""
        items: list[Any] = []
        page = "1"
        while page:
            found, page = self._call("GET", f"{path}&per_page=100&page={page}")
            items += found
        return items

    def me(self) -> int:
        """The user id of $RECONCILE_NOTE_TOKEN (a project access token's bot user):
        the pipeline's own identity, the only author whose markers count."""
        if self._me is None:
            self._me = int(self.call("GET", "/user", base=self.base)["id"])
        return self._me

    def mine(self, item: dict[str, Any]) -> bool:
        return (item.get("author") or {}).get("id") == self.me() and not item.get("system")

    def notes(self, mr: int) -> list[dict[str, Any]]:
        """The pipeline's own notes on the merge request, oldest first."""
        found = self.every(f"/merge_requests/{mr}/notes?sort=asc")
        return [n for n in found if self.mine(n)]

    def upsert(self, mr: int, marker: str, body: str) -> None:
        """One note per marker on the merge request: created once, then edited."""
        mine = [n for n in self.notes(mr) if n["body"].startswith(marker)]
        if mine:
            self.call("PUT", f"/merge_requests/{mr}/notes/{mine[0]['id']}", {"body": body})
        else:
            self.call("POST", f"/merge_requests/{mr}/notes", {"body": body})

    def merged_mr(self, sha: str) -> dict[str, Any] | None:
        found = self.call("GET", f"/repository/commits/{sha}/merge_requests")
        return next((m for m in found if m.get("state") == "merged"), None)


def gitlab(args: argparse.Namespace) -> int:
    api = GitLab()
    if args.action == "note":
        api.upsert(int(args.mr), args.marker, read(Path(args.body)))
        return 0
    if args.action == "labels":
        labels = read_json(Path(args.labels)) or {}
        api.call("PUT", f"/merge_requests/{int(args.mr)}", {
            "add_labels": ",".join(labels.get("add", [])),
            "remove_labels": ",".join(labels.get("remove", []))})
        return 0
    if args.action == "reviewed":
        # The merge request of the commit, and the digest and plan job its plan note
        # shows for the project: what the reviewers saw, not what a file says.
        mr = api.merged_mr(args.commit)
        if mr is None:
            print(f"no merged merge request for {args.commit}", file=sys.stderr)
            return 1
        found = markers_of([n["body"] for n in api.notes(mr["iid"])],
                           checked_project(args.project))
        print(json.dumps({"mr": mr["iid"], "digest": found["digest"], "job": found["run"]}))
        return 0
    if args.action == "settle":
        return settle(api, args)
    if args.action == "issue":
        return drift_issue(api, args)
    raise SystemExit(f"unknown action {args.action}")


def settle(api: GitLab, args: argparse.Namespace) -> int:
    """The earlier merges (first-parent history, newest first) whose plan note shows
    this project and whose result note is missing or `deferred`: this run settles
    them. The walk stops at the first one already settled."""
    shas = [s for s in read(Path(args.history)).split() if s]
    project = checked_project(args.project)
    settled = []
    for sha in shas[: args.limit]:
        mr = api.merged_mr(sha)
        if mr is None:
            continue
        found = markers_of([n["body"] for n in api.notes(mr["iid"])], project)
        if not found["digest"]:
            continue
        if found["result"] in FINAL:
            break
        api.upsert(mr["iid"], f"<!-- reconcile-result {project} ", read(Path(args.body)))
        settled.append(mr["iid"])
    print(json.dumps(settled))
    return 0


def drift_issue(api: GitLab, args: argparse.Namespace) -> int:
    """Open or update the project's drift issue (`--state drift`), or close it with a
    note (`--state clean`)."""
    marker = DRIFT_MARKER.format(project=checked_project(args.project))
    query = urllib.parse.urlencode({"labels": "reconcile-drift", "state": "opened"})
    issues = [i for i in api.every(f"/issues?{query}")
              if api.mine(i) and head_lines(i.get("description") or "")[0] == marker]
    if args.state == "drift":
        body = read(Path(args.body))
        if issues:
            api.call("PUT", f"/issues/{issues[0]['iid']}", {"description": body})
        else:
            api.call("POST", "/issues", {"title": f"reconcile: drift in {args.project}",
                                         "description": body, "labels": "reconcile-drift"})
    else:
        for issue in issues:
            api.call("POST", f"/issues/{issue['iid']}/notes",
                     {"body": f"No drift any more: the scheduled plan at {args.commit[:12]} "
                      "shows no changes. Closing."})
            api.call("PUT", f"/issues/{issue['iid']}", {"state_event": "close"})
    return 0


def install(args: argparse.Namespace) -> int:
    """Install what $RECONCILE_PIP_SPEC names (pinned), with pip. A token for a
    private repository reaches git through GIT_CONFIG_* variables of the pip process
    only (an `insteadOf` rewrite of the spec's host), as user $RECONCILE_SOURCE_USER
    (GitHub: x-access-token; GitLab: gitlab-ci-token with $CI_JOB_TOKEN)."""
    spec = os.environ.get("RECONCILE_PIP_SPEC", "").strip()
    if not spec:
        print("::error title=reconcile install::the CI variable RECONCILE_PIP_SPEC is not "
              "set; set it to the install line `reconcile ci checklist` prints "
              "(docs/ci.md, \"Adopting it\")", file=sys.stderr)
        return 1
    env = dict(os.environ)
    token = env.pop("RECONCILE_SOURCE_TOKEN", "")
    host = re.search(r"git\+https://([^/@\s]+)/", spec)
    if token and host:
        user = env.get("RECONCILE_SOURCE_USER") or "x-access-token"
        env.update(
            GIT_CONFIG_COUNT="1",
            GIT_CONFIG_KEY_0=f"url.https://{user}:{token}@{host.group(1)}/.insteadOf",
            GIT_CONFIG_VALUE_0=f"https://{host.group(1)}/",
        )
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", spec], env=env,
        check=False,
    ).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="reconcile_ci.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("comment")
    p.add_argument("--validation", required=True)
    p.add_argument("--plans", required=True)
    p.add_argument("--touched", required=True, help="the touched projects, a JSON list")
    p.add_argument("--header", default="")
    p.add_argument("--out", required=True)
    p.add_argument("--labels", required=True)
    p = sub.add_parser("covered")
    p.add_argument("fresh")
    p.add_argument("reviewed")
    p = sub.add_parser("report")
    p.add_argument("--project", required=True)
    p.add_argument("--state", required=True, choices=[*HEADS, "applied-fresh"])
    p.add_argument("--outcome", default="")
    p.add_argument("--commit", default="")
    p.add_argument("--tip", default="")
    p.add_argument("--run-url", default="")
    p.add_argument("--by", default="", help="the change whose run settled this one")
    p.add_argument("--next", default="", help="what to do next (a command)")
    p.add_argument("--why", default="", help="why a plan is not applied (state stale)")
    p.add_argument("--fresh", default="", help="the fresh plan's markdown")
    p.add_argument("--out", required=True)
    p = sub.add_parser("drift")
    p.add_argument("--project", required=True)
    p.add_argument("--plan", required=True)
    p.add_argument("--commit", default="")
    p.add_argument("--run-url", default="")
    p.add_argument("--out", required=True)
    p = sub.add_parser("markers")
    p.add_argument("--project", required=True)
    p = sub.add_parser("child")
    p.add_argument("--mode", required=True, choices=["plan", "apply"])
    p.add_argument("--projects", required=True)
    p.add_argument("--include", default=".gitlab-ci.yml")
    p.add_argument("--out", required=True)
    p = sub.add_parser("gitlab")
    p.add_argument("action", choices=["note", "labels", "reviewed", "settle", "issue"])
    p.add_argument("--mr", default="")
    p.add_argument("--marker", default=PLAN_MARKER)
    p.add_argument("--body", default="")
    p.add_argument("--labels", default="")
    p.add_argument("--commit", default="")
    p.add_argument("--project", default="")
    p.add_argument("--history", default="")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--state", default="")
    sub.add_parser("install")
    args = parser.parse_args(argv)
    verbs = {"comment": comment, "covered": covered, "report": report, "drift": drift,
             "markers": markers, "child": child, "gitlab": gitlab, "install": install}
    return verbs[args.verb](args)


if __name__ == "__main__":
    sys.exit(main())
