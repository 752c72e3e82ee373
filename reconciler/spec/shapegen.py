"""Writes everything generated from the pydantic models (`models.py`, the one source of
the spec language): `reconciler/spec/documents.py` (the plain records the checks read
and the shape table the fast check interprets, `fastshape.py`, so that the validate
path starts without importing pydantic), the JSON Schema `specs/schema.json` (what
`reconcile schema` prints) and the reference page `docs/spec-reference.md`. Adding a
field is one edit to the models and this command; a test fails when any of the three
is stale.

    python -m reconciler.spec.shapegen          # rewrites the three files
    python -m reconciler.spec.shapegen --check  # exit 1, naming the stale ones

Each field's kind is derived from its annotation and validators; an annotation this
generator does not know raises, so a new kind of field forces extending it (and the
fast check) instead of being checked wrongly.
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from reconciler.spec import models, reference
from reconciler.spec.fastshape import Kind, accepted_types
from reconciler.spec.schema import spec_schema_text

TARGET = Path(__file__).with_name("documents.py")
ROOT = Path(__file__).resolve().parents[2]  # a source checkout: docs/ and specs/ beside
COMMAND = "python -m reconciler.spec.shapegen"

# Before-validators of the models, by function: the kind the fast check applies.
_VALIDATOR_KINDS = {models._whole: "whole", models._number: "number", models._duration: "duration"}


class UnknownAnnotation(TypeError):
    """The generator cannot say how the fast check should read this field."""


def kind_of(annotation: Any, where: str) -> Kind:
    """The table's kind for one annotation (nested tuples of plain values)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        base, *meta = args
        funcs = [getattr(m, "func", None) for m in meta if hasattr(m, "func")]
        kinds = [_VALIDATOR_KINDS.get(f) for f in funcs if f is not None]  # type: ignore[call-overload]
        if None in kinds or len(kinds) > 1:
            raise UnknownAnnotation(f"{where}: validators {funcs} have no fast kind")
        if kinds:
            expected = int if kinds[0] in ("whole", "duration") else float
            if base is not expected:
                raise UnknownAnnotation(f"{where}: {kinds[0]} on {base!r}")
            return (str(kinds[0]),)
        return kind_of(base, where)
    if origin in (typing.Union, types.UnionType):
        members = tuple(kind_of(a, where) for a in args)
        seen: set[type] = set()
        for member in members:
            overlap = seen & accepted_types(member)
            if overlap:
                raise UnknownAnnotation(f"{where}: union members both take {overlap}")
            seen |= accepted_types(member)
        return ("union", members)
    if origin is typing.Literal:
        if not all(type(a) is str for a in args):
            raise UnknownAnnotation(f"{where}: only text literals are known")
        return ("literal", tuple(args))
    if origin is list and args == (str,):
        return ("list_str",)
    if origin is dict and args == (str, str):
        return ("dict_str_str",)
    if annotation is type(None):
        return ("none",)
    simple = {str: "str", bool: "bool"}
    if annotation in simple:
        return (simple[annotation],)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return ("model", annotation.__name__)
    raise UnknownAnnotation(f"{where}: no fast kind for {annotation!r}")


def default_of(field: FieldInfo, where: str) -> tuple[Any, ...]:
    """("required",), ("value", v) for None/bool, or ("factory", list|dict|model name)."""
    if field.is_required():
        return ("required",)
    if field.default_factory is not None:
        made = field.default_factory()  # type: ignore[call-arg]
        if isinstance(made, BaseModel):
            return ("factory", type(made).__name__)
        if made in ([], {}):
            return ("factory", type(made).__name__)
        raise UnknownAnnotation(f"{where}: default factory making {made!r}")
    if field.default is PydanticUndefined or field.default not in (None, False, True):
        raise UnknownAnnotation(f"{where}: default {field.default!r} has no fast form")
    return ("value", field.default)


def _model_classes() -> list[type[BaseModel]]:
    """Every model reachable from the kinds, nested ones first (definition order)."""
    out: list[type[BaseModel]] = []

    def visit(model: type[BaseModel]) -> None:
        for field in model.model_fields.values():
            for sub in _submodels(field.annotation):
                visit(sub)
        if model not in out:
            out.append(model)

    for model in models.MODEL_BY_KIND.values():
        visit(model)
    return out


def _submodels(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for a in typing.get_args(annotation) for m in _submodels(a)]


def _type_text(kind: Kind) -> str:
    simple = {"str": "str", "bool": "bool", "whole": "int", "number": "float",
              "duration": "int", "list_str": "list[str]", "dict_str_str": "dict[str, str]",
              "none": "None"}
    if kind[0] in simple:
        return simple[kind[0]]
    if kind[0] == "literal":
        return f"Literal[{', '.join(repr(v) for v in kind[1])}]"
    if kind[0] == "union":
        return " | ".join(_type_text(k) for k in kind[1])
    return str(kind[1])  # a nested model: its record


_HEADER = f'''# ruff: noqa: E501, RUF023
"""Plain records of the spec documents and their shape table: generated from the
pydantic models in `models.py` by `{COMMAND}`; do not edit.

The checks read these records; `fastshape.py` builds them from YAML data by the
table, and hands anything it is not sure of to the models."""

from __future__ import annotations

from typing import Any, Literal

from reconciler.spec.record import Record as _Record

_set = object.__setattr__
'''


def _record_source(name: str, fields: list[tuple[str, str, tuple[Any, ...], Kind]]) -> str:
    """One record class: slots, typed attributes, a keyword-only constructor."""
    params, body = [], []
    for _, attr, default, kind in fields:
        text = _type_text(kind)
        if default[0] == "required":
            params.append(f"{attr}: {text}")
            body.append(f"        _set(self, {attr!r}, {attr})")
        elif default[0] == "value":
            params.append(f"{attr}: {text} = {default[1]!r}")
            body.append(f"        _set(self, {attr!r}, {attr})")
        else:  # a fresh default per record, like a default_factory
            params.append(f"{attr}: {text} | None = None")
            made = {"list": "[]", "dict": "{}"}.get(default[1], f"{default[1]}()")
            body.append(f"        _set(self, {attr!r}, {made} if {attr} is None else {attr})")
    slots = tuple(attr for _, attr, _, _ in fields)
    return "\n".join([
        "", "", f"class {name}(_Record):", f'    """The record of `models.{name}`."""', "",
        f"    __slots__ = {slots!r}",
        *[f"    {attr}: {_type_text(kind)}" for _, attr, _, kind in fields], "",
        f"    def __init__(self, *, {', '.join(params)}) -> None:", *body,
    ])


def render() -> str:
    """The whole documents module as Python source."""
    classes, table = [], []
    for model in _model_classes():
        name = model.__name__
        fields = []
        for attr, info in model.model_fields.items():
            where = f"{name}.{attr}"
            fields.append((info.alias or attr, attr, default_of(info, where),
                           kind_of(info.annotation, where)))
        classes.append(_record_source(name, fields))
        table.append(f"    {name!r}: (\n" + "".join(f"        {f!r},\n" for f in fields) + "    ),")
    kinds = ", ".join(f"{k!r}: {m.__name__}" for k, m in models.MODEL_BY_KIND.items())
    return (
        _HEADER
        + f"\n\nAPI_VERSION = {models.API_VERSION!r}\n"
        f"KINDS = {models.KINDS!r}\n"
        + "\n".join(classes)
        + "\n\n\nRecord = " + " | ".join(m.__name__ for m in _model_classes()) + "\n"
        + "RECORDS: dict[str, type[_Record]] = {\n"
        + "".join(f"    {m.__name__!r}: {m.__name__},\n" for m in _model_classes())
        + "}\n"
        + f"RECORD_BY_KIND: dict[str, type[_Record]] = {{{kinds}}}\n\n"
        "# Model name -> fields: (alias, attribute, default, kind).\n"
        "SHAPES: dict[str, tuple[tuple[Any, ...], ...]] = {\n"
        + "\n".join(table) + "\n}\n"
    )


def artefacts() -> dict[Path, str]:
    """Each generated file and what it must hold."""
    return {
        TARGET: render(),
        ROOT / "specs" / "schema.json": spec_schema_text(),
        ROOT / "docs" / "spec-reference.md": reference.render(),
    }


def main(argv: list[str]) -> tuple[int, list[str]]:
    """Regenerate (or with --check, list) the stale artefacts: the exit code and the
    lines to print (the module's own program prints them)."""
    check = argv == ["--check"]
    if argv and not check:
        return 2, [f"usage: {COMMAND} [--check]"]
    if not (ROOT / "docs").is_dir():
        return 1, [f"{ROOT} is not a source checkout (no docs/): nothing to write"]
    stale = []
    for path, text in artefacts().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path.relative_to(ROOT))
        if not check:
            path.write_text(text, encoding="utf-8")
    verb = "stale" if check else "wrote"
    lines = [f"{verb} {path}" for path in stale]
    if check and stale:
        lines.append(f"run `{COMMAND}` to regenerate them from the models")
    return (1 if check and stale else 0), lines


if __name__ == "__main__":
    code, lines = main(sys.argv[1:])
    (sys.stdout if code in (0, 1) else sys.stderr).write("".join(f"{x}\n" for x in lines))
    raise SystemExit(code)
