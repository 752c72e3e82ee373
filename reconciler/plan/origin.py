"""Where a plan is made and where it is applied: the same place, or a clear refusal.

    anchored(options, paths) -> TargetOptions   --local's state dir fixed
                                                (reconciler/localstate.py)
    made_at(info) -> PlanTarget                 what a plan records: what the backend it
                                                was made against states it is (the one
                                                place a plan's target is made)
    apply_target(recorded, options, path) -> (TargetOptions, notes)
        what `apply PLANFILE` uses: the recorded target when no target flag is given;
        a different flag, a changed snapshot, or a snapshot where the plan used the
        Org Policy API (or the reverse) is refused naming both, before any call
        (`PlanRefused`: "retarget"; a snapshot whose content changed: "stale").
        A `--local` plan records its absolute state dir and is applied there, from
        whichever directory `apply` runs in.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from reconciler.backends.base import BackendInfo, TargetOptions
from reconciler.backends.target import EMULATOR_ENV, named_service, snapshot_sha256
from reconciler.errors import PlanRefused, Refusal, UsageError
from reconciler.localstate import local_state_dir, shown
from reconciler.plan.model import PlanTarget


def anchored(options: TargetOptions, paths: Sequence[Path]) -> TargetOptions:
    """The target options with --local's state directory anchored at the specs' repository."""
    if not options.local or options.state_dir is not None:
        return options
    return replace(options, state_dir=local_state_dir(paths))


def made_at(info: BackendInfo) -> PlanTarget:
    """Where a plan made against a backend stating `info` was made: its service and
    the org policy's source (a snapshot with the sha256 of its bytes)."""
    return PlanTarget(info.kind, info.address, info.org_policy, info.snapshot,
                      info.snapshot_sha256)


def _service(options: TargetOptions) -> PlanTarget | None:
    """The service a command line names; None when it names none."""
    named = named_service(options)
    return None if named is None else PlanTarget(*named)


def _flag(options: TargetOptions) -> str:
    if options.local:
        return "--local"
    if options.emulator:
        return f"--emulator {options.emulator}"
    return f"{EMULATOR_ENV}={os.environ.get(EMULATOR_ENV)}"


def apply_target(
    recorded: PlanTarget, options: TargetOptions, path: Path
) -> tuple[TargetOptions, list[str]]:
    """The target `apply PATH` runs against, and what to tell the user about it."""
    notes: list[str] = []
    asked = _service(options)
    if asked is None:
        notes.append(f"Applying to the plan's recorded target: {recorded.describe()}.")
    elif asked.kind != recorded.kind or (
        asked.kind == "emulator" and asked.address != recorded.address
    ):
        raise PlanRefused(
            Refusal.RETARGET,
            f"{path} was made against {recorded.describe()}, but this apply targets "
            f"{asked.describe()} ({_flag(options)}); nothing was applied",
            hint="run `reconcile apply PLANFILE` without --local/--emulator (and without "
            f"{EMULATOR_ENV}) to apply it where it was made, or make a new plan there",
        )
    local = recorded.kind == "local"
    emulator = recorded.address if recorded.kind == "emulator" else None
    state_dir = Path(os.path.abspath(recorded.address)) if local else None
    if asked is not None and local and Path(asked.address) != state_dir:
        notes.append(f"Applying to the plan's recorded local state {shown(str(state_dir))}.")
    snapshot = _snapshot(recorded, options, path, notes)
    return TargetOptions(local, emulator, snapshot, options.timeout, state_dir), notes


def _snapshot(
    recorded: PlanTarget, options: TargetOptions, path: Path, notes: list[str]
) -> Path | None:
    given = options.org_policy
    if recorded.org_policy == "api":
        if given is not None:
            raise PlanRefused(
                Refusal.RETARGET,
                f"{path} was made with the org policy read from the "
                f"{recorded.describe_policy()}, but this apply passes --org-policy {given}; "
                "nothing was applied",
                hint="apply it without --org-policy, or make a new plan with that snapshot",
            )
        return None
    snapshot = given if given is not None else Path(recorded.snapshot)
    if given is None:
        if not snapshot.exists():
            raise PlanRefused(
                Refusal.RETARGET,
                f"{path} was made with the org-policy snapshot {recorded.snapshot}, which is "
                "not there; nothing was applied",
                hint="pass the same snapshot with --org-policy FILE",
            )
        notes.append(f"Org policy: the plan's recorded snapshot {recorded.snapshot}.")
    elif not snapshot.exists():
        raise UsageError(f"{snapshot}: org-policy file not found")
    now = snapshot_sha256(snapshot)
    if now != recorded.snapshot_sha256:
        raise PlanRefused(
            Refusal.STALE,
            f"the org-policy snapshot {snapshot} changed since {path} was made (the plan "
            f"used {recorded.snapshot} with sha256:{recorded.snapshot_sha256[:12]}…, it "
            f"is now sha256:{now[:12]}…); nothing was applied",
            hint="make a new plan with the current snapshot and review it",
        )
    return snapshot
