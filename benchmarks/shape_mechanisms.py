"""Which mechanism checks the spec shape on the validate path: the table the
pydantic models generate (`spec/documents.py`, read by `spec/fastshape.py`), msgspec
(structs made from the same table), or pydantic-core (the models' own validator).

    python benchmarks/shape_mechanisms.py   # msgspec measured when importable (a dependency)
    python benchmarks/shape_mechanisms.py --smoke   # one short run of each: that it runs

Two figures each, medians: the time to check one typical Topic document (scale.py's,
parsed by CSafeLoader) in this process, and the import a cold `validate` would add
(`python -c "import X"` in a fresh interpreter, minus `python -c pass`). The last line
is one JSON object.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from scale import TOPIC

from reconciler.spec.documents import SHAPES
from reconciler.spec.fastshape import fast_record

DOC = yaml.load(TOPIC.format(project="proj-1", name="t-000001", team=3), Loader=yaml.CSafeLoader)


def per_document(check: Callable[[Any], Any], runs: int = 9, n: int = 20_000) -> float:
    """Microseconds to check DOC once (median of runs)."""
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(n):
            check(DOC)
        out.append((time.perf_counter() - start) / n * 1e6)
    return round(statistics.median(out), 2)


def import_ms(statement: str, runs: int = 15) -> float:
    """Milliseconds a fresh interpreter spends on `statement` beyond starting."""
    def once(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - start

    pairs = [(once(statement), once("pass")) for _ in range(runs)]
    return round(statistics.median(a - b for a, b in pairs) * 1000, 1)


def msgspec_topic() -> Callable[[Any], Any] | None:
    """msgspec structs for every model of the table (durations left as text: msgspec
    has no per-field converter, so a real use would add a pass for them)."""
    try:
        import msgspec
    except ImportError:
        return None
    structs: dict[str, Any] = {}

    def kind_type(kind: tuple[Any, ...]) -> Any:
        simple = {"str": str, "bool": bool, "whole": int, "number": float, "duration": str,
                  "list_str": list[str], "dict_str_str": dict[str, str], "none": type(None)}
        if kind[0] in simple:
            return simple[kind[0]]
        if kind[0] == "literal":
            return typing.Literal[kind[1]]
        if kind[0] == "union":
            return typing.Union[tuple(kind_type(k) for k in kind[1])]  # noqa: UP007
        return structs[kind[1]]

    for name, fields in SHAPES.items():  # nested models first (documents.py's order)
        spec = []
        for alias, attr, default, kind in fields:
            if default[0] == "required":
                spec.append((attr, kind_type(kind), msgspec.field(name=alias)))
            elif default[0] == "value":
                spec.append((attr, kind_type(kind), msgspec.field(default=default[1], name=alias)))
            else:
                factory = {"list": list, "dict": dict}.get(default[1]) or structs[default[1]]
                spec.append((attr, kind_type(kind),
                             msgspec.field(default_factory=factory, name=alias)))
        structs[name] = msgspec.defstruct(name, spec, frozen=True, kw_only=True,
                                          forbid_unknown_fields=True)
    topic = structs["TopicDoc"]
    return lambda data: msgspec.convert(data, topic, strict=True)


def main() -> None:
    global per_document, import_ms  # --smoke shortens both
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true",
                        help="seconds: one short run of each, checks that the script runs")
    if parser.parse_args().smoke:
        per_document = functools.partial(per_document, runs=1, n=10)
        import_ms = functools.partial(import_ms, runs=1)

    from reconciler.spec.models import MODEL_BY_KIND
    from reconciler.spec.slowshape import to_record

    topic_model = MODEL_BY_KIND["Topic"]
    figures: dict[str, Any] = {
        "table (documents.py + fastshape.py) us/doc": per_document(
            lambda d: fast_record("Topic", d)
        ),
        "pydantic-core (model_validate) us/doc": per_document(topic_model.model_validate),
        "pydantic-core + records us/doc": per_document(
            lambda d: to_record(topic_model.model_validate(d))
        ),
    }
    check = msgspec_topic()
    if check is not None:
        figures["msgspec (convert, strict) us/doc"] = per_document(check)
        figures["import msgspec ms"] = import_ms("import msgspec")
    figures["import documents + fastshape ms"] = import_ms(
        "import reconciler.spec.documents, reconciler.spec.fastshape"
    )
    figures["import pydantic_core ms"] = import_ms("import pydantic_core")
    figures["import pydantic + the models ms"] = import_ms("import reconciler.spec.models")
    for name, value in figures.items():
        print(f"{name:45s} {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
