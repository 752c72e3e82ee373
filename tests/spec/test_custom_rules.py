"""`reconcile validate` judges every declared topic against the custom constraints of
the snapshot, as the service would judge reconcile's CreateTopic: a refusal is an
error at the spec line of the field that decided it (dry run: a warning), a
condition reading a field the specs do not manage is left to `plan` with one warning
per constraint, and a condition that cannot be evaluated is an error naming it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]

TOPICS = """\
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {project: shop-prod, name: orders}
spec:
  labels: {team: pay}
  messageStoragePolicy:
    allowedPersistenceRegions: [europe-west1, us-east1]
---
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {project: shop-prod, name: refunds}
spec:
  labels: {team: pay}
  messageStoragePolicy:
    allowedPersistenceRegions: [europe-west1]
---
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {project: shop-prod, name: inherited}
spec:
  messageStoragePolicy: inherit
"""

ANCESTRY = "ancestry:\n  projects/shop-prod: organizations/123\n"


def _constraint(name: str, condition: str, action: str = "ALLOW",
                methods: str = "[CREATE, UPDATE]", description: str = "") -> str:
    out = (
        f"name: organizations/123/customConstraints/{name}\n"
        "resourceTypes: [pubsub.googleapis.com/Topic]\n"
        f"methodTypes: {methods}\n"
        f"condition: {condition!r}\n"
        f"actionType: {action}\n"
    )
    if description:
        out += f"description: {description}\n"
    return out


def _policy(name: str, *, dry_run: bool = False) -> str:
    key = "dryRunSpec" if dry_run else "spec"
    return f"name: projects/shop-prod/policies/{name}\n{key}: {{rules: [{{enforce: true}}]}}\n"


def _validate(run_cli: Any, tmp_path: Path, *documents: str) -> Any:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "topics.yaml").write_text(TOPICS)
    snapshot = tmp_path / "org-policy.yaml"
    snapshot.write_text("---\n".join([*documents, ANCESTRY]))
    return run_cli("validate", str(specs), "--org-policy", str(snapshot))


EU_ONLY = (
    "has(resource.messageStoragePolicy) && "
    "resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r.startsWith('europe-'))"
)


def test_a_refusal_is_an_error_at_the_deciding_field(run_cli: Any, tmp_path: Path) -> None:
    result = _validate(
        run_cli, tmp_path,
        _constraint("custom.euOnly", EU_ONLY, description="Topics keep messages in Europe."),
        _policy("custom.euOnly"),
    )
    assert result.exit_code == 1
    errors = [line for line in result.stdout.splitlines() if "error[" in line]
    # orders lists us-east1 (line 7, the region list); inherited sends no storage
    # policy, and one that exists has the policy the service computed: plan decides.
    assert len(errors) == 1, result.stdout
    (orders,) = errors
    (inherited,) = [line for line in result.stdout.splitlines() if "org-custom-at-plan" in line]
    assert orders.startswith(f"{tmp_path}/specs/topics.yaml:7:")
    assert "error[org-custom-constraint]" in orders
    assert "topic projects/shop-prod/topics/orders breaks custom constraint custom.euOnly" in orders
    assert '"Topics keep messages in Europe."' in orders
    assert (
        'resource.messageStoragePolicy.allowedPersistenceRegions = ["europe-west1", "us-east1"]'
        in orders
    )
    assert "refuse CreateTopic with FAILED_PRECONDITION" in orders
    assert "warning[org-custom-at-plan]" in inherited and "topics/inherited" in inherited
    assert "leave to the service: `messageStoragePolicy: inherit`; plan judges" in inherited
    assert "refunds" not in result.stdout


def test_dry_run_is_a_warning(run_cli: Any, tmp_path: Path) -> None:
    result = _validate(
        run_cli, tmp_path,
        _constraint("custom.noPay", "resource.labels['team'] == 'pay'", action="DENY"),
        _policy("custom.noPay", dry_run=True),
    )
    assert result.exit_code == 0, result.stdout
    # orders and refunds (one finding, each topic at its labels); inherited has no
    # team label: undecided.
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        "projects/shop-prod: warning[org-custom-constraint]: each of these 2 topics breaks "
        "custom constraint custom.noPay"
    ), lines
    assert "dry run" in lines[0]
    assert lines[1] == f"  {tmp_path}/specs/topics.yaml:5:11: projects/shop-prod/topics/orders"
    assert lines[2] == f"  {tmp_path}/specs/topics.yaml:13:11: projects/shop-prod/topics/refunds"
    assert "warning[org-custom-unevaluable]" in lines[3] and "custom.noPay" in lines[3]
    assert "dry run" in lines[3]


def test_reconciles_own_labels_are_part_of_the_create(run_cli: Any, tmp_path: Path) -> None:
    result = _validate(
        run_cli, tmp_path,
        _constraint("custom.owner", "resource.labels['reconcile-owner'] == 'platform'"),
        _policy("custom.owner"),
    )
    assert result.exit_code == 1
    assert result.stderr == "1 file checked: 3 errors, 0 warnings\n"
    # orders and refunds said once (the same labels), inherited on its own
    assert result.stdout.count("error[org-custom-constraint]") == 2
    assert "each of these 2 topics breaks custom constraint custom.owner" in result.stdout
    assert 'resource.labels = {"reconcile-managed": "true", "reconcile-owner": "default"' in (
        result.stdout
    )


def test_unmanaged_fields_are_left_to_plan_once_per_constraint(
    run_cli: Any, tmp_path: Path
) -> None:
    result = _validate(
        run_cli, tmp_path,
        _constraint("custom.cmek", "has(resource.kmsKeyName)"),
        _policy("custom.cmek"),
        _constraint("custom.retention", "resource.messageRetentionDuration == '604800s'"),
        _policy("custom.retention"),
    )
    assert result.exit_code == 0, result.stdout
    notes = [line for line in result.stdout.splitlines() if "org-custom-at-plan" in line]
    assert len(notes) == 2
    assert "custom.cmek reads resource.kmsKeyName" in notes[0]
    assert "(topic projects/shop-prod/topics/orders and 2 other topics)" in notes[0]
    assert "custom.retention reads resource.messageRetentionDuration" in notes[1]


def test_an_unevaluable_condition_is_an_error(run_cli: Any, tmp_path: Path) -> None:
    result = _validate(
        run_cli, tmp_path,
        _constraint("custom.team", "resource.labels.team == 'pay'"),
        _policy("custom.team"),
    )
    assert result.exit_code == 1
    errors = [line for line in result.stdout.splitlines() if "error[" in line]
    assert len(errors) == 1, result.stdout
    assert "error[org-custom-unevaluable]" in errors[0]
    assert "custom constraint custom.team cannot be evaluated on topic " in errors[0]
    assert "projects/shop-prod/topics/inherited" in errors[0]
    assert "does not set resource.labels.team" in errors[0]
    # The hint names the field to guard.
    assert "guard resource.labels.team with has() in the condition" in errors[0]


def test_conditions_on_the_name_are_judged_together_and_each_keeps_its_verdict(
    run_cli: Any, tmp_path: Path
) -> None:
    """The conditions on the name are evaluated on each topic in one call; one that
    cannot be evaluated on a topic (a label it lacks) does not take the others'
    verdicts with it, and each verdict names its own constraint."""
    result = _validate(
        run_cli, tmp_path,
        _constraint("custom.noOrders", "resource.name.endsWith('/orders')", action="DENY"),
        _policy("custom.noOrders"),
        _constraint(
            "custom.payTeam",
            "resource.name.startsWith('projects/shop-prod/') && resource.labels['team'] == 'pay'",
        ),
        _policy("custom.payTeam"),
        _constraint("custom.short", "size(resource.name) < 40"),
        _policy("custom.short"),
    )
    assert result.exit_code == 1
    errors = [line for line in result.stdout.splitlines() if "error[" in line]
    assert len(errors) == 2, result.stdout
    refused, unevaluable = sorted(errors, key=lambda line: "unevaluable" in line)
    assert refused.startswith(f"{tmp_path}/specs/topics.yaml:3:")  # orders' name
    assert "topic projects/shop-prod/topics/orders breaks custom constraint custom.noOrders" in (
        refused
    )
    assert 'resource.name = "projects/shop-prod/topics/orders"' in refused
    assert "error[org-custom-unevaluable]" in unevaluable
    assert "custom constraint custom.payTeam cannot be evaluated on topic " in unevaluable
    assert "projects/shop-prod/topics/inherited: the resource does not set 'team'" in unevaluable
    assert "custom.short" not in result.stdout and "refunds" not in result.stdout


def test_unenforced_and_other_organizations_constraints_check_nothing(
    run_cli: Any, tmp_path: Path
) -> None:
    result = _validate(
        run_cli, tmp_path,
        _constraint("custom.euOnly", EU_ONLY),  # defined, but no policy enforces it
    )
    assert result.exit_code == 0, result.stdout
    assert "org-custom" not in result.stdout


def test_validate_loads_the_cel_library_only_for_custom_constraints(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from reconciler.cli import main\n"
        "try:\n"
        "    main(['validate', *sys.argv[1:]])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('LOADED', sorted(m for m in ('cel_expr_python', 'reconciler.orgpolicy.cel', "
        "'reconciler.spec.customrules') if m in sys.modules))\n"
    )

    def loaded(*args: str) -> str:
        result = subprocess.run(
            [sys.executable, "-c", probe, *args],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
        )
        return result.stdout.splitlines()[-1]

    assert loaded(str(ROOT / "specs")) == "LOADED []"
    snapshot = tmp_path / "org-policy.yaml"
    snapshot.write_text(
        "---\n".join([_constraint("custom.euOnly", EU_ONLY), _policy("custom.euOnly"), ANCESTRY])
    )
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "topics.yaml").write_text(TOPICS)
    assert loaded(str(specs), "--org-policy", str(snapshot)) == (
        "LOADED ['cel_expr_python', 'reconciler.orgpolicy.cel', 'reconciler.spec.customrules']"
    )


def _retention_of_orders(tmp_path: Path, constraint: str, name: str) -> tuple[Path, Path]:
    """The tree with a 2-day retention declared on `orders` (line 6), and a snapshot
    enforcing `constraint` (named `name`) on the project."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "topics.yaml").write_text(
        TOPICS.replace("  labels: {team: pay}\n", "  labels: {team: pay}\n"
                       "  messageRetentionDuration: 2d\n", 1)
    )
    snapshot = tmp_path / "org-policy.yaml"
    snapshot.write_text("---\n".join([constraint, _policy(name), ANCESTRY]))
    return specs, snapshot


def _one_error_at_the_retention(result: Any, specs: Path) -> str:
    assert result.exit_code == 1, result.stdout
    errors = [line for line in result.stdout.splitlines() if "error[" in line]
    assert len(errors) == 1, result.stdout
    assert errors[0].startswith(f"{specs}/topics.yaml:6:")  # the retention's line
    return errors[0]


def test_a_declared_retention_is_judged_at_its_line(run_cli: Any, tmp_path: Path) -> None:
    specs, snapshot = _retention_of_orders(
        tmp_path,
        _constraint("custom.week", "resource.messageRetentionDuration == '604800s'",
                    description="Topics keep messages a week."),
        "custom.week",
    )
    result = run_cli("validate", str(specs), "--org-policy", str(snapshot))
    errors = [_one_error_at_the_retention(result, specs)]
    assert "topics/orders breaks custom constraint custom.week" in errors[0]
    assert 'resource.messageRetentionDuration = "172800s"' in errors[0]
    # The topics that leave retention unmanaged are decided at plan time, said once.
    notes = [line for line in result.stdout.splitlines() if "org-custom-at-plan" in line]
    assert len(notes) == 1 and "custom.week reads resource.messageRetentionDuration" in notes[0]


def test_a_condition_whose_answer_depends_on_an_undocumented_presentation_is_placed_at_the_field(
    run_cli: Any, tmp_path: Path
) -> None:
    """`resource.messageRetentionDuration == duration(...)` is false on the REST JSON
    string and true on a CEL duration: an error at the declared retention's line,
    with the explicit conversion that reads the same either way as its hint."""
    ambiguous = "resource.messageRetentionDuration == duration('172800s')"
    specs, snapshot = _retention_of_orders(
        tmp_path,
        _constraint("custom.twoDays", f"has(resource.messageRetentionDuration) && {ambiguous}"),
        "custom.twoDays",
    )
    result = run_cli("validate", str(specs), "--org-policy", str(snapshot))
    error = _one_error_at_the_retention(result, specs)
    assert "error[org-custom-unevaluable]" in error
    assert "convert it explicitly, duration(resource.messageRetentionDuration)" in error

    # Written as the hint says, both readings agree and the topic is allowed.
    snapshot.write_text(snapshot.read_text().replace(
        "resource.messageRetentionDuration == duration",
        "duration(resource.messageRetentionDuration) == duration",
    ))
    result = run_cli("validate", str(specs), "--org-policy", str(snapshot))
    assert result.exit_code == 0, result.stdout


def test_a_condition_that_reads_nothing_says_so(run_cli: Any, tmp_path: Path) -> None:
    """Once "the condition saw ; the service would refuse": an always-false ALLOW."""
    result = _validate(run_cli, tmp_path, _constraint("custom.never", "false"),
                       _policy("custom.never"))
    assert result.exit_code == 1
    refused = [line for line in result.stdout.splitlines() if "org-custom-constraint" in line]
    assert refused and all(
        "the condition saw no field of the topic (it reads none); the service would refuse"
        in line for line in refused), result.stdout
    assert "saw ;" not in result.stdout
