"""What apply reports while it runs: values, not output. The executor, the guard and
the Ctrl-C handler send events to a sink; `reconcile apply` renders them (a line per
topic, or a bar on a terminal: reconciler/commands/apply_view.py).

    TopicFinished(result)   one topic is done: applied, failed or not attempted
    Notice(text)            something the user should know now (waiting for the org
                            policy to propagate, the first Ctrl-C)
    EventSink               Callable[[ApplyEvent], None]; called from worker threads
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reconciler.apply.result import TopicResult


@dataclass(frozen=True)
class TopicFinished:
    result: TopicResult


@dataclass(frozen=True)
class Notice:
    text: str


ApplyEvent = TopicFinished | Notice
EventSink = Callable[[ApplyEvent], None]


def ignore(event: ApplyEvent) -> None:
    """The sink of a run nobody watches (tests, benchmarks)."""
