"""Plan files made by another release: one made by the previous release (main at
9f5c15b, format 3.0: previous_release/plan.json, and what that release's `show` printed
for it: show.txt, show.md) is read as it was written, byte for byte; one this reconcile
cannot read as it was written is refused before any call with "made by an older
reconcile: plan again", never misread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plan_helpers import every_kind_plan

from reconciler.plan import planfile
from reconciler.plan.planfile import read_plan, write_plan
from tests.cli_support import reconcile

PREVIOUS = Path(__file__).parent / "previous_release"


def test_a_previous_release_plan_file_reads_as_it_was_written() -> None:
    path = PREVIOUS / "plan.json"
    plan = read_plan(path)
    assert plan.digest == json.loads(path.read_text())["digest"]
    assert plan.dumps() == path.read_text()
    for fmt, shown in (("text", "show.txt"), ("markdown", "show.md")):
        run = reconcile("show", str(path), "--format", fmt)
        assert run.exit_code == 0, run.output
        assert run.stdout == (PREVIOUS / shown).read_text()


def test_a_current_plan_file_reads_as_it_was_written(tmp_path: Path) -> None:
    plan = every_kind_plan(["p"])
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    back = read_plan(path)
    assert back == plan and back.digest == plan.digest
    assert back.dumps() == path.read_text()
    # This release writes what the previous one wrote for the same plan.
    assert path.read_text() == (PREVIOUS / "plan.json").read_text()


@pytest.mark.parametrize("member", ["projects", "owner", "left_behind"])
def test_an_older_minor_this_release_cannot_read_is_refused_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local_server: Any, member: str
) -> None:
    """As a 3.0 file will read once this format is 3.1 with a member 3.0 did not write
    (or wrote otherwise): refused, plan again; never read with a default in its place."""
    monkeypatch.setattr(planfile, "FORMAT_VERSION", "3.1")
    data: dict[str, Any] = json.loads((PREVIOUS / "plan.json").read_text())
    data["target"]["address"] = local_server.address  # where apply would go
    if member == "left_behind":
        data["resource_changes"][1]["left_behind"] = [{"region": "us-west1", "messages": "3"}]
    elif member == "owner":
        del data["owner"]
    else:
        data["projects"] = "p"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    for verb, code in (("show", 1), ("apply", 4)):
        run = reconcile(verb, str(path))
        assert run.exit_code == code, run.output
        assert run.stderr.startswith(
            f"Error: {path}: plan format_version 3.0 was made by an older reconcile: plan "
            "again (this one reads 3.1; field "
        ), run.stderr
        assert "Traceback" not in run.output
    assert local_server.counters.total() == 0
