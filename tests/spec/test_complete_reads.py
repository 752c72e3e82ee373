"""Issue 11, bullet 1: nothing in the spec tree is skipped silently. An unreadable
folder, a broken or looping symlink is an error naming the path; symlinked folders are
followed; and `apply --prune` on a tree with an unreadable folder deletes nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.spec.validate import validate_paths
from tests.cli_support import CliResult, reconcile_process

TOPIC = """\
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {{project: acme-payments, name: {name}}}
"""
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def _tree(root: Path) -> Path:
    specs = root / "specs"
    (specs / "team-a").mkdir(parents=True)
    (specs / "team-b").mkdir()
    (specs / "team-a" / "topics.yaml").write_text(TOPIC.format(name="orders"))
    (specs / "team-b" / "topics.yaml").write_text(TOPIC.format(name="refunds"))
    (specs / "org-policy.yaml").write_text("# no org policies\n")
    return specs


def _rendered(specs: Path) -> list[str]:
    return [d.render() for d in validate_paths([specs]).diagnostics.sorted()]


def test_symlinked_folder_is_followed(tmp_path: Path) -> None:
    specs = _tree(tmp_path)
    elsewhere = tmp_path / "shared-topics"
    elsewhere.mkdir()
    (elsewhere / "t.yaml").write_text(TOPIC.format(name="payments"))
    (specs / "shared").symlink_to(elsewhere)
    result = validate_paths([specs])
    assert _rendered(specs) == []
    assert sorted(t.topic for t in result.desired.topics) == ["orders", "payments", "refunds"]


def test_symlink_loop_is_an_error_naming_the_link(tmp_path: Path) -> None:
    specs = _tree(tmp_path)
    (specs / "team-a" / "again").symlink_to(specs)
    assert _rendered(specs) == [
        f"{specs / 'team-a' / 'again'}: error[path-symlink-loop]: this symlink leads back to "
        f"{specs}, a folder that contains it (a loop); remove the link"
    ]


def test_second_link_to_a_folder_is_read_once(tmp_path: Path) -> None:
    specs = _tree(tmp_path)
    (specs / "zz-alias").symlink_to(specs / "team-b")
    lines = _rendered(specs)
    assert lines == [
        f"{specs / 'zz-alias'}: warning[path-repeated]: this folder is the same as "
        f"{specs / 'team-b'} (a symlink); its specs are read once, from there"
    ]


def test_broken_and_self_looping_links_are_errors(tmp_path: Path) -> None:
    specs = _tree(tmp_path)
    (specs / "gone.yaml").symlink_to(tmp_path / "nowhere.yaml")
    (specs / "team-a" / "self").symlink_to(specs / "team-a" / "self")
    lines = _rendered(specs)
    assert f"{specs / 'gone.yaml'}: error[path-broken-link]: a broken or looping symlink" in (
        lines[0]
    )
    assert lines[1].startswith(f"{specs / 'team-a' / 'self'}: error[path-broken-link]")
    assert len(lines) == 2


@pytest.fixture
def nobody_tree() -> Iterator[Path]:
    """A tree outside root's private tmp, owned by `nobody`, so that a CLI run as
    nobody can read it and an unreadable folder really is unreadable."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.fail("this test drops to user nobody: run it as root with setpriv installed")
    base = Path(tempfile.mkdtemp(prefix="reconcile-nobody-"))
    base.chmod(0o755)
    try:
        _tree(base)
        subprocess.run(["chown", "-R", "nobody:nogroup", str(base)], check=True)
        yield base
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(base)], check=False)
        shutil.rmtree(base, ignore_errors=True)


def _as_nobody(cwd: Path, *args: str) -> CliResult:
    return reconcile_process(
        *args, cwd=cwd, env={"HOME": str(cwd), "PYTHONDONTWRITEBYTECODE": "1"}, wrapper=NOBODY
    )


@pytest.mark.slow
def test_prune_deletes_nothing_when_a_folder_cannot_be_read(nobody_tree: Path) -> None:
    created = _as_nobody(nobody_tree, "apply", "specs", "--local", "--auto-approve")
    assert created.exit_code == 0, created.stdout + created.stderr

    unreadable = nobody_tree / "specs" / "team-b"
    unreadable.chmod(0o000)
    validated = _as_nobody(nobody_tree, "validate", "specs")
    assert validated.exit_code == 1
    assert (
        "specs/team-b: error[path-unreadable]: cannot read this folder (Permission denied)"
    ) in validated.stdout

    pruned = _as_nobody(
        nobody_tree, "apply", "specs", "--local", "--prune", "--auto-approve"
    )
    assert pruned.exit_code == 1, pruned.stdout + pruned.stderr
    assert "specs/team-b: error[path-unreadable]" in pruned.stderr
    unreadable.chmod(0o755)

    from reconciler.backends.clients import publisher_client
    from reconciler.localserver import LocalServer

    server = LocalServer(state_dir=nobody_tree / ".reconcile" / "local", fsync=False)
    server.start()
    try:
        client = publisher_client(server.address)
        try:
            names = sorted(
                t.name for t in client.list_topics(request={"project": "projects/acme-payments"})
            )
        finally:
            client.transport.close()
    finally:
        server.stop(grace=None)
    assert names == [
        "projects/acme-payments/topics/orders",
        "projects/acme-payments/topics/refunds",
    ]
