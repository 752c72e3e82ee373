"""The read-ahead's second process (plan/readahead.py): opens the target as `plan`
would, makes each project's reads through the same `Reads` calls observe makes
(topics, org inputs and subscriptions; for a plan its ancestry and then the custom
constraints of its organization; for `residency` the by-region gauges it shows) as
soon as the parent names the project, answers once the parent has sent the final
list, then answers the parent's requests of by-region gauges, in the order asked
and reading later ones meanwhile, until the pipe closes (plan/readahead_wire.py).

    python -P -m reconciler.plan.readahead_child [--emulator HOST:PORT]
        [--org-policy FILE] [--timeout SECONDS] [--parent PID] [--reads plan|residency]

It stops with its parent, whatever stops the parent (Ctrl-C, SIGTERM, kill -9): the
parent holds the request pipe open until it has closed the read-ahead, so end of file
on it means the parent is done or gone, and this process then exits at once, without
waiting for the calls in flight; on Linux the kernel also kills it when the parent
dies (PR_SET_PDEATHSIG, asked for when `--parent` names the parent).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import marshal
import os
import queue
import signal
import struct
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any, BinaryIO

from reconciler.backends.base import (
    Ancestry,
    CustomConstraints,
    GaugeQuery,
    OrgInputs,
    SubscriptionListing,
    TargetOptions,
)
from reconciler.backends.client_backend import ClientBackend
from reconciler.backends.connect import open_backend
from reconciler.backends.metrics import MetricsUnavailable
from reconciler.backends.residency_reads import gauge_query
from reconciler.backends.topicproto import topic_row
from reconciler.errors import ReconcileError
from reconciler.plan.observe import MAX_WORKERS
from reconciler.plan.readahead_wire import (
    ancestry_row,
    custom_row,
    error_row,
    org_row,
    query_of,
    query_row,
    stored_row,
    subscriptions_row,
)
from reconciler.topic import ObservedTopic

# Each project's topics (as rows, made while the parent still validates), org inputs,
# subscriptions and, for residency, the gauges it shows ([query, stored] rows, or
# None). A plan's gauges are asked for afterwards.
Reads = dict[
    str,
    tuple[
        "Future[list[Any]]", "Future[OrgInputs]", "Future[SubscriptionListing]",
        "Future[list[Any] | None] | None",
    ],
]
# A plan's ancestry and custom constraints on topics, per project (the constraints of
# the organization the ancestry ends at, read right after it; or the error raised).
Placed = tuple[Ancestry, "CustomConstraints | ReconcileError"]
CustomReads = dict[str, "Future[Placed]"]
READS = ("plan", "residency")

PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_GONE = 3  # the exit status when the parent went away (nobody reads it)


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when its parent dies (Linux), and leave now if
    the parent is gone already (it may have died before the request was made)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the pipe's end of file still stops it
    if os.getppid() != parent:
        os._exit(PARENT_GONE)


def later_requests(requests: IO[str]) -> queue.Queue[dict[str, Any]]:
    """The parent's requests after the final list, read on a daemon thread; end of file
    means the parent is done or gone: this process leaves at once (not after the
    calls in flight)."""
    found: queue.Queue[dict[str, Any]] = queue.Queue()

    def watch() -> None:
        for line in requests:
            found.put(json.loads(line))
        os._exit(PARENT_GONE)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    return found


def main(argv: list[str], requests: IO[str]) -> int:
    """The child's program: `requests` is the parent's pipe (JSON lines), the answer
    goes to file descriptor 1."""
    parser = argparse.ArgumentParser(prog="reconcile-read-ahead")
    parser.add_argument("--emulator")
    parser.add_argument("--org-policy", type=Path)
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--parent", type=int)
    parser.add_argument("--reads", choices=READS, default="plan")
    args = parser.parse_args(argv)
    if args.parent is not None:
        die_with_parent(args.parent)
    # The answers get the pipe to themselves (each framed by its length): anything
    # else printed goes nowhere.
    answer_to = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    try:
        options = TargetOptions(False, args.emulator, args.org_policy, args.timeout)
        backend = open_backend(options)
    except ReconcileError as exc:
        _answer(answer_to, {"open_error": error_row(exc)})
        return 0
    residency = args.reads == "residency"
    try:
        with ThreadPoolExecutor(max_workers=MAX_WORKERS) as pool:
            pool.submit(_warm_promql, backend)
            final = _read_as_named(backend, pool, requests, residency)
            if final is None:  # the parent went away without a final list: stop now,
                os._exit(PARENT_GONE)  # not after the calls in flight
            asked = later_requests(requests)
            _answer(answer_to, _collect(backend, final))
            del final  # its reads are sent: their memory is not needed any more
            reads: queue.Queue[list[Future[list[dict[str, Any]]]]] = queue.Queue()
            threading.Thread(
                target=_answer_in_order, args=(answer_to, reads, asked), name="answers",
                daemon=True,
            ).start()
            while True:  # until the parent closes the pipe (later_requests exits)
                request = asked.get()
                if "failed" in request:  # a read failed unexpectedly: end with it
                    raise request["failed"]
                queries = [query_of(row) for row in request["stored"]]
                reads.put([pool.submit(_stored_rows, backend, queries)])
    finally:
        backend.close()


def _stored_rows(backend: ClientBackend, queries: list[GaugeQuery]) -> list[dict[str, Any]]:
    return [stored_row(found) for found in backend.stored(queries)]


def _answer_in_order(
    to: BinaryIO, reads: queue.Queue[list[Future[list[dict[str, Any]]]]],
    asked: queue.Queue[dict[str, Any]],
) -> None:
    """Answer each gauge request once its reads are done, in the order asked, while the
    reads of the next ones go on. A read that fails unexpectedly is handed to the main
    thread, which ends this process with it: the parent says why and reads the gauges
    itself."""
    try:
        while True:
            found = reads.get()
            _answer(to, {"stored": [row for f in found for row in f.result()]})
    except BaseException as exc:
        asked.put({"failed": exc})


def _warm_promql(backend: ClientBackend) -> None:
    """Open the PromQL reader now (its HTTP library's import), while the parent still
    validates, not when the parent first asks for the gauges."""
    with contextlib.suppress(MetricsUnavailable):
        backend.promql()


Final = tuple[list[str], Reads, CustomReads]


def _read_as_named(
    backend: ClientBackend, pool: ThreadPoolExecutor, requests: IO[str], residency: bool
) -> Final | None:
    """Start each project's reads the moment the parent names it (a plan's ancestry
    and custom constraints too); the final list."""
    reads: Reads = {}
    custom: CustomReads = {}

    def start(project: str) -> None:
        if project not in reads:
            topics = pool.submit(_topic_rows, backend, project)
            org = pool.submit(backend.effective_policy, project)
            subscriptions = pool.submit(backend.list_subscriptions, project)
            stored = None
            if residency:  # after the two it depends on (submitted first: no deadlock)
                stored = pool.submit(_residency_stored, backend, project, topics, subscriptions)
            else:  # a plan's
                custom[project] = pool.submit(_placed, backend, project)
            reads[project] = (topics, org, subscriptions, stored)

    for line in requests:
        message = json.loads(line)
        if "projects" in message:
            final = [str(p) for p in message["projects"]]
            for project in final:
                start(project)
            return final, reads, custom
        start(str(message["project"]))
    return None


def _placed(backend: ClientBackend, project: str) -> Placed:
    """The project's ancestry, then its organization's custom constraints (as
    plan/observe.py reads them)."""
    ancestry = backend.ancestry(project)
    try:
        return ancestry, backend.custom_constraints(project, ancestry.organization)
    except ReconcileError as exc:
        return ancestry, exc


def _topic_rows(backend: ClientBackend, project: str) -> list[Any]:
    """The project's topics as `ObservedTopic.from_row` takes them back."""
    return backend.list_topics_as(project, topic_row)


def _residency_stored(
    backend: ClientBackend, project: str, topics: Future[list[Any]],
    subscriptions: Future[SubscriptionListing],
) -> list[Any] | None:
    """Residency's gauges, those that can show anything (backends/residency_reads.py),
    as [query, stored]; None: none can."""
    try:
        rows = topics.result()
        retentions: list[int] | None = [ObservedTopic.from_row(r).retention_seconds for r in rows]
    except ReconcileError:
        retentions = None  # reported with the topics
    query = gauge_query(project, retentions, subscriptions.result())
    if query is None:
        return None
    return [query_row(query), stored_row(backend.stored([query])[0])]


def _collect(backend: ClientBackend, final: Final) -> dict[str, Any]:
    projects, reads, custom = final
    answer: dict[str, Any] = {"info": asdict(backend.info), "projects": {}}
    for project in projects:
        listing, org, subscriptions, stored = reads[project]
        entry: dict[str, Any] = {}
        try:
            entry["topics"] = listing.result()
        except ReconcileError as exc:
            entry["topics_error"] = error_row(exc)
        try:
            entry["org"] = org_row(org.result())
        except ReconcileError as exc:
            entry["org_error"] = error_row(exc)
        if project in custom:
            ancestry, found = custom[project].result()
            entry["ancestry"] = ancestry_row(ancestry)
            if isinstance(found, ReconcileError):
                entry["custom_error"] = error_row(found)
            else:
                entry["custom"] = custom_row(found)
        entry["subscriptions"] = subscriptions_row(subscriptions.result())
        if stored is not None:
            entry["stored"] = stored.result()
        answer["projects"][project] = entry
    return answer


def _answer(to: BinaryIO, answer: dict[str, Any]) -> None:
    """Write one answer, framed by its length: the parent reads exactly that much and
    goes on."""
    body = marshal.dumps(answer)
    to.write(struct.pack(">Q", len(body)))
    to.write(body)
    to.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], sys.stdin))
