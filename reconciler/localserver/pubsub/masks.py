"""Update masks of UpdateTopic and UpdateSubscription as the service takes them: a
path names a field of the resource (snake_case, as protobuf's FieldMask holds it:
REST's camelCase `updateMask` arrives converted) or, through singular message
fields, a field inside one (`push_config.no_wrapper`,
`dead_letter_policy.max_delivery_attempts`: Google's own samples send such paths,
and gcloud sends `pushConfig.noWrapper`). A path the resource has no field for, a
map key (`labels.team`) or an output-only field is refused in the words of Google's
emulator, which name the service's rule ("field paths must be of the form
'push_config' rather than 'pushConfig'"); an immutable top-level field is refused as
not mutable. A path inside another path of the same mask adds nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from reconciler.localserver.api.protos import is_repeated
from reconciler.localserver.api.status import invalid


class MaskRules(NamedTuple):
    """What one Update method takes."""

    request: str  # "UpdateSubscriptionRequest"
    resource: str  # "Subscription"
    example: str  # the snake_case field the refusal's note names, e.g. "push_config"
    misspelt: str  # ... and how it is not spelt, e.g. "pushConfig"
    mutable: frozenset[str]  # top-level fields a path may start with
    immutable: frozenset[str]  # top-level fields refused as not mutable
    output_only: frozenset[str] = frozenset()  # nested paths refused as unknown

    def unknown(self, path: str) -> Exception:
        return invalid(
            f"Invalid update_mask provided in the {self.request}: {path} is not a known "
            f"{self.resource} field. Note that field paths must be of the form "
            f"'{self.example}' rather than '{self.misspelt}'."
        )


def checked_paths(paths: Iterable[str], descriptor: Any, rules: MaskRules) -> tuple[str, ...]:
    """The mask's paths, each once, those inside another path of the mask left out;
    INVALID_ARGUMENT for an empty mask or a path the method does not take."""
    given = list(paths)
    if not given:
        raise invalid(
            f"The update_mask in the {rules.request} must be set, and must contain a "
            "non-empty paths list."
        )
    for path in given:
        top = path.split(".", 1)[0]
        if top in rules.immutable:
            raise invalid(
                f"Invalid update_mask provided in the {rules.request}: the {top} field in "
                f"the {rules.resource} is not mutable."
            )
        known = top in rules.mutable and path not in rules.output_only
        if not known or _field(descriptor, path) is None:
            raise rules.unknown(path)
    kept = dict.fromkeys(given)
    return tuple(p for p in kept if not any(p.startswith(q + ".") for q in kept))


def _field(descriptor: Any, path: str) -> Any | None:
    """The field `path` names, through singular message fields only; None if none."""
    field = None
    for part in path.split("."):
        if field is not None:
            if field.message_type is None or is_repeated(field):
                return None
            descriptor = field.message_type
        field = descriptor.fields_by_name.get(part)
        if field is None:
            return None
    return field


def copy_path(target: Any, given: Any, path: str) -> None:
    """Make the field `path` of `target` what it is in `given` (unset there: cleared,
    a message field left absent)."""
    *parents, leaf = path.split(".")
    for name in parents:
        target = getattr(target, name)
        given = getattr(given, name)
    field = target.DESCRIPTOR.fields_by_name[leaf]
    if is_repeated(field):  # maps too
        target.ClearField(leaf)
        getattr(target, leaf).MergeFrom(getattr(given, leaf))
    elif field.message_type is not None:
        if given.HasField(leaf):
            getattr(target, leaf).CopyFrom(getattr(given, leaf))
        else:
            target.ClearField(leaf)
    else:
        setattr(target, leaf, getattr(given, leaf))


def touches(paths: Iterable[str], top: str) -> bool:
    """Whether the mask names `top` or a field inside it."""
    return any(p == top or p.startswith(top + ".") for p in paths)
