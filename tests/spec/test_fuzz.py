"""No input file makes validate fail with anything but diagnostics: arbitrary values
in every spec and org-policy snapshot position, and arbitrary text in either file,
never raise out of `validate_paths`."""

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
    ("spec", "rules", "condition"), ("spec", "rules", "denyAll"), ("dryRunSpec",), ("etag",),
    ("ancestry",), ("spec", "rulez"), ("enforced",),
]
POLICY_NAMES = st.sampled_from([
    "projects/acme-payments/policies/gcp.resourceLocations",
    "projects/acme-payments/policies/pubsub.enforceInTransitRegions",
    "organizations/1001/policies/gcp.resourceLocations",
    "folders/x/policies/gcp.resourceLocation",
    "projects/acme-paymnets/policies/constraints/gcp.resourceLocations",
]) | st.text(max_size=40)


def _snapshot_diagnostics_are_positioned(snapshot: Path, spec_value: Any = None) -> None:
    """Whatever the snapshot holds, validate reports diagnostics (the snapshot's with
    a line in it), never an exception."""
    spec = snapshot.parent / "t.yaml"
    spec.write_text(yaml.safe_dump(_document(("spec",), spec_value or {}, 0)[0]))
    result = validate_paths([spec], snapshot, missing_snapshot="require")
    for d in result.diagnostics.items:
        assert d.code and d.message
        if d.file == str(snapshot):
            assert d.line >= 1, d.render()


@SETTINGS
@given(st.sampled_from(POLICY_KEYS), values, POLICY_NAMES)
def test_any_org_policy_snapshot_gives_positioned_diagnostics(
    path: tuple[str, ...], value: Any, name: str
) -> None:
    policy: dict[str, Any] = {
        "name": name,
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
        _snapshot_diagnostics_are_positioned(snapshot)


@SETTINGS
@given(st.text(max_size=300))
def test_any_snapshot_text_gives_diagnostics_not_exceptions(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = Path(tmp) / "org-policy.yaml"
        snapshot.write_text(text, encoding="utf-8", errors="surrogatepass")
        _snapshot_diagnostics_are_positioned(snapshot)


@SETTINGS
@given(st.lists(st.tuples(POLICY_NAMES, values), max_size=4), values)
def test_any_list_of_policies_gives_diagnostics_not_exceptions(
    policies: list[tuple[str, Any]], ancestry: Any
) -> None:
    docs: list[Any] = [{"name": n, "spec": {"rules": [r]}} for n, r in policies]
    docs.append({"ancestry": ancestry})
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = Path(tmp) / "org-policy.yaml"
        snapshot.write_text(yaml.safe_dump_all(docs))
        _snapshot_diagnostics_are_positioned(snapshot)
