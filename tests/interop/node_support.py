"""Running the Node client (`@google-cloud/pubsub`, pinned by tests/interop/node's
package-lock.json) from a test.

Where node and npm are installed, the first test that needs the client installs it
(`npm ci` in tests/interop/node, once, under a lock that the xdist workers share), so
the README's test command runs these tests as written on a fresh clone; an install
that fails fails the test with npm's words. Only where node or npm is missing is the
test skipped, and the reason shows in pytest's summary (`-ra`)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

NODE_DIR = Path(__file__).parent / "node"
CLIENT = NODE_DIR / "node_modules" / "@google-cloud" / "pubsub"
NPM_TIMEOUT = 900  # s: a first install downloads the client and grpc-js


def node() -> str:
    """The node binary, with the client installed; skipped only without node or npm."""
    binary, npm = shutil.which("node"), shutil.which("npm")
    if binary is None or npm is None:
        missing = " and ".join(n for n, p in (("node", binary), ("npm", npm)) if p is None)
        pytest.skip(f"the Node client tests need node and npm; {missing} not on PATH")
    _install_client(npm)
    return binary


def _install_client(npm: str) -> None:
    """`npm ci` once: the lock makes the other workers wait for the first one's install
    instead of running their own into the same node_modules."""
    with open(NODE_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if CLIENT.is_dir():
            return
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT,
        )
        if done.returncode != 0 or not CLIENT.is_dir():
            pytest.fail(
                f"`npm ci` in {NODE_DIR} did not install the Node client "
                f"(exit {done.returncode}):\n{done.stdout}{done.stderr}"
            )


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
