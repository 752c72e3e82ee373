"""`python -m build` makes an sdist and a wheel of the working tree that install into
a fresh virtual environment and work there: `reconcile --version` and `reconcile
validate specs/` (the package data, e.g. the locations table, is inside)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

import reconciler
from tests.gitops.repo_support import git_env, snapshot_of_working_tree


def run(*args: str | Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_sdist_and_wheel_install_into_a_fresh_venv_and_validate(
    tmp_path: Path, local_wheels: dict[str, str]
) -> None:
    env = git_env(tmp_path / "home")
    env.update(local_wheels)  # the dependencies from the session's wheels, not the index
    (tmp_path / "home").mkdir()
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    source = tmp_path / "src"
    source.mkdir()
    snapshot_of_working_tree(source, env)  # builds never write into the checkout

    dist = tmp_path / "dist"
    built = run(sys.executable, "-m", "build", "--outdir", dist, source, cwd=source, env=env)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    version = reconciler.__version__
    # The distribution is pubsub-reconcile (normalised to pubsub_reconcile in file names).
    wheel = dist / f"pubsub_reconcile-{version}-py3-none-any.whl"
    (sdist,) = [p for p in dist.glob(f"pubsub[-_]reconcile-{version}.tar.gz")]
    assert wheel.is_file() and sdist.is_file(), sorted(p.name for p in dist.iterdir())
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert "reconciler/data/locations.yaml" in names
    assert "reconciler/py.typed" in names
    assert not any(n.startswith("tests/") for n in names)
    with tarfile.open(sdist) as tf:
        members = {m.name.split("/", 1)[1] for m in tf.getmembers() if "/" in m.name}
    assert {"pyproject.toml", "README.md", "reconciler/data/locations.yaml"} <= members

    fresh = tmp_path / "venv"
    venv.create(fresh, with_pip=True)
    bindir = fresh / ("Scripts" if os.name == "nt" else "bin")
    installed = run(bindir / "python", "-m", "pip", "install", "-q", wheel, cwd=tmp_path, env=env)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]

    shown = run(bindir / "reconcile", "--version", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == f"reconcile {version}\n"
    listed = run(bindir / "python", "-m", "pip", "show", "pubsub-reconcile", cwd=tmp_path, env=env)
    assert listed.returncode == 0 and f"Version: {version}" in listed.stdout, listed.stderr
    checked = run(bindir / "reconcile", "validate", source / "specs", cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 errors" in checked.stderr
    where = run(bindir / "python", "-c", "import reconciler; print(reconciler.__file__)",
                cwd=tmp_path, env=env)
    assert str(fresh) in where.stdout, where.stdout  # the installed copy, not the checkout

    # The sdist alone (rebuilt into a wheel by pip) installs over it and works too.
    reinstalled = run(bindir / "python", "-m", "pip", "install", "-q", "--no-deps",
                      "--force-reinstall", sdist, cwd=tmp_path, env=env)
    assert reinstalled.returncode == 0, reinstalled.stdout[-3000:] + reinstalled.stderr[-3000:]
    again = run(bindir / "reconcile", "validate", source / "specs", cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
