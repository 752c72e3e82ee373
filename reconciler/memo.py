"""The bounds every per-run memo of repeated values keeps to, in one place.

A spec tree and an estate repeat a few values across thousands of topics (a transform
list, a layout, a policy), so several hot paths remember what they made of each
distinct one: transforms made canonical (spec/restfields.py), a live topic's extras
from the wire (backends/topicproto.py) and as the table holds them (topic.py), model
paths and judged findings (messagepaths.py), the bounds a policy gives
(plan/datapaths.py), spec layouts (yamlio.py). Each is a plain dict read inline, as
their instruction counts asked (benchmarks/README.md), bounded by these two figures:

    MEMO_ENTRIES    distinct values a memo keeps; it is emptied when full
    MEMO_KEY_BYTES  the largest key a memo keyed by encoded bytes keeps: a UDF may be
                    20 KB, and is then held once, by its topic, not again as a key
"""

from __future__ import annotations

MEMO_ENTRIES = 4096
MEMO_KEY_BYTES = 16 * 1024
