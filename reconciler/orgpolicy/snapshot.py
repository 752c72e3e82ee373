"""The org-policy snapshot file, read strictly and validated like the specs: every
problem is a `org-policy.yaml:line:col` diagnostic (unknown keys with a suggestion, a
field spelled both ways (`displayName` and `display_name`: the reader takes REST's
camelCase and the proto's snake_case, never both), values of the wrong type,
malformed policy and constraint names, misspelt constraints, rules mixing kinds,
unknown regions and value groups, duplicate policies, constraints and ancestry
entries, an ancestry whose parent is not a folder or an organization or that loops,
policies for projects no spec uses; custom constraints whose id, method types,
action or condition the service would refuse, a condition's CEL error at its own line
and column), so that a typo cannot quietly switch the org-policy checks off. Policies
and custom constraints with errors are left out of the store, and the errors make
`validate` fail and the file refused wherever it is loaded (`load_snapshot`: the
local server's seed and `--org-policy`), with the same messages.

A custom constraint whose condition parses but uses what reconcile's CEL library does
not have (`ConditionError.unsupported`: the service may accept it) is kept; `validate`
names it once per project that enforces or dry-runs it, as not judged
(reconciler/orgpolicy/unjudged.py: `org-custom-uncompilable`), and names each project
the snapshot does not place under an organization, whose custom constraints it
therefore cannot know (`org-custom-no-ancestry`).

Documents: Policy resources (Org Policy v2 JSON shape, `spec` and `dryRunSpec`),
CustomConstraint resources (the shape `gcloud org-policies set-custom-constraint`
takes: `name: organizations/ORG/customConstraints/custom.NAME`, `resourceTypes`,
`methodTypes`, `condition`, `actionType`, `displayName`, `description`), and an
`ancestry:` mapping (a project's organization names the custom constraints it obeys;
`projects/P: none` says Resource Manager places P in no folder or organization, so
no custom constraint applies to it: `policy pull` writes it so, and a project the
mapping leaves out is unknown, never taken for one in no organization).

    read_snapshot(path, diags, projects=(), gate=None) -> PolicyStore   validate
    load_snapshot(path) -> PolicyStore       servers and backends: an InputError instead
    dump_snapshot(store, path, header="")    `policy pull`: written atomically
    ancestry_line(path, child) -> int        the line of `child:` in its `ancestry:`
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

from reconciler.diagnostics import Diagnostic, Diagnostics, Severity
from reconciler.errors import InputError
from reconciler.fileio import write_atomically
from reconciler.names import project_id_problem
from reconciler.orgpolicy.locations import catalog
from reconciler.orgpolicy.model import (
    KNOWN_CONSTRAINTS,
    MANAGED_CONSTRAINTS,
    RESOURCE_LOCATIONS,
    RESTRICT_KEY_PROJECTS,
    Policy,
    PolicyFormatError,
    is_custom,
)
from reconciler.orgpolicy.store import MAX_HIERARCHY_DEPTH, PolicyStore, is_boolean
from reconciler.orgpolicy.unjudged import ALLOW_HINT, Gate, Why, uncompilable_hint
from reconciler.yamldoc import Mark
from reconciler.yamlio import Document, PathKey, YamlProblem, load_documents, read_text
from reconciler.yamltext import dump_all

POLICY_FIELDS = ("name", "spec", "dryRunSpec", "etag", "alternate")
SPEC_FIELDS = ("rules", "inheritFromParent", "reset", "etag", "updateTime")
RULE_FIELDS = ("values", "allowAll", "denyAll", "enforce", "condition", "parameters")
VALUES_FIELDS = ("allowedValues", "deniedValues")
CONDITION_FIELDS = ("expression", "title", "description", "location")
RULE_KINDS = ("values", "allowAll", "denyAll", "enforce")
_NAME = re.compile(r"(projects|folders|organizations)/([^/]+)/policies/(constraints/)?([^/]+)")
_RESOURCE = re.compile(r"(projects|folders|organizations)/([^/]+)")
# A constraint's name: dotted words (gcp.resourceLocations, custom.euOnly,
# pubsub.managed.disableTopicMessageTransforms).
_CONSTRAINT = re.compile(r"[A-Za-z][A-Za-z0-9]*(\.[A-Za-z0-9]+)+")
_CHILDREN = ("projects", "folders")  # what an ancestry entry places
_PARENTS = ("folders", "organizations")  # what it places them under
NO_PARENT = "none"  # `projects/P: none`: in no folder or organization
_LOCATION_KINDS = ("region", "zone", "multi_region", "dual_region")
_CUSTOM_KEYS = frozenset(
    {"resourceTypes", "resource_types", "methodTypes", "method_types", "condition",
     "actionType", "action_type"}
)
READ_CONSTRAINTS = (*KNOWN_CONSTRAINTS, *MANAGED_CONSTRAINTS)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class _Checker:
    def __init__(self, doc: Document, diags: Diagnostics) -> None:
        self.doc = doc
        self.diags = diags

    def error(self, path: PathKey, code: str, message: str, *, key: bool = False) -> None:
        m = self.doc.key_mark(path) if key else self.doc.mark_for(path)
        self.diags.error(self.doc.file, m.line, m.col, code, message)

    def warning(self, path: PathKey, code: str, message: str) -> None:
        m = self.doc.mark_for(path)
        self.diags.warning(self.doc.file, m.line, m.col, code, message)

    def mapping(
        self, value: Any, path: PathKey, fields: tuple[str, ...], what: str
    ) -> dict[str, tuple[Any, PathKey]]:
        """The mapping at `path` with camelCase keys; unknown keys reported, and a
        field given under both its spellings (camelCase and snake_case)."""
        if not isinstance(value, dict):
            self.error(path, "policy-format", f"{what} must be a mapping")
            return {}
        out: dict[str, tuple[Any, PathKey]] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                self.error(
                    (*path, key), "policy-format",
                    f"{what} has a key {key!r} that is not text", key=True,
                )
                continue
            name = _camel(key)
            if name in out:
                first = out[name][1][-1]
                self.error(
                    (*path, key), "policy-duplicate-field",
                    f"{what} gives field {name!r} twice, as {first!r} and as {key!r} "
                    "(either spelling is read, not both): keep one",
                    key=True,
                )
                continue
            if name not in fields:
                match = difflib.get_close_matches(name, fields, n=1, cutoff=0.6)
                hint = f"; did you mean {match[0]!r}?" if match else ""
                self.error(
                    (*path, key), "policy-unknown-field",
                    f"unknown field {key!r} in {what}{hint} (known: {', '.join(fields)})",
                    key=True,
                )
                continue
            out[name] = (item, (*path, key))
        return out

    def typed(self, entry: tuple[Any, PathKey] | None, kind: type, what: str) -> bool:
        if entry is None:
            return True
        value, path = entry
        if kind is bool and not isinstance(value, bool):
            self.error(path, "policy-format", f"`{what}` must be true or false")
            return False
        if kind is list and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            self.error(path, "policy-format", f"`{what}` must be a list of strings")
            return False
        if kind is str and not isinstance(value, str):
            self.error(path, "policy-format", f"`{what}` must be text")
            return False
        return True


class _Read:
    """What the reader remembers beyond the store, for the checks made once every
    document is read: where each ancestry entry and each kept custom constraint
    that does not compile here is."""

    def __init__(self) -> None:
        self.ancestry: dict[str, tuple[_Checker, PathKey]] = {}
        self.uncompilable: dict[str, tuple[str, Mark, Any]] = {}  # name -> file, mark, error
        self.ancestry_at: tuple[str, Mark] | None = None  # the first `ancestry:` key
        self.broken: set[str] = set()  # custom constraints named with an error


def read_snapshot(
    path: Path, diags: Diagnostics, projects: Collection[str] = (),
    gate: Gate | None = None,
) -> PolicyStore:
    """Every policy of the snapshot that has no error; every problem as a diagnostic.
    `projects` are those the specs name (for the unused-project warning, and, with
    `gate`, a validate's, for the projects whose custom constraints cannot be judged
    offline: no ancestry, or a condition that does not compile here)."""
    display = str(path)
    store = PolicyStore()
    try:
        text = read_text(path)
        documents = load_documents(path, text, display=display)
    except YamlProblem as exc:
        diags.error(display, exc.mark.line, exc.mark.col, exc.code, exc.message)
        return store
    custom_policies: list[tuple[_Checker, PathKey, Policy]] = []
    lines = text.splitlines()
    read = _Read()
    for doc in documents:
        for code, message, line, col in doc.problems:
            diags.error(doc.file, line, col, code, message)
        items = doc.data if isinstance(doc.data, list) else [doc.data]
        for i, item in enumerate(items):
            base: PathKey = (i,) if isinstance(doc.data, list) else ()
            if item is None:
                continue
            checker = _Checker(doc, diags)
            if isinstance(item, dict) and "ancestry" in item and "name" not in item:
                _ancestry(checker, item, base, store, read)
                continue
            if _is_custom_constraint(item):
                _custom_constraint(checker, item, base, store, lines, read)
                continue
            errors = _structural_errors(diags)
            policy = _policy(checker, item, base, projects)
            if policy is None or _structural_errors(diags) != errors:
                continue
            if policy.name in store.policies:
                checker.error(
                    (*base, "name"), "policy-duplicate",
                    f"policy {policy.name} appears twice in the snapshot; keep one",
                )
                continue
            store.put(policy)
            if is_custom(policy.constraint):
                custom_policies.append((checker, (*base, "name"), policy))
    _ancestry_loops(store, read)
    require = gate is not None and gate.require
    for checker, name_path, policy in custom_policies:
        _custom_policy_target(checker, name_path, policy, store, require, read.broken)
    if gate is not None and not gate.live:
        _not_judged(store, read, sorted(projects), gate, display, diags)
    return store


def _not_judged(
    store: PolicyStore, read: _Read, projects: list[str], gate: Gate, file: str,
    diags: Diagnostics,
) -> None:
    """What validate cannot judge offline, once per project the specs name: all of
    its custom constraints when the snapshot does not place it under an
    organization; each one it enforces or dry-runs whose condition does not compile
    here."""
    for project in projects:
        parent = f"projects/{project}"
        if parent in store.unparented:
            continue  # in no organization: no custom constraint applies to it
        if store.organization(parent) is None:
            why = Why.NO_ANCESTRY
            what = f"the custom constraints of project {project}"
            # At `ancestry:`, or at the top of a snapshot that has none.
            line, col = (read.ancestry_at[1].line, read.ancestry_at[1].col) if (
                read.ancestry_at is not None) else (1, 1)
            chain = store.chain(parent)
            placed = (
                f"places {parent} under {chain[-1]} but no organization above it"
                if len(chain) > 1 else f"does not place {parent} under an organization"
            )
            diags.add(Diagnostic(
                file, line, col, gate.severity(why, None, None, what), why.code,
                f"custom constraints not judged for project {project}: the snapshot's "
                f"`ancestry:` {placed}, so which custom constraints apply to its topics "
                "is unknown and none was judged" + gate.note(why, None, None),
                f"`reconcile policy pull --project {project}` writes the project's "
                "ancestry as Resource Manager states it, and its organization's custom "
                f"constraints; or add `{parent}: organizations/ORG` under `ancestry:` "
                f"(`{parent}: {NO_PARENT}` for a project in no organization); {ALLOW_HINT}",
            ))
            continue
        if not read.uncompilable:
            continue  # the constraints' module loads only for one that does not compile
        from reconciler.orgpolicy.custom import TOPIC

        for constraint, mode in store.custom_constraints_for(parent, TOPIC):
            known = read.uncompilable.get(constraint.name)
            if known is None:
                continue
            where, mark, error = known
            why = Why.UNCOMPILABLE
            cid = constraint.constraint_id
            diags.add(Diagnostic(
                where, mark.line, mark.col,
                gate.severity(why, mode, cid, f"{cid} in {project}"), why.code,
                f"custom constraint {cid} ({mode} in project {project}) is not judged: its "
                f"condition uses what reconcile's CEL library does not have ("
                f"{error.message}, line {error.line}, column {error.column} of the "
                "condition), so the project's topics were not judged against it"
                + gate.note(why, mode, cid),
                uncompilable_hint(error),
            ))


def _is_custom_constraint(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    name = item.get("name")
    return (isinstance(name, str) and "/customConstraints/" in name) or bool(
        _CUSTOM_KEYS & set(item)
    )


def _custom_constraint(
    checker: _Checker, item: dict[str, Any], base: PathKey, store: PolicyStore,
    lines: list[str], read: _Read,
) -> None:
    """A CustomConstraint document: its fields, its rules, its condition's CEL."""
    from reconciler.orgpolicy import custom

    errors = _errors(checker.diags)
    fields = checker.mapping(item, base, custom.FIELDS, "a custom constraint")
    plain = {k: v for k, (v, _) in fields.items()}
    problems = custom.constraint_problems(plain)
    for path, message in problems:
        where = fields[str(path[0])][1] + path[1:] if path else base
        checker.error(where, "custom-constraint", message)
    checker.typed(fields.get("updateTime"), str, "updateTime")
    unsupported = None
    condition, cond_path = fields.get("condition", (None, base))
    if isinstance(condition, str) and 0 < len(condition) <= custom.MAX_CONDITION:
        from reconciler.orgpolicy.cel import ConditionError, compile_condition

        try:
            compile_condition(condition)
        except ConditionError as exc:
            mark = _inside(
                lines, checker.doc.mark_for(cond_path), condition, exc.line, exc.column
            )
            if exc.unsupported:
                unsupported = (checker.doc.file, mark, exc)
            else:
                name = fields.get("name", ("the custom constraint", base))[0]
                checker.diags.error(
                    checker.doc.file, mark.line, mark.col, "custom-condition",
                    f"the condition of {str(name).rsplit('/', 1)[-1]} is not valid CEL: "
                    f"{exc.message} (line {exc.line}, column {exc.column} of the "
                    "condition); the service refuses it too",
                )
    if _errors(checker.diags) != errors:
        name = plain.get("name")
        if isinstance(name, str):
            read.broken.add(name)
        return
    constraint = custom.CustomConstraint.from_dict(plain)
    if constraint.name in store.custom_constraints:
        checker.error(
            fields["name"][1], "policy-duplicate",
            f"custom constraint {constraint.name} appears twice in the snapshot; keep one",
        )
        return
    store.put_custom(constraint)
    if unsupported is not None:
        read.uncompilable[constraint.name] = unsupported


def _errors(diags: Diagnostics) -> int:
    return sum(1 for d in diags.items if d.severity is Severity.ERROR)


def _inside(lines: list[str], start: Mark, condition: str, line: int, column: int) -> Mark:
    """Where in the file line `line`, column `column` of a condition is: the
    condition's scalar starts at `start` (a block scalar `|`/`>` on the next lines, a
    quoted or plain one right there); an error at the very end (after a block
    scalar's last line break) is placed after the last character. Escapes in a quoted
    scalar can shift the column."""
    row = start.line - 1
    first = lines[row][start.col - 1 :] if row < len(lines) else ""
    content = condition.rstrip("\n").split("\n")
    if line > len(content):
        line, column = len(content), len(content[-1]) + 1
    if first[:1] in ("|", ">"):
        head = lines[start.line] if start.line < len(lines) else ""
        indent = len(head) - len(head.lstrip(" "))  # the block's own indentation
        return Mark(start.line + line, indent + column)
    if line == 1:
        quote = 1 if first[:1] in ("'", '"') else 0
        return Mark(start.line, start.col + quote + column - 1)
    row = start.line + line - 1
    body = lines[row - 1] if row - 1 < len(lines) else ""
    indent = len(body) - len(body.lstrip(" "))
    return Mark(row, indent + column)


def _custom_policy_target(
    checker: _Checker, path: PathKey, policy: Policy, store: PolicyStore, require: bool,
    broken: Collection[str] = (),
) -> None:
    """A policy on a custom constraint checks something only when the snapshot knows
    the constraint and the organization of the policy's resource. One that enforces
    a constraint the snapshot does not define is an error with `require`
    (--require-org-policy: the org enforces something the snapshot cannot judge)."""
    if policy.spec is None and policy.dry_run_spec is None:
        return
    org = store.organization(policy.parent)
    constraint_id = policy.constraint
    if org is None:
        checker.warning(
            path, "policy-ancestry",
            f"{policy.parent} enforces {constraint_id}, but the snapshot's ancestry "
            + ("places it in no organization" if policy.parent in store.unparented
               else "does not name its organization")
            + ", so the constraint checks nothing: add `ancestry: "
            f"{{{policy.parent}: organizations/ORG}}` (`reconcile policy pull` writes it "
            "as Resource Manager states it)",
        )
    elif (name := f"{org}/customConstraints/{constraint_id}") in broken:
        return  # defined with an error, which is said at its line
    elif name not in store.custom_constraints:
        report = checker.error if require else checker.warning
        report(
            path, "policy-constraint",
            f"{policy.parent} enforces {constraint_id}, which the snapshot does not define "
            f"under {org}, so it checks nothing: pull it with `reconcile policy pull "
            f"--organization {org.removeprefix('organizations/')}`",
        )


def _structural_errors(diags: Diagnostics) -> int:
    """Errors that make a policy unusable; an unknown value keeps it (the spec checks
    then name the value for each project it affects)."""
    return sum(1 for d in diags.items if d.severity == "error" and d.code != "policy-value")


def _ancestry(
    checker: _Checker, item: dict[str, Any], base: PathKey, store: PolicyStore, read: _Read
) -> None:
    """An `ancestry:` document: each project or folder mapped to its parent folder or
    organization, each named once in the whole snapshot."""
    if read.ancestry_at is None:
        read.ancestry_at = (checker.doc.file, checker.doc.key_mark((*base, "ancestry")))
    extra = [k for k in item if k != "ancestry"]
    for key in extra:
        checker.error(
            (*base, key), "policy-unknown-field",
            f"unknown field {key!r} beside `ancestry`; an ancestry document holds only "
            "`ancestry:`",
            key=True,
        )
    ancestry = item["ancestry"]
    if not isinstance(ancestry, dict):
        checker.error(
            (*base, "ancestry"), "policy-format",
            "`ancestry` must map a resource (projects/P, folders/F) to its parent",
        )
        return
    for child, parent in ancestry.items():
        where = (*base, "ancestry", child)
        problem = _ancestry_problem(child, parent)
        if problem is not None:
            checker.error(where, "policy-ancestry-entry", problem)
            continue
        if child in store.ancestry or child in store.unparented:
            first, first_path = read.ancestry[child]
            m = first.doc.key_mark(first_path)
            checker.error(
                where, "policy-duplicate",
                f"the ancestry of {child} is given twice (first at {first.doc.file}:"
                f"{m.line}): keep one",
                key=True,
            )
            continue
        if parent == NO_PARENT:
            store.unparented.add(child)
        else:
            store.ancestry[child] = parent
        read.ancestry[child] = (checker, where)


def _ancestry_problem(child: Any, parent: Any) -> str | None:
    """Why `child: parent` is not an ancestry entry (a project or a folder, under a
    folder or an organization, each named as the service names it), or None."""
    shape = (
        "an ancestry entry maps projects/P or folders/F to its parent, folders/F or "
        f"organizations/O (or a project to `{NO_PARENT}`, when it is in no folder or "
        "organization)"
    )
    if not isinstance(child, str) or not isinstance(parent, str):
        return f"ancestry entry {child!r}: {parent!r}: {shape}"
    checked = [(child, _CHILDREN, "child")]
    if parent != NO_PARENT:
        checked.append((parent, _PARENTS, "parent"))
    for text, kinds, role in checked:
        match = _RESOURCE.fullmatch(text)
        if match is None or match.group(1) not in kinds:
            return f"ancestry entry {child}: {parent}: {text!r} cannot be a {role}; {shape}"
        kind, node = match.groups()
        if kind == "projects":
            if not node.isdigit() and (problem := project_id_problem(node)):
                return f"ancestry entry {child}: {problem}"
        elif not node.isdigit():
            return (
                f"ancestry entry {child}: {parent}: {kind} are named by number, e.g. "
                f"{kind}/123456"
            )
    if parent == NO_PARENT and not child.startswith("projects/"):
        return (
            f"ancestry entry {child}: {NO_PARENT}: only a project may be in no folder or "
            "organization; a folder's parent is a folder or the organization"
        )
    return None


def _ancestry_loops(store: PolicyStore, read: _Read) -> None:
    """An ancestry that leads back to where it started, or deeper than any hierarchy
    (Resource Manager nests folders at most 10 deep), is an error at the entry that
    starts it (each loop said once)."""
    said: set[str] = set()
    for child in store.ancestry:
        chain = [child]
        looped = False
        while chain[-1] in store.ancestry and len(chain) <= MAX_HIERARCHY_DEPTH:
            parent = store.ancestry[chain[-1]]
            if parent in chain:
                looped = True
                loop = chain[chain.index(parent):]
                if not said & set(loop):
                    said.update(loop)
                    checker, where = read.ancestry[parent]
                    checker.error(
                        where, "policy-ancestry-entry",
                        f"the ancestry loops: {' -> '.join([*loop, parent])}; a folder's "
                        "parent is a folder above it or the organization",
                    )
                break
            chain.append(parent)
        if not looped and len(chain) > MAX_HIERARCHY_DEPTH and child not in said:
            said.add(child)
            checker, where = read.ancestry[child]
            checker.error(
                where, "policy-ancestry-entry",
                f"the ancestry above {child} is more than {MAX_HIERARCHY_DEPTH} levels "
                "deep; a hierarchy nests folders at most 10 deep",
            )


def _policy(
    checker: _Checker, item: Any, base: PathKey, projects: Collection[str]
) -> Policy | None:
    fields = checker.mapping(item, base, POLICY_FIELDS, "a policy")
    if not isinstance(item, dict):
        return None
    if "name" not in fields:
        checker.error(
            base, "policy-format",
            "a policy needs a `name` like projects/P/policies/gcp.resourceLocations",
        )
        return None
    name, name_path = fields["name"]
    constraint = _name(checker, name, name_path, projects)
    for key in ("spec", "dryRunSpec"):
        if key in fields and fields[key][0] is not None:
            _spec(checker, *fields[key], constraint)
    checker.typed(fields.get("etag"), str, "etag")
    if "alternate" in fields and not isinstance(fields["alternate"][0], dict):
        checker.error(fields["alternate"][1], "policy-format", "`alternate` must be a mapping")
    try:
        return Policy.from_dict(item)
    except PolicyFormatError as exc:
        checker.error((*base, *exc.path), "policy-format", str(exc))
        return None


def _name(checker: _Checker, name: Any, path: PathKey, projects: Collection[str]) -> str | None:
    """The constraint the policy name names, when it is one reconcile uses."""
    match = _NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        checker.error(
            path, "policy-name",
            f"policy name {name!r} must look like projects/P/policies/CONSTRAINT "
            "(or folders/F/..., organizations/O/...)",
        )
        return None
    kind, node, _, constraint = match.groups()
    if kind == "projects" and not node.isdigit():
        if problem := project_id_problem(node):
            checker.error(path, "policy-name", f"in policy name {name!r}: {problem}")
        elif projects and node not in projects:
            close = difflib.get_close_matches(node, sorted(projects), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            checker.warning(
                path, "policy-project-unused",
                f"policy for project {node!r}, which no spec uses{hint} (its rules check "
                "nothing)",
            )
    elif kind != "projects" and not node.isdigit():
        checker.error(
            path, "policy-name",
            f"in policy name {name!r}: {kind} are named by number, e.g. {kind}/123456",
        )
    if constraint in READ_CONSTRAINTS:
        return constraint
    if is_custom(constraint):
        from reconciler.orgpolicy.custom import id_problem

        if problem := id_problem(constraint):
            checker.error(path, "policy-name", f"in policy name {name!r}: {problem}")
            return None
        return constraint
    if not _CONSTRAINT.fullmatch(constraint):
        checker.error(
            path, "policy-name",
            f"in policy name {name!r}: {constraint!r} is not a constraint name (dotted "
            "words such as gcp.resourceLocations or custom.NAME)",
        )
        return None
    known = f"{', '.join(READ_CONSTRAINTS)} and custom.* constraints"
    close = difflib.get_close_matches(constraint, READ_CONSTRAINTS, n=1, cutoff=0.8)
    if close:
        checker.error(
            path, "policy-constraint",
            f"unknown constraint {constraint!r}; did you mean {close[0]!r}? (reconcile "
            f"reads only {known})",
        )
    else:
        checker.warning(
            path, "policy-constraint",
            f"constraint {constraint!r} is not one reconcile checks ({known}); it is ignored",
        )
    return None


def _spec(checker: _Checker, value: Any, path: PathKey, constraint: str | None) -> None:
    fields = checker.mapping(value, path, SPEC_FIELDS, "a policy spec")
    for key in ("inheritFromParent", "reset"):
        checker.typed(fields.get(key), bool, key)
    for key in ("etag", "updateTime"):
        checker.typed(fields.get(key), str, key)
    if "rules" not in fields or fields["rules"][0] is None:
        return
    rules, rules_path = fields["rules"]
    if not isinstance(rules, list):
        checker.error(rules_path, "policy-format", "`rules` must be a list")
        return
    for i, rule in enumerate(rules):
        _rule(checker, rule, (*rules_path, i), constraint)


def _rule(checker: _Checker, value: Any, path: PathKey, constraint: str | None) -> None:
    fields = checker.mapping(value, path, RULE_FIELDS, "a rule")
    for key in ("allowAll", "denyAll", "enforce"):
        checker.typed(fields.get(key), bool, key)
    if "condition" in fields:
        cond_value, cond_path = fields["condition"]
        cond = checker.mapping(cond_value, cond_path, CONDITION_FIELDS, "a condition")
        for key in CONDITION_FIELDS:
            checker.typed(cond.get(key), str, key)
    kinds = [k for k in RULE_KINDS if k in fields]
    if len(kinds) > 1:
        checker.error(
            path, "policy-rule",
            f"a rule sets one of {', '.join(RULE_KINDS)}; this one sets {' and '.join(kinds)} "
            "(split it into several rules)",
        )
    elif not kinds and isinstance(value, dict) and len(fields) == len(value):
        checker.error(path, "policy-rule", f"a rule needs one of {', '.join(RULE_KINDS)}")
    if constraint is not None and is_boolean(constraint):
        for key in ("values", "allowAll", "denyAll"):
            if key in fields:
                checker.error(
                    fields[key][1], "policy-rule",
                    f"{constraint} is a boolean constraint: its rules use `enforce`, "
                    f"not `{key}`",
                )
    elif constraint is not None and "enforce" in fields:
        checker.error(
            fields["enforce"][1], "policy-rule",
            f"{constraint} is a list constraint: its rules use values, allowAll or "
            "denyAll, not `enforce`",
        )
    if "values" in fields:
        values_value, values_path = fields["values"]
        values = checker.mapping(values_value, values_path, VALUES_FIELDS, "rule values")
        for key in VALUES_FIELDS:
            if key in values and checker.typed(values[key], list, key):
                if constraint == RESOURCE_LOCATIONS:
                    _location_values(checker, *values[key])
                elif constraint == RESTRICT_KEY_PROJECTS:
                    _key_project_values(checker, *values[key])


_KEY_PROJECT_VALUE = re.compile(
    r"(is:|under:)?projects/[^/]+|under:(folders|organizations)/[0-9]+"
)


def _key_project_values(checker: _Checker, values: list[str], path: PathKey) -> None:
    """restrictCmekCryptoKeyProjects names projects, folders and organizations:
    `under:organizations/O`, `under:folders/F`, `under:projects/P`, `projects/P`."""
    for i, value in enumerate(values):
        if not _KEY_PROJECT_VALUE.fullmatch(value):
            checker.error(
                (*path, i), "policy-value",
                f"{value!r} is not a value of {RESTRICT_KEY_PROJECTS}: write "
                "under:organizations/O, under:folders/F, under:projects/P or projects/P",
            )


def _location_values(checker: _Checker, values: list[str], path: PathKey) -> None:
    cat = catalog()
    for i, value in enumerate(values):
        where = (*path, i)
        if value.startswith(("in:", "under:")) or value.endswith("-locations"):
            if cat.group(value) is None:
                suggestion = cat.suggest_group(value)
                hint = f"; did you mean {suggestion!r}?" if suggestion else ""
                checker.error(
                    where, "policy-value",
                    f"unknown value group {value!r}{hint} (if Google added it, add it with "
                    "its regions to reconciler/data/locations.yaml)",
                )
            continue
        location = value.removeprefix("is:")
        if cat.kind_of(location) not in _LOCATION_KINDS:
            suggestion = cat.suggest_region(location)
            hint = f"; did you mean {suggestion!r}?" if suggestion else ""
            checker.error(where, "policy-value", f"unknown location {value!r}{hint}")


def load_snapshot(path: Path) -> PolicyStore:
    """Read a snapshot file (YAML or JSON documents: Policy and CustomConstraint
    resources, plus an optional `ancestry:` mapping) for a server or a backend: any
    error is an InputError listing every problem with its line (validate reports them
    as diagnostics instead)."""
    diags = Diagnostics()
    store = read_snapshot(path, diags)
    errors = [d for d in diags.sorted() if d.severity is Severity.ERROR]
    if errors:
        raise InputError(
            "the org-policy snapshot has problems:\n  "
            + "\n  ".join(d.render() for d in errors),
            hint="fix the org-policy snapshot, or write a new one with `reconcile policy pull`",
        )
    return store


def ancestry_line(path: Path, child: str) -> int:
    """The line of `child:` in the snapshot's `ancestry:` (a plan that finds the live
    hierarchy elsewhere points there); 0 when the file no longer has it."""
    try:
        documents = load_documents(path, read_text(path), display=str(path))
    except YamlProblem:
        return 0
    for doc in documents:
        items = doc.data if isinstance(doc.data, list) else [doc.data]
        for i, item in enumerate(items):
            base: PathKey = (i,) if isinstance(doc.data, list) else ()
            found = item.get("ancestry") if isinstance(item, dict) else None
            if isinstance(found, dict) and child in found:
                return doc.key_mark((*base, "ancestry", child)).line
    return 0


def dump_snapshot(store: PolicyStore, path: Path, header: str = "") -> None:
    """Write the snapshot atomically (a reader never sees half a file)."""
    docs: list[object] = [c.to_dict() for _, c in sorted(store.custom_constraints.items())]
    docs += [p.to_dict() for _, p in sorted(store.policies.items())]
    ancestry = {**store.ancestry, **{p: NO_PARENT for p in store.unparented}}
    if ancestry:
        docs.append({"ancestry": dict(sorted(ancestry.items()))})
    text = dump_all(docs)  # every string reads back as one (an etag `1e5` is quoted)
    if header:
        text = "".join(f"# {line}\n" for line in header.splitlines()) + text
    write_atomically(path, text, "org-policy snapshot")
