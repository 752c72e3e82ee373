"""Plan files made by another release: one of this format is read as it was written,
byte for byte; one this reconcile cannot read as it was written is refused before any
call with "made by an older reconcile: plan again", never misread (a file of the
previous major, 3.0: tests/apply/test_plan_damaged.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plan_helpers import every_kind_plan

from reconciler.plan import planfile
from reconciler.plan.model import FORMAT_VERSION, MAJOR
from reconciler.plan.planfile import read_plan, write_plan
from tests.cli_support import reconcile


def test_a_current_plan_file_reads_as_it_was_written(tmp_path: Path) -> None:
    plan = every_kind_plan(["p"])
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    back = read_plan(path)
    assert back == plan and back.digest == plan.digest
    assert back.dumps() == path.read_text()


@pytest.mark.parametrize("member", ["projects", "owner", "left_behind"])
def test_an_older_minor_this_release_cannot_read_is_refused_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local_server: Any, member: str
) -> None:
    """As a file of this format will read once a newer minor has a member this one did
    not write (or wrote otherwise): refused, plan again; never read with a default in
    its place."""
    newer = f"{MAJOR}.{int(FORMAT_VERSION.split('.')[1]) + 1}"
    monkeypatch.setattr(planfile, "FORMAT_VERSION", newer)
    made = tmp_path / "made.json"
    write_plan(every_kind_plan(["p"]), made)
    data: dict[str, Any] = json.loads(made.read_text())
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
            f"Error: {path}: plan format_version {FORMAT_VERSION} was made by an older "
            f"reconcile: plan again (this one reads {newer}; field "
        ), run.stderr
        assert "Traceback" not in run.output
    assert local_server.counters.total() == 0
