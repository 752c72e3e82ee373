"""The shape check (`spec/shape.py`, msgspec into the Structs of `documents.py`): the
forms the language accepts beyond msgspec's strict types, each problem at its line and
column with its code, and the records as read-only values. (Every case of
tests/spec/cases/invalid/ is compared whole, text and json, by
tests/test_outputs_preserved.py.)"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

import pytest

from reconciler.diagnostics import Diagnostics
from reconciler.spec import documents
from reconciler.spec.shape import check_shape
from reconciler.yamlio import load_documents

PROFILE = "apiVersion: reconcile.pubsub/v1\nkind: HedgingProfile\nmetadata: {name: p}\nspec:\n"
TOPIC = "apiVersion: reconcile.pubsub/v1\nkind: Topic\nmetadata: {name: t}\n"


def shape(text: str) -> tuple[Any, list[tuple[int, int, str, str]], set[Any]]:
    """The record, the diagnostics (line, col, code, message) and the invalid paths."""
    doc = load_documents(Path("t.yaml"), text=text, display="t.yaml")[0]
    diags, invalid = Diagnostics(), set()
    before = copy.deepcopy(doc.data)
    record = check_shape(doc.data["kind"], doc.data, doc, diags, invalid)
    assert doc.data == before, "the shape check changed the document's data"
    return record, [(d.line, d.col, d.code, d.message) for d in diags.sorted()], invalid


def test_a_well_formed_document_becomes_its_record() -> None:
    record, found, invalid = shape(
        TOPIC + "spec:\n  labels: {team: pay}\n  messageStoragePolicy: inherit\n"
        "  publishers: {regions: [us-east1], retry: {totalTimeout: 1m30s}}\n"
    )
    assert (found, invalid) == ([], set())
    assert record.metadata == documents.TopicMetadata(name="t")
    assert record.spec.labels == {"team": "pay"}
    assert record.spec.message_storage_policy == "inherit"
    assert record.spec.publishers.retry.total_timeout == 90_000
    assert type(record.spec.publishers.retry.total_timeout) is int


def test_whole_numbers_written_as_floats_and_ints_as_ratios_are_accepted() -> None:
    record, found, _ = shape(PROFILE + "  maxTokens: 1e2\n  refillRatio: 1\n")
    assert found == []
    assert (record.spec.max_tokens, record.spec.refill_ratio) == (100, 1.0)
    assert (type(record.spec.max_tokens), type(record.spec.refill_ratio)) == (int, float)
    # Beyond any float or int64: kept out of range, for the range check to report.
    huge, found, _ = shape(PROFILE + "  maxTokens: 1e400\n")
    assert found == [] and huge.spec.max_tokens > 2**63


@pytest.mark.parametrize("spec,expected", [
    ("  maxTokens: true\n",
     (5, 14, "wrong-type", "spec > maxTokens must be a whole number, not boolean true")),
    ("  hedgeDelay: '5'\n",
     (5, 15, "bad-duration",
      "spec > hedgeDelay: '5' is not a duration; write e.g. 500ms, 5s, 1m or 1m30s")),
    ("  hedge_delay: 5s\n",
     (5, 3, "unknown-field", "unknown field 'hedge_delay' in spec; did you mean 'hedgeDelay'?")),
])
def test_each_problem_at_its_line_and_column(spec: str, expected: tuple[Any, ...]) -> None:
    record, found, invalid = shape(PROFILE + spec + "  refillRatio: 0.1\n")
    assert found == [expected]
    assert record.spec.refill_ratio == 0.1  # the rest of the document is kept
    assert len(invalid) == 1


def test_a_refused_value_is_left_out_or_replaced_and_every_problem_reported() -> None:
    record, found, invalid = shape(
        "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
        "spec: {messageStoragePolicy: Inherit, labels: {team: [a]}, extra: 1}\n"
    )
    assert [(line, code) for line, _, code, _ in found] == [
        (1, "missing-field"), (3, "bad-value"), (3, "wrong-type"), (3, "unknown-field")]
    assert record.metadata.name == "" and record.spec.message_storage_policy is None
    assert invalid == {("metadata",), ("spec", "messageStoragePolicy"),
                       ("spec", "labels", "team"), ("spec", "extra")}


def test_records_are_read_only_values() -> None:
    meta = documents.TopicMetadata(name="orders")
    doc = documents.TopicDoc(api_version="v", kind="Topic", metadata=meta)
    assert doc.spec == documents.TopicSpec() and doc.spec.labels == {}
    assert doc.spec.labels is not documents.TopicSpec().labels  # a fresh default each
    assert meta == documents.TopicMetadata(project=None, name="orders")
    assert meta != documents.TopicMetadata(project="p", name="orders")
    assert meta != documents.ProfileMetadata(name="orders")
    assert hash(meta) == hash(documents.TopicMetadata(name="orders"))
    assert copy.deepcopy(doc) == doc and pickle.loads(pickle.dumps(doc)) == doc
    with pytest.raises(AttributeError):
        meta.name = "other"  # type: ignore[misc]
