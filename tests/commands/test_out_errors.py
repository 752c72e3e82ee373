"""An `--out` that cannot be written is the same error in every command that writes
one: exit 1 (an input error, as docs/ci.md's table says; 2 is click's usage errors
and plan's changes), naming the path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.specs_support import topic_doc


def test_out_at_a_directory_exits_1_naming_it_in_every_command(
    run_cli: Any, local_server: Any, tmp_path: Path, publisher_client: Any
) -> None:
    publisher_client.create_topic(request={"name": "projects/proj-a/topics/orders"})
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "t.yaml").write_text(topic_doc("orders"))
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    target = ("--emulator", local_server.address)
    runs = {
        "policy pull": run_cli("policy", "pull", "--project", "proj-a", "--out",
                               str(blocked), *target),
        "plan": run_cli("plan", str(specs), "--out", str(blocked), *target),
        "import": run_cli("import", "--project", "proj-a", "--out", str(a_file), *target),
    }
    for command, result in runs.items():
        assert result.exit_code == 1, (command, result.stderr)
        named = str(a_file if command == "import" else blocked)
        assert result.stderr.startswith("Error: ") and named in result.stderr, (
            command, result.stderr
        )
