"""A compiled condition and its evaluation on a resource given as a plain dict in its
REST JSON shape, with a verdict that is true, false or "could not evaluate" (with the
reason), never a silent pass.

Representation. A field the resource does not set is absent: reading it is CEL's "no
such key" error, which `Outcome.missing` names (`has()` guards against it, as the
service's documentation shows). How the service presents Duration and Timestamp
fields inside conditions is not documented; a condition that reads one is evaluated
both with the REST JSON string and with a CEL duration / timestamp. Where only one
reading type-checks, its answer is taken and `Condition.notes` says so; where both
answer differently, the outcome is "could not evaluate", naming both.
`resource.labels` is evaluated as the topic's labels map, though the service's table
of fields does not list it (also a note).

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

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.orgpolicy.cel.library import (
    ConditionError,
    clean_message,
    compile_text,
    library,
)
from reconciler.orgpolicy.cel.reads import Chain, chains, outermost, tokens
from reconciler.orgpolicy.cel.values import ABSENT, TYPED, freeze_fields, lookup, project
from reconciler.orgpolicy.custom import CustomConstraint

# Fields a condition may read though the service's documentation does not say how.
UNDOCUMENTED = {
    "labels": "resource.labels is read as the topic's labels map; the service's table of "
    "fields for conditions does not list it",
}
_MEMO_LIMIT = 8192
_BATCH_LIMIT = 256  # compiled lists of conditions kept


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


@dataclass
class _Program:
    """One compiled reading of the condition (the REST JSON one, or the typed one
    with Duration/Timestamp fields as stand-in variables)."""

    expression: Any
    stand_ins: tuple[tuple[str, str], ...] = ()  # (variable, field path)




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

    def evaluate(
        self, resource: Mapping[str, Any], keys: dict[tuple[str, ...], Any] | None = None
    ) -> Outcome:
        """The condition on `resource`; `keys`: see `evaluate_all`."""
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
        raw = lookup(resource, path)
        if raw is ABSENT:
            continue
        converted = TYPED[path][1](raw) if isinstance(raw, str) else None
        if converted is None:
            return Outcome(None, f"resource.{path} is {raw!r}, not a valid {TYPED[path][0]}")
        variables[variable] = converted
    try:
        value = program.expression.eval(data=variables)
    except RuntimeError as exc:
        return Outcome(None, clean_message(str(exc)))
    cel = library()
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
        return Outcome(None, clean_message(message))
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
    the others evaluated together in one call of the library. `keys`: a cache of the
    resource's memo keys (the values of the fields a condition reads, `freeze_fields`),
    shared by the conditions judged on the same resource."""
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
            batch = _Batch(compile_text(text), reads)
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
    expression = compile_text(text)
    selections = list(chains(tokens(text)))
    reads = tuple(sorted({c.path for c in selections}))
    notes = [UNDOCUMENTED[p.split(".")[0]] for p in reads if p.split(".")[0] in UNDOCUMENTED]
    typed = _typed_program(text, selections)
    if typed is not None:
        fields = ", ".join(f"resource.{p}" for _, p in typed.stand_ins)
        notes.append(
            f"the service does not document how it presents {fields} in conditions: "
            "read both as the REST JSON string and as a CEL duration/timestamp"
        )
    return Condition(text, reads, tuple(dict.fromkeys(notes)), _Program(expression), typed)


def _typed_program(text: str, selections: list[Chain]) -> _Program | None:
    """The condition with each Duration/Timestamp field read replaced by a typed
    variable (the library takes such values only as variables)."""
    replaced = [c for c in selections if c.path in TYPED and not c.in_has]
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
    declared = tuple((v, TYPED[p][0]) for v, p in stand_ins)
    try:
        expression = compile_text("".join(pieces), declared)
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


