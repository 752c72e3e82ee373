"""Large trees are read without recording positions; a diagnostic recovers them from
its file. What a user sees must not change: the same `file:line:col`, the same value
as written, whatever document of a many-document file is at fault."""

from __future__ import annotations

from pathlib import Path

import pytest

import reconciler.yamlio as yamlio
from reconciler.messagepaths import FOUND_ON_EVERY_TOPIC
from reconciler.yamlio import load_documents

TOPIC = """\
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata:
  project: acme-payments
  name: topic-{i}
spec:
  labels: {{team: payments}}
"""
LINES_PER_TOPIC = TOPIC.count("\n") + 1  # the `---` separator


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Each file yamlio reads again for positions, in order (its `_reread`, counted)."""
    seen: list[Path] = []
    real = yamlio._reread

    def counting(p: Path, display: str) -> list[yamlio.Document]:
        seen.append(p)
        return real(p, display)

    monkeypatch.setattr(yamlio, "_reread", counting)
    return seen


def many_topics(count: int, broken: dict[int, str]) -> str:
    """`count` topics; document i's labels line replaced by broken[i]."""
    docs = []
    for i in range(count):
        text = TOPIC.format(i=i)
        if i in broken:
            text = text.replace("  labels: {team: payments}\n", broken[i])
        docs.append(text)
    return "---\n".join(docs)


def test_diagnostics_deep_in_a_large_file_keep_their_line_and_column(
    run_cli, tmp_path: Path
) -> None:
    broken = {
        3: "  labelz: {team: payments}\n",
        57: "  labels:\n    yes-no: on\n",
    }
    (tmp_path / "topics.yaml").write_text(many_topics(80, broken))
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    path = tmp_path / "topics.yaml"
    line_3 = 3 * LINES_PER_TOPIC + 7  # the labels line of document 3
    assert f"{path}:{line_3}:3: error[unknown-field]: unknown field 'labelz'" in result.stdout
    line_57 = 57 * LINES_PER_TOPIC + 8  # `yes-no: on`, one line below `labels:`
    assert (
        f"{path}:{line_57}:13: error[wrong-type]: spec > labels > yes-no must be text, "
        "not boolean on; quote it: 'on'"
    ) in result.stdout


def test_a_semantic_check_after_loading_still_points_at_the_value(
    run_cli, tmp_path: Path
) -> None:
    """The checks run after every document's data was released: they re-read it."""
    broken = {41: "  labels: {Team: payments}\n"}
    (tmp_path / "topics.yaml").write_text(many_topics(50, broken))
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    line = 41 * LINES_PER_TOPIC + 7
    assert f"{tmp_path / 'topics.yaml'}:{line}:" in result.stdout
    assert "error[label-key]" in result.stdout


def test_positions_are_recovered_once_per_file(
    tmp_path: Path, reads: list[Path]
) -> None:
    path = tmp_path / "topics.yaml"
    path.write_text(many_topics(30, {}))
    docs = load_documents(path, positions=False)
    marks = [doc.key_mark(("metadata", "name")) for doc in docs]
    assert reads == [path]
    assert [m.line for m in marks] == [i * LINES_PER_TOPIC + 5 for i in range(30)]
    assert {m.col for m in marks} == {3}


def test_released_data_comes_back_for_a_message_and_data_never_reads(
    tmp_path: Path, reads: list[Path]
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(many_topics(3, {}))
    docs = load_documents(path, positions=False)
    for doc in docs:
        doc.release()
    assert [doc.data for doc in docs] == [None, None, None]
    assert reads == []  # `data` is an attribute: reading it reads no file
    assert docs[2].data_for_message()["metadata"]["name"] == "topic-2"
    assert docs[0].data_for_message()["metadata"]["name"] == "topic-0"
    assert reads == [path]  # once per file, with the positions


def test_a_file_that_vanished_before_a_message_gives_the_document_start(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(many_topics(3, {}))
    docs = load_documents(path, positions=False)
    path.unlink()
    assert docs[1].mark_for(("spec", "labels", "team")) == docs[1].start
    assert docs[1].start.line == LINES_PER_TOPIC + 1


SPEC_MEMBERS = """apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {{project: acme-payments, name: topic-{i}}}
base: &base
  messageStoragePolicy:
    allowedPersistenceRegions: [europe-west1]
spec:
  <<: *base
  labels:
    team: payments
  messageTransforms:
  - javascriptUdf: {{functionName: f, code: "function f(m, d) {{ return m; }}"}}
{extra}"""


@pytest.mark.parametrize("prefer_key", [False, True])
def test_a_finding_at_a_spec_member_reads_the_file_no_second_time(
    tmp_path: Path, reads: list[Path], prefer_key: bool
) -> None:
    """Where each member of `spec` sits is kept from the position-less read (an AI
    Inference transform's warning is on every such topic): the same marks the full
    read gives, merged members included, and no second read for them."""
    extras = ["", "  tags: {env: prod}\n", "\n\n  publishers: {regions: [europe-west1]}\n"]
    text = "---\n".join(SPEC_MEMBERS.format(i=i, extra=extras[i % 3]) for i in range(7))
    path = tmp_path / "t.yaml"
    path.write_text(text)
    full = load_documents(path)
    names = ("messageStoragePolicy", "labels", "messageTransforms", "tags", "publishers")
    docs = load_documents(path, positions=False, layout_of=frozenset(names))
    members = [("spec", key) for key in names]
    seen = 0
    for quick, whole in zip(docs, full, strict=True):
        for member in members:
            if member[1] in whole.data["spec"]:
                seen += 1
                assert quick.mark_for(member, prefer_key=prefer_key) == whole.mark_for(
                    member, prefer_key=prefer_key)
    assert seen == 7 * 3 + 2 + 2
    assert reads == []
    assert docs[3].mark_for(("spec", "labels", "team")) == full[3].mark_for(
        ("spec", "labels", "team"))
    assert reads == [path]  # a deeper path: the file once, with positions
    # As validate reads a tree: only the transforms' (and a source's) place is kept.
    reads.clear()
    docs = load_documents(path, positions=False, layout_of=FOUND_ON_EVERY_TOPIC)
    assert docs[5].mark_for(("spec", "messageTransforms")) == full[5].mark_for(
        ("spec", "messageTransforms"))
    assert reads == []
    assert docs[5].mark_for(("spec", "labels")) == full[5].mark_for(("spec", "labels"))
    assert reads == [path]


def test_documents_laid_out_alike_share_one_layout(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(many_topics(40, {7: "  labels:\n    team: payments\n"}))
    # kept only for the documents whose spec has one of the members named
    assert {doc.layout for doc in load_documents(path, positions=False)} == {None}
    docs = load_documents(path, positions=False, layout_of=frozenset({"labels"}))
    layouts = {id(doc.layout) for doc in docs}
    assert len(layouts) == 2  # document 7 writes its labels over two lines
    assert docs[7].mark_for(("spec", "labels")).line == 7 * LINES_PER_TOPIC + 8
    assert docs[8].mark_for(("spec", "labels")).line == 8 * LINES_PER_TOPIC + 7 + 1
