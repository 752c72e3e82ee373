"""A large plan run leaves its records to the process's exit (reconciler/perf.py): they must
stay alive and out of the collector's sight; a small run (what tests and in-process
callers make) must free its records as usual."""

from __future__ import annotations

import gc
import weakref

from reconciler.perf import LARGE, leave_to_exit
from reconciler.plan.model import Change, Plan, ResourceChange


class Records:
    """Stands for the validation result (weak-referenceable)."""


def _plan(n: int) -> Plan:
    return Plan(resource_changes=[
        ResourceChange(f"projects/p/topics/t{i}", "p", f"t{i}", Change(["no-op"], None, None))
        for i in range(n)
    ])


def test_small_run_frees_its_records() -> None:
    frozen = gc.get_freeze_count()
    records = Records()
    ref = weakref.ref(records)
    plan = _plan(3)
    leave_to_exit(records, plan, size=len(plan.resource_changes))
    del records
    assert ref() is None
    assert gc.get_freeze_count() == frozen


def test_large_run_is_left_to_exit() -> None:
    records = Records()
    ref = weakref.ref(records)
    try:
        plan = _plan(LARGE)
        leave_to_exit(records, plan, size=len(plan.resource_changes))
        del records
        gc.collect()
        assert ref() is not None  # held, and no collection can reach it
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
