"""Only regular files are read (issue 21): a FIFO, a socket or a device (directly or
through a symlink) where a user file is expected is an error naming the path, never a
hang in `open` nor a read of /dev/zero until memory runs out; and the size bound holds
for the bytes read, whatever `st_size` says. Every kind of user file: spec files (in a
tree and named as PATH), the org-policy snapshot (found, and --org-policy FILE), plan
files (`apply`, `show`), latency samples (`hedging advise`); key files are
tests/backends/test_credentials.py's."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.fileio import FileProblem, read_bytes, read_text
from tests.conftest import SPECIAL_KINDS

TOPIC = """\
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {project: acme-payments, name: orders}
spec:
  labels: {team: payments}
"""
NOT_REGULAR = "not a regular file; reconcile reads only regular files"


@pytest.fixture(autouse=True)
def hang_guard() -> Iterator[None]:
    """A regression blocks in `open` forever: fail the test after a minute instead of
    hanging the suite (a guard, not a timing assertion)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def hung(signum: int, frame: Any) -> None:
        raise TimeoutError("the command hung on a file that is not a regular file")

    try:
        previous = signal.signal(signal.SIGALRM, hung)
    except ValueError:  # not the main thread: no guard
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, 60)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "specs"
    root.mkdir()
    (root / "topics.yaml").write_text(TOPIC)
    return root


@pytest.mark.parametrize("kind", SPECIAL_KINDS)
def test_a_spec_in_the_tree(kind: str, run_cli: Any, tmp_path: Path, special_file: Any) -> None:
    root = tree(tmp_path)
    path, what = special_file(kind, root / "pipe.yaml")
    result = run_cli("validate", str(root))
    assert result.exit_code == 1
    assert f"{path}: error[file-not-regular]: this path is {what}, {NOT_REGULAR}" in (
        result.stdout
    )
    assert "1 error" in result.stderr  # the good file was read, the special one named


@pytest.mark.parametrize("kind", SPECIAL_KINDS)
def test_a_spec_named_as_path(kind: str, run_cli: Any, tmp_path: Path, special_file: Any) -> None:
    path, what = special_file(kind, tmp_path / "zero.yaml")
    result = run_cli("validate", str(path))
    assert result.exit_code == 1
    assert f"{path}: error[file-not-regular]: this path is {what}, {NOT_REGULAR}" in (
        result.stdout
    )


@pytest.mark.parametrize("kind", SPECIAL_KINDS)
def test_the_snapshot_at_the_spec_root(
    kind: str, run_cli: Any, tmp_path: Path, special_file: Any
) -> None:
    root = tree(tmp_path)
    path, what = special_file(kind, root / "org-policy.yaml")
    result = run_cli("validate", str(root), "--require-org-policy")
    assert result.exit_code == 1
    assert f"{path}: error[file-not-regular]: this path is {what}" in result.stdout
    assert "org-policy-missing" not in result.stdout  # found, and named: not "missing"


def test_a_folder_named_as_the_snapshot_is_the_snapshot_and_not_specs(
    run_cli: Any, tmp_path: Path
) -> None:
    """Once "no org-policy snapshot found" (exit 0), and the files in the folder were
    read as specs."""
    root = tree(tmp_path)
    (root / "org-policy.yaml").mkdir()
    (root / "org-policy.yaml" / "x.yaml").write_text("ancestry: {}\n")
    result = run_cli("validate", str(root))
    assert result.exit_code == 1
    assert (f"{root / 'org-policy.yaml'}: error[file-not-regular]: this path is a "
            "directory") in result.stdout
    assert "org-policy-missing" not in result.stdout and "x.yaml" not in result.stdout


@pytest.mark.parametrize("verb", ["validate", "plan"])
def test_two_snapshots_at_one_root_are_ambiguous_and_neither_is_read(
    verb: str, run_cli: Any, tmp_path: Path
) -> None:
    """Once org-policy.yaml was read and org-policy.yml, holding a denying constraint,
    was never mentioned: a pass."""
    root = tree(tmp_path)
    (root / "org-policy.yaml").write_text("ancestry:\n  projects/acme-payments: none\n")
    (root / "org-policy.yml").write_text("ancestry:\n  projects/acme-payments: none\n")
    result = run_cli(verb, str(root), *(["--local"] if verb == "plan" else []))
    assert result.exit_code == 1
    assert (f"Error: {root}: two org-policy snapshots, org-policy.yaml and "
            "org-policy.yml") in result.stderr
    assert "keep one" in result.stderr


@pytest.mark.parametrize("kind", SPECIAL_KINDS)
@pytest.mark.parametrize("verb", ["validate", "plan"])
def test_org_policy_file(
    kind: str, verb: str, run_cli: Any, tmp_path: Path, special_file: Any, local_server: Any
) -> None:
    root = tree(tmp_path)
    path, what = special_file(kind, tmp_path / "policy.yaml")
    extra = ["--emulator", local_server.address] if verb == "plan" else []
    result = run_cli(verb, str(root), "--org-policy", str(path), *extra)
    assert result.exit_code == 1
    assert f"{path}: error[file-not-regular]: this path is {what}" in (
        result.stdout + result.stderr
    )


@pytest.mark.parametrize("kind", SPECIAL_KINDS)
@pytest.mark.parametrize("verb", ["apply", "show"])
def test_a_plan_file(
    kind: str, verb: str, run_cli: Any, tmp_path: Path, special_file: Any
) -> None:
    path, what = special_file(kind, tmp_path / "plan.json")
    result = run_cli(verb, str(path))
    assert result.exit_code == (4 if verb == "apply" else 1)  # apply: refused, exit 4
    assert f"Error: {path}: cannot read the plan file: this path is {what}, {NOT_REGULAR}" in (
        result.stderr
    )


@pytest.mark.parametrize("kind", SPECIAL_KINDS)
def test_latency_samples(kind: str, run_cli: Any, tmp_path: Path, special_file: Any) -> None:
    path, what = special_file(kind, tmp_path / "latencies.txt")
    result = run_cli("hedging", "advise", str(path))
    assert result.exit_code == 1
    assert f"Error: {path}: this path is {what}, {NOT_REGULAR}" in result.stderr


# -- the bound holds for the bytes read ----------------------------------------------


def _proc_file(name: str) -> Path:
    path = Path("/proc/self") / name
    try:
        fd = os.open(path, os.O_RDONLY)
        os.read(fd, 1 << 16)
        os.close(fd)
    except OSError as exc:
        pytest.skip(f"{path} cannot be read here ({exc.strerror})")
    if path.stat().st_size != 0:
        pytest.skip(f"{path} reports its size here")
    return path


def test_a_file_whose_size_lies_is_cut_at_the_bound() -> None:
    """/proc files are regular files of st_size 0 with content: the reader counts
    what it reads, not what stat said."""
    status = _proc_file("status")
    assert b"Name:" in read_bytes(status, 1 << 20)  # within the bound: read whole
    with pytest.raises(FileProblem) as problem:
        read_bytes(status, 100)
    assert problem.value.code == "file-too-large"
    assert problem.value.message.startswith(
        "the file holds more than 100 bytes (its size said 0: it grew while being read"
    )


def test_a_spec_whose_size_lies_past_the_bound(run_cli: Any, tmp_path: Path) -> None:
    """/proc/self/pagemap: a regular file of st_size 0 that reads for gigabytes."""
    root = tree(tmp_path)
    (root / "pagemap.yaml").symlink_to(_proc_file("pagemap"))
    result = run_cli("validate", str(root))
    assert result.exit_code == 1
    assert (
        f"{root / 'pagemap.yaml'}:1:1: error[file-too-large]: the file holds more than "
        "8,388,608 bytes (its size said 0"
    ) in result.stdout


def test_text_reads_still_name_encodings(tmp_path: Path) -> None:
    """The regular-file reader under the text decoding: empty, BOM, UTF-16 as before."""
    empty = tmp_path / "empty.yaml"
    empty.write_bytes(b"")
    assert read_text(empty, 10) == ""
    bom = tmp_path / "bom.yaml"
    bom.write_bytes(b"\xef\xbb\xbfa: 1\n")
    assert read_text(bom, 10) == "a: 1\n"
    wide = tmp_path / "wide.yaml"
    wide.write_bytes("a: 1\n".encode("utf-16"))
    with pytest.raises(FileProblem, match="encoded as UTF-16"):
        read_text(wide, 100)
    with pytest.raises(FileProblem, match="the file is 8 bytes, over the 6-byte limit"):
        read_text(bom, 6)
