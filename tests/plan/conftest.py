"""Fixtures for plan tests: run the CLI in-process, write spec trees and org-policy
snapshots, seed live topics through the real PublisherClient."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.specs_support import in_transit_policy_doc, location_policy_doc


@pytest.fixture
def specs(tmp_path: Path) -> Callable[..., Path]:
    """Write documents into a fresh spec directory and return it."""

    def write(*docs: str) -> Path:
        root = tmp_path / "specs"
        root.mkdir(exist_ok=True)
        (root / "topics.yaml").write_text("---\n".join(docs))
        return root

    return write


@pytest.fixture
def org_policy_file(tmp_path: Path) -> Callable[..., Path]:
    """A snapshot: resourceLocations allowed values (None = no policy) and in-transit."""

    def write(allowed: list[str] | None = None, enforce: bool = False,
              project: str = "proj-a") -> Path:
        docs = []
        if allowed is not None:
            docs.append(location_policy_doc(f"projects/{project}", ", ".join(allowed)))
        if enforce:
            docs.append(in_transit_policy_doc(f"projects/{project}"))
        path = tmp_path / "org-policy.yaml"
        path.write_text("---\n".join(docs) if docs else "[]\n")
        return path

    return write


@pytest.fixture
def seed(publisher_client: Any) -> Callable[..., None]:
    """Create a live topic with the real client library."""
    from google.pubsub_v1.types import Topic

    def create(
        name: str,
        labels: dict[str, str] | None = None,
        regions: list[str] | None = None,
        eit: bool | None = None,
        project: str = "proj-a",
    ) -> None:
        topic = Topic(name=f"projects/{project}/topics/{name}", labels=labels or {})
        if regions is not None:
            topic.message_storage_policy.allowed_persistence_regions = regions
            if eit is not None:
                topic.message_storage_policy.enforce_in_transit = eit
        publisher_client.create_topic(request=topic)

    return create

