"""Where a topic's message data goes (reconciler/messagepaths.py, docs/residency.md
"Where transforms and sources send data"), as `plan` and `residency` say it: live
topics seeded through the real PublisherClient and SubscriberClient with transforms,
an ingestion source and export subscriptions, the CLI against the local server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.pubsub_v1.types import Topic

from tests.specs_support import topic_doc

OWN = {"reconcile-managed": "true", "reconcile-owner": "default"}
T = "projects/proj-a/topics/orders"
EU_MODEL = "projects/proj-a/locations/europe-west4/endpoints/classify"
US_MODEL = "projects/proj-a/locations/us-central1/endpoints/classify"
KINESIS = {
    "stream_arn": "arn:aws:kinesis:us-east-1:111111111111:stream/orders",
    "consumer_arn": "arn:aws:kinesis:us-east-1:111111111111:stream/orders/consumer/c:1",
    "aws_role_arn": "arn:aws:iam::111111111111:role/pubsub",
    "gcp_service_account": "ingest@proj-a.iam.gserviceaccount.com",
}
NAME_LINE = 3  # topic_doc: apiVersion, kind, metadata (the topic's name), spec


def _seed(publisher: Any, endpoints: list[str], *, regions: list[str] | None = None,
          eit: bool = False, kinesis: bool = False) -> None:
    topic = Topic(name=T, labels=OWN)
    if regions is not None:
        topic.message_storage_policy.allowed_persistence_regions = regions
        topic.message_storage_policy.enforce_in_transit = eit
    for endpoint in endpoints:
        topic.message_transforms.append({"ai_inference": {"endpoint": endpoint}})
    if kinesis:
        topic.ingestion_data_source_settings.aws_kinesis = KINESIS
    publisher.create_topic(request=topic)


def _policy(tmp_path: Path, *docs: str) -> Path:
    path = tmp_path / "org-policy.yaml"
    path.write_text("---\n".join(docs) if docs else "[]\n")
    return path


def _managed(project: str = "proj-a") -> str:
    return (
        f"name: projects/{project}/policies/pubsub.managed.disableTopicMessageTransforms\n"
        "spec:\n  rules:\n    - enforce: true\n"
    )


def _plan(run_cli: Any, server: Any, root: Path, policy: Path) -> Any:
    return run_cli("plan", str(root), "--emulator", server.address, "--org-policy", str(policy))


def _lines(output: str, code: str) -> list[str]:
    """The plan's lines of `code` (its text lists warnings under "Warnings:")."""
    return [line.strip() for line in output.splitlines() if f"[{code}]" in line]


def test_a_model_outside_the_allowed_regions_under_in_transit_enforcement(
    run_cli: Any, local_server: Any, specs: Any, publisher_client: Any, tmp_path: Path,
) -> None:
    _seed(publisher_client, [EU_MODEL], regions=["us-central1"], eit=True)
    root = specs(topic_doc("orders", storage=(["us-central1"], True)))
    result = _plan(run_cli, local_server, root, _policy(tmp_path))
    assert result.exit_code == 0, result.stderr
    [line] = _lines(result.output, "transform-model-region")
    assert line.startswith(f"{root / 'topics.yaml'}:{NAME_LINE}:")
    assert "warning[transform-model-region]: messageTransforms[0] AI Inference of topic " \
        f"{T} sends each message to a Vertex AI model in 'europe-west4', outside the " \
        "topic's allowed regions (us-central1) while enforceInTransit is on" in line


def test_no_model_finding_without_in_transit_enforcement(
    run_cli: Any, local_server: Any, specs: Any, publisher_client: Any, tmp_path: Path,
) -> None:
    _seed(publisher_client, [EU_MODEL], regions=["us-central1"], eit=False)
    root = specs(topic_doc("orders", storage=(["us-central1"], False)))
    result = _plan(run_cli, local_server, root, _policy(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert _lines(result.output, "transform-model-region") == []


def test_a_topic_keeping_its_transforms_under_the_managed_constraint(
    run_cli: Any, local_server: Any, specs: Any, publisher_client: Any, tmp_path: Path,
) -> None:
    _seed(publisher_client, [US_MODEL])
    root = specs(topic_doc("orders"))
    result = _plan(run_cli, local_server, root, _policy(tmp_path, _managed()))
    assert result.exit_code == 0, result.stderr
    [line] = _lines(result.output, "existing-transforms-disabled")
    assert line.startswith(f"{root / 'topics.yaml'}:{NAME_LINE}:")
    assert (
        f"topic {T} has message transforms while "
        "constraints/pubsub.managed.disableTopicMessageTransforms is enforced for project "
        "proj-a: the plan leaves them as they are"
    ) in line
    # Another project's constraint says nothing of this one.
    other = _plan(run_cli, local_server, root, _policy(tmp_path, _managed("proj-b")))
    assert _lines(other.output, "existing-transforms-disabled") == []


def test_the_managed_constraint_is_read_from_the_org_policy_api(
    run_cli: Any, local_server: Any, specs: Any, publisher_client: Any,
) -> None:
    from reconciler.orgpolicy.model import Policy

    _seed(publisher_client, [US_MODEL])  # before the constraint: the server refuses after
    local_server.put_policy(Policy.from_dict({
        "name": "projects/proj-a/policies/pubsub.managed.disableTopicMessageTransforms",
        "spec": {"rules": [{"enforce": True}]},
    }))
    root = specs(topic_doc("orders"))
    local_server.counters.reset()
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert result.exit_code == 0, result.stderr
    assert len(_lines(result.output, "existing-transforms-disabled")) == 1
    assert local_server.counters.get("GetEffectivePolicy") == 5


def test_import_marks_transforms_the_managed_constraint_forbids_where_plan_warns(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path,
) -> None:
    from reconciler.orgpolicy.model import Policy

    _seed(publisher_client, [US_MODEL])
    local_server.put_policy(Policy.from_dict({
        "name": "projects/proj-a/policies/pubsub.managed.disableTopicMessageTransforms",
        "spec": {"rules": [{"enforce": True}]},
    }))
    out = tmp_path / "imported"
    imported = run_cli("import", "--project", "proj-a", "--out", str(out),
                       "--emulator", local_server.address)
    assert imported.exit_code == 0, imported.stderr
    written = out / "proj-a.yaml"
    lines = written.read_text().splitlines()
    [marked] = [i + 1 for i, x in enumerate(lines)
                if x.endswith("# plan warns: existing-transforms-disabled")]
    assert lines[marked - 2] == "  messageTransforms:", lines
    result = run_cli("plan", str(out), "--emulator", local_server.address)
    assert result.exit_code == 0, result.stderr
    [line] = _lines(result.output, "existing-transforms-disabled")
    assert line.startswith(f"{written}:{marked}:"), (line, marked)


def test_an_export_in_vertex_ai_location_restriction(
    run_cli: Any, local_server: Any, specs: Any, publisher_client: Any,
    subscriber_client: Any, tmp_path: Path,
) -> None:
    _seed(publisher_client, [US_MODEL])
    local_server.set_destination_location("bigquery:proj-a.sales", "europe-west4")
    subscriber_client.create_subscription(request={
        "name": "projects/proj-a/subscriptions/to-bq", "topic": T,
        "bigquery_config": {"table": "proj-a.sales.orders"},
    })
    root = specs(topic_doc("orders"))
    result = _plan(run_cli, local_server, root, _policy(tmp_path))
    assert result.exit_code == 0, result.stderr
    [line] = _lines(result.output, "export-location-restriction")
    assert line.startswith(f"{root / 'topics.yaml'}:{NAME_LINE}:")
    assert (
        f"BigQuery export projects/proj-a/subscriptions/to-bq of topic {T} reads "
        "VERTEX_AI_LOCATION_RESTRICTION now: its destination is not where the model is "
        "deployed (us-central1)"
    ) in line
    # Declared where the model is, it delivers: nothing to say.
    local_server.set_destination_location("bigquery:proj-a.sales", "us-central1")
    again = _plan(run_cli, local_server, root, _policy(tmp_path))
    assert _lines(again.output, "export-location-restriction") == []


def test_residency_shows_where_message_data_goes(
    run_cli: Any, local_server: Any, specs: Any, publisher_client: Any,
    subscriber_client: Any, tmp_path: Path,
) -> None:
    _seed(publisher_client, [EU_MODEL], kinesis=True)
    subscriber_client.create_subscription(request={
        "name": "projects/proj-a/subscriptions/to-bq", "topic": T,
        "bigquery_config": {"table": "proj-a.sales.orders"},
    })
    root = specs(topic_doc("orders"), topic_doc("plain"))
    publisher_client.create_topic(request={"name": "projects/proj-a/topics/plain"})
    policy = _policy(tmp_path)
    args = ("residency", str(root), "--emulator", local_server.address, "--org-policy",
            str(policy))
    result = run_cli(*args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    topics = {t["address"]: t for t in json.loads(result.stdout)["topics"]}
    assert "paths" not in topics["projects/proj-a/topics/plain"]  # none: no key
    assert topics[T]["paths"] == [
        {"kind": "source", "what": "Amazon Kinesis", "location": "aws:us-east-1",
         "detail": f"streamArn {KINESIS['stream_arn']}", "state": "ACTIVE"},
        {"kind": "model", "what": "messageTransforms[0] AI Inference",
         "location": "europe-west4", "detail": EU_MODEL},  # no state: none is said
        {"kind": "export", "what": "BigQuery export", "location": None,
         "detail": "projects/proj-a/subscriptions/to-bq", "state": "ACTIVE"},
    ]
    assert KINESIS["aws_role_arn"] not in result.stdout  # what names a source, no more
    text = run_cli(*args)
    assert text.exit_code == 0, text.stderr
    assert (
        "    message data also goes:\n"
        f"      taken from Amazon Kinesis in aws:us-east-1 [ACTIVE]: streamArn "
        f"{KINESIS['stream_arn']}\n"
        f"      sent to messageTransforms[0] AI Inference in europe-west4: {EU_MODEL}\n"
        "      written by BigQuery export (destination location not in the Pub/Sub API) "
        "[ACTIVE]: projects/proj-a/subscriptions/to-bq\n"
    ) in text.stdout
    markdown = run_cli(*args, "--format", "markdown")
    assert markdown.exit_code == 0, markdown.stderr
    assert (
        "**Where message data also goes**\n\n"
        f"- `{T}`: taken from `Amazon Kinesis` in `aws:us-east-1` [`ACTIVE`]: "
        f"`streamArn {KINESIS['stream_arn']}`\n"
    ) in markdown.stdout


# -- declared in the spec: validate offline, plan live ----------------------------------

API = "apiVersion: reconcile.pubsub/v1\nkind: Topic\nmetadata: {project: proj-a, name: orders}\n"


def _declared(endpoints: list[str], *, eit: bool = True, kinesis: bool = False) -> str:
    """A Topic document: us-central1 with enforceInTransit (line 5-7), its AI
    Inference transforms (`messageTransforms:` line 8, the first item line 9, its
    endpoint line 10), or a Kinesis source without them (`awsKinesis:` line 9, its
    body line 10)."""
    lines = [
        "spec:",
        "  messageStoragePolicy:",
        "    allowedPersistenceRegions: [us-central1]",
        f"    enforceInTransit: {str(eit).lower()}",
    ]
    if endpoints:
        lines.append("  messageTransforms:")
    for endpoint in endpoints:
        lines += ["    - aiInference:", f"        endpoint: {endpoint}"]
    if kinesis:
        lines += ["  ingestionDataSourceSettings:", "    awsKinesis:"]
        lines += [f"      {_camel(k)}: {v}" for k, v in KINESIS.items()]
    return API + "\n".join(lines) + "\n"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def test_validate_a_declared_model_outside_the_allowed_regions(
    run_cli: Any, specs: Any, tmp_path: Path,
) -> None:
    root = specs(_declared([EU_MODEL]))
    result = run_cli("validate", str(root), "--org-policy", str(_policy(tmp_path)))
    assert result.exit_code == 0, result.output
    [line] = _lines(result.output, "transform-model-region")
    assert line.startswith(f"{root / 'topics.yaml'}:10:")  # the endpoint
    assert "sends each message to a Vertex AI model in 'europe-west4', outside the " \
        "topic's allowed regions (us-central1) while enforceInTransit is on" in line
    # The exports are live: named as left to plan, at the transforms.
    [exports] = _lines(result.output, "transform-exports-at-plan")
    assert exports.startswith(f"{root / 'topics.yaml'}:9:")
    assert "which exports the topic has is known only live [the topic may exist, so " \
        "`reconcile plan` decides: it reads the topic's export subscriptions" in exports


def test_the_managed_constraint_validate_leaves_to_plan_and_plan_refuses_a_new_topic(
    run_cli: Any, local_server: Any, specs: Any, tmp_path: Path,
) -> None:
    root = specs(_declared([US_MODEL]))
    policy = _policy(tmp_path, _managed())
    checked = run_cli("validate", str(root), "--org-policy", str(policy))
    assert checked.exit_code == 0, checked.output
    [line] = _lines(checked.output, "org-transforms-disabled")
    assert line.startswith(f"{root / 'topics.yaml'}:9:") and "warning[" in line
    assert "[the topic may exist, so `reconcile plan` decides: a new topic, or a call " \
        "that sets the transforms, is refused" in line
    local_server.counters.reset()
    result = _plan(run_cli, local_server, root, policy)
    assert result.exit_code == 1
    [refused] = _lines(result.output, "org-transforms-disabled")
    assert refused.startswith(f"{root / 'topics.yaml'}:9:")
    assert "error[org-transforms-disabled]: " \
        "constraints/pubsub.managed.disableTopicMessageTransforms is enforced for project " \
        f"proj-a: the service refuses a call that sets message transforms on topic {T} " \
        "(FAILED_PRECONDITION)" in refused
    assert "plan decides" not in refused
    assert local_server.counters.get("CreateTopic") == 0


def test_plan_a_change_that_puts_an_export_into_vertex_ai_location_restriction(
    run_cli: Any, local_server: Any, specs: Any, publisher_client: Any,
    subscriber_client: Any, tmp_path: Path,
) -> None:
    _seed(publisher_client, [], regions=["us-central1"], eit=False)
    subscriber_client.create_subscription(request={
        "name": "projects/proj-a/subscriptions/to-bq", "topic": T,
        "bigquery_config": {"table": "proj-a.sales.orders"},
    })
    # Models in two locations: no table is in both.
    root = specs(_declared([US_MODEL, EU_MODEL], eit=False))
    result = _plan(run_cli, local_server, root, _policy(tmp_path))
    assert result.exit_code == 0, result.output
    [line] = _lines(result.output, "export-location-restriction")
    assert line.startswith(f"{root / 'topics.yaml'}:9:")
    assert (
        f"BigQuery export projects/proj-a/subscriptions/to-bq of topic {T} will read "
        "VERTEX_AI_LOCATION_RESTRICTION: the models are in europe-west4, us-central1, and "
        "its destination cannot be in all of them"
    ) in line
    # One model: where the table is is not in the Pub/Sub API, so it is not judged.
    root = specs(_declared([US_MODEL], eit=False))
    one = _plan(run_cli, local_server, root, _policy(tmp_path))
    assert one.exit_code == 0, one.output
    assert _lines(one.output, "export-location-restriction") == []
    [unjudged] = _lines(one.output, "export-location-unjudged")
    assert "delivers only if its destination is in us-central1 (elsewhere it reads " \
        "VERTEX_AI_LOCATION_RESTRICTION); the destination's location is not in the " \
        "Pub/Sub API, so this was not judged" in unjudged


def test_an_ingestion_source_s_region_is_named_as_not_judged(
    run_cli: Any, local_server: Any, specs: Any, tmp_path: Path,
) -> None:
    root = specs(_declared([], eit=False, kinesis=True))
    policy = _policy(tmp_path)
    checked = run_cli("validate", str(root), "--org-policy", str(policy))
    assert checked.exit_code == 0, checked.output
    [line] = _lines(checked.output, "ingestion-region-unjudged")
    assert line.startswith(f"{root / 'topics.yaml'}:10:")
    assert (
        f"whether the Amazon Kinesis ingestion source of topic {T} conflicts with a "
        "Regional Access Boundary (CONFLICTING_REGION_CONSTRAINTS) was not judged"
    ) in line
    result = _plan(run_cli, local_server, root, policy)
    assert result.exit_code == 0, result.output
    [planned] = _lines(result.output, "ingestion-region-unjudged")
    assert planned.startswith(f"{root / 'topics.yaml'}:10:") and "plan decides" not in planned


def test_plan_a_model_outside_the_regions_pauses_every_export_one_way_or_the_other(
    run_cli: Any, local_server: Any, specs: Any, publisher_client: Any,
    subscriber_client: Any, tmp_path: Path,
) -> None:
    _seed(publisher_client, [], regions=["us-central1"], eit=True)
    subscriber_client.create_subscription(request={
        "name": "projects/proj-a/subscriptions/to-gcs", "topic": T,
        "cloud_storage_config": {"bucket": "orders-archive"},
    })
    root = specs(_declared([EU_MODEL], eit=True))
    result = _plan(run_cli, local_server, root, _policy(tmp_path))
    assert result.exit_code == 0, result.output
    [line] = _lines(result.output, "export-location-restriction")
    assert (
        f"Cloud Storage export projects/proj-a/subscriptions/to-gcs of topic {T} will read "
        "VERTEX_AI_LOCATION_RESTRICTION (a destination outside europe-west4) or "
        "IN_TRANSIT_LOCATION_RESTRICTION (a destination in europe-west4, which the topic's "
        "allowed regions, us-central1, leave out under enforceInTransit)"
    ) in line
    assert len(_lines(result.output, "transform-model-region")) == 1


def test_a_team_that_knows_where_its_exports_are_accepts_the_unjudged_finding(
    run_cli: Any, specs: Any, tmp_path: Path,
) -> None:
    doc = _declared([US_MODEL]).replace(
        "spec:\n",
        "# reconcile: accept transform-exports-at-plan reason=\"exports in us-central1\"\n"
        "spec:\n", 1)
    root = specs(doc)
    result = run_cli("validate", str(root), "--org-policy", str(_policy(tmp_path)))
    assert result.exit_code == 0, result.output
    [line] = _lines(result.output, "transform-exports-at-plan")
    assert ": accepted[transform-exports-at-plan]: " in line
    assert "warning[transform-exports-at-plan]" not in result.output


def test_residency_counts_an_export_in_vertex_ai_location_restriction_as_paused(
    run_cli: Any, local_server: Any, specs: Any, publisher_client: Any,
    subscriber_client: Any, tmp_path: Path,
) -> None:
    _seed(publisher_client, [US_MODEL])
    local_server.set_destination_location("storage:orders-archive", "europe-west4")
    subscriber_client.create_subscription(request={
        "name": "projects/proj-a/subscriptions/to-gcs", "topic": T,
        "cloud_storage_config": {"bucket": "orders-archive"},
    })
    root = specs(topic_doc("orders"))
    args = ("residency", str(root), "--emulator", local_server.address, "--org-policy",
            str(_policy(tmp_path)), "--detailed-exitcode")
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    assert "    export projects/proj-a/subscriptions/to-gcs (cloud_storage) paused: " \
        "VERTEX_AI_LOCATION_RESTRICTION\n" in result.stdout
    assert "1 paused exports" in result.stdout
    local_server.set_destination_location("storage:orders-archive", "us-central1")
    assert run_cli(*args).exit_code == 0


def test_a_source_in_conflicting_region_constraints_in_plan_and_residency(
    run_cli: Any, local_server: Any, specs: Any, publisher_client: Any, tmp_path: Path,
) -> None:
    _seed(publisher_client, [], kinesis=True)
    local_server.set_ingestion_state(T, "CONFLICTING_REGION_CONSTRAINTS")
    root = specs(topic_doc("orders"))
    policy = _policy(tmp_path)
    result = _plan(run_cli, local_server, root, policy)
    assert result.exit_code == 0, result.output
    [line] = _lines(result.output, "ingestion-region-conflict")
    assert line.startswith(f"{root / 'topics.yaml'}:{NAME_LINE}:")
    assert (
        f"warning[ingestion-region-conflict]: the Amazon Kinesis ingestion source of topic "
        f"{T} reads CONFLICTING_REGION_CONSTRAINTS: its ingestion region is not permitted by "
        "the Regional Access Boundary on the project's service account; nothing is ingested"
    ) in line
    shown = run_cli("residency", str(root), "--emulator", local_server.address,
                    "--org-policy", str(policy))
    assert shown.exit_code == 0, shown.output
    assert "taken from Amazon Kinesis in aws:us-east-1 [CONFLICTING_REGION_CONSTRAINTS]: " \
        in shown.stdout
    local_server.set_ingestion_state(T, None)  # ACTIVE again: nothing to say
    assert _lines(_plan(run_cli, local_server, root, policy).output,
                  "ingestion-region-conflict") == []


def test_topics_sharing_one_transform_list_each_have_their_own_finding(
    run_cli: Any, local_server: Any, specs: Any, publisher_client: Any, tmp_path: Path,
) -> None:
    """The findings of topics that declare the same transforms are judged once
    (messagepaths.judged_findings): each is still about its own topic, at its own
    line, in validate and in plan, in a second project too."""
    names = [("proj-a", "alpha"), ("proj-a", "beta"), ("proj-b", "gamma")]
    for project, name in names:
        topic = Topic(name=f"projects/{project}/topics/{name}", labels=OWN)
        topic.message_storage_policy.allowed_persistence_regions = ["us-central1"]
        topic.message_storage_policy.enforce_in_transit = True
        topic.message_transforms.append({"ai_inference": {"endpoint": EU_MODEL}})
        publisher_client.create_topic(request=topic)
    transforms = f"  messageTransforms:\n  - aiInference: {{endpoint: {EU_MODEL}}}\n"
    root = specs("---\n".join(
        topic_doc(name, project, storage=(["us-central1"], True)) + "\n" + transforms
        for project, name in names
    ))
    text = (root / "topics.yaml").read_text().splitlines()
    model_lines = [i for i, line in enumerate(text, 1) if "- aiInference" in line]
    for command in (["validate", str(root), "--format", "json"],
                    ["plan", str(root), "--emulator", local_server.address,
                     "--org-policy", str(_policy(tmp_path)), "--format", "json"]):
        result = run_cli(*command)
        assert result.exit_code == 0, result.stderr
        document = json.loads(result.stdout)
        # validate's JSON is the list of findings; the plan's holds it
        found = document if isinstance(document, list) else document["diagnostics"]
        regions = [d for d in found if d["code"] == "transform-model-region"]
        assert [(d["topic"], d["line"]) for d in regions] == [
            (f"projects/{project}/topics/{name}", line)
            for (project, name), line in zip(names, model_lines, strict=True)
        ], command[0]
        for d in regions:
            assert f"of topic {d['topic']} sends" in d["message"]
            assert all(other not in d["message"] for _, other in names
                       if not d["topic"].endswith("/" + other))
