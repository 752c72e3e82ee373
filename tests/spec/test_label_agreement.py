"""Label rules are Google's and the same everywhere: what `validate` accepts in a spec,
the local server accepts on CreateTopic through the real client, and what one refuses
the other refuses (international lowercase letters in, upper case and symbols out)."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.spec.validate import validate_paths

CASES = [
    ("team", "payments", True),
    ("équipe", "straße", True),  # international lowercase letters
    ("部署", "経理", True),  # letters without case (Lo)
    ("k", "", True),  # empty value
    ("cost-center_2", "v1_0-b", True),
    ("ünïcode", "٣", True),  # a non-ASCII digit is a number character
    ("Team", "x", False),  # upper case
    ("1team", "x", False),  # must start with a letter
    ("_team", "x", False),
    ("チーム", "x", False),  # 'ー' is a modifier letter (Lm), outside Google's classes
    ("team", "CC-1", False),
    ("team", "a.b", False),
    ("team", "a b", False),
    ("k" * 64, "x", False),  # 64 characters
    ("team", "v" * 64, False),
    ("ü" * 63, "x", True),  # 63 characters, 126 bytes
    ("team", "😀", False),  # a symbol (So)
]
COUNTER = itertools.count()


def _validate_accepts(key: str, value: str) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "t.yaml"
        spec.write_text(
            "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
            "metadata: {project: acme-payments, name: orders}\n"
            f'spec:\n  labels: {{"{key}": "{value}"}}\n',
            encoding="utf-8",
        )
        result = validate_paths([spec])
    codes = {d.code for d in result.diagnostics.items}
    assert codes <= {"label-key", "label-value"}, codes
    return not codes


@pytest.mark.parametrize(("key", "value", "valid"), CASES, ids=[repr(c[:2]) for c in CASES])
def test_validate_and_the_local_server_agree_on_labels(
    publisher_client: Any, key: str, value: str, valid: bool
) -> None:
    assert _validate_accepts(key, value) is valid
    name = f"projects/acme-payments/topics/labels-{next(COUNTER)}"
    if valid:
        topic = publisher_client.create_topic(request={"name": name, "labels": {key: value}})
        assert dict(topic.labels) == {key: value}
    else:
        with pytest.raises(exceptions.InvalidArgument, match="Invalid labels"):
            publisher_client.create_topic(request={"name": name, "labels": {key: value}})
