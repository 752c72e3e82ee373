"""A local server in its own process as it runs where the optional JavaScript engine
(the `udf` extra) is not installed: what it refuses, and says, without one."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

NO_ENGINE_SERVER = """
import sys
sys.modules["quickjs"] = None  # as if the optional engine were not installed
from reconciler.localserver import LocalServer
with LocalServer() as server:
    print(server.address, flush=True)
    sys.stdin.read()
"""


@contextmanager
def no_engine_server() -> Iterator[str]:
    """The address of a fresh local server that cannot import the engine; it stops
    when its stdin closes, at the end of the block."""
    proc = subprocess.Popen(
        [sys.executable, "-c", NO_ENGINE_SERVER], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)
