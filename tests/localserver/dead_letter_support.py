"""What the dead-letter tests share: a topic and its dead-letter topic, each with a
subscription (the source's policy: 5 attempts), and pulls, nacks and the wait for a
forward through the GAPIC Subscriber client."""

from __future__ import annotations

from typing import Any

P = "projects/proj-alpha"
T = f"{P}/topics/orders"
DLT = f"{P}/topics/orders-dead"
S = f"{P}/subscriptions/orders-sub"
DS = f"{P}/subscriptions/orders-dead-sub"
CALL = {"retry": None, "timeout": 30}


def setup(pub: Any, sub: Any, messages: int = 0, attempts: int = 5, **fields: Any) -> None:
    """The topics and subscriptions (`fields`: more of the source subscription), and
    `messages` messages published ("m0", "m1", ...)."""
    pub.create_topic(name=T)
    pub.create_topic(name=DLT)
    sub.create_subscription(name=DS, topic=DLT)
    policy = {"dead_letter_topic": DLT, "max_delivery_attempts": attempts}
    sub.create_subscription(request={"name": S, "topic": T, "dead_letter_policy": policy, **fields})
    if messages:
        pub.publish(topic=T, messages=[{"data": f"m{i}".encode()} for i in range(messages)])


def pull(sub: Any, name: str = S, wait: bool = False) -> list[Any]:
    request = {"subscription": name, "max_messages": 100, "return_immediately": not wait}
    return list(sub.pull(request=request, **CALL).received_messages)


def nack(sub: Any, got: list[Any], seconds: int = 0) -> None:
    """ModifyAckDeadline of these deliveries (0: a nack)."""
    sub.modify_ack_deadline(
        subscription=S, ack_ids=[m.ack_id for m in got], ack_deadline_seconds=seconds, **CALL
    )


def dead_letters(sub: Any, count: int, *, ack: bool = True) -> list[Any]:
    """What reaches the dead-letter subscription, `count` messages at least unless
    the waits run out (each pull waits for a message: the forward runs on the
    server's own thread)."""
    got: list[Any] = []
    for _ in range(10):
        got += pull(sub, DS, wait=True)
        if len(got) >= count:
            break
    if ack and got:
        sub.acknowledge(subscription=DS, ack_ids=[m.ack_id for m in got], **CALL)
    return got
