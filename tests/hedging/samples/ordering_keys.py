"""Ordered publishing through a regional endpoint, resuming a key after a failure."""

from google.cloud import pubsub_v1


def main(project_id: str, topic_id: str) -> None:
    publisher_options = pubsub_v1.types.PublisherOptions(enable_message_ordering=True)
    client_options = {"api_endpoint": "us-east1-pubsub.googleapis.com:443"}
    publisher = pubsub_v1.PublisherClient(
        publisher_options=publisher_options, client_options=client_options
    )
    topic_path = publisher.topic_path(project_id, topic_id)
    publisher.create_topic(request={"name": topic_path})
    for message in [
        ("message1", "key1"),
        ("message2", "key2"),
        ("message3", "key1"),
        ("message4", "key2"),
    ]:
        data = message[0].encode("utf-8")
        ordering_key = message[1]
        try:
            future = publisher.publish(topic_path, data=data, ordering_key=ordering_key)
            print(f"published {future.result()} with key {ordering_key}")
        except RuntimeError as exc:
            print(f"{type(exc).__name__} on {ordering_key}: resuming")
            publisher.resume_publish(topic_path, ordering_key)
        except Exception as exc:
            print(f"{type(exc).__name__} on {ordering_key}: {exc}; resuming")
            publisher.resume_publish(topic_path, ordering_key)
    print(f"published messages with ordering keys to {topic_path}")
