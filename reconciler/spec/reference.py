"""The spec reference (docs/spec-reference.md), generated from the pydantic models so
that the documentation cannot fall behind the format: every field of every kind, its
type, whether it is required and its default. A test regenerates it and fails when the
checked-in page differs.

    python -m reconciler.spec.reference > docs/spec-reference.md
"""

from __future__ import annotations

import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from reconciler.hedging import labels as hedge_labels
from reconciler.hedging import profile as hedging
from reconciler.spec.models import API_VERSION, MODEL_BY_KIND

# What a field means, keyed `Kind.path` (aliases). A field the models gain without an
# entry here (and without a pydantic `description`) is listed with an empty cell.
DESCRIPTIONS: dict[str, str] = {
    "*.apiVersion": f"Always `{API_VERSION}`.",
    "*.kind": "The document kind.",
    "*.metadata": "Which object the document is about.",
    "*.spec": "The desired state.",
    "Topic.metadata.project": "Google Cloud project ID; may come from a `Defaults` document.",
    "Topic.metadata.name": "Topic ID (3-255 characters, starts with a letter, not `goog`).",
    "*.spec.labels": "Managed label keys and values; labels others set on the topic are "
    "kept. Keys starting with `reconcile-` are reserved.",
    "*.spec.messageStoragePolicy": "Omitted: unmanaged (never touched). `inherit`: follow "
    "the effective org policy (recompute). An object: these regions exactly.",
    "*.spec.messageStoragePolicy.allowedPersistenceRegions": "Region names only (no zones, "
    "multi-regions, dual-regions, exclusions or value groups); a set, order is not a diff; "
    "never empty; each must be allowed by the org policy.",
    "*.spec.messageStoragePolicy.enforceInTransit": "Reject Publish/Pull received outside "
    "the allowed regions; absent and `false` are equal.",
    "*.spec.publishers": "Where and how the topic's publishers run; checked against the "
    "storage policy and recorded on the topic as `reconcile-` labels.",
    "*.spec.publishers.regions": "Regions the publishers run in.",
    "*.spec.publishers.messageOrdering": "Publishers use ordering keys (cannot be combined "
    "with hedging).",
    "*.spec.publishers.retry": "The publishers' retry timeouts (client defaults 5s / 60s).",
    "*.spec.publishers.retry.initialRpcTimeout": "Initial RPC timeout; must exceed the "
    "hedge delay.",
    "*.spec.publishers.retry.totalTimeout": "Total timeout; must exceed the hedge delay.",
    "*.spec.publishers.hedging": "A `HedgingProfile` name, or an inline profile object "
    "(fields as in `HedgingProfile.spec`).",
    "*.hedgeDelay": "Send a hedged attempt when one has not completed within this delay.",
    "*.maxTokens": "Token bucket size: at most this many hedged attempts in a burst.",
    "*.refillRatio": "Tokens refilled per successful publish (at most six decimals).",
    "HedgingProfile.metadata.name": "Profile name, referenced by `publishers.hedging`.",
    "Defaults.metadata.name": "Optional name, for readers.",
    "Defaults.spec.project": "Project for every Topic in this directory and below that "
    "does not name one.",
}

KIND_INTRO: dict[str, str] = {
    "Topic": "One Pub/Sub topic: its labels, message storage policy and publishers.",
    "HedgingProfile": "A named publish-hedging profile that topics refer to.",
    "Defaults": "Values merged under every Topic in the same directory and below "
    "(topics override; labels are merged).",
}


@dataclass(frozen=True)
class Row:
    path: str
    type: str
    required: bool
    default: str
    description: str


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        base, *meta = args
        if any(getattr(m, "func", None) and "duration" in m.func.__name__ for m in meta):
            return "duration"
        return _type_name(base)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in args if a is not type(None))
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"map of {_type_name(args[0])} to {_type_name(args[1])}"
    if _is_model(tp):
        return "object"
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return names.get(tp, getattr(tp, "__name__", str(tp)))


def _submodels(tp: Any) -> list[type[BaseModel]]:
    if _is_model(tp):
        return [tp]
    return [m for a in typing.get_args(tp) for m in _submodels(a)]


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return ""
    if field.default_factory is not None:
        empty = field.default_factory()  # type: ignore[call-arg]
        return "empty" if not isinstance(empty, BaseModel) else ""
    if field.default is None or field.default is PydanticUndefined:
        return ""
    value = field.default
    return f"`{str(value).lower() if isinstance(value, bool) else value}`"


def _describe(kind: str, path: str, field: FieldInfo) -> str:
    if field.description:
        return field.description
    parts = path.split(".")
    for i in range(len(parts)):
        tail = ".".join(parts[i:])
        for key in (f"{kind}.{tail}", f"*.{tail}") if i == 0 else (f"*.{tail}",):
            if key in DESCRIPTIONS:
                return DESCRIPTIONS[key]
    return ""


def rows(kind: str, model: type[BaseModel], prefix: str = "") -> list[Row]:
    """Every field of `model`, depth first, nested objects expanded under their path."""
    out: list[Row] = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{field.alias or name}"
        out.append(
            Row(
                path,
                _type_name(field.annotation),
                field.is_required(),
                _default(field),
                _describe(kind, path, field),
            )
        )
        for sub in _submodels(field.annotation):
            out.extend(rows(kind, sub, f"{path}."))
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|") if "\\|" not in text else text


def _ranges() -> list[str]:
    ms = hedging.format_ms
    table: list[tuple[str, str, tuple[float, float], Callable[[Any], str]]] = [
        ("hedgeDelay", ms(hedging.DEFAULT_HEDGE_DELAY_MS), hedging.HEDGE_DELAY_MS, ms),
        ("maxTokens", str(hedging.DEFAULT_MAX_TOKENS), hedging.MAX_TOKENS, str),
        ("refillRatio", f"{hedging.DEFAULT_REFILL_RATIO:g}", hedging.REFILL_RATIO,
         lambda v: f"{v:g}"),
    ]
    lines = ["| setting | default | allowed range (inclusive) |", "| --- | --- | --- |"]
    for name, default, (lo, hi), show in table:
        lines.append(f"| `{name}` | {default} | {show(lo)} to {show(hi)} |")
    return lines


def render() -> str:
    """The whole reference page as markdown."""
    lines = [
        "# Spec reference",
        "",
        "<!-- Generated by `python -m reconciler.spec.reference > docs/spec-reference.md`;"
        " do not edit by hand (a test fails when this page is stale). -->",
        "",
        f"Every document has `apiVersion: {API_VERSION}` and a `kind`. Unknown keys are "
        "errors (with a \"did you mean\" suggestion). Durations are written `500ms`, `5s`, "
        "`1m`, `1m30s` (whole milliseconds). The JSON Schema of the same models is "
        "`reconcile schema` (checked in as `specs/schema.json`).",
        "",
    ]
    for kind, model in MODEL_BY_KIND.items():
        lines += [f"## {kind}", "", KIND_INTRO.get(kind, ""), ""]
        lines += ["| field | type | required | default | meaning |",
                  "| --- | --- | --- | --- | --- |"]
        for r in rows(kind, model):
            lines.append(
                f"| `{r.path}` | {_cell(r.type)} | {'yes' if r.required else ''} | "
                f"{r.default} | {_cell(r.description)} |"
            )
        lines.append("")
    lines += ["## Hedging settings: defaults and ranges", "", *_ranges(), "",
              "A hedge delay must also be shorter than both retry timeouts, and hedging "
              "cannot be combined with `messageOrdering`.", "",
              "## Labels written on the topic", "",
              "| label | from |", "| --- | --- |",
              f"| `{hedge_labels.OWNERSHIP_LABEL}` | `{hedge_labels.OWNERSHIP_VALUE}` on every "
              "topic reconcile created or adopted |",
              f"| `{hedge_labels.PROFILE}` | the profile name, or "
              f"`{hedge_labels.INLINE_NAME}` |",
              f"| `{hedge_labels.DELAY}` | `hedgeDelay` in milliseconds |",
              f"| `{hedge_labels.MAX_TOKENS}` | `maxTokens` |",
              f"| `{hedge_labels.REFILL}` | `refillRatio` in parts per million |",
              f"| `{hedge_labels.RETRY_INITIAL}` | `retry.initialRpcTimeout` in milliseconds |",
              f"| `{hedge_labels.RETRY_TOTAL}` | `retry.totalTimeout` in milliseconds |", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render())
