"""Cloud Monitoring's PromQL API: one instant query, one HTTP GET
(`projects.location.prometheus.api.v1.query`), however many metric types it selects;
what the by-region gauges are read with (backends/stored.py: one call a project).

    reader = open_promql(factory, timeout)           # PromQLReader or MetricsUnavailable
    reader.query("proj-a", 'pubsub_googleapis_com:topic_num_unacked_messages_by_region'
                           '{project_id="proj-a"}')  -> list[Sample]

Google Cloud: google-auth's AuthorizedSession over Application Default Credentials
(scope monitoring.read) at https://monitoring.googleapis.com; the local server and
--emulator: plain HTTP to its one port (the local server serves the path on its REST
face). Failures are `MetricsUnavailable` with a reason a person can act on (403:
the role that allows the read); no credential or token is ever part of one.

`timeout` bounds the whole call: connecting, a token refresh, the headers and the
last byte of the body. requests' own timeout bounds each socket read only, so an
answer sent a byte at a time would never end it: the GET runs on a daemon thread and
the caller stops waiting at the deadline (`_BoundedGet`), closing the connection of
an answer that was still arriving.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from reconciler.backends.metrics import READ_PERMISSION, MetricsUnavailable

MONITORING_READ_SCOPE = "https://www.googleapis.com/auth/monitoring.read"
CLOUD_BASE_URL = "https://monitoring.googleapis.com"
# The base URL can be overridden (a Private Service Connect endpoint, a test's listener).
PROMQL_ENDPOINT_ENV = "RECONCILE_PROMQL_ENDPOINT"
POOL_SIZE = 32
QUERY_PATH = "/v1/projects/{project}/location/global/prometheus/api/v1/query"
CHUNK_BYTES = 65536  # an answer is read this much at a time


@dataclass(frozen=True, slots=True)
class Sample:
    """One element of an instant vector: its labels (`__name__` included) and value."""

    labels: Mapping[str, str]
    value: float


_RE2_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")


def any_of(values: Iterable[str]) -> str:
    """An RE2 alternation matching exactly these strings."""
    return "|".join(_RE2_SPECIAL.sub(r"\\\1", v) for v in values)


def quoted(text: str) -> str:
    """A PromQL double-quoted string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def selector(names: Iterable[str], labels: Mapping[str, str | tuple[str, ...]]) -> str:
    """An instant vector selector of these metric names (PromQL names), each label
    equal to a string or one of a tuple's."""
    terms = [f"__name__=~{quoted(any_of(sorted(names)))}"]
    for key, value in labels.items():
        if isinstance(value, tuple):
            terms.append(f"{key}=~{quoted(any_of(value))}")
        else:
            terms.append(f"{key}={quoted(value)}")
    return "{" + ",".join(terms) + "}"


class PromQLReader:
    """Instant queries through a requests-style `session`; every call ends within
    `timeout` seconds. `calls` counts them."""

    def __init__(self, session: Any, base_url: str, timeout: float) -> None:
        from requests.adapters import HTTPAdapter

        self._session = session
        self._base = base_url.rstrip("/")
        # One connection per project read at once (the callers' thread pools), kept.
        session.mount(self._base, HTTPAdapter(pool_maxsize=POOL_SIZE))
        self._timeout = timeout
        self.endpoint = self._base.split("://", 1)[-1]
        self.calls = 0

    def url_length(self, project: str, query: str) -> int:
        """The request's URL length (to keep it well under the 8 KB servers take)."""
        return len(self._base + QUERY_PATH.format(project=project)) + 7 + len(quote(query))

    def query(self, project: str, query: str) -> list[Sample]:
        """The instant vector `query` evaluates to now, or MetricsUnavailable; within
        `timeout` seconds, the whole answer included."""
        import requests
        from google.auth import exceptions as auth_exc

        url = self._base + QUERY_PATH.format(project=project)
        where = f"project {project}"
        late = MetricsUnavailable(
            f"Cloud Monitoring did not answer in time for {where} ({self.endpoint}, "
            f"--timeout {self._timeout:g}s)"
        )
        self.calls += 1
        get = _BoundedGet(self._session, url, {"query": query}, self._timeout)
        try:
            status, content = get.result()
        except FutureTimeout:
            raise late from None
        except requests.Timeout:
            raise late from None
        except requests.ConnectionError:
            raise MetricsUnavailable(
                f"cannot reach Cloud Monitoring at {self.endpoint} for {where}"
            ) from None
        except auth_exc.GoogleAuthError as exc:  # never its text: it may quote a token
            raise MetricsUnavailable(
                f"Google Cloud credentials were refused while reading metrics in {where} "
                f"({type(exc).__name__})"
            ) from None
        except requests.RequestException as exc:
            raise MetricsUnavailable(
                f"Cloud Monitoring failed for {where} ({type(exc).__name__})"
            ) from None
        return _samples(status, content, where)

    def close(self) -> None:
        self._session.close()


class _BoundedGet:
    """One GET, its body read whole, on a daemon thread of its own; `result()` waits
    at most `timeout` seconds for it. Past that the thread is left to end by itself:
    an answer still arriving has its connection shut, so it ends at once (one still
    sending its headers ends at requests' per-read timeout, or the server's end)."""

    def __init__(self, session: Any, url: str, params: dict[str, str], timeout: float) -> None:
        self._timeout = timeout
        self._done: Future[tuple[int, bytes]] = Future()
        self._lock = threading.Lock()
        self._answer: Any = None  # the streamed response, once its headers are in
        self._abandoned = False
        threading.Thread(target=self._run, args=(session, url, params), daemon=True,
                         name="promql-get").start()

    def _run(self, session: Any, url: str, params: dict[str, str]) -> None:
        try:
            answer = session.get(url, params=params, timeout=self._timeout, stream=True)
            with self._lock:
                self._answer = answer
                abandoned = self._abandoned
            try:
                body = b"" if abandoned else b"".join(answer.iter_content(CHUNK_BYTES))
            finally:
                answer.close()
            self._done.set_result((answer.status_code, body))
        except Exception as exc:  # handed to the waiting caller, if it still waits
            self._done.set_exception(exc)

    def result(self) -> tuple[int, bytes]:
        """(status, body); FutureTimeout at the deadline, or what the GET raised."""
        try:
            return self._done.result(timeout=self._timeout)
        except FutureTimeout:
            self._abandon()
            raise

    def _abandon(self) -> None:
        with self._lock:
            self._abandoned = True
            answer = self._answer
        sock = getattr(getattr(getattr(answer, "raw", None), "connection", None), "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes the read blocked on it


def _samples(status: int, content: bytes, where: str) -> list[Sample]:
    try:
        body = json.loads(content) if content else None
    except (ValueError, RecursionError):
        body = None
    if status != 200:
        raise _refused(status, body, where)
    data = body.get("data") if isinstance(body, dict) else None
    result = data.get("result") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(result, list) \
            or data.get("resultType") != "vector":
        raise MetricsUnavailable(f"Cloud Monitoring's answer for {where} is not an instant "
                                 "vector")
    out = []
    for item in result:
        try:
            labels = {str(k): str(v) for k, v in item["metric"].items()}
            value = float(item["value"][1])
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            continue  # a malformed element: that series is not shown
        if math.isfinite(value):  # PromQL may say "NaN" or "+Inf": no count or age
            out.append(Sample(labels, value))
    return out


def _message(body: Any) -> str:
    """The error text of a Prometheus error (`error`) or a Google API error
    (`error.message`), shortened."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            error = error.get("message")
        if isinstance(error, str):
            return error[:300]
    return ""


def _refused(status: int, body: Any, where: str) -> MetricsUnavailable:
    detail = _message(body)
    if status == 403:
        permission, role = READ_PERMISSION
        return MetricsUnavailable(
            f"permission denied to read metrics in {where} (needs {permission}, e.g. role "
            f"{role})",
            role=role,
        )
    if status == 401:
        return MetricsUnavailable(f"not authenticated to read metrics in {where}")
    if status in (404, 405, 501):
        return MetricsUnavailable(
            f"the target serves no Cloud Monitoring API (its PromQL query answered HTTP "
            f"{status}; e.g. Google's emulator) for {where}"
        )
    if status in (400, 422):
        return MetricsUnavailable(f"Cloud Monitoring refused the query for {where}: {detail}")
    if status == 504:
        return MetricsUnavailable(f"Cloud Monitoring did not answer in time for {where}")
    return MetricsUnavailable(f"Cloud Monitoring failed for {where} (HTTP {status})")


def open_promql(factory: Callable[[], PromQLReader]) -> PromQLReader:
    """The reader `factory` builds; a failure to build it is MetricsUnavailable."""
    try:
        return factory()
    except Exception as exc:
        raise MetricsUnavailable(
            f"cannot open the Cloud Monitoring PromQL client ({type(exc).__name__})"
        ) from None


def local_promql(address: str, timeout: float) -> PromQLReader:
    """Plain HTTP to HOST:PORT (the local server's one port, or --emulator's)."""
    import requests

    session = requests.Session()
    session.trust_env = False  # loopback: no proxy from the environment
    return PromQLReader(session, f"http://{address}", timeout)


def cloud_promql(credentials: Any, timeout: float) -> PromQLReader:
    """AuthorizedSession over the Application Default Credentials, monitoring.read."""
    from google.auth.credentials import with_scopes_if_required
    from google.auth.transport.requests import AuthorizedSession

    scoped = with_scopes_if_required(credentials, [MONITORING_READ_SCOPE])  # type: ignore[no-untyped-call]
    base = os.environ.get(PROMQL_ENDPOINT_ENV) or CLOUD_BASE_URL
    session = AuthorizedSession(scoped)  # type: ignore[no-untyped-call]
    return PromQLReader(session, base, timeout)
