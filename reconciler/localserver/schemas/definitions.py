"""A schema definition of either type (`Schema.Type`: PROTOCOL_BUFFER 1, AVRO 2),
compiled once and kept: the same text is compiled again only after it left the
bounded cache, so a Publish checks its messages against compiled revisions.

The limits are the schema overview's: a definition of at most 300 KB (read as
300,000 bytes: Pub/Sub's published sizes are decimal where they were measured, as
the 10 MB request), at most 10,000 schemas a project and 20 revisions a schema."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Protocol

from reconciler.localserver.schemas.avro import AvroDefinition
from reconciler.localserver.schemas.protobuf import ProtobufDefinition

PROTOCOL_BUFFER = 1
AVRO = 2
TYPE_NAMES = {PROTOCOL_BUFFER: "PROTOCOL_BUFFER", AVRO: "AVRO"}
JSON = 1
BINARY = 2
ENCODING_NAMES = {JSON: "JSON", BINARY: "BINARY"}

MAX_DEFINITION_BYTES = 300_000
MAX_SCHEMAS_PER_PROJECT = 10_000
MAX_REVISIONS = 20


class Compiled(Protocol):
    """What the service needs of a compiled definition."""

    def check_json(self, data: bytes) -> str | None: ...
    def check_binary(self, data: bytes) -> str | None: ...
    def incompatibility(self, other: Any) -> str | None: ...


class DefinitionError(ValueError):
    """A definition that does not parse (the reason), or of an unknown type."""


def definition_problem(type_: int, text: str) -> str | None:
    """Why `text` is no valid definition of `type_` (the size limit included), or
    None. An unknown type is the caller's to refuse first."""
    size = len(text.encode("utf-8"))
    if size > MAX_DEFINITION_BYTES:
        return (
            f"the definition is {size:,} bytes; the maximum is {MAX_DEFINITION_BYTES:,} "
            "bytes (300 KB)"
        )
    try:
        compile_definition(type_, text)
    except DefinitionError as exc:
        return str(exc)
    return None


@lru_cache(maxsize=256)
def compile_definition(type_: int, text: str) -> Compiled:
    """The compiled definition; DefinitionError with the reason when it does not
    compile. Kept for the last 256 definitions used."""
    try:
        if type_ == AVRO:
            return AvroDefinition(text)
        if type_ == PROTOCOL_BUFFER:
            return ProtobufDefinition(text)
    except ValueError as exc:
        raise DefinitionError(str(exc)) from None
    raise DefinitionError(f"unknown schema type {type_}")


def incompatibility(type_: int, new: str, old_type: int, old: str) -> str | None:
    """Why a revision (`type_`, `new`) may not follow one (`old_type`, `old`), or None."""
    if type_ != old_type:
        return (
            f"the schema type cannot change ({TYPE_NAMES.get(old_type, old_type)} to "
            f"{TYPE_NAMES.get(type_, type_)})"
        )
    compiled = compile_definition(type_, new)
    return compiled.incompatibility(compile_definition(old_type, old))


def check_message(type_: int, text: str, data: bytes, encoding: int) -> str | None:
    """Why `data` is not a message of the definition in `encoding`, or None."""
    compiled = compile_definition(type_, text)
    return compiled.check_json(data) if encoding == JSON else compiled.check_binary(data)


def failure_reason(type_: int, encoding: int) -> str:
    """The ErrorInfo reason the service gives a message that fails validation
    (INVALID_JSON_AVRO_MESSAGE and INVALID_BINARY_AVRO_MESSAGE are the service's,
    seen in public reports; the Protocol Buffer ones follow their pattern)."""
    kind = "AVRO" if type_ == AVRO else "PROTOBUF"
    return f"INVALID_{ENCODING_NAMES.get(encoding, 'BINARY')}_{kind}_MESSAGE"
