"""File I/O with clear errors: atomic writes (a reader, or a crash, never sees half a
plan, spec or snapshot) and bounded text reads that name the encoding at fault."""

from __future__ import annotations

import os
from pathlib import Path

from reconciler.errors import InputError


def write_atomically(path: Path, text: str, what: str) -> None:
    """Write `text` to `path` via a synced temporary file and a rename; `what` names
    the file in the error ("plan file", "spec file", ...)."""
    import tempfile  # only writers need it (~3 ms of a cold validate otherwise)

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


class FileProblem(Exception):
    """A file cannot be read as text; `code` is the diagnostic code, line/col 1-based."""

    def __init__(self, code: str, message: str, line: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.line = line
        self.col = col


_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def _wide_encoding(raw: bytes) -> str | None:
    """UTF-16/32 by byte-order mark, or by the NUL pattern of mostly-ASCII text."""
    for bom, name in _BOMS:
        if raw.startswith(bom):
            return name
    head = raw[: 4096 - 4096 % 4]
    if len(head) < 8:
        return None
    lanes4 = [head[i::4].count(0) / len(head[i::4]) for i in range(4)]
    if sorted(lanes4) == [0, 1, 1, 1] or (min(lanes4) == 0 and sum(lanes4) >= 2.9):
        return "UTF-32"
    lanes2 = [head[i::2].count(0) / len(head[i::2]) for i in range(2)]
    if min(lanes2) == 0 and max(lanes2) >= 0.9:
        return "UTF-16"
    return None


def read_text(path: Path, max_bytes: int) -> str:
    """A text file within `max_bytes`, decoded as UTF-8 (a BOM is allowed); anything
    else is a FileProblem that says what the file is and what to do."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise FileProblem("file-unreadable", f"cannot read the file: {exc.strerror}") from exc
    if size > max_bytes:
        raise FileProblem(
            "file-too-large",
            f"the file is {size:,} bytes, over the {max_bytes:,}-byte limit; "
            "split it into several files",
        )
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FileProblem("file-unreadable", f"cannot read the file: {exc.strerror}") from exc
    wide = _wide_encoding(raw)
    if wide:
        raise FileProblem(
            "file-encoding",
            f"the file is encoded as {wide}, not UTF-8; save it as UTF-8",
        )
    if b"\x00" in raw[:8192]:
        raise FileProblem(
            "file-binary", "the file is binary, not YAML text; remove it from the spec tree"
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise FileProblem(
            "file-encoding",
            f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); save it as UTF-8",
            line,
            col,
        ) from exc
