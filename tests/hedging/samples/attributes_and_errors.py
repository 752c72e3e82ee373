"""Attributes, and the errors a publisher sees for bad input or a missing topic."""

from google.cloud import pubsub_v1


def main(project_id: str, topic_id: str) -> None:
    publisher = pubsub_v1.PublisherClient()
    topic_path = publisher.topic_path(project_id, topic_id)
    publisher.create_topic(request={"name": topic_path})
    for n in range(1, 6):
        data = f"Message number {n}".encode()
        future = publisher.publish(topic_path, data, origin="python-sample", username="gcp")
        print(f"published {future.result()}")
    for bad in (lambda: publisher.publish(topic_path, "text"),
                lambda: publisher.publish(topic_path, b"x", count=3),
                lambda: publisher.publish(topic_path, b"x", ordering_key="k")):
        try:
            bad()
        except (TypeError, ValueError) as exc:
            print(f"refused: {type(exc).__name__}: {exc}")
    missing = publisher.topic_path(project_id, topic_id + "-missing")
    error = publisher.publish(missing, b"lost").exception(timeout=60)
    print(f"missing topic: {type(error).__name__}: {error}")
    print(f"published messages with custom attributes to {topic_path}")
