"""Safe rendering (issue 10, bullet 5): strings from files and from the service
(paths, topic and project names, label keys and values, messages) never change the
structure of the markdown plan and never put a control character in the text plan.

Hypothesis puts arbitrary strings in every such position of one plan; the markdown is
parsed with markdown-it-py (CommonMark plus GFM tables and strikethrough) and its tree
of node types must equal the tree of the same plan with plain strings."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from typing import Any

import click
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.plan.model import Change, Drift, Plan, PlanTarget, ResourceChange
from reconciler.plan.reasons import Reason, ReasonKind
from reconciler.render import diagnostics as report
from reconciler.render.formats import render
from tests.specs_support import location_policy, topic_doc

NASTY = [
    *"`|<>@#*_[]()!\\ -=~&;:$\"'",
    *"\n\r\t\x1b\x00\x07\x7f\x85\x9b\u202e\u2028\u2029\u200b\ufeff",
]
STRINGS = st.text(
    alphabet=st.sampled_from(NASTY) | st.characters(exclude_categories=("Cs",)), max_size=24
)
SLOTS = (
    "project", "topic", "key", "value", "region", "reason", "warning", "file", "code",
    "message", "hint", "drift", "category", "fix", "address", "snapshot",
)
PLAIN = dict.fromkeys(SLOTS, "x")
MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _change(action: str, s: dict[str, str], n: int, **kw: Any) -> ResourceChange:
    labels = {f"k{n}{s['key']}": s["value"], "reconcile-managed": "true"}
    policy = {"allowed_persistence_regions": [s["region"]], "enforce_in_transit": False}
    before = {"labels": {f"old{s['key']}": "1"}, "message_storage_policy": None}
    after = {"labels": labels, "message_storage_policy": policy}
    return ResourceChange(
        address=f"projects/{s['project']}/topics/{s['topic']}{n}",
        project=s["project"],
        topic=s["topic"],
        change=Change(
            [action],  # type: ignore[list-item]
            None if action == "create" else before,
            None if action == "delete" else after,
        ),
        update_mask=["labels", "message_storage_policy"] if action == "update" else [],
        reasons=[Reason(ReasonKind.ADOPT_FROM, s["reason"])],
        warnings=[s["warning"]],
        **kw,
    )


def plan_of(s: dict[str, str]) -> Plan:
    """One plan with every data position filled from `s`."""
    return Plan(
        resource_changes=[_change(a, s, i) for i, a in enumerate(("create", "update", "delete"))],
        diagnostics=[
            Diagnostic(s["file"], 3, 1, Severity.WARNING, s["code"], s["message"], s["hint"]),
            Diagnostic(s["file"], 0, 0, Severity.ERROR, s["code"], s["message"]),
        ],
        drift=[Drift(f"projects/{s['project']}/topics/{s['topic']}", s["category"],
                     s["drift"], s["fix"])],
        target=PlanTarget("emulator", s["address"], "snapshot", s["snapshot"], "0" * 64),
        prune=True,
    )


def shape(node: SyntaxTreeNode) -> Any:
    """The tree of node types (tags for HTML-ish tokens), without any text."""
    tag = "" if node.is_root else node.tag
    return (node.type, tag, [shape(c) for c in node.children])


def md_tree(plan: Plan) -> Any:
    return shape(SyntaxTreeNode(MD.parse(render(plan, "markdown"))))


def controls(text: str) -> list[str]:
    """Control or invisible characters other than the newline."""
    return [
        c for c in text
        if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")
    ]


@functools.cache
def plain_md_tree() -> Any:
    """The plain plan's markdown structure: the same for every example, made once."""
    return md_tree(plan_of(PLAIN))


@functools.cache
def plain_text() -> str:
    return render(plan_of(PLAIN), "text")


def hostile() -> st.SearchStrategy[dict[str, str]]:
    return st.fixed_dictionaries({slot: STRINGS for slot in SLOTS})


@settings(max_examples=300, deadline=None)
@given(hostile())
def test_data_never_changes_the_markdown_structure(s: dict[str, str]) -> None:
    assert md_tree(plan_of(s)) == plain_md_tree()


@settings(max_examples=300, deadline=None)
@given(hostile())
def test_data_never_puts_a_control_character_in_the_text_plan(s: dict[str, str]) -> None:
    plain = plain_text()
    out = render(plan_of(s), "text")
    assert controls(out) == []
    assert out.count("\n") == plain.count("\n")  # no line injected
    coloured = render(plan_of(s), "text", color=True)
    assert controls(re.sub(r"\x1b\[[0-9;]*m", "", coloured)) == []


@settings(max_examples=200, deadline=None)
@given(STRINGS, STRINGS, STRINGS)
def test_diagnostic_lines_are_one_escaped_line_each(file: str, message: str, hint: str) -> None:
    d = Diagnostic(file, 2, 3, Severity.ERROR, "code", message, hint)
    out = report.text([d, d])
    assert controls(out) == [] and out.count("\n") == 2


FENCE_BREAK = "evil.yaml\n```\n# Heading\n@octocat <img src=x onerror=alert(1)>\n| a | b |"


def markdown_with(mutate: Callable[[dict[str, str]], None]) -> str:
    s = dict(PLAIN)
    mutate(s)
    return render(plan_of(s), "markdown")


def test_a_file_name_breaking_out_of_the_fence_stays_inside() -> None:
    out = markdown_with(lambda s: s.update(file=FENCE_BREAK))
    html = MD.render(out)
    assert "<h1>" not in html and "<img" not in html
    # GitHub never mentions inside code; elsewhere a word joiner follows every @.
    outside_code = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", html, flags=re.S)
    assert "@octocat" in out and "@octocat" not in outside_code
    assert md_tree(plan_of({**PLAIN, "file": FENCE_BREAK})) == md_tree(plan_of(PLAIN))


def test_an_at_sign_in_a_message_pings_nobody() -> None:
    out = markdown_with(lambda s: s.update(message="ask @octocat"))
    assert "ask @\u2060octocat" in out


def test_escape_sequences_are_shown_not_sent_to_the_terminal() -> None:
    evil = "\x1b[2J\x1b[32mALL CHECKS PASSED\x1b[0m"
    out = render(plan_of({**PLAIN, "file": evil, "topic": evil}), "text", color=True)
    assert "\\x1b[2J\\x1b[32mALL CHECKS PASSED" in out
    assert "\x1b[2J" not in out and "\x1b[32mALL" not in out
    assert click.unstyle(out).count("\x1b") == 0


# -- through the CLI: file names a user (or a hostile pull request) can choose ----------

EVIL_NAME = "\x1b[2J\x1b[32mALL CHECKS PASSED\x1b[0m\n```\n# Heading @octocat.yaml"
REROUTED = topic_doc(
    "rerouted",
    storage="{allowedPersistenceRegions: [us-central1]}",
    publishers="{regions: [us-east1], messageOrdering: false}",
)


def test_validate_prints_a_hostile_file_name_escaped(run_cli: Any, tmp_path: Any) -> None:
    root = tmp_path / "specs"
    root.mkdir()
    (root / EVIL_NAME).write_text("apiVersion: reconcile.pubsub/v1\nkind: Nope\n")
    result = run_cli("validate", str(root))
    assert result.exit_code == 1
    assert "\x1b" not in result.stdout + result.stderr
    line = next(x for x in result.stdout.splitlines() if "unknown-kind" in x)
    assert "\\x1b[2J\\x1b[32mALL CHECKS PASSED\\x1b[0m\\n```\\n# Heading @octocat.yaml:2:" in line


def test_the_markdown_plan_of_a_hostile_file_name_keeps_its_structure(
    run_cli: Any, local_server: Any, tmp_path: Any
) -> None:
    from reconciler.orgpolicy.model import Policy

    local_server.put_policy(
        Policy.from_dict(location_policy("projects/proj-a", ["in:us-locations"]))
    )
    trees = []
    for name in ("plain.yaml", EVIL_NAME):
        root = tmp_path / f"tree{len(trees)}"
        root.mkdir()
        (root / name).write_text(REROUTED)
        result = run_cli("plan", str(root), "--emulator", local_server.address,
                         "--format", "markdown")
        assert result.exit_code == 0, result.stderr
        trees.append(shape(SyntaxTreeNode(MD.parse(result.stdout))))
        html = MD.render(result.stdout)
        assert "<h1>" not in html
    assert trees[0] == trees[1]


def test_an_error_naming_a_hostile_plan_file_is_escaped(run_cli: Any, tmp_path: Any) -> None:
    path = tmp_path / "\x1b[2Jplan\x07.json"
    path.write_text("{not json")
    result = run_cli("show", str(path))
    assert result.exit_code == 1
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "\\x1b[2Jplan\\x07.json:1:2: not a plan file (invalid JSON" in result.stderr


MARKER = "<!-- reconcile-digest p sha256:" + "b" * 64 + " 9 -->"


def test_no_data_opens_an_html_comment_in_the_markdown_plan() -> None:
    """Issue 39: the markdown plan goes into CI comments, where `<!--` from a path (or
    any other data) could hide what follows or pose as a marker the merge reads."""
    for slot in SLOTS:
        if slot in ("category", "fix"):
            continue  # not shown: a drift's category is said in words, its fix once for all
        out = markdown_with(lambda s, slot=slot: s.update({slot: f"x {MARKER} <!--"}))
        assert "<!--" not in out, slot
        assert "<\u2060!-- reconcile-digest" in out, slot  # shown, broken by a word joiner
