"""How large a schema definition and a message checked against it may be: the one
place the limits live and say why a definition is over them, for Avro and Protocol
Buffer definitions alike, whichever method brought them (CreateSchema, CommitSchema,
ValidateSchema, ValidateMessage with a schema of its own).

The service publishes one of these limits, the definition's size (the schema
overview: 300 KB, read as 300,000 bytes, as the 10 MB request is decimal). It
publishes none for how deeply types nest or how many a definition declares; the
server's choices, with their reasons, are in docs/local-server.md:

- `MAX_DEPTH` (100): types nested in types, and values in a message. The protobuf
  runtimes of C++ and Java refuse messages nested deeper than 100, so a Protocol
  Buffer type nested deeper could never hold a full message on the service; Avro
  gets the same bound, so that a walk over a definition or a message never goes
  deeper than a bounded number of steps.
- `MAX_TYPES` (1,000): named types (Avro records, errors, enums and fixeds; Protocol
  Buffer messages, map entries and enums). Every one is compiled into the server's
  memory (a message class each for Protocol Buffers), and a revision is compared
  with every stored one type by type.

A definition's depth is measured over its types as a graph (a field's type, an
array's items, a map's values, a union's branches): the longest chain of types each
holding the next, a group of types that hold one another (recursion) counted by its
size, so that no walk that stops at a type it is already inside goes deeper."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

MAX_DEFINITION_BYTES = 300_000
MAX_DEPTH = 100
MAX_TYPES = 1_000

K = TypeVar("K", bound=Hashable)


class OverLimit(ValueError):
    """A definition or message over one of the limits (the reason names it)."""


def check_size(text: str) -> None:
    """OverLimit when `text` is over the definition size limit."""
    size = len(text.encode("utf-8"))
    if size > MAX_DEFINITION_BYTES:
        raise OverLimit(
            f"the definition is {size:,} bytes; the maximum is {MAX_DEFINITION_BYTES:,} "
            "bytes (300 KB)"
        )


@dataclass(frozen=True)
class Shape:
    """How deeply a definition's types nest and how many named types it declares."""

    depth: int
    types: int


def check_shape(shape: Shape) -> None:
    """OverLimit when a definition of this shape is over the depth or type limit."""
    if shape.types > MAX_TYPES:
        raise OverLimit(
            f"the definition declares {shape.types:,} types; the local server takes at "
            f"most {MAX_TYPES:,}"
        )
    if shape.depth > MAX_DEPTH:
        raise OverLimit(
            f"the definition nests types {shape.depth:,} deep; the local server takes at "
            f"most {MAX_DEPTH} levels"
        )


def too_deep_to_read() -> str:
    """Why a definition nested past what its parser reads is refused (JSON past
    about a thousand levels: far deeper than `MAX_DEPTH` types can need)."""
    return (
        f"the definition nests too deeply to read; the local server takes types at most "
        f"{MAX_DEPTH} levels deep"
    )


def too_deep_message() -> str:
    """Why a message nested deeper than `MAX_DEPTH` is refused."""
    return f"nested too deeply (more than {MAX_DEPTH} levels)"


def graph_depth(roots: Iterable[K], edges: Mapping[K, Iterable[K]]) -> int:
    """The depth of the type graph reachable from `roots` (`edges[node]`: the types a
    node holds): the longest chain, a strongly connected group counted by its size.
    Iterative (Tarjan's algorithm with an explicit stack), linear in the graph."""
    index: dict[K, int] = {}
    low: dict[K, int] = {}
    on_stack: set[K] = set()
    stack: list[K] = []
    component: dict[K, int] = {}
    sizes: list[int] = []
    depth: list[int] = []  # per component, its chain's length (components end-first)

    def finish(root: K) -> None:
        members = []
        while True:
            node = stack.pop()
            on_stack.discard(node)
            component[node] = len(sizes)
            members.append(node)
            if node == root:
                break
        deepest = 0
        for node in members:
            for child in edges.get(node, ()):
                c = component[child]
                if c != len(sizes):
                    deepest = max(deepest, depth[c])
        sizes.append(len(members))
        depth.append(deepest + len(members))

    counter = 0
    for start in roots:
        if start in index:
            continue
        work: list[tuple[K, Iterator[K]]] = []
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work.append((start, iter(edges.get(start, ()))))
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    finish(node)
    return max(depth, default=0)
