"""The stored subscription configs, under the state's `lock`: by name, by project and
by the topic each is attached to, whether each is a pull subscription or delivers to
an export or push destination (`exports`), and what GetSubscription and
ListSubscriptions answer for them (the delivery state and the topic's retention
computed as of now). `subscriptions.Subscriptions` owns the index and keeps each
subscription's messages beside it.
"""

from __future__ import annotations

import bisect
from typing import Any, Protocol

from reconciler.localserver.api import protos
from reconciler.localserver.api.paging import page_after
from reconciler.localserver.api.wire import length_delimited
from reconciler.localserver.pubsub import exports
from reconciler.names import project_of

DELETED_TOPIC = "_deleted-topic_"


class Topics(Protocol):
    def get_topic(self, name: str) -> Any | None: ...


def _write_view(out: Any, config: Any, topic: Any | None, state: str | None) -> None:
    """`config` as the service answers it: its delivery state, and the topic's
    message retention (an output-only field)."""
    out.CopyFrom(config)
    exports.set_state(out, state)
    if topic is not None and topic.HasField("message_retention_duration"):
        out.topic_message_retention_duration.CopyFrom(topic.message_retention_duration)


class SubscriptionIndex:
    """See the module docstring. `configs` is read as is on the hot paths."""

    def __init__(self, topics: Topics, destination_locations: dict[str, str]) -> None:
        self.topics = topics
        self.locations = {exports.check_key(k): v for k, v in destination_locations.items()}
        self.configs: dict[str, Any] = {}
        self._kind: dict[str, str | None] = {}  # name -> destination key (None: pull)
        self._by_project: dict[str, list[str]] = {}
        self._by_topic: dict[str, list[str]] = {}  # attached subscriptions, sorted
        # name -> (config, topic, state, serialized view): see `listed_field`
        self._listed: dict[str, tuple[Any, Any, str | None, bytes]] = {}

    def put(self, config: Any) -> bool:
        """Store `config` (a config whose destination it refuses changes nothing);
        True when the name is new."""
        name = config.name
        kind = exports.destination_key(config)
        old = self.configs.get(name)
        if old is None:
            bisect.insort(self._by_project.setdefault(project_of(name), []), name)
        elif old.topic in self._by_topic:
            self._unlink(old.topic, name)
        self.configs[name] = config
        self._kind[name] = kind
        if not config.detached and config.topic != DELETED_TOPIC:
            bisect.insort(self._by_topic.setdefault(config.topic, []), name)
        return old is None

    def _unlink(self, topic: str, name: str) -> None:
        names = self._by_topic.get(topic, [])
        if name in names:
            names.remove(name)
        if not names:
            self._by_topic.pop(topic, None)

    def drop(self, name: str) -> None:
        config = self.configs.pop(name)
        self._kind.pop(name, None)
        self._unlink(config.topic, name)
        names = self._by_project.get(project_of(name), [])
        i = bisect.bisect_left(names, name)
        if i < len(names) and names[i] == name:
            del names[i]
        self._listed.pop(name, None)

    def topic_deleted(self, topic: str) -> None:
        """The topic's subscriptions stay, pointing at _deleted-topic_."""
        for name in self._by_topic.pop(topic, []):
            config = protos.Subscription()
            config.CopyFrom(self.configs[name])
            config.topic = DELETED_TOPIC
            self.configs[name] = config

    def view_into(self, name: str, out: Any) -> bool:
        """Write what GetSubscription answers into `out` (False if missing)."""
        config = self.configs.get(name)
        if config is None:
            return False
        topic = self.topics.get_topic(config.topic)
        _write_view(out, config, topic, self.state_of(name, topic))
        return True

    def listed_field(self, name: str) -> bytes:
        """What GetSubscription answers, serialized as field 1 of a
        ListSubscriptionsResponse. Kept while the config, its topic (both replaced,
        never changed in place) and the delivery state stay the same: a page is 1,000
        of them, and a plan lists every page of every project."""
        config = self.configs[name]
        topic = self.topics.get_topic(config.topic)
        state = self.state_of(name, topic)
        kept = self._listed.get(name)
        if kept is not None and kept[0] is config and kept[1] is topic and kept[2] == state:
            return kept[3]
        view = protos.Subscription()
        _write_view(view, config, topic, state)
        field = length_delimited(1, view.SerializeToString())
        self._listed[name] = (config, topic, state, field)
        return field

    def page(self, project: str, after: str, limit: int) -> tuple[bytes, str]:
        """A page of the project's subscriptions, as `listed_field`s; the last name
        listed when more follow, else ""."""
        page, last = page_after(self._by_project.get(project, []), after, limit)
        return b"".join(map(self.listed_field, page)), last  # index and configs agree

    def in_project(self, project: str) -> list[str]:
        return list(self._by_project.get(project, ()))

    def attached(self, topic: str) -> list[str]:
        """The subscriptions attached to the topic, in name order (not a copy)."""
        return self._by_topic.get(topic, [])

    def topics_attached(self) -> list[str]:
        return list(self._by_topic)

    def state_of(self, name: str, topic: Any | None) -> str | None:
        """The delivery state of an export or push subscription (None: a pull one)."""
        if self._kind.get(name) is None:
            return None
        return exports.delivery_state(self.configs[name], topic, self.locations)

    def delivering(self, topic_name: str, topic: Any) -> list[str]:
        """The export and push subscriptions of the topic that are ACTIVE: they deliver
        each message on arrival, holding nothing."""
        return [
            name for name in self._by_topic.get(topic_name, ())
            if self._kind[name] is not None and self.state_of(name, topic) == exports.ACTIVE
        ]

    def receivers(self, topic_name: str, topic: Any) -> list[str]:
        """The subscriptions of the topic that hold what it receives: all but those
        `delivering`."""
        return [
            name for name in self._by_topic.get(topic_name, ())
            if self._kind[name] is None or self.state_of(name, topic) != exports.ACTIVE
        ]

    def set_location(self, key: str, location: str | None) -> None:
        """Declare (None: forget) where an export or push destination is."""
        exports.check_key(key)
        if location is None:
            self.locations.pop(key, None)
        else:
            self.locations[key] = location
