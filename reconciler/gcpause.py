"""Cyclic garbage collection paused while a command builds many objects and frees
almost none of them in cycles. A light module: the validate command pauses the
collector before its (heavy) imports, not only while the tree is checked."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def without_cyclic_gc() -> Iterator[None]:
    """Loading builds a million small objects and frees almost none of them in cycles;
    the cyclic collector would re-scan all of them again and again (a third to a half
    of a large validate, and worse than linear). Importing the validate path (and
    pydantic with the spec models, for a tree with shape errors) is the same pattern
    on a smaller scale.
    Reference counting still frees everything; the collector runs again afterwards
    (when it was on before)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
