"""The real `gcloud` against the local server's REST face (one address for gRPC and
REST), with no credentials: CLOUDSDK_API_ENDPOINT_OVERRIDES_PUBSUB pointed at it, and
side by side with Google's emulator, the same commands giving the same output where
the emulator is right. Skipped, with the reason printed, only where gcloud is absent."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PROJECT = "proj-alpha"
TOPIC = f"projects/{PROJECT}/topics/orders"
SUB = f"projects/{PROJECT}/subscriptions/orders-sub"
GCLOUD = shutil.which("gcloud")


@pytest.fixture(autouse=True)
def _needs_gcloud() -> None:
    if GCLOUD is None:
        reason = "gcloud is not installed: the REST face cannot be tried with it"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)


@dataclass
class Run:
    code: int
    out: str
    err: str


def gcloud(address: str, config: Path, *args: str, project: str = PROJECT) -> Run:
    """`gcloud pubsub ARGS` against `address`, as a user points it at a local server."""
    assert GCLOUD is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOUDSDK_", "GOOGLE_"))}
    env.update(
        {
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_PUBSUB": f"http://{address}/",
            "CLOUDSDK_AUTH_DISABLE_CREDENTIALS": "true",
            "CLOUDSDK_CORE_PROJECT": project,
            "CLOUDSDK_CONFIG": str(config),
            "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
            "CLOUDSDK_CORE_CHECK_GCE_METADATA": "false",
            "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "true",
            "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "true",
        }
    )
    proc = subprocess.run(
        [GCLOUD, "pubsub", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.slow
def test_gcloud_topics_and_subscriptions_against_the_local_server(
    local_server: Any, tmp_path: Path
) -> None:
    address = local_server.address

    def run(*args: str) -> Run:
        return gcloud(address, tmp_path, *args)

    created = run(
        "topics",
        "create",
        "orders",
        "--message-storage-policy-allowed-regions=us-east1,europe-west1",
    )
    assert created.code == 0, created.err
    assert "Created topic [projects/proj-alpha/topics/orders]." in created.err
    topic = local_server.state.get_topic(TOPIC)
    assert list(topic.message_storage_policy.allowed_persistence_regions) == [
        "us-east1",
        "europe-west1",
    ]

    described = run("topics", "describe", "orders")
    assert described.code == 0, described.err
    assert described.out == (
        "messageStoragePolicy:\n  allowedPersistenceRegions:\n  - us-east1\n  - europe-west1\n"
        "name: projects/proj-alpha/topics/orders\n"
    )

    updated = run("topics", "update", "orders", "--update-labels=team=payments,env=dev")
    assert updated.code == 0, updated.err
    assert "Updated topic [projects/proj-alpha/topics/orders]." in updated.err
    assert dict(local_server.state.get_topic(TOPIC).labels) == {"team": "payments", "env": "dev"}

    listed = run("topics", "list")
    assert listed.code == 0, listed.err
    assert listed.out == (
        "---\nlabels:\n  env: dev\n  team: payments\nmessageStoragePolicy:\n"
        "  allowedPersistenceRegions:\n  - us-east1\n  - europe-west1\n"
        "name: projects/proj-alpha/topics/orders\n"
    )

    sub = run("subscriptions", "create", "orders-sub", "--topic=orders")
    assert sub.code == 0, sub.err
    assert "Created subscription [projects/proj-alpha/subscriptions/orders-sub]." in sub.err

    published = run("topics", "publish", "orders", "--message=hello")
    assert published.code == 0, published.err
    assert published.out == "messageIds:\n- '1'\n"

    pulled = run("subscriptions", "pull", "orders-sub", "--auto-ack")
    assert pulled.code == 0, pulled.err
    row = [line for line in pulled.out.splitlines() if "hello" in line]
    assert len(row) == 1 and "SUCCESS" in row[0], pulled.out
    stats = local_server.subscription_stats(SUB)
    assert sum(r.count for r in stats.unacked.values()) == 0  # acknowledged
    assert stats.regions == {"us-east1"}  # received in us-central1, stored in the nearest

    deleted = run("topics", "delete", "orders")
    assert deleted.code == 0, deleted.err
    assert "Deleted topic [projects/proj-alpha/topics/orders]." in deleted.err
    assert local_server.state.get_topic(TOPIC) is None
    # Every call went through the dispatcher (counted like gRPC calls).
    assert local_server.counters.get("Acknowledge") == 1


def test_gcloud_shows_the_servers_refusals(local_server: Any, tmp_path: Path) -> None:
    zone = gcloud(
        local_server.address,
        tmp_path,
        "topics",
        "create",
        "orders",
        "--message-storage-policy-allowed-regions=us-east1-b",
    )
    assert zone.code == 1
    assert (
        "'us-east1-b' is a zone; allowed_persistence_regions takes Google Cloud region "
        "names only" in zone.err
    )


# The commands both servers answer alike: no label or storage-policy update, which
# the emulator refuses (it cannot patch them), and which the first test covers.
SAME = [
    (
        "topics",
        "create",
        "orders",
        "--message-storage-policy-allowed-regions=us-east1,europe-west1",
    ),
    ("topics", "describe", "orders"),
    ("topics", "list"),
    ("subscriptions", "create", "orders-sub", "--topic=orders"),
    ("subscriptions", "describe", "orders-sub"),
    ("topics", "publish", "orders", "--message=hello", "--attribute=k=v"),
    ("subscriptions", "pull", "orders-sub", "--auto-ack"),
    ("topics", "delete", "orders"),
    ("topics", "describe", "orders"),
]


@pytest.mark.slow
def test_the_same_gcloud_commands_answer_as_googles_emulator(
    local_server: Any, google_emulator: str, tmp_path: Path
) -> None:
    emulator_project = f"{PROJECT}-{os.getpid()}"  # the emulator is shared by the module
    for args in SAME:
        with ThreadPoolExecutor(2) as pool:  # both at once: gcloud takes seconds to start
            ours_run = pool.submit(gcloud, local_server.address, tmp_path / "ours", *args)
            theirs_run = pool.submit(
                gcloud, google_emulator, tmp_path / "theirs", *args, project=emulator_project
            )
            ours, theirs = ours_run.result(), theirs_run.result()
        # Where the emulator is wrong: the service reports a subscription's state.
        ours.out = ours.out.replace("state: ACTIVE\n", "")
        theirs_out = theirs.out.replace(emulator_project, PROJECT)
        theirs_err = theirs.err.replace(emulator_project, PROJECT)
        assert ours.code == theirs.code, (args, ours, theirs)
        assert ours.out == theirs_out, args
        if ours.code == 0:
            assert ours.err == theirs_err, args
        else:  # the same refusal
            assert "NOT_FOUND: Topic not found" in ours.err, ours.err
            assert "NOT_FOUND: Topic not found" in theirs_err, theirs_err


@pytest.mark.slow
def test_gcloud_iam_policy_commands_against_the_local_server(
    local_server: Any, tmp_path: Path
) -> None:
    """gcloud's read-modify-write of a topic's and a subscription's policy (GET
    :getIamPolicy, then POST :setIamPolicy with the etag it read), and its stale-etag
    refusal, as against the service."""

    def run(*args: str) -> Run:
        return gcloud(local_server.address, tmp_path, *args)

    assert run("topics", "create", "orders").code == 0
    assert run("subscriptions", "create", "orders-sub", "--topic=orders").code == 0
    for kind, name, role in (
        ("topics", "orders", "roles/pubsub.publisher"),
        ("subscriptions", "orders-sub", "roles/pubsub.subscriber"),
    ):
        added = run(kind, "add-iam-policy-binding", name, "--member=user:a@example.com",
                    f"--role={role}")
        assert added.code == 0, added.err
        assert f"Updated IAM policy for {kind[:-1]} [{name}]." in added.err
        got = run(kind, "get-iam-policy", name, "--format=value(bindings[0].role)")
        assert got.code == 0 and got.out.strip() == role
        removed = run(kind, "remove-iam-policy-binding", name, "--member=user:a@example.com",
                      f"--role={role}")
        assert removed.code == 0, removed.err
        assert run(kind, "get-iam-policy", name, "--format=value(bindings)").out.strip() == ""
    policy = tmp_path / "policy.json"
    policy.write_text('{"bindings": [{"role": "roles/pubsub.viewer", "members": ["allUsers"]}],'
                      ' "etag": "ACAB"}')
    stale = run("topics", "set-iam-policy", "orders", str(policy))
    assert stale.code == 1
    assert "ABORTED: There were concurrent policy changes." in stale.err


DEAD = f"projects/{PROJECT}/topics/orders-dead"


@pytest.mark.slow
def test_gcloud_dead_lettering_end_to_end_and_after_a_restart(tmp_path: Path) -> None:
    """Created and changed with gcloud's dead-letter flags, nacked five times by a
    subscriber (the Python client), read back with gcloud from the dead-letter
    subscription of a --state server that crashed meanwhile."""
    from subscriber_support import make_subscriber

    from reconciler.localserver import LocalServer

    state = tmp_path / "state"
    server = LocalServer(state_dir=state).start()

    def run(*args: str) -> Run:
        done = gcloud(server.address, tmp_path, *args)
        assert done.code == 0, done.err
        return done

    run("topics", "create", "orders", "orders-dead")
    run("subscriptions", "create", "orders-dead-sub", "--topic=orders-dead")
    run("subscriptions", "create", "orders-sub", "--topic=orders",
        "--dead-letter-topic=orders-dead", "--max-delivery-attempts=9")
    run("subscriptions", "update", "orders-sub",
        "--dead-letter-topic=orders-dead", "--max-delivery-attempts=5")
    assert server.state.subs.raw(SUB).dead_letter_policy.max_delivery_attempts == 5
    run("topics", "publish", "orders", "--message=poison", "--attribute=k=v")
    sub = make_subscriber(server.address)
    for attempt in range(1, 6):
        got = sub.pull(subscription=SUB, max_messages=10, timeout=30).received_messages
        assert [m.delivery_attempt for m in got] == [attempt]
        sub.modify_ack_deadline(
            subscription=SUB, ack_ids=[got[0].ack_id], ack_deadline_seconds=0
        )
    server.crash()

    with LocalServer(state_dir=state) as again:
        server = again
        pulled = run("subscriptions", "pull", "orders-dead-sub", "--auto-ack", "--format=json")
        [row] = json.loads(pulled.out)
        attributes = row["message"]["attributes"]
        assert row["message"]["data"] == "cG9pc29u"  # "poison"
        assert attributes["k"] == "v"
        assert attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
        assert attributes["CloudPubSubDeadLetterSourceSubscription"] == "orders-sub"
        assert attributes["CloudPubSubDeadLetterSourceSubscriptionProject"] == PROJECT
        run("subscriptions", "update", "orders-sub", "--clear-dead-letter-policy")
        assert not again.state.subs.raw(SUB).HasField("dead_letter_policy")


def test_gcloud_push_and_nested_masks_against_the_local_server(
    local_server: Any, tmp_path: Path
) -> None:
    """modify-push-config (pull to push with authentication, back to pull) and the
    update flags whose masks are nested (`pushConfig.noWrapper`) or whose values are
    checked (a bucket given as gs://...)."""

    def run(*args: str, code: int = 0) -> Run:
        done = gcloud(local_server.address, tmp_path, *args)
        assert done.code == code, done.err
        return done

    def config() -> Any:
        return local_server.state.subs.raw(SUB)

    run("topics", "create", "orders")
    run("subscriptions", "create", "orders-sub", "--topic=orders")
    run("subscriptions", "modify-push-config", "orders-sub",
        "--push-endpoint=https://push.example.com/orders",
        "--push-auth-service-account=pusher@proj-alpha.iam.gserviceaccount.com",
        "--push-auth-token-audience=orders")
    push = config().push_config
    assert (push.push_endpoint, push.oidc_token.audience) == (
        "https://push.example.com/orders", "orders")
    run("subscriptions", "update", "orders-sub", "--push-endpoint=https://push.example.com/o",
        "--push-no-wrapper", "--push-no-wrapper-write-metadata")
    assert config().push_config.no_wrapper.write_metadata
    run("subscriptions", "update", "orders-sub", "--clear-push-no-wrapper-config")  # the mask
    push = config().push_config  # pushConfig.noWrapper: that part only
    assert push.push_endpoint == "https://push.example.com/o" and not push.HasField("no_wrapper")
    run("subscriptions", "modify-push-config", "orders-sub", "--push-endpoint=")
    assert config().push_config == type(config().push_config)()  # a pull subscription again
    refused = run("subscriptions", "update", "orders-sub", "--cloud-storage-bucket=gs://fid",
                  code=1)
    assert "INVALID_ARGUMENT: Invalid cloud_storage_config.bucket 'gs://fid'" in refused.err
    assert "without the gs:// prefix" in refused.err
    assert local_server.counters.get("ModifyPushConfig") == 2
