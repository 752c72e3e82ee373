"""An in-memory Backend for the executor's unit tests (no Google library involved)."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from reconciler.apply.guard import Guard
from reconciler.apply.retry import RetryPolicy
from reconciler.backends.base import ObservedTopic, OrgInputs
from reconciler.plan.model import Change, Request, ResourceChange


class CodedError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.status = code
        self.message = message


class FakeBackend:
    target = "fake"

    def __init__(self, topics: dict[str, dict[str, Any]] | None = None) -> None:
        self.topics: dict[str, dict[str, Any]] = dict(topics or {})
        self.calls: Counter[str] = Counter()
        self.errors: dict[tuple[str, str], list[CodedError]] = {}
        self.on_call: Any = None
        self._lock = threading.Lock()

    def fail(self, method: str, name: str, *errors: CodedError) -> None:
        self.errors[(method, name)] = list(errors)

    def _enter(self, method: str, name: str) -> None:
        with self._lock:
            self.calls[method] += 1
            queue = self.errors.get((method, name)) or self.errors.get((method, "*"))
            err = queue.pop(0) if queue else None
        if self.on_call is not None:
            self.on_call(method, name)
        if err is not None:
            raise err

    def _obs(self, name: str) -> ObservedTopic:
        return ObservedTopic(name=name, body=dict(self.topics[name]), raw=dict(self.topics[name]))

    def list_topics(self, project: str) -> list[ObservedTopic]:
        self._enter("ListTopics", project)
        return [self._obs(n) for n in sorted(self.topics) if n.split("/")[1] == project]

    def get_topic(self, name: str) -> ObservedTopic | None:
        self._enter("GetTopic", name)
        return self._obs(name) if name in self.topics else None

    def org_inputs(self, project: str) -> OrgInputs:
        return OrgInputs(None, None, "fake")

    def create_topic(self, body: dict[str, Any]) -> ObservedTopic:
        self._enter("CreateTopic", body["name"])
        if body["name"] in self.topics:
            raise CodedError("ALREADY_EXISTS", f"Topic already exists: {body['name']}")
        self.topics[body["name"]] = {"labels": {}, **body}
        return self._obs(body["name"])

    def update_topic(self, body: dict[str, Any], update_mask: list[str]) -> ObservedTopic:
        self._enter("UpdateTopic", body["name"])
        if body["name"] not in self.topics:
            raise CodedError("NOT_FOUND", f"Topic not found: {body['name']}")
        for path in update_mask:
            self.topics[body["name"]][path] = body.get(path)
        return self._obs(body["name"])

    def delete_topic(self, name: str) -> None:
        self._enter("DeleteTopic", name)
        if name not in self.topics:
            raise CodedError("NOT_FOUND", f"Topic not found: {name}")
        del self.topics[name]

    def close(self) -> None:
        pass


def change(action: str, name: str, **topic: Any) -> ResourceChange:
    project = name.split("/")[1]
    method = {"create": "CreateTopic", "update": "UpdateTopic", "delete": "DeleteTopic"}
    body = {"name": name, **topic}
    request = None
    if action != "no-op":
        mask = sorted(topic) if action == "update" else []
        request = Request(method=method[action], topic=body, update_mask=mask)  # type: ignore[arg-type]
    return ResourceChange(
        address=name,
        project=project,
        topic=name.rsplit("/", 1)[1],
        change=Change(actions=[action], before=None, after=body),  # type: ignore[list-item]
        update_mask=list(request.update_mask) if request else [],
        request=request,
    )


def quick_guard(**kw: Any) -> Guard:
    """No rate limit, tiny backoffs: unit tests never wait for real."""
    policy = RetryPolicy(initial=0.001, maximum=0.002, max_attempts=5, deadline=5.0)
    return Guard(None, policy, **kw)
