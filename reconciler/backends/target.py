"""What a command line names as its target, and what a backend opened with it states
it is, worked out in one place (no client library imported: `plan` reads through its
read-ahead process without ever opening the target here).

    named_service(options) -> (kind, address) | None   --local, --emulator HOST:PORT or
                                                       PUBSUB_EMULATOR_HOST; None: none
                                                       named (Google Cloud)
    target_info(options) -> BackendInfo                the service, and the org-policy
                                                       source with its snapshot's sha256
    snapshot_sha256(path) -> str                       a snapshot file's sha256, or an
                                                       InputError
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from reconciler.backends.base import BackendInfo, ServiceKind, TargetOptions
from reconciler.errors import InputError, UsageError
from reconciler.fileio import FileProblem, read_bytes
from reconciler.localstate import local_state_dir
from reconciler.yamlio import MAX_FILE_BYTES

EMULATOR_ENV = "PUBSUB_EMULATOR_HOST"


def emulator_address(emulator: str | None) -> str | None:
    """--emulator, else PUBSUB_EMULATOR_HOST, else None (real Google Cloud)."""
    address = emulator or os.environ.get(EMULATOR_ENV) or None
    if address is not None and (":" not in address or not address.rsplit(":", 1)[1].isdigit()):
        source = "--emulator" if emulator else EMULATOR_ENV
        raise UsageError(f"{source} must be HOST:PORT, got {address!r}")
    return address


def named_service(options: TargetOptions) -> tuple[ServiceKind, str] | None:
    """The service the command line names: the local state (its absolute directory)
    or an emulator (HOST:PORT); None when it names none (Google Cloud)."""
    if options.local:
        return "local", str(options.state_dir or local_state_dir())
    address = emulator_address(options.emulator)
    if address is not None:
        return "emulator", address
    return None


def snapshot_sha256(path: Path) -> str:
    """The sha256 of an org-policy snapshot's bytes (hex)."""
    try:
        return hashlib.sha256(read_bytes(path, MAX_FILE_BYTES)).hexdigest()
    except FileProblem as exc:
        raise InputError(f"{path}: cannot read the org-policy snapshot: {exc.message}") from None


def target_info(options: TargetOptions) -> BackendInfo:
    """What a backend opened with `options` states it is, before it finds out more
    (backends/connect.py: Google's emulator, a running local server, the spec tree's
    snapshot standing in for an Org Policy API the emulator does not serve). A snapshot
    that cannot be read records no sha256 (nothing is planned from it)."""
    kind, address = named_service(options) or ("gcp", "")
    if options.org_policy is None:
        return BackendInfo(kind, address)
    try:
        digest = snapshot_sha256(options.org_policy)
    except InputError:
        digest = ""
    return BackendInfo(kind, address, org_policy="snapshot", snapshot=str(options.org_policy),
                       snapshot_sha256=digest)
