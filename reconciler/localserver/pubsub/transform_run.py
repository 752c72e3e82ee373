"""Running message transforms on one message, as TestMessageTransforms reports them:
the message after each enabled transform in turn, until one filters it or fails.

- Compression: zlib (RFC 1950) on the data, COMPRESS or DECOMPRESS; data that does
  not decompress fails the transform.
- JavaScript UDF: run by QuickJS-ng (`quickjs-ng` from PyPI, the optional `udf`
  extra: `pip install 'pubsub-reconcile[udf]'`), in a fresh context per call, bounded to
  500 ms of CPU (the UDF limit Pub/Sub's UDF overview states, as quoted in
  docs/local-server.md) and 64 MiB; the context has no module loader, no file,
  process or network object. The function gets `message` ({data: string,
  attributes}) and `metadata` ({message_id, publish_time, ordering_key} where the
  message has them), as the JavaScriptUDF signature in pubsub.proto says; `null`
  filters the message, an object with a string `data` (and optional string
  `attributes`) replaces it, anything else fails the transform. Without the engine a
  UDF cannot be run: `engine()` is None and the callers refuse, saying so.
- AI Inference: never run (the server sends nothing to a model): the transform fails,
  saying so. (Publish and delivery leave it out and pass the message unchanged:
  `publish_transforms.enabled`.)

Publish (`publish_transforms`) and delivery (`delivery_transforms`) run transforms
through `run_transforms` too: one engine for the test RPC and the message path.
"""

from __future__ import annotations

import importlib
import json
import zlib
from dataclasses import dataclass
from typing import Any

from reconciler.localserver.pubsub.limits import MAX_PUBLISH_BYTES, message_problem

UDF_CPU_LIMIT_S = 0.5
UDF_MEMORY_LIMIT = 64 * 1024 * 1024
ENGINE_MODULE = "quickjs"  # what the quickjs-ng distribution installs
NO_ENGINE = (
    "The local server runs JavaScript UDFs only with its optional JavaScript engine: "
    "install it with the `udf` extra (pip install 'pubsub-reconcile[udf]', which "
    "brings quickjs-ng from PyPI). Without it, transforms are checked, not run."
)
_engine: Any = None
_looked = False


def engine() -> Any | None:
    """The QuickJS module, imported on first use (never on a server's start, never
    on `validate`'s path); None when it is not installed."""
    global _engine, _looked
    if not _looked:
        _looked = True
        try:
            module = importlib.import_module(ENGINE_MODULE)
        except ImportError:
            module = None
        _engine = module if module is not None and hasattr(module, "Context") else None
    return _engine


class TransformFailed(Exception):
    """One transform failed on the message (its text says why, for the user)."""

    def __init__(self, message: str, code: str = "INVALID_ARGUMENT") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Step:
    """What one transform made of the message: `message` (a PubsubMessage) when it
    passed, `filtered`, or `error` (why it failed, and the gRPC code name)."""

    message: Any = None
    filtered: bool = False
    error: TransformFailed | None = None


def run_transforms(transforms: Any, message: Any) -> list[Step]:
    """The message after each enabled transform, in order; stops at a filter or a
    failure (the service: "subsequent transforms will not be applied")."""
    steps: list[Step] = []
    current = message
    for transform in transforms:
        if transform.disabled:
            continue
        try:
            result = apply(transform, current)
        except TransformFailed as failed:
            steps.append(Step(error=failed))
            break
        if result is None:
            steps.append(Step(filtered=True))
            break
        if problem := message_problem(result):
            made = TransformFailed(f"The transformed message is not one Pub/Sub takes: {problem}.")
            steps.append(Step(error=made))
            break
        steps.append(Step(message=result))
        current = result
    return steps


def apply(transform: Any, message: Any) -> Any | None:
    """The message after one transform (a new PubsubMessage), None if filtered."""
    kind = transform.WhichOneof("transform")
    if kind == "compression":
        return _compression(transform.compression, message)
    if kind == "javascript_udf":
        return run_udf(transform.javascript_udf, message)
    if kind == "ai_inference":
        raise TransformFailed(
            f"AI Inference transforms are not run by the local server: it sends no message "
            f"to the model at {transform.ai_inference.endpoint}.",
            "UNIMPLEMENTED",
        )
    raise TransformFailed("The transform names no transform.")


def _compression(settings: Any, message: Any) -> Any:
    out = type(message)()
    out.CopyFrom(message)
    mode = type(settings).CompressionMode.Name(settings.compression_mode)
    if mode == "COMPRESS":
        out.data = zlib.compress(message.data)
    else:
        # Bounded: data that would decompress past a message's limit stops there (and
        # fails the message check) instead of filling the server's memory.
        unzip = zlib.decompressobj()
        try:
            out.data = unzip.decompress(message.data, MAX_PUBLISH_BYTES + 1)
        except zlib.error as exc:
            raise TransformFailed(f"The message data is not zlib-compressed data: {exc}.") from None
        if len(out.data) > MAX_PUBLISH_BYTES:
            raise TransformFailed(
                f"The message data decompresses to more than {MAX_PUBLISH_BYTES} bytes, more "
                "than a message may hold."
            )
        if not unzip.eof:
            raise TransformFailed("The message data is not zlib-compressed data: it ends early.")
    return out


def check_udf(udf: Any) -> None:
    """TransformFailed unless the engine compiles the code and it defines the
    function `function_name` (what ValidateMessageTransform can say of a UDF)."""
    quickjs = engine()
    if quickjs is None:
        raise TransformFailed(NO_ENGINE, "FAILED_PRECONDITION")
    context = _context(quickjs)
    _define(quickjs, context, udf)


def run_udf(udf: Any, message: Any) -> Any | None:
    quickjs = engine()
    if quickjs is None:
        raise TransformFailed(NO_ENGINE, "FAILED_PRECONDITION")
    try:
        data = message.data.decode("utf-8")
    except UnicodeDecodeError:
        raise TransformFailed(
            "The message data is not UTF-8 text: a JavaScript UDF receives data as a string."
        ) from None
    metadata: dict[str, str] = {}
    if message.message_id:
        metadata["message_id"] = message.message_id
    if message.HasField("publish_time"):
        metadata["publish_time"] = message.publish_time.ToJsonString()[:19] + "Z"
    if message.ordering_key:
        metadata["ordering_key"] = message.ordering_key
    context = _context(quickjs)
    _define(quickjs, context, udf)
    given = {"data": data, "attributes": dict(message.attributes)}
    context.set("__reconcileMessage", json.dumps(given))
    context.set("__reconcileMetadata", json.dumps(metadata))
    try:
        answer = context.eval(
            "JSON.stringify(globalThis[__reconcileFunction](JSON.parse(__reconcileMessage), "
            "JSON.parse(__reconcileMetadata)) ?? null)"
        )
    except quickjs.JSException as exc:
        raise TransformFailed(_js_error(udf, exc)) from None
    result = json.loads(answer) if isinstance(answer, str) else None
    if result is None:
        return None
    return _returned(udf, message, result)


def _context(quickjs: Any) -> Any:
    context = quickjs.Context()
    context.set_time_limit(UDF_CPU_LIMIT_S)
    context.set_memory_limit(UDF_MEMORY_LIMIT)
    return context


def _define(quickjs: Any, context: Any, udf: Any) -> None:
    """Run the UDF's code in the context and check it defines the function."""
    try:
        context.eval(udf.code)
        context.set("__reconcileFunction", udf.function_name)
        kind = context.eval("typeof globalThis[__reconcileFunction]")
    except quickjs.JSException as exc:
        raise TransformFailed(_js_error(udf, exc)) from None
    if kind != "function":
        raise TransformFailed(
            f"The code of JavaScript UDF {udf.function_name!r} defines no function "
            f"{udf.function_name!r} at its top level."
        )


def _returned(udf: Any, message: Any, result: Any) -> Any:
    """The message a UDF's returned object stands for."""
    name = udf.function_name
    if not isinstance(result, dict) or not isinstance(result.get("data"), str):
        raise TransformFailed(
            f"JavaScript UDF {name!r} returned neither null nor an object with a string "
            "'data'."
        )
    attributes = result.get("attributes", dict(message.attributes))
    if not isinstance(attributes, dict) or not all(
        isinstance(v, str) for v in attributes.values()
    ):
        raise TransformFailed(
            f"JavaScript UDF {name!r} returned 'attributes' that are not string values."
        )
    out = type(message)()
    out.CopyFrom(message)
    out.data = result["data"].encode("utf-8")
    out.ClearField("attributes")
    out.attributes.update(attributes)
    return out


def _js_error(udf: Any, exc: Exception) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "interrupted" in first:
        first = f"it ran past its {int(UDF_CPU_LIMIT_S * 1000)} ms limit ({first})"
    elif "out of memory" in first:
        first = f"it used more than {UDF_MEMORY_LIMIT >> 20} MiB ({first})"
    return f"JavaScript UDF {udf.function_name!r} failed: {first[:300]}"
