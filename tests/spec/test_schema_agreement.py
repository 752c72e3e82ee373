"""Schema and validator agree on every value shape: any document the published JSON
Schema (`reconcile schema`, specs/schema.json) accepts, validate accepts at the shape
level. Semantic rules (label rules, ranges, regions, whole milliseconds) are beyond
what a JSON Schema states, so their diagnostics are allowed here."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from reconciler.spec.schema import spec_schema
from reconciler.spec.validate import validate_paths

# What the spec reader takes for a number although YAML 1.1 calls it a string (a JSON
# exponent); the same pattern as reconciler/yamlio.py.
JSON_FLOAT = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?[eE][-+]?[0-9]+")

SCHEMA = spec_schema()
# What `jsonschema.validate` does per call (check the schema, pick the validator class),
# done once: the checked schema is the same for every example.
jsonschema.validators.validator_for(SCHEMA).check_schema(SCHEMA)
VALIDATOR = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)
SHAPE_CODES = {
    "not-a-mapping", "missing-api-version", "unknown-api-version", "missing-kind",
    "unknown-kind", "unknown-field", "missing-field", "wrong-type", "bad-value",
    "yaml-syntax", "yaml-duplicate-key", "yaml-tag", "yaml-key-quote", "yaml-too-large",
    "yaml-too-deep", "file-encoding", "file-binary",
}
# A duration of the schema's shape that is not whole milliseconds, or over 24h, is a
# range problem (the schema has no way to state it).
RANGE_DURATION = ("is not a whole number of milliseconds", "is longer than 24h")
# A topic's project may come from a Defaults document elsewhere in the tree.
CROSS_DOCUMENT = "or set `project` in a Defaults document"


def from_schema(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """A small generator of instances of a JSON Schema: the keywords `reconcile
    schema` uses ($ref, anyOf, const, enum, type, properties, required,
    additionalProperties, items, pattern); any other keyword fails loudly so the test never silently
    generates less than the schema allows."""
    root = root or schema
    known = {"$ref", "$defs", "$id", "$schema", "anyOf", "const", "enum", "type", "properties",
             "required", "additionalProperties", "items", "pattern", "title",
             "description", "default"}
    unknown = set(schema) - known
    assert not unknown, f"the generator does not handle {unknown}"
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        return st.deferred(lambda: from_schema(root["$defs"][name], root))
    if "anyOf" in schema:
        return st.one_of([from_schema(branch, root) for branch in schema["anyOf"]])
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "type" not in schema:  # any JSON value (a transform's parameters)
        scalars = st.none() | st.booleans() | st.text(max_size=20) | st.integers(-99, 99)
        return st.recursive(
            scalars, lambda inner: st.lists(inner, max_size=3)
            | st.dictionaries(st.text(max_size=10), inner, max_size=3), max_leaves=6,
        )
    kind = schema["type"]
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"])
        return st.text(max_size=80)
    if kind == "integer":
        # JSON Schema's integer includes numbers written with a zero fraction (1e2).
        return (
            st.integers()
            | st.integers(-(10**30), 10**30)
            | st.integers(-(10**15), 10**15).map(float)
        )
    if kind == "number":
        return st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {"type": "string"}), root), max_size=5)
    assert kind == "object", kind
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    extra = schema.get("additionalProperties", True)
    if not properties and extra is False:  # an empty message (`avroFormat: {}`)
        return st.just({})
    if not properties:
        assert isinstance(extra, dict)
        return st.dictionaries(st.text(max_size=70), from_schema(extra, root), max_size=6)
    assert extra is False
    return st.fixed_dictionaries(
        {k: from_schema(v, root) for k, v in properties.items() if k in required},
        optional={k: from_schema(v, root) for k, v in properties.items() if k not in required},
    )


_PAIR = re.compile(r"\\ud[89ab][0-9a-f]{2}\\ud[c-f][0-9a-f]{2}")


def _json(document: Any) -> str:
    """JSON text with every non-ASCII character escaped, except characters beyond the
    BMP, written as themselves: libyaml (YAML 1.1) does not decode JSON's surrogate-pair
    escapes (a known limit of reading JSON as YAML, not of the spec format)."""
    text = json.dumps(document)
    return _PAIR.sub(lambda m: json.loads(f'"{m.group(0)}"'), text)


def _shape_problems(document: Any, text: str) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doc.yaml"
        path.write_text(text, encoding="utf-8")
        result = validate_paths([path])
    return [
        d.render()
        for d in result.diagnostics.items
        if d.code in SHAPE_CODES
        or (d.code == "bad-duration" and not d.message.endswith(RANGE_DURATION))
        if not (d.code == "missing-field" and CROSS_DOCUMENT in d.message)
    ]


@settings(
    max_examples=300, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(from_schema(SCHEMA))
def test_what_the_schema_accepts_validate_accepts_as_json(document: Any) -> None:
    VALIDATOR.validate(document)  # the generator's promise, checked
    text = _json(document)  # JSON is YAML: every string stays a string
    assert _shape_problems(document, text) == [], text


@settings(
    max_examples=150, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(from_schema(SCHEMA))
def test_what_the_schema_accepts_validate_accepts_as_block_yaml(document: Any) -> None:
    import yaml

    text = yaml.dump(document, Dumper=_QuotingDumper, allow_unicode=True, sort_keys=False)
    # Only documents PyYAML's own dumper writes faithfully (it mangles e.g. U+0085).
    assume(yaml.safe_load(text) == document)
    assert _shape_problems(document, text) == [], text


def _quoting_dumper() -> Any:
    """PyYAML's dumper, but a string that the spec reader takes for a number (a JSON
    exponent such as `0E0`, which YAML 1.1 calls a string) is written quoted, as a
    user would have to write it."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def string(dumper: Any, value: str) -> Any:
        style = '"' if JSON_FLOAT.fullmatch(value) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, string)
    return Dumper


_QuotingDumper = _quoting_dumper()


def test_a_json_number_with_an_exponent_is_a_number() -> None:
    doc = {
        "apiVersion": "reconcile.pubsub/v1", "kind": "HedgingProfile",
        "metadata": {"name": "tiny"}, "spec": {"refillRatio": 1e-3},
    }
    jsonschema.validate(doc, SCHEMA)
    text = json.dumps(doc).replace("0.001", "1e-3")
    assert "1e-3" in text
    assert _shape_problems(doc, text) == []
