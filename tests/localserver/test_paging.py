"""ListTopics pages through 10,000 topics with the real client's pager."""

from __future__ import annotations

from typing import Any

P = "projects/proj-alpha"


def test_list_pages_through_10000_topics(publisher_client: Any, local_server: Any) -> None:
    names = [f"{P}/topics/topic-{i:05d}" for i in range(10_000)]
    assert local_server.seed_topics(reversed(names)) == 10_000
    local_server.seed_topics([f"{P}x/topics/intruder", "projects/proj-alph/topics/intruder"])
    publisher_client.create_topic(name=f"{P}/topics/zzz-via-api")
    local_server.counters.reset()

    pager = publisher_client.list_topics(request={"project": P, "page_size": 1000})
    listed = [t.name for t in pager]
    assert listed == [*names, f"{P}/topics/zzz-via-api"]
    assert local_server.counters.get("ListTopics") == 11

    # Default page size through the pager: 100 per page, nothing lost or repeated.
    pages = list(publisher_client.list_topics(project=P).pages)
    assert len(pages) == 101
    assert [t.name for page in pages for t in page.topics] == listed


def test_paging_is_stable_under_concurrent_changes(
    publisher_client: Any, local_server: Any
) -> None:
    local_server.seed_topics(f"{P}/topics/t-{i:03d}" for i in range(10))
    first = next(iter(publisher_client.list_topics(request={"project": P, "page_size": 4}).pages))
    assert [t.name[-5:] for t in first.topics] == ["t-000", "t-001", "t-002", "t-003"]
    publisher_client.delete_topic(topic=f"{P}/topics/t-003")  # the page's last topic
    publisher_client.create_topic(name=f"{P}/topics/t-001a")  # lands before the token
    rest = publisher_client.list_topics(
        request={"project": P, "page_size": 100, "page_token": first.next_page_token}
    )
    assert [t.name[-5:] for t in rest] == [f"t-{i:03d}" for i in range(4, 10)]
