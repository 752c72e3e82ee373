"""The custom-constraint evaluator on a table of conditions over Pub/Sub topics in their
REST JSON shape: true, false, or could-not-evaluate with its reason (never a silent
pass); the fields each condition reads; syntax errors with their position; ALLOW and
DENY; UPDATE of a topic that already violates."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reconciler.codec import replace
from reconciler.orgpolicy.cel import (
    ConditionError,
    ConstraintSet,
    Verdict,
    compile_condition,
    evaluate_all,
    freeze_fields,
    judge,
)
from reconciler.orgpolicy.cel.condition import _COMPILE_AFTER, _answers, _batches
from reconciler.orgpolicy.custom import CustomConstraint

EU = ["europe-west1", "europe-west4"]
TOPIC: dict[str, Any] = {
    "name": "projects/shop-prod/topics/prod-orders",
    "labels": {"env": "prod", "team": "payments"},
    "messageStoragePolicy": {"allowedPersistenceRegions": EU, "enforceInTransit": True},
    "messageRetentionDuration": "604800s",
    "kmsKeyName": "projects/kms-prod/locations/europe-west1/keyRings/r/cryptoKeys/k",
    "schemaSettings": {
        "schema": "projects/shop-prod/schemas/order",
        "encoding": "JSON",
        "firstRevisionId": "a1",
    },
    "ingestionDataSourceSettings": {
        "cloudStorage": {
            "bucket": "landing",
            "minimumObjectCreateTime": "2026-01-01T00:00:00Z",
        }
    },
    "messageTransforms": [{"javascriptUdf": {"functionName": "redact", "code": "x"}}],
}
BARE: dict[str, Any] = {"name": "projects/shop-prod/topics/plain"}

# (condition, topic, value): True / False, or ("unknown", text the reason contains).
TABLE: list[tuple[str, dict[str, Any], Any]] = [
    # presence
    ("has(resource.kmsKeyName)", TOPIC, True),
    ("has(resource.kmsKeyName)", BARE, False),
    ("!has(resource.messageStoragePolicy)", BARE, True),
    # name
    ("resource.name.startsWith('projects/shop-prod/')", TOPIC, True),
    ("resource.name.endsWith('-orders')", TOPIC, True),
    ("resource.name.contains('/topics/prod-')", BARE, False),
    ("resource.name.matches('^projects/[a-z0-9-]+/topics/prod-[a-z]+$')", TOPIC, True),
    ("size(resource.name) <= 255", TOPIC, True),
    # storage policy
    ("resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r.startsWith('europe-'))",
     TOPIC, True),
    ("resource.messageStoragePolicy.allowedPersistenceRegions.exists(r, r == 'us-east1')",
     TOPIC, False),
    ("'europe-west4' in resource.messageStoragePolicy.allowedPersistenceRegions", TOPIC, True),
    ("resource.messageStoragePolicy.enforceInTransit", TOPIC, True),
    ("resource.messageStoragePolicy.enforceInTransit == false", TOPIC, False),
    # labels (a map)
    ("resource.labels['env'] == 'prod'", TOPIC, True),
    ("'cost-center' in resource.labels", TOPIC, False),
    ("resource.labels.team == 'payments'", TOPIC, True),
    # KMS key, schema settings, ingestion, transforms
    ("resource.kmsKeyName.startsWith('projects/kms-prod/')", TOPIC, True),
    ("resource.schemaSettings.encoding in ['JSON', 'BINARY']", TOPIC, True),
    ("has(resource.schemaSettings.lastRevisionId)", TOPIC, False),
    ("has(resource.ingestionDataSourceSettings.awsKinesis)", TOPIC, False),
    ("resource.ingestionDataSourceSettings.cloudStorage.bucket == 'landing'", TOPIC, True),
    ("size(resource.messageTransforms) == 0", TOPIC, False),
    ("resource.messageTransforms.exists(t, has(t.javascriptUdf))", TOPIC, True),
    # durations and timestamps (both readings agree, or only one type-checks)
    ("resource.messageRetentionDuration <= duration('168h')", TOPIC, True),
    ("resource.messageRetentionDuration > duration('7d')", TOPIC, ("unknown", "")),
    ("has(resource.messageRetentionDuration)", TOPIC, True),
    ("resource.ingestionDataSourceSettings.cloudStorage.minimumObjectCreateTime < "
     "timestamp('2027-01-01T00:00:00Z')", TOPIC, True),
    # errors are absorbed where CEL's logic absorbs them
    ("has(resource.kmsKeyName) && resource.kmsKeyName.startsWith('x')", BARE, False),
    ("resource.kmsKeyName == 'x' || true", BARE, True),
    # could not evaluate: named, never a silent pass
    ("resource.kmsKeyName.startsWith('projects/')", BARE, ("unknown", "resource.kmsKeyName")),
    ("resource.schemaSettings.encoding == 'JSON'", BARE, ("unknown", "resource.schemaSettings")),
    ("resource.labels['cost-center'] == 'x'", TOPIC, ("unknown", "cost-center")),
    ("resource.name.matches('[')", TOPIC, ("unknown", "regular expression")),
    ("resource.name", TOPIC, ("unknown", "not true or false")),
    ("resource.messageStoragePolicy.enforceInTransit < 1", TOPIC, ("unknown", "overload")),
]


@pytest.mark.parametrize(("condition", "topic", "want"), TABLE)
def test_condition_table(condition: str, topic: dict[str, Any], want: Any) -> None:
    outcome = compile_condition(condition).evaluate(topic)
    if isinstance(want, tuple):
        assert outcome.value is None, outcome
        assert want[1] in outcome.reason, outcome
    else:
        assert outcome.value is want, outcome
        assert outcome.reason == ""


def test_missing_field_is_told_apart_from_false() -> None:
    condition = compile_condition("resource.kmsKeyName.startsWith('projects/kms-prod/')")
    missing = condition.evaluate(BARE)
    assert missing.value is None
    assert missing.missing == ("resource.kmsKeyName",)
    assert missing.reason == "the resource does not set resource.kmsKeyName"
    other = condition.evaluate({**BARE, "kmsKeyName": "projects/other/k"})
    assert other.value is False and other.missing == ()


def test_nested_missing_field_names_the_path() -> None:
    condition = compile_condition(
        "resource.ingestionDataSourceSettings.awsKinesis.streamArn.startsWith('arn:')"
    )
    outcome = condition.evaluate(TOPIC)
    assert outcome.missing == ("resource.ingestionDataSourceSettings.awsKinesis",)


@pytest.mark.parametrize(
    ("condition", "reads"),
    [
        ("has(resource.kmsKeyName)", ("kmsKeyName",)),
        (
            "resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r in ['a']) && "
            "resource.name.matches('x') // resource.labels in a comment",
            ("messageStoragePolicy.allowedPersistenceRegions", "name"),
        ),
        ("resource.labels['env'] == 'resource.kmsKeyName'", ("labels",)),
        ("resource.schemaSettings.encoding == 'JSON'", ("schemaSettings.encoding",)),
        ("size(resource) > 0", ("",)),
        ("resource.`messageRetentionDuration` == '1s'", ("messageRetentionDuration",)),
    ],
)
def test_reads(condition: str, reads: tuple[str, ...]) -> None:
    assert compile_condition(condition).reads == reads


def test_notes_name_the_undocumented_representations() -> None:
    assert compile_condition("has(resource.kmsKeyName)").notes == ()
    labels = compile_condition("resource.labels['env'] == 'prod'").notes
    assert len(labels) == 1 and "resource.labels" in labels[0]
    retention = compile_condition("resource.messageRetentionDuration < duration('1h')").notes
    assert len(retention) == 1 and "resource.messageRetentionDuration" in retention[0]


def test_a_duration_condition_that_depends_on_the_representation_is_not_decided() -> None:
    """`dyn(...) != '604800s'` holds for a duration (heterogeneous equality) and not
    for the string: the service's representation decides, so the evaluator does not."""
    condition = compile_condition("dyn(resource.messageRetentionDuration) != '604800s'")
    outcome = condition.evaluate(TOPIC)
    assert outcome.value is None
    assert "depends on how the service presents resource.messageRetentionDuration" in (
        outcome.reason
    )


def test_a_malformed_duration_is_not_evaluated() -> None:
    condition = compile_condition("resource.messageRetentionDuration < duration('1h')")
    outcome = condition.evaluate({**TOPIC, "messageRetentionDuration": "a week"})
    assert outcome.value is None


@pytest.mark.parametrize(
    ("condition", "line", "column", "text"),
    [
        ("resource.name.startsWith('a') &&", 1, 33, "Syntax error"),
        ("has(resource.kmsKeyName) &&\n  resource.name ==", 2, 19, "Syntax error"),
        ("resource.name.startsWith(1)", 1, 25, "no matching overload"),
        ("resource.name.sartsWith('a')", 1, 24, "undeclared reference to 'sartsWith'"),
    ],
)
def test_compile_errors_have_their_position(
    condition: str, line: int, column: int, text: str
) -> None:
    with pytest.raises(ConditionError) as info:
        compile_condition(condition)
    assert (info.value.line, info.value.column) == (line, column)
    assert text in info.value.message
    assert "INVALID_ARGUMENT" not in info.value.message


def test_evaluations_are_remembered_by_the_fields_read() -> None:
    condition = compile_condition("resource.labels['env'] == 'prod'")
    first = condition.evaluate({**TOPIC, "name": "projects/p/topics/a"})
    second = condition.evaluate({**TOPIC, "name": "projects/p/topics/b"})
    assert first is second  # the name is not read: one evaluation served both
    changed = condition.evaluate({**TOPIC, "labels": {"env": "dev"}})
    assert changed.value is False


def _constraint(condition: str, action: str, methods: tuple[str, ...] = ("CREATE", "UPDATE")) -> (
    CustomConstraint
):
    return CustomConstraint(
        name="organizations/123/customConstraints/custom.rule",
        resource_types=("pubsub.googleapis.com/Topic",),
        method_types=methods,
        condition=condition,
        action_type=action,
        description="the rule",
    )


EU_ONLY = "resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r.startsWith('europe-'))"


def test_allow_refuses_what_does_not_satisfy_and_deny_what_does() -> None:
    us = copy.deepcopy(TOPIC)
    us["messageStoragePolicy"]["allowedPersistenceRegions"] = ["us-east1"]
    allow = _constraint(EU_ONLY, "ALLOW")
    deny = _constraint(EU_ONLY, "DENY")
    assert judge(allow, TOPIC, "CREATE").verdict is Verdict.ALLOWED  # type: ignore[union-attr]
    assert judge(allow, us, "CREATE").verdict is Verdict.REFUSED  # type: ignore[union-attr]
    assert judge(deny, TOPIC, "CREATE").verdict is Verdict.REFUSED  # type: ignore[union-attr]
    assert judge(deny, us, "CREATE").verdict is Verdict.ALLOWED  # type: ignore[union-attr]
    undecided = judge(allow, BARE, "CREATE")
    assert undecided is not None and undecided.verdict is Verdict.UNDECIDED
    assert undecided.outcome.missing == ("resource.messageStoragePolicy",)


def test_method_and_resource_type_select_the_constraints() -> None:
    create_only = _constraint(EU_ONLY, "ALLOW", ("CREATE",))
    assert judge(create_only, BARE, "UPDATE") is None
    assert judge(create_only, BARE, "CREATE", resource_type="pubsub.googleapis.com/Schema") is None


def test_update_of_an_already_violating_topic() -> None:
    """Refused unless the update fixes the violation: the topic after the call decides,
    and the judgement says the topic already violated."""
    rule = _constraint("has(resource.kmsKeyName)", "ALLOW")
    before = dict(BARE)
    labels_only = {**BARE, "labels": {"env": "prod"}}
    refused = judge(rule, labels_only, "UPDATE", before)
    assert refused is not None and refused.verdict is Verdict.REFUSED
    assert refused.already_violating
    fixed = judge(rule, {**BARE, "kmsKeyName": "projects/k/x"}, "UPDATE", before)
    assert fixed is not None and fixed.verdict is Verdict.ALLOWED and fixed.already_violating
    fine = judge(rule, TOPIC, "UPDATE", TOPIC)
    assert fine is not None and fine.verdict is Verdict.ALLOWED and not fine.already_violating


def _needed_often(conditions: tuple[Any, ...], topic: dict[str, Any]) -> list[Any]:
    """The list's answers once the set has been needed often enough to be compiled."""
    for _ in range(_COMPILE_AFTER):
        answers = _answers(conditions, topic)
    return answers


@pytest.mark.parametrize("topic", [TOPIC, BARE], ids=["full", "bare"])
def test_conditions_evaluated_together_give_what_each_gives_alone(topic: dict[str, Any]) -> None:
    """The whole table in one list on one topic: errors in some elements (missing
    fields, a bad pattern), values that are not booleans and typed readings among
    them; every outcome, reason and missing path is the condition's own."""
    texts = list(dict.fromkeys(condition for condition, _, _ in TABLE))
    conditions = tuple(compile_condition(t) for t in texts)
    _needed_often(conditions, topic)  # compiled as one list from here on
    assert _batches[conditions].expression is not None
    together = evaluate_all(conditions, topic)
    alone = [compile_condition(t).evaluate(topic) for t in texts]
    assert together == alone
    # those that are true or false alone: the list answers them (a typed reading's
    # place in it is null), and the outcomes are the same
    decided = [t for t, outcome in zip(texts, alone, strict=True) if outcome.value is not None]
    conditions = tuple(compile_condition(t) for t in decided)
    answers = _needed_often(conditions, topic)
    assert [a for c, a in zip(conditions, answers, strict=True) if c._typed is None] == [
        o.value for t, o in zip(texts, alone, strict=True)
        if t in decided and compile_condition(t)._typed is None
    ]
    assert evaluate_all(conditions, topic) == [o for o in alone if o.value is not None]


def test_one_library_call_answers_the_conditions_a_resource_needs() -> None:
    on_name = tuple(compile_condition(t) for t in (
        "resource.name.endsWith('-orders')",
        "resource.name.matches('^projects/[a-z-]+/topics/[a-z-]+$') // trailing comment",
        "size(resource.name) > 100",
        "resource.name",  # not a boolean: evaluated again alone
    ))
    assert _answers(on_name, TOPIC) == [None] * 4  # not worth compiling yet
    assert _needed_often(on_name, TOPIC) == [True, True, False, TOPIC["name"]]
    outcomes = evaluate_all(on_name, TOPIC)
    assert [o.value for o in outcomes] == [True, True, False, None]
    assert "not true or false" in outcomes[3].reason
    # an element that fails makes the list an error: each is evaluated alone
    with_missing = (*on_name[:2], compile_condition("resource.kmsKeyName == 'k'"))
    assert _needed_often(with_missing, BARE) == [None, None, None]
    outcomes = evaluate_all(with_missing, BARE)
    assert [o.value for o in outcomes] == [False, True, None]
    assert outcomes[2].missing == ("resource.kmsKeyName",)


def test_a_constraint_set_objects_as_judge_does() -> None:
    us = copy.deepcopy(TOPIC)
    us["messageStoragePolicy"]["allowedPersistenceRegions"] = ["us-east1"]
    rules = [
        _constraint(EU_ONLY, "ALLOW"),
        _constraint(EU_ONLY, "DENY"),
        _constraint("resource.name.endsWith('-orders')", "DENY"),
        _constraint("has(resource.kmsKeyName)", "ALLOW", ("CREATE",)),
        _constraint("resource.kmsKeyName.startsWith('projects/')", "ALLOW"),
    ]
    rules = [
        replace(r, name=f"{r.name}{i}") for i, r in enumerate(rules)
    ]
    constraints = ConstraintSet(rules)
    for after, method, before in [
        (TOPIC, "CREATE", None), (us, "CREATE", None), (BARE, "CREATE", None),
        (BARE, "UPDATE", TOPIC), ({**BARE, "labels": {"a": "b"}}, "UPDATE", BARE),
    ]:
        judged = [judge(r, after, method, before) for r in rules]
        expected = [j for j in judged if j is not None and j.verdict is not Verdict.ALLOWED]
        assert constraints.objections(after, method, before) == expected, (after, method)
    schema = "pubsub.googleapis.com/Schema"
    assert constraints.objections(TOPIC, "CREATE", resource_type=schema) == []


def test_memo_keys_are_equal_only_for_equal_values() -> None:
    paths = ("labels", "messageStoragePolicy", "kmsKeyName")
    key = freeze_fields(TOPIC, paths)
    assert key == freeze_fields(copy.deepcopy(TOPIC), paths)
    assert hash(key) == hash(freeze_fields(copy.deepcopy(TOPIC), paths))
    differing = [
        {**TOPIC, "labels": {"env": "prod", "team": "payment"}},
        {**TOPIC, "messageStoragePolicy": {"allowedPersistenceRegions": EU,
                                           "enforceInTransit": 1}},  # 1 is not true
        {**TOPIC, "kmsKeyName": None},  # null is not absent
        {k: v for k, v in TOPIC.items() if k != "kmsKeyName"},
    ]
    keys = [freeze_fields(t, paths) for t in differing]
    assert len({key, *keys}) == 5
    # a value marshal does not take is frozen by hand, still hashable
    class Labels(dict[str, str]):
        pass

    odd = freeze_fields({**TOPIC, "labels": Labels(env="prod")}, ("labels",))
    assert hash(odd) == hash(freeze_fields({**TOPIC, "labels": Labels(env="prod")}, ("labels",)))
