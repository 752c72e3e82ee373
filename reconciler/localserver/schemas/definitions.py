"""A schema definition of either type (`Schema.Type`: PROTOCOL_BUFFER 1, AVRO 2),
compiled once and kept: the same text is compiled again only after it left the
bounded cache, so a Publish checks its messages against compiled revisions.

The limits on a definition (its size, how deeply its types nest, how many it
declares) are `bounds`'; the schema overview's others are here: at most 10,000
schemas a project and 20 revisions a schema."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from reconciler.localserver.schemas import bounds
from reconciler.localserver.schemas.avro import AvroDefinition
from reconciler.localserver.schemas.protobuf import ProtobufDefinition

PROTOCOL_BUFFER = 1
AVRO = 2
TYPE_NAMES = {PROTOCOL_BUFFER: "PROTOCOL_BUFFER", AVRO: "AVRO"}
JSON = 1
BINARY = 2
ENCODING_NAMES = {JSON: "JSON", BINARY: "BINARY"}

MAX_SCHEMAS_PER_PROJECT = 10_000
MAX_REVISIONS = 20
# The compiled definitions kept: the last ones used, up to this many and this many
# characters of definition text between them (a compiled Avro definition takes about
# 25 times its text in memory: a client sending many large definitions cannot grow
# the cache past about 100 MB).
CACHE_ENTRIES = 256
CACHE_BYTES = 4_000_000


class Compiled(Protocol):
    """What the service needs of a compiled definition."""

    def check_json(self, data: bytes) -> str | None: ...
    def check_binary(self, data: bytes) -> str | None: ...
    def incompatibility(self, other: Any) -> str | None: ...


class DefinitionError(ValueError):
    """A definition that does not parse (the reason), or of an unknown type."""


def definition_problem(type_: int, text: str) -> str | None:
    """Why `text` is no valid definition of `type_` (the limits included), or None.
    An unknown type is the caller's to refuse first."""
    try:
        bounds.check_size(text)
        compile_definition(type_, text)
    except ValueError as exc:  # DefinitionError, bounds.OverLimit
        return str(exc)
    return None


class _Cache:
    """The definitions last compiled, bounded by count and by text size: each its
    compiled form, or the reason it does not compile (so that the same bad
    definition sent again does not run protoc again)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[int, str], Compiled | DefinitionError] = OrderedDict()
        self._bytes = 0

    def get(self, key: tuple[int, str]) -> Compiled | DefinitionError | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: tuple[int, str], compiled: Compiled | DefinitionError) -> None:
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = compiled
            self._bytes += len(key[1])
            while len(self._entries) > CACHE_ENTRIES or self._bytes > CACHE_BYTES:
                (_, old), _ = self._entries.popitem(last=False)
                self._bytes -= len(old)


_cache = _Cache()


def compile_definition(type_: int, text: str) -> Compiled:
    """The compiled definition; DefinitionError with the reason when it does not
    compile. Kept for the definitions last used (`CACHE_ENTRIES`, `CACHE_BYTES`)."""
    key = (type_, text)
    found = _cache.get(key)
    if isinstance(found, DefinitionError):
        raise DefinitionError(str(found))
    if found is not None:
        return found
    compiled: Compiled
    try:
        if type_ == AVRO:
            compiled = AvroDefinition(text)
        elif type_ == PROTOCOL_BUFFER:
            compiled = ProtobufDefinition(text)
        else:
            raise DefinitionError(f"unknown schema type {type_}")
    except ValueError as exc:
        _cache.put(key, DefinitionError(str(exc)))
        raise DefinitionError(str(exc)) from None
    _cache.put(key, compiled)
    return compiled


def incompatibility(type_: int, new: str, old_type: int, old: str) -> str | None:
    """Why a revision (`type_`, `new`) may not follow one (`old_type`, `old`), or None."""
    if type_ != old_type:
        return (
            f"the schema type cannot change ({TYPE_NAMES.get(old_type, old_type)} to "
            f"{TYPE_NAMES.get(type_, type_)})"
        )
    compiled = compile_definition(type_, new)
    try:
        stored = compile_definition(old_type, old)
    except DefinitionError as exc:
        return f"the stored revision does not compile on this server ({exc})"
    return compiled.incompatibility(stored)


MessageCheck = Callable[[bytes], "str | None"]


def message_check(type_: int, text: str, encoding: int) -> MessageCheck:
    """The check of messages in `encoding` against a definition: None for a message
    of it, else why not. A stored definition this server no longer compiles (kept
    from before a limit) refuses every message, saying so."""
    try:
        compiled = compile_definition(type_, text)
    except DefinitionError as exc:
        reason = f"the revision's definition does not compile on this server ({exc})"
        return lambda data: reason
    return compiled.check_json if encoding == JSON else compiled.check_binary


def check_message(type_: int, text: str, data: bytes, encoding: int) -> str | None:
    """Why `data` is not a message of the definition in `encoding`, or None."""
    return message_check(type_, text, encoding)(data)


def failure_reason(type_: int, encoding: int) -> str:
    """The ErrorInfo reason the service gives a message that fails validation
    (INVALID_JSON_AVRO_MESSAGE and INVALID_BINARY_AVRO_MESSAGE are the service's,
    seen in public reports; the Protocol Buffer ones follow their pattern)."""
    kind = "AVRO" if type_ == AVRO else "PROTOBUF"
    return f"INVALID_{ENCODING_NAMES.get(encoding, 'BINARY')}_{kind}_MESSAGE"
