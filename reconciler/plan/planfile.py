"""The plan file: what `plan --out` writes and `apply PLANFILE` / `show` read.

    write_plan(plan, path)        atomically: a reader never sees half a plan
    read_plan(path) -> Plan       checked, or a PlanRefused naming the file and the field
    check_expected_digest(plan, expected)   --expect-digest sha256:HEX
    looks_like_plan_file(paths)   one argument naming a file that is not a YAML spec

Reading checks, before anything is rendered or applied: that the file is one JSON
object of this format's major version (a file made by an older reconcile is refused:
plan again; a newer minor with keys this reader does not know is named as such); every
field's type and every key (the plan model, reconciler/codec.py); that the content is
its digest's; and that every stored request and `fields` entry is the one the model
derives from its change (plan/derive.py). Any failure refuses the whole plan:
`PlanRefused` (exit code 4) with reason "damaged", or "digest-mismatch" for content
that is not its digest's and for a plan that is not the `--expect-digest` one (`show`
reports them as input errors).

A file is read once into the model, which derives the digest, the requests and the
fields again; the content it read hashes to the digest the file stores only if the
file is exactly what the model writes back: no key missing (read as its default), none
written that the model leaves out, the stored requests and fields the derived ones.
Only a file for which that is not so is parsed again, to say what is wrong with it.
"""

from __future__ import annotations

import errno
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reconciler.codec import DocumentError, first_difference, from_json
from reconciler.errors import PlanRefused, Refusal, UsageError
from reconciler.fileio import FileProblem, read_bytes, write_atomically
from reconciler.names import split_topic_name
from reconciler.plan import derive
from reconciler.plan.model import DIGEST_PATTERN, FORMAT_VERSION, MAJOR, Plan, digest_of

REMAKE_HINT = "make a new one with `reconcile plan --out PLANFILE`"
# What the model derives in a plan: a file's are compared with the derived ones.
DERIVED = frozenset({"request", "fields"})
SPEC_SUFFIXES = (".yaml", ".yml")
MAX_LISTED = 10
MAX_PLAN_BYTES = 1 << 30  # far beyond the largest plan: past 1 GiB, not a plan
# Why a file of an older major version cannot be read as this one.
OLDER_MAJORS = {
    "1": "it has no digest and no recorded target, so it cannot be checked or applied",
    "2": "it records no owner, so its prune and its adoptions cannot be checked against "
    "the spec tree that owns each topic (docs/ownership.md)",
    "3": "its requests do not state the plan's marker, the label merge and the update "
    "mask apply sends",
}


def write_plan(plan: Plan, path: Path) -> None:
    write_atomically(path, plan.dumps(), "plan file")


def _read(path: Path) -> bytes:
    if path.is_dir():
        raise PlanRefused(Refusal.DAMAGED, f"{path}: is a directory, not a plan file")
    try:
        return read_bytes(path, MAX_PLAN_BYTES, REMAKE_HINT)
    except FileProblem as exc:  # missing, not a regular file, too large, unreadable
        if exc.errno == errno.ENOENT:
            raise PlanRefused(Refusal.DAMAGED, f"{path}: plan file not found") from None
        raise PlanRefused(
            Refusal.DAMAGED, f"{path}: cannot read the plan file: {exc.message}"
        ) from None


def _parse(path: Path, raw: bytes) -> Any:
    """The file as plain JSON data, for saying what is wrong with it."""
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise PlanRefused(Refusal.DAMAGED, f"{path}: cannot read the plan file: {exc}") from None
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
    if major in OLDER_MAJORS:
        raise PlanRefused(
            Refusal.DAMAGED,
            f"{path}: plan format_version {version} was made by an older reconcile: plan "
            f"again ({OLDER_MAJORS[major]})",
            hint=REMAKE_HINT,
        )
    if major != MAJOR:
        raise PlanRefused(
            Refusal.DAMAGED,
            f"{path}: plan format_version {version} is not supported (this reconcile "
            f"reads and writes {FORMAT_VERSION})",
            hint=REMAKE_HINT,
        )


def _minor_against_ours(version: str) -> int:
    """Above 0: a newer minor of our major than ours (it may hold keys this reconcile
    does not know); below 0: an older one (it may lack some); 0: ours, or unreadable."""
    minor = version.split(".", 1)[1] if "." in version else ""
    ours = int(FORMAT_VERSION.split(".", 1)[1])
    return int(minor) - ours if minor.isdigit() else 0


def read_plan(path: Path) -> Plan:
    """A saved plan that is whole, unedited and self-consistent, or a PlanRefused
    naming the file and what is wrong with it."""
    raw = _read(path)
    try:
        plan = from_json(Plan, raw)
    except DocumentError as exc:
        raise _not_read(path, _parse(path, raw), exc) from None
    if plan.digest != plan.given_digest:
        raise _not_as_written(path, _parse(path, raw), plan)
    found = inconsistencies(plan)
    if found:
        raise _not_consistent(path, found)
    return plan


def _not_read(path: Path, data: Any, exc: DocumentError) -> PlanRefused:
    """Why a file was not read as it was written: not a plan file, another format
    version, or the first field that is not what this version writes."""
    _check_version(path, data)
    version = data["format_version"]
    newer = _minor_against_ours(version)
    if newer > 0:
        return PlanRefused(
            Refusal.DAMAGED,
            f"{path}: plan format_version {version} was written by a newer reconcile (this "
            f"one reads {FORMAT_VERSION}): field {exc.where}: {exc.what}",
            hint="apply it with the reconcile that made it, or " + REMAKE_HINT,
        )
    if newer < 0:
        return PlanRefused(
            Refusal.DAMAGED,
            f"{path}: plan format_version {version} was made by an older reconcile: plan "
            f"again (this one reads {FORMAT_VERSION}; field {exc.where}: {exc.what})",
            hint=REMAKE_HINT,
        )
    where = f"field {exc.where}" if exc.where else "the plan"
    return PlanRefused(
        Refusal.DAMAGED,
        f"{path}: the plan file is damaged or incomplete: {where}: {exc.what}",
        hint=REMAKE_HINT,
    )


def _not_as_written(path: Path, data: Any, plan: Plan) -> PlanRefused:
    """A file whose content, as the model read it, does not hash to its stored digest:
    a key missing or written where the model leaves it out, content changed after the
    digest was written, or stored requests or fields that are not the derived ones."""
    shape = first_difference(plan.to_json(), data, DERIVED)
    if shape is not None:
        return _not_read(path, data, shape)
    actual = digest_of(data)
    if actual != data["digest"]:
        return PlanRefused(
            Refusal.DIGEST_MISMATCH,
            f"{path}: the plan's content does not match its digest {data['digest']} (the "
            f"content hashes to {actual}): the file was changed after it was made",
            hint=REMAKE_HINT,
        )
    found = [
        f"{rc.address}: {problem}"
        for rc, entry in zip(plan.resource_changes, data["resource_changes"], strict=True)
        for problem in derive.stored_problems(rc, entry)
    ]
    if found:
        return _not_consistent(path, found)
    return PlanRefused(
        Refusal.DAMAGED, f"{path}: the plan file does not read back as written", hint=REMAKE_HINT
    )


def _not_consistent(path: Path, found: list[str]) -> PlanRefused:
    listed = "\n".join(f"  - {line}" for line in found[:MAX_LISTED])
    more = f"\n  ... and {len(found) - MAX_LISTED} more" if len(found) > MAX_LISTED else ""
    return PlanRefused(
        Refusal.DAMAGED,
        f"{path}: the plan's requests are not the changes it shows; refusing the whole "
        f"plan:\n{listed}{more}",
        hint="the file was edited after it was made; " + REMAKE_HINT,
        details=found,
    )


def inconsistencies(plan: Plan) -> list[str]:
    """Every change that contradicts itself or the plan, and every address planned
    twice."""
    out: list[str] = []
    seen: set[str] = set()
    for rc in plan.resource_changes:
        if rc.address in seen:
            out.append(f"{rc.address}: planned more than once")
        if rc.action == "delete" and not plan.prune:
            out.append(f"{rc.address}: a delete in a plan made without --prune")
        if plan.projects and rc.project not in plan.projects:
            out.append(f"{rc.address}: not in the plan's projects ({', '.join(plan.projects)})")
        seen.add(rc.address)
        out += [f"{rc.address}: {problem}" for problem in derive.problems(rc)]
    # What apply reads again to re-check the fingerprints: real names only (an edited
    # key such as '' would be read as the project '' and fail at the service).
    prints = plan.fingerprints
    out += [f"fingerprints.topics: {a!r} is not a topic name (projects/P/topics/T)"
            for a in prints.topics if split_topic_name(a) is None]
    out += [f"fingerprints.{field}: {p!r} is not a project id"
            for field, keys in (("org_policy", prints.org_policy),
                                ("organizations", prints.organizations or {}),
                                ("org_policy_parts", prints.org_policy_parts or {}))
            for p in keys if not p or "/" in p or p != p.strip()]
    return out


def check_expected_digest(plan: Plan, expected: str, path: Path) -> None:
    """--expect-digest: the plan must be exactly the one whose digest was reviewed."""
    want = expected.strip().lower()
    if not re.fullmatch(DIGEST_PATTERN, want):
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
