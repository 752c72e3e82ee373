"""Publish hedging: the profile, its topic labels and the hedged publisher.

`HedgedPublisher` is exported lazily so that `reconciler.hedging.profile` (used by
`reconcile validate`) never imports google-cloud or gRPC.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reconciler.hedging.publisher import HedgedPublisher, HedgingCounters

__all__ = ["HedgedPublisher", "HedgingCounters"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from reconciler.hedging import publisher

        return getattr(publisher, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
