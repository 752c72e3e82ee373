"""Publisher flow control that blocks when too much is outstanding."""

from concurrent import futures

from google.cloud import pubsub_v1
from google.cloud.pubsub_v1.types import (
    LimitExceededBehavior,
    PublisherOptions,
    PublishFlowControl,
)


def main(project_id: str, topic_id: str) -> None:
    flow_control_settings = PublishFlowControl(
        message_limit=10,
        byte_limit=10 * 1024 * 1024,
        limit_exceeded_behavior=LimitExceededBehavior.BLOCK,
    )
    publisher = pubsub_v1.PublisherClient(
        publisher_options=PublisherOptions(flow_control=flow_control_settings)
    )
    topic_path = publisher.topic_path(project_id, topic_id)
    publisher.create_topic(request={"name": topic_path})
    publish_futures = []

    def callback(publish_future: pubsub_v1.publisher.futures.Future) -> None:
        publish_future.result()

    for n in range(1, 51):
        data = f"Message number {n}"
        publish_future = publisher.publish(topic_path, data.encode("utf-8"))
        publish_future.add_done_callback(callback)
        publish_futures.append(publish_future)
    futures.wait(publish_futures, return_when=futures.ALL_COMPLETED)
    print(f"published {len(publish_futures)} messages with flow control settings")
