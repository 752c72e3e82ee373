"""Every call to the service has a deadline: an endpoint that accepts connections and
never answers fails plan, apply, import and policy pull with exit 1 and a message
naming the endpoint, through the real client libraries (nothing mocked)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli_support import CliResult, start_reconcile

Run = Callable[..., CliResult]
# The deadline of the commands pointed at a blackhole, which fail at it whatever its
# length: half a second (it was 1-2 s) keeps the behaviour and waits less (the
# TLS test at the end keeps 2 s: its handshake must finish before the deadline).
WAIT = "0.5"


def assert_clean_failure(result: CliResult, message: str) -> None:
    assert result.exit_code == 1, result.stderr
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert "internal error" not in result.stderr


# -- an emulator address that never answers ------------------------------------------


def verb_args(verb: str, spec_dir: Path, tmp_path: Path) -> list[str]:
    if verb == "plan":
        return ["plan", str(spec_dir)]
    if verb == "apply":
        return ["apply", str(spec_dir), "--auto-approve"]
    if verb == "import":
        return ["import", "--project", "proj-a", "--out", str(tmp_path / "imported")]
    return ["policy", "pull", "--project", "proj-a", "--out", str(tmp_path / "pulled.yaml")]


@pytest.mark.parametrize("verb", ["plan", "apply", "import", "policy pull"])
def test_blackholed_emulator_fails_within_the_timeout_naming_it(
    verb: str, reconcile_process: Run, blackhole: str, spec_dir: Path, tmp_path: Path
) -> None:
    args = verb_args(verb, spec_dir, tmp_path)
    result = reconcile_process(*args, "--emulator", blackhole, "--timeout", WAIT)
    assert_clean_failure(result, f"Error: cannot connect to the emulator at {blackhole}")
    assert f"no answer within {WAIT} s" in result.stderr
    assert not (tmp_path / "imported").exists()
    assert not (tmp_path / "pulled.yaml").exists()


def test_blackholed_emulator_from_the_environment_is_named_too(
    reconcile_process: Run, blackhole: str, spec_dir: Path
) -> None:
    result = reconcile_process(
        "plan", str(spec_dir), "--timeout", WAIT, env={"PUBSUB_EMULATOR_HOST": blackhole}
    )
    assert_clean_failure(result, f"cannot connect to the emulator at {blackhole}")


# -- the Google Cloud path (TLS, credentials) pointed at a blackhole -------------------


def cloud_env(key: Path, pubsub: str, orgpolicy: str | None = None) -> dict[str, str]:
    env = {"GOOGLE_APPLICATION_CREDENTIALS": str(key), "RECONCILE_PUBSUB_ENDPOINT": pubsub}
    if orgpolicy is not None:
        env["RECONCILE_ORGPOLICY_ENDPOINT"] = orgpolicy
    return env


def test_plan_against_unreachable_google_cloud_fails_naming_the_endpoint(
    reconcile_process: Run, blackhole: str, fake_key: Path, spec_dir: Path
) -> None:
    result = reconcile_process(
        "plan", str(spec_dir), "--timeout", WAIT, env=cloud_env(fake_key, blackhole, blackhole)
    )
    assert_clean_failure(result, f"Error: cannot reach Google Cloud at {blackhole}")
    assert f"no connection within {WAIT} s" in result.stderr
    assert "--timeout SECONDS" in result.stderr
    assert "PRIVATE KEY" not in result.stderr + result.stdout


def test_apply_with_a_snapshot_against_unreachable_google_cloud(
    reconcile_process: Run, blackhole: str, fake_key: Path, spec_dir: Path, snapshot: Path
) -> None:
    # With --org-policy only the Pub/Sub endpoint is dialled.
    result = reconcile_process(
        "apply", str(spec_dir), "--auto-approve", "--org-policy", str(snapshot),
        "--timeout", WAIT, env=cloud_env(fake_key, blackhole),
    )
    assert_clean_failure(result, f"Error: cannot reach Google Cloud at {blackhole} (")


@pytest.mark.slow
def test_import_and_policy_pull_against_unreachable_google_cloud(
    reconcile_process: Run, blackhole: str, fake_key: Path, tmp_path: Path
) -> None:
    env = cloud_env(fake_key, blackhole, blackhole)
    imported = reconcile_process(
        "import", "--project", "proj-a", "--out", str(tmp_path / "imported"),
        "--timeout", WAIT, env=env,
    )
    assert_clean_failure(imported, f"cannot reach Google Cloud at {blackhole}")
    pulled = reconcile_process(
        "policy", "pull", "--project", "proj-a", "--out", str(tmp_path / "pulled.yaml"),
        "--timeout", WAIT, env=env,
    )
    assert_clean_failure(pulled, f"cannot reach Google Cloud at {blackhole}")
    assert not (tmp_path / "imported").exists()
    assert not (tmp_path / "pulled.yaml").exists()


@pytest.mark.slow
def test_only_the_services_a_command_calls_are_dialled(
    reconcile_process: Run, blackholes: Callable[[], str], fake_key: Path, tmp_path: Path
) -> None:
    pubsub, orgpolicy = blackholes(), blackholes()
    env = cloud_env(fake_key, pubsub, orgpolicy)
    imported = reconcile_process(
        "import", "--project", "proj-a", "--out", str(tmp_path / "imported"),
        "--timeout", WAIT, env=env,
    )
    assert_clean_failure(imported, f"cannot reach Google Cloud at {pubsub} (")
    assert orgpolicy not in imported.stderr  # import never needs the Org Policy API
    pulled = reconcile_process(
        "policy", "pull", "--project", "proj-a", "--out", str(tmp_path / "pulled.yaml"),
        "--timeout", WAIT, env=env,
    )
    assert_clean_failure(pulled, f"cannot reach Google Cloud at {orgpolicy} (")
    assert pubsub not in pulled.stderr  # policy pull never needs Pub/Sub


@pytest.mark.slow
def test_apply_of_a_saved_plan_against_a_blackholed_emulator(
    reconcile_process: Run, spec_dir: Path, tmp_path: Path
) -> None:
    """The plan is made against a running server, which then stops answering (SIGSTOP:
    the kernel still accepts connections, nothing ever replies); applying the plan at
    its recorded target fails at the deadline naming the endpoint."""
    server = start_reconcile("local-server", "--port", "0", cwd=tmp_path).proc
    try:
        assert server.stdout is not None
        address = server.stdout.readline().strip().split("=", 1)[1]
        plan_file = tmp_path / "plan.json"
        made = reconcile_process(
            "plan", str(spec_dir), "--emulator", address, "--out", str(plan_file)
        )
        assert made.exit_code == 0, made.stderr
        os.kill(server.pid, signal.SIGSTOP)
        result = reconcile_process("apply", str(plan_file), "--timeout", WAIT)
        assert_clean_failure(
            result, f"Error: {plan_file}: cannot connect to the emulator at {address}"
        )
    finally:
        os.kill(server.pid, signal.SIGCONT)
        server.terminate()
        server.communicate(timeout=60)


def test_timeout_must_be_positive(reconcile_process: Run, spec_dir: Path) -> None:
    result = reconcile_process("plan", str(spec_dir), "--local", "--timeout", "0")
    assert result.exit_code == 2
    assert "--timeout" in result.stderr


# -- a server that connects, then never answers the call ---------------------------------


def test_plan_call_that_never_answers_fails_at_the_deadline_without_retrying(
    run_cli: Any, local_server: Any, spec_dir: Path
) -> None:
    hold = local_server.faults.hold("ListTopics", count=5, max_hold=30)
    result = run_cli("plan", str(spec_dir), "--emulator", local_server.address, "--timeout", "1")
    assert result.exit_code == 1
    assert (
        f"no answer from emulator {local_server.address} within 1 s while trying to list "
        "topics for projects/proj-a" in result.stderr
    )
    assert "Traceback" not in result.stderr
    assert len(hold.arrived()) == 1  # the library did not start another attempt


def test_apply_does_not_retry_a_call_that_used_up_the_deadline(
    run_cli: Any, local_server: Any, spec_dir: Path
) -> None:
    hold = local_server.faults.hold("ListTopics", count=5, max_hold=30)
    result = run_cli(
        "apply", str(spec_dir), "--auto-approve", "--emulator", local_server.address,
        "--timeout", "1",
    )
    assert result.exit_code == 1
    assert f"no answer from emulator {local_server.address} within 1 s" in result.stderr
    assert len(hold.arrived()) == 1  # apply's own retry did not wait the deadline again
    assert local_server.counters.get("CreateTopic") == 0


def test_a_deadline_exceeded_answered_by_the_service_is_still_retried_by_apply(
    run_cli: Any, local_server: Any, spec_dir: Path
) -> None:
    # The service's own DEADLINE_EXCEEDED (answered at once) stays transient.
    local_server.faults.add(method="ListTopics", error="DEADLINE_EXCEEDED", error_next=1)
    result = run_cli(
        "apply", str(spec_dir), "--auto-approve", "--emulator", local_server.address,
        "--timeout", "30",
    )
    assert result.exit_code == 0, result.stderr
    assert local_server.counters.get("ListTopics") >= 2
    assert local_server.counters.get("CreateTopic") == 1


def test_bounded_library_retry_uses_the_timeout() -> None:
    from google.api_core import exceptions as gexc

    from reconciler.backends.deadline import call_options

    kept = call_options(2.5, client_retry=True)
    assert kept["timeout"] == 2.5
    assert kept["retry"].timeout == 2.5
    assert kept["retry"]._predicate(gexc.ServiceUnavailable("x"))
    assert not kept["retry"]._predicate(gexc.DeadlineExceeded("x"))
    assert call_options(2.5, client_retry=False) == {"timeout": 2.5, "retry": None}


def test_google_cloud_call_that_never_answers_fails_at_the_deadline(
    reconcile_process: Run, silent_tls_server: tuple[str, Path], fake_key: Path, spec_dir: Path,
    snapshot: Path,
) -> None:
    # TLS and HTTP/2 complete, the fake key signs its JWT locally, the call hangs.
    address, ca_file = silent_tls_server
    env = cloud_env(fake_key, address)
    env["GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"] = str(ca_file)
    result = reconcile_process(
        "plan", str(spec_dir), "--org-policy", str(snapshot), "--timeout", "2", env=env
    )
    assert_clean_failure(
        result,
        f"Error: no answer from {address} within 2 s while trying to list topics for "
        "projects/proj-a",
    )
    assert "cannot reach" not in result.stderr
