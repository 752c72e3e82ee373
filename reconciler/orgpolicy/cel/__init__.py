"""Custom-constraint conditions: compiled once, evaluated on a resource given as a plain
dict in its REST JSON shape, with a verdict that is true, false or "could not
evaluate" (with the reason), never a silent pass. `validate`, `plan` and the local
server all build the resource a condition sees of a topic with `topic_resource` and
judge it here (`judge`, or `ConstraintSet` for many resources: one path, judge.py),
so they cannot disagree.

    compile_condition(text) -> Condition          ConditionError(message, line, column)
                                                  (`unsupported`: the library lacks what
                                                  the text uses)
    condition.reads                               the resource.* field paths it reads
    condition.notes                               undocumented representations it relies on
    condition.evaluate(resource) -> Outcome       value True / False / None (+ reason, missing)
    evaluate_all(conditions, resource) -> [Outcome]   several at once, one library call
    condition_for(constraint) -> Condition        compiled once per condition text
    judge(constraint, resource, method, before=None) -> Judgement | None
    ConstraintSet(constraints).objections(resource, method, before=None) -> [Judgement]

The parts, each with one job: library.py (the CEL library, loaded at the first
compile, and its errors), reads.py (which fields a condition's text reads),
values.py (a resource's values by path: the memo's keys, what the library is
handed), condition.py (a compiled condition, its evaluation, memo and batched calls),
judge.py (verdicts), resource.py (the one builder of what a condition sees of a
topic, from reconcile's topic value). The CEL library (cel-expr-python, Google's wrapper of cel-cpp;
the choice and its measurements: docs/org-policy.md, benchmarks/README.md) is
imported at the first compile, so that validate loads it only when a snapshot holds
custom constraints.
"""

from reconciler.orgpolicy.cel.condition import (
    UNDOCUMENTED,
    Condition,
    Outcome,
    compile_condition,
    compile_error,
    condition_for,
    evaluate_all,
)
from reconciler.orgpolicy.cel.judge import ConstraintSet, Judgement, Verdict, judge
from reconciler.orgpolicy.cel.library import ConditionError
from reconciler.orgpolicy.cel.reads import outermost
from reconciler.orgpolicy.cel.values import (
    DURATION_FIELDS,
    TIMESTAMP_FIELDS,
    freeze_fields,
    project,
)

__all__ = [
    "DURATION_FIELDS", "TIMESTAMP_FIELDS", "UNDOCUMENTED", "Condition", "ConditionError",
    "ConstraintSet", "Judgement", "Outcome", "Verdict", "compile_condition", "compile_error",
    "condition_for", "evaluate_all", "freeze_fields", "judge", "outermost", "project",
]
