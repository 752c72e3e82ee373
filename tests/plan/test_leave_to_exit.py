"""A large plan run leaves its records to the process's exit (plan/run.py): they must
stay alive and out of the collector's sight; a small run (what tests and in-process
callers make) must free its records as usual."""

from __future__ import annotations

import gc
import weakref

from reconciler.plan.model import Change, Plan, ResourceChange
from reconciler.plan.run import LARGE, leave_to_exit


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
    leave_to_exit(records, _plan(3))
    del records
    assert ref() is None
    assert gc.get_freeze_count() == frozen


def test_large_run_is_left_to_exit() -> None:
    records = Records()
    ref = weakref.ref(records)
    try:
        leave_to_exit(records, _plan(LARGE))
        del records
        gc.collect()
        assert ref() is not None  # held, and no collection can reach it
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
