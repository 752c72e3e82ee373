"""The CI examples validate against the official schemas (GitHub's workflow schema and
GitLab's CI schema, as vendored by check-jsonschema: no network), and a broken copy
is rejected with the key at fault named."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitops.workflow_lines import ROOT

SCHEMAS = {
    ROOT / "examples" / "github" / "reconcile.yml": "vendor.github-workflows",
    ROOT / "examples" / "github" / "drift.yml": "vendor.github-workflows",
    ROOT / "examples" / "gitlab" / ".gitlab-ci.yml": "vendor.gitlab-ci",
}


def check(path: Path, schema: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    assert exe is not None, "check-jsonschema is installed with the test extras"
    return subprocess.run(
        [exe, "--builtin-schema", schema, str(path)],
        capture_output=True, text=True, timeout=120,
    )


@pytest.mark.parametrize("path", list(SCHEMAS), ids=lambda p: p.name)
def test_example_validates_against_the_official_schema(path: Path) -> None:
    result = check(path, SCHEMAS[path])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok -- validation done" in result.stdout


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        (ROOT / "examples" / "github" / "reconcile.yml", "runs-on: ubuntu-latest",
         "runs-on: ubuntu-latest\n    timeout: 5"),
        (ROOT / "examples" / "gitlab" / ".gitlab-ci.yml", "    strategy: depend",
         "    strategy: [depend]"),
    ],
    ids=["github-unknown-key", "gitlab-wrong-type"],
)
def test_a_broken_copy_is_rejected(tmp_path: Path, path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    broken = tmp_path / path.name
    broken.write_text(text.replace(old, new, 1))
    result = check(broken, SCHEMAS[path])
    assert result.returncode == 1, result.stdout
    assert "Schema validation errors were encountered" in result.stdout
