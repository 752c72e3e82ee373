"""Publish a few messages, wait for all of their futures, and report through a done
callback that handles errors."""

from collections.abc import Callable
from concurrent import futures

from google.cloud import pubsub_v1


def get_callback(
    publish_future: pubsub_v1.publisher.futures.Future, data: str
) -> Callable[[pubsub_v1.publisher.futures.Future], None]:
    def callback(publish_future: pubsub_v1.publisher.futures.Future) -> None:
        try:
            print(f"published {publish_future.result(timeout=60)} for {data}")
        except futures.TimeoutError:
            print(f"publishing {data} timed out")

    return callback


def main(project_id: str, topic_id: str) -> None:
    publisher = pubsub_v1.PublisherClient()
    topic_path = publisher.topic_path(project_id, topic_id)
    publisher.create_topic(request={"name": topic_path})
    publish_futures = []
    for i in range(10):
        data = str(i)
        publish_future = publisher.publish(topic_path, data.encode("utf-8"))
        publish_future.add_done_callback(get_callback(publish_future, data))
        publish_futures.append(publish_future)
    futures.wait(publish_futures, return_when=futures.ALL_COMPLETED)
    print(f"published {len(publish_futures)} messages with error handler to {topic_path}")
