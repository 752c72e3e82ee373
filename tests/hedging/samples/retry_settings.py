"""A custom retry and timeout on each publish call."""

from google import api_core
from google.cloud import pubsub_v1


def main(project_id: str, topic_id: str) -> None:
    custom_retry = api_core.retry.Retry(
        initial=0.05,  # seconds (default: 0.1)
        maximum=1.0,  # seconds (default: 60)
        multiplier=1.3,  # default: 1.3
        deadline=60.0,  # seconds (default: 60)
        predicate=api_core.retry.if_exception_type(
            api_core.exceptions.Aborted,
            api_core.exceptions.DeadlineExceeded,
            api_core.exceptions.InternalServerError,
            api_core.exceptions.ResourceExhausted,
            api_core.exceptions.ServiceUnavailable,
            api_core.exceptions.Unknown,
            api_core.exceptions.Cancelled,
        ),
    )
    publisher = pubsub_v1.PublisherClient()
    topic_path = publisher.topic_path(project_id, topic_id)
    publisher.create_topic(request={"name": topic_path})
    for n in range(1, 6):
        data = f"Message number {n}".encode()
        future = publisher.publish(topic=topic_path, data=data, retry=custom_retry, timeout=30)
        print(f"published {future.result()}")
    denied_path = publisher.topic_path(project_id, topic_id + "-denied")
    publisher.create_topic(request={"name": denied_path})
    try:
        publisher.publish(denied_path, b"denied", retry=custom_retry).result()
    except api_core.exceptions.GoogleAPICallError as exc:
        print(f"not retried: {type(exc).__name__}: {exc}")
    print(f"published messages with retry settings to {topic_path}")
