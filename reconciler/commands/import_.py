"""`reconcile import --project P... --out DIR`: write specs that reproduce the live
topics, one file per project (`DIR/<project>.yaml`).

Nothing is written unless every target file is new (or `--force`), so a refusal never
leaves half an import behind; usage errors are raised before any call to the service;
a --topic that matches no live topic is an error and nothing is written. The files
are created as any file the user makes (their umask decides the mode). Values every
imported topic shares go into one Defaults document when DIR holds no other specs
(a Defaults document applies to its whole directory). A Defaults document already
applying to DIR is taken into account: each topic is written so that it keeps its
live values under it, and where a spec cannot refuse an inherited value (a label the
topic lacks, a retention, key or schema it does not have) the import is refused,
naming the document's line, the value and the topics, and nothing is written.
Every live value is written as it is, those the org policy would refuse on a new
topic included, each marked with the finding the plan will raise on it
(importer.py `mark_findings`). A topic another tool labels as its own (Terraform,
Config Connector) is imported with a warning and a comment saying to hand it over
first (docs/adoption.md), its label left to that tool.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from reconciler.backends.base import TargetOptions
from reconciler.commands import output
from reconciler.commands._options import project_ids, server_options
from reconciler.errors import EXIT_OK, BackendError, InputError, UsageError
from reconciler.fileio import write_atomically
from reconciler.importer import (
    existing_profiles,
    header,
    mark_findings,
    missing_topics,
    other_specs,
    other_tools_notices,
    read_live,
    refused_adoption_notices,
    select,
    standing_findings,
)
from reconciler.spec.export import build_documents, render_documents
from reconciler.spec.inherited import inherited_values


@click.command("import")
@click.option(
    "--project",
    "projects",
    multiple=True,
    required=True,
    metavar="P",
    help="Project to import (repeatable); writes DIR/<project>.yaml.",
    callback=project_ids,
)
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="T",
    help="Only this topic (ID or projects/P/topics/T; repeatable).",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Directory to write the spec files into.",
)
@click.option("--force", is_flag=True, help="Overwrite spec files that already exist.")
@server_options
def command(
    projects: tuple[str, ...],
    topics: tuple[str, ...],
    out_dir: Path,
    force: bool,
    local: bool,
    emulator: str | None,
    timeout: float,
) -> int:
    """Write specs that reproduce the live topics of --project P into DIR."""
    return run(projects, topics, out_dir, force, TargetOptions(local, emulator, None, timeout))


def run(
    projects: tuple[str, ...],
    topics: tuple[str, ...],
    out_dir: Path,
    force: bool,
    target: TargetOptions,
) -> int:
    """Read the live topics of `projects` and write one spec file per project."""
    names = list(dict.fromkeys(projects))
    files = {p: out_dir / f"{p}.yaml" for p in names}
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out {out_dir} exists and is not a directory")
    if not out_dir.exists() and out_dir.suffix.lower() in (".yaml", ".yml"):
        raise UsageError(
            f"--out {out_dir} looks like a file name, and --out is the directory that "
            "receives one file per project (PROJECT.yaml); nothing was written",
            hint=f"pass a directory, e.g. --out {out_dir.parent / 'specs'}"
            if out_dir.parent != out_dir else "pass a directory, e.g. --out specs",
        )
    clash = [str(path) for path in files.values() if path.exists()]
    if clash and not force:
        raise UsageError(
            f"refusing to overwrite {', '.join(clash)}",
            hint="pass --force to replace them, or choose another --out directory",
        )
    read = read_live(target, names)
    live, source = read.topics, read.source
    missing = missing_topics(names, live, topics)
    if missing:
        raise BackendError(
            f"no such topic in {', '.join(names)}: {', '.join(missing)}; nothing written",
            hint="list the topics with `gcloud pubsub topics list --project P`",
        )
    chosen = {p: select(p, live[p], topics) for p in names}
    skip = {path.resolve() for path in files.values()}
    around = other_specs(out_dir, skip)
    if around.unreadable:
        shown = around.unreadable[:5]
        more = len(around.unreadable) - len(shown)
        raise InputError(
            f"cannot import into {out_dir}: specs already there or above it have errors, "
            "and a Defaults document or hedging profile the imported topics would take "
            "may be among what could not be read; nothing written\n"
            + "\n".join(f"  {d.render()}" for d in shown)
            + (f"\n  and {more} more" if more else ""),
            hint="fix the files named above (`reconcile validate FILE` lists each "
            "problem), then import again, or import into another --out directory",
        )
    result = build_documents(
        chosen, existing_profiles(around.tree), read.computed, defaults=not around.inside,
        inherited=inherited_values(around.defaults_chain(out_dir)),
    )
    if result.conflicts:
        raise InputError(
            f"cannot import into {out_dir}: a Defaults document that applies there would "
            "give the imported topics values their live topics do not have, and a spec "
            "cannot leave out an inherited label or setting; nothing written\n"
            + "\n".join(f"  {c.message()}" for c in result.conflicts),
            hint="import into a directory that document does not apply to (an --out "
            "outside its directory), or import these projects together with the one(s) "
            "already there (`--project A --project B --force` rewrites their files and "
            "factors only what every topic shares), or move the value from the Defaults "
            "document onto its topics",
        )
    marks = standing_findings(chosen, read.facts, read.computed, read.custom)
    tools = other_tools_notices(chosen, result.notes)
    tools += refused_adoption_notices(chosen, read.custom, result.notes)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for warning in [*read.warnings, *result.warnings, *tools]:
        output.stderr().line(f"warning: {warning}")
    for project in names:
        docs = result.documents.get(project, [])
        count = sum(1 for d in docs if d["kind"] == "Topic")
        if not count:
            output.stderr().line(f"project {project}: no topics to import; nothing written")
            continue
        text = render_documents(
            docs, header(source, stamp, project, count), result.notes.get(project)
        )
        text = mark_findings(text, marks.get(project, {}))
        write_atomically(files[project], text, "spec file", umask=True)
        output.stderr().line(f"wrote {files[project]} ({count} topic(s))")
    return EXIT_OK
