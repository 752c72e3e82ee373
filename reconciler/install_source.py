"""Where this reconcile was installed from, as the pip requirement a CI job installs
the same code with (`reconcile ci checklist`; the CI variable RECONCILE_PIP_SPEC).

    install_spec() -> InstallSource

From the installed distribution's `direct_url.json` (PEP 610, written by pip):
- installed from a git URL: that URL at the commit pip resolved;
- installed from a local checkout (`pip install -e .`, the README's way): the
  checkout's `origin` remote at its HEAD commit, when the checkout is clean and HEAD
  is on a remote branch (a commit that exists only here cannot be installed in CI);
- installed from a package index: the version, pinned with `==`.
A remote is written as the https URL a CI job reaches it by; one a CI job cannot
reach (a local path, `file://`: an origin on this machine) gives no requirement but
what to fill in instead, never a line pip rejects (`git+/srv/...` is "Invalid
requirement" to pip). A requirement always names the distribution
`pubsub-reconcile` (`reconcile` on the package index is someone else's). Only `git`
is run (rev-parse, remote, status, branch), in the checkout, never anything it names.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

DISTRIBUTION = "pubsub-reconcile"
COMMIT = re.compile(r"[0-9a-f]{40}")
TIMEOUT = 30.0


@dataclass(frozen=True)
class InstallSource:
    """`spec`: the requirement to install, or None with `why` saying what to do."""

    spec: str | None
    why: str = ""


def install_spec() -> InstallSource:
    for dist in importlib.metadata.distributions(name=DISTRIBUTION):
        text = dist.read_text("direct_url.json")
        if text:
            return from_direct_url(json.loads(text))
        return InstallSource(f"{DISTRIBUTION}=={dist.version}")
    return InstallSource(None, f"{DISTRIBUTION} is not installed here")


def from_direct_url(data: dict[str, object]) -> InstallSource:
    url = str(data.get("url", ""))
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") == "git" and COMMIT.fullmatch(
        str(vcs.get("commit_id", ""))
    ):
        reachable = https_url(url)
        if reachable is None:
            return unreachable(url, "installed from", str(vcs["commit_id"]))
        return InstallSource(f"{DISTRIBUTION} @ git+{reachable}@{vcs['commit_id']}")
    parsed = urlparse(url)
    if parsed.scheme == "file" and isinstance(data.get("dir_info"), dict):
        return from_checkout(Path(unquote(parsed.path)))
    return InstallSource(
        None, f"installed from {url or 'an unknown place'}, which a CI job cannot reach"
    )


def from_checkout(checkout: Path) -> InstallSource:
    """The checkout's origin at HEAD, when CI can fetch exactly that commit."""
    git = shutil.which("git")
    if git is None:
        return InstallSource(None, f"installed from the checkout {checkout}; git is not on PATH")

    def run(*args: str) -> str | None:
        try:
            done = subprocess.run(
                [git, "-C", str(checkout), *args], capture_output=True, text=True,
                timeout=TIMEOUT, check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = run("rev-parse", "HEAD")
    remote = run("remote", "get-url", "origin")
    if not commit or not COMMIT.fullmatch(commit):
        return InstallSource(None, f"the checkout {checkout} has no commit")
    if not remote:
        return InstallSource(
            None, f"the checkout {checkout} has no remote `origin` a CI job could install from"
        )
    if run("status", "--porcelain", "--untracked-files=no"):
        return InstallSource(
            None, f"the checkout {checkout} has uncommitted changes: commit and push them, "
            "or name what to install"
        )
    if not run("branch", "--remotes", "--contains", commit):
        return InstallSource(
            None, f"commit {commit[:12]} of {checkout} is on no remote branch: push it first"
        )
    reachable = https_url(remote)
    if reachable is None:
        return unreachable(remote, f"the checkout {checkout} has the origin", commit)
    return InstallSource(f"{DISTRIBUTION} @ git+{reachable}@{commit}")


def unreachable(origin: str, what: str, commit: str) -> InstallSource:
    """No requirement for an origin on this machine: what to pass instead."""
    return InstallSource(
        None,
        f"{what} {origin}, a path on this machine that a CI job cannot reach; pass "
        f"--install '{DISTRIBUTION} @ git+https://HOST/OWNER/REPO@{commit}' with the "
        "https URL CI clones reconcile from",
    )


def https_url(remote: str) -> str | None:
    """An scp-like, ssh://, git:// or http(s):// remote as the https URL a CI job
    reaches it by (no user; an https remote's port kept); None for a local path or a
    file:// URL, which only this machine can reach."""
    parsed = urlparse(remote)
    if parsed.scheme in ("ssh", "git", "http", "https", "git+ssh"):
        if not parsed.hostname:
            return None
        port = f":{parsed.port}" if parsed.scheme == "https" and parsed.port else ""
        return f"https://{parsed.hostname}{port}{parsed.path}"
    if parsed.scheme == "file":
        return None
    # scp-like `[user@]host:path`; not a Windows drive (`C:/...`) nor a relative path.
    scp = re.fullmatch(r"(?:[\w.-]+@)?([\w-][\w.-]+):(?!//)(.+)", remote)
    if scp and "/" not in scp.group(1) and not remote.startswith((".", "/")):
        return f"https://{scp.group(1)}/{scp.group(2).lstrip('/')}"
    return None
