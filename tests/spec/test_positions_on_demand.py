"""Large trees are read without recording positions; a diagnostic recovers them from
its file. What a user sees must not change: the same `file:line:col`, the same value
as written, whatever document of a many-document file is at fault."""

from __future__ import annotations

from pathlib import Path

import pytest

import reconciler.yamlio as yamlio
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
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "topics.yaml"
    path.write_text(many_topics(30, {}))
    reads: list[Path] = []
    real = yamlio._reread

    def counting(p: Path, display: str) -> list[yamlio.Document]:
        reads.append(p)
        return real(p, display)

    monkeypatch.setattr(yamlio, "_reread", counting)
    docs = load_documents(path, positions=False)
    marks = [doc.key_mark(("metadata", "name")) for doc in docs]
    assert reads == [path]
    assert [m.line for m in marks] == [i * LINES_PER_TOPIC + 5 for i in range(30)]
    assert {m.col for m in marks} == {3}


def test_released_data_comes_back_for_a_message_and_data_never_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(many_topics(3, {}))
    reads: list[Path] = []
    real = yamlio._reread

    def counting(p: Path, display: str) -> list[yamlio.Document]:
        reads.append(p)
        return real(p, display)

    monkeypatch.setattr(yamlio, "_reread", counting)
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
    assert docs[1].mark_for(("spec", "labels")) == docs[1].start
    assert docs[1].start.line == LINES_PER_TOPIC + 1
