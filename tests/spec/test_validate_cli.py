"""`reconcile validate` as a user runs it: output lines, formats, exit codes, and
hostile input files that must end in a clear diagnostic, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reconciler.yamlio import MAX_FILE_BYTES

GOOD = """\
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {project: acme-payments, name: orders}
"""


NO_POLICIES = (
    "# org-policy snapshot: no org policies set\n"
    "ancestry: {projects/acme-payments: organizations/1001}\n"
)


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def test_clean_tree_exits_zero_and_says_so(run_cli, tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", GOOD)
    write(tmp_path, "org-policy.yaml", NO_POLICIES)
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "1 file checked: 0 errors, 0 warnings" in result.stderr


def test_every_problem_is_reported_in_path_line_col_form(run_cli, tmp_path: Path) -> None:
    write(tmp_path, "org-policy.yaml", NO_POLICIES)
    bad = write(
        tmp_path,
        "bad.yaml",
        GOOD.replace("orders", "ab")
        + "spec:\n  messageStoragePolicy:\n    allowedPersistenceRegions: [us-east1-b]\n",
    )
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines == [
        f"{bad}:3:42: error[topic-id]: topic ID 'ab' must be 3 to 255 characters long (it has 2)",
        f"{bad}:6:33: error[region-zone]: 'us-east1-b' is a zone; use its region 'us-east1'",
    ]


def test_warnings_alone_exit_zero(run_cli, tmp_path: Path) -> None:
    write(
        tmp_path,
        "w.yaml",
        GOOD + "spec:\n  messageStoragePolicy:\n    allowedPersistenceRegions: [us-west8]\n",
    )
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 0
    assert "warning[region-restricted]" in result.stdout


def test_json_format_lists_the_same_diagnostics(run_cli, tmp_path: Path) -> None:
    write(tmp_path, "org-policy.yaml", NO_POLICIES)
    bad = write(tmp_path, "bad.yaml", GOOD.replace("Topic", "Topik"))
    result = run_cli("validate", str(tmp_path), "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data == [
        {
            "file": str(bad),
            "line": 2,
            "col": 7,
            "severity": "error",
            "code": "unknown-kind",
            "message": "unknown kind 'Topik'; expected one of: Topic, HedgingProfile, "
            "Defaults, Owner; did you mean 'Topic'?",
            "hint": None,
            "topic": None,  # not about a topic: a document
        }
    ]


def test_default_path_is_specs_directory(run_cli, tmp_path: Path, monkeypatch) -> None:
    """Only specs/ is read: a broken spec beside it (which `.` would pick up) is not."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "specs/a.yaml", GOOD)
    write(tmp_path, "specs/org-policy.yaml", NO_POLICIES)
    write(tmp_path, "elsewhere/broken.yaml", "kind: Topik\n")
    result = run_cli("validate")
    assert result.exit_code == 0, result.stdout
    assert "1 file checked: 0 errors, 0 warnings" in result.stderr
    assert "broken.yaml" not in result.stdout + result.stderr


def test_directory_without_specs_is_an_error(run_cli, tmp_path: Path) -> None:
    write(tmp_path, "README.md", "no specs here")
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert f"{tmp_path}: error[no-specs]: no spec files (*.yaml, *.yml)" in result.stdout


def test_missing_path_is_an_error(run_cli, tmp_path: Path) -> None:
    result = run_cli("validate", str(tmp_path / "nope"))
    assert result.exit_code == 1
    assert "error[path-missing]" in result.stdout


def test_empty_file_is_a_warning(run_cli, tmp_path: Path) -> None:
    empty = write(tmp_path, "empty.yaml", "")
    write(tmp_path, "a.yaml", GOOD)
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 0
    assert f"{empty}:1:1: warning[empty-file]: the file holds no spec documents" in result.stdout


def test_alias_expansion_bomb_is_refused_quickly(run_cli, tmp_path: Path) -> None:
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    previous = "a"
    for name in "bcdefghi":
        text += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
        previous = name
    bomb = write(tmp_path, "bomb.yaml", text)
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert f"{bomb}:1:8: error[yaml-too-large]:" in result.stdout
    assert "alias-expansion bomb" in result.stdout


def test_deeply_nested_document_is_refused(run_cli, tmp_path: Path) -> None:
    write(tmp_path, "deep.yaml", "a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    write(tmp_path, "deep2.yaml", "a: " + "[" * 100 + "]" * 100 + "\n")
    write(tmp_path, "masked.yaml", 'a: "' + "]" * 200 + '"\nb: ' + "[" * 100 + "]" * 100 + "\n")
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    # Refused before libyaml parses it (some libyaml builds recurse without a limit).
    assert "deep.yaml:1:68: error[yaml-too-deep]: the document nests deeper than 64" in (
        result.stdout
    )
    assert "masked.yaml:2:68: error[yaml-too-deep]" in result.stdout
    assert "deep2.yaml:1:68: error[yaml-too-deep]: the document nests deeper than 64" in (
        result.stdout
    )


def test_huge_file_is_refused_without_reading_it(run_cli, tmp_path: Path) -> None:
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert f"{huge}:1:1: error[file-too-large]: the file is 8,388,609 bytes" in result.stdout


def test_binary_file_is_refused(run_cli, tmp_path: Path) -> None:
    binary = write(tmp_path, "blob.yaml", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert f"{binary}:1:1: error[file-binary]: the file is binary" in result.stdout


def test_non_utf8_file_points_at_the_bad_byte(run_cli, tmp_path: Path) -> None:
    latin = write(tmp_path, "latin.yaml", GOOD.encode() + b"# caf\xe9\n")
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert f"{latin}:4:6: error[file-encoding]: the file is not valid UTF-8 (byte 0xe9)" in (
        result.stdout
    )


def test_yaml_tags_are_never_constructed(run_cli, tmp_path: Path) -> None:
    evil = write(
        tmp_path,
        "evil.yaml",
        GOOD + "spec:\n  labels: !!python/object/apply:os.system ['touch pwned']\n",
    )
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert f"{evil}:5:11: error[yaml-tag]" in result.stdout
    assert not (tmp_path / "pwned").exists()


def test_duplicate_keys_are_reported(run_cli, tmp_path: Path) -> None:
    dup = write(tmp_path, "dup.yaml", GOOD + "spec: {}\nspec: {}\n")
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert f"{dup}:5:1: error[yaml-duplicate-key]: key 'spec' appears twice" in result.stdout


def test_merge_keys_and_defaults_documents_apply(run_cli, tmp_path: Path) -> None:
    write(tmp_path, "org-policy.yaml", NO_POLICIES)
    write(
        tmp_path,
        "team/defaults.yaml",
        "apiVersion: reconcile.pubsub/v1\nkind: Defaults\nspec:\n  project: acme-payments\n",
    )
    write(
        tmp_path,
        "team/sub/topics.yaml",
        "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
        "metadata:\n  <<: {name: orders, project: overridden-by-explicit}\n"
        "  project: acme-payments\n",
    )
    write(tmp_path, "other/topics.yaml", "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
          "metadata: {name: orphan}\n")
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{tmp_path / 'other/topics.yaml'}:3:1: error[missing-field]: metadata > project is "
        "required (or set `project` in a Defaults document of this directory)"
    ]


def test_bad_org_policy_file_is_a_clear_error(run_cli, tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", GOOD)
    policy = write(tmp_path, "policy.yaml", "name: projects/acme-payments/policies/x\nspec: 5\n")
    result = run_cli("validate", str(tmp_path), "--org-policy", str(policy))
    assert result.exit_code == 1
    # Validated like the specs: a diagnostic at the snapshot's line and column.
    assert f"{policy}:2:7: error[policy-format]: a policy spec must be a mapping" in (
        result.stdout
    )
    assert "Traceback" not in result.stderr


def test_missing_org_policy_file_is_a_clear_error(run_cli, tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", GOOD)
    result = run_cli("validate", str(tmp_path), "--org-policy", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 1
    assert "org-policy file not found" in result.stderr


def test_run_inside_the_spec_tree_says_there_is_no_specs_here_and_nothing_else(
    run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`reconcile validate` in specs/ itself: one error saying what to do, not a
    missing path plus a snapshot looked for "in nowhere"."""
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "t.yaml").write_text(GOOD)
    monkeypatch.chdir(tmp_path / "specs")
    result = run_cli("validate")
    assert result.exit_code == 1
    assert result.stdout == (
        "specs: error[path-missing]: no spec tree here: specs/, the default PATH, is not in "
        "the current directory (run from the directory that holds specs/, or name the tree "
        "as PATH: `.` for the current directory)\n"
    )
    assert "nowhere" not in result.stdout + result.stderr
    assert run_cli("validate", ".").exit_code == 0
