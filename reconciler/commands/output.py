"""The output boundary: every string a user sees is written here, and escaped on its
way (reconciler/render/escape.py), so that nothing from a file, a name or the service
can move the cursor, colour the terminal, reorder a line or fake one.

    stdout(), stderr()          a Writer for the stream as it is now (tests swap them)
    Writer.line(message)        a message (several lines allowed): every line escaped
    Writer.document(text, colour=False)
                                a rendered document (plan, diagnostics, markdown): made
                                inert once more, the renderer's own colour kept
    Writer.data(json_text)      JSON for machines: escaped the JSON way (same value)
    Writer.redraw(line), Writer.above(line), Writer.end_line()
                                a progress bar redrawn in place, lines printed above it
    colour_wanted()             colour on a terminal only, never with NO_COLOR
    stdin_is_terminal(), ask(question)
                                the confirmation prompt (the answer is read here too)
    on_failure(document)        what the CLI's boundary prints on stdout should the
                                command end in an error (apply --format json)

The libraries (spec, orgpolicy, plan, apply, render) never write: they return values
and strings, and the command flows under reconciler/commands/ hand them to a Writer.
Every write is flushed at once: a killed run has still shown what it did. A stream
that cannot be written (a full disk, a closed pipe) raises `OutputFailed`, naming the
stream: a command decides what that means for what it did (apply reports it on stderr
with the exit code of what it changed; reconciler/commands/apply.py).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import TextIO

from reconciler.errors import ReconcileError
from reconciler.render import escape

# Erase the rest of the line (after a carriage return): a bar's line is reused.
_ERASE_LINE = "\x1b[K"


class OutputFailed(ReconcileError):
    """`stream` ("stdout", "stderr") could not be written: `error` says why (ENOSPC,
    EPIPE...). `broken_pipe`: the reader went away (`reconcile plan | head`), which a
    command line ends quietly."""

    def __init__(self, stream: str, error: OSError) -> None:
        self.why = error.strerror or type(error).__name__
        super().__init__(f"cannot write to {stream}: {self.why}")
        self.stream = stream
        self.broken_pipe = isinstance(error, BrokenPipeError)


class Writer:
    """Writes to one stream; `stream` None: sys.stdout or sys.stderr as they are at
    the time of each write."""

    def __init__(self, stream: TextIO | None = None, *, err: bool = False) -> None:
        self._stream = stream
        self._err = err

    @property
    def stream(self) -> TextIO:
        if self._stream is not None:
            return self._stream
        return sys.stderr if self._err else sys.stdout

    def is_terminal(self) -> bool:
        return self.stream.isatty()

    @property
    def name(self) -> str:
        """What to call the stream in a message."""
        if self._stream is None:
            return "stderr" if self._err else "stdout"
        return str(getattr(self._stream, "name", "the output"))

    def _write(self, text: str, json: bool = False) -> None:
        stream = self.stream
        try:
            try:
                stream.write(text)
            except UnicodeEncodeError:  # raised before anything is written
                stream.write(_encodable(text, stream.encoding, json))
            stream.flush()
        except OSError as exc:
            raise OutputFailed(self.name, exc) from None

    def line(self, message: str) -> None:
        self._write(escape.lines(message) + "\n")

    def document(self, text: str, colour: bool = False) -> None:
        self._write(escape.document(text, colour))

    def data(self, json_text: str) -> None:
        self._write(escape.json_text(json_text), json=True)

    def redraw(self, line: str) -> None:
        """Replace the current line with `line` (no line break)."""
        self._write("\r" + escape.lines(line))

    def above(self, line: str) -> None:
        """Print `line` where the bar is; the caller redraws the bar after it."""
        self._write("\r" + _ERASE_LINE + escape.lines(line) + "\n")

    def end_line(self) -> None:
        self._write("\n")

    def prompt(self, question: str) -> None:
        """`question: ` with no line break (the answer is typed after it)."""
        self._write(escape.lines(question) + ": ")


def _encodable(text: str, encoding: str | None, json: bool) -> str:
    """`text` for a stream whose encoding cannot hold all of it (PYTHONIOENCODING=ascii,
    a Latin-1 terminal): each character it cannot hold as an escape, `\\uXXXX` in JSON
    (the same value when read), `\\xNN` / `\\uXXXX` elsewhere; the document is written
    whole rather than lost."""
    codec = encoding or "utf-8"
    if not json:
        return text.encode(codec, "backslashreplace").decode(codec)
    out = []
    for ch in text:
        try:
            ch.encode(codec)
            out.append(ch)
        except UnicodeEncodeError:
            units = ch.encode("utf-16-be", "surrogatepass")
            out += [f"\\u{int.from_bytes(units[i:i + 2]):04x}" for i in range(0, len(units), 2)]
    return "".join(out)


def stdout() -> Writer:
    return Writer()


def last_word(message: str) -> None:
    """`message` on stderr if stderr can take it: what a run says on its way out,
    when there is nowhere else to say that even this failed."""
    with contextlib.suppress(OutputFailed):
        stderr().line(message)


def release_stdout() -> None:
    """Flush stdout; if it cannot take what is left (a full disk, a closed pipe: said
    already), point it at the null device so that the interpreter's own last flush
    at exit prints no "Exception ignored" of its own."""
    try:
        sys.stdout.flush()
    except OSError:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
            os.close(null)
        except (OSError, ValueError):
            pass


# The document a command prints on stdout however it ends, for the CLI's boundary to
# print when it ends in an error (reconciler/cli.py): set by the command, at most one.
_FAILURE_DOCUMENT: list[Callable[[BaseException, int], None]] = []


def on_failure(document: Callable[[BaseException, int], None]) -> None:
    """Should the command end in an error, an interruption or a bug, the CLI's boundary
    calls `document(what ended it, exit code)` after the message, to print the
    document the command promised whatever happens (`apply --format json`'s outcome)."""
    _FAILURE_DOCUMENT[:] = [document]


def failure_document(failure: BaseException, code: int) -> None:
    """The boundary's part: print the document the command asked for, if any."""
    if _FAILURE_DOCUMENT:
        _FAILURE_DOCUMENT.pop()(failure, code)


def forget_failure_document() -> None:
    """A new command line: nothing asked for yet."""
    _FAILURE_DOCUMENT.clear()


def stderr() -> Writer:
    return Writer(err=True)


def colour_wanted() -> bool:
    """Colour on a terminal only, never with NO_COLOR (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def stdin_is_terminal() -> bool:
    """A person can answer a prompt."""
    return sys.stdin.isatty()


def ask(question: str) -> str:
    """Ask on stdout and read one line of answer from stdin; no answer (end of input)
    is an interruption, as Ctrl-C is."""
    stdout().prompt(question)
    answer = sys.stdin.readline()
    if not answer:
        raise KeyboardInterrupt
    return answer.rstrip("\n")
