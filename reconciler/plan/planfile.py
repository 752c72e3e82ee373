"""The plan file: what `plan --out` writes and `apply PLANFILE` / `show` read.

    write_plan(plan, path)        atomically: a reader never sees half a plan
    read_plan(path) -> Plan       checked, or a PlanRefused naming the file and the field
    check_expected_digest(plan, expected)   --expect-digest sha256:HEX
    looks_like_plan_file(paths)   one argument naming a file that is not a YAML spec

Reading checks, in order, before anything is rendered or applied: JSON; the format
version (a file of an older major is refused, "made by an older reconcile: plan
again", saying what it lacks; a newer minor with keys this reader does not know is
named as such); every field's type (plan/planschema.py, from the plan model); the digest over
the canonical content; and that every stored request and `fields` entry is the one the
model derives from its change (plan/derive.py). Any failure refuses the whole plan:
`PlanRefused` (exit code 4) with reason "damaged", or "digest-mismatch" for content that
is not its digest's and for a plan that is not the `--expect-digest` one (`show` reports
them as input errors).
"""

from __future__ import annotations

import errno
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reconciler.errors import PlanRefused, Refusal, UsageError
from reconciler.fileio import FileProblem, read_bytes, write_atomically
from reconciler.plan import derive
from reconciler.plan.model import DIGEST, FORMAT_VERSION, MAJOR, Plan, digest_of
from reconciler.plan.planschema import PlanShapeError, check_plan

REMAKE_HINT = "make a new one with `reconcile plan --out PLANFILE`"
SPEC_SUFFIXES = (".yaml", ".yml")
MAX_LISTED = 10
MAX_PLAN_BYTES = 1 << 30  # far beyond any plan's canonical JSON: past it, not a plan
# What a file of an older major lacks, for its refusal (read as it is, it would be
# misread).
OLDER = {
    "1": "it has no digest and no recorded target, so it cannot be checked",
    "2": "it records no owner, so its prune and its adoptions cannot be checked against "
    "the spec tree that owns each topic",
    "3": "its requests do not state the plan's marker, the label merge and the update "
    "mask apply sends",
}


def write_plan(plan: Plan, path: Path) -> None:
    write_atomically(path, plan.dumps(), "plan file")


def _load(path: Path) -> Any:
    if path.is_dir():
        raise PlanRefused(Refusal.DAMAGED, f"{path}: is a directory, not a plan file")
    try:
        text = read_bytes(path, MAX_PLAN_BYTES, REMAKE_HINT).decode("utf-8")
    except FileProblem as exc:  # missing, not a regular file, too large, unreadable
        if exc.errno == errno.ENOENT:
            raise PlanRefused(Refusal.DAMAGED, f"{path}: plan file not found") from None
        raise PlanRefused(
            Refusal.DAMAGED, f"{path}: cannot read the plan file: {exc.message}"
        ) from None
    except UnicodeDecodeError as exc:
        raise PlanRefused(Refusal.DAMAGED, f"{path}: cannot read the plan file: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlanRefused(
            Refusal.DAMAGED,
            f"{path}:{exc.lineno}:{exc.colno}: not a plan file (invalid JSON: {exc.msg})",
            hint=REMAKE_HINT,
        ) from None
    except (RecursionError, ValueError) as exc:
        raise PlanRefused(
            Refusal.DAMAGED, f"{path}: not a plan file ({exc})", hint=REMAKE_HINT
        ) from None


def _check_version(path: Path, data: Any) -> None:
    if not isinstance(data, dict) or "format_version" not in data:
        raise PlanRefused(
            Refusal.DAMAGED, f"{path}: not a reconcile plan file (no format_version)",
            hint=REMAKE_HINT,
        )
    version = data["format_version"]
    if not isinstance(version, str):
        raise PlanRefused(
            Refusal.DAMAGED, f"{path}: format_version: expected a string like {FORMAT_VERSION!r}"
        )
    major = version.split(".")[0]
    older = OLDER.get(major)
    if older is not None:
        raise PlanRefused(
            Refusal.DAMAGED,
            f"{path}: plan format_version {version} was made by an older reconcile: plan "
            f"again ({older})",
            hint=REMAKE_HINT,
        )
    if major != MAJOR:
        raise PlanRefused(
            Refusal.DAMAGED,
            f"{path}: plan format_version {version} is not supported (this reconcile "
            f"reads and writes {FORMAT_VERSION})",
            hint=REMAKE_HINT,
        )


def _newer_minor(version: str) -> bool:
    """A version of our major with a higher minor than ours (it may hold keys this
    reconcile does not know)."""
    minor = version.split(".", 1)[1] if "." in version else ""
    ours = FORMAT_VERSION.split(".", 1)[1]
    return minor.isdigit() and int(minor) > int(ours)


def read_plan(path: Path) -> Plan:
    """A saved plan that is whole, unedited and self-consistent, or a PlanRefused
    naming the file and what is wrong with it."""
    data = _load(path)
    _check_version(path, data)
    try:
        check_plan(data)
    except PlanShapeError as exc:
        if _newer_minor(data["format_version"]):
            raise PlanRefused(
                Refusal.DAMAGED,
                f"{path}: plan format_version {data['format_version']} was written by a "
                f"newer reconcile (this one reads {FORMAT_VERSION}): field {exc.where}: "
                f"{exc.what}",
                hint="apply it with the reconcile that made it, or " + REMAKE_HINT,
            ) from None
        raise PlanRefused(
            Refusal.DAMAGED,
            f"{path}: the plan file is damaged or incomplete: field {exc.where}: {exc.what}",
            hint=REMAKE_HINT,
        ) from None
    actual = digest_of(data)
    if actual != data["digest"]:
        raise PlanRefused(
            Refusal.DIGEST_MISMATCH,
            f"{path}: the plan's content does not match its digest {data['digest']} (the "
            f"content hashes to {actual}): the file was changed after it was made",
            hint=REMAKE_HINT,
        )
    plan = Plan.from_json(data)
    found = inconsistencies(plan, data["resource_changes"])
    if found:
        listed = "\n".join(f"  - {line}" for line in found[:MAX_LISTED])
        more = f"\n  ... and {len(found) - MAX_LISTED} more" if len(found) > MAX_LISTED else ""
        raise PlanRefused(
            Refusal.DAMAGED,
            f"{path}: the plan's requests are not the changes it shows; refusing the "
            f"whole plan:\n{listed}{more}",
            hint="the file was edited after it was made; " + REMAKE_HINT,
            details=found,
        )
    if plan.digest != actual:  # the schema is exact, so this is a bug if it happens
        raise PlanRefused(
            Refusal.DAMAGED, f"{path}: the plan file does not read back as written",
            hint=REMAKE_HINT,
        )
    return plan


def inconsistencies(plan: Plan, stored: Sequence[Any]) -> list[str]:
    """Every change whose stored request or fields (`stored`: the file's
    `resource_changes`) are not the ones derived from it, and every address planned
    twice."""
    out: list[str] = []
    seen: set[str] = set()
    for rc, entry in zip(plan.resource_changes, stored, strict=True):
        if rc.address in seen:
            out.append(f"{rc.address}: planned more than once")
        if rc.action == "delete" and not plan.prune:
            out.append(f"{rc.address}: a delete in a plan made without --prune")
        if plan.projects and rc.project not in plan.projects:
            out.append(f"{rc.address}: not in the plan's projects ({', '.join(plan.projects)})")
        seen.add(rc.address)
        out += [f"{rc.address}: {problem}" for problem in derive.problems(rc, entry)]
    return out


def check_expected_digest(plan: Plan, expected: str, path: Path) -> None:
    """--expect-digest: the plan must be exactly the one whose digest was reviewed."""
    want = expected.strip().lower()
    if not re.fullmatch(DIGEST.regex, want):
        raise UsageError(
            f"--expect-digest must be sha256: followed by 64 hex digits, got {expected!r:.80}"
        )
    if plan.digest != want:
        raise PlanRefused(
            Refusal.DIGEST_MISMATCH,
            f"{path}: the plan's digest is {plan.digest}, not the expected {want}: this is "
            "not the plan that was reviewed; nothing was applied",
            hint="apply the reviewed plan file, or review this one and pass its digest",
        )


def looks_like_plan_file(paths: Sequence[Path]) -> bool:
    """One argument naming a file that is not a YAML spec: a saved plan (read_plan
    then says clearly when it is not one)."""
    if len(paths) != 1 or not paths[0].exists() or paths[0].is_dir():
        return False
    return paths[0].suffix.lower() not in SPEC_SUFFIXES
