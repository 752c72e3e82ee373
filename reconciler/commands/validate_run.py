"""`reconcile validate` without click: the option parser for the common command lines
and the command body, so that the most frequent command (pre-commit, CI) starts
without importing click. Anything this parser does not know (help, a typo, a missing
value) goes to the click command instead, which owns the messages for those."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, TextIO

from reconciler.errors import EXIT_ERROR, EXIT_OK
from reconciler.gcpause import without_cyclic_gc


class ValidateOptions(NamedTuple):
    paths: tuple[Path, ...]
    org_policy: Path | None = None
    require_org_policy: bool = False
    fmt: str = "text"
    strict_groups: bool = False


_FLAGS = {"--require-org-policy": "require_org_policy", "--strict-groups": "strict_groups"}
_VALUED = {"--org-policy": "org_policy", "--format": "fmt"}
_FORMATS = ("text", "json")


def parse(args: Sequence[str]) -> ValidateOptions | None:
    """The options of `validate ARGS...` as click would read them, or None when click
    must handle the command line (anything unusual)."""
    if not args or args[0] != "validate":
        return None
    values: dict[str, object] = {}
    paths: list[Path] = []
    rest = iter(args[1:])
    only_paths = False
    for token in rest:
        if only_paths or not token.startswith("-"):
            if token in ("", "-"):
                return None
            paths.append(Path(token))
        elif token == "--":
            only_paths = True
        elif token in _FLAGS:
            values[_FLAGS[token]] = True
        else:
            name, eq, value = token.partition("=")
            if name not in _VALUED:
                return None
            if not eq:
                found = next(rest, None)
                if found is None:
                    return None
                value = found
            if name == "--format" and value not in _FORMATS:
                return None
            values[_VALUED[name]] = Path(value) if name == "--org-policy" else value
    return ValidateOptions(tuple(paths), **values)  # type: ignore[arg-type]


def run(options: ValidateOptions) -> int:
    """Check the specs under PATH... (default: specs/) and report every problem.
    The cyclic collector is paused from the first import on (see gcpause)."""
    with without_cyclic_gc():
        return _run(options)


def _run(options: ValidateOptions) -> int:
    from reconciler.render import diagnostics as report
    from reconciler.spec.orgrules import promote_inferred
    from reconciler.spec.validate import DEFAULT_PATH, validate_paths

    result = validate_paths(
        list(options.paths) or [DEFAULT_PATH],
        options.org_policy,
        missing_snapshot="require" if options.require_org_policy else "warn",
    )
    diagnostics = result.diagnostics.sorted()
    if options.strict_groups:
        diagnostics = promote_inferred(diagnostics)
    if options.fmt == "json":
        _write(sys.stdout, report.as_json(diagnostics))
    else:
        _write(sys.stdout, report.text(diagnostics))
        _write(sys.stderr, report.summary(diagnostics, result.files) + "\n")
    return EXIT_ERROR if any(d.is_error for d in diagnostics) else EXIT_OK


def _write(stream: TextIO, text: str) -> None:
    stream.write(text)
    stream.flush()
