"""The one-line swap: publisher programs written against the official API
(`samples/`, shaped like Google's publisher samples) run through
`google.cloud.pubsub_v1` as written and through `reconciler.hedging.pubsub_v1` with
only their `from google.cloud import pubsub_v1` line changed, against the local
server; what they print, what the server stores and the Publish calls it receives
must be the same. (Ours also reads each topic's labels: one GetTopic per topic.)
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google.cloud import pubsub_v1 as official

from reconciler.hedging import pubsub_v1 as ours

SAMPLES = Path(__file__).parent / "samples"
ORIGINAL = "from google.cloud import pubsub_v1\n"
SWAPPED = "from reconciler.hedging import pubsub_v1\n"
PROJECT = "swap-project"

# Faults injected on a sample's topics before it runs ({topic} is its topic path).
FAULTS: dict[str, list[dict[str, Any]]] = {
    "ordering_keys": [
        {"method": "Publish", "resource": "{topic}", "error": "INVALID_ARGUMENT",
         "error_next": 1},
    ],
    "retry_settings": [
        {"method": "Publish", "resource": "{topic}", "error": "UNAVAILABLE", "error_next": 2},
        {"method": "Publish", "resource": "{topic}-denied", "error": "PERMISSION_DENIED",
         "message": "User not authorized to perform this action."},
    ],
}
# Batches under blocking flow control depend on timing: only their messages compare.
SAME_PUBLISH_CALLS = {"futures_and_callbacks", "batch_settings", "ordering_keys",
                      "retry_settings", "attributes_and_errors"}
MESSAGE_ID = re.compile(r"(?<=published )\d+")


def load(name: str, swap: bool) -> Callable[[str, str], None]:
    source = (SAMPLES / f"{name}.py").read_text(encoding="utf-8")
    assert source.count(ORIGINAL) == 1
    if swap:
        source = source.replace(ORIGINAL, SWAPPED)
    namespace: dict[str, Any] = {"__name__": f"sample_{name}"}
    exec(compile(source, str(SAMPLES / f"{name}.py"), "exec"), namespace)
    main: Callable[[str, str], None] = namespace["main"]
    return main


def run(server: Any, name: str, kind: str) -> dict[str, Any]:
    topic_id = f"{name.replace('_', '-')}-{kind}"
    topic = f"projects/{PROJECT}/topics/{topic_id}"
    for rule in FAULTS.get(name, []):
        server.faults.add(**{**rule, "resource": rule["resource"].format(topic=topic)})
    before = server.counters.get("Publish")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        load(name, swap=kind == "ours")(PROJECT, topic_id)
    printed = MESSAGE_ID.sub("<id>", out.getvalue().replace(topic_id, "<topic>"))
    by_key: dict[str, list[bytes]] = {}
    for m in server.messages(topic):
        by_key.setdefault(m.ordering_key, []).append(m.data)
    return {
        "printed": sorted(printed.splitlines()),  # callbacks run in completion order
        "stored": sorted((m.data, sorted(m.attributes.items())) for m in server.messages(topic)),
        "keyed order": {k: v for k, v in by_key.items() if k},
        "publish calls": server.counters.get("Publish") - before,
    }


@pytest.mark.parametrize("name", sorted(p.stem for p in SAMPLES.glob("*.py")))
def test_a_sample_runs_the_same_with_the_one_line_swap(
    local_server: Any, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    theirs, mine = run(local_server, name, "official"), run(local_server, name, "ours")
    if name not in SAME_PUBLISH_CALLS:
        del theirs["publish calls"], mine["publish calls"]
    assert mine == theirs
    assert theirs["stored"], "the sample stored nothing: it tests nothing"


def test_the_module_has_what_publisher_code_reaches_for() -> None:
    assert ours.PublisherClient is not official.PublisherClient
    assert ours.publisher.Client is ours.PublisherClient
    for name in official.types.__all__:
        assert getattr(ours.types, name) is getattr(official.types, name), name
    for name in ("SubscriberClient", "SchemaServiceClient"):
        assert getattr(ours, name) is getattr(official, name)
    assert ours.publisher.futures.Future is official.publisher.futures.Future
    assert ours.publisher.exceptions is official.publisher.exceptions
    assert ours.types.HedgingSettings is ours.HedgingSettings
