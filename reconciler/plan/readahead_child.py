"""The read-ahead's second process (plan/readahead.py): opens the target as `plan`
would, reads each project's topics and org inputs as soon as the parent names it, and
answers once the parent has sent the final list (plan/readahead_wire.py).

    python -P -m reconciler.plan.readahead_child [--emulator HOST:PORT]
        [--org-policy FILE] [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import json
import marshal
import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any, BinaryIO

from reconciler.backends.base import OrgInputs, TargetOptions
from reconciler.backends.connect import open_backend
from reconciler.backends.gcp import GcpBackend
from reconciler.backends.topicproto import topic_row_pb
from reconciler.errors import ReconcileError
from reconciler.plan.observe import MAX_WORKERS
from reconciler.plan.readahead_wire import error_row, org_row

# Each project's topics (as rows, made while the parent still validates) and org inputs.
Reads = dict[str, tuple["Future[list[list[Any]]]", "Future[OrgInputs]"]]


def main(argv: list[str], requests: IO[str]) -> int:
    """The child's program: `requests` is the parent's pipe (JSON lines), the answer
    goes to file descriptor 1."""
    parser = argparse.ArgumentParser(prog="reconcile-read-ahead")
    parser.add_argument("--emulator")
    parser.add_argument("--org-policy", type=Path)
    parser.add_argument("--timeout", type=float, required=True)
    args = parser.parse_args(argv)
    # The answer gets the pipe to itself: anything else printed goes nowhere, and
    # closing it tells the parent "that is all" before this process has torn down.
    answer_to = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    try:
        options = TargetOptions(False, args.emulator, args.org_policy, args.timeout)
        backend = open_backend(options)
    except ReconcileError as exc:
        return _answer(answer_to, {"open_error": error_row(exc)})
    try:
        with ThreadPoolExecutor(max_workers=MAX_WORKERS) as pool:
            final = _read_as_named(backend, pool, requests)
            if final is None:
                return 1  # the parent went away without a final list
            return _answer(answer_to, _collect(backend, final))
    finally:
        backend.close()


def _read_as_named(
    backend: GcpBackend, pool: ThreadPoolExecutor, requests: IO[str]
) -> tuple[list[str], Reads] | None:
    """Start each project's reads the moment the parent names it; the final list."""
    reads: Reads = {}

    def start(project: str) -> None:
        if project not in reads:
            reads[project] = (
                pool.submit(backend.list_topics_as, project, topic_row_pb),
                pool.submit(backend.effective_policy, project),
            )

    for line in requests:
        message = json.loads(line)
        if "projects" in message:
            final = [str(p) for p in message["projects"]]
            for project in final:
                start(project)
            return final, reads
        start(str(message["project"]))
    return None


def _collect(backend: GcpBackend, final: tuple[list[str], Reads]) -> dict[str, Any]:
    projects, reads = final
    answer: dict[str, Any] = {"info": asdict(backend.info), "projects": {}}
    for project in projects:
        listing, org = reads[project]
        entry: dict[str, Any] = {}
        try:
            entry["topics"] = listing.result()
        except ReconcileError as exc:
            entry["topics_error"] = error_row(exc)
        try:
            entry["org"] = org_row(org.result())
        except ReconcileError as exc:
            entry["org_error"] = error_row(exc)
        answer["projects"][project] = entry
    return answer


def _answer(to: BinaryIO, answer: dict[str, Any]) -> int:
    """Write the answer and close the pipe: the parent reads to its end and goes on
    without waiting for this process to tear down its channels and objects."""
    with to:
        to.write(marshal.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], sys.stdin))
