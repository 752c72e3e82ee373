"""`google.pubsub.v1.SchemaService`: schemas and their revisions (Avro and Protocol
Buffer), validated as the service does, stored and journaled by the server state
(`schemas.registry`; deleting a schema or a revision also rewrites the topics that
name it, in the same journal write).

Codes and words follow Google's emulator where it answers (measured with the real
client: "Schema already exists", "Invalid schema type", "Could not parse schema
definition", "Schema not found", "Schema revision not found", "Revision not found",
"Missing revision ID", "Cannot delete last revision. Please use DeleteSchema.",
"Already at maximum number of schema revisions", "No encoding provided.", "Could not
parse JSON Avro message"), add the reason where the emulator gives none, and follow
the proto's comments for views: GetSchema answers every field unless asked for
BASIC; ListSchemas and ListSchemaRevisions answer BASIC (no definition) unless
asked for FULL. A revision that breaks compatibility with a stored one is refused
with the service's sentence (a public report quotes it). CreateSchema obeys the
organization's custom constraints on `pubsub.googleapis.com/Schema` (CREATE, judged
on the schema's first revision); CommitSchema and RollbackSchema do not: Google's
page on custom constraints for Pub/Sub does not say whether a new revision counts as
an UPDATE of the schema (docs/custom-constraints.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from reconciler.localserver.api import protos
from reconciler.localserver.api.names import parse_project, parse_schema
from reconciler.localserver.api.paging import decode_token, encode_token, page_size
from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import (
    ServiceError,
    already_exists,
    invalid,
    not_found,
)
from reconciler.localserver.pubsub.constraints import check_call
from reconciler.localserver.pubsub.state import ServerState
from reconciler.localserver.schemas import definitions as d
from reconciler.localserver.schemas.registry import new_revision
from reconciler.orgpolicy.custom import SCHEMA

BASIC = 1
FULL = 2


def _resource(field: str) -> Callable[[Any], str]:
    return lambda request: str(getattr(request, field))


def _view(revision: Any, view: int, default: int) -> Any:
    """The revision as `view` (or `default` when unset) shows it: BASIC leaves the
    definition out (Google's emulator keeps the revision ID and time)."""
    if (view or default) != BASIC:
        return revision
    out = protos.Schema()
    out.CopyFrom(revision)
    out.ClearField("definition")
    return out


def _check_definition(schema: Any) -> None:
    if schema.type_ not in d.TYPE_NAMES:
        raise invalid("Invalid schema type")
    problem = d.definition_problem(schema.type_, schema.definition)
    if problem is not None:
        raise invalid(f"Could not parse schema definition: {problem}")


class SchemaService:
    """Handlers; every one runs on a worker thread and reads/writes `ServerState`."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.registry = state.schemas

    def rpcs(self) -> list[Rpc]:
        def rpc(name: str, handler: Any, request: Any, response: Any, field: str) -> Rpc:
            return Rpc(name, handler, request, response, _resource(field))

        return [
            rpc("CreateSchema", self.create_schema, protos.CreateSchemaRequest, protos.Schema,
                "parent"),
            rpc("GetSchema", self.get_schema, protos.GetSchemaRequest, protos.Schema, "name"),
            rpc("ListSchemas", self.list_schemas, protos.ListSchemasRequest,
                protos.ListSchemasResponse, "parent"),
            rpc("ListSchemaRevisions", self.list_schema_revisions,
                protos.ListSchemaRevisionsRequest, protos.ListSchemaRevisionsResponse, "name"),
            rpc("CommitSchema", self.commit_schema, protos.CommitSchemaRequest, protos.Schema,
                "name"),
            rpc("RollbackSchema", self.rollback_schema, protos.RollbackSchemaRequest,
                protos.Schema, "name"),
            rpc("DeleteSchemaRevision", self.delete_schema_revision,
                protos.DeleteSchemaRevisionRequest, protos.Schema, "name"),
            rpc("DeleteSchema", self.delete_schema, protos.DeleteSchemaRequest, protos.Empty,
                "name"),
            rpc("ValidateSchema", self.validate_schema, protos.ValidateSchemaRequest,
                protos.ValidateSchemaResponse, "parent"),
            rpc("ValidateMessage", self.validate_message, protos.ValidateMessageRequest,
                protos.ValidateMessageResponse, "parent"),
        ]

    # ----------------------------------------------------------------- reading

    def _revisions(self, name: str) -> list[Any]:
        revisions = self.registry.revisions(name)
        if revisions is None:
            raise not_found("Schema not found")
        return revisions

    def _revision(self, name: str) -> Any:
        """The revision "projects/P/schemas/S@R" names, or the schema's newest."""
        project, schema_id, revision_id = parse_schema(name, revision=True)
        revisions = self._revisions(f"projects/{project}/schemas/{schema_id}")
        if not revision_id:
            return revisions[-1]
        for revision in revisions:
            if revision.revision_id == revision_id:
                return revision
        raise not_found("Schema revision not found")

    def get_schema(self, request: Any, call: CallInfo) -> Any:
        return _view(self._revision(request.name), request.view, FULL)

    def list_schemas(self, request: Any, call: CallInfo) -> Any:
        project = parse_project(request.parent)
        size = page_size(request.page_size)
        after = decode_token(request.page_token, f"projects/{project}/schemas/")
        schemas, last = self.registry.list_page(project, after, size)
        response = protos.ListSchemasResponse(
            schemas=[_view(revisions[-1], request.view, BASIC) for revisions in schemas]
        )
        if last:
            response.next_page_token = encode_token(last)
        return response

    def list_schema_revisions(self, request: Any, call: CallInfo) -> Any:
        project, schema_id, _ = parse_schema(request.name)
        name = f"projects/{project}/schemas/{schema_id}"
        revisions = self._revisions(name)
        size = page_size(request.page_size)
        after = decode_token(request.page_token, f"{name}@")
        ids = [f"{name}@{r.revision_id}" for r in revisions]
        start = ids.index(after) + 1 if after in ids else 0
        if after and after not in ids:
            raise invalid(f"Invalid page token {request.page_token!r}.")
        page = revisions[start : start + size]
        response = protos.ListSchemaRevisionsResponse(
            schemas=[_view(r, request.view, BASIC) for r in page]
        )
        if start + size < len(revisions):
            response.next_page_token = encode_token(ids[start + size - 1])
        return response

    # ----------------------------------------------------------------- changes

    def create_schema(self, request: Any, call: CallInfo) -> Any:
        name = f"{request.parent}/schemas/{request.schema_id}"
        project, _, _ = parse_schema(name)
        schema = request.schema
        _check_definition(schema)

        def create(current: list[Any] | None) -> list[Any]:
            if current is not None:
                raise already_exists("Schema already exists")
            if self.registry.count(project) >= d.MAX_SCHEMAS_PER_PROJECT:
                raise ServiceError(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"Already at maximum number of schemas ({d.MAX_SCHEMAS_PER_PROJECT:,}) "
                    f"in projects/{project}",
                )
            first = new_revision(name, schema.type_, schema.definition, set())
            # Under the write lock: the org's constraints are those in force now.
            check_call(self.state.policy_store, project, SCHEMA, "CREATE", first)
            return [first]

        _, after = self.state.write_schema(name, create)
        assert after is not None
        return after[-1]

    def _append(self, name: str, type_: int, definition: str, check: bool) -> Any:
        """Add a revision to schema `name` (the 20-revision limit; with `check`, the
        compatibility rule against every stored revision, newest first)."""

        def add(current: list[Any] | None) -> list[Any]:
            if current is None:
                raise not_found("Schema not found")
            if len(current) >= d.MAX_REVISIONS:
                raise ServiceError(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    "Already at maximum number of schema revisions",
                )
            if check:
                for old in reversed(current):
                    problem = d.incompatibility(type_, definition, old.type_, old.definition)
                    if problem is not None:
                        raise invalid(
                            "Compatibility checking failed to commit a schema revision for "
                            f'(schema="{name}"). (reason="Revision is incompatible with '
                            f"previous revision: {old.revision_id}. Failed with error: "
                            f'{problem}")'
                        )
            taken = {r.revision_id for r in current}
            return [*current, new_revision(name, type_, definition, taken)]

        _, after = self.state.write_schema(name, add)
        assert after is not None
        return after[-1]

    def commit_schema(self, request: Any, call: CallInfo) -> Any:
        parse_schema(request.name)
        _check_definition(request.schema)
        return self._append(request.name, request.schema.type_, request.schema.definition, True)

    def rollback_schema(self, request: Any, call: CallInfo) -> Any:
        parse_schema(request.name)
        if not request.revision_id:
            raise invalid("Missing revision ID")
        revisions = self._revisions(request.name)
        source = next((r for r in revisions if r.revision_id == request.revision_id), None)
        if source is None:
            raise not_found("Revision not found")
        return self._append(request.name, source.type_, source.definition, False)

    def delete_schema_revision(self, request: Any, call: CallInfo) -> Any:
        project, schema_id, revision_id = parse_schema(request.name, revision=True)
        if not revision_id:
            raise not_found(
                "Schema revision not found: name the revision as "
                "projects/PROJECT_ID/schemas/SCHEMA_ID@REVISION_ID (the revision_id field "
                "is deprecated and not read)"
            )
        name = f"projects/{project}/schemas/{schema_id}"
        deleted: list[Any] = []

        def remove(current: list[Any] | None) -> list[Any]:
            if current is None:
                raise not_found("Schema not found")
            kept = [r for r in current if r.revision_id != revision_id]
            if len(kept) == len(current):
                raise not_found("Schema revision not found")
            if not kept:
                raise invalid("Cannot delete last revision. Please use DeleteSchema.")
            deleted.extend(r for r in current if r.revision_id == revision_id)
            return kept

        self.state.write_schema(name, remove)
        return deleted[0]

    def delete_schema(self, request: Any, call: CallInfo) -> Any:
        parse_schema(request.name)
        before, _ = self.state.write_schema(request.name, lambda current: None)
        if before is None:
            raise not_found("Schema not found")
        return protos.Empty()

    # ------------------------------------------------------------- validation

    def validate_schema(self, request: Any, call: CallInfo) -> Any:
        parse_project(request.parent)
        _check_definition(request.schema)
        return protos.ValidateSchemaResponse()

    def validate_message(self, request: Any, call: CallInfo) -> Any:
        parse_project(request.parent)
        if request.WhichOneof("schema_spec") == "name":
            schema = self._revision(request.name)
        else:
            schema = request.schema
            _check_definition(schema)
        if request.encoding not in d.ENCODING_NAMES:
            raise invalid("No encoding provided.")
        problem = d.check_message(schema.type_, schema.definition, request.message,
                                  request.encoding)
        if problem is not None:
            kind = "Avro" if schema.type_ == d.AVRO else "Protocol Buffer"
            encoding = "JSON" if request.encoding == d.JSON else "binary"
            raise invalid(f"Could not parse {encoding} {kind} message: {problem}")
        return protos.ValidateMessageResponse()
