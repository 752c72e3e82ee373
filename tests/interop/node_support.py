"""Running the Node client (`@google-cloud/pubsub`, installed by `.ci/run` with
`npm ci` in tests/interop/node) from a test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

NODE_DIR = Path(__file__).parent / "node"


def node() -> str:
    """The node binary; the test is skipped, the reason printed, only where node or
    npm is not installed, and fails when the client is not installed."""
    binary, npm = shutil.which("node"), shutil.which("npm")
    if binary is None or npm is None:
        reason = "node and npm are needed for the Node client test (not installed)"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    if not (NODE_DIR / "node_modules" / "@google-cloud" / "pubsub").is_dir():
        pytest.fail(f"the Node client is not installed: run `npm ci` in {NODE_DIR}")
    return binary


def run_script(script: str, args: list[str], env: dict[str, str]) -> Any:
    """Run `script` (in tests/interop/node) and decode the JSON line it prints last."""
    done = subprocess.run(
        [node(), str(NODE_DIR / script), *args],
        env={**os.environ, "METADATA_SERVER_DETECTION": "none", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
