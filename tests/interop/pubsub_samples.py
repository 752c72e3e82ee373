# Copyright 2016 Google LLC. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""Google's Python samples for ingestion sources and SMTs, copied unchanged (function
by function, each whole) from googleapis/python-pubsub at commit 63796ff
(`samples/snippets/publisher.py`: create_topic through update_topic_type;
`samples/snippets/subscriber.py`: create_subscription_with_smt), so that
tests/interop/test_python_samples.py runs Google's own code, not a paraphrase of it.
Each builds its clients itself (`PUBSUB_EMULATOR_HOST` points them at a server)."""

# ruff: noqa
# mypy: ignore-errors

# ---- samples/snippets/publisher.py, lines 43-410

def create_topic(project_id: str, topic_id: str) -> None:
    """Create a new Pub/Sub topic."""
    # [START pubsub_quickstart_create_topic]
    # [START pubsub_create_topic]
    from google.cloud import pubsub_v1

    # TODO(developer)
    # project_id = "your-project-id"
    # topic_id = "your-topic-id"

    publisher = pubsub_v1.PublisherClient()
    topic_path = publisher.topic_path(project_id, topic_id)

    topic = publisher.create_topic(request={"name": topic_path})

    print(f"Created topic: {topic.name}")
    # [END pubsub_quickstart_create_topic]
    # [END pubsub_create_topic]


def create_topic_with_kinesis_ingestion(
    project_id: str,
    topic_id: str,
    stream_arn: str,
    consumer_arn: str,
    aws_role_arn: str,
    gcp_service_account: str,
) -> None:
    """Create a new Pub/Sub topic with AWS Kinesis Ingestion Settings."""
    # [START pubsub_create_topic_with_kinesis_ingestion]
    from google.cloud import pubsub_v1
    from google.pubsub_v1.types import Topic
    from google.pubsub_v1.types import IngestionDataSourceSettings

    # TODO(developer)
    # project_id = "your-project-id"
    # topic_id = "your-topic-id"
    # stream_arn = "your-stream-arn"
    # consumer_arn = "your-consumer-arn"
    # aws_role_arn = "your-aws-role-arn"
    # gcp_service_account = "your-gcp-service-account"

    publisher = pubsub_v1.PublisherClient()
    topic_path = publisher.topic_path(project_id, topic_id)

    request = Topic(
        name=topic_path,
        ingestion_data_source_settings=IngestionDataSourceSettings(
            aws_kinesis=IngestionDataSourceSettings.AwsKinesis(
                stream_arn=stream_arn,
                consumer_arn=consumer_arn,
                aws_role_arn=aws_role_arn,
                gcp_service_account=gcp_service_account,
            )
        ),
    )

    topic = publisher.create_topic(request=request)

    print(f"Created topic: {topic.name} with AWS Kinesis Ingestion Settings")
    # [END pubsub_create_topic_with_kinesis_ingestion]


def create_topic_with_cloud_storage_ingestion(
    project_id: str,
    topic_id: str,
    bucket: str,
    input_format: str,
    text_delimiter: str,
    match_glob: str,
    minimum_object_create_time: str,
) -> None:
    """Create a new Pub/Sub topic with Cloud Storage Ingestion Settings."""
    # [START pubsub_create_topic_with_cloud_storage_ingestion]
    from google.cloud import pubsub_v1
    from google.protobuf import timestamp_pb2
    from google.pubsub_v1.types import Topic
    from google.pubsub_v1.types import IngestionDataSourceSettings

    # TODO(developer)
    # project_id = "your-project-id"
    # topic_id = "your-topic-id"
    # bucket = "your-bucket"
    # input_format = "text"  (can be one of "text", "avro", "pubsub_avro")
    # text_delimiter = "\n"
    # match_glob = "**.txt"
    # minimum_object_create_time = "YYYY-MM-DDThh:mm:ssZ"

    publisher = pubsub_v1.PublisherClient()
    topic_path = publisher.topic_path(project_id, topic_id)

    cloud_storage_settings = IngestionDataSourceSettings.CloudStorage(
        bucket=bucket,
    )
    if input_format == "text":
        cloud_storage_settings.text_format = (
            IngestionDataSourceSettings.CloudStorage.TextFormat(
                delimiter=text_delimiter
            )
        )
    elif input_format == "avro":
        cloud_storage_settings.avro_format = (
            IngestionDataSourceSettings.CloudStorage.AvroFormat()
        )
    elif input_format == "pubsub_avro":
        cloud_storage_settings.pubsub_avro_format = (
            IngestionDataSourceSettings.CloudStorage.PubSubAvroFormat()
        )
    else:
        print(
            "Invalid input_format: "
            + input_format
            + "; must be in ('text', 'avro', 'pubsub_avro')"
        )
        return

    if match_glob:
        cloud_storage_settings.match_glob = match_glob

    if minimum_object_create_time:
        try:
            minimum_object_create_time_timestamp = timestamp_pb2.Timestamp()
            minimum_object_create_time_timestamp.FromJsonString(
                minimum_object_create_time
            )
            cloud_storage_settings.minimum_object_create_time = (
                minimum_object_create_time_timestamp
            )
        except ValueError:
            print("Invalid minimum_object_create_time: " + minimum_object_create_time)
            return

    request = Topic(
        name=topic_path,
        ingestion_data_source_settings=IngestionDataSourceSettings(
            cloud_storage=cloud_storage_settings,
        ),
    )

    topic = publisher.create_topic(request=request)

    print(f"Created topic: {topic.name} with Cloud Storage Ingestion Settings")
    # [END pubsub_create_topic_with_cloud_storage_ingestion]


def create_topic_with_aws_msk_ingestion(
    project_id: str,
    topic_id: str,
    cluster_arn: str,
    msk_topic: str,
    aws_role_arn: str,
    gcp_service_account: str,
) -> None:
    """Create a new Pub/Sub topic with AWS MSK Ingestion Settings."""
    # [START pubsub_create_topic_with_aws_msk_ingestion]
    from google.cloud import pubsub_v1
    from google.pubsub_v1.types import Topic
    from google.pubsub_v1.types import IngestionDataSourceSettings

    # TODO(developer)
    # project_id = "your-project-id"
    # topic_id = "your-topic-id"
    # cluster_arn = "your-cluster-arn"
    # msk_topic = "your-msk-topic"
    # aws_role_arn = "your-aws-role-arn"
    # gcp_service_account = "your-gcp-service-account"

    publisher = pubsub_v1.PublisherClient()
    topic_path = publisher.topic_path(project_id, topic_id)

    request = Topic(
        name=topic_path,
        ingestion_data_source_settings=IngestionDataSourceSettings(
            aws_msk=IngestionDataSourceSettings.AwsMsk(
                cluster_arn=cluster_arn,
                topic=msk_topic,
                aws_role_arn=aws_role_arn,
                gcp_service_account=gcp_service_account,
            )
        ),
    )

    topic = publisher.create_topic(request=request)

    print(f"Created topic: {topic.name} with AWS MSK Ingestion Settings")
    # [END pubsub_create_topic_with_aws_msk_ingestion]


def create_topic_with_azure_event_hubs_ingestion(
    project_id: str,
    topic_id: str,
    resource_group: str,
    namespace: str,
    event_hub: str,
    client_id: str,
    tenant_id: str,
    subscription_id: str,
    gcp_service_account: str,
) -> None:
    """Create a new Pub/Sub topic with Azure Event Hubs Ingestion Settings."""
    # [START pubsub_create_topic_with_azure_event_hubs_ingestion]
    from google.cloud import pubsub_v1
    from google.pubsub_v1.types import Topic
    from google.pubsub_v1.types import IngestionDataSourceSettings

    # TODO(developer)
    # project_id = "your-project-id"
    # topic_id = "your-topic-id"
    # resource_group = "your-resource-group"
    # namespace = "your-namespace"
    # event_hub = "your-event-hub"
    # client_id = "your-client-id"
    # tenant_id = "your-tenant-id"
    # subscription_id = "your-subscription-id"
    # gcp_service_account = "your-gcp-service-account"

    publisher = pubsub_v1.PublisherClient()
    topic_path = publisher.topic_path(project_id, topic_id)

    request = Topic(
        name=topic_path,
        ingestion_data_source_settings=IngestionDataSourceSettings(
            azure_event_hubs=IngestionDataSourceSettings.AzureEventHubs(
                resource_group=resource_group,
                namespace=namespace,
                event_hub=event_hub,
                client_id=client_id,
                tenant_id=tenant_id,
                subscription_id=subscription_id,
                gcp_service_account=gcp_service_account,
            )
        ),
    )

    topic = publisher.create_topic(request=request)

    print(f"Created topic: {topic.name} with Azure Event Hubs Ingestion Settings")
    # [END pubsub_create_topic_with_azure_event_hubs_ingestion]


def create_topic_with_confluent_cloud_ingestion(
    project_id: str,
    topic_id: str,
    bootstrap_server: str,
    cluster_id: str,
    confluent_topic: str,
    identity_pool_id: str,
    gcp_service_account: str,
) -> None:
    """Create a new Pub/Sub topic with Confluent Cloud Ingestion Settings."""
    # [START pubsub_create_topic_with_confluent_cloud_ingestion]
    from google.cloud import pubsub_v1
    from google.pubsub_v1.types import Topic
    from google.pubsub_v1.types import IngestionDataSourceSettings

    # TODO(developer)
    # project_id = "your-project-id"
    # topic_id = "your-topic-id"
    # bootstrap_server = "your-bootstrap-server"
    # cluster_id = "your-cluster-id"
    # confluent_topic = "your-confluent-topic"
    # identity_pool_id = "your-identity-pool-id"
    # gcp_service_account = "your-gcp-service-account"

    publisher = pubsub_v1.PublisherClient()
    topic_path = publisher.topic_path(project_id, topic_id)

    request = Topic(
        name=topic_path,
        ingestion_data_source_settings=IngestionDataSourceSettings(
            confluent_cloud=IngestionDataSourceSettings.ConfluentCloud(
                bootstrap_server=bootstrap_server,
                cluster_id=cluster_id,
                topic=confluent_topic,
                identity_pool_id=identity_pool_id,
                gcp_service_account=gcp_service_account,
            )
        ),
    )

    topic = publisher.create_topic(request=request)

    print(f"Created topic: {topic.name} with Confluent Cloud Ingestion Settings")
    # [END pubsub_create_topic_with_confluent_cloud_ingestion]


def create_topic_with_smt(
    project_id: str,
    topic_id: str,
) -> None:
    """Create a new Pub/Sub topic with a UDF SMT."""
    # [START pubsub_create_topic_with_smt]
    from google.cloud import pubsub_v1
    from google.pubsub_v1.types import JavaScriptUDF, MessageTransform, Topic

    # TODO(developer)
    # project_id = "your-project-id"
    # topic_id = "your-topic-id"

    code = """function redactSSN(message, metadata) {
                const data = JSON.parse(message.data);
                delete data['ssn'];
                message.data = JSON.stringify(data);
                return message;
                }"""
    udf = JavaScriptUDF(code=code, function_name="redactSSN")
    transforms = [MessageTransform(javascript_udf=udf)]

    publisher = pubsub_v1.PublisherClient()
    topic_path = publisher.topic_path(project_id, topic_id)

    request = Topic(name=topic_path, message_transforms=transforms)

    topic = publisher.create_topic(request=request)

    print(f"Created topic: {topic.name} with SMT")
    # [END pubsub_create_topic_with_smt]


def update_topic_type(
    project_id: str,
    topic_id: str,
    stream_arn: str,
    consumer_arn: str,
    aws_role_arn: str,
    gcp_service_account: str,
) -> None:
    """Update Pub/Sub topic with AWS Kinesis Ingestion Settings."""
    # [START pubsub_update_topic_type]
    from google.cloud import pubsub_v1
    from google.pubsub_v1.types import Topic
    from google.pubsub_v1.types import IngestionDataSourceSettings
    from google.pubsub_v1.types import UpdateTopicRequest
    from google.protobuf import field_mask_pb2

    # TODO(developer)
    # project_id = "your-project-id"
    # topic_id = "your-topic-id"
    # stream_arn = "your-stream-arn"
    # consumer_arn = "your-consumer-arn"
    # aws_role_arn = "your-aws-role-arn"
    # gcp_service_account = "your-gcp-service-account"

    publisher = pubsub_v1.PublisherClient()
    topic_path = publisher.topic_path(project_id, topic_id)

    update_request = UpdateTopicRequest(
        topic=Topic(
            name=topic_path,
            ingestion_data_source_settings=IngestionDataSourceSettings(
                aws_kinesis=IngestionDataSourceSettings.AwsKinesis(
                    stream_arn=stream_arn,
                    consumer_arn=consumer_arn,
                    aws_role_arn=aws_role_arn,
                    gcp_service_account=gcp_service_account,
                )
            ),
        ),
        update_mask=field_mask_pb2.FieldMask(paths=["ingestion_data_source_settings"]),
    )

    topic = publisher.update_topic(request=update_request)
    print(f"Updated topic: {topic.name} with AWS Kinesis Ingestion Settings")


# [END pubsub_update_topic_type]



# ---- samples/snippets/subscriber.py, lines 581-617


def create_subscription_with_smt(
    project_id: str, topic_id: str, subscription_id: str
) -> None:
    """Create a subscription with a UDF SMT."""
    # [START pubsub_create_subscription_with_smt]
    from google.cloud import pubsub_v1
    from google.pubsub_v1.types import JavaScriptUDF, MessageTransform

    # TODO(developer): Choose an existing topic.
    # project_id = "your-project-id"
    # topic_id = "your-topic-id"
    # subscription_id = "your-subscription-id"

    publisher = pubsub_v1.PublisherClient()
    subscriber = pubsub_v1.SubscriberClient()
    topic_path = publisher.topic_path(project_id, topic_id)
    subscription_path = subscriber.subscription_path(project_id, subscription_id)

    code = """function redactSSN(message, metadata) {
                const data = JSON.parse(message.data);
                delete data['ssn'];
                message.data = JSON.stringify(data);
                return message;
                }"""
    udf = JavaScriptUDF(code=code, function_name="redactSSN")
    transforms = [MessageTransform(javascript_udf=udf)]

    with subscriber:
        subscription = subscriber.create_subscription(
            request={
                "name": subscription_path,
                "topic": topic_path,
                "message_transforms": transforms,
            }
        )
        print(f"Created subscription with SMT: {subscription}")
    # [END pubsub_create_subscription_with_smt]
