"""Read-only values: a plan (and a residency report) cannot change once made, so its
digest, computed once, stays the digest of what it holds.

`FrozenDict` and `FrozenList` are a dict and a list that refuse every change (equal to
a dict or list with the same items, and written as one). `freeze` makes a value
read-only all the way down, sharing what is read-only already (reconciler/codec.py's
`Record`, the base of such a document's classes, freezes what each member holds).
"""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"a plan's values are read-only ({type(self).__name__})")


class FrozenDict(dict[K, V]):
    """A dict that refuses changes (its hash worked out once: it cannot change)."""

    __slots__ = ("_hash",)
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return FrozenDict, (dict(self),)

    def __copy__(self) -> FrozenDict[K, V]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict[K, V]:
        return self

    def __hash__(self) -> int:  # type: ignore[override]  # read-only, so a safe default
        # (a topic's transforms and ingestion source are held so, and the plan caches
        # by the settings that hold them, once per topic)
        try:
            return self._hash
        except AttributeError:
            self._hash: int = hash(frozenset(self.items()))
            return self._hash


class FrozenList(list[T]):
    """A list that refuses changes (a list, not a tuple: it equals the list it was;
    its hash worked out once)."""

    __slots__ = ("_hash",)
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return FrozenList, (list(self),)

    def __copy__(self) -> FrozenList[T]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList[T]:
        return self

    def __hash__(self) -> int:  # type: ignore[override]  # read-only, so a safe default
        try:
            return self._hash
        except AttributeError:
            self._hash: int = hash(tuple(self))
            return self._hash


EMPTY: FrozenList[Any] = FrozenList()
READ_ONLY = (FrozenDict, FrozenList, type(None))  # what `freeze` gives back as it is


_CONTAINERS = (dict, list, tuple)


def freeze(value: Any) -> Any:
    """`value` with every dict and list (tuples too) made read-only, all the way down;
    read-only values are shared, not copied (they are read-only all the way down: only
    this module makes them)."""
    kind = type(value)
    if kind is FrozenDict or kind is FrozenList:
        return value
    if isinstance(value, dict):
        return FrozenDict(
            {k: freeze(v) if isinstance(v, _CONTAINERS) else v for k, v in value.items()}
        )
    if isinstance(value, list | tuple):
        if not value:
            return EMPTY
        return FrozenList([freeze(v) if isinstance(v, _CONTAINERS) else v for v in value])
    return value


def thawed(value: Any) -> Any:
    """`value` with every dict and list plain again (a copy all the way down): for
    what takes only plain ones (protobuf's json_format, a YAML writer)."""
    if isinstance(value, dict):
        return {k: thawed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thawed(v) for v in value]
    return value
