"""The calls behind `gcloud pubsub message-transforms validate|test`
(`projects/P:validateMessageTransform`, `projects/P:testMessageTransforms`) on the
REST face: through the real gcloud, and through plain HTTP for what gcloud does not
show (a UDF bounded in CPU and memory, Compression both ways, an AI Inference
transform that is not run, a disabled transform skipped); without the optional
JavaScript engine a UDF is refused with a message saying so; the gRPC face does not
serve them (no public proto has them)."""

from __future__ import annotations

import base64
import zlib
from pathlib import Path
from typing import Any

import grpc
import pytest
from rest_support import rest
from test_gcloud import GCLOUD, gcloud
from udf_support import no_engine_server

PROJECT = "proj-alpha"
VALIDATE = f"/v1/projects/{PROJECT}:validateMessageTransform"
TEST = f"/v1/projects/{PROJECT}:testMessageTransforms"
TOPIC = f"projects/{PROJECT}/topics/orders"
REDACT = (
    "function redact(message, metadata) {\n"
    "  const d = JSON.parse(message.data); delete d.ssn;\n"
    "  message.data = JSON.stringify(d);\n"
    "  message.attributes['id'] = metadata.message_id || 'none';\n"
    "  return message;\n"
    "}\n"
)


def udf(name: str, code: str) -> dict[str, Any]:
    return {"javascriptUdf": {"functionName": name, "code": code}}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def transformed_by(address: str, transforms: list[Any], data: bytes, **message: Any) -> list[Any]:
    answer = rest(address, "POST", TEST, {
        "message": {"data": b64(data), **message},
        "messageTransforms": {"messageTransforms": transforms},
    })
    assert answer.status == 200, answer.body
    return list(answer.body["transformedMessages"])


@pytest.fixture
def gcloud_path() -> str:
    if GCLOUD is None:
        reason = "gcloud is not installed: its message-transforms commands cannot be tried"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    return GCLOUD


def test_gcloud_validate_and_test(
    local_server: Any, publisher_client: Any, tmp_path: Path, gcloud_path: str
) -> None:
    address = local_server.address
    good = tmp_path / "good.yaml"
    good.write_text("javascriptUdf:\n  functionName: redact\n  code: |\n"
                    + "".join(f"    {line}\n" for line in REDACT.splitlines()))
    run = gcloud(address, tmp_path, "message-transforms", "validate",
                 f"--message-transform-file={good}")
    assert run.code == 0, run.err
    assert "Message transform is valid." in run.out + run.err
    misnamed = tmp_path / "misnamed.yaml"
    misnamed.write_text(good.read_text().replace("functionName: redact", "functionName: mask"))
    run = gcloud(address, tmp_path, "message-transforms", "validate",
                 f"--message-transform-file={misnamed}")
    assert run.code == 1
    assert "The code of JavaScript UDF 'mask' defines no function 'mask'" in run.err
    # test against the topic's own transforms: the UDF, then a filter.
    publisher_client.create_topic(request={"name": TOPIC, "message_transforms": [
        {"javascript_udf": {"function_name": "redact", "code": REDACT}},
        {"javascript_udf": {"function_name": "drop",
                            "code": "function drop(m) { return m.attributes.keep ? m : null; }"}},
    ]})
    run = gcloud(address, tmp_path, "message-transforms", "test", "--topic=orders",
                 '--message={"name": "a", "ssn": "123"}', "--attribute=keep=1",
                 "--format=json")
    assert run.code == 0, run.err
    assert '"data": "{\\"name\\":\\"a\\"}"' in run.out
    assert '"id": "none"' in run.out and '"keep": "1"' in run.out
    run = gcloud(address, tmp_path, "message-transforms", "test", "--topic=orders",
                 '--message={"name": "a"}', "--format=json")
    assert run.code == 0, run.err
    assert '"filteredMessage": {}' in run.out


def test_a_udf_runs_with_its_metadata_and_the_transforms_chain(local_server: Any) -> None:
    zlib_step = {"compression": {"compressionAlgorithm": "ZLIB", "compressionMode": "COMPRESS"}}
    unzip_step = {"compression": {"compressionAlgorithm": "ZLIB", "compressionMode": "DECOMPRESS"}}
    steps = transformed_by(local_server.address, [
        udf("redact", REDACT),
        {**zlib_step, "disabled": True},  # skipped: not a step
        zlib_step,
        {"aiInference": {"endpoint": f"projects/{PROJECT}/locations/us-central1/endpoints/9"}},
        udf("never", "function never(m) { return m; }"),
    ], b'{"name": "a", "ssn": "123"}', messageId="42")
    assert [next(iter(step)) for step in steps] == [
        "transformedMessage", "transformedMessage", "failedMessage",
    ]
    first = steps[0]["transformedMessage"]
    assert base64.b64decode(first["data"]) == b'{"name":"a"}'
    assert first["attributes"] == {"id": "42"}
    assert zlib.decompress(base64.b64decode(steps[1]["transformedMessage"]["data"])) == (
        b'{"name":"a"}'
    )
    unzipped = transformed_by(
        local_server.address, [unzip_step], base64.b64decode(steps[1]["transformedMessage"]["data"])
    )
    assert base64.b64decode(unzipped[0]["transformedMessage"]["data"]) == b'{"name":"a"}'
    error = steps[2]["failedMessage"]["error"]
    assert error["code"] == grpc.StatusCode.UNIMPLEMENTED.value[0]
    assert "sends no message to the model at projects/proj-alpha/locations/us-central1" in (
        error["message"]
    )


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("function f(m) { while (true) {} }", "ran past its 500 ms limit"),
        ("function f(m) { const a = []; while (true) { a.push('x'.repeat(1 << 20)); } }",
         "used more than 64 MiB"),
        ("function f(m) { return require('fs'); }", "ReferenceError: require is not defined"),
        ("function f(m) { return {data: 1}; }", "returned neither null nor an object"),
    ],
)
def test_hostile_or_wrong_udfs_fail_bounded(local_server: Any, code: str, words: str) -> None:
    steps = transformed_by(local_server.address, [udf("f", code)], b"x")
    assert len(steps) == 1
    error = steps[0]["failedMessage"]["error"]
    assert error["code"] == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert words in error["message"], error["message"]


def test_validate_refuses_what_the_service_refuses(local_server: Any) -> None:
    for transform, words in [
        (udf("", "function f() {}"), "messageTransform.javascriptUdf.functionName is required"),
        (udf("f", "function f( {"), "JavaScript UDF 'f' failed: SyntaxError"),
        ({"aiInference": {"endpoint": "endpoints/9"}}, "is not a Vertex AI endpoint"),
    ]:
        answer = rest(local_server.address, "POST", VALIDATE, {"messageTransform": transform})
        assert answer.status == 400, answer.body
        assert words in answer.body["error"]["message"]
    answer = rest(local_server.address, "POST", TEST, {
        "message": {"data": b64(b"x")}, "topic": f"projects/{PROJECT}/topics/none"})
    assert answer.status == 404
    assert answer.body["error"]["message"] == "Topic not found"


def test_the_grpc_face_does_not_serve_them(local_server: Any) -> None:
    with grpc.insecure_channel(local_server.address) as channel:
        call = channel.unary_unary("/google.pubsub.v1.Publisher/ValidateMessageTransform")
        with pytest.raises(grpc.RpcError) as info:
            call(b"", timeout=30)
    assert info.value.code() is grpc.StatusCode.UNIMPLEMENTED




def test_without_the_engine_a_udf_is_refused_saying_why() -> None:
    with no_engine_server() as address:
        given = {"messageTransform": udf("f", "function f(m) {}")}
        answer = rest(address, "POST", VALIDATE, given)
        assert answer.status == 400
        assert answer.body["error"]["status"] == "FAILED_PRECONDITION"
        assert "runs JavaScript UDFs only with its optional JavaScript engine" in (
            answer.body["error"]["message"]
        )
        assert "pip install 'pubsub-reconcile[udf]'" in answer.body["error"]["message"]
        answer = rest(address, "POST", TEST, {
            "message": {"data": b64(b"x")},
            "messageTransforms": {"messageTransforms": [udf("f", "function f(m) { return m; }")]},
        })
        assert answer.status == 400
        assert "optional JavaScript engine" in answer.body["error"]["message"]
        # What needs no engine still runs.
        answer = rest(address, "POST", TEST, {
            "message": {"data": b64(b"abc")},
            "messageTransforms": {"messageTransforms": [{"compression": {
                "compressionAlgorithm": "ZLIB", "compressionMode": "COMPRESS"}}]},
        })
        assert answer.status == 200
        data = answer.body["transformedMessages"][0]["transformedMessage"]["data"]
        assert zlib.decompress(base64.b64decode(data)) == b"abc"


def test_a_subscriptions_transforms_and_data_that_does_not_decompress(
    local_server: Any, publisher_client: Any, subscriber_client: Any
) -> None:
    sub = f"projects/{PROJECT}/subscriptions/orders-sub"
    publisher_client.create_topic(name=TOPIC)
    subscriber_client.create_subscription(request={
        "name": sub, "topic": TOPIC, "message_transforms": [{"compression": {
            "compression_algorithm": "ZLIB", "compression_mode": "DECOMPRESS"}}]})
    answer = rest(local_server.address, "POST", TEST, {
        "message": {"data": b64(zlib.compress(b"packed"))}, "subscription": sub})
    assert answer.status == 200, answer.body
    data = answer.body["transformedMessages"][0]["transformedMessage"]["data"]
    assert base64.b64decode(data) == b"packed"
    answer = rest(local_server.address, "POST", TEST, {
        "message": {"data": b64(b"not zlib")}, "subscription": sub})
    error = answer.body["transformedMessages"][0]["failedMessage"]["error"]
    assert error["message"].startswith("The message data is not zlib-compressed data")
    answer = rest(local_server.address, "POST", TEST, {
        "message": {"data": b64(b"x")}, "subscription": f"projects/{PROJECT}/subscriptions/none"})
    assert answer.status == 404
    assert answer.body["error"]["message"] == "Subscription does not exist"
