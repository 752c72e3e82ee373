"""Live topics -> spec documents (plain dicts in the spec format), for `reconcile import`.

Pure: no I/O, no clients. The documents reproduce what `plan` compares, so that a
fresh import validates and plans as "no changes" apart from adopting the ownership
label (`render_documents` writes every string so that it reads back as that string:
a label value `1e3` or `yes` is quoted):
user labels (reserved `reconcile-` keys left out, they are derived, and so are the
labels other tools put on what they manage, reconciler/othertools.py: the spec leaves
them to their tool, and removing one after a hand-over is not undone), the storage
policy as `inherit` when it is exactly what the org policy computes for the project
(`computed`, worked out by the caller from the effective org policy), else as explicit
regions and enforceInTransit, `false` included (the policy omitted when the topic has
none), the message
retention (in the largest unit that holds it: `172800s` is written `2d`), the key
name and the schema settings as set, and a `publishers:` block decoded from the
hedging labels, the message transforms and the ingestion source in the REST JSON
shape (the source's output-only `state` left out). What a spec cannot hold (the
settings of a deleted schema, transforms whose parameters look like secrets) is named
in a comment above the topic (`notes`), never dropped without a word. Tags are never
written: the service does not return them (input-only), so an imported file says so
in its header comment. Values every topic shares are written once,
in a `Defaults` document, when the caller says the directory allows it
(`spec/defaults_export.py`). Where a Defaults document already applies (`inherited`),
each topic is written so that it keeps its live values under it, or the value it
cannot refuse is a conflict (`spec/inherited.py`) and the caller writes nothing.

A profile recorded under a name is emitted as a `kind: HedgingProfile` document and
referenced by name (an inline profile would change the `reconcile-hedge-profile`
label); one already defined with the same settings in the output tree is reused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.frozen import thawed
from reconciler.hedging import labels as hl
from reconciler.hedging.profile import HedgingProfile, RetryTimeouts, format_ms
from reconciler.names import split_topic_name
from reconciler.othertools import is_other_tools_label
from reconciler.ownership import is_reserved
from reconciler.spec.defaults_export import factor_defaults
from reconciler.spec.documents import API_VERSION
from reconciler.spec.inherited import Conflict, Inherited, keep_live
from reconciler.topic import (
    ObservedTopic,
    StoragePolicy,
    TopicShape,
    norm_policy,
)
from reconciler.topicfields import (
    HEDGING,
    INGESTION,
    KMS_KEY,
    LABELS,
    RETENTION,
    SCHEMA_SETTINGS,
    STORAGE_POLICY,
    TRANSFORMS,
)
from reconciler.topicrules import DELETED_SCHEMA, written_duration
from reconciler.topicvalues import secret_names
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
    """Explicit regions (a sorted set) and enforceInTransit as the topic has it, `false`
    included: an omitted value is what the org policy decides, so under an org that
    enforces in-transit regions (now, or once it starts to) a spec that leaves it out
    asks for `true`, and the next plan would turn it on (issue 46); `false` written
    keeps the live topic as it is (plan/policy.py `keeps_in_transit_off`). None when
    the topic has no policy, or one without regions (the spec cannot state an empty
    region list)."""
    if policy is None or not policy.regions:
        return None
    return {
        "allowedPersistenceRegions": list(policy.regions),
        "enforceInTransit": policy.enforce_in_transit,
    }


def policy_value(policy: StoragePolicy | None, computed: StoragePolicy | None) -> str | Doc | None:
    """What import writes as a topic's messageStoragePolicy: `inherit` when the live
    policy is exactly what the org policy computes (`computed`; None: unknown or no
    location constraint), else the explicit policy (`storage_policy`), else None (left
    unmanaged)."""
    if computed is not None and norm_policy(policy) == norm_policy(computed):
        return "inherit"
    return storage_policy(policy)


@dataclass
class ImportResult:
    """Documents per project (a Defaults document first, then profiles, then topics),
    the comment lines to write above each topic (`notes`: project -> topic ID ->
    lines), warnings for humans, and the inherited values that would change topics
    (`conflicts`: when there is one, the documents must not be written)."""

    documents: dict[str, list[Doc]] = field(default_factory=dict)
    notes: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)


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


def topic_doc(
    project: str,
    topic: ObservedTopic,
    profiles: _Profiles,
    warnings: list[str],
    computed: StoragePolicy | None = None,
    notes: list[str] | None = None,
) -> Doc:
    """`computed`: the policy the org policy gives a topic of `project` (None: unknown,
    or no resource-location constraint: then a policy is written out explicitly);
    `notes` receives the comment lines for what the topic has but the spec does not
    manage."""
    notes = notes if notes is not None else []
    shape: TopicShape = topic.shape
    labels = shape.labels
    spec: Doc = {}
    user = {
        k: v for k, v in sorted(labels.items())
        if not is_reserved(k) and not is_other_tools_label(k)
    }
    if user:
        spec[LABELS.spec] = user
    policy = policy_value(shape.policy, computed)
    if policy is not None:
        spec[STORAGE_POLICY.spec] = policy
    elif shape.policy is not None:
        warnings.append(
            f"{topic.name}: its storage policy lists no region; left unmanaged in the spec"
        )
    if shape.retention is not None:
        spec[RETENTION.spec] = written_duration(shape.retention)
    if shape.kms_key_name:
        spec[KMS_KEY.spec] = shape.kms_key_name
    if shape.schema_settings is not None:
        if shape.schema_settings.schema == DELETED_SCHEMA:
            notes.append(
                f"unmanaged: {SCHEMA_SETTINGS.spec} (the topic's schema was deleted; the service "
                f"shows it as {DELETED_SCHEMA}); left as it is"
            )
        else:
            spec[SCHEMA_SETTINGS.spec] = SCHEMA_SETTINGS.to_rest(shape.schema_settings)
    written = _rest_fields(topic.name, shape, spec, notes)
    notes.extend(f"unmanaged: {text}" for text in shape.unmanaged_notes(written.__contains__))
    try:
        decoded = hl.decode(labels)
    except hl.LabelDecodeError as exc:
        warnings.append(
            f"{topic.name}: {exc}; no publishers block written (plan will remove the "
            "partial labels)"
        )
        decoded = None
    if decoded is not None:
        spec[HEDGING.spec] = publishers_block(project, topic.name, *decoded, profiles, warnings)
    endpoint = hl.endpoint(labels)
    if endpoint is not None:
        spec.setdefault(HEDGING.spec, {})["endpoint"] = endpoint
    return {
        "apiVersion": API_VERSION,
        "kind": "Topic",
        "metadata": {"project": project, "name": _topic_id(topic.name)},
        "spec": spec,
    }


def _rest_fields(name: str, shape: TopicShape, spec: Doc, notes: list[str]) -> set[str]:
    """Write the live message transforms and ingestion source as the spec declares
    them (the REST JSON shape; an ingestion source's output-only `state` left out);
    the REST names written. Transforms whose parameters name what looks like a secret
    are not written (a spec is no place for one: validate refuses it), but named in a
    note. Tags cannot be written: a live topic never shows them (input-only)."""
    written: set[str] = set()
    if shape.message_transforms is not None:
        secrets = sorted(set(secret_names(shape.message_transforms)))
        if secrets:
            notes.append(
                f"unmanaged: {TRANSFORMS.spec} (their parameters name "
                f"{', '.join(repr(s[:40]) for s in secrets[:3])}, which look like secrets: "
                "not written to a spec)"
            )
            written.add(TRANSFORMS.rest)  # said here, not again as unmanaged
        else:
            spec[TRANSFORMS.spec] = thawed(shape.message_transforms)
            written.add(TRANSFORMS.rest)
    if shape.ingestion is not None:
        spec[INGESTION.spec] = thawed(shape.ingestion)
        written.add(INGESTION.rest)
    return written


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
    computed: Mapping[str, StoragePolicy | None] | None = None,
    defaults: bool = False,
    inherited: Inherited | None = None,
) -> ImportResult:
    """Spec documents per project, topics in name order; profiles used by several
    projects are defined once, in the first project's file (projects sorted).
    `computed`: per project, the storage policy its org policy gives a topic (a topic
    that has exactly that one is imported as `inherit`; a project left out: unknown).
    `defaults`: the documents are the only specs of their directory, so that values
    every topic shares may go into one Defaults document (in the first project's file)
    instead of each topic. `inherited`: what the Defaults documents already applying
    there give every topic; each topic keeps its live values under them, or
    `conflicts` says which value it cannot refuse."""
    result = ImportResult()
    profiles = _Profiles(existing_profiles or {})
    computed = computed or {}
    conflicts: dict[tuple[str, str], Conflict] = {}
    topic_docs: dict[str, list[Doc]] = {}
    for project in sorted(topics):
        ordered = sorted(topics[project], key=lambda t: t.name)
        given = computed.get(project)
        notes = result.notes.setdefault(project, {})
        docs = topic_docs[project] = []
        for t in ordered:
            lines: list[str] = []
            doc = topic_doc(project, t, profiles, result.warnings, given, lines)
            if inherited:
                matches = project in computed and (
                    norm_policy(t.shape.policy) == norm_policy(given)
                )
                keep_live(doc["spec"], inherited, matches, t.name, conflicts)
            docs.append(doc)
            if lines:
                notes[_topic_id(t.name)] = lines
    result.conflicts = list(conflicts.values())
    shared = factor_defaults(topic_docs) if defaults else None
    for i, (project, docs) in enumerate(topic_docs.items()):
        head = [shared] if shared is not None and i == 0 else []
        result.documents[project] = head + profiles.new_docs.get(project, []) + docs
    return result


def _topic_id(name: str) -> str:
    """The topic ID of a listed topic (the service lists only well-formed names)."""
    split = split_topic_name(name)
    return name if split is None else split[1]


def render_documents(
    docs: list[Doc], header: str, notes: Mapping[str, list[str]] | None = None
) -> str:
    """The spec file: `header` as comment lines, then the documents (yamltext.dump_all:
    no string is written where YAML would read a number, boolean, null or date), each
    topic's `notes` (by topic ID) as comment lines above it. Every line break in a
    comment starts a new comment line: text from the service stays a comment."""
    notes = notes or {}
    out = [_comment(header)]
    for doc in docs:
        name = doc.get("metadata", {}).get("name") if doc.get("kind") == "Topic" else None
        if isinstance(name, str) and name in notes:
            out.append("---\n" + _comment("\n".join(notes[name])))
            out.append(dump_all([doc], width=100).removeprefix("---\n"))
        else:
            out.append(dump_all([doc], width=100))
    return "".join(out)


def _comment(text: str) -> str:
    return "".join(f"# {line}\n" for line in text.splitlines())
