"""The service's rules for a resource's message transforms (`messageTransforms`), as
pure functions over the REST JSON shape (camelCase, as a spec, a custom constraint's
condition and the REST API write them): the local server answers a problem as
INVALID_ARGUMENT on CreateTopic, UpdateTopic and ValidateMessageTransform, and the
spec checks can report the same words at the field's line, so both refuse exactly
the same transforms. No google import: `validate` may use it.

Sources (docs/local-server.md, "Message transforms and ingestion sources", cites them
for users): googleapis `google/pubsub/v1/pubsub.proto` (`JavaScriptUDF.function_name`
and `code` REQUIRED; "If multiple JavaScriptUDF's are specified on a resource, each
must have a unique `function_name`"; `AIInference.endpoint` REQUIRED, "of the form
`projects/{project}/locations/{location}/endpoints/{endpoint}` or
`projects/{project}/locations/{location}/publishers/{publisher}/models/{model}`";
`Compression.compression_algorithm` and `compression_mode` REQUIRED); Pub/Sub's
"Create a topic with SMTs" page (at most five SMTs a topic; Google's emulator counts
only the enabled ones, in the words used here); the 20 KB bound on a
UDF's code is the "Limitations" of Pub/Sub's UDF overview as a public third-party
note quotes it (the page's own text was not at hand): the docs say so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

MAX_TRANSFORMS = 5
MAX_UDF_CODE_BYTES = 20 * 1024
KINDS = ("javascriptUdf", "aiInference", "compression")
ENDPOINT_FORMATS = (
    "projects/P/locations/L/endpoints/E",
    "projects/P/locations/L/publishers/PUB/models/M",
)
_SEGMENT = r"[^/\s]+"
_ENDPOINT = re.compile(
    rf"projects/{_SEGMENT}/locations/({_SEGMENT})/"
    rf"(?:endpoints/{_SEGMENT}|publishers/{_SEGMENT}/models/{_SEGMENT})"
)
_COMPRESSION = {
    "compressionAlgorithm": ("ZLIB",),
    "compressionMode": ("COMPRESS", "DECOMPRESS"),
}


def endpoint_location(endpoint: str) -> str | None:
    """The location an AI Inference endpoint names (where the service sends each
    message), or None for a malformed endpoint."""
    match = _ENDPOINT.fullmatch(endpoint)
    return match.group(1) if match else None


def ai_endpoints(transforms: Sequence[Mapping[str, Any]] | None) -> list[tuple[int, str]]:
    """The enabled AI Inference transforms' endpoints, with each one's index: the
    models every message is sent to, in the order they run."""
    out: list[tuple[int, str]] = []
    for index, transform in enumerate(transforms or ()):
        if transform.get("disabled"):
            continue
        endpoint = (transform.get("aiInference") or {}).get("endpoint")
        if isinstance(endpoint, str):
            out.append((index, endpoint))
    return out


def model_locations(transforms: Sequence[Mapping[str, Any]]) -> list[str]:
    """The locations of the enabled AI Inference transforms' models, in order, each
    once: where the messages go for inference."""
    out: list[str] = []
    for _, endpoint in ai_endpoints(transforms):
        where = endpoint_location(endpoint)
        if where is not None and where not in out:
            out.append(where)
    return out


def transform_problems(
    transforms: Sequence[Mapping[str, Any]], field: str = "messageTransforms"
) -> list[str]:
    """What the service refuses in a resource's transforms, each problem naming the
    field (`messageTransforms[1].javascriptUdf.functionName ...`); [] when none."""
    problems: list[str] = []
    enabled = sum(1 for t in transforms if not t.get("disabled"))
    if enabled > MAX_TRANSFORMS:
        # Google's emulator's words (0.8.20): only enabled transforms count
        problems.append(
            "The request exceeds the maximum number of enabled message transforms. "
            f"Maximum enabled transforms: {MAX_TRANSFORMS}. Enabled transforms: {enabled}"
        )
    seen: dict[str, int] = {}
    for index, transform in enumerate(transforms):
        where = f"{field}[{index}]"
        problems.extend(one_transform_problems(transform, where))
        name = (transform.get("javascriptUdf") or {}).get("functionName")
        if isinstance(name, str) and name:
            if name in seen:
                problems.append(
                    f"{where}.javascriptUdf.functionName {name!r} is also the function name "
                    f"of {field}[{seen[name]}]; each JavaScript UDF of a resource needs a "
                    "unique function name."
                )
            else:
                seen[name] = index
    return problems


def one_transform_problems(
    transform: Mapping[str, Any], where: str = "messageTransform"
) -> list[str]:
    """The problems of one transform (`where` names it in the messages)."""
    given = [kind for kind in KINDS if kind in transform]
    if not given:
        return [f"{where} names no transform: give one of {', '.join(KINDS)}."]
    if len(given) > 1:
        return [f"{where} names {' and '.join(given)}; a transform is exactly one of them."]
    kind = given[0]
    body = transform[kind] or {}
    if kind == "javascriptUdf":
        return _udf_problems(body, f"{where}.javascriptUdf")
    if kind == "aiInference":
        endpoint = body.get("endpoint", "")
        if not endpoint:
            return [f"{where}.aiInference.endpoint is required."]
        if endpoint_location(str(endpoint)) is None:
            return [
                f"{where}.aiInference.endpoint {str(endpoint)[:200]!r} is not a Vertex AI "
                f"endpoint; expected {ENDPOINT_FORMATS[0]} or {ENDPOINT_FORMATS[1]}."
            ]
        return []
    problems = []
    for key, allowed in _COMPRESSION.items():
        value = body.get(key)
        if value not in allowed:
            problems.append(
                f"{where}.compression.{key} is required: one of {', '.join(allowed)}."
            )
    return problems


def _udf_problems(body: Mapping[str, Any], where: str) -> list[str]:
    problems = []
    name = body.get("functionName", "")
    code = body.get("code", "")
    if not name:
        problems.append(f"{where}.functionName is required: the function the code defines.")
    if not code:
        problems.append(f"{where}.code is required: JavaScript defining the function.")
    size = len(str(code).encode())
    if size > MAX_UDF_CODE_BYTES:
        problems.append(
            f"{where}.code is {size} bytes; a JavaScript UDF's code takes at most "
            f"{MAX_UDF_CODE_BYTES} bytes (20 KB)."
        )
    return problems
