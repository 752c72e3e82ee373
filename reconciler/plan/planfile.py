"""The plan file: what `plan --out` writes and `apply PLANFILE` / `show` read.

    write_plan(plan, path)      atomically: a reader never sees half a plan
    read_plan(path) -> Plan     or an InputError naming the file and what is wrong
    looks_like_plan_file(paths) one argument naming a JSON file with `format_version`
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from reconciler.errors import InputError
from reconciler.fileio import write_atomically
from reconciler.plan.model import Plan

REMAKE_HINT = "make a new one with `reconcile plan --out PLANFILE`"


def write_plan(plan: Plan, path: Path) -> None:
    write_atomically(path, plan.dumps(), "plan file")


def read_plan(path: Path) -> Plan:
    """A saved plan, or an InputError naming the file and what is wrong with it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: plan file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the plan file: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}:{exc.lineno}:{exc.colno}: not a plan file (invalid JSON: {exc.msg})",
            hint=REMAKE_HINT,
        ) from None
    if not isinstance(data, dict) or "format_version" not in data:
        raise InputError(f"{path}: not a reconcile plan file (no format_version)", hint=REMAKE_HINT)
    try:
        return Plan.from_json(data)
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
    except (KeyError, TypeError, AttributeError) as exc:
        raise InputError(
            f"{path}: the plan file is damaged or incomplete ({type(exc).__name__}: {exc})",
            hint=REMAKE_HINT,
        ) from None


def looks_like_plan_file(paths: Sequence[Path]) -> bool:
    """One argument naming a file whose JSON has `format_version`: a saved plan."""
    if len(paths) != 1 or not paths[0].is_file():
        return False
    try:
        with paths[0].open(encoding="utf-8") as fh:
            head = fh.read(1)
            if head != "{":
                return False
            fh.seek(0)
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and "format_version" in data
