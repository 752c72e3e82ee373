"""Python's `re` against RE2 (google-re2) for the local server's PromQL label matchers.

Three cases, each timed as the median of alternating runs (re, RE2, re, RE2, ...):
- the matchers reconcile sends: `topic_id=~"t-0|t-1|..."` (an alternation of escaped
  names) compiled once and fully matched against every topic id of a project (the
  server matches such an alternation by set membership: `literals`, also timed);
- a short wildcard pattern (`orders-.*`) over the same ids;
- the pathological `(a|a)*b` against a run of N letters `a` (Python's `re` doubles its
  work with each letter; RE2 is linear), for N = 16..24 (30, the issue's trial, is
  2^6 times the 24 figure for `re`: not run).

    python benchmarks/promql_regex.py [--ids 1000] [--names 50] [--runs 9]
    python benchmarks/promql_regex.py --smoke   # tiny sizes: that it runs (the suite's check)

The last line printed is one JSON object with every figure (seconds).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

import re2

from reconciler.localserver.monitoring.promql import literal_alternation

OPTIONS = re2.Options()
OPTIONS.log_errors = False


def _median_pair(a: Callable[[], Any], b: Callable[[], Any], runs: int) -> tuple[float, float]:
    ta: list[float] = []
    tb: list[float] = []
    for _ in range(runs):
        for fn, out in ((a, ta), (b, tb)):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return statistics.median(ta), statistics.median(tb)


def _scan(pattern: Any, ids: list[str]) -> int:
    return sum(1 for i in ids if pattern.fullmatch(i) is not None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ids", type=int, default=1000)
    parser.add_argument("--names", type=int, default=50)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args()
    if args.smoke:
        args.ids, args.names, args.runs = 20, 5, 1
    ids = [f"t-{i}" for i in range(args.ids)]
    step = max(1, args.ids // args.names)
    alternation = "|".join(re.escape(f"t-{i}") for i in range(0, args.ids, step))
    figures: dict[str, Any] = {}

    for label, text in (("alternation", alternation), ("wildcard", "t-1.*")):

        def fresh_re(text: str = text) -> Any:
            re.purge()  # `re` caches what it compiled: measure the compilation
            return re.compile(text)

        compile_re, compile_re2 = _median_pair(
            fresh_re, lambda text=text: re2.compile(text, OPTIONS), args.runs
        )
        py, r2 = re.compile(text), re2.compile(text, OPTIONS)
        assert _scan(py, ids) == _scan(r2, ids)
        match_re, match_re2 = _median_pair(
            lambda py=py: _scan(py, ids), lambda r2=r2: _scan(r2, ids), args.runs
        )
        literals = literal_alternation(text)
        if literals is not None:
            start = time.perf_counter()
            for _ in range(args.runs):
                sum(1 for i in ids if i in literals)
            figures["literals_match_s"] = (time.perf_counter() - start) / args.runs
            print(f"{label}: {args.ids} set lookups {figures['literals_match_s'] * 1e3:.2f} ms")
        figures[label] = {
            "compile_re_s": compile_re,
            "compile_re2_s": compile_re2,
            f"match_{args.ids}_re_s": match_re,
            f"match_{args.ids}_re2_s": match_re2,
        }
        print(
            f"{label}: compile re {compile_re * 1e6:.0f} us, RE2 {compile_re2 * 1e6:.0f} us; "
            f"{args.ids} full matches re {match_re * 1e3:.2f} ms, RE2 {match_re2 * 1e3:.2f} ms"
        )

    pathological: dict[str, Any] = {}
    py, r2 = re.compile("(a|a)*b"), re2.compile("(a|a)*b", OPTIONS)
    for n in (4, 6) if args.smoke else (16, 18, 20, 22, 24):
        text = "a" * n
        t_re, t_re2 = _median_pair(
            lambda text=text: py.fullmatch(text), lambda text=text: r2.fullmatch(text), 3
        )
        pathological[str(n)] = {"re_s": t_re, "re2_s": t_re2}
        print(f"(a|a)*b on {n} letters: re {t_re:.3f} s, RE2 {t_re2 * 1e6:.1f} us")
    figures["pathological"] = pathological
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
