"""The dependencies' wheels, gathered once per test session, for the tests that
install this project into a fresh environment (pre-commit's hook environment, the
packaging test's virtualenv).

Each of those installs resolves about 35 distributions against the package index;
from a local folder of the same wheels pip installs the same files without asking the
index, which is most of such a test's time on a slow network. The install itself is
untouched: the same pip, the same requirements, the project built from its source.
pip is only told not to byte-compile what it installs (PIP_NO_COMPILE): the .pyc
files are a cache Python makes itself on import, and compiling all ~35 distributions
is about half of each install's CPU time, for modules these tests never import.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DONE = "complete"


def gather(shared: Path) -> dict[str, str] | None:
    """pip's settings that install from `shared/wheels` only, gathering the wheels
    the first time (one process at a time: pytest-xdist's workers share `shared`).
    None when they could not be gathered: the caller's install then asks the index,
    as it did before (byte-compiling, as pip does by default)."""
    folder = shared / "wheels"
    shared.mkdir(parents=True, exist_ok=True)
    with open(shared / "wheels.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / DONE).exists():
            done = subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "-q", "-w", str(folder),
                 str(ROOT), "setuptools>=68", "wheel"],
                capture_output=True, text=True, timeout=900, check=False,
            )
            if done.returncode != 0:
                return None
            for own in folder.glob("pubsub_reconcile-*.whl"):
                own.unlink()  # the project is always built from the tree under test
            (folder / DONE).write_text("")
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder), "PIP_NO_COMPILE": "1"}
