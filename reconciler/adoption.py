"""Live topics no spec declares, and the command that adopts them: the words `plan`
and `residency` share when they name topics made outside review (a console, gcloud,
another tool). `reconcile import` writes DIR/<project>.yaml, so the command names a
directory of its own, from which the documents are moved into the spec tree."""

from __future__ import annotations

from collections.abc import Sequence

ADOPT_DIR = "imported"


def topic_id(name: str) -> str:
    """T of projects/P/topics/T."""
    return name.rsplit("/", 1)[-1]


def import_command(project: str, names: Sequence[str]) -> str:
    """`reconcile import` of these topics (projects/P/topics/T) of `project`."""
    topics = " ".join(f"--topic {topic_id(n)}" for n in sorted(names))
    return f"reconcile import --project {project} {topics} --out {ADOPT_DIR}"


def by_project(names: Sequence[str]) -> dict[str, list[str]]:
    """projects/P/topics/T names grouped by P, each group sorted."""
    out: dict[str, list[str]] = {}
    for name in sorted(names):
        out.setdefault(name.split("/")[1], []).append(name)
    return out
