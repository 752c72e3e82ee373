"""Specs that reproduce live topics, so that an existing project can be brought under
reconcile without retyping it (the `reconcile import` flow: commands/import_.py).

    read_live(target, projects) -> Live: topics per project, where they were read,
                                       and the storage policy each project's org
                                       policy computes (for `inherit`)
    select(project, topics, wanted)         the --topic filter
    missing_topics(projects, found, wanted) --topic values that matched nothing
    other_specs(out_dir, skip) -> OutputTree  the spec files already in and above the
                                            output tree, read, and the Defaults
                                            documents that apply in out_dir
    existing_profiles(tree)                 profiles those files define
    standing_findings(topics, facts, computed, custom) -> {project: {topic ID: [Finding]}}
                                            what plan will say of each imported value
                                            the org would refuse today
    mark_findings(text, marks) -> str       those findings as comments at the values
    other_tools_notices(topics, notes) -> [warning]  topics another tool labels as its
                                            own: a warning each, and a comment above it
    refused_adoption_notices(topics, custom, notes) -> [warning]  topics whose adoption
                                            a custom constraint restricting UPDATE
                                            refuses: a warning each, and a comment
    header(source, stamp, project, count)   its comment

Import keeps every live value, those the org would refuse today included (a region
outside the allowed set, enforceInTransit off under an org that enforces it, no key or
another project's key under the CMEK constraints, what a custom constraint binding
only creation refuses, a publishers' endpoint outside the topic's regions with
enforcement on): the org policy binds creation and the calls that set a value, not a
topic that has it, so the plan after an import changes only reconcile's ownership
labels and reports each such value once, in the existing family (spec/orgrules.py
`existing_problems`, plan/customcheck.py `standing_refusals`). The written file names
that finding at the value, so a reviewer sees it before the plan does. What import
reads is what the plan reads, through the same code (plan/observe.py `read_topics`):
the topics, each project's effective org policy, its place in Resource Manager's
hierarchy (which places a key's project for the CMEK constraints) and its
organization's custom constraints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from reconciler.backends.base import CustomConstraints, ObservedTopic, TargetOptions
from reconciler.backends.connect import open_backend
from reconciler.diagnostics import Diagnostic, Diagnostics, Severity
from reconciler.hedging.labels import endpoint as endpoint_label
from reconciler.messagepaths import Bounds, Call, disabled_findings
from reconciler.names import topic_name, topics_prefix
from reconciler.othertools import ADOPTION_GUIDE, managed_by
from reconciler.ownership import DEFAULT_OWNER
from reconciler.plan.customcheck import adopted_resource, adoption_refusals, standing_refusals
from reconciler.plan.observe import read_topics
from reconciler.plan.policy import computed_policy
from reconciler.spec.customrules import EXISTING_REFUSED, REFUSED, fix_hint
from reconciler.spec.defaults import defaults_chain, index_defaults
from reconciler.spec.discover import SNAPSHOT_NAMES, SPEC_SUFFIXES, search_bound
from reconciler.spec.documents import API_VERSION, DefaultsDoc
from reconciler.spec.export import policy_value, settings_key
from reconciler.spec.loader import discover, load_tree
from reconciler.spec.orgexisting import Standing, existing_problems
from reconciler.spec.orgrules import TOPIC, OrgFacts, locate
from reconciler.spec.profiles import profile_from_settings
from reconciler.spec.tree import Located, SpecTree
from reconciler.topic import StoragePolicy, is_regionless, norm_policy
from reconciler.yamlio import YamlProblem, load_documents


def select(
    project: str, topics: Sequence[ObservedTopic], wanted: Sequence[str]
) -> list[ObservedTopic]:
    """The topics named by --topic (ID or full name; all when none named)."""
    if not wanted:
        return list(topics)
    names = {w if w.startswith("projects/") else topics_prefix(project) + w for w in wanted}
    return [t for t in topics if t.name in names]


def missing_topics(
    projects: Sequence[str], found: dict[str, list[ObservedTopic]], wanted: Sequence[str]
) -> list[str]:
    """--topic values that matched no live topic in any of the projects."""
    names = {t.name for ts in found.values() for t in ts}
    out = []
    for w in wanted:
        full = [w] if w.startswith("projects/") else [topic_name(p, w) for p in projects]
        if not names.intersection(full):
            out.append(w)
    return out


@dataclass
class OutputTree:
    """The specs already around the output directory, read once: those in it and below
    (the files about to be overwritten excluded), and those directly in each directory
    above it up to the repository root (`search_bound`, as for the org-policy
    snapshot), whose Defaults documents apply to it too when a tree above is validated."""

    tree: SpecTree | None
    inside: bool  # the output directory (or below) holds other specs
    # What could not be read: a Defaults document or a hedging profile the imported
    # topics would take may be in it, so import refuses rather than guess.
    unreadable: tuple[Diagnostic, ...] = ()

    def defaults_chain(self, out_dir: Path) -> list[Located[DefaultsDoc]]:
        """The Defaults documents that apply to the files written in `out_dir`,
        nearest first."""
        if self.tree is None:
            return []
        return defaults_chain(out_dir, index_defaults(self.tree.defaults, Diagnostics()))


def other_specs(out_dir: Path, skip: set[Path]) -> OutputTree:
    """The spec files already in and above the output tree, read (see OutputTree)."""
    files: list[Path] = []
    if out_dir.is_dir():
        files, _ = discover([out_dir], Diagnostics())
        files = [f for f in files if f.resolve() not in skip]
    inside = bool(files)
    above = _specs_above(out_dir)
    if not files and not above:
        return OutputTree(None, inside)
    diags = Diagnostics()
    tree = load_tree(files + above, diags)
    foreign = {str(p) for p in above if not _names_reconcile(p)}
    errors = tuple(
        d for d in diags.sorted() if d.severity is Severity.ERROR and d.file not in foreign
    )
    return OutputTree(tree, inside, errors)


def _names_reconcile(path: Path) -> bool:
    """Whether a file above the output directory may hold reconcile documents: it
    names reconcile's apiVersion group. The directories above hold other tools' YAML
    too (mkdocs.yml, docker-compose.yaml): their errors are not the import's concern."""
    try:
        with path.open("rb") as handle:
            return API_GROUP in handle.read(MAX_SNIFF)
    except OSError:
        return True  # unreadable: it may be one, and the load said why it failed


API_GROUP = API_VERSION.rsplit("/", 1)[0].encode() + b"/"  # "reconcile.pubsub/"
MAX_SNIFF = 1 << 20


def _specs_above(out_dir: Path) -> list[Path]:
    """The spec files directly in each directory above `out_dir`, up to `search_bound`
    (the org-policy snapshots there excluded), relative to the current directory when
    they are below it, as messages show paths."""
    here = out_dir.resolve()
    bound = search_bound(here)
    cwd = Path.cwd().resolve()
    found: list[Path] = []
    for directory in here.parents:
        if not directory.is_relative_to(bound):
            break
        try:
            entries = sorted(directory.iterdir())
        except OSError:
            entries = []
        found += [
            p.relative_to(cwd) if p.is_relative_to(cwd) else p for p in entries
            if p.name.endswith(SPEC_SUFFIXES) and not p.name.startswith(".")
            and p.name not in SNAPSHOT_NAMES and p.is_file()
        ]
    return found


def existing_profiles(tree: SpecTree | None) -> dict[str, tuple[int, int, int]]:
    """Named hedging profiles already defined in the output tree's other specs
    (`tree`), so that imported topics refer to them instead of redefining them (a
    duplicate profile name would fail validation)."""
    if tree is None:
        return {}
    out: dict[str, tuple[int, int, int]] = {}
    for located in tree.profiles:
        profile = profile_from_settings(located.model.spec, None)
        out.setdefault(located.model.metadata.name, settings_key(profile))
    return out


@dataclass
class Live:
    topics: dict[str, list[ObservedTopic]]
    source: str  # the backend's label: where the topics were read
    computed: dict[str, StoragePolicy | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    facts: dict[str, OrgFacts] = field(default_factory=dict)  # the org policy's, read
    # the custom constraints on topics each project enforces or dry-runs, where known
    custom: dict[str, CustomConstraints] = field(default_factory=dict)


def read_live(target: TargetOptions, projects: Sequence[str]) -> Live:
    """Every topic of each project, where they were read, what each project's
    effective org policy computes for a topic, and the custom constraints of its
    organization, read as the plan reads them (plan/observe.py `read_topics`: the
    ancestry from Resource Manager places the project, and a key's project among the
    projects read). An org policy that cannot be read: said in `warnings`, and the
    policies are written out explicitly; custom constraints that cannot be: said, and
    what they would refuse is not marked."""
    backend = open_backend(target)
    try:
        seen = read_topics(backend, projects, lenient=True)
        info = backend.info
    finally:
        backend.close()
    live = Live(
        {p: [seen.topics[n] for n in seen.projects.get(p, [])] for p in projects}, info.label
    )
    for project in projects:
        failed = seen.org_unavailable.get(project)
        if failed is not None:
            live.warnings.append(
                f"projects/{project}: the org policy could not be read ({failed}); "
                "storage policies are written as explicit regions, none as `inherit`"
            )
            continue
        facts = live.facts[project] = seen.facts(project)
        live.computed[project] = computed_policy(facts)
        unknown = seen.custom_unknown(project)
        if unknown is None:
            live.custom[project] = seen.custom.get(project, ())
        else:
            live.warnings.append(
                f"projects/{project}: custom constraints not read ({unknown}); what they "
                "would refuse of the imported topics is not marked, and the plan says "
                "whether it could judge them"
            )
    return live


def header(source: str, stamp: str, project: str, count: int) -> str:
    """The comment at the top of DIR/<project>.yaml: where and when it was imported."""
    return (
        f"Imported by `reconcile import` from {source} at {stamp}.\n"
        f"Project {project}: {count} topic(s). Review, then `reconcile plan` "
        "(expect only reconcile's ownership labels, reconcile-managed and "
        "reconcile-owner, to be added, and a warning for each value marked "
        f"`# {MARK}`: the live value, kept, which the org policy would refuse on a "
        "new topic).\n"
        "Tags are not written: a topic's tags are input-only (the service never returns "
        "them), so the topics' tags, if any, are not in this file."
    )


MARK = "plan warns:"


@dataclass(frozen=True)
class Finding:
    """A finding the plan will raise on an imported topic: its code, and where the
    rule places it in a Topic document (spec/orgrules.py `OrgProblem.path`, `value`)."""

    code: str
    path: tuple[str, ...]
    value: str | None = None


def standing_findings(
    topics: dict[str, list[ObservedTopic]],
    facts: dict[str, OrgFacts],
    computed: dict[str, StoragePolicy | None],
    custom: dict[str, CustomConstraints] | None = None,
) -> dict[str, dict[str, list[Finding]]]:
    """Per project and topic ID, the existing-family findings the plan will raise on
    the imported topics: the same rules the plan applies (`existing_problems`,
    `standing_refusals`) to the topic as the import leaves it (its key, its storage
    policy, written explicitly or as `inherit`, its publishers' endpoint, and, for the
    custom constraints, the ownership labels the plan adds). A project whose org
    policy could not be read: nothing known; whose custom constraints could not be
    (not in `custom`): none of theirs."""
    out: dict[str, dict[str, list[Finding]]] = {}
    custom = custom or {}
    for project, listed in topics.items():
        known = facts.get(project)
        if known is None:
            continue
        for topic in listed:
            policy = topic.shape.policy
            written = policy_value(policy, computed.get(project))
            standing = Standing(
                project, topic.shape.kms_key_name,
                policy if is_regionless(policy) else norm_policy(policy),
                False, isinstance(written, dict), endpoint_label(topic.shape.labels),
            )
            found = [
                Finding(p.code, p.path, p.value) for p in existing_problems(standing, known)
            ]
            # Transforms the import writes as the topic has them: no call sets them, so
            # the managed constraint forbidding them is the existing family's warning.
            found += [
                Finding(p.code, tuple(str(part) for part in p.spec_path))
                for p in disabled_findings(
                    topic.name, project, topic.shape.message_transforms,
                    Bounds(None, False, known.transforms_disabled),
                    Call(live=True, exists=True, sets_transforms=False),
                )
            ]
            constraints = custom.get(project, ())
            # A topic whose adopting call is refused is not planned: the plan judges
            # no standing constraint on it (refused_adoption_notices says why).
            if constraints and standing_refusals(
                adopted_resource(topic, DEFAULT_OWNER), constraints
            ) and not adoption_refusals(topic, constraints, DEFAULT_OWNER):
                found.append(Finding(EXISTING_REFUSED, TOPIC))
            if found:
                out.setdefault(project, {})[topic.name.rsplit("/", 1)[-1]] = found
    return out


def mark_findings(text: str, marks: dict[str, list[Finding]]) -> str:
    """`text` (one imported spec file) with each finding of `marks` (topic ID ->
    findings) as a comment at the end of the line where the plan will place it: the
    value, or the topic's name when the value is in a Defaults document. The comment
    holds only the codes, never text from the service; the file reads back as the same
    data, or a finding goes on a comment line of its own above the value."""
    if not marks:
        return text
    try:
        docs = load_documents(Path("import"), text=text)
    except YamlProblem:
        return text
    lines = text.split("\n")
    codes: dict[int, list[str]] = {}
    for doc in docs:
        data = doc.data
        if not isinstance(data, dict) or data.get("kind") != "Topic":
            continue
        name = (data.get("metadata") or {}).get("name")
        for finding in marks.get(name, []) if isinstance(name, str) else []:
            line = doc.mark_for(locate(doc, finding.path, finding.value)).line
            codes.setdefault(line - 1, []).append(finding.code)
    marked = list(lines)
    for index, found in codes.items():
        marked[index] += f"  # {MARK} {', '.join(dict.fromkeys(found))}"
    out = "\n".join(marked)
    data = _data(text)
    if data is not None and _data(out) == data:
        return out
    above = list(lines)  # a value that does not end on its line: a line of its own
    for index in sorted(codes, reverse=True):
        indent = lines[index][: len(lines[index]) - len(lines[index].lstrip(" -"))]
        above.insert(index, f"{' ' * len(indent)}# {MARK} {', '.join(codes[index])}")
    out = "\n".join(above)
    return out if data is not None and _data(out) == data else text


def _data(text: str) -> list[object] | None:
    """The documents of `text` as YAML reads them (libyaml's loader where the build has
    it: 10x the pure-Python one on an import of thousands of topics); None: unreadable."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return list(yaml.load_all(text, Loader=loader))
    except yaml.YAMLError:
        return None


def other_tools_notices(
    topics: dict[str, list[ObservedTopic]], notes: dict[str, dict[str, list[str]]]
) -> list[str]:
    """A warning for each imported topic that another tool labels as its own
    (reconciler/othertools.py), and a comment line above it in the file (added to
    `notes`: project -> topic ID -> lines): adopting it while that tool manages it
    starts a tug of war. Its label is left out of the spec (spec/export.py)."""
    warnings: list[str] = []
    for project, listed in sorted(topics.items()):
        for topic in listed:
            for tool in managed_by(topic.shape.labels):
                warnings.append(
                    f"{topic.name} carries {tool.label}, the label {tool.name} puts on "
                    "what it manages: hand it over before you apply the plan that adopts "
                    f"it ({tool.let_go}; {ADOPTION_GUIDE}); the label is left out of the spec"
                )
                _note(notes, project, topic.name,
                      f"managed by {tool.name} too (label {tool.label}, left out of this "
                      f"spec): hand it over before applying the plan that adopts it "
                      f"({ADOPTION_GUIDE})")
    return warnings


def _note(notes: dict[str, dict[str, list[str]]], project: str, topic: str, text: str) -> None:
    """A comment line above topic `projects/P/topics/T` in project P's file."""
    notes.setdefault(project, {}).setdefault(topic.rsplit("/", 1)[-1], []).append(text)


def refused_adoption_notices(
    topics: dict[str, list[ObservedTopic]],
    custom: dict[str, CustomConstraints],
    notes: dict[str, dict[str, list[str]]],
) -> list[str]:
    """A warning for each imported topic that an enforced custom constraint restricting
    UPDATE refuses to change (customcheck.py `adoption_refusals`: it breaks the
    constraint already, and its ownership labels do not fix it), and a comment line
    above it in the file: the plan that adopts it is refused (org-custom-constraint) until
    the topic complies. The service refuses that call, so no spec can avoid it."""
    warnings: list[str] = []
    for project, listed in sorted(topics.items()):
        constraints = custom.get(project, ())
        if not constraints:
            continue
        for topic in listed:
            for constraint in adoption_refusals(topic, constraints, DEFAULT_OWNER):
                cid = constraint.constraint_id
                warnings.append(
                    f"{topic.name} breaks custom constraint {cid}, which restricts UPDATE: "
                    "the service refuses changing it unless the change fixes that, so the "
                    f"plan refuses the UpdateTopic that adopts it ({REFUSED}); to adopt "
                    f"it, {fix_hint(constraint)}"
                )
                _note(notes, project, topic.name,
                      f"breaks custom constraint {cid} (methodTypes UPDATE): the plan that "
                      f"adopts it is refused ({REFUSED}) until the topic complies")
    return warnings
