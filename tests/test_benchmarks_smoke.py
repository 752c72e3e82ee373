"""Every script in benchmarks/ runs: its `--smoke` mode (seconds, tiny sizes, no figures
kept) as a child process of this venv's python, so that a change to an interface a
benchmark uses (the backend's `Reads` protocol, a module moved or renamed, a CLI flag)
fails here instead of on the next person who measures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))


def test_every_benchmark_is_found() -> None:
    # The glob below is what this file checks: an empty or moved folder would pass silently.
    assert {"plan_scale.py", "scale.py", "before_after.py"} <= set(SCRIPTS)


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_smoke_mode_runs(script: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--smoke"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, (
        f"benchmarks/{script} --smoke exited {done.returncode}:\n{done.stderr[-3000:]}"
    )
    assert done.stdout.strip(), f"benchmarks/{script} --smoke printed nothing"
