"""`--emulator` tells the embedded local server from Google's emulator by asking:
ours answers its own GetCapabilities RPC (Google's emulator answers UNIMPLEMENTED;
tests/apply/test_google_emulator.py runs the product against that one)."""

from __future__ import annotations

import json
from typing import Any

from reconciler.backends.base import TargetOptions
from reconciler.backends.clients import insecure_channel
from reconciler.backends.connect import open_backend
from reconciler.localserver import CAPABILITIES_METHOD, SERVER_NAME


def test_our_server_is_not_taken_for_googles_emulator(local_server: Any) -> None:
    backend = open_backend(TargetOptions(emulator=local_server.address))
    try:
        assert backend.info.google_emulator is False
    finally:
        backend.close()
    assert local_server.counters.total() == 0  # the probe is neither counted nor faulted


def test_capabilities_answer_names_the_server(local_server: Any) -> None:
    channel = insecure_channel(local_server.address)
    try:
        answer = json.loads(channel.unary_unary(CAPABILITIES_METHOD)(b"", timeout=10))
    finally:
        channel.close()
    assert answer["server"] == SERVER_NAME
    assert "subscriber" in answer["capabilities"]
