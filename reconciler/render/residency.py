"""The residency report for people (text), for a PR or a scheduled report (markdown)
and for machines (JSON: the report object itself, docs/residency.schema.json), all
from the same ResidencyReport."""

from __future__ import annotations

from reconciler.adoption import by_project, import_command
from reconciler.backlogs import Backlog, backlog_text, copies_text, distinct_text
from reconciler.render.escape import md_code, md_prose
from reconciler.render.escape import text as esc
from reconciler.residency.model import (
    DataPathRecord,
    RegionStore,
    ResidencyReport,
    TopicResidency,
)
from reconciler.spec.durations import age_text as duration

RULE_TEXT = {"live": "live policy", "declared": "declared policy", "org": "org policy"}
# Past this many, the topics with nothing stored (and nothing to say) are counted, not
# listed one by one, in text and markdown (JSON lists every topic).
QUIET_LISTED = 20


def _quiet(t: TopicResidency) -> bool:
    """Nothing stored, nothing paused, nothing unknown: nothing to show but the name."""
    return (t.exists and not t.regions and not t.paused_exports and not t.unknown
            and not t.paths)


def _shown(report: ResidencyReport) -> tuple[list[TopicResidency], int]:
    """The topics to show one by one, and how many quiet ones are counted instead."""
    quiet = sum(1 for t in report.topics if _quiet(t))
    if quiet <= QUIET_LISTED:
        return list(report.topics), 0
    return [t for t in report.topics if not _quiet(t)], quiet


def _quiet_line(quiet: int) -> str:
    return f"{_topics(quiet)} with nothing stored (--format json lists every topic)"


def _size(value: int | None) -> str:
    return "unknown" if value is None else f"{value} B"


def _topics(n: int) -> str:
    return f"{n} topic" if n == 1 else f"{n} topics"


def summary(report: ResidencyReport) -> str:
    """One line; never "nothing stored outside" while a topic could not be checked."""
    outside = sum(1 for t in report.topics if t.outside)
    paused = sum(len(t.paused_exports) for t in report.topics)
    unchecked = report.unchecked
    topics = _topics(len(report.topics))
    if outside or paused:
        head = (f"{topics}: {outside} with messages stored outside the allowed regions, "
                f"{paused} paused exports")
        if unchecked:
            head += f"; {unchecked} could not be checked (figures unknown: see notes)"
    elif unchecked:
        head = (f"{topics}: none found storing messages outside the allowed regions or "
                f"with an export paused, but {unchecked} could not be checked (figures "
                "unknown: see notes)")
    else:
        head = f"{topics}: nothing stored outside the allowed regions, no export paused"
    return head + "."


def _backlogs(r: RegionStore) -> list[Backlog] | None:
    """The region's per-subscription backlogs as the shared wording takes them."""
    if r.backlogs is None:
        return None
    out = []
    for b in r.backlogs:
        if b.unacked_messages:
            out.append(Backlog(b.subscription, b.unacked_messages, b.unacked_bytes,
                               b.oldest_unacked_age_seconds))
        if b.retained_acked_messages:
            out.append(Backlog(b.subscription, b.retained_acked_messages,
                               b.retained_acked_bytes, b.oldest_retained_acked_age_seconds,
                               acknowledged=True))
    return out


def _region_lines(r: RegionStore) -> list[str]:
    """The topic gauges' figures said as copies in subscription backlogs, each backlog,
    and for a region not allowed, what clears it."""
    found = _backlogs(r)
    unacked = None if found is None else [b for b in found if not b.acknowledged]
    acked = None if found is None else [b for b in found if b.acknowledged]
    parts = []
    if r.unacked_messages or not r.retained_acked_messages:
        head = copies_text(r.unacked_messages, r.unacked_bytes, unacked)
        head += f", oldest {duration(r.oldest_unacked_age_seconds)}"
        if unacked:
            head += f": {distinct_text(unacked)}"
        parts.append(head)
    if r.retained_acked_messages:
        parts.append(
            copies_text(r.retained_acked_messages, r.retained_acked_bytes, acked,
                        "retained acknowledged")
            + f", oldest {duration(r.oldest_retained_acked_age_seconds)}"
        )
    line = f"{r.region}: " + "; ".join(parts)
    if r.not_allowed_by:
        rules = ", ".join(RULE_TEXT[x] for x in r.not_allowed_by)
        line += f"  NOT ALLOWED by the {rules}"
    out = [line]
    out += [f"  {backlog_text(b)}" for b in found or ()]
    if r.clears:
        out.append(f"  {r.clears}")
    return out


def _topic_text(t: TopicResidency) -> list[str]:
    mark = "!" if t.has_findings else "?" if t.unchecked else " "
    subs = f"{t.subscriptions} subscription" + ("" if t.subscriptions == 1 else "s")
    if t.subscriptions is None:
        subs = "subscriptions unknown"
    if not t.exists:
        return [f"{mark} {esc(t.address)}: does not exist ({subs})"]
    undeclared = "" if t.declared else ", not declared by any spec"
    out = [f"{mark} {esc(t.address)} ({subs}{undeclared})"]
    if not t.regions and not t.unknown:
        out.append("    nothing stored")
    out += [f"    {esc(line)}" for r in t.regions for line in _region_lines(r)]
    out += [
        f"    export {esc(p.name)} ({p.kind}) paused: {esc(p.state)}" for p in t.paused_exports
    ]
    out += [f"    unknown: {esc(u)}" for u in t.unknown]
    if t.paths:
        out.append("    message data also goes:")
        out += [f"      {path_text(p)}" for p in t.paths]
    return out


_DIRECTION = {"model": "sent to", "source": "taken from", "export": "written by"}


def path_text(p: DataPathRecord, code: bool = False) -> str:
    """`sent to messageTransforms[0] AI Inference in us-central1: ENDPOINT`; `code`:
    markdown (each piece of data as code), else a terminal's escaping."""
    def show(value: str) -> str:
        return md_code(value) if code else esc(value)

    where = (f" in {show(p.location)}" if p.location is not None
             else " (destination location not in the Pub/Sub API)" if p.kind == "export"
             else " (location not known)")
    state = f" [{show(p.state)}]" if p.state else ""
    return f"{_DIRECTION[p.kind]} {show(p.what)}{where}{state}: {show(p.detail)}"


def _heading(report: ResidencyReport) -> str:
    live = sum(1 for t in report.topics if not t.declared)
    if not live:
        return f"Residency of {_topics(len(report.topics))} declared"
    return (f"Residency of {_topics(len(report.topics))} ({len(report.topics) - live} "
            f"declared, {live} live that no spec declares)")


def undeclared_note(report: ResidencyReport) -> str | None:
    """The live topics no spec declares, and the command that adopts them."""
    names = report.undeclared
    if not names:
        return None
    shown = any(not t.declared for t in report.topics)
    where = ("reported above" if shown
             else "not reported: --all-live reports where their messages are stored")
    commands = "; ".join(f"`{import_command(p, found)}`"
                         for p, found in by_project(names).items())
    return (f"{len(names)} live topic{'s' if len(names) != 1 else ''} of the managed projects "
            f"that no spec declares ({where}): {', '.join(names)}; adopt them with {commands}")


def text(report: ResidencyReport) -> str:
    lines = [f"{_heading(report)} on {esc(report.target)}", ""]
    shown, quiet = _shown(report)
    for t in shown:
        lines += _topic_text(t)
    if quiet:
        lines.append(f"  {_quiet_line(quiet)}")
    note = undeclared_note(report)
    notes = [*report.notes, *([note] if note else [])]
    if notes:
        lines += ["", "Notes:"] + [f"  {esc(n)}" for n in notes]
    lines += ["", summary(report)]
    return "\n".join(lines) + "\n"


def markdown(report: ResidencyReport) -> str:
    lines = [f"### Residency: {md_prose(summary(report))}", ""]
    lines += [
        "| Topic | Region | Unacked copies | Bytes | Oldest | Held by (subscription backlogs) "
        "| Retained acked copies | Not allowed by | Ages out within |",
        "|---|---|---:|---:|---|---|---:|---|---|",
    ]
    shown, quiet = _shown(report)
    for t in shown:
        name = md_code(t.address, in_table=True)
        if not t.regions:
            what = "does not exist" if not t.exists else (
                "unknown" if t.unknown else "nothing stored")
            lines.append(f"| {name} | {what} | | | | | | | |")
        for r in t.regions:
            rules = ", ".join(RULE_TEXT[x] for x in r.not_allowed_by) or "—"
            age = duration(r.ages_out_within_seconds) if r.not_allowed_by else "—"
            held = "unknown" if r.backlogs is None else ", ".join(
                f"{md_code(b.subscription, in_table=True)} "
                f"{b.unacked_messages + b.retained_acked_messages}"
                for b in r.backlogs) or "—"
            lines.append(
                f"| {name} | {md_code(r.region, in_table=True)} | {r.unacked_messages} | "
                f"{_size(r.unacked_bytes)} | {duration(r.oldest_unacked_age_seconds)} | "
                f"{held} | {r.retained_acked_messages} | {rules} | {age} |"
            )
    if quiet:
        lines.append(f"| {md_prose(_quiet_line(quiet))} | | | | | | | | |")
    clearing = [(t, r) for t in report.topics for r in t.regions if r.clears]
    if clearing:
        lines += ["", "**To clear** (the copies counted are per subscription backlog, not "
                  "distinct messages)", ""]
        lines += [f"- {md_code(t.address)}: {md_prose(r.clears or '')}" for t, r in clearing]
    paused = [(t, p) for t in report.topics for p in t.paused_exports]
    if paused:
        lines += ["", "**Paused exports**", ""]
        lines += [
            f"- {md_code(p.name)} ({p.kind}) on {md_code(t.address)}: {md_code(p.state)}"
            for t, p in paused
        ]
    paths = [(t, p) for t in report.topics for p in t.paths]
    if paths:
        lines += ["", "**Where message data also goes**", ""]
        lines += [f"- {md_code(t.address)}: {path_text(p, code=True)}" for t, p in paths]
    unknown = [(t, u) for t in report.topics for u in t.unknown]
    if report.notes or unknown:
        lines += ["", "**Unknown**", ""]
        lines += [f"- {md_prose(n)}" for n in report.notes]
    note = undeclared_note(report)
    if note:
        lines += ["", "**Not declared**", "", f"- {md_prose(note)}"]
    return "\n".join(lines) + "\n"


def json(report: ResidencyReport) -> str:
    return report.dumps()


def render(report: ResidencyReport, fmt: str) -> str:
    if fmt == "json":
        return json(report)
    if fmt == "markdown":
        return markdown(report)
    return text(report)
