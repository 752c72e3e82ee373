"""The CEL library, loaded at the first compile (validate loads it only when a
snapshot holds custom constraints), and its compile errors as reconcile words them:
line and column inside the condition's text, and whether the library lacks what the
text uses (`ConditionError.unsupported`)."""

from __future__ import annotations

import re
import threading
from typing import Any


class ConditionError(ValueError):
    """The condition does not compile: `line` and `column` (1-based) are inside the
    condition's text, for the caller to place in its file.

    `unsupported`: what stops it is something this library's CEL environment does not
    have (a function, a macro or a syntax: `lowerAscii()`, `cel.bind()`, `.?`), which
    the service's environment may have: the service's documentation does not list
    the functions its conditions may use, and Google's CEL libraries offer optional
    extensions (cel-spec's `*_ext` conformance files). Otherwise the text is not a
    valid CEL expression in any environment (a syntax error, an argument of the wrong
    type, an unknown variable), which the service refuses too."""

    def __init__(
        self, message: str, line: int, column: int, *, unsupported: bool = False,
        placed: bool = True,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.unsupported = unsupported
        self.placed = placed  # False: the library names no place (line and column 1)

    @property
    def place(self) -> str:
        """Where in the condition, as a message says it."""
        if not self.placed:
            return "the condition as a whole"
        return f"line {self.line}, column {self.column} of the condition"


# --------------------------------------------------------------------------- library

_lock = threading.Lock()
_envs: dict[tuple[tuple[str, str], ...], Any] = {}


_library: Any = None


def library() -> Any:
    """The cel-expr-python module, imported at the first use."""
    global _library
    if _library is None:
        from cel_expr_python import cel

        _library = cel
    return _library


def _env(variables: tuple[tuple[str, str], ...]) -> Any:
    """A CEL environment declaring `resource` (dyn) and the typed stand-ins."""
    env = _envs.get(variables)
    if env is None:
        cel = library()
        kinds = {"dyn": cel.Type.DYN, "duration": cel.Type.DURATION,
                 "timestamp": cel.Type.TIMESTAMP}
        declared = {"resource": cel.Type.DYN}
        declared.update({name: kinds[kind] for name, kind in variables})
        env = cel.NewEnv(variables=declared)
        _envs[variables] = env
    return env


_POSITION = re.compile(r"<input>:(\d+):(\d+): (.*)")


def compile_text(text: str, variables: tuple[tuple[str, str], ...] = ()) -> Any:
    """The library's compiled expression of `text`, with `resource` and the typed
    `variables` declared; ConditionError when it does not compile."""
    with _lock:
        env = _env(variables)
        try:
            return env.compile(text)
        except RuntimeError as exc:
            raise condition_error(str(exc), text) from None


# The library's own nesting limits (32 levels: "Exceeded max recursion depth of 32 when
# parsing", "Expression recursion limit exceeded"). CEL's conformance tests ask for a
# minimum (cel-spec's parse.textproto: nested calls, lists, maps and messages "up to 12
# levels deep"), not a maximum, and nothing public gives the service's, so a deeper
# condition is one this library cannot judge, not one the service refuses.
_LIBRARY_LIMIT = re.compile(r"recursion (?:depth|limit)", re.IGNORECASE)


def condition_error(error: str, source: str) -> ConditionError:
    if _LIBRARY_LIMIT.search(error):
        message = re.sub(r"^(?:ERROR: )?<input>:-?\d+:-?\d+: ", "", clean_message(error))
        message = message.removesuffix(" [CANCELLED]").removeprefix("CANCELLED: ")
        return ConditionError(
            f"{message} (a nesting limit of reconcile's CEL library)", 1, 1,
            unsupported=True, placed=False,
        )
    match = _POSITION.search(error)
    if match is None:
        return ConditionError(clean_message(error), 1, 1, placed=False)
    line, column, message = match.groups()
    message = message.strip().removesuffix(" [INVALID_ARGUMENT]").replace(
        " (in container '')", ""
    )
    return ConditionError(
        message, int(line), int(column),
        unsupported=_unsupported(message, source, int(line), int(column)),
    )


_UNDECLARED = re.compile(r"undeclared reference to '([^']*)'")
_CHAIN = re.compile(r"\s*(?:\.\s*[A-Za-z_][A-Za-z0-9_]*\s*)*")


def _unsupported(message: str, source: str, line: int, column: int) -> bool:
    """Does the error come from something the library's environment lacks (see
    ConditionError)? A syntax its parser does not enable; an undeclared name that is
    called (`x.lowerAscii()`, `math.greatest(...)`: a function) or that is the first
    argument of a call (`cel.bind(x, ...)`, `all(k, v, ...)`: a macro's variable).
    Any other undeclared name is an unknown variable (`reource.name`)."""
    if message.startswith("unsupported syntax"):
        return True
    found = _UNDECLARED.match(message)
    if found is None:
        return False
    lines = source.split("\n")
    offset = sum(len(text) + 1 for text in lines[: line - 1]) + column - 1
    name = found.group(1)
    rest = source[offset:]
    if rest.startswith("("):
        return True  # the position of a call is its parenthesis
    if not rest.startswith(name):
        return False
    after = rest[len(name):]
    after = after[_CHAIN.match(after).end():]  # type: ignore[union-attr]  # always matches
    if after.startswith("("):
        return True
    before = source[:offset].rstrip()
    return "." not in name and before.endswith("(") and after.lstrip().startswith(",")


def clean_message(message: str) -> str:
    """The library's message without its status prefix and caret lines."""
    first = message.strip().splitlines()[0] if message.strip() else "error"
    first = re.sub(r"^(INVALID_ARGUMENT|UNKNOWN|NOT_FOUND|INTERNAL|ERROR): ", "", first)
    return first.removesuffix(" [INVALID_ARGUMENT]").strip()


