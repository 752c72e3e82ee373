"""Policy documents of the snapshot (Org Policy v2 JSON shape, `spec` and
`dryRunSpec`): the name and the constraint it names, the rules and their values
(regions and value groups, key projects), each problem at its line."""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection
from typing import Any

from reconciler.names import is_resource_number, project_id_problem
from reconciler.orgpolicy.locations import catalog
from reconciler.orgpolicy.model import (
    RESOURCE_LOCATIONS,
    RESTRICT_KEY_PROJECTS,
    Policy,
    PolicyFormatError,
    is_custom,
)
from reconciler.orgpolicy.snapshot.checker import (
    _CONSTRAINT,
    _LOCATION_KINDS,
    _NAME,
    CONDITION_FIELDS,
    POLICY_FIELDS,
    READ_CONSTRAINTS,
    RULE_FIELDS,
    RULE_KINDS,
    SPEC_FIELDS,
    VALUES_FIELDS,
    Checker,
)
from reconciler.orgpolicy.store import is_boolean
from reconciler.yamlio import PathKey


def read_policy(
    checker: Checker, item: Any, base: PathKey, projects: Collection[str]
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


def _name(checker: Checker, name: Any, path: PathKey, projects: Collection[str]) -> str | None:
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
    if kind == "projects" and not is_resource_number(node):
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
    elif kind != "projects" and not is_resource_number(node):
        checker.error(
            path, "policy-name",
            f"in policy name {name!r}: {kind} are named by number, without leading zeros, "
            f"e.g. {kind}/123456",
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


def _spec(checker: Checker, value: Any, path: PathKey, constraint: str | None) -> None:
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


def _rule(checker: Checker, value: Any, path: PathKey, constraint: str | None) -> None:
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


def _key_project_values(checker: Checker, values: list[str], path: PathKey) -> None:
    """restrictCmekCryptoKeyProjects names projects, folders and organizations:
    `under:organizations/O`, `under:folders/F`, `under:projects/P`, `projects/P`."""
    for i, value in enumerate(values):
        if not _KEY_PROJECT_VALUE.fullmatch(value):
            checker.error(
                (*path, i), "policy-value",
                f"{value!r} is not a value of {RESTRICT_KEY_PROJECTS}: write "
                "under:organizations/O, under:folders/F, under:projects/P or projects/P",
            )


def _location_values(checker: Checker, values: list[str], path: PathKey) -> None:
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

