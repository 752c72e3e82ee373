"""Values every imported topic shares, written once in a `Defaults` document instead of
on each topic (`reconcile import`): the project (when one project is imported),
labels with the same value on every topic, and the storage policy, retention, key
and schema settings when every topic has the same one. The merge rules of Defaults
(spec/topics.py, spec/settings.py: a topic's own value wins, labels merge) give each
topic back exactly what it had, so the tree validates and plans the same.

Only the caller knows whether a Defaults document is safe: it applies to every spec
of its directory and below, so import asks for one only when the directory holds no
other specs.
"""

from __future__ import annotations

from typing import Any

from reconciler.spec.documents import API_VERSION
from reconciler.topicfields import NEAREST, SENT

Doc = dict[str, Any]
# Topic spec keys a Defaults document can carry as a whole value, of the fields import
# writes from the live topic's (the publishers block is decoded from its labels).
WHOLE_VALUES = tuple(f.spec for f in SENT if f.inherit == NEAREST)
MIN_TOPICS = 2  # one topic repeats nothing


def factor_defaults(topic_docs: dict[str, list[Doc]]) -> Doc | None:
    """The Defaults document of what every topic document shares (removed from them),
    or None when they share nothing, or are fewer than two."""
    topics = [d for docs in topic_docs.values() for d in docs if d.get("kind") == "Topic"]
    if len(topics) < MIN_TOPICS:
        return None
    spec: Doc = {}
    if len(topic_docs) == 1:
        spec["project"] = next(iter(topic_docs))
    specs = [t.setdefault("spec", {}) for t in topics]
    labels = _shared_labels([s.get("labels", {}) for s in specs])
    if labels:
        spec["labels"] = labels
    for key in WHOLE_VALUES:
        first = specs[0].get(key)
        if first is not None and all(s.get(key) == first for s in specs[1:]):
            spec[key] = first
    if not spec:
        return None
    for topic, own in zip(topics, specs, strict=True):
        if "project" in spec:
            topic["metadata"].pop("project", None)
        for key in labels:
            del own["labels"][key]
        if "labels" in own and not own["labels"]:
            del own["labels"]
        for key in WHOLE_VALUES:
            if key in spec:
                del own[key]
    return {
        "apiVersion": API_VERSION,
        "kind": "Defaults",
        "metadata": {"name": "imported"},
        "spec": spec,
    }


def _shared_labels(labels: list[dict[str, str]]) -> dict[str, str]:
    first = labels[0]
    return {k: v for k, v in first.items() if all(other.get(k) == v for other in labels[1:])}
