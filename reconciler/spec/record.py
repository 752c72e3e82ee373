"""The base of the plain records in `documents.py`: read-only, slotted, compared by
value, as a frozen dataclass is, but written out: building dataclasses at import
would add to every cold `validate`, which loads these records."""

from __future__ import annotations

from typing import Any, NoReturn


class Record:
    """A record's fields are its `__slots__`, set once by its constructor."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        assert isinstance(other, Record)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({shown})"

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __reduce__(self) -> tuple[Any, ...]:
        """Copies and pickles go through the constructor (attributes are read-only)."""
        return _rebuild, (type(self), dict(zip(self.__slots__, self._values(), strict=True)))


def _rebuild(cls: type[Record], values: dict[str, Any]) -> Record:
    return cls(**values)
