"""No input file makes validate fail with anything but diagnostics: arbitrary values
in every spec position, and arbitrary text, never raise out of `validate_paths`."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.spec.validate import validate_paths

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
    st.text(max_size=20), st.sampled_from(["inherit", "us-east1", "500ms", "-us", "in:x"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
KEYS = [
    ("metadata", "project"), ("metadata", "name"), ("spec", "labels"),
    ("spec", "messageStoragePolicy"), ("spec", "publishers"), ("spec",),
    ("spec", "publishers", "hedging"), ("spec", "publishers", "retry"),
    ("spec", "publishers", "regions"), ("kind",), ("apiVersion",),
]


BASES: list[dict[str, Any]] = [
    {
        "apiVersion": "reconcile.pubsub/v1",
        "kind": "Topic",
        "metadata": {"project": "acme-payments", "name": "orders"},
        "spec": {"publishers": {"regions": ["us-east1"], "hedging": "fast"}},
    },
    {
        "apiVersion": "reconcile.pubsub/v1",
        "kind": "HedgingProfile",
        "metadata": {"name": "fast"},
        "spec": {"hedgeDelay": "200ms", "maxTokens": 10, "refillRatio": 0.1},
    },
    {
        "apiVersion": "reconcile.pubsub/v1",
        "kind": "Defaults",
        "spec": {"project": "acme-payments", "labels": {"team": "x"}},
    },
]
KEYS += [("spec", "hedgeDelay"), ("spec", "maxTokens"), ("spec", "refillRatio"),
         ("spec", "project"), ("metadata",)]


def _document(path: tuple[str, ...], value: Any, base: int) -> list[dict[str, Any]]:
    import copy

    docs = copy.deepcopy(BASES)
    doc = docs[base]
    node = doc
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[path[-1]] = value
    return docs


SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@SETTINGS
@given(st.sampled_from(KEYS), values, st.integers(0, len(BASES) - 1))
def test_any_value_anywhere_gives_diagnostics_not_exceptions(
    path: tuple[str, ...], value: Any, base: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "fuzz.yaml"
        spec.write_text(yaml.safe_dump_all(_document(path, value, base)))
        result = validate_paths([spec])
        for d in result.diagnostics.items:
            assert d.line >= 1 and d.code and d.message


@SETTINGS
@given(st.text(max_size=300))
def test_any_text_gives_diagnostics_not_exceptions(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "fuzz.yaml"
        spec.write_text(text, encoding="utf-8", errors="surrogatepass")
        validate_paths([spec])


POLICY_KEYS = [
    ("name",), ("spec",), ("spec", "rules"), ("spec", "inheritFromParent"), ("spec", "reset"),
    ("spec", "rules", "values"), ("spec", "rules", "allowAll"), ("spec", "rules", "enforce"),
    ("spec", "rules", "values", "allowedValues"), ("spec", "rules", "values", "deniedValues"),
    ("ancestry",),
]


@SETTINGS
@given(st.sampled_from(POLICY_KEYS), values)
def test_any_org_policy_snapshot_gives_a_clear_error_or_a_store(
    path: tuple[str, ...], value: Any
) -> None:
    from reconciler.errors import InputError

    policy: dict[str, Any] = {
        "name": "projects/acme-payments/policies/gcp.resourceLocations",
        "spec": {"rules": {"values": {"allowedValues": ["in:us-locations"]}}},
    }
    node = policy
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[path[-1]] = value
    if isinstance(policy["spec"], dict) and isinstance(policy["spec"].get("rules"), dict):
        policy["spec"]["rules"] = [policy["spec"]["rules"]]
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = Path(tmp) / "org-policy.yaml"
        snapshot.write_text(yaml.safe_dump(policy))
        (Path(tmp) / "t.yaml").write_text(yaml.safe_dump(_document(("spec",), {}, 0)[0]))
        try:
            validate_paths([Path(tmp) / "t.yaml"], snapshot)
        except InputError as exc:
            assert str(snapshot) in str(exc)
