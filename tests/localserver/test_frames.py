"""Any single damaged byte anywhere in a state file is seen: a normal open refuses it,
`--recover` keeps every other record and counts exactly the one it lost."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.localserver.persistence import frames as f
from reconciler.localserver.persistence.journal import PUT_TOPIC
from reconciler.localserver.persistence.loading import LOG, SNAPSHOT, StateDamaged, load_state

N = 40
RECORDS = [(PUT_TOPIC, f"projects/proj-alpha/topics/t-{i:03d}", b"v" * (i % 7)) for i in range(N)]
BODY, _ = f.encode_all(RECORDS)
JOURNAL = f.header(f.JOURNAL_MAGIC) + BODY
SNAPSHOT_BYTES = f.header(f.SNAPSHOT_MAGIC, N, len(BODY)) + BODY


def _load(name: str, data: bytes, *, recover: bool) -> tuple[list[f.Record], int]:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / name).write_bytes(data)
        loaded = load_state(Path(tmp) / SNAPSHOT, Path(tmp) / LOG, recover=recover)
    return loaded.records, sum(d.records for _, d in loaded.dropped)


@pytest.mark.parametrize(("name", "data"), [(LOG, JOURNAL), (SNAPSHOT, SNAPSHOT_BYTES)])
def test_intact_files_load_every_record(name: str, data: bytes) -> None:
    assert _load(name, data, recover=False) == (RECORDS, 0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.sampled_from([(LOG, JOURNAL), (SNAPSHOT, SNAPSHOT_BYTES)]),
    where=st.floats(min_value=0, max_value=1, exclude_max=True),
    flip=st.integers(min_value=1, max_value=255),
)
def test_one_damaged_byte_is_refused_and_recovered_exactly(
    which: tuple[str, bytes], where: float, flip: int
) -> None:
    name, good = which
    data = bytearray(good)
    at = int(where * len(data))
    data[at] ^= flip
    with pytest.raises(StateDamaged, match="damaged state at byte offset"):
        _load(name, bytes(data), recover=False)
    records, dropped = _load(name, bytes(data), recover=True)
    if at < f.HEADER_SIZE:  # the header only: every record is still there
        assert (records, dropped) == (RECORDS, 0)
    else:
        assert len(records) == N - 1 and dropped == 1
        assert all(r in RECORDS for r in records)


def test_torn_tail_is_not_damage_but_a_cut_short_snapshot_is() -> None:
    last = f.encode(N + 1, (PUT_TOPIC, "projects/proj-alpha/topics/torn", b""))
    for cut in range(1, len(last)):
        records, dropped = _load(LOG, JOURNAL + last[:cut], recover=False)
        assert records == RECORDS and dropped == 0
    with pytest.raises(StateDamaged, match="records of 40"):
        _load(SNAPSHOT, SNAPSHOT_BYTES[: -len(f.encode(N, RECORDS[-1]))], recover=False)
