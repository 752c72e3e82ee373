"""`reconcile hedging advise --topic`: advice from the topic's own Cloud Monitoring
metrics (`topic/send_request_latencies`, `topic/send_request_count`), read through
google-cloud-monitoring from the local server, whose latencies come from real Publish
calls with injected delays and errors."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from reconciler.hedging.plot import PLOT_EXTRA

PROJECT = "advise-proj"
TOPIC = f"projects/{PROJECT}/topics/orders"
# 5% of Publish calls take 400 ms more than the others' 2 ms.
TAIL = {"delay": 0.002, "tail_fraction": 0.05, "tail_delay": 0.4}


def publish(server: Any, client: Any, n: int, topic: str = TOPIC, **fault: Any) -> None:
    """`n` Publish calls of one message each through the GAPIC client, 8 at a time,
    with `fault` injected on the topic's Publish."""
    client.create_topic(name=topic)
    if fault:
        server.faults.add(method="Publish", resource=topic, **fault)
    with ThreadPoolExecutor(8) as pool:
        calls = [
            pool.submit(client.publish, topic=topic, messages=[{"data": b"m%d" % i}])
            for i in range(n)
        ]
        for call in calls:
            call.result(timeout=60)


def advise(run_cli: Callable[..., Any], server: Any, *args: str) -> Any:
    return run_cli("hedging", "advise", "--topic", TOPIC, "--emulator", server.address,
                   "--batches", "3000", *args)


def test_advice_from_the_topics_latency_metric(
    run_cli: Callable[..., Any], local_server: Any, publisher_client: Any
) -> None:
    publish(local_server, publisher_client, 400, **TAIL)
    result = advise(run_cli, local_server, "--max-extra", "0.2")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        f"400 latency samples from topic/send_request_latencies of {TOPIC} "
        f"(last 1h, emulator {local_server.address})"
    )
    assert "token bucket starting empty" in lines[1]
    off = next(line for line in lines if line.startswith("off "))
    assert float(off.split()[3]) >= 400  # p99 without hedging: in the 400 ms tail
    recommended = next(line for line in lines if line.startswith("recommended: "))
    assert recommended.startswith("recommended: hedgeDelay ")
    assert "maxTokens " in recommended and "refillRatio " in recommended
    predicted = next(line for line in lines if line.startswith("predicted: "))
    p99_after = float(predicted.split("->")[1].split()[0])
    assert p99_after < 300  # hedged below the tail
    assert "warning" not in result.stderr


def test_a_p99_goal_and_the_profile_document_validate(
    run_cli: Callable[..., Any], local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    publish(local_server, publisher_client, 400, **TAIL)
    result = advise(run_cli, local_server, "--p99-goal", "300ms", "--max-extra", "0.2",
                    "--write-profile", "orders-tail")
    assert result.exit_code == 0, result.stderr
    # The report goes to stderr, the document alone to stdout: ready to redirect.
    assert "p99 goal 300 ms: met" in result.stderr
    assert result.stdout.startswith(
        "---\napiVersion: reconcile.pubsub/v1\nkind: HedgingProfile\n"
        "metadata: {name: orders-tail}\n"
    )
    # It can be appended to a file of profiles (`>> profiles.yaml`), which then
    # validates with every document in it.
    specs = tmp_path / "specs"
    specs.mkdir()
    profiles = specs / "profiles.yaml"
    profiles.write_text(
        "apiVersion: reconcile.pubsub/v1\nkind: HedgingProfile\nmetadata: {name: steady}\n"
        "spec: {hedgeDelay: 200ms, maxTokens: 50, refillRatio: 0.05}\n",
        encoding="utf-8",
    )
    with profiles.open("a", encoding="utf-8") as out:
        out.write(result.stdout)
    validated = run_cli("validate", str(specs))
    assert validated.exit_code == 0, validated.stdout + validated.stderr
    # The recommendation reaches the goal with the fewest extra requests: a budget
    # that cannot reach it says so.
    unmet = advise(run_cli, local_server, "--p99-goal", "300ms", "--max-extra", "0.01")
    assert unmet.exit_code == 0, unmet.stderr
    assert "p99 goal 300 ms: NOT met" in unmet.stdout


def test_a_high_cancelled_rate_warns_that_the_deadline_is_too_short(
    run_cli: Callable[..., Any], local_server: Any, publisher_client: Any
) -> None:
    publish(local_server, publisher_client, 100, **TAIL)
    local_server.faults.add(method="Publish", resource=TOPIC, error="CANCELLED", error_next=5)
    for i in range(5):
        with pytest.raises(Exception, match=r"CANCELLED|Cancelled"):
            publisher_client.publish(topic=TOPIC, messages=[{"data": b"c%d" % i}], retry=None)
    result = advise(run_cli, local_server)
    assert result.exit_code == 0, result.stderr
    assert (
        f"warning: 4.8% of the 105 Publish calls to {TOPIC} in the last 1h ended CANCELLED "
        "or DEADLINE_EXCEEDED: the publishers' request deadline is likely too short"
    ) in result.stderr
    # The cancelled calls are read as cut short, beside the completed ones.
    assert result.stdout.startswith("105 latency samples from ")
    assert ("note: 5 calls were cut short (cancelled by the client or ended by its "
            "deadline)") in result.stdout


def test_metrics_that_cannot_be_read_name_topic_project_and_role(
    run_cli: Callable[..., Any], local_server: Any, publisher_client: Any
) -> None:
    publish(local_server, publisher_client, 20)
    local_server.faults.add(method="ListTimeSeries", error="PERMISSION_DENIED")
    result = advise(run_cli, local_server)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"Error: topic orders (project {PROJECT}): cannot read its publish metrics: "
        "permission denied to read metrics in project advise-proj (needs "
        "monitoring.timeSeries.list, e.g. role roles/monitoring.viewer)"
    ), result.stderr
    assert f"hint: grant roles/monitoring.viewer on project {PROJECT}" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_topic_without_publishes_in_the_window(
    run_cli: Callable[..., Any], local_server: Any, publisher_client: Any
) -> None:
    publisher_client.create_topic(name=TOPIC)
    result = advise(run_cli, local_server, "--since", "10m")
    assert result.exit_code == 1
    assert (
        f"topic orders (project {PROJECT}): no successful publish recorded in the last 10m "
        f"(emulator {local_server.address})"
    ) in result.stderr
    assert "widen --since" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--topic", "orders"), "--topic: 'orders' is not a topic name; write "
         "projects/PROJECT/topics/TOPIC"),
        (("--topic", TOPIC, "--since", "30s"), "--since 30s is shorter than 1m"),
        (("--topic", TOPIC, "--since", "soon"), "--since: 'soon' is not a duration"),
        (("--topic", TOPIC, "--p99-goal", "fast"), "--p99-goal: 'fast' is not a duration"),
        (("--topic", TOPIC, "--write-profile", "Bad Name"), "--write-profile 'Bad Name': a "
         "profile name must be"),
        ((), "nothing to advise on: pass a LATENCIES file or --topic projects/P/topics/T"),
        (("lat.txt", "--topic", TOPIC), "pass either a LATENCIES file or --topic, not both"),
        (("lat.txt", "--local"), "--local and --emulator choose where --topic's metrics are read"),
    ],
)
def test_usage_errors(run_cli: Callable[..., Any], args: tuple[str, ...], message: str) -> None:
    result = run_cli("hedging", "advise", *args)
    assert result.exit_code == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_plot_without_matplotlib_fails_before_reading_anything(
    run_cli: Callable[..., Any], local_server: Any, tmp_path: Path
) -> None:
    if importlib.util.find_spec("matplotlib") is not None:
        pytest.skip("matplotlib is installed: tests/hedging/test_advise.py draws the plot")
    before = local_server.counters.get("ListTimeSeries")
    result = advise(run_cli, local_server, "--plot", str(tmp_path / "cdf.png"))
    assert result.exit_code == 1
    assert f"pip install '{PLOT_EXTRA}'" in result.stderr
    assert local_server.counters.get("ListTimeSeries") == before


def test_an_unanswered_metric_read_ends_at_the_timeout(
    run_cli: Callable[..., Any], local_server: Any, publisher_client: Any
) -> None:
    """--timeout bounds each metric read as a whole (issue 39): a ListTimeSeries the
    service never answers fails naming the project, not a hang."""
    publish(local_server, publisher_client, 3)
    held = local_server.faults.hold("ListTimeSeries", count=5)
    result = advise(run_cli, local_server, "--timeout", "1")
    assert len(held.arrived()) >= 1  # the call was made, and never answered
    held.release_all()
    assert result.exit_code == 1
    assert (f"Error: topic orders (project {PROJECT}): cannot read its publish metrics: "
            f"Cloud Monitoring did not answer in time for project {PROJECT}") in result.stderr


def test_a_topic_that_does_not_exist_is_named_as_missing(
    run_cli: Callable[..., Any], local_server: Any, publisher_client: Any
) -> None:
    publish(local_server, publisher_client, 5)  # the project has a topic, not this one
    result = run_cli("hedging", "advise", "--topic", f"projects/{PROJECT}/topics/ordres",
                     "--emulator", local_server.address)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"Error: topic ordres not found in project {PROJECT} "
        f"(emulator {local_server.address})\n"
    ), result.stderr
    assert "gcloud pubsub topics list --project advise-proj" in result.stderr
    assert "publish to it first" not in result.stderr


def test_a_topic_that_hedges_is_advised_from_its_cancelled_losers_too(
    run_cli: Callable[..., Any], local_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its successful calls no longer hold the tail (the hedges answer in 2 ms); the
    cancelled originals carry it: the advice knows the profile from the labels, reads
    them as cut short, and does not call them a deadline problem."""
    from google.cloud.pubsub_v1 import types

    from reconciler.hedging import labels, pubsub_v1
    from reconciler.hedging.profile import HedgingProfile, RetryTimeouts

    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    profile = HedgingProfile(hedge_delay_ms=100, max_tokens=50, refill_ratio=0.2)
    client = pubsub_v1.PublisherClient(types.BatchSettings(max_messages=1))
    try:
        client.create_topic(request={"name": TOPIC,
                                     "labels": labels.encode(profile, RetryTimeouts())})
        local_server.faults.add(method="Publish", resource=TOPIC, **TAIL)
        for i in range(300):
            client.publish(TOPIC, b"m%d" % i).result(timeout=60)
        counters = client.counters(TOPIC)
    finally:
        client.close()
    assert counters.hedges_sent >= 3, counters  # the tail was hedged
    result = advise(run_cli, local_server, "--max-extra", "0.2")
    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr  # the losers are no deadline problem
    lines = result.stdout.splitlines()
    assert ("current (the topic's labels): hedgeDelay 100ms, maxTokens 50, refillRatio 0.2"
            in lines)
    off = next(line for line in lines if line.startswith("off "))
    assert float(off.split()[3]) >= 100  # the tail, rebuilt: not the hedges' 2 ms
    [note] = [line for line in lines if line.startswith("note: ") and "cut short" in line]
    cut = int(note.split()[1])
    # Each hedge leaves one loser, cancelled (unless it answered before the cancel).
    assert 1 <= cut <= counters.hedges_sent, (note, counters)
    assert note.startswith(f"note: {cut} calls were cut short (the losing attempts of "
                           "hedged batches, and any the deadline ended)")
