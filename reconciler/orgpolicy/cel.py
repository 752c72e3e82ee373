"""Custom-constraint conditions: compiled once, evaluated on a resource given as a plain
dict in its REST JSON shape, with a verdict that is true, false or "could not
evaluate" (with the reason), never a silent pass. `validate`, `plan` and the local
server all judge a resource here (`judge`; validate, judging many topics, with
`ConstraintSet`, whose verdicts are `judge`'s), so they cannot disagree.

    compile_condition(text) -> Condition          ConditionError(message, line, column)
                                                  (`unsupported`: the library lacks what
                                                  the text uses, see below)
    condition.reads                               the resource.* field paths it reads
    condition.notes                               undocumented representations it relies on
    condition.evaluate(resource) -> Outcome       value True / False / None (+ reason, missing)
    evaluate_all(conditions, resource) -> [Outcome]   several at once, one library call
    condition_for(constraint) -> Condition        compiled once per condition text
    judge(constraint, resource, method, before=None) -> Judgement | None
    ConstraintSet(constraints).objections(resource, method, before=None) -> [Judgement]

The CEL library (cel-expr-python, Google's wrapper of cel-cpp; the choice and its
measurements: docs/org-policy.md, benchmarks/README.md) is imported at the first
compile, so that validate loads it only when a snapshot holds custom constraints.

Representation. The resource is a map in the REST JSON shape (`name`, `labels`,
`messageStoragePolicy.allowedPersistenceRegions`, ...). A field the resource does not
set is absent: reading it is CEL's "no such key" error, which `Outcome.missing` names
(`has()` guards against it, as the service's documentation shows). How the service
presents Duration and Timestamp fields inside conditions is not documented; a
condition that reads one is evaluated both with the REST JSON string and with a CEL
duration / timestamp. Where only one reading type-checks, its answer is taken and
`Condition.notes` says so; where both answer differently, the outcome is "could not
evaluate", naming both. `resource.labels` is evaluated as the topic's labels map,
though the service's table of fields does not list it (also a note).

Cost. A call of the library costs more than most conditions' own work, so
evaluations are remembered by the values a condition reads, and the conditions a
resource still needs are evaluated together, as one CEL list of them in one call
(once that set of conditions has been needed often enough to pay for compiling it).
The list's elements are the conditions' own texts, so an element that is true or
false is what the condition alone gives; anything else in the list (an error in any
element makes the whole list one, a value that is not a boolean) sends the
conditions back to one call each, which words the reason exactly as `evaluate` does.
"""

from __future__ import annotations

import datetime as dt
import marshal
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Any

from reconciler.orgpolicy.custom import TOPIC, CustomConstraint

# Fields of a Pub/Sub topic whose proto type is Duration or Timestamp (REST JSON
# gives them as strings: "604800s", "2026-01-01T00:00:00Z").
DURATION_FIELDS = ("messageRetentionDuration",)
TIMESTAMP_FIELDS = ("ingestionDataSourceSettings.cloudStorage.minimumObjectCreateTime",)
# Fields a condition may read though the service's documentation does not say how.
UNDOCUMENTED = {
    "labels": "resource.labels is read as the topic's labels map; the service's table of "
    "fields for conditions does not list it",
}
_MEMO_LIMIT = 8192
_BATCH_LIMIT = 256  # compiled lists of conditions kept


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
        self, message: str, line: int, column: int, *, unsupported: bool = False
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.unsupported = unsupported


@dataclass(frozen=True)
class Outcome:
    """The condition's value on one resource: True, False, or None when it could not
    be evaluated (`reason`; `missing` names the resource.* paths the resource lacks
    when that was why)."""

    value: bool | None
    reason: str = ""
    missing: tuple[str, ...] = ()
    # The Duration/Timestamp fields whose undocumented presentation decided it.
    presentation: tuple[str, ...] = ()


_TRUE = Outcome(True)
_FALSE = Outcome(False)


# --------------------------------------------------------------------------- library

_lock = threading.Lock()
_envs: dict[tuple[tuple[str, str], ...], Any] = {}


_library: Any = None


def _cel() -> Any:
    global _library
    if _library is None:
        from cel_expr_python import cel

        _library = cel
    return _library


def _env(variables: tuple[tuple[str, str], ...]) -> Any:
    """A CEL environment declaring `resource` (dyn) and the typed stand-ins."""
    env = _envs.get(variables)
    if env is None:
        cel = _cel()
        kinds = {"dyn": cel.Type.DYN, "duration": cel.Type.DURATION,
                 "timestamp": cel.Type.TIMESTAMP}
        declared = {"resource": cel.Type.DYN}
        declared.update({name: kinds[kind] for name, kind in variables})
        env = cel.NewEnv(variables=declared)
        _envs[variables] = env
    return env


_POSITION = re.compile(r"<input>:(\d+):(\d+): (.*)")


def _compile(text: str, variables: tuple[tuple[str, str], ...] = ()) -> Any:
    with _lock:
        env = _env(variables)
        try:
            return env.compile(text)
        except RuntimeError as exc:
            raise _condition_error(str(exc), text) from None


def _condition_error(error: str, source: str) -> ConditionError:
    match = _POSITION.search(error)
    if match is None:
        return ConditionError(_clean(error), 1, 1)
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


def _clean(message: str) -> str:
    """The library's message without its status prefix and caret lines."""
    first = message.strip().splitlines()[0] if message.strip() else "error"
    first = re.sub(r"^(INVALID_ARGUMENT|UNKNOWN|NOT_FOUND|INTERNAL|ERROR): ", "", first)
    return first.removesuffix(" [INVALID_ARGUMENT]").strip()


# ---------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Token:
    kind: str  # ident, string, punct, other
    text: str
    start: int
    end: int


_TOKEN = re.compile(
    r"""(?P<space>\s+|//[^\n]*)
      | (?P<string>(?:[rR][bB]?|[bB][rR]?)?(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"
                   |'(?:\\.|[^\\'\n])*'|"(?:\\.|[^\\"\n])*"))
      | (?P<ident>[A-Za-z_][A-Za-z0-9_]*|`[^`]*`)
      | (?P<number>\d[\w.]*)
      | (?P<punct>[.()\[\]{},?:]|&&|\|\||[=!<>]=?|[-+*/%])
    """,
    re.VERBOSE | re.DOTALL,
)


def _tokens(text: str) -> list[_Token]:
    out = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:  # compiled text always scans; anything else is skipped
            pos += 1
            continue
        kind = match.lastgroup or "other"
        if kind != "space":
            out.append(_Token(kind, match.group(), match.start(), match.end()))
        pos = match.end()
    return out


@dataclass(frozen=True)
class _Chain:
    path: str  # the field path after `resource.` ("" for the resource itself)
    start: int
    end: int
    in_has: bool  # the whole argument of has()


def _field(token: _Token) -> str:
    return token.text[1:-1] if token.text.startswith("`") else token.text


def _chains(tokens: list[_Token]) -> Iterator[_Chain]:
    """Every `resource.a.b...` selection: up to a method call, an index or the end."""
    for i, tok in enumerate(tokens):
        if tok.kind != "ident" or tok.text != "resource":
            continue
        if i and tokens[i - 1].text == ".":
            continue  # a field named resource, not the variable
        path: list[str] = []
        j = i + 1
        while (
            j + 1 < len(tokens)
            and tokens[j].text == "."
            and tokens[j + 1].kind == "ident"
            and not (j + 2 < len(tokens) and tokens[j + 2].text == "(")
        ):
            path.append(_field(tokens[j + 1]))
            j += 2
        end = tokens[j - 1].end
        in_has = (
            i >= 2
            and tokens[i - 1].text == "("
            and tokens[i - 2].text == "has"
            and j < len(tokens)
            and tokens[j].text == ")"
        )
        yield _Chain(".".join(path), tok.start, end, in_has)


# ------------------------------------------------------------------------- conversion

_DURATION = re.compile(r"(-?)(\d+)(?:\.(\d{1,9}))?s")


def _duration(text: str) -> dt.timedelta | None:
    match = _DURATION.fullmatch(text)
    if match is None:
        return None
    sign, seconds, fraction = match.groups()
    micros = int((fraction or "0").ljust(9, "0")[:6])
    value = dt.timedelta(seconds=int(seconds), microseconds=micros)
    return -value if sign else value


def _timestamp(text: str) -> dt.datetime | None:
    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo is not None else None


_TYPED = {**{p: ("duration", _duration) for p in DURATION_FIELDS},
          **{p: ("timestamp", _timestamp) for p in TIMESTAMP_FIELDS}}
_ABSENT = object()


@lru_cache(maxsize=1024)
def _parts(path: str) -> tuple[str, ...]:
    return tuple(path.split(".")) if path else ()


def _lookup(resource: Mapping[str, Any], path: str) -> Any:
    value: Any = resource
    for part in _parts(path):
        if type(value) is dict:  # the common case, without the ABC check
            value = value.get(part, _ABSENT)
            if value is _ABSENT:
                return _ABSENT
        elif isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return _ABSENT
    return value


_SCALARS = frozenset({str, bool, int, float, type(None)})


def _freeze(value: Any) -> Any:
    """A hashable stand-in for a JSON value (the memo's key). Plain dicts of strings,
    the common case (labels), take the short way."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        if all(type(v) is str for v in value.values()):
            return tuple(sorted(value.items()))
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if kind is list or kind is tuple:
        return ("[", *map(_freeze, value))
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("[", *map(_freeze, value))
    return value


def freeze_fields(
    resource: Mapping[str, Any], paths: tuple[str, ...],
    keys: dict[tuple[str, ...], Any] | None = None,
) -> Any:
    """A hashable key for the values of `paths` in `resource` (a memo's key): equal
    keys mean equal values. It is the values' `marshal` encoding (version 0: no
    references and no interning marks, so it depends on the values alone; maps in
    their order: the same map in another order is only a miss), or, for a value
    marshal does not take, the values frozen. `keys` caches it per `paths` for the
    next caller on the same resource."""
    if keys is not None:
        known = keys.get(paths)
        if known is not None:
            return known
    values: list[Any] = []
    for path in paths:
        value = _lookup(resource, path) if path else resource
        values.append(() if value is _ABSENT else (value,))  # absent is not null
    try:
        key: Any = marshal.dumps(tuple(values), 0)
    except ValueError:
        key = tuple(_freeze(v) for v in values)
    if keys is not None:
        keys[paths] = key
    return key


def project(resource: Mapping[str, Any], paths: tuple[str, ...]) -> dict[str, Any]:
    """Only what the condition reads (each path's value whole), so the library
    converts the least."""
    if "" in paths:
        return dict(resource)
    out: dict[str, Any] = {}
    for path in paths:
        source: Any = resource
        target = out
        parts = path.split(".")
        for k, part in enumerate(parts):
            if not isinstance(source, Mapping) or part not in source:
                break
            source = source[part]
            if k == len(parts) - 1 or not isinstance(source, Mapping):
                target[part] = source
                break
            nested = target.get(part)
            if not isinstance(nested, dict):
                nested = target[part] = {}
            target = nested
    return out


# -------------------------------------------------------------------------- condition


@dataclass
class _Program:
    """One compiled reading of the condition (the REST JSON one, or the typed one
    with Duration/Timestamp fields as stand-in variables)."""

    expression: Any
    stand_ins: tuple[tuple[str, str], ...] = ()  # (variable, field path)


def outermost(reads: Iterable[str]) -> tuple[str, ...]:
    """The reads no other read encloses (`labels` and `labels.team`: `labels`), sorted:
    their values decide all the others'."""
    reads = set(reads)
    if "" in reads:
        return ("",)
    return tuple(sorted(
        r for r in reads if not any(r.startswith(o + ".") for o in reads if o != r)
    ))


@dataclass(eq=False)
class Condition:
    """A compiled condition. Thread-safe; evaluations are remembered by the values of
    the fields the condition reads (many topics share them), unless it is
    `per_resource`."""

    text: str
    reads: tuple[str, ...]
    notes: tuple[str, ...]
    _json: _Program
    _typed: _Program | None
    _memo: dict[Any, Outcome] = field(default_factory=dict)
    # The condition reads the resource's name (or the whole resource): the name tells
    # resources apart, so each has a value of its own and remembering the outcome
    # would never serve another.
    per_resource: bool = field(init=False)

    def __post_init__(self) -> None:
        self.per_resource = any(r == "" or r == "name" for r in self.reads)

    def key(
        self, resource: Mapping[str, Any], keys: dict[tuple[str, ...], Any] | None = None
    ) -> Any:
        """What the outcome on `resource` depends on: the values of the fields the
        condition reads (`freeze_fields`). `keys`: a cache of the resource's keys,
        shared by the conditions judged on the same resource (conditions reading the
        same fields share one)."""
        return freeze_fields(resource, self.reads, keys)

    def evaluate(
        self, resource: Mapping[str, Any], keys: dict[tuple[str, ...], Any] | None = None
    ) -> Outcome:
        """The condition on `resource`; `keys`: see `key`."""
        return evaluate_all((self,), resource, keys)[0]

    def _evaluate(self, resource: Mapping[str, Any]) -> Outcome:
        data = project(resource, self.reads)
        as_json = _run(self._json, data, resource, self.reads)
        if self._typed is None:
            return as_json
        as_typed = _run(self._typed, data, resource, self.reads)
        if as_json.value == as_typed.value and as_json.value is not None:
            return as_json
        if as_typed.value is not None and _type_error(as_json):
            return as_typed
        if as_json.value is not None and _type_error(as_typed):
            return as_json
        if as_json.value is not None and as_typed.value is not None:
            paths = tuple(p for _, p in self._typed.stand_ins)
            fields = ", ".join(f"resource.{p}" for p in paths)
            return Outcome(
                None,
                f"the answer depends on how the service presents {fields}, which is not "
                f"documented: {str(as_json.value).lower()} with the REST JSON string, "
                f"{str(as_typed.value).lower()} with a CEL duration/timestamp",
                presentation=paths,
            )
        return as_json if as_json.value is None else as_typed


_UNTYPED = "no matching overload: the reading with a CEL duration/timestamp does not type-check"


def _type_error(outcome: Outcome) -> bool:
    """The reading does not fit the condition's types (the other reading may)."""
    return outcome.value is None and not outcome.missing and "overload" in outcome.reason


_NO_KEY = re.compile(r'Key not found in map : "([^"]*)"')
_NO_VALUE = re.compile(r'No value with name "([^"]*)"')


def _run(
    program: _Program, data: dict[str, Any], resource: Mapping[str, Any], reads: tuple[str, ...]
) -> Outcome:
    if program.expression is None:
        return Outcome(None, _UNTYPED)
    variables: dict[str, Any] = {"resource": data}
    for variable, path in program.stand_ins:
        raw = _lookup(resource, path)
        if raw is _ABSENT:
            continue
        converted = _TYPED[path][1](raw) if isinstance(raw, str) else None
        if converted is None:
            return Outcome(None, f"resource.{path} is {raw!r}, not a valid {_TYPED[path][0]}")
        variables[variable] = converted
    try:
        value = program.expression.eval(data=variables)
    except RuntimeError as exc:
        return Outcome(None, _clean(str(exc)))
    cel = _cel()
    kind = value.type()
    if kind == cel.Type.ERROR:
        message = str(value.value())
        stand_ins = dict(program.stand_ins)
        if (m := _NO_VALUE.search(message)) and m.group(1) in stand_ins:
            path = stand_ins[m.group(1)]
            return Outcome(None, f"the resource does not set resource.{path}",
                           (f"resource.{path}",))
        if m := _NO_KEY.search(message):
            missing = _missing(resource, reads, m.group(1))
            where = " or ".join(missing) if missing else repr(m.group(1))
            return Outcome(None, f"the resource does not set {where}", missing)
        return Outcome(None, _clean(message))
    result = value.value()
    if kind != cel.Type.BOOL or not isinstance(result, bool):
        return Outcome(
            None, f"the condition gives {kind.name().lower()} {result!r}, not true "
            "or false"
        )
    return _TRUE if result else _FALSE


def _missing(resource: Mapping[str, Any], reads: tuple[str, ...], key: str) -> tuple[str, ...]:
    """The read paths that stop at an absent `key`, as resource.* prefixes."""
    out = []
    for path in reads:
        parts = path.split(".") if path else []
        value: Any = resource
        for k, part in enumerate(parts):
            if not isinstance(value, Mapping):
                break
            if part not in value:
                if part == key:
                    out.append("resource." + ".".join(parts[: k + 1]))
                break
            value = value[part]
    return tuple(dict.fromkeys(out))


def evaluate_all(
    conditions: Sequence[Condition], resource: Mapping[str, Any],
    keys: dict[tuple[str, ...], Any] | None = None,
) -> list[Outcome]:
    """Each condition's outcome on `resource`, in order: the remembered ones looked up,
    the others evaluated together in one call of the library (`keys`: see
    `Condition.key`)."""
    if keys is None:
        keys = {}
    outcomes: list[Outcome | None] = []
    missed: list[Condition] = []
    memo_keys: list[Any] = []  # the missed ones' (None: not remembered)
    for condition in conditions:
        key = None
        if not condition.per_resource:
            key = freeze_fields(resource, condition.reads, keys)
            try:
                known = condition._memo.get(key)
            except TypeError:  # an unhashable leaf: evaluate without remembering
                key = known = None
            if known is not None:
                outcomes.append(known)
                continue
        outcomes.append(None)
        missed.append(condition)
        memo_keys.append(key)
    if not missed:
        return outcomes  # type: ignore[return-value]  # no None left
    fresh = _evaluate_together(tuple(missed), resource)
    if len(missed) == len(conditions) and not any(k is not None for k in memo_keys):
        return fresh  # none remembered: the common case of conditions on the name
    found = iter(zip(missed, memo_keys, fresh, strict=True))
    out = []
    for known in outcomes:
        if known is None:
            condition, key, known = next(found)
            if key is not None:
                memo = condition._memo
                if len(memo) >= _MEMO_LIMIT:
                    memo.clear()
                memo[key] = known
        out.append(known)
    return out


@dataclass(frozen=True)
class _Batch:
    """Conditions compiled as one CEL list of them (None: the list does not compile),
    and the outermost fields they read. A condition with a typed reading needs
    variables of its own: its place in the list holds `null`."""

    expression: Any
    reads: tuple[str, ...]


_batches: dict[tuple[Condition, ...], _Batch] = {}
# Compiling a list costs as much as many calls of the library: a set of conditions is
# compiled as one once it has been needed this many times (until then, one call each).
_COMPILE_AFTER = 16
_wanted: dict[tuple[Condition, ...], int] = {}  # sets not compiled yet: times needed


def _evaluate_together(conditions: tuple[Condition, ...], resource: Mapping[str, Any]) -> (
    list[Outcome]
):
    """The conditions on `resource`: one call of the library for all, then one call
    each for any whose element of the list is not true or false (or all of them,
    when the list is an error)."""
    if len(conditions) == 1:
        return [conditions[0]._evaluate(resource)]
    return [
        _TRUE if answer is True else _FALSE if answer is False else c._evaluate(resource)
        for c, answer in zip(conditions, _answers(conditions, resource), strict=True)
    ]


def _answers(conditions: tuple[Condition, ...], resource: Mapping[str, Any]) -> list[Any]:
    """The list of the conditions' values on `resource` as Python values, or Nones
    when the list is not one (an error in any element, it did not compile, or it is
    not compiled yet)."""
    batch = _batches.get(conditions)
    if batch is None:
        wanted = _wanted.get(conditions, 0) + 1
        if wanted < _COMPILE_AFTER:
            if len(_wanted) >= _BATCH_LIMIT:
                _wanted.clear()
            _wanted[conditions] = wanted
            return [None] * len(conditions)
        _wanted.pop(conditions, None)
        reads = outermost(r for c in conditions if c._typed is None for r in c.reads)
        text = "[\n" + "\n,\n".join(
            "null" if c._typed is not None else f"({c.text}\n)" for c in conditions
        ) + "\n]"
        try:
            batch = _Batch(_compile(text), reads)
        except ConditionError:
            batch = _Batch(None, reads)
        if len(_batches) >= _BATCH_LIMIT:
            _batches.clear()
        _batches[conditions] = batch
    if batch.expression is not None:
        data = {"resource": project(resource, batch.reads)}
        try:
            result = batch.expression.eval(data=data).plain_value()  # an error's: a string
        except RuntimeError:
            result = None
        if type(result) is list and len(result) == len(conditions):
            return result
    return [None] * len(conditions)


def compile_condition(text: str) -> Condition:
    """Compile and type-check `text` with `resource` as a dynamic map; a syntax or type
    error raises ConditionError with its line and column in `text`."""
    expression = _compile(text)
    chains = list(_chains(_tokens(text)))
    reads = tuple(sorted({c.path for c in chains}))
    notes = [UNDOCUMENTED[p.split(".")[0]] for p in reads if p.split(".")[0] in UNDOCUMENTED]
    typed = _typed_program(text, chains)
    if typed is not None:
        fields = ", ".join(f"resource.{p}" for _, p in typed.stand_ins)
        notes.append(
            f"the service does not document how it presents {fields} in conditions: "
            "read both as the REST JSON string and as a CEL duration/timestamp"
        )
    return Condition(text, reads, tuple(dict.fromkeys(notes)), _Program(expression), typed)


def _typed_program(text: str, chains: list[_Chain]) -> _Program | None:
    """The condition with each Duration/Timestamp field read replaced by a typed
    variable (the library takes such values only as variables)."""
    replaced = [c for c in chains if c.path in _TYPED and not c.in_has]
    if not replaced:
        return None
    names: dict[str, str] = {}
    pieces, pos = [], 0
    for chain in replaced:
        variable = names.setdefault(chain.path, f"_reconcile_field_{len(names)}")
        pieces += [text[pos : chain.start], variable]
        pos = chain.end
    pieces.append(text[pos:])
    stand_ins = tuple((v, p) for p, v in names.items())
    declared = tuple((v, _TYPED[p][0]) for v, p in stand_ins)
    try:
        expression = _compile("".join(pieces), declared)
    except ConditionError:
        expression = None  # the typed reading does not type-check: the JSON one decides
    return _Program(expression, stand_ins)


_compiled: dict[str, Condition] = {}
_failed: dict[str, ConditionError] = {}


def condition_for(constraint: CustomConstraint) -> Condition:
    """The constraint's condition, compiled once per process (ConditionError when it
    does not compile, raised again at each call without compiling again)."""
    condition = _compiled.get(constraint.condition)
    if condition is None:
        failed = _failed.get(constraint.condition)
        if failed is not None:
            raise ConditionError(
                failed.message, failed.line, failed.column, unsupported=failed.unsupported
            )
        try:
            condition = compile_condition(constraint.condition)
        except ConditionError as exc:
            _failed[constraint.condition] = exc
            raise
        _compiled[constraint.condition] = condition
    return condition


def compile_error(constraint: CustomConstraint) -> ConditionError | None:
    """Why the constraint's condition does not compile here, or None when it does."""
    try:
        condition_for(constraint)
    except ConditionError as exc:
        return exc
    return None


# ---------------------------------------------------------------------------- judging


class Verdict(Enum):
    ALLOWED = "allowed"
    REFUSED = "refused"
    UNDECIDED = "undecided"  # the condition could not be evaluated


@dataclass(frozen=True)
class Judgement:
    """What the constraint says about one call. `outcome` is the condition on the
    resource as it will be after the call; for UPDATE, `before` is it on the resource
    as it is (the service refuses an update of a resource that already violates
    unless the update fixes it: the resource after the call decides either way)."""

    constraint: CustomConstraint
    method: str
    verdict: Verdict
    outcome: Outcome
    before: Outcome | None = None

    @property
    def already_violating(self) -> bool:
        return self.before is not None and _violates(self.constraint, self.before) is True


def _violates(constraint: CustomConstraint, outcome: Outcome) -> bool | None:
    """ALLOW: the resource must satisfy the condition; DENY: it is refused if it does."""
    if outcome.value is None:
        return None
    return outcome.value is False if constraint.action_type == "ALLOW" else outcome.value


def judge(
    constraint: CustomConstraint,
    resource: Mapping[str, Any],
    method: str,
    before: Mapping[str, Any] | None = None,
    *,
    resource_type: str = TOPIC,
    compiled: Callable[[CustomConstraint], Condition] = condition_for,
    keys: dict[tuple[str, ...], Any] | None = None,
) -> Judgement | None:
    """The constraint's verdict on CREATE or UPDATE of `resource` (the REST JSON dict
    as it will be after the call; `before`: as it is, for UPDATE); None when the
    constraint does not restrict that method on that resource type. `keys`: see
    `Condition.evaluate` (for `resource`, when several constraints judge it)."""
    if not constraint.applies_to(resource_type, method):
        return None
    condition = compiled(constraint)
    return _judgement(constraint, condition, condition.evaluate(resource, keys), method, before)


def _judgement(
    constraint: CustomConstraint, condition: Condition, outcome: Outcome, method: str,
    before: Mapping[str, Any] | None,
) -> Judgement:
    prior = condition.evaluate(before) if before is not None and method == "UPDATE" else None
    violates = _violates(constraint, outcome)
    verdict = (
        Verdict.UNDECIDED if violates is None
        else Verdict.REFUSED if violates else Verdict.ALLOWED
    )
    return Judgement(constraint, method, verdict, outcome, prior)


class ConstraintSet:
    """Constraints judged together on each of many resources (validate's topics):
    their conditions compiled once, and on each resource those whose outcome is not
    remembered evaluated in one call of the library (`evaluate_all`). The verdicts
    are `judge`'s."""

    def __init__(
        self, constraints: Iterable[CustomConstraint],
        compiled: Callable[[CustomConstraint], Condition] = condition_for,
    ) -> None:
        self.constraints = tuple(constraints)
        self._compiled = compiled
        # By (resource type, method): the constraints that restrict it, their
        # conditions, and whether any of those is remembered.
        self._applying: dict[
            tuple[str, str], tuple[tuple[CustomConstraint, ...], tuple[Condition, ...], bool]
        ] = {}

    def objections(
        self,
        resource: Mapping[str, Any],
        method: str,
        before: Mapping[str, Any] | None = None,
        *,
        resource_type: str = TOPIC,
        keys: dict[tuple[str, ...], Any] | None = None,
    ) -> list[Judgement]:
        """The judgements, in the set's order, of the constraints that restrict
        `method` on `resource_type` and do not allow the call (refused, or
        undecided); the arguments are `judge`'s."""
        applying = self._applying.get((resource_type, method))
        if applying is None:
            chosen = tuple(c for c in self.constraints if c.applies_to(resource_type, method))
            compiled = tuple(self._compiled(c) for c in chosen)
            remembered = not all(c.per_resource for c in compiled)
            applying = self._applying[(resource_type, method)] = (chosen, compiled, remembered)
        constraints, conditions, remembered = applying
        if not conditions:
            return []
        outcomes = (
            evaluate_all(conditions, resource, keys) if remembered
            else _evaluate_together(conditions, resource)
        )
        return [
            _judgement(constraint, condition, outcome, method, before)
            for constraint, condition, outcome in zip(constraints, conditions, outcomes,
                                                      strict=True)
            if _violates(constraint, outcome) is not False
        ]
