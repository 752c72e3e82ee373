"""A topic's message transforms, ingestion source and tags (the REST JSON fields of
reconciler/topicfields.py: TRANSFORMS, INGESTION, TAGS): each taken from the topic or,
as the table says, from its Defaults documents; checked with the service's rules
(reconciler/transformrules.py and ingestionrules.py, which the local server applies
too, and reconciler/tagrules.py), each problem reported at the line of the member it
is about; held by the desired state in the REST JSON shape, read-only, None when no
document declares it (unmanaged).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec

from reconciler.diagnostics import Diagnostics
from reconciler.ingestionrules import SOURCES, ingestion_problems, source_kind
from reconciler.memo import MEMO_ENTRIES, MEMO_KEY_BYTES
from reconciler.spec.defaults import merged, nearest
from reconciler.spec.documents import DefaultsDoc, TopicDoc
from reconciler.spec.positioned import PositionedDiagnostics
from reconciler.spec.tree import Located
from reconciler.tagrules import tag_key_problem, tag_value_problem
from reconciler.topicfields import INGESTION, TAGS, TRANSFORMS
from reconciler.topicvalues import canonical_tags, rest_value, secret_names
from reconciler.transformrules import MAX_TRANSFORMS, transform_problems
from reconciler.yamlio import PathKey

TRANSFORMS_PATH: PathKey = TRANSFORMS.spec_path
INGESTION_PATH: PathKey = INGESTION.spec_path
# `messageTransforms[1].javascriptUdf.code ...`: the member a rule's message names.
_NAMED = re.compile(r"messageTransforms(?:\[(\d+)\])?((?:\.[A-Za-z]+)*)")


@dataclass(frozen=True, slots=True)
class RestFields:
    """The three fields as the desired state holds them (None: unmanaged)."""

    message_transforms: Any = None
    ingestion: Any = None
    tags: Any = None


_UNMANAGED = RestFields()


def check_rest_fields(
    located: Located[TopicDoc], chain: list[Located[DefaultsDoc]], diags: Diagnostics
) -> RestFields:
    """The topic's three fields, each problem reported at its line (`chain`: the
    Defaults documents that apply, nearest first)."""
    spec = located.model.spec
    transforms, ingestion, tags = (
        spec.message_transforms, spec.ingestion_data_source_settings, spec.tags
    )
    if transforms is None and ingestion is None and tags is None and not any(
        d.model.spec.message_transforms is not None or d.model.spec.tags for d in chain
    ):
        return _UNMANAGED  # the common case
    rep = PositionedDiagnostics(located, diags)
    transforms, transforms_rep = nearest(transforms, TRANSFORMS, rep, chain)
    return RestFields(
        _transforms(transforms, transforms_rep),
        _ingestion(ingestion, rep),
        _tags(located, chain, diags),
    )


def _rest(model: Any) -> Any:
    """The REST JSON a spec's value stands for, in the canonical form (members at their
    default left out, as the service's JSON leaves them): what the rules read."""
    return rest_value(msgspec.to_builtins(model))


# A spec's transforms, by their encoding -> (their REST JSON, the problems with them:
# path, code, message, at the key). A tree repeats a few transform lists across its
# topics (a Defaults document's, or one copied per topic): each distinct one is made
# canonical and checked once. Bounded: emptied when full, and only lists whose encoding
# is at most MEMO_KEY_BYTES kept.
_Problem = tuple[PathKey, str, str, bool]
_TRANSFORMS_SEEN: dict[bytes, tuple[Any, tuple[_Problem, ...]]] = {}


def _transforms(model: list[Any] | None, rep: PositionedDiagnostics) -> Any:
    if model is None or rep.located.invalid_within(TRANSFORMS_PATH):
        return None  # reported by its shape
    encoded = msgspec.msgpack.encode(model)
    seen = _TRANSFORMS_SEEN.get(encoded)
    if seen is None:
        rest = _rest(model)
        seen = (rest, tuple(_transform_problems(rest)))
        if len(encoded) <= MEMO_KEY_BYTES:  # a large one is kept once, by its topic
            if len(_TRANSFORMS_SEEN) >= MEMO_ENTRIES:
                _TRANSFORMS_SEEN.clear()
            _TRANSFORMS_SEEN[encoded] = seen
    rest, problems = seen
    for path, code, message, key in problems:
        rep.error(path, code, message, key=key)
    return rest


def _transform_problems(rest: Any) -> list[_Problem]:
    """The problems with a list of transforms (the REST JSON), where each is."""
    out: list[_Problem] = []
    for problem in transform_problems(rest, TRANSFORMS.spec):
        path, hint = _transform_path(problem)
        out.append((path, "message-transform", problem + hint, path == TRANSFORMS_PATH))
    for index, transform in enumerate(rest):
        parameters = ((transform.get("aiInference") or {}).get("unstructuredInference")
                      or {}).get("parameters")
        out.extend(
            ((*TRANSFORMS_PATH, index, "aiInference", "unstructuredInference",
              "parameters", name), "secret-in-spec",
             f"{name!r} looks like a secret: a transform's parameters are stored on "
             "the topic, readable by whoever may get it, and shown by every plan; give "
             "the model its credentials another way (its service account)", True)
            for name in secret_names(parameters)
        )
    return out


def _transform_path(problem: str) -> tuple[PathKey, str]:
    """Where a rule's message points, and what to do when the message does not say."""
    match = _NAMED.match(problem)
    if match is None:  # the count of enabled transforms
        return TRANSFORMS_PATH, (
            f"; disable (`disabled: true`) or remove some, to at most {MAX_TRANSFORMS}"
        )
    path: list[str | int] = list(TRANSFORMS_PATH)
    if match.group(1) is not None:
        path.append(int(match.group(1)))
    path.extend(part for part in match.group(2).split(".") if part)
    return tuple(path), ""


def _ingestion(model: Any, rep: PositionedDiagnostics) -> Any:
    if model is None or rep.located.invalid_within(INGESTION_PATH):
        return None  # reported by its shape
    rest = _rest(model)
    kind = source_kind(rest)
    if kind is None:
        rep.error(
            INGESTION_PATH, "ingestion-source",
            f"{INGESTION.spec} names no source: give one of {', '.join(SOURCES)}. A spec "
            "cannot remove a topic's source (omitted, it is left as it is): to stop "
            "ingesting, remove the key and run `gcloud pubsub topics update TOPIC "
            "--clear-ingestion-data-source-settings`",
            key=True,
        )
        return None
    where = (*INGESTION_PATH, kind)
    for problem in ingestion_problems(rest):
        rep.error(
            where, "ingestion-source",
            f"{problem}; set them under {INGESTION.spec}.{kind}"
            if problem.startswith("Missing") else problem,
        )
    return rest


def _tags(
    located: Located[TopicDoc], chain: list[Located[DefaultsDoc]], diags: Diagnostics
) -> Any:
    """MERGED, as labels (spec/defaults.py `merged`); None when no document has tags."""
    tags = merged(TAGS, located, chain, diags, _check_tags)
    return None if tags is None else canonical_tags(tags)


def _check_tags(given: Any, rep: PositionedDiagnostics, base: PathKey) -> None:
    for key, value in given.items():
        if problem := tag_key_problem(key):
            rep.error((*base, key), "tag-key", problem, key=True)
        elif problem := tag_value_problem(key, value):
            rep.error((*base, key), "tag-value", problem)
