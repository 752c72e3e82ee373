"""`reconcile import` round-trips labels YAML would read as numbers, booleans, nulls
or dates (issue 21): topics made through the real PublisherClient on the loopback
server, imported, then `validate` exits 0 and `plan` says "No changes"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.ownership import OWNERSHIP_LABEL, OWNERSHIP_VALUE

PROJECT = "acme-yaml-words"
# Each a valid Google label value (and key, where it starts with a letter).
VALUES = {
    "exp": "1e3", "exp-big": "12e3", "exp-neg": "1e-3", "hex": "0x1f", "octal": "0o17",
    "old-octal": "0777", "under": "1_000", "date": "2001-12-14", "yes": "yes", "off": "off",
    "null": "null", "y": "y", "n": "n", "true": "false", "plain": "1e3-but-text",
    "empty": "", "digits": "09",
}
TOPICS = ("orders", "yes", "null", "e1e3")


def test_import_of_yaml_typed_labels_validates_and_plans_no_changes(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    for topic in TOPICS:
        publisher_client.create_topic(
            request={
                "name": f"projects/{PROJECT}/topics/{topic}",
                # Managed already (a tree lost and imported again): nothing to adopt.
                "labels": {**VALUES, OWNERSHIP_LABEL: OWNERSHIP_VALUE},
                "message_storage_policy": {"allowed_persistence_regions": ["us-east1"]},
            }
        )
    out = tmp_path / "imported"
    addr = local_server.address
    imported = run_cli("import", "--project", PROJECT, "--out", str(out), "--emulator", addr)
    assert imported.exit_code == 0, imported.stderr
    text = (out / f"{PROJECT}.yaml").read_text()
    assert "exp: '1e3'" in text and "'yes': 'yes'" in text and "name: 'null'" in text

    validated = run_cli("validate", str(out))
    assert validated.exit_code == 0, validated.stdout + validated.stderr
    assert "error" not in validated.stdout

    plan = run_cli("plan", str(out), "--emulator", addr, "--detailed-exitcode")
    assert plan.exit_code == 0, plan.stdout + plan.stderr
    assert "No changes. The live topics match the specs." in plan.stdout


def test_a_fresh_import_converges_after_the_adoption(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    """Unmanaged topics: the plan adopts them (the ownership label) and nothing else;
    after apply, the same import plans "No changes"."""
    publisher_client.create_topic(
        request={"name": f"projects/{PROJECT}/topics/orders", "labels": VALUES}
    )
    out = tmp_path / "imported"
    addr = local_server.address
    assert run_cli("import", "--project", PROJECT, "--out", str(out), "--emulator", addr)
    assert run_cli("validate", str(out)).exit_code == 0
    adopt = run_cli("plan", str(out), "--emulator", addr, "--detailed-exitcode")
    assert adopt.exit_code == 2, adopt.stdout + adopt.stderr
    assert "Plan: 0 to create, 1 to update, 0 to delete." in adopt.stdout
    assert f'+ "{OWNERSHIP_LABEL}" = "{OWNERSHIP_VALUE}"' in adopt.stdout
    applied = run_cli("apply", str(out), "--emulator", addr, "--auto-approve")
    assert applied.exit_code == 0, applied.stderr
    again = run_cli("plan", str(out), "--emulator", addr, "--detailed-exitcode")
    assert again.exit_code == 0, again.stdout + again.stderr
    assert "No changes. The live topics match the specs." in again.stdout
