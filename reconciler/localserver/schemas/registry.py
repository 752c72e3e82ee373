"""The schemas a server holds: each schema's revisions, oldest first (the newest is
the schema's current one), in memory under the server state's locks and journaled
through its journal as one record per schema (`PUT_SCHEMA`: every revision, so that
a replay or a snapshot puts the whole schema back; `DELETE_SCHEMA`).

A change is decided and made durable under the state's write lock before memory
changes (`commit`), as every admin change of the server; stored revisions are
never mutated, so a reader may use what it got after the lock is let go."""

from __future__ import annotations

import bisect
import secrets
import threading
import time
from collections.abc import Iterator
from typing import Any, Protocol

from reconciler.localserver.api import protos
from reconciler.localserver.api.paging import page_after
from reconciler.localserver.persistence import journal as j
from reconciler.names import project_of

DELETED_REVISION = "_deleted-schema-revision_"


class State(Protocol):
    """What the registry needs of the server state (`pubsub.state.ServerState`)."""

    wlock: threading.RLock
    lock: threading.RLock

    def commit(self, *records: j.Record) -> None: ...
    def maybe_compact(self) -> None: ...
    def forget_iam_policy(self, name: str) -> None: ...


def encode(revisions: list[Any]) -> bytes:
    """A PUT_SCHEMA record's value: the revisions as a ListSchemaRevisionsResponse."""
    return bytes(protos.ListSchemaRevisionsResponse(schemas=revisions).SerializeToString())


def new_revision(name: str, type_: int, definition: str, taken: set[str]) -> Any:
    """A revision of schema `name` with a fresh ID: eight hex digits, as the
    service's IDs read (`c7cfa2a8` in the API reference), unused in `taken`."""
    revision_id = secrets.token_hex(4)
    while revision_id in taken:
        revision_id = secrets.token_hex(4)
    revision = protos.Schema(
        name=name, type_=type_, definition=definition, revision_id=revision_id
    )
    revision.revision_create_time.FromNanoseconds(time.time_ns())
    return revision


class SchemaRegistry:
    """Owned by the server state, under its locks (`wlock` for changes, `lock` for
    memory)."""

    def __init__(self, state: State) -> None:
        self.state = state
        self._schemas: dict[str, list[Any]] = {}
        self._by_project: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ reading

    def revisions(self, name: str) -> list[Any] | None:
        """The schema's revisions, oldest first; None when there is no such schema."""
        with self.state.lock:
            return self._schemas.get(name)

    def count(self, project: str) -> int:
        with self.state.lock:
            return len(self._by_project.get(project, ()))

    def list_page(self, project: str, after: str, limit: int) -> tuple[list[list[Any]], str]:
        """Up to `limit` schemas of `project` (each its revisions) named after `after`,
        in name order, and the last name returned when more follow (else "")."""
        with self.state.lock:
            page, last = page_after(self._by_project.get(project, []), after, limit)
            return [self._schemas[n] for n in page], last

    # ------------------------------------------------------------------ changes

    def put(self, name: str, revisions: list[Any]) -> None:
        """Under `wlock`: make the schema's revisions durable, then visible."""
        self.state.commit((j.PUT_SCHEMA, name, encode(revisions)))
        with self.state.lock:
            self._put(name, revisions)

    def _put(self, name: str, revisions: list[Any]) -> None:
        if name not in self._schemas:
            bisect.insort(self._by_project.setdefault(project_of(name), []), name)
        self._schemas[name] = revisions

    def drop(self, name: str) -> None:
        """Under `lock`, after the DELETE_SCHEMA record is durable (its IAM policy goes
        with it)."""
        if self._schemas.pop(name, None) is None:
            return
        names = self._by_project.get(project_of(name), [])
        i = bisect.bisect_left(names, name)
        if i < len(names) and names[i] == name:
            del names[i]
        self.state.forget_iam_policy(name)

    # ------------------------------------------------------------ journal replay

    def apply(self, record: j.Record) -> None:
        kind, key, value = record
        if kind == j.PUT_SCHEMA:
            self._put(key, list(protos.ListSchemaRevisionsResponse.FromString(value).schemas))
        else:
            self.drop(key)

    def records(self) -> Iterator[j.Record]:
        for name, revisions in self._schemas.items():
            yield j.PUT_SCHEMA, name, encode(revisions)
