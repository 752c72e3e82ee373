"""Retention, encryption key and schema settings in specs, checked offline with the
service's rules (reconciler/topicrules.py) and the CMEK org constraints: each problem
an error at the line that causes it; omitted fields are unmanaged; Defaults documents
set them; the desired state holds them in the service's canonical form."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.spec.validate import validate_paths
from reconciler.topic import SchemaSettings

HEAD = "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
KEY = "projects/keys-proj/locations/us-east1/keyRings/ring/cryptoKeys/key"
NO_POLICIES = "# org-policy snapshot: no org policies set\n"


def _topic(name: str, *spec_lines: str, project: str = "proj-a") -> str:
    body = "".join(f"  {line}\n" for line in spec_lines) if spec_lines else ""
    return (
        f"{HEAD}metadata: {{project: {project}, name: {name}}}\n"
        + ("spec:\n" + body if body else "spec: {}\n")
    )


def _tree(tmp_path: Path, specs: str, policy: str = NO_POLICIES) -> Path:
    (tmp_path / "topics.yaml").write_text(specs)
    (tmp_path / "org-policy.yaml").write_text(policy)
    return tmp_path


def test_declared_fields_reach_the_desired_state_in_canonical_form(tmp_path: Path) -> None:
    _tree(tmp_path, _topic(
        "orders",
        "messageRetentionDuration: 2d",
        f"kmsKeyName: {KEY}",
        "schemaSettings: {schema: projects/proj-a/schemas/orders-v1, encoding: JSON, "
        "firstRevisionId: abc123}",
    ) + "---\n" + _topic("plain"))
    result = validate_paths([tmp_path])
    assert result.diagnostics.items == []
    by_name = {t.topic: t for t in result.desired.topics}
    assert by_name["orders"].message_retention_duration == "172800s"
    assert by_name["orders"].kms_key_name == KEY
    assert by_name["orders"].schema_settings == SchemaSettings(
        "projects/proj-a/schemas/orders-v1", "JSON", "abc123", ""
    )
    plain = by_name["plain"]  # omitted: unmanaged
    assert (plain.message_retention_duration, plain.kms_key_name, plain.schema_settings) == (
        None, None, None
    )


@pytest.mark.parametrize(
    ("written", "canonical"),
    [("2d", "172800s"), ("48h", "172800s"), ("172800s", "172800s"), ("1h30m", "5400s"),
     ("600.5s", "600.500s"), ("10m", "600s"), ("31d", "2678400s")],
)
def test_every_spelling_of_a_duration_is_the_services_seconds(
    tmp_path: Path, written: str, canonical: str
) -> None:
    _tree(tmp_path, _topic("orders", f"messageRetentionDuration: {written}"))
    result = validate_paths([tmp_path])
    assert result.diagnostics.items == []
    assert result.desired.topics[0].message_retention_duration == canonical


@pytest.mark.parametrize(
    ("line", "code", "message"),
    [
        ("messageRetentionDuration: 9m59s", "retention",
         "messageRetentionDuration: '9m59s' (599s) is out of range: a topic retains messages "
         "600s (10 minutes) to 2678400s (31 days)"),
        ("messageRetentionDuration: 32d", "retention", "'32d' (2764800s) is out of range"),
        ("messageRetentionDuration: two days", "retention",
         "'two days' is not a duration; write e.g. 7d, 48h, 1h30m or 600s"),
        ("messageRetentionDuration: 600.0000000001s", "retention",
         "is finer than a nanosecond"),
        ("kmsKeyName: projects/k/locations/us/keyRings/r", "kms-key-name",
         "is not a Cloud KMS key name: expected "
         "projects/P/locations/L/keyRings/R/cryptoKeys/K"),
        (f"kmsKeyName: {KEY}/cryptoKeyVersions/1", "kms-key-name",
         "is not a Cloud KMS key name"),
        ("schemaSettings: {schema: orders-v1, encoding: JSON}", "schema-name",
         "schema 'orders-v1' is not a schema name: expected projects/P/schemas/S"),
        ("schemaSettings: {schema: projects/proj-a/schemas/goog-x, encoding: JSON}",
         "schema-name", "schema ID 'goog-x' must not start with 'goog'"),
        ("schemaSettings: {schema: projects/proj-a/schemas/orders-v1, encoding: AVRO}",
         "bad-value", "'AVRO' is not allowed; write 'JSON' or 'BINARY'"),
    ],
)
def test_each_service_rule_is_an_error_at_its_line(
    run_cli, tmp_path: Path, line: str, code: str, message: str
) -> None:
    _tree(tmp_path, _topic("fine") + "---\n" + _topic("orders", "labels: {a: b}", line))
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    errors = [x for x in result.stdout.splitlines() if "error[" in x]
    assert len(errors) == 1, result.stdout
    # topics.yaml line 11: the second document's field (after `labels:` on line 10)
    assert errors[0].startswith(f"{tmp_path / 'topics.yaml'}:11:"), errors[0]
    assert f"error[{code}]" in errors[0] and message in errors[0]


def test_defaults_set_the_fields_and_topics_override_them(tmp_path: Path) -> None:
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "defaults.yaml").write_text(
        "apiVersion: reconcile.pubsub/v1\nkind: Defaults\nspec:\n"
        "  project: proj-a\n  messageRetentionDuration: 7d\n"
        f"  kmsKeyName: {KEY}\n"
    )
    (tmp_path / "team" / "topics.yaml").write_text(
        f"{HEAD}metadata: {{name: inherits}}\n---\n"
        f"{HEAD}metadata: {{name: overrides}}\nspec: {{messageRetentionDuration: 1h}}\n"
    )
    (tmp_path / "org-policy.yaml").write_text(NO_POLICIES)
    result = validate_paths([tmp_path])
    assert result.diagnostics.items == []
    by_name = {t.topic: t for t in result.desired.topics}
    assert by_name["inherits"].message_retention_duration == "604800s"
    assert by_name["overrides"].message_retention_duration == "3600s"
    assert by_name["overrides"].kms_key_name == KEY


def test_a_bad_default_is_reported_at_the_defaults_line(run_cli, tmp_path: Path) -> None:
    (tmp_path / "defaults.yaml").write_text(
        "apiVersion: reconcile.pubsub/v1\nkind: Defaults\nspec:\n"
        "  messageRetentionDuration: 90d\n"
    )
    _tree(tmp_path, _topic("orders"))
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert f"{tmp_path / 'defaults.yaml'}:4:29: error[retention]" in result.stdout


NON_CMEK = """\
name: projects/proj-a/policies/gcp.restrictNonCmekServices
spec:
  rules:
    - values: {deniedValues: [pubsub.googleapis.com]}
"""


def _key_projects(allowed: str, ancestry: str = "") -> str:
    return (
        "---\nname: projects/proj-a/policies/gcp.restrictCmekCryptoKeyProjects\n"
        f"spec:\n  rules:\n    - values: {{allowedValues: [{allowed}]}}\n" + ancestry
    )


def test_a_topic_without_a_key_where_cmek_is_required_is_left_to_plan_at_its_line(
    run_cli, tmp_path: Path
) -> None:
    """The CMEK constraints bind only creation, and offline nothing says whether the
    topic exists: a warning at the topic's line that says plan decides."""
    _tree(tmp_path, _topic("keyed", f"kmsKeyName: {KEY}") + "---\n" + _topic("bare"),
          NON_CMEK + "---\nancestry: {projects/proj-a: none}\n")
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 0, result.stdout
    (warning,) = result.stdout.splitlines()
    assert warning.startswith(f"{tmp_path / 'topics.yaml'}:9:")  # bare's metadata line
    assert "warning[org-cmek-required]" in warning
    assert "constraints/gcp.restrictNonCmekServices of project proj-a requires" in warning
    assert "create topic projects/proj-a/topics/bare without one" in warning
    # What to do, and what happens for a topic that exists already.
    assert "declare kmsKeyName" in warning
    assert (
        "the topic may exist, so `reconcile plan` decides: the constraint binds only a "
        "topic's creation: it refuses a new topic before any call, and reports an existing "
        "one as existing-cmek-required"
    ) in warning


def test_a_key_from_a_project_the_org_does_not_allow_is_left_to_plan_at_the_key(
    run_cli, tmp_path: Path
) -> None:
    _tree(tmp_path, _topic("orders", f"kmsKeyName: {KEY}"),
          NON_CMEK + _key_projects("under:projects/other-keys"))
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 0
    assert (
        f"{tmp_path / 'topics.yaml'}:5:15: warning[org-cmek-key-project]: kmsKeyName of topic "
        "projects/proj-a/topics/orders is a key of projects/keys-proj, which the effective "
        "constraints/gcp.restrictCmekCryptoKeyProjects of project proj-a does not allow"
    ) in result.stdout
    assert "reports an existing one as existing-cmek-key-project" in result.stdout


def test_a_key_under_an_allowed_folder_passes_when_the_ancestry_says_so(
    run_cli, tmp_path: Path
) -> None:
    ancestry = "---\nancestry: {projects/keys-proj: folders/42, folders/42: organizations/1}\n"
    _tree(tmp_path, _topic("orders", f"kmsKeyName: {KEY}"),
          NON_CMEK + _key_projects("under:folders/42", ancestry))
    assert run_cli("validate", str(tmp_path)).exit_code == 0
    # Without the ancestry nobody can tell: a warning that says what to add, not a guess.
    _tree(tmp_path, _topic("orders", f"kmsKeyName: {KEY}"),
          NON_CMEK + _key_projects("under:folders/42"))
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 0
    assert "warning[org-cmek-key-project]: cannot tell whether" in result.stdout
    assert "ancestry: {projects/keys-proj: folders/F}" in result.stdout


def test_a_malformed_key_project_value_in_the_snapshot_is_an_error(
    run_cli, tmp_path: Path
) -> None:
    _tree(tmp_path, _topic("orders"), _key_projects("keys-proj"))
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert "'keys-proj' is not a value of gcp.restrictCmekCryptoKeyProjects" in result.stdout
