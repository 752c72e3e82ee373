"""CustomConstraint documents of the snapshot: their fields and rules, their
condition's CEL error at its own line and column, a policy on a custom constraint the
snapshot does not define or place, and what validate cannot judge offline. The
constraints' rules and the CEL evaluator load only for a snapshot that holds custom
constraints (validate's cold start without them is unchanged)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from reconciler.diagnostics import Diagnostic, Diagnostics
from reconciler.orgpolicy.model import Policy
from reconciler.orgpolicy.snapshot.checker import (
    _CUSTOM_KEYS,
    NO_PARENT,
    Checker,
    Read,
)
from reconciler.orgpolicy.store import PolicyStore
from reconciler.orgpolicy.unjudged import ALLOW_HINT, Gate, Why, uncompilable_hint
from reconciler.yamldoc import Mark
from reconciler.yamlio import PathKey


def not_judged(
    store: PolicyStore, read: Read, projects: list[str], gate: Gate, file: str,
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
                f"{error.message}, {error.place}), so the project's topics were not "
                "judged against it"
                + gate.note(why, mode, cid),
                uncompilable_hint(error),
            ))


def is_custom_constraint(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    name = item.get("name")
    return (isinstance(name, str) and "/customConstraints/" in name) or bool(
        _CUSTOM_KEYS & set(item)
    )


def custom_constraint(
    checker: Checker, item: dict[str, Any], base: PathKey, store: PolicyStore,
    lines: list[str], read: Read,
) -> None:
    """A CustomConstraint document: its fields, its rules, its condition's CEL."""
    from reconciler.orgpolicy import custom

    start = len(checker.diags.items)
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
                    f"{exc.message} ({exc.place}); the service refuses it too",
                )
    if checker.diags.has_errors_since(start):
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


def custom_policy_target(
    checker: Checker, path: PathKey, policy: Policy, store: PolicyStore, require: bool,
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

