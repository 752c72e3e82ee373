"""Where the CPU of the new topic fields goes (issue 36), counted in instructions, which
the other processes of a shared machine do not disturb: each phase of reading a tree
runs as its own process under valgrind (`cachegrind --cache-sim=no`, total
instructions), on topic_settings.py's trees without and with the fields, at 1,000 and
2,000 topics; the figure is per topic (the difference between the two sizes over
1,000 topics), so start-up and imports drop out.

Phases, each including the ones before it but the first two:
- bare: `yaml.load_all` with libyaml's CSafeLoader (scale.py's bare read);
- compose: libyaml's composer with yamlio's loader (nodes only, no data built);
- load_documents: yamlio's position-less read of every file (what validate reads);
- load_tree: spec/loader.py's load_tree (the records, `shape.py`);
- validate: `python -m reconciler validate TREE` (the checks, the summary);
- plan: `python -m reconciler plan TREE --emulator ADDR` against a local server in
  this process, seeded as topic_settings.py seeds it (below the read-ahead size, the
  live topics are read in the same process).

    python benchmarks/topic_settings_phases.py [--only bare compose ...]
                                               [--set settings|transforms|udf]
    python benchmarks/topic_settings_phases.py --smoke   # each phase's command once on 20
                                                         # topics, without valgrind: that it runs

Needs valgrind; takes a few minutes (each run is ~50x slower under valgrind).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import scale  # noqa: E402
import topic_settings  # noqa: E402

SIZES = (1_000, 2_000)
PHASE = """\
import sys
from pathlib import Path
phase, tree = sys.argv[1], Path(sys.argv[2])
files = sorted(tree.glob("*.yaml"))
if phase == "compose":
    from reconciler.yamlio import _Loader
    for path in files:
        loader = _Loader(path.read_text())
        while loader.check_node():
            loader.get_node()
        loader.dispose()
elif phase == "load_documents":
    from reconciler.yamlio import load_documents
    for path in files:
        load_documents(path, positions=False)
elif phase == "load_tree":
    from reconciler.diagnostics import Diagnostics
    from reconciler.spec.loader import load_tree
    load_tree([tree], Diagnostics())
"""
PHASES = ("bare", "compose", "load_documents", "load_tree", "validate", "plan")


def instructions(command: list[str]) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         *command], capture_output=True, text=True, check=False, cwd=ROOT)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from {command}: {done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def command(phase: str, tree: Path, servers: dict[Path, str]) -> list[str]:
    if phase == "bare":
        return [sys.executable, "-c", scale.BARE_READ, str(tree)]
    if phase == "validate":
        return [sys.executable, "-m", "reconciler", "validate", str(tree)]
    if phase == "plan":
        return [sys.executable, "-m", "reconciler", "plan", str(tree), "--emulator",
                servers[tree]]
    return [sys.executable, "-c", PHASE, phase, str(tree)]


def smoke(phases: list[str]) -> None:
    """Each phase's command once, on 20 topics with the settings, not under valgrind."""
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        tree = topic_settings.make_tree(Path(tmp) / "with-20", 20, True)
        servers = {tree: topic_settings.seeded_server(stack, tree)} if "plan" in phases else {}
        for phase in phases:
            done = subprocess.run(command(phase, tree, servers), capture_output=True,
                                  text=True, check=False, cwd=ROOT)
            if done.returncode not in (0, 2):
                raise SystemExit(f"{phase} exited {done.returncode}: {done.stderr[-2000:]}")
            print(f"{phase:15} ran")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", default=list(PHASES), choices=PHASES)
    parser.add_argument("--set", dest="field_set", default="settings",
                        choices=topic_settings.FIELD_SETS,
                        help="the fields every topic declares on the `with` side "
                             "(topic_settings.py's sets)")
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args()
    if args.smoke:
        smoke(args.only)
        return
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        fields = topic_settings.FIELD_SETS[args.field_set]
        trees = {(size, side): topic_settings.make_tree(Path(tmp) / f"{side}-{size}", size,
                                                        side == "with", fields=fields)
                 for size in SIZES for side in ("without", "with")}
        servers = ({tree: topic_settings.seeded_server(stack, tree) for tree in trees.values()}
                   if "plan" in args.only else {})
        for phase in args.only:
            per_topic = {}
            for side in ("without", "with"):
                small, large = (instructions(command(phase, trees[size, side], servers))
                                for size in SIZES)
                per_topic[side] = (large - small) / (SIZES[1] - SIZES[0])
            without, with_ = per_topic["without"], per_topic["with"]
            print(f"{phase:15} per topic: without {without:>11,.0f}  with {with_:>11,.0f}  "
                  f"ratio {with_ / without:.3f}  extra {with_ - without:>9,.0f}", flush=True)


if __name__ == "__main__":
    main()
