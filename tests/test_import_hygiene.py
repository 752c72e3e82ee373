"""The validate path stays light: it must not import google-cloud or deepdiff
(they cost more than the whole validation of a small tree)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_validate_does_not_import_google_cloud_or_deepdiff(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from reconciler.cli import main\n"
        "try:\n"
        "    main(['validate', sys.argv[1]])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('google', 'deepdiff', 'grpc'))\n"
        "print('HEAVY', heavy, 'EXIT', code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(ROOT / "specs")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert "HEAVY [] EXIT 0" in result.stdout, result.stdout + result.stderr
