"""Runs a plan's requests: N workers, each topic independent of the others.

Minimal calls: exactly the plan's request per changed topic, nothing for a no-op; the
request says everything sent (plan/model.py: `Request`), and `show` renders it. An
update's labels are made as its `label_merge` says: the topic is read right before the
call and the label changes are applied to that read (apply/freshness.py), so labels
others set meanwhile are kept. The request's `marker_label` is set to the plan's
marker (the first digits of its digest: reconciler/ownership.py) in the same call, so
that a saved plan can tell later that it was applied, or that another was applied
since (apply/freshness.py).
A failing topic is recorded and the others go on. A stop request (Ctrl-C, SIGTERM)
lets calls in flight finish and starts no new one; whatever was not started is reported
as not attempted.

Calls are idempotent at the level of the end state, so a rerun converges: a create
that finds the topic already there with the declared settings, or a delete that finds
it gone, counts as done.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.apply.events import EventSink, TopicFinished, ignore
from reconciler.apply.freshness import StaleTopic, fresh_labels
from reconciler.apply.guard import GuardedBackend, StopRequested
from reconciler.apply.result import TopicResult, TopicResults
from reconciler.apply.retry import (
    AdminRetry,
    Attempts,
    Stopped,
    error_message,
    error_status_name,
    rerun_may_help,
)
from reconciler.backends.base import ObservedTopic
from reconciler.ownership import DEFAULT_OWNER, OWNER_LABEL, is_owned_by, owner_of, plan_marker
from reconciler.plan.model import Plan, ResourceChange
from reconciler.topic import TopicShape, norm_policy, request_shape
from reconciler.topicfields import LABELS

DEFAULT_CONCURRENCY = 8
# Read-back after CreateTopic: a new topic may answer NOT_FOUND for a while (Terraform
# polls up to its 20-minute create timeout). Poll with backoff up to `deadline`
# seconds (`reconcile apply --readback-wait`), then warn: the create itself succeeded.
DEFAULT_READBACK_WAIT = 120.0


def readback_policy(wait: float = DEFAULT_READBACK_WAIT) -> AdminRetry:
    """Bounded by time only (the attempt bound is out of reach)."""
    return AdminRetry(
        initial=0.05, maximum=5.0, multiplier=2.0, max_attempts=1_000_000, deadline=wait
    )


READBACK = readback_policy()


@dataclass
class _Job:
    index: int
    change: ResourceChange


class Executor:
    def __init__(
        self,
        backend: GuardedBackend,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        events: EventSink = ignore,
        readback: AdminRetry = READBACK,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Every call goes through `backend` (its guard: rate limit, stop, retry)."""
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.backend = backend
        self.guard = backend.guard
        self.concurrency = concurrency
        self.events = events
        self.readback = readback
        self.clock = clock
        self.marker = ""
        self.owner = DEFAULT_OWNER
        self.allow_delete = False

    @property
    def stop(self) -> threading.Event:
        return self.guard.stop

    def run(self, plan: Plan) -> TopicResults:
        """Execute `plan`: its marker is its digest's, its deletes are allowed when it
        was made with prune, and a topic it deletes must still carry its owner."""
        self.marker = plan_marker(plan.digest)
        self.owner = plan.owner
        self.allow_delete = plan.prune
        changes = plan.resource_changes
        work = [c for c in changes if c.action != "no-op"]
        result = TopicResults(unchanged=len(changes) - len(work))
        slots: list[TopicResult | None] = [None] * len(work)
        jobs = iter([_Job(i, c) for i, c in enumerate(work)])
        lock = threading.Lock()

        def worker() -> None:
            while not self.stop.is_set():
                with lock:
                    job = next(jobs, None)
                if job is None:
                    return
                outcome = self._one(job.change)
                slots[job.index] = outcome
                self.events(TopicFinished(outcome))

        threads = [
            threading.Thread(target=worker, name=f"apply-{n}", daemon=True)
            for n in range(min(self.concurrency, len(work)))
        ]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():  # short joins keep the main thread responsive to signals
                t.join(0.1)
        for i, change in enumerate(work):
            if slots[i] is None:
                slots[i] = _not_attempted(change)
        result.results = [s for s in slots if s is not None]
        result.interrupted = self.stop.is_set()
        return result

    # --- one topic -----------------------------------------------------------------

    def _one(self, rc: ResourceChange) -> TopicResult:
        started = self.clock()
        attempts = Attempts()
        res = TopicResult(
            address=rc.address,
            action=rc.action,
            status="applied",
            method=rc.request.method if rc.request else "",
            update_mask=list(rc.request.update_mask) if rc.request else [],
        )
        try:
            if rc.request is None:
                raise _Refused(f"the plan has no request for this {rc.action}", rerun=False)
            if rc.action == "create":
                self._create(rc, attempts, res)
            elif rc.action == "update":
                self._update(rc, attempts)
            elif rc.action == "delete":
                self._delete(rc, attempts, res)
            else:
                raise _Refused(f"unknown action {rc.action!r}", rerun=False)
        except StopRequested:
            res.status = "not-attempted"
        except Stopped as exc:
            res.status = "failed"
            res.error = f"interrupted while retrying; last error {error_message(exc.last)}"
        except _Refused as exc:
            res.status = "failed"
            res.error = str(exc)
            res.rerun_helps = exc.rerun_helps
        except Exception as exc:  # one topic failing must not stop the others
            res.status = "failed"
            res.error = error_message(exc) if error_status_name(exc) else _unexpected(exc)
            res.rerun_helps = rerun_may_help(exc)
        res.attempts = attempts.count
        if attempts.propagation_errors:
            res.notes.append(
                f"waited for the org policy to propagate ({attempts.propagation_errors} "
                "refusals as a recently created project)"
            )
        res.seconds = round(self.clock() - started, 3)
        return res

    def _update(self, rc: ResourceChange, attempts: Attempts) -> ObservedTopic:
        """The plan's UpdateTopic; its labels merged onto a fresh read of the topic
        (apply/freshness.py: others' labels added meanwhile are kept), with the marker."""
        request = rc.request
        assert request is not None
        mask = list(request.update_mask)
        if not mask:
            raise _Refused(
                "the plan's update has an empty update mask; nothing to send", rerun=False
            )
        body = _with_name(rc)
        if request.label_merge is not None:
            # The read's own attempts are not the update's (TopicResult.attempts).
            live = self.backend.get_topic(rc.address, Attempts())
            if live is None:
                raise _Refused("stale: the topic was deleted since the plan")
            try:
                labels = fresh_labels(rc, request.label_merge, live.shape)
            except StaleTopic as exc:
                raise _Refused(f"stale: {exc}; not updated (make a new plan)") from None
            body[LABELS.proto] = self._marked(request.marker_label, labels)
        return self.backend.update_topic(body, mask, attempts)

    def _marked(self, label: str | None, labels: Mapping[str, str]) -> dict[str, str]:
        """`labels` with the request's marker label set to this plan's marker."""
        if label is None:
            return dict(labels)
        if not self.marker:
            raise _Refused("the plan states a marker label but has no digest", rerun=False)
        return {**labels, label: self.marker}

    def _create(self, rc: ResourceChange, attempts: Attempts, res: TopicResult) -> None:
        assert rc.request is not None
        body = _with_name(rc)  # what the plan declares (compared on read-back)
        sent = dict(body)
        if rc.request.marker_label is not None:
            sent[LABELS.proto] = self._marked(rc.request.marker_label, body.get(LABELS.proto) or {})
        try:
            self.backend.create_topic(sent, attempts)
        except StopRequested:
            raise
        except Exception as exc:
            if error_status_name(exc) != "ALREADY_EXISTS":
                raise
            # An earlier attempt (or an earlier, killed run) may have created it.
            live = self.backend.get_topic(rc.address, Attempts())
            if live is None or not matches(body, live.body):
                raise
            res.notes.append("already existed with the declared settings")
            return
        self._confirm(rc, body, res)

    def _confirm(self, rc: ResourceChange, body: dict[str, Any], res: TopicResult) -> None:
        """Read the new topic back, polling while it answers NOT_FOUND (eventual
        consistency) up to the read-back wait; then warn, never fail: it was created."""
        policy = self.readback
        start = self.clock()
        n = 0
        while True:
            try:
                live = self.backend.get_topic(rc.address)
            except StopRequested:
                res.notes.append("read-back skipped (interrupted)")
                return
            except Stopped:
                res.notes.append("read-back skipped (interrupted)")
                return
            except Exception as exc:
                if error_status_name(exc) != "NOT_FOUND":
                    res.notes.append(f"warning: read-back failed: {error_message(exc)}")
                    return
                live = None
            if live is not None:
                if not matches(body, live.body):
                    res.notes.append("warning: read-back differs from the declared settings")
                return
            n += 1
            delay = policy.backoff(n - 1, self.guard.rng)
            waited = self.clock() - start
            if n >= policy.max_attempts or waited + delay > policy.deadline:
                break
            if self.stop.wait(delay):
                res.notes.append("read-back skipped (interrupted)")
                return
        res.notes.append(
            f"warning: created, but still not visible on read-back after {waited:.0f} s "
            f"({n} reads; eventually consistent): a later `reconcile plan` shows whether "
            "it arrived (raise the wait with --readback-wait)"
        )

    def _delete(self, rc: ResourceChange, attempts: Attempts, res: TopicResult) -> None:
        if not self.allow_delete:
            raise _Refused("deletion needs --prune (and a plan made with it)", rerun=False)
        # Re-check ownership on the live topic right before deleting. The read changes
        # nothing: its attempts are not the delete's (TopicResult.attempts).
        live = self.backend.get_topic(rc.address, Attempts())
        if live is None:
            res.notes.append("already absent")
            return
        if not is_owned_by(live.shape.labels, self.owner):
            now = owner_of(live.shape.labels)
            has = f"{OWNER_LABEL}={now}" if now else "no owner"
            raise _Refused(
                f"refusing to delete: the live topic is no longer owned by this spec tree "
                f"(expected {OWNER_LABEL}={self.owner}; it has {has})",
                rerun=False,
            )
        if rc.prune_subscribed_by is None:
            self._no_unseen_subscriptions(rc)
        try:
            self.backend.delete_topic(rc.address, attempts)
        except StopRequested:
            raise
        except Exception as exc:
            if error_status_name(exc) != "NOT_FOUND":
                raise
            res.notes.append("already absent")

    def _no_unseen_subscriptions(self, rc: ResourceChange) -> None:
        """Right before a DeleteTopic the plan made without leave to detach
        subscriptions (--prune-subscribed, or the Owner document's opt-in): refused if
        the topic now has a subscription the plan did not show (one
        ListTopicSubscriptions), or if that cannot be checked."""
        what_to_do = (
            "make a new plan (it keeps a subscribed topic and names its subscriptions), or "
            "plan with --prune-subscribed, or list the topic under the Owner document's "
            "pruneSubscribed, to delete it anyway"
        )
        try:
            now = self.backend.list_topic_subscriptions(rc.address, Attempts())
        except StopRequested:
            raise
        except Exception as exc:
            if error_status_name(exc) == "NOT_FOUND":
                return  # gone meanwhile: the delete finds it absent
            raise _Refused(
                "refusing to delete: its subscriptions could not be re-listed right before "
                f"the delete ({error_message(exc)}; listing them needs e.g. "
                f"roles/pubsub.viewer); nothing deleted: {what_to_do}", rerun=False,
            ) from None
        shown = {s.name for s in rc.subscriptions}
        unseen = sorted(set(now) - shown)
        if unseen:
            some = (
                ("subscriptions", "them (they stop") if len(unseen) > 1
                else ("a subscription", "it (it stops")
            )
            raise _Refused(
                f"refusing to delete: it now has {some[0]} the plan did not show: "
                f"{', '.join(unseen)}; deleting it would detach {some[1]} receiving "
                f"messages); nothing deleted: {what_to_do}",
                rerun=False,
            )


class _Refused(Exception):
    """Apply itself declines this topic (no call, or no further call, made). `rerun`:
    whether another apply may do it (the live state moved: a new plan sees it)."""

    def __init__(self, message: str, *, rerun: bool = True) -> None:
        super().__init__(message)
        self.rerun_helps = rerun


def _with_name(rc: ResourceChange) -> dict[str, Any]:
    assert rc.request is not None
    body = dict(rc.request.topic)
    body.setdefault("name", rc.address)
    return body


def _not_attempted(rc: ResourceChange) -> TopicResult:
    return TopicResult(
        address=rc.address,
        action=rc.action,
        status="not-attempted",
        method=rc.request.method if rc.request else "",
        update_mask=list(rc.request.update_mask) if rc.request else [],
    )


def _unexpected(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc)
    return f"{type(exc).__name__}: {text}"


def matches(declared: dict[str, Any], live: dict[str, Any]) -> bool:
    """Does the live topic carry every managed setting of a create request? Labels are
    a subset check (others' keys may be there); an explicit storage policy compares as
    a set of regions plus the in-transit flag; a retention, key or schema settings as
    the service writes them."""
    labels, want = request_shape(declared)
    now = TopicShape.from_json(live)
    if any(now.labels.get(k) != v for k, v in (labels or {}).items()):
        return False
    if want is not None and norm_policy(want) != norm_policy(now.policy):
        return False
    fresh = now.settings_json()
    return all(fresh.get(k) == v for k, v in TopicShape.from_json(declared).settings_json().items())
