"""Per-topic lines when piped, a bar on a terminal, and the closing summary."""

from __future__ import annotations

import io
import json

from reconciler.apply.events import TopicFinished
from reconciler.apply.outcome import finished
from reconciler.apply.result import TopicResult, TopicResults
from reconciler.commands.apply_view import BarProgress, LineProgress, progress_for, summary_text
from reconciler.commands.output import Writer
from reconciler.errors import EXIT_TERMINATED


def results() -> TopicResults:
    return TopicResults(
        results=[
            TopicResult("projects/p/topics/a", "create", "applied", "CreateTopic", attempts=1),
            TopicResult(
                "projects/p/topics/b", "update", "applied", "UpdateTopic", ["labels"], attempts=3
            ),
            TopicResult(
                "projects/p/topics/c",
                "update",
                "failed",
                "UpdateTopic",
                ["labels"],
                error="PERMISSION_DENIED: permission denied to update topic",
                attempts=1,
            ),
            TopicResult("projects/p/topics/d", "delete", "not-attempted", "DeleteTopic"),
        ],
        unchanged=2,
        interrupted=True,
    )


def test_summary_lists_applied_failed_and_not_attempted() -> None:
    text = summary_text(results())
    assert text.startswith(
        "Apply interrupted: 2 applied (1 created, 1 updated, 0 deleted), 1 failed, "
        "1 not attempted, 2 unchanged."
    )
    assert "  projects/p/topics/c (update): PERMISSION_DENIED: permission denied" in text
    assert "Not attempted:\n  projects/p/topics/d (delete)" in text


def test_json_carries_every_result() -> None:
    data = json.loads(finished(results(), "sha256:" + "0" * 64, EXIT_TERMINATED).dumps())
    assert (data["outcome"], data["exit_code"]) == ("interrupted", 143)
    assert data["summary"] == {
        "applied": 2,
        "failed": 1,
        "not-attempted": 1,
        "unchanged": 2,
        "interrupted": True,
    }
    assert [r["status"] for r in data["results"]] == [
        "applied",
        "applied",
        "failed",
        "not-attempted",
    ]


def test_piped_output_is_one_line_per_topic() -> None:
    out = io.StringIO()
    progress = progress_for(Writer(out), 50, is_tty=False)
    assert isinstance(progress, LineProgress)
    for r in results().results:
        progress(TopicFinished(r))
    lines = out.getvalue().splitlines()
    assert lines == [
        "projects/p/topics/a: created",
        "projects/p/topics/b: updated (labels) after 3 attempts",
        "projects/p/topics/c: update FAILED: PERMISSION_DENIED: permission denied to update topic",
        "projects/p/topics/d: delete not attempted",
    ]
    assert "\r" not in out.getvalue()


def test_a_terminal_gets_a_bar_for_more_than_a_handful() -> None:
    out = io.StringIO()
    assert isinstance(progress_for(Writer(out), 3, is_tty=True), LineProgress)
    bar = progress_for(Writer(out), 40, is_tty=True)
    assert isinstance(bar, BarProgress)
    for r in results().results:
        bar(TopicFinished(r))
    bar.close()
    text = out.getvalue()
    assert "4/40, 1 failed" in text
    assert "projects/p/topics/c: update FAILED" in text  # failures printed above the bar
