"""Files -> YAML documents -> typed spec documents, every problem kept as a diagnostic.

Pydantic errors are mapped back to the file, line and column of the offending key or
value, keyed on the error *type*, never on its English text.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from reconciler.diagnostics import Diagnostics
from reconciler.spec.models import (
    API_VERSION,
    KINDS,
    MODEL_BY_KIND,
    DefaultsDoc,
    HedgingProfileDoc,
    TopicDoc,
)
from reconciler.yamlio import Document, YamlProblem, load_documents

SPEC_SUFFIXES = (".yaml", ".yml")
SNAPSHOT_NAMES = ("org-policy.yaml", "org-policy.yml")
MAX_FILES = 100_000

M = TypeVar("M", bound=BaseModel)


@dataclass
class Located(Generic[M]):
    """A validated document and where it came from, for positioned diagnostics."""

    model: M
    doc: Document
    path: Path

    @property
    def directory(self) -> Path:
        return self.path.parent


@dataclass
class SpecTree:
    topics: list[Located[TopicDoc]] = field(default_factory=list)
    profiles: list[Located[HedgingProfileDoc]] = field(default_factory=list)
    defaults: list[Located[DefaultsDoc]] = field(default_factory=list)
    snapshot: Path | None = None
    files: int = 0


def discover(paths: Sequence[Path], diags: Diagnostics) -> tuple[list[Path], Path | None]:
    """Spec files under the given paths (sorted, hidden entries skipped) and the
    org-policy snapshot found at a spec root or above it, if any."""
    files: list[Path] = []
    snapshot: Path | None = None
    for root in paths:
        if not root.exists():
            diags.error(
                str(root), 0, 0, "path-missing", "no such file or directory; check the PATH"
            )
            continue
        if root.is_file():
            files.append(root)
            continue
        found = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name.startswith(".") or not name.endswith(SPEC_SUFFIXES):
                    continue
                if name in SNAPSHOT_NAMES and Path(dirpath) == root:
                    continue
                found.append(Path(dirpath) / name)
                if len(found) > MAX_FILES:
                    break
        if not found:
            diags.error(
                str(root),
                0,
                0,
                "no-specs",
                "no spec files (*.yaml, *.yml) in this directory; point PATH at your spec tree",
            )
        files.extend(found)
        snapshot = snapshot or find_snapshot(root)
    return files, snapshot


def find_snapshot(start: Path) -> Path | None:
    """The nearest org-policy.yaml in the spec root or its parents, up to the repo root."""
    here = start.resolve()
    for directory in (here, *here.parents):
        for name in SNAPSHOT_NAMES:
            candidate = directory / name
            if candidate.is_file():
                return candidate
        if (directory / ".git").exists():
            break
    return None


def load_tree(paths: Sequence[Path], diags: Diagnostics) -> SpecTree:
    files, snapshot = discover(paths, diags)
    tree = SpecTree(snapshot=snapshot, files=len(files))
    for path in files:
        display = str(path)
        try:
            documents = load_documents(path, display=display)
        except YamlProblem as exc:
            diags.error(display, exc.mark.line, exc.mark.col, exc.code, exc.message)
            continue
        if not documents or all(d.data is None for d in documents):
            diags.warning(display, 1, 1, "empty-file", "the file holds no spec documents")
            continue
        for doc in documents:
            _load_document(doc, path, tree, diags)
    return tree


def _load_document(doc: Document, path: Path, tree: SpecTree, diags: Diagnostics) -> None:
    data = doc.data
    if data is None:
        return
    if not isinstance(data, dict):
        diags.error(
            doc.file,
            doc.start.line,
            doc.start.col,
            "not-a-mapping",
            f"a spec document must be a mapping with apiVersion and kind, not a "
            f"{_type_name(data)}",
        )
        return
    ok = True
    version = data.get("apiVersion")
    if "apiVersion" not in data:
        diags.error(
            doc.file, doc.start.line, doc.start.col, "missing-api-version",
            f"the document has no apiVersion; add `apiVersion: {API_VERSION}`",
        )
        ok = False
    elif version != API_VERSION:
        m = doc.mark_for(("apiVersion",))
        diags.error(
            doc.file, m.line, m.col, "unknown-api-version",
            f"unknown apiVersion {version!r}; this reconcile reads {API_VERSION!r}",
        )
        ok = False
    kind = data.get("kind")
    if "kind" not in data:
        diags.error(
            doc.file, doc.start.line, doc.start.col, "missing-kind",
            f"the document has no kind; add one of: {', '.join(KINDS)}",
        )
        return
    if not isinstance(kind, str) or kind not in MODEL_BY_KIND:
        m = doc.mark_for(("kind",))
        hint = _did_you_mean(str(kind), KINDS)
        diags.error(
            doc.file, m.line, m.col, "unknown-kind",
            f"unknown kind {kind!r}; expected one of: {', '.join(KINDS)}{hint}",
        )
        return
    model_cls = MODEL_BY_KIND[kind]
    try:
        model = model_cls.model_validate(data)
    except ValidationError as exc:
        report_validation_error(exc, doc, model_cls, diags)
        return
    if not ok:
        return
    located = Located(model, doc, path)
    if isinstance(model, TopicDoc):
        tree.topics.append(located)  # type: ignore[arg-type]
    elif isinstance(model, HedgingProfileDoc):
        tree.profiles.append(located)  # type: ignore[arg-type]
    else:
        tree.defaults.append(located)  # type: ignore[arg-type]


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    return {
        str: "string", int: "number", float: "number", list: "list", dict: "mapping"
    }.get(type(value), type(value).__name__)


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.5)
    return f"; did you mean {match[0]!r}?" if match else ""


_EXPECTED = {
    "string_type": "text",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def report_validation_error(
    exc: ValidationError, doc: Document, model_cls: type[BaseModel], diags: Diagnostics
) -> None:
    """Map each pydantic error to a positioned diagnostic, keyed on the error type."""
    for error in exc.errors(include_url=False):
        path = _data_path(doc.data, error["loc"], error["type"])
        if path is None:
            continue  # the error belongs to a union branch the input did not take
        etype = error["type"]
        if path in (("kind",), ("apiVersion",)):
            continue  # reported by the apiVersion/kind checks
        where = " > ".join(str(p) for p in path) or "document"
        if etype == "extra_forbidden":
            m = doc.key_mark(path)
            known = _field_names(model_cls, path[:-1])
            diags.error(
                doc.file, m.line, m.col, "unknown-field",
                f"unknown field {path[-1]!r} in {' > '.join(map(str, path[:-1])) or 'document'}"
                f"{_did_you_mean(str(path[-1]), known)}",
            )
        elif etype == "missing":
            m = doc.key_mark(path[:-1]) if path[:-1] else doc.start
            diags.error(
                doc.file, m.line, m.col, "missing-field",
                f"{where} is required but missing",
            )
        elif etype == "duration":
            m = doc.mark_for(path)
            diags.error(doc.file, m.line, m.col, "bad-duration", f"{where}: {error['msg']}")
        elif etype == "literal_error":
            m = doc.mark_for(path)
            value = _value_at(doc.data, path)
            diags.error(
                doc.file, m.line, m.col, "bad-value",
                f"{where}: {value!r} is not allowed; write `inherit`, or a mapping with "
                "allowedPersistenceRegions",
            )
        elif etype in _EXPECTED:
            m = doc.mark_for(path)
            value = _value_at(doc.data, path)
            diags.error(
                doc.file, m.line, m.col, "wrong-type",
                f"{where} must be {_EXPECTED[etype]}, not {_type_name(value)} {value!r}"
                if not isinstance(value, dict | list)
                else f"{where} must be {_EXPECTED[etype]}, not a {_type_name(value)}",
            )
        else:
            m = doc.mark_for(path)
            diags.error(doc.file, m.line, m.col, "bad-value", f"{where}: {error['msg']}")


_MISSING = object()


def _value_at(data: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            return _MISSING
    return data


def _data_path(data: Any, loc: tuple[Any, ...], etype: str) -> tuple[str | int, ...] | None:
    """Drop pydantic's union-branch segments from `loc`; None when the error is about a
    branch that does not match the input's shape (the other branch reports it)."""
    out: list[str | int] = []
    current = data
    for i, part in enumerate(loc):
        if isinstance(current, dict) and part in current:
            current = current[part]
            out.append(part)
            continue
        if isinstance(current, list) and isinstance(part, int):
            current = current[part] if part < len(current) else None
            out.append(part)
            continue
        is_last = i == len(loc) - 1
        if is_last and etype in ("missing", "extra_forbidden"):
            out.append(part)
            continue
        # A union branch tag such as 'str', "literal['inherit']" or a model name.
        tag = str(part)
        if isinstance(current, dict) and (tag in ("str",) or tag.startswith("literal[")):
            return None
        if not isinstance(current, dict) and tag[:1].isupper():
            return None
    return tuple(out)


def _field_names(model_cls: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    """Aliases of the model found at `path`, for did-you-mean suggestions."""
    current: Any = model_cls
    for part in path:
        if isinstance(part, int):
            continue
        fields = {(f.alias or n): f for n, f in current.model_fields.items()}
        if part not in fields:
            return []
        annotation = fields[part].annotation
        current = _first_model(annotation)
        if current is None:
            return []
    return [(f.alias or n) for n, f in current.model_fields.items()]


def _first_model(annotation: Any) -> type[BaseModel] | None:
    import typing

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _first_model(arg)
        if found is not None:
            return found
    return None
