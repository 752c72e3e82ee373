"""The official `google.cloud.pubsub_v1.types`, re-exported (the same classes), and
`HedgingSettings`."""

from __future__ import annotations

from google.cloud.pubsub_v1 import types as _official
from google.cloud.pubsub_v1.types import *  # noqa: F403

from reconciler.hedging.settings import HedgingSettings

__all__ = (*_official.__all__, "HedgingSettings")
