"""Cloud Monitoring metric types as PromQL names ("Mapping Cloud Monitoring metrics to
PromQL"): one module, because the PromQL client (backends/promql.py) and the local
server's PromQL evaluation (localserver/monitoring/promql.py) must agree, and neither
package may import the other's."""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"[^A-Za-z0-9_]")


def promql_name(metric_type: str) -> str:
    """The first "/" becomes ":", every other character outside [A-Za-z0-9_] "_":
    `pubsub.googleapis.com/topic/num_unacked_messages_by_region` is
    `pubsub_googleapis_com:topic_num_unacked_messages_by_region`."""
    domain, _, path = metric_type.partition("/")
    return _SPECIAL.sub("_", domain) + ":" + _SPECIAL.sub("_", path)
