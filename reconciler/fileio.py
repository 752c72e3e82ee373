"""Atomic file writes: a reader (or a crash) never sees half a plan, spec or snapshot."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from reconciler.errors import InputError


def write_atomically(path: Path, text: str, what: str) -> None:
    """Write `text` to `path` via a synced temporary file and a rename; `what` names
    the file in the error ("plan file", "spec file", ...)."""
    path = path.expanduser()
    directory = path.parent if str(path.parent) else Path(".")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"{path}: cannot write the {what}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write the {what}: {exc.strerror}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
