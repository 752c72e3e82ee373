"""A topic's field values that are more than text: its schema settings and its storage
policy, as immutable values with their plan/request JSON (proto field names) and REST
JSON forms.

They sit below the table of topic fields (reconciler/topicfields.py), whose
conversions call them, and below the topic's shape (reconciler/topic.py), which holds
them; reconciler/topic.py re-exports them, the name every layer imports them by.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.frozen import freeze

REGIONS = "allowed_persistence_regions"
IN_TRANSIT = "enforce_in_transit"


@dataclass(frozen=True, slots=True)
class SchemaSettings:
    """A topic's schema settings in the service's form: the schema's name, the
    encoding (`JSON`, `BINARY`) and the revision range ("" = that side open)."""

    schema: str
    encoding: str
    first_revision_id: str = ""
    last_revision_id: str = ""

    def to_json(self) -> dict[str, str]:
        return {
            "schema": self.schema, "encoding": self.encoding,
            "first_revision_id": self.first_revision_id,
            "last_revision_id": self.last_revision_id,
        }

    def to_rest(self) -> dict[str, str]:
        """The REST JSON form, which specs and custom constraints' conditions read: the
        revision ids only when set."""
        out = {"schema": self.schema, "encoding": self.encoding}
        if self.first_revision_id:
            out["firstRevisionId"] = self.first_revision_id
        if self.last_revision_id:
            out["lastRevisionId"] = self.last_revision_id
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> SchemaSettings | None:
        """A plan/request settings object as read; None when absent or null."""
        if not data:
            return None
        return cls(
            str(data.get("schema") or ""), str(data.get("encoding") or ""),
            str(data.get("first_revision_id") or ""), str(data.get("last_revision_id") or ""),
        )


@dataclass(frozen=True)
class StoragePolicy:
    """Allowed persistence regions (sorted, no duplicates) and in-transit enforcement."""

    regions: tuple[str, ...] = ()
    enforce_in_transit: bool = False

    @classmethod
    def of(cls, regions: Iterable[str], enforce_in_transit: bool | None = False) -> StoragePolicy:
        return cls(tuple(sorted(set(regions))), bool(enforce_in_transit))

    @property
    def is_empty(self) -> bool:
        """No region and not enforced: the same as no policy for every comparison."""
        return not self.regions and not self.enforce_in_transit

    @property
    def region_set(self) -> frozenset[str] | None:
        """The regions; None = every region (no region list)."""
        return frozenset(self.regions) if self.regions else None

    def to_json(self) -> dict[str, Any]:
        return {REGIONS: list(self.regions), IN_TRANSIT: self.enforce_in_transit}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> StoragePolicy | None:
        """A plan/request policy object as read; None when absent, null or `{}`."""
        if not data:
            return None
        return cls.of(data.get(REGIONS) or (), data.get(IN_TRANSIT) or False)


def is_regionless(policy: StoragePolicy | None) -> bool:
    """A storage policy that is set but lists no region. The Pub/Sub proto defines an
    empty allowed_persistence_regions as allowing no region, "not a valid
    configuration": it never means "every region" (that is no policy at all)."""
    return policy is not None and not policy.regions


def norm_policy(policy: StoragePolicy | None) -> StoragePolicy | None:
    """The comparable form: an empty policy (no regions, not enforced) == no policy."""
    return None if policy is None or policy.is_empty else policy


def policy_json(policy: StoragePolicy | None) -> dict[str, Any] | None:
    return None if policy is None else policy.to_json()


def region_set(policy: StoragePolicy | None) -> frozenset[str] | None:
    """A policy's regions; None = every region (no policy, or no region list)."""
    return None if policy is None else policy.region_set


def rest_policy(regions: Iterable[str], enforce_in_transit: bool) -> dict[str, Any]:
    """A storage policy in the REST JSON shape, as a custom constraint's condition sees
    it: `enforceInTransit` only when true (the wire has no false: proto3 JSON leaves it
    out, and the local server's REST JSON the same way)."""
    policy: dict[str, Any] = {"allowedPersistenceRegions": list(regions)}
    if enforce_in_transit:
        policy["enforceInTransit"] = True
    return policy


# -- the fields held in their REST JSON shape (message transforms, ingestion, tags) ----

# Members a spec may write that the service returns without (proto3 JSON leaves a
# default out): dropped from both sides, so `disabled: false` equals no `disabled`.
_DEFAULTS: tuple[Any, ...] = (None, False, "", 0, [])
# What the service returns but a request never sets: an ingestion source's `state`
# (OUTPUT_ONLY in google/pubsub/v1/pubsub.proto).
_OUTPUT_ONLY = frozenset({"state"})
# Free-form members (a google.protobuf.Struct): taken exactly as written.
_VERBATIM = frozenset({"parameters"})


def rest_value(value: Any, *, drop: frozenset[str] = frozenset()) -> Any:
    """`value` (REST JSON, camelCase) in the one form both sides are compared in:
    read-only (reconciler/frozen.py), members at their proto3 default left out, the
    keys in `drop` left out at every depth; a Struct's `parameters` as written."""
    return freeze(_normal(value, drop))


def _normal(value: Any, drop: frozenset[str]) -> Any:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, member in value.items():
            if key in drop:
                continue
            if key in _VERBATIM:
                out[key] = member
                continue
            normal = _normal(member, drop)
            if not any(normal is d or (type(normal) is type(d) and normal == d)
                       for d in _DEFAULTS):
                out[key] = normal
        return out
    if isinstance(value, list | tuple):
        return [_normal(member, drop) for member in value]
    return value


def canonical_transforms(value: Any) -> Any:
    """A topic's `messageTransforms` (a list) as compared and held; None stays None."""
    return None if value is None else rest_value(list(value))


def canonical_ingestion(value: Any) -> Any:
    """A topic's `ingestionDataSourceSettings` as compared and held, its source's
    output-only `state` left out; None stays None."""
    return None if value is None else rest_value(value, drop=_OUTPUT_ONLY)


def canonical_tags(value: Any) -> Any:
    """A topic's `tags` (tag key -> tag value short name), read-only; None stays None."""
    return None if value is None else rest_value({str(k): str(v) for k, v in value.items()})


# -- secrets: never written to a spec, a plan or an output ------------------------

# Member names that say a value is a secret. No field of an ingestion source is one
# (the sources authenticate by identity federation: role ARNs, client and tenant IDs,
# identity pool IDs, service accounts); a transform's free-form `parameters` could
# hold one. (`max_tokens`, a model's parameter, is not one; `token`, `id_token`,
# `apiKey` are.)
SECRET_NAME = re.compile(
    r"secret|passw|credential|private.?key|api.?key|access.?(?:key|token)|bearer"
    r"|authori[sz]ation|auth.?(?:token|key)|(?:refresh|session).?token|(?:^|[_-])token$",
    re.IGNORECASE,
)
REDACTED = "<redacted sha256:"


def secret_names(value: Any) -> Iterator[str]:
    """The member names, at any depth of `value`, that say their value is a secret."""
    if isinstance(value, Mapping):
        for key, member in value.items():
            if SECRET_NAME.search(str(key)):
                yield str(key)
            yield from secret_names(member)
    elif isinstance(value, list | tuple):
        for member in value:
            yield from secret_names(member)


def redacted(value: Any) -> Any:
    """`value` with each member a secret's name names replaced by `<redacted
    sha256:…>` (the first 12 hex digits of its JSON's digest: two values compare as
    they did, and nothing of the secret is shown); `value` itself when none is (the
    common case: no copy). Already redacted members stay as they are."""
    if not any(secret_names(value)):
        return value
    return freeze(_redact(value))


def _redact(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {
            k: _hidden(v) if SECRET_NAME.search(str(k)) else _redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_redact(v) for v in value]
    return value


def _hidden(value: Any) -> str:
    if isinstance(value, str) and value.startswith(REDACTED):
        return value
    import hashlib  # here: secret-looking parameters are rare, and validate starts cold

    text = json.dumps(value, sort_keys=True, default=str)
    return f"{REDACTED}{hashlib.sha256(text.encode()).hexdigest()[:12]}>"
