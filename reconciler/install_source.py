"""Where this reconcile was installed from, as the pip requirement a CI job installs
the same code with (`reconcile ci checklist`; the CI variable RECONCILE_PIP_SPEC).

    install_spec() -> InstallSource

From the installed distribution's `direct_url.json` (PEP 610, written by pip):
- installed from a git URL: that URL at the commit pip resolved;
- installed from a local checkout (`pip install -e .`, the README's way): the
  checkout's `origin` remote at its HEAD commit, when the checkout is clean and HEAD
  is on a remote branch (a commit that exists only here cannot be installed in CI);
- installed from a package index: the version, pinned with `==`.
A requirement always names the distribution `pubsub-reconcile` (`reconcile` on the
package index is someone else's). Only `git` is run (rev-parse, remote, status,
branch), in the checkout, never anything it names.
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
        return InstallSource(f"{DISTRIBUTION} @ git+{url}@{vcs['commit_id']}")
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
    return InstallSource(f"{DISTRIBUTION} @ git+{https_url(remote)}@{commit}")


def https_url(remote: str) -> str:
    """An scp-like or ssh:// remote as the https URL a CI job reaches it by (no user)."""
    scp = re.fullmatch(r"(?:[\w.-]+@)?([\w.-]+):(?!//)(.+)", remote)
    if scp:
        return f"https://{scp.group(1)}/{scp.group(2)}"
    parsed = urlparse(remote)
    if parsed.scheme in ("ssh", "git", "http", "https") and parsed.hostname:
        return f"https://{parsed.hostname}{parsed.path}"
    return remote
