"""Publish flow control with the official client's settings and errors.

`types.PublishFlowControl(message_limit, byte_limit, limit_exceeded_behavior)`:
IGNORE admits everything, ERROR raises `FlowControlLimitError`, BLOCK waits for
published messages to free room. Unlike the official controller, closing the
publisher wakes blocked publishers (their messages were never sent).

Every value the official controller takes is taken, compared as it compares them
(`==`, so "block" is BLOCK): any limits (0 or less refuses or blocks every message,
as there), and a behavior that is none of the three, which works until a message
would go over a limit; then publish raises ValueError naming it (the official
controller: an `assert`).
"""

from __future__ import annotations

import threading
from typing import Any

from google.cloud.pubsub_v1 import types
from google.cloud.pubsub_v1.publisher.exceptions import FlowControlLimitError


class GateClosed(Exception):
    """The publisher closed while this publish waited for room."""


class FlowGate:
    def __init__(self, settings: Any = None) -> None:
        self.settings = settings or types.PublishFlowControl()
        self._behavior = self.settings.limit_exceeded_behavior
        self._ignore = self._behavior == types.LimitExceededBehavior.IGNORE
        self._messages = 0
        self._bytes = 0
        self._cond = threading.Condition()
        self._closed = False
        self.waiting = 0  # publishers blocked now

    def _load(self, messages: int, nbytes: int) -> str:
        s = self.settings
        return f"messages: {messages} / {s.message_limit}, bytes: {nbytes} / {s.byte_limit}"

    def acquire(self, size: int) -> None:
        """Admit one message of `size` bytes (its serialized size)."""
        if self._ignore:
            return
        s = self.settings
        with self._cond:
            if self._fits(size):
                self._take(size)
                return
            if self._behavior == types.LimitExceededBehavior.ERROR:
                load = self._load(self._messages + 1, self._bytes + size)
                raise FlowControlLimitError(f"Flow control limits would be exceeded - {load}.")
            if self._behavior != types.LimitExceededBehavior.BLOCK:
                raise ValueError(
                    f"PublishFlowControl.limit_exceeded_behavior {self._behavior!r} is none "
                    "of 'ignore', 'block' and 'error': a message over the flow control "
                    f"limits can be neither published nor refused - {self._load(1, size)}."
                )
            if size > s.byte_limit or s.message_limit < 1:
                raise FlowControlLimitError(
                    "Total flow control limits too low for the message, would block "
                    f"forever - {self._load(1, size)}."
                )
            self.waiting += 1
            try:
                while not self._fits(size):
                    if self._closed:
                        raise GateClosed()
                    self._cond.wait()
            finally:
                self.waiting -= 1
            self._take(size)

    def _fits(self, size: int) -> bool:
        s = self.settings
        return bool(self._messages + 1 <= s.message_limit and self._bytes + size <= s.byte_limit)

    def _take(self, size: int) -> None:
        self._messages += 1
        self._bytes += size

    def release(self, messages: int, nbytes: int) -> None:
        if self._ignore:
            return
        with self._cond:
            self._messages = max(0, self._messages - messages)
            self._bytes = max(0, self._bytes - nbytes)
            self._cond.notify_all()

    def close(self) -> None:
        """Wake every blocked publisher with GateClosed."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
