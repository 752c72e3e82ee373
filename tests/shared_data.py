"""The shared reference data (the SARIF schema, cel-spec's conformance tests), which
is never copied into the repository: `../shared/data` beside the checkout, or beside
the main checkout of a git worktree, or $RECONCILE_SHARED/data."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def shared_data(name: str) -> Path:
    """The path of `name` under the shared data; the test fails, saying where it
    looked, when it is in none of the places."""
    candidates = []
    if "RECONCILE_SHARED" in os.environ:
        candidates.append(Path(os.environ["RECONCILE_SHARED"]))
    candidates.append(REPO.parent / "shared")
    common = subprocess.run(
        ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
        cwd=REPO, capture_output=True, text=True, check=False,
    ).stdout.strip()
    if common:
        candidates.append(Path(common).parent.parent / "shared")
    for root in candidates:
        if (root / "data" / name).exists():
            return root / "data" / name
    raise AssertionError(
        f"{name} is not in the shared data (looked in "
        f"{', '.join(str(c / 'data') for c in candidates)}); set RECONCILE_SHARED"
    )
