"""Snapshots and Seek of `google.pubsub.v1.Subscriber` (CreateSnapshot, GetSnapshot,
ListSnapshots, UpdateSnapshot, DeleteSnapshot, Seek) and the Publisher's
ListTopicSnapshots, with the service's checks. What a snapshot retains and what a Seek
does are `snapshots`' rules, stored and journaled by `subscriptions`; messages follow
Google's emulator where it answers (docs/local-server.md says which). CreateSnapshot
and UpdateSnapshot obey the organization's custom constraints on
`pubsub.googleapis.com/Snapshot` (`constraints.check_call`), judged on the snapshot
the call makes or leaves."""

from __future__ import annotations

import time
import uuid
from typing import Any

from reconciler.localserver.api import protos
from reconciler.localserver.api.names import parse_child, parse_project, parse_topic
from reconciler.localserver.api.paging import decode_token, encode_token, page_size
from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import (
    already_exists,
    failed_precondition,
    invalid,
    not_found,
)
from reconciler.localserver.pubsub.constraints import check_call
from reconciler.localserver.pubsub.limits import check_labels
from reconciler.localserver.pubsub.snapshots import (
    MIN_LIFETIME_NS,
    Snapshot,
    clamp_ns,
    expire_time_ns,
)
from reconciler.localserver.pubsub.state import ServerState
from reconciler.localserver.pubsub.subindex import DELETED_TOPIC
from reconciler.localserver.pubsub.subscriber_service import parse_subscription
from reconciler.orgpolicy.custom import SNAPSHOT

UPDATABLE_PATHS = ("labels", "expire_time")
IMMUTABLE_PATHS = ("name", "topic")
NO_SNAPSHOT = "Snapshot does not exist"
NO_SUBSCRIPTION = "Subscription does not exist"


def parse_snapshot(name: str) -> tuple[str, str]:
    """(project_id, snapshot_id) of "projects/P/snapshots/S"; else INVALID_ARGUMENT."""
    return parse_child("snapshots", name)


def _iso(ns: int) -> str:
    stamp = protos.Timestamp()
    stamp.FromNanoseconds(ns)
    return str(stamp.ToJsonString())


class SnapshotService:
    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.snapshots = state.subs.snapshots

    # ------------------------------------------------------------------- admin

    def create_snapshot(self, request: Any, call: CallInfo) -> Any:
        project, _ = parse_subscription(request.subscription)
        name = request.name
        if not name:  # the service names it (gRPC; REST's path always names it)
            name = f"projects/{project}/snapshots/snapshot-{uuid.uuid4().hex}"
        project, _ = parse_snapshot(name)
        check_labels(request.labels, "snapshot")

        def build(source: Any, oldest_ns: int | None, now_ns: int) -> tuple[Any, int]:
            if source is None:
                raise not_found(NO_SUBSCRIPTION)
            expire_ns = expire_time_ns(oldest_ns, now_ns)
            if expire_ns - now_ns < MIN_LIFETIME_NS:
                raise failed_precondition(
                    f"The oldest unacknowledged message in {request.subscription} was "
                    f"published at {_iso(oldest_ns or now_ns)}: a snapshot of it would expire "
                    f"at {_iso(expire_ns)}, less than 1 hour from now (a snapshot lives 7 days "
                    "from the oldest message it retains). Acknowledge or seek past the oldest "
                    "messages first."
                )
            config = protos.Snapshot(name=name, topic=source.topic, labels=request.labels)
            config.expire_time.FromNanoseconds(expire_ns)
            # Under the write lock: the org's constraints are those in force now.
            check_call(self.state.policy_store, project, SNAPSHOT, "CREATE", config)
            return config, expire_ns

        created = self.snapshots.create(name, request.subscription, build)
        if created is None:
            raise already_exists("Snapshot already exists")
        return created

    def get_snapshot(self, request: Any, call: CallInfo) -> Any:
        parse_snapshot(request.snapshot)
        found = self.snapshots.get(request.snapshot)
        if found is None:
            raise not_found(NO_SNAPSHOT)
        return found.config

    def list_snapshots(self, request: Any, call: CallInfo) -> Any:
        project = parse_project(request.project)
        size = page_size(request.page_size)
        after = decode_token(request.page_token, f"projects/{project}/snapshots/")
        page, last = self.snapshots.page(lambda index: index.in_project(project), after, size)
        response = protos.ListSnapshotsResponse(snapshots=[s.config for s in page])
        if last:
            response.next_page_token = encode_token(last)
        return response

    def list_topic_snapshots(self, request: Any, call: CallInfo) -> Any:
        project, _ = parse_topic(request.topic)
        size = page_size(request.page_size)
        after = decode_token(request.page_token, f"projects/{project}/snapshots/")
        if self.state.get_topic(request.topic) is None:
            raise not_found("Topic not found")
        page, last = self.snapshots.page(lambda index: index.of_topic(request.topic), after, size)
        response = protos.ListTopicSnapshotsResponse(snapshots=[s.name for s in page])
        if last:
            response.next_page_token = encode_token(last)
        return response

    def update_snapshot(self, request: Any, call: CallInfo) -> Any:
        given = request.snapshot
        project, _ = parse_snapshot(given.name)
        paths = list(request.update_mask.paths) if request.HasField("update_mask") else []
        if not paths:
            raise invalid(
                "The update_mask in the UpdateSnapshotRequest must be set, and must contain "
                "a non-empty paths list."
            )
        for path in paths:
            if path in IMMUTABLE_PATHS:
                raise invalid(
                    "Invalid update_mask provided in the UpdateSnapshotRequest: the "
                    f"{path} field in the Snapshot is not mutable."
                )
            if path not in UPDATABLE_PATHS:
                raise invalid(
                    f"Invalid update_mask provided in the UpdateSnapshotRequest: {path} is "
                    f"not a field of Snapshot that can be updated ({', '.join(UPDATABLE_PATHS)})."
                )
        if "labels" in paths:
            check_labels(given.labels, "snapshot")

        def change(current: Snapshot) -> Any:
            config = protos.Snapshot()
            config.CopyFrom(current.config)
            if "labels" in paths:
                config.labels.clear()
                config.labels.update(given.labels)
            if "expire_time" in paths:
                wanted = given.expire_time.ToNanoseconds()
                now_ns = time.time_ns()
                if not now_ns < wanted <= current.max_expire_ns:
                    raise invalid(
                        f"expire_time {_iso(wanted)} is out of range: a snapshot's expire "
                        f"time may be moved earlier, to a time after now and no later than "
                        f"{_iso(current.max_expire_ns)} (7 days from the oldest message it "
                        "retains)."
                    )
                config.expire_time.FromNanoseconds(wanted)
            check_call(
                self.state.policy_store, project, SNAPSHOT, "UPDATE", config, current.config
            )
            return config

        updated = self.snapshots.update(given.name, change)
        if updated is None:
            raise not_found(NO_SNAPSHOT)
        return updated

    def delete_snapshot(self, request: Any, call: CallInfo) -> Any:
        parse_snapshot(request.snapshot)
        if not self.snapshots.delete(request.snapshot):
            raise not_found(NO_SNAPSHOT)
        return protos.Empty()

    # -------------------------------------------------------------------- Seek

    def seek(self, request: Any, call: CallInfo) -> Any:
        parse_subscription(request.subscription)
        target = request.WhichOneof("target")
        if target is None:
            raise invalid(
                "No target was specified in the SeekRequest. Must specify either a time or "
                "a snapshot"
            )
        snapshot_name = request.snapshot if target == "snapshot" else None
        if snapshot_name is not None:
            parse_snapshot(snapshot_name)
        time_ns = clamp_ns(request.time.ToNanoseconds()) if target == "time" else None

        def check(sub: Any, snapshot: Snapshot | None) -> None:
            if sub is None:
                raise not_found(NO_SUBSCRIPTION)
            if snapshot_name is not None and snapshot is None:
                raise not_found(NO_SNAPSHOT)
            if sub.detached:
                raise failed_precondition(
                    f"Seek: subscription {request.subscription} is detached from its topic; "
                    "detached subscriptions deliver no messages."
                )
            if snapshot is None:
                return
            if snapshot.topic == DELETED_TOPIC:
                raise failed_precondition(
                    f"The topic of the snapshot {snapshot.name} was deleted; it can no longer "
                    "be sought to (a topic made again with the same name is another topic)."
                )
            if snapshot.topic != sub.topic:
                raise failed_precondition(
                    f"The subscription's topic {sub.topic} is different from that of the "
                    f"snapshot {snapshot.topic}; they must match in order for Seek work. Note "
                    "that if a topic is deleted and then re-created with the same name, it is "
                    "considered a distinct topic for these purposes."
                )

        self.snapshots.seek(request.subscription, time_ns, snapshot_name, check)
        return protos.SeekResponse()

    # ------------------------------------------------------------------ wiring

    def rpcs(self) -> list[Rpc]:
        """Every method it serves (of both services)."""
        return self.subscriber_rpcs() + self.publisher_rpcs()

    def subscriber_rpcs(self) -> list[Rpc]:
        p = protos
        return [
            Rpc("GetSnapshot", self.get_snapshot, p.GetSnapshotRequest, p.Snapshot,
                lambda r: r.snapshot),
            Rpc("ListSnapshots", self.list_snapshots, p.ListSnapshotsRequest,
                p.ListSnapshotsResponse, lambda r: r.project),
            Rpc("CreateSnapshot", self.create_snapshot, p.CreateSnapshotRequest, p.Snapshot,
                lambda r: r.name or r.subscription),
            Rpc("UpdateSnapshot", self.update_snapshot, p.UpdateSnapshotRequest, p.Snapshot,
                lambda r: r.snapshot.name),
            Rpc("DeleteSnapshot", self.delete_snapshot, p.DeleteSnapshotRequest, p.Empty,
                lambda r: r.snapshot),
            Rpc("Seek", self.seek, p.SeekRequest, p.SeekResponse, lambda r: r.subscription),
        ]

    def publisher_rpcs(self) -> list[Rpc]:
        p = protos
        return [
            Rpc("ListTopicSnapshots", self.list_topic_snapshots, p.ListTopicSnapshotsRequest,
                p.ListTopicSnapshotsResponse, lambda r: r.topic),
        ]
