"""What `reconcile import` writes reads back as it was meant (issue 21): every string
the writer emits is a string again for the tool's loader (and for YAML 1.1 and 1.2
readers), so an imported label value `1e3`, `yes` or `2001-12-14` validates as the
same text instead of "must be text, not number 1e3"."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.names import label_key_problem, label_value_problem, topic_id_problem
from reconciler.ownership import is_reserved
from reconciler.spec.export import build_documents, render_documents
from reconciler.spec.validate import validate_paths
from reconciler.topic import ObservedTopic, StoragePolicy, TopicShape
from reconciler.yamlio import load_documents
from reconciler.yamltext import dump_all

PROJECT = "acme-import"
# Plain scalars some YAML reader takes for a number, boolean, null or date, and their
# neighbours that are text everywhere (written either way, they must read back).
TRICKY = (
    "1e3", "12e3", "1e-3", "1e+3", "1e03", "0x1f", "0o17", "0b101", "0777", "09", "1_000",
    "1-0", "-1", "-0", "0", "1", "00", "yes", "no", "on", "off", "y", "n", "true",
    "false", "null", "nan", "inf", "2001-12-14", "2001-1-1", "1_0e3", "e3", "1e", "_1",
    ".5", "~", "12:30:45", "1:20", ".inf", "-.inf", "+.inf", ".nan", "-.nan", ".NaN",
    "Yes", "NULL", "TRUE", "=", "<<", "-", "", "0.", "1.", "+1", "1e3e3", "0x", "0o8",
)
LABEL_CHARS = st.characters(categories=("Ll", "Lo", "Nd", "Nl", "No"), include_characters="_-")


def _valid_key(key: str) -> bool:
    return label_key_problem(key) is None and not is_reserved(key)


label_keys = st.one_of(
    st.sampled_from([k for k in TRICKY if _valid_key(k)]),
    st.builds(
        lambda first, rest: first + rest,
        st.characters(categories=("Ll", "Lo")),
        st.text(LABEL_CHARS, max_size=20),
    ),
).filter(_valid_key)
label_values = st.one_of(
    st.sampled_from([v for v in TRICKY if label_value_problem("k", v) is None]),
    st.text(LABEL_CHARS, max_size=30),
).filter(lambda v: label_value_problem("k", v) is None)
topic_ids = st.one_of(
    st.sampled_from([t for t in TRICKY if topic_id_problem(t) is None]),
    st.from_regex(r"[a-z][a-z0-9._~+%-]{2,20}", fullmatch=True),
).filter(lambda t: topic_id_problem(t) is None)


def test_the_tricky_values_are_label_values() -> None:
    """The brief's YAML-typed values that Google's label rules allow are all covered."""
    usable = {v for v in TRICKY if label_value_problem("k", v) is None}
    assert {"1e3", "12e3", "0x1f", "0o17", "1_000", "yes", "off", "null", "2001-12-14"} <= usable


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    topic=topic_ids,
    labels=st.dictionaries(label_keys, label_values, max_size=8),
)
def test_an_exported_topic_validates_back_to_the_same_labels(
    topic: str, labels: dict[str, str]
) -> None:
    live = ObservedTopic.of_shape(
        f"projects/{PROJECT}/topics/{topic}",
        TopicShape(dict(sorted(labels.items())), StoragePolicy.of(["us-east1"])),
        "",
    )
    docs = build_documents({PROJECT: [live]}).documents[PROJECT]
    text = render_documents(docs, "Imported by a test.")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{PROJECT}.yaml"
        path.write_text(text, encoding="utf-8")
        result = validate_paths([path])
    problems = [d.render() for d in result.diagnostics.items if d.is_error]
    assert not problems, text
    (desired,) = result.desired.topics
    assert (desired.project, desired.topic) == (PROJECT, topic)
    assert dict(desired.labels) == labels
    assert desired.storage.regions == ("us-east1",)


# Any text at all (no lone surrogates: not UTF-8; few brackets: the loader refuses 64
# open ones before parsing, even in strings).
any_text = st.one_of(
    st.sampled_from(TRICKY),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=30),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(any_text, min_size=1, max_size=6))
def test_every_string_the_writer_emits_reads_back_as_that_string(strings: list[str]) -> None:
    doc = {"list": strings, "map": {s: s for s in strings}}
    text = dump_all([doc])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doc.yaml"
        path.write_text(text, encoding="utf-8")
        (read,) = load_documents(path)
    assert read.data == doc, text
    assert not read.problems, text  # no `yes:` key left unquoted


def test_yaml_typed_values_are_written_quoted() -> None:
    text = dump_all([{"labels": {"a": "1e3", "b": "0o17", "c": "y", "d": "-.nan", "e": "x1"}}])
    assert "a: '1e3'" in text and "b: '0o17'" in text and "c: 'y'" in text
    assert "d: '-.nan'" in text
    assert "e: x1" in text  # text everywhere: left plain
