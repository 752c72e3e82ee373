"""Fresh labels (issue 10, bullet 4): right before an UpdateTopic that sets labels the
executor re-reads the topic, so a label another tool adds while apply runs is kept; a
managed label moved meanwhile makes that topic stale and the others proceed.

The apply runs in a thread against the local server; a hold on the first topic's
UpdateTopic parks it (the server's fault injection) while a second writer, the real
client, changes the second topic; then the held call is released."""

from __future__ import annotations

import threading
from typing import Any

from apply_support import PROJECT, make
from google.protobuf import field_mask_pb2
from google.pubsub_v1.types import Topic

from reconciler.apply.executor import Executor
from reconciler.apply.guard import GuardedBackend
from reconciler.apply.result import TopicResults
from reconciler.ownership import PLAN_LABEL, plan_marker

OWNED = {"reconcile-managed": "true", "reconcile-owner": "default"}
FIRST, SECOND = (f"projects/{PROJECT}/topics/{n}" for n in ("first", "second"))


def labels(client: Any, name: str) -> dict[str, str]:
    return dict(client.get_topic(request={"topic": name}).labels)


def set_labels(client: Any, name: str, new: dict[str, str]) -> None:
    """The second writer: another tool updating the topic's labels."""
    client.update_topic(
        request={
            "topic": Topic(name=name, labels=new),
            "update_mask": field_mask_pb2.FieldMask(paths=["labels"]),
        }
    )


def apply_while(
    local_server: Any, client: Any, backend: GuardedBackend, meanwhile: dict[str, str]
) -> tuple[TopicResults, dict[str, str]]:
    """Plan team: a -> b on both topics, then apply it one topic at a time; while the
    first topic's update is held, set SECOND's labels to `meanwhile`. The results, and
    the marker label the plan's updates set."""
    for name in (FIRST, SECOND):
        client.create_topic(request=Topic(name=name, labels={"team": "a", **OWNED}))
    plan = make(backend, {"first": {"team": "b"}, "second": {"team": "b"}})
    assert [rc.address for rc in plan.resource_changes] == [FIRST, SECOND]
    hold = local_server.faults.hold("UpdateTopic", resource=FIRST)
    out: list[TopicResults] = []
    executor = Executor(backend, concurrency=1)
    worker = threading.Thread(target=lambda: out.append(executor.run(plan)))
    worker.start()
    try:
        (held,) = hold.wait_arrived(1)
        set_labels(client, SECOND, meanwhile)
        held.release()
    finally:
        local_server.faults.end_holds()
        worker.join()
    return out[0], {PLAN_LABEL: plan_marker(plan.digest)}


def test_a_label_added_by_another_tool_during_apply_is_kept(
    local_server: Any, client: Any, backend: GuardedBackend
) -> None:
    result, mark = apply_while(
        local_server, client, backend, {"team": "a", "owner": "ops", **OWNED}
    )
    assert [r.status for r in result.results] == ["applied", "applied"]
    assert labels(client, SECOND) == {"team": "b", "owner": "ops", **OWNED, **mark}
    assert labels(client, FIRST) == {"team": "b", **OWNED, **mark}


def test_a_managed_label_moved_during_apply_makes_only_that_topic_stale(
    local_server: Any, client: Any, backend: GuardedBackend
) -> None:
    local_server.counters.reset()
    result, mark = apply_while(local_server, client, backend, {"team": "c", **OWNED})
    first, second = result.results
    assert first.status == "applied"
    assert second.status == "failed"
    assert second.error == "stale: label team changed since the plan; not updated (make a new plan)"
    assert labels(client, SECOND) == {"team": "c", **OWNED}
    assert labels(client, FIRST) == {"team": "b", **OWNED, **mark}
    # The second writer's update and the first topic's: apply sent none for SECOND.
    assert local_server.counters.get("UpdateTopic") == 2
