"""Batch settings passed positionally, callbacks on each future."""

from concurrent import futures

from google.cloud import pubsub_v1


def main(project_id: str, topic_id: str) -> None:
    batch_settings = pubsub_v1.types.BatchSettings(
        max_messages=10,  # default 100
        max_bytes=1024,  # default 1 MB
        max_latency=1,  # default 10 ms
    )
    publisher = pubsub_v1.PublisherClient(batch_settings)
    topic_path = publisher.topic_path(project_id, topic_id)
    publisher.create_topic(request={"name": topic_path})
    publish_futures = []

    def callback(future: pubsub_v1.publisher.futures.Future) -> None:
        print(f"published {future.result()}")

    for n in range(1, 21):
        data = f"Message number {n}"
        publish_future = publisher.publish(topic_path, data.encode("utf-8"))
        publish_future.add_done_callback(callback)
        publish_futures.append(publish_future)
    futures.wait(publish_futures, return_when=futures.ALL_COMPLETED)
    print(f"published messages with batch settings to {topic_path}")
