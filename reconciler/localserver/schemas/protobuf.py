"""Protocol Buffer schemas as Pub/Sub uses them: `.proto` text compiled by protoc
(grpcio-tools' build), one top-level message type whose messages are checked in the
JSON or binary encoding, and the rule for a new revision.

protoc runs as its own process, so that its diagnostics are captured and nothing it
does can take the server down, and in a place the server controls: a fresh
temporary directory as its working directory, holding only the definition, and
Python in isolated mode (`-I`: neither the working directory nor the server's nor
the user's site directory on the module path, no PYTHON* variables), so that a
`grpc_tools` package lying where the server was started is never imported; bounded
in time (`PROTOC_TIMEOUT_S`) and, where the platform allows, in memory and CPU.

The schema overview says a schema defines exactly one top-level type and may not
import others (refused once compiled: grpcio-tools' protoc finds the well-known
types by itself); the
commit-schema-revision guide says a revision may add or remove optional fields only,
and may not change an existing one. Enum types a field uses must stay the same
(the service's refusals name a missing enum value).

Every walk over a compiled definition is bounded: its shape is checked against
`bounds` before message classes are made (each made after the types its fields
hold, so protobuf's own recursive making goes one level deep), and the comparison
of two revisions counts its depth."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

from reconciler.localserver.schemas import bounds
from reconciler.localserver.schemas.reasons import short

PROTOC_TIMEOUT_S = 60.0  # a safety net for a wedged compiler, not an expectation
PROTOC_MEMORY_BYTES = 1 << 30  # its address space: ~30 MB for a small definition
PROTOC_CPU_S = 30
_FILE = "schema.proto"
# protoc's log lines (absl's), printed before its errors: "WARNING: All log messages
# before absl::InitializeLog() ...", "W0000 00:00:... parser.cc:659] No edition ...".
_LOG_LINE = re.compile(r"WARNING: All log messages before absl|[IWEF]\d{4} \d\d:\d\d:")
# What the protoc process runs (fixed text; the paths come as arguments): its limits
# set, then grpcio-tools' protoc as `python -m grpc_tools.protoc` runs it.
_CHILD = """
import runpy, sys
try:
    import resource
except ImportError:
    resource = None
if resource is not None:
    memory, cpu = int(sys.argv[1]), int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
sys.argv = ["grpc_tools.protoc", *sys.argv[3:]]
runpy.run_module("grpc_tools.protoc", run_name="__main__", alter_sys=True)
"""


def _compile(text: str) -> Any:
    """The FileDescriptorProto of `text`, or ValueError with protoc's diagnostics."""
    with tempfile.TemporaryDirectory(prefix="reconcile-schema-") as tmp:
        Path(tmp, _FILE).write_text(text, encoding="utf-8")
        out = Path(tmp, "schema.pb")
        try:
            done = subprocess.run(
                [
                    sys.executable, "-I", "-c", _CHILD, str(PROTOC_MEMORY_BYTES),
                    str(PROTOC_CPU_S), f"--proto_path={tmp}", f"--descriptor_set_out={out}",
                    _FILE,
                ],
                cwd=tmp,
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=PROTOC_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ValueError(f"protoc did not finish within {PROTOC_TIMEOUT_S:g} s") from None
        if done.returncode != 0 or not out.exists():
            lines = done.stderr.decode("utf-8", "replace").replace(tmp + "/", "").splitlines()
            said = [line.strip() for line in lines if line.strip()]
            errors = [line for line in said if not _LOG_LINE.match(line)] or said
            reason = "; ".join(errors)[:500]
            raise ValueError(reason or f"protoc exited with {done.returncode}")
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    return files.file[0]


class ProtobufDefinition:
    """One compiled `.proto` definition. Raises ValueError (the reason) for one
    that does not compile or that defines other than one top-level message."""

    def __init__(self, text: str) -> None:
        self.file = _compile(text)
        if self.file.dependency:
            raise ValueError(
                "import statements are not supported: a schema defines its types itself "
                f"(imports {', '.join(self.file.dependency)})"
            )
        types = [m.name for m in self.file.message_type] + [e.name for e in self.file.enum_type]
        if len(types) != 1 or not self.file.message_type:
            found = ", ".join(types) or "none"
            raise ValueError(
                "a schema defines exactly one top-level message type, whose messages are "
                f"validated (found {len(types)}: {found})"
            )
        package = f"{self.file.package}." if self.file.package else ""
        self.full_name = package + self.file.message_type[0].name
        self.messages, self.enums = _types(self.file)
        holds = {name: _held(message) for name, message in self.messages.items()}
        bounds.check_shape(
            bounds.Shape(
                depth=bounds.graph_depth(["." + self.full_name], holds),
                types=len(self.messages) + len(self.enums),
            )
        )
        pool = descriptor_pool.DescriptorPool()
        pool.Add(self.file)
        # protobuf makes the classes of a class's message fields first, recursively:
        # made in that order here, each of its calls finds them made.
        for name in _after_what_they_hold(holds):
            message_factory.GetMessageClass(pool.FindMessageTypeByName(name[1:]))
        self.message_class = message_factory.GetMessageClass(
            pool.FindMessageTypeByName(self.full_name)
        )

    # ------------------------------------------------------------------- messages

    def check_json(self, data: bytes) -> str | None:
        message = self.message_class()
        try:
            json_format.Parse(data, message)
        except Exception as exc:
            return f"does not match {self.full_name} ({short(exc)})"
        return _uninitialized(message)

    def check_binary(self, data: bytes) -> str | None:
        message = self.message_class()
        try:
            message.ParseFromString(data)
        except Exception as exc:
            return f"is not a {self.full_name} ({short(exc)})"
        return _uninitialized(message)

    # ------------------------------------------------------------------ revisions

    def incompatibility(self, other: ProtobufDefinition) -> str | None:
        """Why this revision cannot follow `other`, or None."""
        return _Comparison(self, other).messages(
            "." + self.full_name, "." + other.full_name, self.full_name
        )


def _uninitialized(message: Any) -> str | None:
    missing = message.FindInitializationErrors()
    return f"lacks required field(s) {', '.join(missing)}" if missing else None



def _types(file: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every message and enum type of a file by its full name (".pkg.Outer.Inner"),
    nested ones included (read without recursion)."""
    messages: dict[str, Any] = {}
    enums: dict[str, Any] = {}
    prefix = f".{file.package}" if file.package else ""
    todo = [(prefix, message) for message in reversed(file.message_type)]
    while todo:
        scope, message = todo.pop()
        name = f"{scope}.{message.name}"
        messages[name] = message
        for enum in message.enum_type:
            enums[f"{name}.{enum.name}"] = enum
        todo.extend((name, nested) for nested in reversed(message.nested_type))
    for enum in file.enum_type:
        enums[f"{prefix}.{enum.name}"] = enum
    return messages, enums


_MESSAGE_TYPES = (
    descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
    descriptor_pb2.FieldDescriptorProto.TYPE_GROUP,
)


def _held(message: Any) -> list[str]:
    """The full names of the message types a message's fields hold."""
    return [f.type_name for f in message.field if f.type in _MESSAGE_TYPES]


def _after_what_they_hold(holds: dict[str, list[str]]) -> list[str]:
    """Every message type, each after the types its fields hold (but those that hold
    it back): a depth-first walk's post-order, without recursion."""
    order: list[str] = []
    seen: set[str] = set()
    for start in holds:
        if start in seen:
            continue
        seen.add(start)
        work = [(start, iter(holds[start]))]
        while work:
            name, children = work[-1]
            for child in children:
                if child not in seen and child in holds:
                    seen.add(child)
                    work.append((child, iter(holds[child])))
                    break
            else:
                work.pop()
                order.append(name)
    return order


_LABELS = {1: "optional", 2: "required", 3: "repeated"}


class _Comparison:
    """Two revisions compared message by message from the top-level one, each pair
    once; the depth of the walk is bounded (`bounds.MAX_DEPTH`), so is its
    recursion."""

    def __init__(self, new: ProtobufDefinition, old: ProtobufDefinition) -> None:
        self.new_messages, self.new_enums = new.messages, new.enums
        self.old_messages, self.old_enums = old.messages, old.enums
        self._done: set[tuple[str, str]] = set()

    def messages(self, new_name: str, old_name: str, path: str, depth: int = 0) -> str | None:
        if (new_name, old_name) in self._done:
            return None
        if depth >= bounds.MAX_DEPTH:
            return (
                f"the revisions nest more than {bounds.MAX_DEPTH} messages deep at {path}; "
                "the local server compares no deeper"
            )
        self._done.add((new_name, old_name))
        new = {f.number: f for f in self.new_messages[new_name].field}
        old = {f.number: f for f in self.old_messages[old_name].field}
        for number in sorted(new.keys() | old.keys()):
            if number not in old or number not in new:
                field, verb = (new[number], "adds") if number in new else (old[number], "removes")
                if field.label != descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL:
                    return (
                        f"the revision {verb} the {_LABELS.get(field.label, '')} field "
                        f"{path}.{field.name} = {number}; only optional fields may be added "
                        "or removed"
                    )
                continue
            problem = self.field(new[number], old[number], path, depth)
            if problem is not None:
                return problem
        return None

    def field(self, new: Any, old: Any, path: str, depth: int) -> str | None:
        where = f"{path}.{old.name} = {old.number}"
        same = (
            new.name == old.name
            and new.type == old.type
            and new.label == old.label
            and new.proto3_optional == old.proto3_optional
        )
        if not same:
            return f"the revision changes the field {where}; existing fields may not be edited"
        if new.type == descriptor_pb2.FieldDescriptorProto.TYPE_ENUM:
            return self.enums(new.type_name, old.type_name, where)
        if new.type in _MESSAGE_TYPES:
            if new.type_name.rsplit(".", 1)[-1] != old.type_name.rsplit(".", 1)[-1]:
                return f"the revision changes the type of the field {where}"
            return self.messages(new.type_name, old.type_name, f"{path}.{old.name}", depth + 1)
        return None

    def enums(self, new_name: str, old_name: str, where: str) -> str | None:
        new = {(v.name, v.number) for v in self.new_enums[new_name].value}
        old = {(v.name, v.number) for v in self.old_enums[old_name].value}
        if new == old:
            return None
        differ = sorted(new ^ old, key=lambda v: v[1])
        listed = ", ".join(f"{n} = {i}" for n, i in differ)
        return f"the enum of the field {where} differs between the revisions ({listed})"
