"""Message transforms, ingestion sources and tags in specs (issue 48, item 1), checked
offline with the service's rules (reconciler/transformrules.py, ingestionrules.py,
tagrules.py: the local server applies the first two too): each problem an error at the
line of the member it is about, saying what to do; omitted fields are unmanaged; a
Defaults document gives transforms (nearest) and tags (merged), never an ingestion
source; the desired state holds each in the REST JSON shape, read-only."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.frozen import FrozenDict, FrozenList
from reconciler.spec.validate import validate_paths

HEAD = "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
NO_POLICIES = "# org-policy snapshot: no org policies set\n"
ENDPOINT = "projects/proj-a/locations/us-central1/endpoints/123"


def _topic(name: str, *spec_lines: str) -> str:
    body = "".join(f"  {line}\n" for line in spec_lines)
    return f"{HEAD}metadata: {{project: proj-a, name: {name}}}\n" + (
        "spec:\n" + body if body else "spec: {}\n"
    )


def _tree(tmp_path: Path, specs: str) -> Path:
    (tmp_path / "topics.yaml").write_text(specs)
    (tmp_path / "org-policy.yaml").write_text(NO_POLICIES)
    return tmp_path


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_declared_fields_reach_the_desired_state_in_the_rest_shape(tmp_path: Path) -> None:
    _tree(tmp_path, _topic(
        "orders",
        "messageTransforms:",
        "- javascriptUdf: {functionName: redact, code: 'function redact(m, x) { return m; }'}",
        f"- aiInference: {{endpoint: {ENDPOINT}, unstructuredInference: "
        "{parameters: {temperature: 0.2}}}",
        "  disabled: false",
        "- compression: {compressionAlgorithm: ZLIB, compressionMode: COMPRESS}",
        "ingestionDataSourceSettings:",
        "  cloudStorage: {bucket: landing, textFormat: {delimiter: ','}}",
        "  platformLogsSettings: {severity: WARNING}",
        "tags: {'123/environment': production}",
    ) + "---\n" + _topic("plain"))
    result = validate_paths([tmp_path])
    # No problem; what only plan or nobody can judge of where the data goes is named
    # (reconciler/messagepaths.py): the model's exports, the source's boundary.
    assert [(d.severity, d.code) for d in result.diagnostics.items] == [
        ("warning", "transform-exports-at-plan"), ("warning", "ingestion-region-unjudged"),
    ]
    by_name = {t.topic: t for t in result.desired.topics}
    orders = by_name["orders"]
    assert orders.message_transforms == [
        {"javascriptUdf": {"functionName": "redact",
                           "code": "function redact(m, x) { return m; }"}},
        {"aiInference": {"endpoint": ENDPOINT,
                         "unstructuredInference": {"parameters": {"temperature": 0.2}}}},
        {"compression": {"compressionAlgorithm": "ZLIB", "compressionMode": "COMPRESS"}},
    ]  # `disabled: false` is the default: the service returns no member for it
    assert isinstance(orders.message_transforms, FrozenList)
    assert orders.ingestion == {
        "cloudStorage": {"bucket": "landing", "textFormat": {"delimiter": ","}},
        "platformLogsSettings": {"severity": "WARNING"},
    }
    assert isinstance(orders.ingestion, FrozenDict)
    assert orders.tags == {"123/environment": "production"}
    plain = by_name["plain"]  # omitted: unmanaged
    assert (plain.message_transforms, plain.ingestion, plain.tags) == (None, None, None)


@pytest.mark.parametrize(
    ("lines", "needle", "code", "message"),
    [
        (["messageTransforms:", "- javascriptUdf: {code: 'function f() {}'}"],
         "javascriptUdf", "message-transform",
         "messageTransforms[0].javascriptUdf.functionName is required"),
        (["messageTransforms:", "- javascriptUdf:", "    functionName: f",
          "    code: '" + "x" * 20481 + "'"],
         "    code:", "message-transform",
         "messageTransforms[0].javascriptUdf.code is 20481 bytes; a JavaScript UDF's code "
         "takes at most 20480 bytes (20 KB)"),
        (["messageTransforms:",
          "- javascriptUdf: {functionName: f, code: 'function f() {}'}",
          "- javascriptUdf: {functionName: f, code: 'function f() { }'}"],
         "{ }", "message-transform",
         "each JavaScript UDF of a resource needs a unique function name"),
        (["messageTransforms:", "- aiInference: {endpoint: us-central1/my-model}"],
         "aiInference", "message-transform",
         "is not a Vertex AI endpoint; expected projects/P/locations/L/endpoints/E or "
         "projects/P/locations/L/publishers/PUB/models/M"),
        (["messageTransforms:", "- compression: {compressionAlgorithm: ZLIB}"],
         "compression", "message-transform",
         "messageTransforms[0].compression.compressionMode is required: one of COMPRESS, "
         "DECOMPRESS"),
        (["messageTransforms:", "- disabled: true"], "disabled", "message-transform",
         "names no transform: give one of javascriptUdf, aiInference, compression"),
        (["messageTransforms:"]
         + ["- compression: {compressionAlgorithm: ZLIB, compressionMode: COMPRESS}"] * 6,
         "messageTransforms:", "message-transform",
         "Maximum enabled transforms: 5. Enabled transforms: 6; disable (`disabled: true`) "
         "or remove some, to at most 5"),
        (["messageTransforms:",
          f"- aiInference: {{endpoint: {ENDPOINT}, unstructuredInference: "
          "{parameters: {apiKey: abc}}}"],
         "aiInference", "secret-in-spec", "'apiKey' looks like a secret"),
        (["ingestionDataSourceSettings:",
          "  awsKinesis: {streamArn: s, awsRoleArn: r, gcpServiceAccount: g}"],
         "awsKinesis", "ingestion-source",
         "Missing required fields for AwsKinesis ingestion settings: consumer_arn; set them "
         "under ingestionDataSourceSettings.awsKinesis"),
        (["ingestionDataSourceSettings:",
          "  awsMsk: {clusterArn: c, topic: t, awsRoleArn: r}"],
         "awsMsk", "ingestion-source",
         "Missing required fields for AwsMsk ingestion settings: gcp_service_account"),
        (["ingestionDataSourceSettings:",
          "  confluentCloud: {bootstrapServer: 'h:9092', clusterId: c, topic: t}"],
         "confluentCloud", "ingestion-source",
         "Missing required fields for ConfluentCloud ingestion settings: identity_pool_id, "
         "gcp_service_account"),
        (["ingestionDataSourceSettings:", "  cloudStorage: {bucket: b}",
          "  azureEventHubs: {namespace: n}"],
         "cloudStorage", "ingestion-source",
         "names cloudStorage and azureEventHubs; a topic ingests from exactly one source"),
        (["ingestionDataSourceSettings:", "  platformLogsSettings: {severity: INFO}"],
         "ingestionDataSourceSettings:", "ingestion-source",
         "names no source: give one of awsKinesis, cloudStorage, azureEventHubs, awsMsk, "
         "confluentCloud. A spec cannot remove a topic's source"),
        (["tags: {environment: production}"], "environment", "tag-key",
         "tag key 'environment' is not a namespaced tag key"),
        (["tags: {'123/environment': tagValues/456}"], "123/environment", "tag-value",
         "is not a tag value's short name"),
    ],
)
def test_each_rule_is_an_error_at_its_line(
    tmp_path: Path, lines: list[str], needle: str, code: str, message: str
) -> None:
    text = _topic("orders", *lines)
    _tree(tmp_path, text)
    items = validate_paths([tmp_path]).diagnostics.items
    found = [d for d in items if d.code == code]
    assert len(found) == 1, items
    assert message in found[0].message
    assert found[0].line == _line_of(text, needle)
    assert found[0].file.endswith("topics.yaml")


def test_an_unknown_member_is_refused_at_its_line(tmp_path: Path) -> None:
    text = _topic("orders", "messageTransforms:", "- javascriptUDF: {functionName: f}")
    _tree(tmp_path, text)
    items = validate_paths([tmp_path]).diagnostics.items
    assert len(items) == 1, items
    assert items[0].line == _line_of(text, "javascriptUDF")
    assert "javascriptUDF" in items[0].message


def test_defaults_give_transforms_nearest_and_tags_merged(tmp_path: Path) -> None:
    (tmp_path / "defaults.yaml").write_text(
        "apiVersion: reconcile.pubsub/v1\nkind: Defaults\nspec:\n"
        "  project: proj-a\n"
        "  messageTransforms:\n"
        "  - compression: {compressionAlgorithm: ZLIB, compressionMode: COMPRESS}\n"
        "  tags: {'123/environment': production, '123/costCenter': ops}\n"
    )
    _tree(tmp_path, f"{HEAD}metadata: {{name: inherits}}\n---\n"
          f"{HEAD}metadata: {{name: own}}\nspec:\n  messageTransforms: []\n"
          "  tags: {'123/costCenter': marketing}\n")
    result = validate_paths([tmp_path])
    assert result.diagnostics.items == []
    by_name = {t.topic: t for t in result.desired.topics}
    assert by_name["inherits"].message_transforms == [
        {"compression": {"compressionAlgorithm": "ZLIB", "compressionMode": "COMPRESS"}}
    ]
    assert by_name["inherits"].tags == {"123/environment": "production", "123/costCenter": "ops"}
    assert by_name["own"].message_transforms == []  # its own list replaces the default
    assert by_name["own"].tags == {"123/environment": "production",
                                   "123/costCenter": "marketing"}


def test_a_defaults_document_declaring_an_ingestion_source_is_an_error_at_its_line(
    tmp_path: Path
) -> None:
    defaults = (
        "apiVersion: reconcile.pubsub/v1\nkind: Defaults\nspec:\n  project: proj-a\n"
        "  ingestionDataSourceSettings:\n    cloudStorage: {bucket: b}\n"
    )
    (tmp_path / "defaults.yaml").write_text(defaults)
    _tree(tmp_path, f"{HEAD}metadata: {{name: alpha}}\n---\n{HEAD}metadata: {{name: bravo}}\n")
    items = validate_paths([tmp_path]).diagnostics.items
    assert [(d.code, Path(d.file).name, d.line) for d in items] == [
        ("ingestion-in-defaults", "defaults.yaml", 5)
    ]
    assert "move it to the one Topic document that ingests from it" in items[0].message
    assert all(t.ingestion is None for t in validate_paths([tmp_path]).desired.topics)
