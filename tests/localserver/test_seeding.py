"""`--org-policy FILE` with `--state DIR` seeds, it does not overwrite: policies the
state lacks are added, a differing one is refused (named) unless --reset-org-policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.backends.clients import orgpolicy_client, publisher_client

P = "projects/proj-alpha"
LOCATIONS = f"{P}/policies/gcp.resourceLocations"
OTHER = "projects/proj-beta/policies/gcp.resourceLocations"


def _snapshot(path: Path, *docs: tuple[str, str]) -> Path:
    path.write_text(
        "---\n".join(
            f"name: {name}\nspec: {{rules: [{{values: {{allowedValues: [{region}]}}}}]}}\n"
            for name, region in docs
        )
    )
    return path


def _allowed(address: str, name: str) -> list[str]:
    client = orgpolicy_client(address)
    try:
        policy = client.get_policy(name=name)
        return list(policy.spec.rules[0].values.allowed_values)
    finally:
        client.transport.close()


def _set_through_api(address: str, region: str) -> None:
    client = orgpolicy_client(address)
    client.update_policy(
        policy={"name": LOCATIONS, "spec": {"rules": [{"values": {"allowed_values": [region]}}]}}
    )
    client.transport.close()


def test_restart_with_the_same_file_after_an_api_write_is_refused_not_overwritten(
    tmp_path: Path, server_process: Any, refused_start: Any
) -> None:
    state = str(tmp_path / "state")
    seed = _snapshot(tmp_path / "org.yaml", (LOCATIONS, "us-east1"))
    server = server_process("--state", state, "--org-policy", str(seed))
    assert _allowed(server.address, LOCATIONS) == ["us-east1"]
    _set_through_api(server.address, "europe-west1")  # acknowledged
    server.stop()

    code, err = refused_start("--state", state, "--org-policy", str(seed))
    assert code == 1
    assert str(seed) in err and f"policy {LOCATIONS}" in err and "--reset-org-policy" in err

    server = server_process("--state", state)
    assert _allowed(server.address, LOCATIONS) == ["europe-west1"]  # kept
    server.stop()

    server = server_process("--state", state, "--org-policy", str(seed), "--reset-org-policy")
    assert _allowed(server.address, LOCATIONS) == ["us-east1"]
    server.stop()


def test_seeding_adds_what_the_state_lacks_and_keeps_the_rest(
    tmp_path: Path, server_process: Any
) -> None:
    state = str(tmp_path / "state")
    first = _snapshot(tmp_path / "a.yaml", (LOCATIONS, "us-east1"))
    server = server_process("--state", state, "--org-policy", str(first))
    server.stop()
    # Restarting with the same file is not a conflict (nothing is written either).
    server = server_process("--state", state, "--org-policy", str(first))
    server.stop()
    both = _snapshot(tmp_path / "b.yaml", (LOCATIONS, "us-east1"), (OTHER, "asia-east1"))
    server = server_process("--state", state, "--org-policy", str(both))
    assert _allowed(server.address, LOCATIONS) == ["us-east1"]
    assert _allowed(server.address, OTHER) == ["asia-east1"]
    topic = publisher_client(server.address).create_topic(name="projects/proj-beta/topics/orders")
    assert list(topic.message_storage_policy.allowed_persistence_regions) == ["asia-east1"]
    server.stop()


def test_reset_needs_a_file(refused_start: Any, tmp_path: Path) -> None:
    code, err = refused_start("--state", str(tmp_path), "--reset-org-policy")
    assert code == 1 and "--reset-org-policy needs --org-policy FILE" in err


def test_recover_needs_a_state(refused_start: Any) -> None:
    code, err = refused_start("--recover")
    assert code == 1 and "--recover needs --state DIR" in err


def test_a_differing_ancestry_link_is_a_conflict_too(tmp_path: Path) -> None:
    from reconciler.localserver import LocalServer
    from reconciler.localserver.server import SeedConflict
    from reconciler.orgpolicy.store import PolicyStore

    with LocalServer(state_dir=tmp_path) as server:
        server.set_ancestry(P, "folders/1")
    moved = PolicyStore(ancestry={P: "folders/2"})
    expected = f"ancestry of {P} \\(stored: folders/1, seed: folders/2\\)"
    with pytest.raises(SeedConflict, match=expected):
        LocalServer(state_dir=tmp_path, policy_store=moved)
    # The refused start released the directory and changed nothing.
    with LocalServer(state_dir=tmp_path) as server:
        assert server.state.policy_store.ancestry == {P: "folders/1"}
    with LocalServer(state_dir=tmp_path, policy_store=moved, reset_org_policy=True) as server:
        assert server.state.policy_store.ancestry == {P: "folders/2"}


def test_a_seed_that_places_a_placed_project_in_no_organization_is_a_conflict(
    tmp_path: Path,
) -> None:
    """`projects/P: none` (what `policy pull` writes for a project in no organization)
    against a state that places P: a conflict, and with reset P is detached."""
    from reconciler.localserver import LocalServer
    from reconciler.localserver.server import SeedConflict
    from reconciler.orgpolicy.store import PolicyStore

    with LocalServer(state_dir=tmp_path) as server:
        server.set_ancestry(P, "folders/1")
    nowhere = PolicyStore(unparented={P})
    with pytest.raises(SeedConflict, match=f"ancestry of {P} \\(stored: folders/1, seed: none\\)"):
        LocalServer(state_dir=tmp_path, policy_store=nowhere)
    with LocalServer(state_dir=tmp_path, policy_store=nowhere, reset_org_policy=True) as server:
        assert server.state.policy_store.ancestry == {}
    # Nothing placed, nothing to say.
    with LocalServer(state_dir=tmp_path, policy_store=nowhere) as server:
        assert server.state.policy_store.ancestry == {}
