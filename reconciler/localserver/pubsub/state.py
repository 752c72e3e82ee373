"""Server state: topics, org policies and custom constraints, the resource hierarchy
(`policy_store.ancestry`: child -> parent, the one record of where a project or a
folder sits, which the org-policy evaluation walks; and the Resource Manager fields
of the projects and folders created through its API), IAM policies, (in
`subscriptions`) subscriptions with their messages, and (in `schemas.registry`)
schemas with their revisions.

How a change is written (durable before visible, two locks, group commit,
compaction) and how the state is opened from its journal: `journaled`.
"""

from __future__ import annotations

import bisect
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from reconciler.localserver.api import protos
from reconciler.localserver.api.paging import page_after
from reconciler.localserver.persistence import journal as j
from reconciler.localserver.pubsub.journaled import JournaledState
from reconciler.localserver.pubsub.messages import DEFAULT_KEEP_MESSAGES, DEFAULT_MAX_BACKLOG
from reconciler.localserver.pubsub.subscriptions import Subscriptions
from reconciler.localserver.schemas.registry import DELETED_REVISION, SchemaRegistry
from reconciler.localserver.schemas.registry import encode as encode_schema
from reconciler.names import project_of
from reconciler.orgpolicy.custom import CustomConstraint
from reconciler.orgpolicy.model import Policy
from reconciler.orgpolicy.store import PolicyStore
from reconciler.topicrules import DELETED_SCHEMA


def policy_from_proto(pb: Any) -> Policy:
    """The evaluator's dataclass for a stored `google.cloud.orgpolicy.v2.Policy`."""
    return Policy.from_dict(json_format.MessageToDict(pb))


def policy_to_proto(policy: Policy) -> Any:
    """A `google.cloud.orgpolicy.v2.Policy` proto for the evaluator's dataclass."""
    return json_format.ParseDict(policy.to_dict(), protos.Policy(), ignore_unknown_fields=True)


class ServerState(JournaledState):
    """In memory when `state_dir` is None; otherwise journaled under `state_dir`.

    Opening a damaged state raises `StateDamaged` unless `recover`; `loaded` then
    says what was found (torn tail dropped, migration, what a recovery dropped).
    `subs` holds subscriptions and messages (`keep_messages`: the per-topic log of
    recent messages, and the per-subscription bound on unacknowledged ones).
    """

    def __init__(
        self,
        state_dir: Path | None = None,
        *,
        fsync: bool = True,
        compact_after_bytes: int = 4 * 1024 * 1024,
        recover: bool = False,
        keep_messages: int = DEFAULT_KEEP_MESSAGES,
        destination_locations: dict[str, str] | None = None,
        max_backlog: int = DEFAULT_MAX_BACKLOG,
    ) -> None:
        if keep_messages < 0:
            raise ValueError("keep_messages must not be negative")
        super().__init__()
        self._topics: dict[str, Any] = {}
        self._by_project: dict[str, list[str]] = {}
        self.keep_messages = keep_messages
        self._policies: dict[str, Any] = {}
        self.policy_store = PolicyStore()
        # "projects/ID" or "folders/F" -> the Resource Manager proto created through the
        # API (its `parent` cleared: `policy_store.ancestry` holds where it sits).
        self._resources: dict[str, Any] = {}
        # Custom constraint name -> when it was last written (ns), its update_time.
        self._constraint_updates: dict[str, int] = {}
        # IAM policies by resource name; a resource's goes when the resource does.
        self._iam: dict[str, Any] = {}
        # Collection ("topics") -> whether a resource of it exists: the Pub/Sub
        # resources a policy may be set on.
        self._resource_kinds: dict[str, Callable[[str], bool]] = {
            "topics": lambda name: name in self._topics,
            "subscriptions": lambda name: self.subs.raw(name) is not None,
            "schemas": lambda name: self.schemas.revisions(name) is not None,
            "snapshots": lambda name: self.subs.snapshots.get(name) is not None,
        }
        self.subs = Subscriptions(
            self, keep_messages, destination_locations or {}, max_backlog=max_backlog
        )
        self.schemas = SchemaRegistry(self)
        if state_dir is not None:
            self._open(
                state_dir, fsync=fsync, compact_after_bytes=compact_after_bytes, recover=recover
            )
        self.subs.ready()  # after the journal is open: forwards are journaled

    def _replayed(self) -> None:
        self.subs.loaded()

    def close(self, *, compact: bool = True) -> None:
        """Release the state directory (`JournaledState.close`), after waking every
        waiting pull: the server is stopping."""
        self.subs.stop()
        super().close(compact=compact)

    def _apply(self, record: j.Record) -> None:
        kind, key, value = record
        if kind == j.PUT_TOPIC:
            self._put_topic(protos.Topic.FromString(value))
        elif kind == j.DELETE_TOPIC:
            self._drop_topic(key)
        elif kind == j.PUT_POLICY:
            self._put_policy(protos.Policy.FromString(value))
        elif kind == j.DELETE_POLICY:
            self._drop_policy(key)
        elif kind == j.SET_ANCESTRY:
            self.policy_store.ancestry[key] = value.decode("utf-8")
        elif kind == j.DELETE_ANCESTRY:
            self.policy_store.ancestry.pop(key, None)
        elif kind == j.PUT_SCHEMA or kind == j.DELETE_SCHEMA:
            self.schemas.apply(record)
        elif kind == j.PUT_IAM_POLICY:
            self._iam[key] = protos.IamPolicy.FromString(value)
        elif kind == j.PUT_CUSTOM_CONSTRAINT:
            data = json.loads(value)
            self._put_constraint(CustomConstraint.from_dict(data["constraint"]), data["updated"])
        elif kind == j.DELETE_CUSTOM_CONSTRAINT:
            self._drop_constraint(key)
        elif kind == j.PUT_RESOURCE:
            self._resources[key] = _resource_type(key).FromString(value)
        else:
            self.subs.apply(record)

    def _all_records(self) -> Iterator[j.Record]:
        for child, parent in self.policy_store.ancestry.items():
            yield j.SET_ANCESTRY, child, parent.encode("utf-8")
        for name, resource in self._resources.items():
            yield j.PUT_RESOURCE, name, resource.SerializeToString()
        for name, policy in self._policies.items():
            yield j.PUT_POLICY, name, policy.SerializeToString()
        for name, constraint in self.policy_store.custom_constraints.items():
            yield j.PUT_CUSTOM_CONSTRAINT, name, _constraint_record(
                constraint, self._constraint_updates.get(name, 0)
            )
        yield from self.schemas.records()
        for name, topic in self._topics.items():
            yield j.PUT_TOPIC, name, topic.SerializeToString()
        yield from self.subs.records()
        for name, policy in self._iam.items():  # after the resources they belong to
            yield j.PUT_IAM_POLICY, name, policy.SerializeToString()

    # ------------------------------------------------------------------------ topics

    def _put_topic(self, topic: Any) -> None:
        name = topic.name
        if name not in self._topics:
            project = project_of(name)
            bisect.insort(self._by_project.setdefault(project, []), name)
        self._topics[name] = topic

    def _drop_topic(self, name: str) -> bool:
        if self._topics.pop(name, None) is None:
            return False
        names = self._by_project.get(project_of(name), [])
        i = bisect.bisect_left(names, name)
        if i < len(names) and names[i] == name:
            del names[i]
        self.subs.topic_deleted(name)
        self.forget_iam_policy(name)
        return True

    def get_topic(self, name: str) -> Any | None:
        with self.lock:
            return self._topics.get(name)

    def topic_count(self) -> int:
        with self.lock:
            return len(self._topics)

    def create_topic(self, name: str, build: Callable[[], Any]) -> Any | None:
        """Store what `build()` returns unless `name` exists (then None). `build` runs
        under `wlock` so that validation sees the same org policy as the insert."""
        with self.wlock:
            if name in self._topics:
                return None
            topic = build()
            self.commit((j.PUT_TOPIC, name, topic.SerializeToString()))
            with self.lock:
                self._put_topic(topic)
            self.maybe_compact()
        return topic

    def create_topics(self, topics: Iterable[Any]) -> int:
        """Bulk seeding (tests, benchmarks): one journal write for all; skips existing."""
        with self.wlock:
            new = {t.name: t for t in topics if t.name not in self._topics}
            self.commit(*((j.PUT_TOPIC, n, t.SerializeToString()) for n, t in new.items()))
            with self.lock:
                for topic in new.values():
                    self._put_topic(topic)
            self.maybe_compact()
        return len(new)

    def update_topic(self, name: str, change: Callable[[Any], Any]) -> Any | None:
        """Replace the topic with `change(current)` (a new proto); None if missing."""
        with self.wlock:
            current = self._topics.get(name)
            if current is None:
                return None
            topic = change(current)
            self.commit((j.PUT_TOPIC, name, topic.SerializeToString()))
            with self.lock:
                self._topics[name] = topic
            self.subs.settle_exports(name)
            self.maybe_compact()
        return topic

    def delete_topic(self, name: str) -> bool:
        """Delete the topic; its subscriptions stay, pointing at `_deleted-topic_`."""
        with self.wlock:
            if name not in self._topics:
                return False
            self.commit((j.DELETE_TOPIC, name, b""))
            with self.lock:
                self._drop_topic(name)
            self.maybe_compact()
        return True

    def list_topics(self, project: str, after: str, limit: int) -> tuple[list[Any], str]:
        """Up to `limit` topics of `project` named after `after`, in name order, and the
        last name returned when more follow (else "")."""
        with self.lock:
            page, last = page_after(self._by_project.get(project, []), after, limit)
            return [self._topics[n] for n in page], last

    def messages(self, name: str) -> list[Any]:
        """The last `keep_messages` messages of a topic, as stored `PubsubMessage`s."""
        with self.lock:
            return self.subs.topic_messages(name)

    def message_count(self, name: str) -> int:
        """How many messages were published to the topic in this server run."""
        with self.lock:
            return self.subs.topic_message_count(name)

    # ----------------------------------------------------------------------- schemas

    def write_schema(
        self, name: str, change: Callable[[list[Any] | None], list[Any] | None]
    ) -> tuple[list[Any] | None, list[Any] | None]:
        """Atomically replace schema `name`'s revisions by `change(current)` (None
        deletes the schema; `change` may raise to refuse); returns (before, after).
        Topics that name a deleted schema or a deleted revision are changed in the
        same journal write, as the service shows them: the schema as
        `_deleted-schema_`, each such revision bound as `_deleted-schema-revision_`."""
        with self.wlock:
            before = self.schemas.revisions(name)
            after = change(before)
            if before is None and after is None:
                return None, None
            gone = {r.revision_id for r in before or ()} - {r.revision_id for r in after or ()}
            changed = (_unlinked(t, name, after is None, gone) for t in self._topics.values())
            topics = [t for t in changed if t is not None] if gone else []
            records: list[j.Record] = [
                (j.DELETE_SCHEMA, name, b"") if after is None
                else (j.PUT_SCHEMA, name, encode_schema(after))
            ]
            records += [(j.PUT_TOPIC, t.name, t.SerializeToString()) for t in topics]
            self.commit(*records)
            with self.lock:
                for record in records[:1]:
                    self.schemas.apply(record)
                for topic in topics:
                    self._topics[topic.name] = topic
            self.maybe_compact()
        return before, after

    # ---------------------------------------------------------------------- policies

    def _put_policy(self, pb: Any) -> None:
        policy = policy_from_proto(pb)  # first: a policy it refuses changes nothing
        self._policies[pb.name] = pb
        self.policy_store.policies[pb.name] = policy

    def _drop_policy(self, name: str) -> bool:
        self.policy_store.policies.pop(name, None)
        return self._policies.pop(name, None) is not None

    def get_policy(self, name: str) -> Any | None:
        with self.lock:
            return self._policies.get(name)

    def list_policies(self, parent: str) -> list[Any]:
        prefix = parent + "/policies/"
        with self.lock:
            return [p for n, p in sorted(self._policies.items()) if n.startswith(prefix)]

    def write_policy(
        self, name: str, change: Callable[[Any | None], Any | None]
    ) -> tuple[Any | None, Any | None]:
        """Atomically replace policy `name` by `change(current)` (None deletes it);
        returns (before, after)."""
        with self.wlock:
            before = self._policies.get(name)
            after = change(before)
            if after is None:
                if before is None:
                    return None, None
                self.commit((j.DELETE_POLICY, name, b""))
                with self.lock:
                    self._drop_policy(name)
            else:
                self.commit((j.PUT_POLICY, name, after.SerializeToString()))
                with self.lock:
                    self._put_policy(after)
            self.maybe_compact()
        return before, after

    # ---------------------------------------------------------- custom constraints

    def _put_constraint(self, constraint: CustomConstraint, updated: int) -> None:
        self.policy_store.put_custom(constraint)
        self._constraint_updates[constraint.name] = updated

    def _drop_constraint(self, name: str) -> None:
        self.policy_store.custom_constraints.pop(name, None)
        self._constraint_updates.pop(name, None)

    def constraint_updated(self, name: str) -> int:
        """When custom constraint `name` was last written (ns since the epoch; 0 if
        never)."""
        with self.lock:
            return self._constraint_updates.get(name, 0)

    def write_custom_constraint(
        self,
        name: str,
        change: Callable[[CustomConstraint | None], CustomConstraint | None],
    ) -> CustomConstraint | None:
        """Replace custom constraint `name` by `change(current)` (None deletes it),
        journaled like a policy; returns what is stored now."""
        with self.wlock:
            before = self.policy_store.custom_constraints.get(name)
            after = change(before)
            if after is None:
                if before is not None:
                    self.commit((j.DELETE_CUSTOM_CONSTRAINT, name, b""))
                    with self.lock:
                        self._drop_constraint(name)
            else:
                updated = time.time_ns()
                self.commit((j.PUT_CUSTOM_CONSTRAINT, name, _constraint_record(after, updated)))
                with self.lock:
                    self._put_constraint(after, updated)
            self.maybe_compact()
        return after

    def set_ancestry(self, child: str, parent: str | None) -> None:
        with self.wlock:
            if parent is None:
                self.commit((j.DELETE_ANCESTRY, child, b""))
                with self.lock:
                    self.policy_store.ancestry.pop(child, None)
            else:
                self.commit((j.SET_ANCESTRY, child, parent.encode("utf-8")))
                with self.lock:
                    self.policy_store.ancestry[child] = parent
            self.maybe_compact()

    # ------------------------------------------------------------- Resource Manager

    def resource(self, name: str) -> Any | None:
        """The project ("projects/ID") or folder created through Resource Manager's API
        (None: never created so; it may still sit in the ancestry)."""
        with self.lock:
            return self._resources.get(name)

    def resources(self, collection: str) -> dict[str, Any]:
        """Every created resource of `collection` ("projects", "folders") by name."""
        prefix = collection + "/"
        with self.lock:
            return {n: r for n, r in self._resources.items() if n.startswith(prefix)}

    def write_resource(self, name: str, resource: Any | None, parent: str | None) -> None:
        """Store a project's or folder's own fields (`resource`; None: keep what is
        stored) and where it sits (`parent`; None: nowhere), journaled in one write.
        A caller that checks the hierarchy first holds `locked()` around both."""
        records: list[j.Record] = []
        if resource is not None:
            records.append((j.PUT_RESOURCE, name, resource.SerializeToString()))
        records.append(
            (j.SET_ANCESTRY, name, parent.encode("utf-8")) if parent is not None
            else (j.DELETE_ANCESTRY, name, b"")
        )
        with self.wlock:
            self.commit(*records)
            with self.lock:
                if resource is not None:
                    self._resources[name] = resource
                if parent is None:
                    self.policy_store.ancestry.pop(name, None)
                else:
                    self.policy_store.ancestry[name] = parent
            self.maybe_compact()

    # ------------------------------------------------------------------ IAM policies

    def resource_exists(self, name: str) -> bool:
        """Whether "projects/P/COLLECTION/ID" names a resource this server holds."""
        parts = name.split("/")
        exists = self._resource_kinds.get(parts[2]) if len(parts) == 4 else None
        with self.lock:
            return exists is not None and exists(name)

    def iam_policy(self, name: str) -> Any | None:
        """The IAM policy set on `name`, None if none was (or it went with its resource)."""
        with self.lock:
            return self._iam.get(name)

    def write_iam_policy(self, name: str, change: Callable[[Any | None], Any]) -> Any | None:
        """Replace the policy of resource `name` by `change(current)` (decided under
        `wlock`, with the resource's existence); None when the resource does not exist."""
        with self.wlock:
            if not self.resource_exists(name):
                return None
            policy = change(self._iam.get(name))
            self.commit((j.PUT_IAM_POLICY, name, policy.SerializeToString()))
            with self.lock:
                self._iam[name] = policy
            self.maybe_compact()
        return policy

    def forget_iam_policy(self, name: str) -> None:
        """Under `lock`: the resource `name` is gone, and its policy with it (a resource
        created again under the name starts without one, as in the service)."""
        self._iam.pop(name, None)

    def schema_revisions(self, name: str) -> list[Any] | None:
        """The revisions of schema `name` (None if it does not exist)."""
        return self.schemas.revisions(name)

    def locked(self) -> threading.RLock:
        """The write lock, for evaluating the org policy consistently with a write."""
        return self.wlock



def _resource_type(name: str) -> Any:
    """The Resource Manager message a PUT_RESOURCE record of `name` holds."""
    return protos.Project if name.startswith("projects/") else protos.Folder


def _constraint_record(constraint: CustomConstraint, updated: int) -> bytes:
    return json.dumps({"constraint": constraint.to_dict(), "updated": updated}).encode()


def _unlinked(topic: Any, name: str, schema_gone: bool, revisions_gone: set[str]) -> Any | None:
    """`topic` as it reads once schema `name` (or some of its revisions) is deleted;
    None when the topic names neither."""
    settings = topic.schema_settings
    if not topic.HasField("schema_settings") or settings.schema != name:
        return None
    bounds = ("first_revision_id", "last_revision_id")
    hit = [b for b in bounds if getattr(settings, b) and (
        schema_gone or getattr(settings, b) in revisions_gone
    )]
    if not schema_gone and not hit:
        return None
    out = protos.Topic()
    out.CopyFrom(topic)
    if schema_gone:
        out.schema_settings.schema = DELETED_SCHEMA
    for bound in hit:
        setattr(out.schema_settings, bound, DELETED_REVISION)
    return out
