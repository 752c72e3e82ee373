"""Cloud Monitoring's PromQL API, the subset a reconciler needs: one instant query
over the by-region gauges, served on the REST face at

    GET /v1/projects/P/location/global/prometheus/api/v1/query?query=Q[&time=T]

Q is ONE instant vector selector: an optional metric name and `{label OP "value", ...}`
with OP one of `=`, `!=`, `=~`, `!~` (regular expressions fully anchored, as in
Prometheus; Python's `re` stands in for RE2). The names are Cloud Monitoring's mapped
to PromQL ("the first / to :, other specials to _"): the by-region gauges of
`metric_catalog`, e.g. `pubsub_googleapis_com:subscription_num_unacked_messages_by_region`.
Labels: `__name__`, `project_id`, `topic_id` / `subscription_id` / `snapshot_id`,
`region` and `monitored_resource` (`pubsub_topic`, `pubsub_subscription`,
`pubsub_snapshot`). The values are the very readings the gRPC face's
`ListTimeSeries` computes (`MonitoringService`); gauges have no history here,
so `time` more than a sampling period (60 s) ago selects nothing. Anything else
(functions, operators, range selectors, offsets, other metrics) answers 400 with
Prometheus' error shape `{"status": "error", "errorType": "bad_data", "error": "..."}`.

Each query is one call of the pseudo-RPC `PromQLQuery` (`query_rpc`) through the
dispatcher: it is counted per project in the server's RPC counters, and fault rules
may name it. The HTTP side (the path, the query parameters, Prometheus' error shape)
is the REST face's: `promql_face`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import ServiceError, invalid
from reconciler.localserver.monitoring.aggregation import NS
from reconciler.localserver.monitoring.metric_catalog import METRICS, RESOURCE_LABELS, Metric
from reconciler.localserver.monitoring.service import (
    GAUGE_FRESH_NS,
    MonitoringService,
    readings,
)
from reconciler.promqlnames import promql_name

METHOD = "PromQLQuery"


GAUGES: dict[str, Metric] = {
    promql_name(m.type): m
    for m in METRICS.values()
    if m.kind == "GAUGE" and m.source[0] in ("unacked", "retained", "billable", "snapshot")
}


# ---------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class Matcher:
    """One label matcher; also what `MonitoringService` filters resources with
    (`scope`, `label`, `matches`)."""

    label: str
    op: str  # "=", "!=", "=~", "!~"
    value: str
    pattern: re.Pattern[str] | None = None

    @property
    def scope(self) -> str:
        return "resource" if self.label in _RESOURCE_LABELS else "metric"

    def matches(self, value: str | None) -> bool:
        text = value or ""  # an absent label is the empty string, as in Prometheus
        if self.op == "=":
            return text == self.value
        if self.op == "!=":
            return text != self.value
        assert self.pattern is not None
        found = self.pattern.fullmatch(text) is not None
        return found if self.op == "=~" else not found

    def only(self) -> frozenset[str] | None:
        """Every value this matcher accepts, when that is a few literals (`=`, or `=~`
        of an alternation of escaped literals: what reconcile asks for); None when it
        accepts more. The server then looks those resources up instead of matching
        each one of the project."""
        if self.op == "=":
            return frozenset((self.value,))
        if self.op != "=~":
            return None
        found: list[str] = []
        current: list[str] = []
        chars = iter(self.value)
        for ch in chars:
            if ch == "\\":
                escaped = next(chars, "")
                if escaped.isalnum() or not escaped:  # a class (\d, \w...) or a bad end
                    return None
                current.append(escaped)
            elif ch == "|":
                found.append("".join(current))
                current = []
            elif ch in _REGEX_SPECIAL:
                return None
            else:
                current.append(ch)
        found.append("".join(current))
        return frozenset(found)


_REGEX_SPECIAL = frozenset(".+*?()[]{}^$")


_RESOURCE_LABELS = frozenset({"project_id", "topic_id", "subscription_id", "snapshot_id"})

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
      | (?P<op>=~|!~|!=|=)
      | (?P<punct>[{},])
      | (?P<name>[A-Za-z_:][A-Za-z0-9_:]*)
      | (?P<other>\S)
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a",
            "b": "\b", "f": "\f", "v": "\v"}
SUBSET = (
    "the local server answers one instant vector selector, NAME{label=\"v\", ...} with "
    "=, !=, =~ or !~, over the Pub/Sub by-region gauges"
)


def bad_data(message: str) -> ServiceError:
    return invalid(message)


def _unquote(token: str) -> str:
    if token[0] == "`":
        return token[1:-1]
    body = token[1:-1]
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt not in _ESCAPES:
                raise bad_data(f"1:{i + 2}: parse error: unknown escape sequence \\{nxt}")
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _tokens(query: str) -> list[tuple[str, str, int]]:
    out = []
    pos = 0
    while pos < len(query):
        if query[pos:].strip() == "":
            break
        found = _TOKEN.match(query, pos)
        assert found is not None  # `other` matches any non-space character
        kind = found.lastgroup or "other"
        out.append((kind, found.group(kind), found.start(kind)))
        pos = found.end()
    return out


def parse(query: str) -> list[Matcher]:
    """The selector's matchers (the metric name as a `__name__` matcher), or a
    bad_data ServiceError naming the position and what is supported."""
    if not query.strip():
        raise bad_data("1:1: parse error: no expression found in input")
    tokens = _tokens(query)
    matchers: list[Matcher] = []
    i = 0
    if tokens[0][0] == "name":
        matchers.append(Matcher("__name__", "=", tokens[0][1]))
        i = 1
    if i < len(tokens) and tokens[i][1] == "{":
        i = _braces(tokens, i + 1, matchers)
    if i < len(tokens):
        _, text, at = tokens[i]
        raise bad_data(f"1:{at + 1}: parse error: unexpected {text!r} ({SUBSET})")
    if not matchers:
        raise bad_data(f"1:1: parse error: unexpected {tokens[0][1]!r} ({SUBSET})")
    if all(m.matches("") for m in matchers):
        raise bad_data(
            "vector selector must contain at least one non-empty matcher"
        )
    return matchers


def _braces(tokens: list[tuple[str, str, int]], i: int, out: list[Matcher]) -> int:
    """Matchers up to the closing brace; the index after it."""
    while True:
        if i >= len(tokens):
            raise bad_data("parse error: unclosed left brace")
        if tokens[i][1] == "}":
            return i + 1
        if i + 2 >= len(tokens):
            raise bad_data("parse error: unexpected end of input inside braces")
        (k1, label, at), (k2, op, at2), (k3, value, at3) = tokens[i : i + 3]
        if k1 != "name" or ":" in label:
            raise bad_data(f"1:{at + 1}: parse error: unexpected {label!r} in label matching, "
                           "expected label")
        if k2 != "op":
            raise bad_data(f"1:{at2 + 1}: parse error: unexpected {op!r} in label matching, "
                           "expected one of =, !=, =~, !~")
        if k3 != "string":
            raise bad_data(f"1:{at3 + 1}: parse error: unexpected {value!r} in label matching, "
                           "expected string")
        text = _unquote(value)
        pattern = None
        if op in ("=~", "!~"):
            try:
                pattern = re.compile(text)
            except re.error as exc:
                raise bad_data(f"1:{at3 + 1}: parse error: invalid regular expression "
                               f"{text!r}: {exc}") from None
        out.append(Matcher(label, op, text, pattern))
        i += 3
        if i < len(tokens) and tokens[i][1] == ",":
            i += 1
        elif i < len(tokens) and tokens[i][1] != "}":
            raise bad_data(f"1:{tokens[i][2] + 1}: parse error: unexpected {tokens[i][1]!r} "
                           "in label matching, expected \",\" or \"}\"")


# ------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class PromQLRequest:
    project: str
    query: str
    time_s: float | None


def evaluate(monitoring: MonitoringService, request: PromQLRequest) -> list[dict[str, Any]]:
    """The instant vector: every gauge reading whose labels the matchers keep."""
    matchers = parse(request.query)
    now_ns = time.time_ns()
    at_ns = now_ns if request.time_s is None else int(request.time_s * NS)
    if at_ns < now_ns - GAUGE_FRESH_NS:
        return []  # gauges have no history here
    at_ns = min(at_ns, now_ns)
    names = [m for m in matchers if m.label == "__name__"]
    rest = [m for m in matchers if m.label != "__name__"]
    kinds = [m for m in rest if m.label == "monitored_resource"]
    wanted = [
        (name, metric) for name, metric in sorted(GAUGES.items())
        if all(m.matches(name) for m in names) and all(m.matches(metric.resource) for m in kinds)
    ]
    by_resource: dict[str, list[tuple[str, Metric]]] = {}
    for name, metric in wanted:
        by_resource.setdefault(metric.resource, []).append((name, metric))
    on_resource = [m for m in rest if m.scope == "resource"]

    def keep(resource_labels: dict[str, str]) -> bool:
        return all(m.matches(resource_labels.get(m.label)) for m in on_resource)

    out = []
    for resource, metrics in sorted(by_resource.items()):
        # One backlog figure per resource, whatever the number of gauges asked for.
        found = monitoring.backlogs(request.project, resource, keep, _only_ids(resource, rest))
        for resource_labels, stats in found:
            for name, metric in metrics:
                for metric_labels, value in readings(stats, metric, now_ns):
                    labels = {
                        "__name__": name, **resource_labels, **metric_labels,
                        "monitored_resource": resource,
                    }
                    if all(m.matches(labels.get(m.label)) for m in rest):
                        out.append({"metric": labels, "value": [at_ns / NS, str(value)]})
    return out


def _only_ids(resource: str, matchers: list[Matcher]) -> frozenset[str] | None:
    """The only resource ids the matchers can keep, when they name them (None: any)."""
    id_label = RESOURCE_LABELS[resource][-1]
    out: frozenset[str] | None = None
    for m in matchers:
        values = m.only() if m.label == id_label else None
        if values is not None:
            out = values if out is None else out & values
    return out


def query_rpc(monitoring: MonitoringService) -> Rpc:
    """The query as one dispatched call: a `PromQLRequest` in, the instant vector's
    samples out (what Prometheus' `data.result` holds)."""

    def handle(request: PromQLRequest, call: CallInfo) -> list[dict[str, Any]]:
        return evaluate(monitoring, request)

    return Rpc(METHOD, handle, PromQLRequest, None, lambda r: f"projects/{r.project}")
