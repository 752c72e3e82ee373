"""Live topics -> spec documents (plain dicts in the spec format), for `reconcile import`.

Pure: no I/O, no clients. The documents reproduce what `plan` compares, so that a
fresh import validates and plans as "no changes" apart from adopting the ownership
label (`render_documents` writes every string so that it reads back as that string:
a label value `1e3` or `yes` is quoted):
user labels (reserved `reconcile-` keys left out, they are derived), the storage
policy as explicit regions and enforceInTransit (omitted when the topic has none),
and a `publishers:` block decoded from the hedging labels.

A profile recorded under a name is emitted as a `kind: HedgingProfile` document and
referenced by name (an inline profile would change the `reconcile-hedge-profile`
label); one already defined with the same settings in the output tree is reused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.hedging import labels as hl
from reconciler.hedging.profile import HedgingProfile, RetryTimeouts, format_ms
from reconciler.names import split_topic_name
from reconciler.ownership import is_reserved
from reconciler.spec.documents import API_VERSION
from reconciler.topic import ObservedTopic, StoragePolicy, TopicShape
from reconciler.yamltext import dump_all

Doc = dict[str, Any]


def settings_key(profile: HedgingProfile) -> tuple[int, int, int]:
    """What makes two profiles the same on a topic (the label encoding's precision)."""
    return profile.hedge_delay_ms, profile.max_tokens, profile.refill_ppm


def hedging_settings(profile: HedgingProfile) -> Doc:
    return {
        "hedgeDelay": format_ms(profile.hedge_delay_ms),
        "maxTokens": profile.max_tokens,
        "refillRatio": profile.refill_ppm / 1_000_000,
    }


def profile_doc(profile: HedgingProfile) -> Doc:
    return {
        "apiVersion": API_VERSION,
        "kind": "HedgingProfile",
        "metadata": {"name": profile.name},
        "spec": hedging_settings(profile),
    }


def storage_policy(policy: StoragePolicy | None) -> Doc | None:
    """Explicit regions (a sorted set) and enforceInTransit when it is on (false and
    absent are equal, and an omitted value lets an org policy that enforces in-transit
    regions decide); None when the topic has no policy, or one without regions (the
    spec cannot state an empty region list)."""
    if policy is None or not policy.regions:
        return None
    out: Doc = {"allowedPersistenceRegions": list(policy.regions)}
    if policy.enforce_in_transit:
        out["enforceInTransit"] = True
    return out


@dataclass
class ImportResult:
    """Documents per project (profiles first, then topics) and warnings for humans."""

    documents: dict[str, list[Doc]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Profiles:
    """Named profiles: those already in the output tree, and those this import defines."""

    existing: Mapping[str, tuple[int, int, int]]
    defined: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    new_docs: dict[str, list[Doc]] = field(default_factory=dict)

    def reference(self, profile: HedgingProfile, project: str) -> bool:
        """True when the topic may refer to the profile by name (defining it if new)."""
        assert profile.name is not None
        key = settings_key(profile)
        known = self.existing.get(profile.name) or self.defined.get(profile.name)
        if known is not None:
            return known == key
        self.defined[profile.name] = key
        self.new_docs.setdefault(project, []).append(profile_doc(profile))
        return True


def topic_doc(project: str, topic: ObservedTopic, profiles: _Profiles, warnings: list[str]) -> Doc:
    shape: TopicShape = topic.shape
    labels = shape.labels
    spec: Doc = {}
    user = {k: v for k, v in sorted(labels.items()) if not is_reserved(k)}
    if user:
        spec["labels"] = user
    policy = storage_policy(shape.policy)
    if policy is not None:
        spec["messageStoragePolicy"] = policy
    elif shape.policy is not None:
        warnings.append(
            f"{topic.name}: its storage policy lists no region; left unmanaged in the spec"
        )
    try:
        decoded = hl.decode(labels)
    except hl.LabelDecodeError as exc:
        warnings.append(
            f"{topic.name}: {exc}; no publishers block written (plan will remove the "
            "partial labels)"
        )
        decoded = None
    if decoded is not None:
        spec["publishers"] = publishers_block(project, topic.name, *decoded, profiles, warnings)
    endpoint = hl.endpoint(labels)
    if endpoint is not None:
        spec.setdefault("publishers", {})["endpoint"] = endpoint
    return {
        "apiVersion": API_VERSION,
        "kind": "Topic",
        "metadata": {"project": project, "name": _topic_id(topic.name)},
        "spec": spec,
    }


def publishers_block(
    project: str,
    name: str,
    profile: HedgingProfile,
    retry: RetryTimeouts,
    profiles: _Profiles,
    warnings: list[str],
) -> Doc:
    hedging: str | Doc = hedging_settings(profile)
    if profile.name is not None:
        if profiles.reference(profile, project):
            hedging = profile.name
        else:
            warnings.append(
                f"{name}: hedging profile {profile.name!r} has other settings elsewhere; "
                "written inline (plan will relabel the profile name as 'inline')"
            )
    return {
        "retry": {
            "initialRpcTimeout": format_ms(retry.initial_rpc_timeout_ms),
            "totalTimeout": format_ms(retry.total_timeout_ms),
        },
        "hedging": hedging,
    }


def build_documents(
    topics: Mapping[str, Iterable[ObservedTopic]],
    existing_profiles: Mapping[str, tuple[int, int, int]] | None = None,
) -> ImportResult:
    """Spec documents per project, topics in name order; profiles used by several
    projects are defined once, in the first project's file (projects sorted)."""
    result = ImportResult()
    profiles = _Profiles(existing_profiles or {})
    topic_docs: dict[str, list[Doc]] = {}
    for project in sorted(topics):
        ordered = sorted(topics[project], key=lambda t: t.name)
        topic_docs[project] = [topic_doc(project, t, profiles, result.warnings) for t in ordered]
    for project, docs in topic_docs.items():
        result.documents[project] = profiles.new_docs.get(project, []) + docs
    return result


def _topic_id(name: str) -> str:
    """The topic ID of a listed topic (the service lists only well-formed names)."""
    split = split_topic_name(name)
    return name if split is None else split[1]


def render_documents(docs: list[Doc], header: str) -> str:
    """The spec file: `header` as comment lines, then the documents (yamltext.dump_all:
    no string is written where YAML would read a number, boolean, null or date)."""
    comments = "".join(f"# {line}\n" for line in header.splitlines())
    return comments + dump_all(docs, width=100)
