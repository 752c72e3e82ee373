"""Find every `reconcile ...` command in the CI and pre-commit example files and parse
it with the real click command tree, so that an example can never name a verb or an
option the CLI does not have (or give one a value of the wrong type)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import yaml

ROOT = Path(__file__).parents[2]
WORKFLOWS = (
    ROOT / "examples" / "github" / "reconcile.yml",
    ROOT / "examples" / "gitlab" / ".gitlab-ci.yml",
)
PRE_COMMIT_EXAMPLE = ROOT / "examples" / "pre-commit-config.yaml"

# Values that stand in for CI expressions and shell variables, by what they name.
DIGEST = "sha256:" + "0" * 64
_EXPR = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}|\$\{(\w+)\}|\$(\w+)")
_SHELL_STOP = {"|", "||", "&&", ";", ">", ">>", "2>", "<", "&", "2>&1", ")", "("}


@dataclass(frozen=True)
class CommandLine:
    file: Path
    line: int  # 1-based line of the file where the command starts
    text: str

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def _stand_in(match: re.Match[str]) -> str:
    name = (match.group(1) or match.group(2) or match.group(3) or "").lower()
    if "digest" in name:
        return DIGEST
    if "project" in name:
        return "acme-payments"
    if "specs" in name:
        return "specs/"
    return "placeholder"


def command_lines(path: Path) -> Iterator[CommandLine]:
    """Every line (continuations joined) whose first word is `reconcile`."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        start = i
        text = lines[i].strip()
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i].strip()
        i += 1
        text = re.sub(r"^(-\s+)?(run:\s*)?", "", text)
        if text.startswith("reconcile "):
            yield CommandLine(path, start + 1, text)


def argv(text: str) -> list[str]:
    """The arguments after `reconcile`, CI expressions replaced, shell plumbing cut."""
    lexer = shlex.shlex(_EXPR.sub(_stand_in, text), posix=True, punctuation_chars="|&;<>()")
    lexer.whitespace_split = True
    words: list[str] = []
    for word in lexer:
        if word in _SHELL_STOP or word.startswith((">", "<", "|", "&", ";")):
            if word.startswith((">", "<")) and words and words[-1].isdigit():
                words.pop()  # the `2` of `2>&1`
            break
        words.append(word)
    assert words[0] == "reconcile"
    return words[1:]


def parse(args: list[str]) -> click.Context:
    """Build the context of the (sub)command as `reconcile ARGS` would; raises click's
    own UsageError (NoSuchOption, BadParameter, MissingParameter...) when it cannot."""
    from reconciler.clickapp import cli

    ctx = cli.make_context("reconcile", list(args))
    command: Any = cli
    rest = _remaining(ctx)
    while isinstance(command, click.Group) and rest:
        name, sub, rest = command.resolve_command(ctx, rest)
        assert sub is not None and name is not None
        ctx = sub.make_context(name, rest, parent=ctx)
        command, rest = sub, _remaining(ctx)
    return ctx


def _remaining(ctx: click.Context) -> list[str]:
    """What a group left for its subcommand (click 8.2 moved it off `protected_args`)."""
    protected = getattr(ctx, "_protected_args", None)
    if protected is None:
        protected = ctx.protected_args
    return [*protected, *ctx.args]


def describe(exc: click.UsageError) -> str:
    """click's own message, the option named (as a user would see it)."""
    return exc.format_message()


def pre_commit_hook_lines() -> Iterator[CommandLine]:
    """The hook's entry from .pre-commit-hooks.yaml with each example's `args:`."""
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    text = PRE_COMMIT_EXAMPLE.read_text()
    config = yaml.safe_load(text)
    for repo in config["repos"]:
        for hook in repo["hooks"]:
            entry = hooks[hook["id"]]["entry"]
            line = next(
                (n for n, raw in enumerate(text.splitlines(), 1) if hook["id"] in raw), 1
            )
            words = [entry, *(shlex.quote(a) for a in hook.get("args", []))]
            yield CommandLine(PRE_COMMIT_EXAMPLE, line, " ".join(words))
