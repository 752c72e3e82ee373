"""File I/O with clear errors: atomic writes (a reader, or a crash, never sees half a
plan, spec or snapshot), and bounded reads of regular files only (`read_bytes`, the
one reader of every file a user names) with text decoding that names the encoding at
fault."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from reconciler.errors import InputError


def write_atomically(path: Path, text: str, what: str, *, umask: bool = False) -> None:
    """Write `text` to `path` via a synced temporary file and a rename; `what` names
    the file in the error ("plan file", "spec file", ...). The temporary file is
    private (0600); `umask`: the file gets the mode any file the user creates gets
    (0666 less their umask), for files meant to be shared, such as specs."""
    import tempfile  # only writers need it: a validate, which only reads, skips its import

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
            if umask:
                os.fchmod(fh.fileno(), 0o666 & ~_current_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write the {what}: {exc.strerror}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _current_umask() -> int:
    """The process's umask: Linux states it in /proc; elsewhere it can only be read by
    setting it, at once set back (a command writes its files from one thread)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


class FileProblem(Exception):
    """A file cannot be read (as text); `code` is the diagnostic code, line/col 1-based
    (0: the problem is the whole file's, e.g. it is a FIFO)."""

    def __init__(
        self, code: str, message: str, line: int = 1, col: int = 1, errno: int | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.line = line
        self.col = col
        self.errno = errno  # the OSError's, for file-unreadable

    def where(self, path: Path | str) -> str:
        """`path:line:col`, or `path` for a problem of the whole file (line 0)."""
        return f"{path}:{self.line}:{self.col}" if self.line else str(path)


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


# What a path that is not a regular file is, for the message (stat's file types).
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)
# O_NONBLOCK: should a FIFO get past the type check (swapped in after it), opening it
# returns at once instead of waiting for a writer; it changes nothing for a regular file.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_CHUNK = 1 << 20
_FIRST_UNSIZED = 1 << 16  # st_size 0 (/proc files): a page-sized read, not a byte


def _not_regular(path: Path, mode: int) -> FileProblem | None:
    """None for a regular file; otherwise the problem, naming what the path is (and,
    for a symlink, where it leads)."""
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "of an unknown kind")
    what = f"this path is {kind}"
    if os.path.islink(path):
        what = f"this path is a symlink to {os.path.realpath(path)}, {kind}"
    return FileProblem(
        "file-not-regular",
        f"{what}, not a regular file; reconcile reads only regular files: replace it "
        "with one, or remove it",
        0,
        0,
    )


def _too_large(max_bytes: int, size: int, advice: str, grew: bool = False) -> FileProblem:
    what = (
        f"the file holds more than {max_bytes:,} bytes (its size said {size:,}: it grew "
        "while being read, or is not an ordinary file), over the limit"
        if grew
        else f"the file is {size:,} bytes, over the {max_bytes:,}-byte limit"
    )
    return FileProblem("file-too-large", f"{what}; {advice}")


def read_bytes(
    path: Path, max_bytes: int, too_large: str = "split it into several files"
) -> bytes:
    """The content of a regular file of at most `max_bytes`, or a FileProblem
    (`too_large`: what to do about a larger one).

    The one reader for every file named by a user (specs, org-policy snapshots, plan
    files, latency samples, credential files): FIFOs, sockets and devices (directly or
    through a symlink) are refused before they are opened (a FIFO would block `open`
    forever, /dev/zero would never end), and the bound holds for the bytes actually
    read, whatever `st_size` claims (0 for /dev/zero and /proc files; a file may grow
    while it is read)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise _unreadable(exc) from exc
    problem = _not_regular(path, mode)
    if problem is not None:
        raise problem
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise _unreadable(exc) from exc
    try:
        info = os.fstat(fd)  # what was opened, not what was looked at before
        problem = _not_regular(path, info.st_mode)
        if problem is not None:
            raise problem
        if info.st_size > max_bytes:
            raise _too_large(max_bytes, info.st_size, too_large)
        # The whole file in one read when st_size is honest (then one empty read at
        # the end); past the bound, the read stops within one more chunk.
        chunks: list[bytes] = []
        total = 0
        want = info.st_size + 1 if info.st_size else _FIRST_UNSIZED
        while True:
            chunk = os.read(fd, want)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise _too_large(max_bytes, info.st_size, too_large, grew=True)
            want = _CHUNK
    except OSError as exc:
        raise _unreadable(exc) from exc
    finally:
        os.close(fd)
    return b"".join(chunks)  # one chunk: that very object, no copy


def _unreadable(exc: OSError) -> FileProblem:
    return FileProblem("file-unreadable", f"cannot read the file: {exc.strerror}", errno=exc.errno)


def read_text(path: Path, max_bytes: int) -> str:
    """A text file within `max_bytes`, decoded as UTF-8 (a BOM is allowed); anything
    else is a FileProblem that says what the file is and what to do."""
    raw = read_bytes(path, max_bytes)
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
