"""Properties of the differ, over generated desired topics, live topics and org policies.

A tiny pure simulator applies a plan's requests the way the service does (masked
fields replaced; an unset storage policy recomputed from the org policy), so that
"a plan made right after applying its own result is empty" can be checked.
"""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reconciler.backends.base import ObservedTopic
from reconciler.orgpolicy.locations import LocationRestriction
from reconciler.ownership import OWNERSHIP_LABEL, RESERVED_PREFIX
from reconciler.plan.differ import diff_topic
from reconciler.plan.model import Request
from reconciler.plan.policy import computed_policy
from reconciler.spec.checks import OrgFacts
from reconciler.spec.desired import DesiredTopic, StorageIntent
from reconciler.spec.orgrules import org_problems, subject_of
from reconciler.topic import is_managed_key, policy_json
from reconciler.topicfields import MASK_PATHS

REGIONS = ["us-central1", "us-east1", "europe-west1", "asia-east1", "europe-west4"]
USER_KEYS = ["team", "env", "cost-center"]
FOREIGN_KEYS = ["goog-terraform-provisioned", "owner", "team"]  # "team" may be declared
RESERVED_KEYS = [OWNERSHIP_LABEL, f"{RESERVED_PREFIX}hedge-profile", f"{RESERVED_PREFIX}old"]
VALUES = st.sampled_from(["a", "b", "true", "x-1"])
NAME = "projects/p/topics/t"

region_sets = st.lists(st.sampled_from(REGIONS), min_size=1, max_size=5, unique=True).map(
    lambda r: tuple(sorted(r))
)
facts_st = st.builds(
    lambda allowed, eit: OrgFacts(
        LocationRestriction(None if allowed is None else frozenset(allowed)), eit
    ),
    st.none() | region_sets,
    st.booleans(),
)
storage_st = st.one_of(
    st.just(StorageIntent("unmanaged")),
    st.just(StorageIntent("inherit")),
    st.builds(
        lambda regions, eit: StorageIntent("explicit", regions, eit),
        region_sets,
        st.sampled_from([None, True, False]),
    ),
)
desired_st = st.builds(
    lambda labels, hedging, storage: DesiredTopic(
        "p", "t", {**labels, **hedging}, storage, file="specs/t.yaml", line=3
    ),
    st.dictionaries(st.sampled_from(USER_KEYS), VALUES, max_size=3),
    st.dictionaries(st.just(f"{RESERVED_PREFIX}hedge-profile"), VALUES, max_size=1),
    storage_st,
)


@st.composite
def case_st(draw: Any) -> tuple[DesiredTopic, OrgFacts]:
    """A desired topic the org policy accepts (validation rejects the rest) and the
    org facts of its project."""
    facts = draw(facts_st)
    desired = draw(desired_st)
    if desired.storage.mode == "explicit":
        pool = sorted(facts.restriction.allowed or REGIONS)
        if not pool:
            facts = OrgFacts(LocationRestriction(None), facts.enforce_in_transit)
            pool = REGIONS
        regions = tuple(sorted(draw(st.lists(st.sampled_from(pool), min_size=1, unique=True))))
        eits = [None, True] if facts.enforce_in_transit else [None, True, False]
        desired = DesiredTopic(
            "p", "t", desired.labels,
            StorageIntent("explicit", regions, draw(st.sampled_from(eits))),
            file=desired.file, line=desired.line,
        )
    assert not org_problems(subject_of(desired), facts)
    return desired, facts


live_policy_st = st.none() | st.fixed_dictionaries(
    {"allowed_persistence_regions": st.lists(st.sampled_from(REGIONS), max_size=6)},
    optional={"enforce_in_transit": st.booleans()},
)
policy_live_st = st.builds(
    lambda labels, regions, eit: ObservedTopic(
        NAME,
        {"name": NAME, "labels": labels,
         "message_storage_policy": {"allowed_persistence_regions": regions,
                                    **({} if eit is None else {"enforce_in_transit": eit})}},
    ),
    st.dictionaries(st.sampled_from(FOREIGN_KEYS + RESERVED_KEYS + USER_KEYS), VALUES),
    st.lists(st.sampled_from(REGIONS), max_size=6),
    st.sampled_from([None, True, False]),
)
live_st = st.none() | st.builds(
    lambda labels, policy: ObservedTopic(
        NAME,
        {"name": NAME, "labels": labels, "message_storage_policy": policy},
        {"name": NAME, "labels": labels, "messageRetentionDuration": "600s"},
    ),
    st.dictionaries(st.sampled_from(FOREIGN_KEYS + RESERVED_KEYS + USER_KEYS), VALUES),
    live_policy_st,
)


def simulate(request: Request | None, live: ObservedTopic | None, facts: OrgFacts) -> Any:
    """What the service holds after the request (pure; no validation)."""
    if request is None:
        return live
    body = request.topic
    if request.method == "CreateTopic":
        policy = body.get("message_storage_policy") or policy_json(computed_policy(facts))
        return ObservedTopic(
            NAME, {"name": NAME, "labels": dict(body["labels"]), "message_storage_policy": policy}
        )
    assert live is not None and request.method == "UpdateTopic"
    new = dict(live.body)
    for path in request.update_mask:
        if path == "labels":
            assert request.label_merge is not None and request.marker_label is not None
            new["labels"] = {**request.label_merge.onto(live.body["labels"]),
                             request.marker_label: "0123456789abcdef"}
        elif path == "message_storage_policy":
            new[path] = body.get(path) or policy_json(computed_policy(facts))
    return ObservedTopic(NAME, new, live.raw)


@settings(max_examples=400, deadline=None)
@given(case_st(), live_st)
def test_plan_after_apply_is_empty(case: Any, live: Any) -> None:
    desired, facts = case
    rc = diff_topic(desired, live, facts)
    after = simulate(rc.request, live, facts)
    again = diff_topic(desired, after, facts)
    assert again.action == "no-op", (rc, again)
    assert again.update_mask == []
    assert again.request is None


@settings(max_examples=300, deadline=None)
@given(case_st(), policy_live_st, st.randoms(use_true_random=False))
def test_region_order_and_duplicates_never_diff(case: Any, live: Any, rnd: Any) -> None:
    desired, facts = case
    policy = dict(live.body["message_storage_policy"])
    regions = list(policy["allowed_persistence_regions"])
    shuffled = regions + regions[: rnd.randint(0, len(regions))]
    rnd.shuffle(shuffled)
    other = ObservedTopic(
        NAME, {**live.body, "message_storage_policy": {**policy,
                                                      "allowed_persistence_regions": shuffled}}
    )
    a, b = diff_topic(desired, live, facts), diff_topic(desired, other, facts)
    assert (a.action, a.update_mask) == (b.action, b.update_mask)
    assert a.request == b.request


@settings(max_examples=300, deadline=None)
@given(case_st(), policy_live_st)
def test_enforce_in_transit_false_equals_absent(case: Any, live: Any) -> None:
    desired, facts = case
    policy = dict(live.body["message_storage_policy"])
    assume(not policy.get("enforce_in_transit"))
    absent = {k: v for k, v in policy.items() if k != "enforce_in_transit"}
    false = {**policy, "enforce_in_transit": False}
    a = diff_topic(desired, ObservedTopic(NAME, {**live.body, "message_storage_policy": absent}),
                   facts)
    b = diff_topic(desired, ObservedTopic(NAME, {**live.body, "message_storage_policy": false}),
                   facts)
    assert (a.action, a.update_mask) == (b.action, b.update_mask)


@settings(max_examples=200, deadline=None)
@given(region_sets, policy_live_st)
def test_desired_false_equals_omitted_when_org_does_not_enforce(
    regions: tuple[str, ...], live: Any
) -> None:
    facts = OrgFacts(LocationRestriction(None), False)
    omitted = DesiredTopic("p", "t", {}, StorageIntent("explicit", regions, None))
    false = DesiredTopic("p", "t", {}, StorageIntent("explicit", regions, False))
    a, b = diff_topic(omitted, live, facts), diff_topic(false, live, facts)
    assert (a.update_mask, a.request) == (b.update_mask, b.request)


@settings(max_examples=400, deadline=None)
@given(case_st(), live_st, st.dictionaries(st.sampled_from(FOREIGN_KEYS), VALUES))
def test_foreign_labels_and_unmanaged_fields_never_in_a_mask(
    case: Any, live: Any, foreign: dict[str, str]
) -> None:
    desired, facts = case
    rc = diff_topic(desired, live, facts)
    assert set(rc.update_mask) <= set(MASK_PATHS)
    if desired.storage.mode == "unmanaged":
        assert "message_storage_policy" not in rc.update_mask
    if rc.request is not None:
        assert set(rc.request.topic) <= {"name", "labels", "message_storage_policy"}
        if rc.action == "update":  # labels too, for the plan's marker
            assert list(rc.request.update_mask) == [
                p for p in MASK_PATHS if p in rc.update_mask or p == "labels"
            ]
    if live is None or rc.request is None:
        return
    keys = {**desired.labels, OWNERSHIP_LABEL: "true"}
    live_labels = live.body["labels"]
    if "labels" in rc.update_mask:
        assert rc.request.label_merge is not None
        sent = rc.request.label_merge.onto(live_labels)
        kept = {k: v for k, v in live_labels.items() if not is_managed_key(k, keys)}
        assert {k: v for k, v in sent.items() if not is_managed_key(k, keys)} == kept
    # Changing foreign labels alone never changes what is masked.
    unmanaged = {k: v for k, v in foreign.items() if not is_managed_key(k, keys)}
    other_labels = {k: v for k, v in live_labels.items() if is_managed_key(k, keys)}
    other = ObservedTopic(NAME, {**live.body, "labels": {**other_labels, **unmanaged}})
    assert diff_topic(desired, other, facts).update_mask == rc.update_mask


@settings(max_examples=400, deadline=None)
@given(case_st(), live_st)
def test_settled_shortcut_agrees_with_the_full_comparison(case: Any, live: Any) -> None:
    """diff_topic skips building both comparable shapes when the live labels are the
    declared ones and the policy matches: it must decide exactly what the full
    comparison decides (and a live topic made of the desired shape always takes it)."""
    from reconciler.plan.differ import (
        _settled,
        comparable,
        desired_labels,
        live_policy_of,
        mask_of,
    )
    from reconciler.plan.policy import expected_policy
    from reconciler.topic import TopicShape

    desired, facts = case
    assume(live is not None)
    if desired.storage.mode != "unmanaged":  # _settled compares the two as they are
        want_policy = expected_policy(desired, facts)
        assert live_policy_of(want_policy) == want_policy
    keys = desired_labels(desired)
    shape = live.shape
    live_policy = live_policy_of(shape.policy)
    mode = desired.storage.mode
    want = expected_policy(desired, facts) if mode != "unmanaged" else live_policy
    full = mask_of(comparable(shape, desired, keys),
                   comparable(TopicShape(keys, want), desired, keys))
    if _settled(shape, keys, live_policy, want):
        assert full == []
        assert diff_topic(desired, live, facts).action == "no-op"
    if mode == "explicit" and want is not None:
        same = ObservedTopic(NAME, TopicShape(keys, want).body(NAME))
        assert _settled(same.shape, keys, live_policy_of(want), want)
