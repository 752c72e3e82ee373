"""The command blocks of README.md and docs/*.md, read and run as a reader would
(tests/docs/test_doc_blocks.py; the convention is in docs/development.md).

A fenced block labelled `console` is a transcript: each `$ ` line is a command (a
line ending in `\\` continues it) and the lines up to the next `$ ` are its output,
stdout and stderr together; in that output a line `...` stands for any lines and
`...` within a line for any text. A block labelled `sh` (or `shell`, `bash`) holds
commands whose output is not shown. Every command must exit 0, or the code its
trailing comment states (`# exit 1`).

An HTML comment right before a block says how it runs:

    <!-- doc-test: skip REASON -->   not run here, and why (e.g. needs Google Cloud)
    <!-- doc-test: emulator -->      commands written for Google Cloud run against
                                     a fresh local server (PUBSUB_EMULATOR_HOST)
    <!-- doc-test: installed -->     the block's install steps (python3 -m venv,
                                     pip install, activate) are done: run the rest
    <!-- doc-test: file PATH -->     (before any block) write the block into PATH

Blocks run in page order in one sandbox per page: a copy of the repository's
`specs/` and `examples/` in a fresh directory that is a repository root (`.git`),
with `reconcile` and `python` (this interpreter: the installed virtualenv's, as
`.venv/bin/python` is under `installed`) on PATH.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt

from tests.cli_support import clean_env

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = ("sh", "shell", "bash")
COPIED = ("specs", "examples")
GUARD_SECONDS = 600  # a hung command fails its page instead of the suite

_DIRECTIVE = re.compile(r"^<!--\s*doc-test:\s*(?P<word>[a-z]+)\s*(?P<arg>.*?)\s*-->\s*$")
_EXIT = re.compile(r"\s#\s*exit\s+(?P<code>\d+)\s*$")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(?P<word>[A-Za-z_]+)\1")
_INSTALL = re.compile(
    r"^(python3? -m venv \S+|(\S+/)?pip3? install .*|\.\s+\S*activate|source\s+\S*activate)$"
)


@dataclass
class Command:
    text: str
    line: int  # in the page, 1-based
    exit_code: int = 0
    output: str | None = None  # console: the transcript's lines; sh: not checked


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    info: str
    content: str
    directives: dict[str, str] = field(default_factory=dict)
    commands: list[Command] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def is_shell(self) -> bool:
        return self.info in SHELL or self.info == "console"

    @property
    def runs(self) -> bool:
        return "skip" not in self.directives and (self.is_shell or "file" in self.directives)


class DocTestError(AssertionError):
    pass


def blocks(page: Path) -> list[Block]:
    """Every fenced block of the page with the directives just before it."""
    tokens = MarkdownIt("commonmark").parse(page.read_text())
    found: list[Block] = []
    pending: dict[str, str] = {}
    for token in tokens:
        matched = _DIRECTIVE.match(token.content.strip()) if token.type == "html_block" else None
        if matched:  # applies to the block right after it
            pending[matched["word"]] = matched["arg"]
            continue
        if token.type == "fence" and token.map is not None:
            block = Block(page, token.map[0] + 1, token.info.strip(), token.content, pending)
            if block.is_shell:
                block.commands = _commands(block)
            found.append(block)
        pending = {}
    return found


def problems(page: Path) -> list[str]:
    """What breaks the convention: unknown or empty directives, command examples that
    the test cannot see (an indented block, a fence without a label)."""
    found = []
    tokens = MarkdownIt("commonmark").parse(page.read_text())
    rel = page.relative_to(ROOT)
    for token in tokens:
        line = (token.map[0] + 1) if token.map else 0
        if token.type == "html_block" and "doc-test" in token.content:
            matched = _DIRECTIVE.match(token.content.strip())
            if not matched or matched["word"] not in ("skip", "emulator", "installed", "file"):
                found.append(f"{rel}:{line}: unknown doc-test directive {token.content.strip()!r}")
            elif matched["word"] in ("skip", "file") and not matched["arg"]:
                found.append(f"{rel}:{line}: doc-test {matched['word']} needs its argument")
        unlabeled = token.type == "code_block" or (token.type == "fence" and not token.info)
        if unlabeled and any(
            ln.startswith(("reconcile ", "$ ")) for ln in token.content.splitlines()
        ):
            found.append(
                f"{rel}:{line}: a command example the docs test cannot see: fence it as "
                "```sh or ```console (run), or ```text (a synopsis)"
            )
    for block in blocks(page):
        if block.is_shell and "skip" not in block.directives and not block.commands:
            found.append(f"{block.where}: a {block.info} block without a command")
    return found


def _commands(block: Block) -> list[Command]:
    lines = block.content.splitlines()
    commands: list[Command] = []
    i = 0
    console = block.info == "console"
    while i < len(lines):
        raw = lines[i]
        if console and not raw.startswith("$ "):
            if not commands:
                raise DocTestError(f"{block.where}: a console block starts with a `$ ` command")
            assert commands[-1].output is not None
            commands[-1].output += raw + "\n"
            i += 1
            continue
        text = raw[2:] if console else raw
        start = i
        if not console and (not text.strip() or text.lstrip().startswith("#")):
            i += 1
            continue
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text += "\n" + lines[i]
        heredoc = _HEREDOC.search(text)
        if heredoc:
            while i + 1 < len(lines):
                i += 1
                text += "\n" + lines[i]
                if lines[i].strip() == heredoc["word"]:
                    break
        i += 1
        matched = _EXIT.search(text.splitlines()[0] if heredoc else text)
        code = int(matched["code"]) if matched else 0
        commands.append(
            Command(text, block.line + 1 + start, code, "" if console else None)
        )
    return commands


def _without_install(text: str) -> str:
    """`installed`: drop the install steps of an `a && b && c` line, and the
    virtualenv's bin/ from what is left (the test's environment has it installed)."""
    steps = [s.strip() for s in text.split("&&")]
    kept = [s for s in steps if not _INSTALL.match(s)]
    return " && ".join(re.sub(r"(?<![\w/])\.venv/bin/", "", s) for s in kept) or ":"


def sandbox(tmp: Path) -> tuple[Path, Path]:
    """A fresh repository root with the repository's specs/ and examples/, and a bin
    directory whose `reconcile` and `python` are this interpreter's."""
    repo = tmp / "repo"
    repo.mkdir()
    (repo / ".git").mkdir()
    for name in COPIED:
        shutil.copytree(ROOT / name, repo / name)
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "reconcile"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m reconciler "$@"\n')
    shim.chmod(0o755)
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python.chmod(0o755)
    return repo, bin_dir


def _matches(expected: str, actual: str) -> bool:
    pattern = []
    for line in expected.splitlines():
        if line.strip() in ("...", "…"):
            pattern.append(r"(?:[^\n]*\n)*?")
            continue
        parts = re.split(r"\.\.\.|…", line.rstrip())
        pattern.append(".*?".join(re.escape(p) for p in parts) + r"[ \t]*\n")
    normalised = "".join(f"{ln.rstrip()}\n" for ln in actual.splitlines())
    return re.fullmatch("".join(pattern), normalised) is not None


def run_block(block: Block, repo: Path, bin_dir: Path, emulator: str | None) -> None:
    """Write a `file` block; run a shell block's commands in one bash, each one's exit
    code and output kept apart; raise DocTestError naming the first that disagrees."""
    if "file" in block.directives:
        target = repo / block.directives["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.content)
        return
    results = repo.parent / "results"
    shutil.rmtree(results, ignore_errors=True)
    results.mkdir()
    script = ["set -u", "trap 'kill $(jobs -p) 2>/dev/null' EXIT", f"cd {shlex.quote(str(repo))}"]
    for n, command in enumerate(block.commands):
        text = _without_install(command.text) if "installed" in block.directives else command.text
        out = shlex.quote(str(results / f"{n}.out"))
        script.append(f"{{ {text}\n}} >{out} 2>&1 </dev/null; echo $? >{out}.rc")
    env = {"PATH": f"{bin_dir}:{clean_env()['PATH']}", "COLUMNS": "80", "PYTHONUNBUFFERED": "1"}
    if "emulator" in block.directives and emulator:
        env["PUBSUB_EMULATOR_HOST"] = emulator
    subprocess.run(
        ["bash", "-c", "\n".join(script)], env=clean_env(env), timeout=GUARD_SECONDS, check=False
    )
    for n, command in enumerate(block.commands):
        rc_file = results / f"{n}.out.rc"
        if not rc_file.exists():
            raise DocTestError(f"{block.where}: the block stopped before line {command.line}")
        code = int(rc_file.read_text())
        shown = (results / f"{n}.out").read_text()
        if code != command.exit_code:
            raise DocTestError(
                f"{block.page.relative_to(ROOT)}:{command.line}: `{command.text}` exited "
                f"{code}, the page says {command.exit_code}; it printed:\n{shown}"
            )
        if command.output is not None and not _matches(command.output, shown):
            raise DocTestError(
                f"{block.page.relative_to(ROOT)}:{command.line}: `{command.text}` printed\n"
                f"{shown}\nand the page shows\n{command.output}"
            )
