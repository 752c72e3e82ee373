"""Every output a user sees, compared byte for byte with tests/golden_outputs/: the net
under a redesign that must change no behaviour (issue 47).

What runs, through the real entry point in-process (`run_cli`), against one local
server per module and worker (read only once seeded; `apply` gets a fresh one), its
state made through the real Pub/Sub, Schema, Subscriber and Org Policy clients, the
org policies from the trees' own snapshots (`_seed_world`):

- `validate` in text, json, github and sarif over `specs/`, `examples/specs/` (and
  each of its files alone), and the hostile trees of tests/golden_outputs/trees/
  (`shapes`: YAML, shape, retention, key, schema-settings, Defaults, hedging-profile
  and region errors at line:col; `snapshot`: a snapshot's own errors, an unknown value
  group, a custom-constraint refusal and a field decided at plan; `adopt` and
  `refused`: CMEK, locations, custom constraints, a condition not judged), with
  `--require-org-policy`, `--strict-groups` and `--allow-unjudged`; text and json
  over every case of tests/spec/cases/invalid/;
- `plan` in all five formats, `--out` with the saved file and `show` in all five
  formats, for `specs/` (creates, adoption, a recomputed policy, drift, `--project`),
  `adopt` (an update with every mask path, a no-op, existing violations, `--prune`),
  `refused` (the live org policy's refusals before any call) and `unjudged` (a
  custom constraint reconcile cannot judge, `--allow-unjudged`);
- `apply --format json` (from the specs and from a saved plan; refused before any
  call, in text too), then the plans after it; `residency` in its three formats and
  `--all-live`; `import` (the files it writes); `policy pull` (the file); `projects`
  (and `--changed-from` in a git repository whose commit is dated, so its id is
  fixed); `schema`; `ci checklist` for both platforms (`--install` given: the default
  names this checkout's commit).

A golden file is a transcript: each command line, its exit code, stdout, stderr and
the files it wrote. What varies from run to run is replaced by a placeholder before
the comparison (`Normalised`), and nothing else:

- `<SERVER>`: the local server's address (a free port each time);
- `<TMP>`, `<ROOT>`: this test's temporary directory and the repository's path
  (validate prints a snapshot's path absolute, and the folders it looked in for one;
  `--out` paths are temporary);
- `<TIMESTAMP>`: an ISO 8601 UTC time (a plan's and a residency report's
  `created_at`, the header of an imported spec file and of a pulled snapshot);
- `<PLAN-DIGEST>` and `<PLAN-MARKER>`: a plan's digest and the `reconcile-plan`
  marker label made of its first 16 hex digits (the digest covers `created_at` and
  the target's address). Only digests printed as a plan's digest (after the word
  "digest") are replaced; the fingerprints of topics and org policies are compared;
- in `apply`'s outcome only, `"seconds": <SECONDS>`: how long each call took;
- in `residency` only, `<AGE>` and `<TIME>`: how old the messages the world published
  are, and when they age out (`oldest 12 s`, `within 6 d (by 2026-12-14 05:48 UTC)`,
  the markdown table's cells of that form, `oldest_unacked_age_seconds` and
  `ages_out_within_seconds`).

`apply` runs with `--concurrency 1`: with several topics in flight its per-topic
lines on stderr come in the order the calls end. `residency` reads ahead through a
second process as by default once, then in this process (the same reads, a second
less each).

When an output changes on purpose, regenerate the files and review the diff:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_outputs_preserved.py

(the run rewrites the files and fails, so that a regeneration is never silent).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli_support import CliResult
from tests.server_support import running_local_server

ROOT = Path(__file__).parents[1]
GOLDEN = Path(__file__).parent / "golden_outputs"
CASES = Path(__file__).parent / "spec" / "cases" / "invalid"
UPDATE = bool(os.environ.get("UPDATE_GOLDEN"))
REGENERATE = "UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_outputs_preserved.py"

VALIDATE_FORMATS = ("text", "json", "github", "sarif")
PLAN_FORMATS = ("text", "json", "markdown", "github", "sarif")
# An install line given, not found: the default is this checkout's commit.
INSTALL = "pubsub-reconcile @ git+https://example.invalid/org/reconcile@0123abc"

# The trees, as the commands are given them (relative to the repository root).
REFERENCE = "specs"
EXAMPLES = "examples/specs"
TREES = "tests/golden_outputs/trees"
ADOPT, REFUSED, UNJUDGED = f"{TREES}/adopt", f"{TREES}/refused", f"{TREES}/unjudged"

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|\+00:00)")
PLAN_DIGEST = re.compile(r"digest[\"'`:\s]*sha256:([0-9a-f]{64})", re.IGNORECASE)
# Durations read off the clock: how long apply's calls took; how old the messages the
# world published are and when they age out (residency: text, markdown cells, JSON).
APPLY_SECONDS = ((re.compile(r'"seconds": [0-9.]+'), '"seconds": <SECONDS>'),)
_AGE = r"\d+ (?:s|min|h|d)"
MESSAGE_AGES = (
    (re.compile(rf"oldest {_AGE}"), "oldest <AGE>"),
    (re.compile(rf"within {_AGE} \(by \d{{4}}-\d\d-\d\d \d\d:\d\d UTC\)"),
     "within <AGE> (by <TIME>)"),
    (re.compile(rf"\| {_AGE} (?=\|)"), "| <AGE> "),
    (re.compile(r'"(oldest_unacked_age_seconds|ages_out_within_seconds)": \d+'),
     r'"\1": <AGE>'),
)

# The live world, made before the org policies (which would refuse some of it).
KEYS = "projects/gold-keys/locations/us-east1/keyRings/ring/cryptoKeys"
AVRO = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}
OWNED = {"reconcile-managed": "true", "reconcile-owner": "gold"}
LIVE_TOPICS: list[dict[str, Any]] = [
    # specs/: a create-or-adopt mix (acme-platform's topics are new).
    {"name": "projects/acme-payments/topics/orders", "labels": {"tier": "standard",
     "team": "payments"}, "message_storage_policy": {
        "allowed_persistence_regions": ["us-central1"], "enforce_in_transit": True}},
    {"name": "projects/acme-payments/topics/payment-audit", "labels": {"retention": "short"},
     "message_storage_policy": {"allowed_persistence_regions": ["us-east1"],
                                "enforce_in_transit": True}},
    {"name": "projects/acme-analytics/topics/sessions", "labels": {"team": "analytics"},
     "message_storage_policy": {"allowed_persistence_regions": ["europe-west1"]}},
    # adopt: every managed field differs on orders; refunds as declared.
    {"name": "projects/gold-live/topics/orders", "labels": {"team": "ledger", "tier": "standard"},
     "message_storage_policy": {"allowed_persistence_regions": ["us-east1"],
                                "enforce_in_transit": True},
     "message_retention_duration": {"seconds": 86400}, "kms_key_name": f"{KEYS}/old",
     "schema_settings": {"schema": "projects/gold-live/schemas/order", "encoding": "BINARY"}},
    {"name": "projects/gold-live/topics/refunds", "labels": {"team": "ledger", **OWNED},
     "message_storage_policy": {"allowed_persistence_regions": ["us-east1"],
                                "enforce_in_transit": True},
     "message_retention_duration": {"seconds": 172800}, "kms_key_name": f"{KEYS}/refunds"},
    {"name": "projects/gold-live/topics/legacy", "labels": {"team": "ledger"},
     "message_storage_policy": {"allowed_persistence_regions": ["europe-west1"]},
     "message_retention_duration": {"seconds": 604800}},
    {"name": "projects/gold-live/topics/stream", "labels": {"team": "ledger", **OWNED},
     "message_storage_policy": {"allowed_persistence_regions": ["us-east1"],
                                "enforce_in_transit": True},
     "message_retention_duration": {"seconds": 172800}, "kms_key_name": f"{KEYS}/stream"},
    {"name": "projects/gold-live/topics/retired", "labels": OWNED,
     "message_storage_policy": {"allowed_persistence_regions": ["us-east1"],
                                "enforce_in_transit": True},
     "kms_key_name": f"{KEYS}/retired"},
    # refused: made before its organization's rules.
    {"name": "projects/gold-refused/topics/existing-us", "labels": {"team": "core"},
     "message_storage_policy": {"allowed_persistence_regions": ["us-east1"]}},
]
LEGACY = "projects/gold-live/topics/legacy"
SNAPSHOTS = (ROOT / REFERENCE / "org-policy.yaml", ROOT / ADOPT / "org-policy.yaml",
             ROOT / REFUSED / "org-policy.yaml")


def _seed_world(server: Any) -> None:
    """The live topics, a schema, messages stored in a region the org no longer allows,
    then each tree's snapshot (policies and custom constraints through the real
    clients; the ancestry through the server's `set_ancestry`, as the suite's other
    org-policy tests place a project)."""
    from google.cloud import orgpolicy_v2

    from reconciler.backends.clients import (
        close_client,
        orgpolicy_client,
        publisher_client,
        schema_client,
        subscriber_client,
    )
    from reconciler.localserver import CLIENT_REGION_KEY

    address = server.address
    publisher, schemas = publisher_client(address), schema_client(address)
    subscriber, org = subscriber_client(address), orgpolicy_client(address)
    try:
        schemas.create_schema(parent="projects/gold-live", schema_id="order",
                              schema={"type_": "AVRO", "definition": json.dumps(AVRO)})
        for topic in LIVE_TOPICS:
            publisher.create_topic(request=topic)
        subscriber.create_subscription(request={
            "name": "projects/gold-live/subscriptions/legacy-audit", "topic": LEGACY})
        publisher.publish(topic=LEGACY, messages=[{"data": b"x" * 10}] * 3,
                          metadata=[(CLIENT_REGION_KEY, "europe-west1")], retry=None)
        for snapshot in SNAPSHOTS:
            _seed_snapshot(server, org, snapshot, orgpolicy_v2)
    finally:
        for client in (publisher, schemas, subscriber, org):
            close_client(client)


def _seed_snapshot(server: Any, org: Any, snapshot: Path, orgpolicy_v2: Any) -> None:
    """A snapshot's documents, as `policy pull` would have read them from the server."""
    for doc in yaml.safe_load_all(snapshot.read_text()):
        if "ancestry" in doc:
            for child, parent in doc["ancestry"].items():
                server.set_ancestry(child, parent)
        elif "/customConstraints/" in doc["name"]:
            constraint = orgpolicy_v2.CustomConstraint.from_json(json.dumps(doc))
            org.create_custom_constraint(parent=doc["name"].split("/customConstraints/")[0],
                                         custom_constraint=constraint)
        else:
            policy = orgpolicy_v2.Policy.from_json(json.dumps(doc))
            org.create_policy(parent=doc["name"].split("/policies/")[0], policy=policy)


class Normalised:
    """What varies from run to run, replaced by placeholders (the module's docstring)."""

    def __init__(self, clocked: tuple[tuple[re.Pattern[str], str], ...] = (),
                 **exact: str) -> None:
        # Longest first: a temporary directory may sit below the repository.
        self.exact = sorted(((v, f"<{k.upper()}>") for k, v in exact.items() if v),
                            key=lambda pair: -len(pair[0]))
        self.clocked = clocked
        self.digests: set[str] = set()

    def __call__(self, text: str) -> str:
        self.digests.update(PLAN_DIGEST.findall(text))
        for digest in sorted(self.digests):
            text = text.replace(digest, "<PLAN-DIGEST>").replace(digest[:16], "<PLAN-MARKER>")
        for value, placeholder in self.exact:
            text = text.replace(value, placeholder)
        for pattern, placeholder in self.clocked:
            text = pattern.sub(placeholder, text)
        return TIMESTAMP.sub("<TIMESTAMP>", text)


class Transcript:
    """Command lines, what each printed and the files they wrote, normalised."""

    def __init__(self, run_cli: Callable[..., CliResult], normalised: Normalised) -> None:
        self.run_cli = run_cli
        self.normalised = normalised
        self.parts: list[str] = []

    def run(self, *args: str, env: dict[str, str] | None = None) -> CliResult:
        """`reconcile ARGS...` with `env` set for the call (and shown before it)."""
        saved = {name: os.environ.get(name) for name in env or {}}
        os.environ.update(env or {})
        try:
            result = self.run_cli(*args)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        shown = "".join(f"{name}={value} " for name, value in (env or {}).items())
        self.parts.append(f"$ {shown}reconcile {' '.join(args)}\n--- exit {result.exit_code}\n")
        self._stream("stdout", result.stdout)
        self._stream("stderr", result.stderr)
        return result

    def file(self, path: Path) -> None:
        self._stream(f"file {path}", path.read_text())

    def _stream(self, name: str, text: str) -> None:
        if not text:
            self.parts.append(f"--- {name}: empty\n")
            return
        ending = "" if text.endswith("\n") else "\n--- (no newline at the end)\n"
        self.parts.append(f"--- {name}\n{text}{ending}")

    def text(self) -> str:
        return self.normalised("".join(self.parts))

    def compare(self, name: str) -> None:
        _compare(name, self.text())


def _compare(name: str, got: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got)
        pytest.fail(f"rewrote {path.relative_to(ROOT)}: review the diff (UPDATE_GOLDEN is set)")
    assert path.exists(), f"no golden file {path.relative_to(ROOT)}: run `{REGENERATE}`"
    want = path.read_text()
    if got != want:
        diff = "".join(difflib.unified_diff(
            want.splitlines(keepends=True), got.splitlines(keepends=True),
            f"{path.relative_to(ROOT)} (golden)", "this run", n=2))
        lines = diff.splitlines(keepends=True)
        shown = "".join(lines[:120]) + (f"... {len(lines) - 120} more lines\n"
                                        if len(lines) > 120 else "")
        pytest.fail(f"the output differs from {path.relative_to(ROOT)}; if the change is "
                    f"meant, run `{REGENERATE}` and review the diff:\n{shown}", pytrace=False)


@pytest.fixture(scope="module")
def world() -> Iterator[Any]:
    """One local server for the module (per worker), seeded once; read-only after."""
    with running_local_server() as server:
        _seed_world(server)
        yield server


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trees named as a user in the repository would name them (relative paths)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("RECONCILE_READ_AHEAD_FROM", raising=False)


def _transcript(run_cli: Any, tmp_path: Path, server: Any = None,
                clocked: tuple[tuple[re.Pattern[str], str], ...] = ()) -> Transcript:
    return Transcript(run_cli, Normalised(
        clocked, server=server.address if server else "", tmp=str(tmp_path), root=str(ROOT)))


# validate ---------------------------------------------------------------------------

VALIDATE_TREES: dict[str, tuple[str, tuple[str, ...]]] = {
    "specs": (REFERENCE, ()),
    "examples": (EXAMPLES, ()),
    "shapes": (f"{TREES}/shapes", ()),
    "snapshot": (f"{TREES}/snapshot", ()),
    "adopt": (ADOPT, ("--require-org-policy",)),
    "refused": (REFUSED, ("--require-org-policy", "--strict-groups", "--allow-unjudged=all")),
}


@pytest.mark.parametrize("tree", sorted(VALIDATE_TREES))
def test_validate_outputs_are_preserved(
    tree: str, run_cli: Any, at_root: None, tmp_path: Path
) -> None:
    path, extra_options = VALIDATE_TREES[tree]
    transcript = _transcript(run_cli, tmp_path)
    for fmt in VALIDATE_FORMATS:
        transcript.run("validate", path, "--format", fmt)
    for option in extra_options:
        transcript.run("validate", path, option)
    if tree == "examples":
        for file in sorted((ROOT / EXAMPLES).glob("*.yaml")):
            transcript.run("validate", str(file.relative_to(ROOT)))
    transcript.compare(f"validate/{tree}")


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir()
                                        if not p.name.startswith(".")))
def test_validate_outputs_of_the_invalid_cases_are_preserved(
    case: str, run_cli: Any, at_root: None, tmp_path: Path
) -> None:
    transcript = _transcript(run_cli, tmp_path)
    path = str((CASES / case).relative_to(ROOT))
    for fmt in ("text", "json"):
        transcript.run("validate", path, "--format", fmt)
    transcript.compare(f"validate-cases/{case.removesuffix('.yaml')}")


# plan and show ----------------------------------------------------------------------

PLAN_TREES: dict[str, tuple[str, list[tuple[str, ...]]]] = {
    "specs": (REFERENCE, [("--detailed-exitcode",), ("--project", "acme-payments")]),
    "adopt": (ADOPT, [("--detailed-exitcode",), ("--prune",)]),
    "refused": (REFUSED, [("--allow-unjudged", "all"),
                          ("--allow-unjudged", "all", "--format", "json")]),
    "unjudged": (UNJUDGED, [("--allow-unjudged", "all"),
                            ("--allow-unjudged", "custom.lowerTeam", "--format", "json")]),
}


@pytest.mark.parametrize("tree", sorted(PLAN_TREES))
def test_plan_and_show_outputs_are_preserved(
    tree: str, run_cli: Any, world: Any, at_root: None, tmp_path: Path
) -> None:
    path, variants = PLAN_TREES[tree]
    target = ("--emulator", world.address)
    transcript = _transcript(run_cli, tmp_path, world)
    for fmt in PLAN_FORMATS:
        transcript.run("plan", path, *target, "--format", fmt)
    for variant in variants:
        transcript.run("plan", path, *target, *variant)
    saved = tmp_path / "plan.json"
    transcript.run("plan", path, *target, "--out", str(saved))
    if saved.exists():
        transcript.file(saved)
        for fmt in PLAN_FORMATS:
            transcript.run("show", str(saved), "--format", fmt)
    transcript.compare(f"plan/{tree}")


# apply ------------------------------------------------------------------------------


def test_apply_outcome_and_the_plan_after_it_are_preserved(
    run_cli: Any, at_root: None, tmp_path: Path
) -> None:
    """On a server of its own: specs/ applied from the specs, adopt from its saved plan
    (one topic at a time, so that the per-topic lines come in one order), refused
    refused before any call (text, and the outcome document), then the plans after."""
    with running_local_server() as server:
        _seed_world(server)
        target = ("--emulator", server.address)
        once = ("--auto-approve", "--concurrency", "1")
        transcript = _transcript(run_cli, tmp_path, server, APPLY_SECONDS)
        transcript.run("apply", REFERENCE, *target, *once, "--format", "json")
        saved = tmp_path / "adopt-plan.json"
        transcript.run("plan", ADOPT, *target, "--out", str(saved))
        transcript.run("apply", str(saved), *target, *once, "--format", "json")
        transcript.run("apply", REFUSED, *target, *once)
        transcript.run("apply", REFUSED, *target, *once, "--format", "json")
        for tree in (REFERENCE, ADOPT):
            transcript.run("plan", tree, *target, "--detailed-exitcode")
        transcript.compare("apply/outcome")


# residency, import, policy pull ------------------------------------------------------


def test_residency_outputs_are_preserved(
    run_cli: Any, world: Any, at_root: None, tmp_path: Path
) -> None:
    target = ("--emulator", world.address)
    transcript = _transcript(run_cli, tmp_path, world, MESSAGE_AGES)
    transcript.run("residency", ADOPT, *target)
    here = {"RECONCILE_READ_AHEAD_FROM": "off"}
    for tree in (REFERENCE, ADOPT):
        for fmt in ("text", "json", "markdown"):
            transcript.run("residency", tree, *target, "--format", fmt, env=here)
    transcript.run("residency", ADOPT, *target, "--all-live", "--detailed-exitcode", env=here)
    transcript.compare("residency/reports")


def test_import_and_policy_pull_outputs_are_preserved(
    run_cli: Any, world: Any, at_root: None, tmp_path: Path
) -> None:
    target = ("--emulator", world.address)
    transcript = _transcript(run_cli, tmp_path, world)
    imported = tmp_path / "imported"
    transcript.run("import", "--project", "gold-live", "--project", "acme-payments",
                   "--out", str(imported), *target)
    for file in sorted(imported.rglob("*")):
        if file.is_file():
            transcript.file(file)
    pulled = tmp_path / "org-policy.yaml"
    transcript.run("policy", "pull", "--project", "gold-live", "--project", "gold-refused",
                   "--project", "acme-analytics", "--out", str(pulled), *target)
    transcript.file(pulled)
    transcript.compare("import/gold-live-and-policy-pull")


# the offline commands ---------------------------------------------------------------


def test_projects_schema_and_ci_checklist_outputs_are_preserved(
    run_cli: Any, at_root: None, tmp_path: Path
) -> None:
    transcript = _transcript(run_cli, tmp_path)
    for tree in (REFERENCE, EXAMPLES, ADOPT):
        for fmt in ("text", "json"):
            transcript.run("projects", tree, "--format", fmt)
    transcript.run("schema")
    for platform in ("github", "gitlab"):
        transcript.run("ci", "checklist", REFERENCE, "--platform", platform,
                       "--install", INSTALL)
    transcript.compare("offline/projects-schema-ci")


def test_projects_changed_from_output_is_preserved(
    run_cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / REFERENCE, repo / "specs")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
           "-c", "commit.gpgsign=false"]
    # A fixed author and date: the same commit id every run.
    dated = {**os.environ, "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
             "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "specs"]):
        subprocess.run([*git, *command], cwd=repo, check=True, env=dated)
    topics = repo / "specs" / "acme-payments" / "topics.yaml"
    topics.write_text(topics.read_text().replace("tier: critical", "tier: high"))
    monkeypatch.chdir(repo)
    transcript = _transcript(run_cli, tmp_path)
    for fmt in ("text", "json"):
        transcript.run("projects", "specs", "--changed-from", "main", "--format", fmt)
    transcript.compare("offline/projects-changed-from")
