"""Issue 50 item 1: dead-lettering survives a restart of a `--state` server. The
attempts a pull hands out are journaled before the reply and a forward is one record
(the dead-letter topic's publish and the source's acknowledgement together), so after
a kill -9: attempts go on where they were (a delivery the crash cut short counts as
failed, as an expired deadline would), a message whose last attempt was out is
forwarded, a forward made is neither lost nor made twice; and one damaged byte in a
forward's record refuses the start, and `--recover` drops that forward whole."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dead_letter_support import DLT, DS, S, dead_letters, nack, pull, setup
from subscriber_support import make_subscriber

from reconciler.backends.clients import publisher_client
from reconciler.localserver import LocalServer


def _clients(address: str) -> tuple[Any, Any]:
    return publisher_client(address), make_subscriber(address)


def _setup(address: str, messages: int = 1) -> None:
    setup(*_clients(address), messages=messages)


def _deliveries(sub: Any, count: int, *, nack_last: bool = True) -> list[int]:
    """Pull `count` times, nacking each delivery (the last one only if `nack_last`):
    the delivery attempts seen."""
    seen = []
    for i in range(count):
        got = pull(sub)
        seen += [m.delivery_attempt for m in got]
        if nack_last or i < count - 1:
            nack(sub, got)
    return seen


def test_attempts_survive_a_crash_and_a_cut_short_delivery_counts(tmp_path: Path) -> None:
    server = LocalServer(state_dir=tmp_path).start()
    _setup(server.address)
    _, sub = _clients(server.address)
    assert _deliveries(sub, 3) == [1, 2, 3]
    assert _deliveries(sub, 1, nack_last=False) == [4]  # out when the server dies
    server.crash()
    with LocalServer(state_dir=tmp_path) as again:
        _, sub = _clients(again.address)
        assert _deliveries(sub, 1) == [5]
        [dead] = dead_letters(sub, 1, ack=False)
        assert dead.message.attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
        assert pull(sub) == []


def test_a_message_whose_last_attempt_was_out_is_forwarded_after_a_restart(
    tmp_path: Path,
) -> None:
    server = LocalServer(state_dir=tmp_path).start()
    _setup(server.address)
    _, sub = _clients(server.address)
    assert _deliveries(sub, 5, nack_last=False) == [1, 2, 3, 4, 5]
    server.crash()
    with LocalServer(state_dir=tmp_path) as again:
        _, sub = _clients(again.address)
        [dead] = dead_letters(sub, 1, ack=False)  # forwarded by the server itself once it is up
        assert dead.message.data == b"m0"
        assert pull(sub) == []


def test_a_forward_is_neither_lost_nor_repeated_by_a_crash_or_a_compaction(
    tmp_path: Path,
) -> None:
    server = LocalServer(state_dir=tmp_path).start()
    _setup(server.address, messages=2)
    _, sub = _clients(server.address)
    first = pull(sub)
    sub.acknowledge(subscription=S, ack_ids=[m.ack_id for m in first if m.message.data == b"m1"])
    nack(sub, [m for m in first if m.message.data == b"m0"])
    _deliveries(sub, 4)  # m0's attempts 2 to 5
    [dead] = dead_letters(sub, 1, ack=False)
    forwarded_id = dead.message.message_id
    server.crash()  # the forward is in the journal only
    with LocalServer(state_dir=tmp_path) as again:  # replayed; then a clean stop compacts
        _, sub = _clients(again.address)
        assert [m.message.message_id for m in pull(sub, DS)] == [forwarded_id]
        assert pull(sub) == []
    with LocalServer(state_dir=tmp_path) as again:  # from the snapshot
        _, sub = _clients(again.address)
        assert [m.message.message_id for m in pull(sub, DS)] == [forwarded_id]
        assert pull(sub) == []


def test_kill_9_then_a_damaged_forward_record_is_refused_and_recovered(
    tmp_path: Path, server_process: Any, refused_start: Any
) -> None:
    """`--recover` drops the damaged forward whole; the message's attempts (in records
    of their own) say it used up its last one, so the server forwards it again: one
    copy on the dead-letter topic, none at the source."""
    state = tmp_path / "state"
    first = server_process("--state", str(state))
    _setup(first.address)
    _, sub = _clients(first.address)
    _deliveries(sub, 5)
    assert len(dead_letters(sub, 1, ack=False)) == 1
    first.kill9()

    journal = state / "journal.log"
    data = bytearray(journal.read_bytes())
    at = data.rfind(DLT.encode())  # in the last record written: the forward
    assert at > 0
    data[at + 3] ^= 0xFF
    journal.write_bytes(bytes(data))

    code, err = refused_start("--state", str(state))
    assert code == 1 and "--recover" in err and "Traceback" not in err
    recovered = server_process("--state", str(state), "--recover")
    _, sub = _clients(recovered.address)
    [dead] = dead_letters(sub, 1, ack=False)
    assert dead.message.data == b"m0"
    assert dead.message.attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert pull(sub, DS) == [] and pull(sub) == []
    report = recovered.stop()
    assert re.search(r"recover: journal\.log: kept \d+ intact records, dropped 1 damaged", report)



def test_a_forward_the_disk_refuses_is_made_once_it_accepts(
    tmp_path: Path, caplog: Any
) -> None:
    """The forward's write fails (a full disk): nothing changes, the server says so
    and makes the forward on its next round."""
    with LocalServer(state_dir=tmp_path) as server:
        _setup(server.address)
        _, sub = _clients(server.address)
        assert _deliveries(sub, 4) == [1, 2, 3, 4]
        last = pull(sub)
        server.fail_state_writes(count=1)
        nack(sub, last)
        [dead] = dead_letters(sub, 1, ack=False)
        assert dead.message.attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
        assert "dead-letter forward not made" in caplog.text
        assert "No space left on device" in caplog.text
        assert pull(sub) == [] and pull(sub, DS) == []
