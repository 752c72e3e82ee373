"""What declaring retention, a key and schema settings on every topic costs (issue 36),
or, with `--set transforms`, two message transforms (a JavaScript UDF and an AI
Inference endpoint: issue 48's "every topic declaring a transform"; `--set udf`, the
UDF alone):
`validate` of 100,000 topics and `plan` of 50,000 topics, each on scale.py's tree and
on the same tree with `messageRetentionDuration`, `kmsKeyName` and `schemaSettings`
added to every topic, in alternating pairs (A B, then B A), each command its own
process. The figure is the CPU time of the command's process tree (before_after.py's
measure), medians and the median of the per-pair ratios (with / without). `validate`
is also measured with the fields declared once, in a Defaults document every topic
inherits (as `import` writes values all topics share): `defaults / without`.

For `plan`, each tree's live topics are seeded on their own local server as an
earlier apply left them (scale.py's seeding: 1 topic in 200 missing, 1 in 100 with a
drifted label), so that both plans do the same work but for the new fields.

The floor: in the same pairs, right after each command, a bare read of the same two
trees (`yaml.load_all` with libyaml's CSafeLoader over every file, scale.py's bare
read, its own process): what reading the extra YAML costs any Python program, before
any check. `over_floor` is, per pair, the command's extra CPU (with - without) less
the bare read's, as a share of the command's CPU without the fields.

    python benchmarks/topic_settings.py [--pairs 7] [--only validate-100k plan-50k]
                                        [--set settings|transforms|udf]
    python benchmarks/topic_settings.py --smoke   # 1/1000 of the sizes, one pair: that it runs

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import scale  # noqa: E402  (benchmarks/scale.py: its trees and seeding)
from before_after import reconcile, run  # noqa: E402

SCENARIOS = ("validate-100k", "plan-50k")
SETTINGS = """\
  messageRetentionDuration: 7d
  kmsKeyName: projects/{project}/locations/us-east1/keyRings/pubsub/cryptoKeys/topics
  schemaSettings: {{schema: projects/{project}/schemas/events, encoding: JSON}}
"""
TRANSFORMS = """\
  messageTransforms:
  - javascriptUdf:
      functionName: redact
      code: "function redact(message, metadata) {{ return message; }}"
  - aiInference:
      endpoint: projects/{project}/locations/us-east1/publishers/google/models/gemini-2.0-flash
"""
UDF = TRANSFORMS.split("  - aiInference:")[0]  # the JavaScript UDF alone
FIELD_SETS = {"settings": SETTINGS, "transforms": TRANSFORMS, "udf": UDF}

DEFAULTS = """\
apiVersion: reconcile.pubsub/v1
kind: Defaults
spec:
  messageRetentionDuration: 7d
  kmsKeyName: projects/acme-keys/locations/us-east1/keyRings/pubsub/cryptoKeys/topics
  schemaSettings: {schema: projects/acme-keys/schemas/events, encoding: JSON}
"""


def make_tree(directory: Path, topics: int, settings: bool, defaults: bool = False,
              fields: str = SETTINGS) -> Path:
    """scale.py's tree; with `settings`, `fields` on every topic; with `defaults`, the
    three settings in one Defaults document at the tree's root instead."""
    if defaults:
        scale.make_tree(directory, topics)
        (directory / "defaults.yaml").write_text(DEFAULTS)
        return directory
    template = scale.TOPIC
    if settings:
        template = template.replace("  publishers:\n", fields + "  publishers:\n")
    original = scale.TOPIC
    scale.TOPIC = template
    try:
        return scale.make_tree(directory, topics)
    finally:
        scale.TOPIC = original


def seeded_server(stack: ExitStack, tree: Path) -> str:
    """A local server holding the tree's live topics (stored as they are: the schema
    they name need not exist, as no call here checks it)."""
    from reconciler.localserver import LocalServer

    server = stack.enter_context(LocalServer(state_dir=None, fsync=False))
    scale.seed_live(server, tree)
    return str(server.address)


def measure(name: str, sides: dict[str, list[str]], trees: dict[str, Path], pairs: int,
            work: Path) -> dict[str, Any]:
    """`pairs` alternating rounds of the command on each side, each followed by the
    bare read of the same tree; medians and per-pair ratios against "without"."""
    cpu: dict[str, list[float]] = {side: [] for side in sides}
    bare: dict[str, list[float]] = {side: [] for side in ("without", "with")}
    for pair in range(pairs):
        order = list(sides) if pair % 2 == 0 else list(reversed(sides))
        for side in order:
            cpu[side].append(run(sides[side], ROOT, work)[0])
            if side in bare:
                bare[side].append(run(bare_read(trees[side]), ROOT, work)[0])
    figures: dict[str, Any] = {f"cpu_{side}_s": round(statistics.median(cpu[side]), 3)
                               for side in sides}
    figures.update({f"bare_{side}_s": round(statistics.median(times), 3)
                    for side, times in bare.items()})
    bare_ratios = [a / b for a, b in zip(bare["with"], bare["without"], strict=True)]
    figures["bare_with_ratio"] = round(statistics.median(bare_ratios), 3)
    figures["bare_with_pairs"] = [round(r, 3) for r in bare_ratios]
    over = [((c - c0) - (b - b0)) / c0 for c, c0, b, b0 in zip(
        cpu["with"], cpu["without"], bare["with"], bare["without"], strict=True)]
    figures["over_floor"] = round(statistics.median(over), 3)
    figures["over_floor_pairs"] = [round(r, 3) for r in over]
    for side in sides:
        if side == "without":
            continue
        ratios = [a / b for a, b in zip(cpu[side], cpu["without"], strict=True)]
        figures[f"{side}_ratio"] = round(statistics.median(ratios), 3)
        figures[f"{side}_pairs"] = [round(r, 3) for r in ratios]
        print(f"{name:14} CPU without {figures['cpu_without_s']:.3f} s, {side} "
              f"{figures[f'cpu_{side}_s']:.3f} s, {side}/without {figures[f'{side}_ratio']:.3f}"
              f" (pairs {', '.join(map(str, figures[f'{side}_pairs']))})", flush=True)
    print(f"{name:14} bare read without {figures['bare_without_s']:.3f} s, with "
          f"{figures['bare_with_s']:.3f} s, with/without {figures['bare_with_ratio']:.3f} "
          f"(pairs {', '.join(map(str, figures['bare_with_pairs']))}); extra CPU over the "
          f"bare read's, share of without: {figures['over_floor']:.3f} "
          f"(pairs {', '.join(map(str, figures['over_floor_pairs']))})", flush=True)
    return figures


def bare_read(tree: Path) -> list[str]:
    """scale.py's bare read of `tree`, as its own process."""
    return [sys.executable, "-c", scale.BARE_READ, str(tree)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--only", nargs="*", default=list(SCENARIOS), choices=SCENARIOS)
    parser.add_argument("--set", dest="field_set", default="settings", choices=FIELD_SETS,
                        help="the fields every topic declares on the `with` side")
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args()
    divisor = 1000 if args.smoke else 1
    if args.smoke:
        args.pairs = 1
    compileall.compile_dir(ROOT / "reconciler", quiet=1)
    figures: dict[str, Any] = {"set": args.field_set}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        work = Path(tmp)
        commands: dict[str, dict[str, list[str]]] = {}
        trees: dict[str, dict[str, Path]] = {}
        if "validate-100k" in args.only:
            trees["validate-100k"] = {
                side: make_tree(work / f"v-{side}", 100_000 // divisor, side == "with",
                                side == "defaults", FIELD_SETS[args.field_set])
                for side in ("without", "with", "defaults")
                if side != "defaults" or args.field_set == "settings"
            }
            commands["validate-100k"] = {
                side: reconcile("validate", str(tree))
                for side, tree in trees["validate-100k"].items()
            }
        if "plan-50k" in args.only:
            trees["plan-50k"] = {
                side: make_tree(work / f"p-{side}", 50_000 // divisor, side == "with",
                                fields=FIELD_SETS[args.field_set])
                for side in ("without", "with")
            }
            commands["plan-50k"] = {
                side: reconcile("plan", str(tree), "--emulator", seeded_server(stack, tree))
                for side, tree in trees["plan-50k"].items()
            }
        figures["load_average_start"] = round(os.getloadavg()[0], 1)
        print(f"set up; {args.pairs} pairs each, load average "
              f"{figures['load_average_start']}", flush=True)
        for name, sides in commands.items():
            figures[name] = measure(name, sides, trees[name], args.pairs, work)
    figures["load_average_end"] = round(os.getloadavg()[0], 1)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
