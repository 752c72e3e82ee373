"""The package's shape, checked on its import graph and its source (CI runs these with
the suite; `lint-imports` checks the contracts in pyproject.toml):

- no import cycle between two modules anywhere in reconciler/, a package's own
  __init__ included (the `acyclic_siblings` contract in pyproject.toml adds the
  packages: `plan` importing `render` and `render` importing `plan` is a cycle too);
- the libraries (spec, orgpolicy, plan, apply, render) never print, prompt, write to
  or read from the terminal, exit, or use click: they return values and strings, and
  the commands write them through reconciler/commands/output.py;
- no module runs text as code (`exec`, `eval`, `compile`);
- every function-level import sits in a module that reconciler/perf.py's
  DEFERRED_IMPORTS lists with its reason, and that list names no module without one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import grimp

from reconciler.perf import DEFERRED_IMPORTS

PACKAGE = Path(__file__).parents[1] / "reconciler"
LIBRARIES = ("spec", "orgpolicy", "plan", "apply", "render", "residency")


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("reconciler", cache_dir=None)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a -> b -> ... -> a) for each strongly connected component of more
    than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
    return [_one_cycle(edges, component) for component in components]


def _one_cycle(edges: dict[str, set[str]], component: set[str]) -> list[str]:
    """The shortest way from the component's first node back to itself."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(edges.get(node, ()) & component):
                if child == start:
                    return [*paths[node], start]
                if child not in paths:
                    paths[child] = [*paths[node], child]
                    nxt.append(child)
        frontier = nxt
    raise AssertionError(f"no cycle through {start}")  # a component always has one


def _module_edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    return {
        m: {i for i in graph.find_modules_directly_imported_by(m) if i in graph.modules}
        for m in graph.modules
    }


def test_no_import_cycle_between_modules() -> None:
    cycles = _cycles(_module_edges(_graph()))
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_cycle_check_finds_a_cycle() -> None:
    modules = {
        "reconciler.localserver": {"reconciler.localserver.server"},
        "reconciler.localserver.server": {"reconciler.localserver.api.rpc"},
        "reconciler.localserver.api.rpc": {"reconciler.localserver"},
        "reconciler.cli": {"reconciler.clickapp"},
        "reconciler.clickapp": {"reconciler.cli", "reconciler.errors"},
        "reconciler.errors": set(),
    }
    assert sorted(_cycles(modules)) == [
        ["reconciler.cli", "reconciler.clickapp", "reconciler.cli"],
        [
            "reconciler.localserver", "reconciler.localserver.server",
            "reconciler.localserver.api.rpc", "reconciler.localserver",
        ],
    ]


# --- the libraries never write, prompt, exit or use click --------------------------

FORBIDDEN_CALLS = {"print", "input", "breakpoint", "exit", "quit"}
FORBIDDEN_ATTRIBUTES = {("sys", "stdout"), ("sys", "stderr"), ("sys", "stdin"), ("sys", "exit")}


def _main_guard(node: ast.AST) -> bool:
    """`if __name__ == "__main__":`: a module's own program (run with `python -m` by a
    developer or as the read-ahead's child), never part of what the CLI calls."""
    return isinstance(node, ast.If) and ast.unparse(node.test).replace("'", '"') == (
        '__name__ == "__main__"'
    )


def _nodes_outside_main(tree: ast.Module) -> Iterator[ast.AST]:
    for top in tree.body:
        if not _main_guard(top):
            yield from ast.walk(top)


def library_output(path: Path) -> list[str]:
    """Every print, prompt, terminal stream, exit or click use in one module, in the
    order of its lines."""
    found: list[tuple[int, str]] = []
    for node in _nodes_outside_main(ast.parse(path.read_text(), str(path))):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in FORBIDDEN_CALLS:
                found.append((line, f"{node.func.id}()"))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in FORBIDDEN_ATTRIBUTES:
                found.append((line, f"{node.value.id}.{node.attr}"))
        elif isinstance(node, ast.Import):
            found += [(line, f"import {a.name}") for a in node.names if _is_click(a.name)]
        elif isinstance(node, ast.ImportFrom):
            if _is_click(node.module or ""):
                found.append((line, f"from {node.module} import ..."))
            elif node.module == "sys":
                names = {a.name for a in node.names} & {"stdout", "stderr", "stdin", "exit"}
                found += [(line, f"from sys import {n}") for n in sorted(names)]
    return [f"{path.name}:{line}: {what}" for line, what in sorted(found)]


def _is_click(module: str) -> bool:
    return module == "click" or module.startswith("click.")


def test_the_libraries_never_write_prompt_or_exit() -> None:
    found = [
        f"{path.parent.relative_to(PACKAGE.parent)}/{line}"
        for library in LIBRARIES
        for path in sorted((PACKAGE / library).rglob("*.py"))
        for line in library_output(path)
    ]
    assert not found, "output outside reconciler/commands:\n" + "\n".join(found)


def test_the_output_check_finds_each_kind(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\nimport click\nfrom sys import stderr\n"
        "def f(x):\n    print(x)\n    input('?')\n    sys.stdout.write(x)\n"
        "    sys.stderr.write(x)\n    sys.exit(1)\n"
        "if __name__ == '__main__':\n    print('a program of its own')\n"
    )
    assert [line.split(": ", 1)[1] for line in library_output(probe)] == [
        "import click", "from sys import stderr", "print()", "input()", "sys.stdout",
        "sys.stderr", "sys.exit",
    ]


# --- no code is made from text at run time -------------------------------------------

RUNS_TEXT = {"exec", "eval", "compile"}  # the builtins that turn text into code


def code_from_text(path: Path) -> list[str]:
    """Every call of a builtin that runs text as code, in one module."""
    return [
        f"{path.name}:{node.lineno}: {node.func.id}()"
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        and node.func.id in RUNS_TEXT
    ]


def test_no_code_is_made_from_text_anywhere_in_the_package() -> None:
    found = [line for path in sorted(PACKAGE.rglob("*.py")) for line in code_from_text(path)]
    assert not found, "exec/eval/compile under reconciler/:\n" + "\n".join(found)


def test_the_code_from_text_check_finds_each_kind(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "exec('x = 1')\nvalue = eval('1')\ncode = compile('1', 'f', 'eval')\n"
        "program.eval(data={})\nre.compile('x')\n"
    )
    assert [line.split(": ", 1)[1] for line in code_from_text(probe)] == [
        "exec()", "eval()", "compile()",
    ]


# --- deferred imports are few, and each is justified in reconciler/perf.py ---------


def _function_level_imports() -> dict[str, list[str]]:
    """Module name -> the imports made inside its functions (TYPE_CHECKING excluded)."""
    out: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Import | ast.ImportFrom):
                        out.setdefault(module, []).append(f"{inner.lineno}: {ast.unparse(inner)}")
    return out


def test_every_deferred_import_is_listed_with_its_reason() -> None:
    found = _function_level_imports()
    unlisted = {m: lines for m, lines in found.items() if m not in DEFERRED_IMPORTS}
    assert not unlisted, (
        "function-level imports in modules reconciler/perf.py's DEFERRED_IMPORTS does not "
        f"list (import at the top, or add the module with its reason): {unlisted}"
    )
    stale = sorted(set(DEFERRED_IMPORTS) - set(found))
    assert not stale, f"DEFERRED_IMPORTS lists modules without a deferred import: {stale}"
