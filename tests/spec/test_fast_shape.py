"""The fast shape check agrees with the pydantic models: for every document, either it
is not sure (None, the models decide) or the models accept the document and give the
same records; a document the models reject never passes it. Checked on the reference
tree, the examples, every test case, and generated documents near the schema."""

from __future__ import annotations

import copy
import functools
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from reconciler.spec import documents, shapegen
from reconciler.spec.fastshape import fast_record
from reconciler.spec.models import MODEL_BY_KIND, Number, Whole, _Model
from reconciler.spec.slowshape import to_record
from reconciler.yamlio import YamlProblem, load_documents

ROOT = Path(__file__).parents[2]
TREES = [ROOT / "specs", ROOT / "examples" / "specs", ROOT / "tests" / "spec" / "cases"]


def agree(kind: str, data: Any) -> Any:
    """The fast record (or None), after checking it against the models."""
    before = copy.deepcopy(data)
    fast = fast_record(kind, data)
    assert data == before, "the fast check changed its input"
    try:
        model = MODEL_BY_KIND[kind].model_validate(copy.deepcopy(data))
    except ValidationError:
        assert fast is None, f"the models reject {data!r}, the fast check accepted it"
        return None
    if fast is not None:
        assert fast == to_record(model), data
    return fast


def _reference_documents(well_formed: bool) -> list[tuple[str, Any]]:
    out = []
    for tree in TREES[:2] if well_formed else TREES:
        for path in sorted(tree.rglob("*.y*ml")):
            if path.name.startswith(("org-policy", "schema")):
                continue
            try:
                docs = load_documents(path, display=str(path), positions=False)
            except YamlProblem:
                continue
            for doc in docs:
                data = doc.data
                if isinstance(data, dict) and data.get("kind") in MODEL_BY_KIND:
                    out.append((f"{path.relative_to(ROOT)}#{doc.index}", data))
    return out


@pytest.mark.parametrize("where,data", _reference_documents(False), ids=lambda v: str(v)[:60])
def test_every_example_and_test_case_agrees(where: str, data: Any) -> None:
    agree(data["kind"], data)


def test_the_well_formed_trees_take_the_fast_path() -> None:
    docs = _reference_documents(True)
    assert len(docs) >= 16
    slow = [where for where, data in docs if agree(data["kind"], data) is None]
    assert slow == []


@functools.cache  # one strategy per kind: building them anew each draw was most of the time
def _scalar() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([100.0, 1e400, -1e400, 0.5, 2**63, 2**63 - 1, -(2**63), 1e19, "", "x"]),
        st.text(max_size=8),
    )


_DURATIONS = ["500ms", "5s", "1m30s", "1.5s", "0.5ms", "25h", "24h", "5", "s", "", " 5s",
              "1m1.0005s", "1.0s", "9" * 45 + "ms", "10ms5s", "5S"]


@functools.cache  # one strategy per kind: building them anew each draw was most of the time
def _value(kind: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    """Mostly values of the right kind, now and then one of a wrong kind."""
    if kind[0] == "union":
        return _right(kind)
    return st.integers(0, 11).flatmap(lambda n: _scalar() if n == 0 else _right(kind))


@functools.cache  # one strategy per kind: building them anew each draw was most of the time
def _right(kind: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    name = kind[0]
    if name == "union":
        return st.one_of(*[_value(m) for m in kind[1]])
    if name == "model":
        return _document(kind[1])
    if name == "literal":
        return st.sampled_from([*kind[1]] * 6 + ["other", kind[1][0].lower()])
    if name == "duration":
        written = st.text(alphabet="0123456789.mshx", max_size=5)
        return st.one_of(st.sampled_from(_DURATIONS), written)
    if name == "list_str":
        item = st.integers(0, 9).flatmap(lambda n: _scalar() if n == 0 else st.text(max_size=4))
        return st.lists(item, max_size=3)
    if name == "dict_str_str":
        keys = st.integers(0, 9).flatmap(
            lambda n: st.one_of(st.integers(0, 3), st.booleans()) if n == 0 else st.text(max_size=4)
        )
        values = st.integers(0, 9).flatmap(lambda n: _scalar() if n == 0 else st.text(max_size=4))
        return st.dictionaries(keys, values, max_size=3)
    return {"str": st.text(max_size=6), "bool": st.booleans(), "none": st.none(),
            "whole": st.one_of(st.integers(-1000, 1000), st.integers(-(2**70), 2**70),
                               st.integers(-1000, 1000).map(float), st.floats()),
            "number": st.one_of(st.integers(-1000, 1000), st.integers(-(2**1100), 2**1100),
                                st.floats(-10, 10), st.floats())}[name]


@functools.cache  # one strategy per kind: building them anew each draw was most of the time
def _document(model: str) -> st.SearchStrategy[Any]:
    """A mapping for `model`: each field present or not, by alias or (wrongly) by its
    attribute name, sometimes an unknown key; now and then not a mapping at all."""
    fields = documents.SHAPES[model]

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        out: dict[Any, Any] = {}
        for alias, attr, default, kind in fields:
            if draw(st.integers(0, 19)) < (19 if default[0] == "required" else 10):
                key = attr if draw(st.integers(0, 19)) == 0 else alias
                out[key] = draw(_value(kind))
        if draw(st.integers(0, 19)) == 0:
            out[draw(st.sampled_from(["extra", "Name", 1, None]))] = draw(_scalar())
        return out

    return build()


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(MODEL_BY_KIND)).flatmap(
    lambda kind: st.tuples(st.just(kind), _document(MODEL_BY_KIND[kind].__name__))))
@example(("HedgingProfile", {"apiVersion": "v", "kind": "HedgingProfile",
                             "metadata": {"name": "p"}, "spec": {"maxTokens": 100.0}}))
@example(("HedgingProfile", {"apiVersion": "v", "kind": "HedgingProfile",
                             "metadata": {"name": "p"}, "spec": {"refillRatio": 1}}))
def test_generated_documents_agree(case: tuple[str, Any]) -> None:
    kind, data = case
    agree(kind, data)


def test_what_the_fast_check_accepts_and_leaves_to_the_models() -> None:
    topic = {"apiVersion": "v", "kind": "Topic", "metadata": {"name": "t"}}
    profile = {"apiVersion": "v", "kind": "HedgingProfile", "metadata": {"name": "p"}}
    assert agree("Topic", topic) == documents.TopicDoc(
        api_version="v", kind="Topic", metadata=documents.TopicMetadata(name="t")
    )
    whole = agree("HedgingProfile", {**profile, "spec": {"maxTokens": 100.0, "refillRatio": 1}})
    assert (whole.spec.max_tokens, whole.spec.refill_ratio) == (100, 1.0)
    assert type(whole.spec.max_tokens) is int
    for spec in ({"maxTokens": True}, {"maxTokens": 1e400}, {"refillRatio": 10**400},
                 {"refillRatio": math.inf}, {"hedgeDelay": "5"}, {"hedgeDelay": "0.5ms"},
                 {"hedge_delay": "5s"}, {"maxTokens": 2**70}):
        assert fast_record("HedgingProfile", {**profile, "spec": spec}) is None, spec
        agree("HedgingProfile", {**profile, "spec": spec})
    assert fast_record("Topic", {**topic, "spec": {"labels": {1: "a"}}}) is None
    assert fast_record("Topic", {**topic, "spec": {"messageStoragePolicy": "Inherit"}}) is None
    assert fast_record("Topic", {**topic, "extra": 1}) is None
    assert fast_record("Topic", {"apiVersion": "v", "kind": "Topic"}) is None
    assert fast_record("Nope", topic) is None


def test_the_checked_in_records_and_table_match_the_models() -> None:
    assert shapegen.TARGET.read_text() == shapegen.render(), (
        f"reconciler/spec/documents.py is stale: run `{shapegen.COMMAND}`"
    )


def test_every_artefact_generated_from_the_models_is_current() -> None:
    """documents.py, specs/schema.json and docs/spec-reference.md: one command writes
    them all from the models, and says which are stale."""
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "reconciler.spec.shapegen", "--check"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    assert run.returncode == 0, f"stale, run `{shapegen.COMMAND}`:\n{run.stdout}{run.stderr}"


def test_the_generator_refuses_an_annotation_it_does_not_know() -> None:
    from typing import Annotated

    from pydantic import AfterValidator

    class New(_Model):
        count: int

    for annotation in (int, set[str], list[int], dict[str, int],
                       Annotated[int, AfterValidator(abs)], Whole | Number,
                       str | Annotated[int, "x"] | Whole, New | dict[str, str]):
        with pytest.raises(shapegen.UnknownAnnotation):
            shapegen.kind_of(annotation, "X.field")
    assert shapegen.kind_of(New | None, "X.f") == ("union", (("model", "New"), ("none",)))


def test_records_are_read_only_values() -> None:
    import pickle

    meta = documents.TopicMetadata(name="orders")
    doc = documents.TopicDoc(api_version="v", kind="Topic", metadata=meta)
    assert doc.spec == documents.TopicSpec() and doc.spec.labels == {}
    assert doc.spec.labels is not documents.TopicSpec().labels  # a fresh default each
    assert repr(meta) == "TopicMetadata(project=None, name='orders')"
    assert meta == documents.TopicMetadata(project=None, name="orders")
    assert meta != documents.TopicMetadata(project="p", name="orders")
    assert meta != documents.ProfileMetadata(name="orders")
    assert hash(meta) == hash(documents.TopicMetadata(name="orders"))
    assert copy.deepcopy(doc) == doc and pickle.loads(pickle.dumps(doc)) == doc
    with pytest.raises(AttributeError, match="read-only"):
        meta.name = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="read-only"):
        del meta.name


def _diagnostics(path: Path) -> list[tuple[object, ...]]:
    from reconciler.spec.validate import validate_paths

    result = validate_paths([path], missing_snapshot="warn")
    return [
        (d.file, d.line, d.col, d.severity, d.code, d.message, d.hint)
        for d in result.diagnostics.sorted()
    ] + [(t.address, t.labels, t.storage, t.hedging) for t in result.desired.topics]


@pytest.mark.parametrize(
    "tree",
    [ROOT / "specs", *sorted((ROOT / "examples" / "specs").iterdir()),
     *sorted((ROOT / "tests" / "spec" / "cases" / "invalid").iterdir())],
    ids=lambda p: p.name,
)
def test_validate_says_the_same_with_the_models_only(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every diagnostic and desired topic is the same when every document goes to the
    models (as before the fast check existed)."""
    fast = _diagnostics(tree)
    monkeypatch.setattr("reconciler.spec.loader.fast_record", lambda kind, data: None)
    assert _diagnostics(tree) == fast
