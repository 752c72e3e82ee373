"""Compare the CEL libraries for Python that could evaluate org-policy custom constraints.

    python benchmarks/cel_libraries.py [--shared ../shared] [--rounds 7] [--json] [--failures]
    python benchmarks/cel_libraries.py --smoke   # one round: that it runs

Candidates: `cel-expr-python` (Google's, wraps cel-cpp), `common-expression-language`
(Rust bindings), `cel-python` (pure Python). A library that is not installed is reported
as such; install the two the project does not depend on with
`pip install cel-python==0.5.0 common-expression-language==0.10.0`.

What is measured, per library:

- conformance: google/cel-spec's simple conformance tests (`../shared/data/cel-spec/`,
  read from there, never copied) for the parts of the language conditions use. A test
  passes when the library gives the expected value, or fails to compile or evaluate
  when an error is expected. Tests that need protobuf message types or declarations a
  dynamic map cannot stand for are counted as not applicable (the resource is given
  as a JSON-shaped map);
- conditions: custom-constraint conditions over Pub/Sub topics in the REST JSON shape,
  each with the verdict the service's CEL semantics give (true, false, or an error);
- errors: whether a condition that reads a field the topic lacks raises an error that
  names the key (told apart from false), and whether a syntax error gives its column;
- speed: CPU time to compile a typical condition, to evaluate it on a topic, and to
  import the library (in a fresh process), median of `--rounds` rounds taken in
  turn, each library's round beside the others'.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SHARED = Path(os.environ.get("RECONCILE_SHARED", REPO.parent / "shared"))

# cel-spec files for the parts of CEL that custom-constraint conditions use: literals,
# field and map selection, has(), `in`, size(), the string functions and matches(),
# the macros all/exists/exists_one/map/filter, comparisons, logic, lists, durations.
# Reported beside them, outside the total: macros2 (the two-variable comprehensions and
# transformList/transformMap, an extension), optionals and unknowns (conditions use
# neither optional syntax nor partial evaluation).
RELEVANT = (
    "basic", "comparisons", "conversions", "fields", "lists", "logic", "macros", "parse",
    "plumbing", "string", "timestamps",
)
BESIDE = ("macros2", "optionals", "unknowns")
# Expressions naming protobuf message types: a JSON-shaped resource holds none.
_PROTO_NAMES = ("TestAllTypes", "cel.expr.conformance", "google.protobuf.", "NestedMessage",
                "NestedEnum", "GlobalEnum")

# --------------------------------------------------------------------------- textproto


class _Tokens:
    """Just enough of the protobuf text format for cel-spec's SimpleTestFile."""

    def __init__(self, text: str) -> None:
        self.items = list(self._scan(text))
        self.pos = 0

    @staticmethod
    def _scan(text: str) -> Iterator[tuple[str, Any]]:
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c in " \t\r\n,;":
                i += 1
            elif c == "#":
                while i < n and text[i] != "\n":
                    i += 1
            elif c in "{}:<>":
                yield ("p", c)
                i += 1
            elif c == "[":
                j = text.index("]", i)
                yield ("id", text[i : j + 1])
                i = j + 1
            elif c in "'\"":
                value, i = _string(text, i)
                yield ("s", value)
            else:
                j = i
                while j < n and text[j] not in " \t\r\n,;{}:<>#[":
                    j += 1
                yield ("id", text[i:j])
                i = j

    def peek(self) -> tuple[str, Any] | None:
        return self.items[self.pos] if self.pos < len(self.items) else None

    def take(self) -> tuple[str, Any]:
        item = self.items[self.pos]
        self.pos += 1
        return item


def _string(text: str, i: int) -> tuple[bytes, int]:
    quote = text[i]
    i += 1
    out = bytearray()
    while text[i] != quote:
        c = text[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = text[i + 1]
        simple = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11,
                  "\\": 92, "'": 39, '"': 34, "?": 63}
        if e in simple:
            out.append(simple[e])
            i += 2
        elif e in "01234567" or e in "xX":
            start = i + 1 if e in "01234567" else i + 2  # \ooo, \xHH
            digits = "01234567" if e in "01234567" else "0123456789abcdefABCDEF"
            j = start
            while j < i + 4 and text[j] in digits:
                j += 1
            out.append(int(text[start:j], 8 if e in "01234567" else 16))
            i = j
        elif e in "uU":
            width = 4 if e == "u" else 8
            out += chr(int(text[i + 2 : i + 2 + width], 16)).encode("utf-8")
            i += 2 + width
        else:
            raise ValueError(f"unknown escape \\{e}")
    return bytes(out), i + 1


def _message(tokens: _Tokens, close: str | None) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    while True:
        tok = tokens.peek()
        if tok is None or (tok == ("p", close)):
            if close is not None:
                tokens.take()
            return out
        _, name = tokens.take()
        if tokens.peek() == ("p", ":"):
            tokens.take()
        nxt = tokens.peek()
        if nxt in (("p", "{"), ("p", "<")):
            tokens.take()
            value: Any = _message(tokens, "}" if nxt == ("p", "{") else ">")
        else:
            kind, value = tokens.take()
            while kind == "s" and tokens.peek() is not None and tokens.peek()[0] == "s":  # type: ignore[index]
                value += tokens.take()[1]
        out.setdefault(name, []).append(value)


def parse_textproto(text: str) -> dict[str, list[Any]]:
    return _message(_Tokens(text), None)


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _one(msg: dict[str, list[Any]], key: str, default: Any = None) -> Any:
    values = msg.get(key)
    return values[0] if values else default


# ---------------------------------------------------------------------- expected values


class NotApplicable(Exception):
    """The test needs something a JSON-shaped resource never holds (proto messages)."""


@dataclass(frozen=True)
class Uint:
    value: int


def _number(token: str) -> float:
    low = token.lower()
    if low in ("inf", "infinity"):
        return math.inf
    if low in ("-inf", "-infinity"):
        return -math.inf
    if low == "nan":
        return math.nan
    return float(token.rstrip("fF"))


def _duration(msg: dict[str, list[Any]]) -> dt.timedelta:
    seconds = int(_one(msg, "seconds", "0"))
    nanos = int(_one(msg, "nanos", "0"))
    return dt.timedelta(seconds=seconds, microseconds=nanos // 1000)


def to_python(value: dict[str, list[Any]]) -> Any:
    """A cel.expr.Value as plain Python (uint tagged, proto messages not applicable)."""
    (kind, (raw,)), = value.items()
    if kind == "null_value":
        return None
    if kind == "bool_value":
        return raw == "true"
    if kind == "int64_value":
        return int(raw)
    if kind == "uint64_value":
        return Uint(int(raw))
    if kind == "double_value":
        return _number(raw)
    if kind == "string_value":
        return raw.decode("utf-8")
    if kind == "bytes_value":
        return bytes(raw)
    if kind == "list_value":
        return [to_python(v) for v in raw.get("values", [])]
    if kind == "map_value":
        out = {}
        for entry in raw.get("entries", []):
            key = to_python(_one(entry, "key"))
            out[key.value if isinstance(key, Uint) else key] = to_python(_one(entry, "value"))
        return out
    if kind == "object_value":
        ((type_url, (body,)),) = raw.items()
        if type_url.endswith("google.protobuf.Duration]"):
            return _duration(body)
        raise NotApplicable(f"protobuf message {type_url}")
    raise NotApplicable(f"value kind {kind}")


def same(got: Any, want: Any) -> bool:
    """Equal with CEL's types kept apart (Python's True == 1 is not CEL's)."""
    if isinstance(want, Uint):
        return type(got) is not bool and isinstance(got, int) and got == want.value
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(got, bool) and isinstance(want, bool) and got == want
    if isinstance(want, float):
        if not isinstance(got, float):
            return False
        return (math.isnan(want) and math.isnan(got)) or got == want
    if isinstance(want, int):
        return isinstance(got, int) and not isinstance(got, float) and got == want
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            same(g, w) for g, w in zip(got, want, strict=True)
        )
    if isinstance(want, dict):
        return isinstance(got, dict) and len(got) == len(want) and all(
            k in got and same(got[k], v) for k, v in want.items()
        )
    if isinstance(want, dt.timedelta):
        return isinstance(got, dt.timedelta) and got == want
    return type(got) is type(want) and got == want


# ---------------------------------------------------------------------------- adapters


class EvalFailed(Exception):
    """The library reported an error (at compile or evaluation)."""


@dataclass
class Library:
    name: str
    package: str
    module: str
    compile: Callable[[str, dict[str, Any], bool], Any]
    evaluate: Callable[[Any, dict[str, Any]], Any]


def _cel_expr_python() -> Library:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_optional

    envs: dict[tuple[tuple[str, str], ...], Any] = {}

    def decl_type(spec: dict[str, list[Any]] | None) -> Any:
        if spec is None:
            return cel.Type.DYN
        if "primitive" in spec:
            return {
                "BOOL": cel.Type.BOOL, "INT64": cel.Type.INT, "UINT64": cel.Type.UINT,
                "DOUBLE": cel.Type.DOUBLE, "STRING": cel.Type.STRING, "BYTES": cel.Type.BYTES,
            }[_one(spec, "primitive")]
        if "map_type" in spec:
            m = _one(spec, "map_type")
            return cel.Type.Map(decl_type(_one(m, "key_type")), decl_type(_one(m, "value_type")))
        if "list_type" in spec:
            return cel.Type.List(decl_type(_one(_one(spec, "list_type"), "elem_type")))
        if "well_known" in spec:
            return {"DURATION": cel.Type.DURATION, "TIMESTAMP": cel.Type.TIMESTAMP}.get(
                _one(spec, "well_known"), cel.Type.DYN
            )
        if "message_type" in spec:
            raise NotApplicable("declared protobuf message type")
        return cel.Type.DYN

    def compile_(expr: str, decls: dict[str, Any], check: bool) -> Any:
        key = tuple(sorted((k, repr(v)) for k, v in decls.items()))
        env = envs.get(key)
        if env is None:
            env = cel.NewEnv(
                variables={k: decl_type(v) for k, v in decls.items()},
                extensions=[ext_optional.ExtOptional()],
            )
            envs[key] = env
        try:
            return env.compile(expr, disable_check=not check)
        except RuntimeError as exc:
            raise EvalFailed(str(exc)) from None

    def evaluate(program: Any, data: dict[str, Any]) -> Any:
        try:
            value = program.eval(data=data)
        except RuntimeError as exc:
            raise EvalFailed(str(exc)) from None
        if value.type() == cel.Type.ERROR:
            raise EvalFailed(str(value.value()))
        return _plain(value.plain_value())

    return Library(
        "cel-expr-python 0.1.3", "cel-expr-python", "cel_expr_python.cel", compile_, evaluate
    )


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _common_expression_language() -> Library:
    import cel

    def compile_(expr: str, decls: dict[str, Any], check: bool) -> Any:
        try:
            return cel.compile(expr)
        except Exception as exc:
            raise EvalFailed(str(exc)) from None

    def evaluate(program: Any, data: dict[str, Any]) -> Any:
        try:
            return _plain(program.execute(data))
        except Exception as exc:
            raise EvalFailed(f"{type(exc).__name__}: {exc}") from None

    return Library(
        "common-expression-language 0.10.0", "common-expression-language", "cel",
        compile_, evaluate,
    )


def _cel_python() -> Library:
    import celpy
    from celpy import celtypes

    env = celpy.Environment()

    def to_cel(value: Any) -> Any:
        if isinstance(value, Uint):
            return celtypes.UintType(value.value)
        if isinstance(value, dt.timedelta):
            return celtypes.DurationType(value)
        if isinstance(value, bytes):
            return celtypes.BytesType(value)
        if isinstance(value, list):
            return celtypes.ListType([to_cel(v) for v in value])
        if isinstance(value, dict):
            return celtypes.MapType({to_cel(k): to_cel(v) for k, v in value.items()})
        return celpy.json_to_cel(value)

    def from_cel(value: Any) -> Any:
        if isinstance(value, celtypes.BoolType):
            return bool(value)
        if isinstance(value, celtypes.UintType):
            return int(value)
        if isinstance(value, celtypes.IntType):
            return int(value)
        if isinstance(value, celtypes.DoubleType):
            return float(value)
        if isinstance(value, celtypes.StringType):
            return str(value)
        if isinstance(value, celtypes.BytesType):
            return bytes(value)
        if isinstance(value, celtypes.DurationType):
            return dt.timedelta(seconds=value.total_seconds())
        if isinstance(value, list):
            return [from_cel(v) for v in value]
        if isinstance(value, dict):
            return {from_cel(k): from_cel(v) for k, v in value.items()}
        if isinstance(value, celtypes.NullType):
            return None
        return value

    def compile_(expr: str, decls: dict[str, Any], check: bool) -> Any:
        try:
            return env.program(env.compile(expr))
        except Exception as exc:
            raise EvalFailed(str(exc)) from None

    def evaluate(program: Any, data: dict[str, Any]) -> Any:
        try:
            result = program.evaluate({k: to_cel(v) for k, v in data.items()})
        except Exception as exc:
            raise EvalFailed(str(exc)) from None
        if isinstance(result, celpy.CELEvalError):
            raise EvalFailed(str(result))
        return from_cel(result)

    return Library("cel-python 0.5.0", "cel-python", "celpy", compile_, evaluate)


FACTORIES = (_cel_expr_python, _common_expression_language, _cel_python)


def libraries() -> tuple[list[Library], list[str]]:
    found, missing = [], []
    for factory in FACTORIES:
        try:
            found.append(factory())
        except ImportError as exc:
            missing.append(f"{factory.__name__.strip('_').replace('_', '-')}: {exc}")
    return found, missing


# ------------------------------------------------------------------------- conformance


@dataclass
class Tally:
    passed: int = 0
    failed: int = 0
    not_applicable: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def applicable(self) -> int:
        return self.passed + self.failed


def _bindings(test: dict[str, list[Any]]) -> dict[str, Any]:
    out = {}
    for entry in test.get("bindings", []):
        name = _text(_one(entry, "key"))
        holder = _one(entry, "value")
        if "value" not in holder:
            raise NotApplicable("an unknown or error binding")
        out[name] = to_python(_one(holder, "value"))
    return out


def _to_input(value: Any) -> Any:
    """Bindings as the libraries take them (uint as int: none has a Python uint)."""
    if isinstance(value, Uint):
        return value.value
    if isinstance(value, list):
        return [_to_input(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_input(v) for k, v in value.items()}
    return value


def _decls(test: dict[str, list[Any]]) -> dict[str, Any]:
    out = {}
    for decl in test.get("type_env", []):
        name = _text(_one(decl, "name"))
        if "function" in decl:
            raise NotApplicable("a declared function")
        out[name] = _one(_one(decl, "ident", {}), "type")
    return out


def run_test(lib: Library, test: dict[str, list[Any]]) -> bool:
    """True when the library meets the test; NotApplicable when it cannot apply."""
    if _one(test, "container") or _one(test, "check_only") == "true":
        raise NotApplicable("a container or a check-only test")
    if "typed_result" in test or "any_eval_errors" in test or "unknown" in test:
        raise NotApplicable("a typed, multi-error or unknown result")
    expr = _one(test, "expr").decode("utf-8")
    if any(name in expr for name in _PROTO_NAMES):
        raise NotApplicable("a protobuf message type")
    bindings = _bindings(test)
    decls = _decls(test)
    for name in bindings:
        decls.setdefault(name, None)
    want_error = "eval_error" in test
    want = None if want_error else to_python(_one(test, "value", {"bool_value": ["true"]}))
    check = _one(test, "disable_check") != "true"
    try:
        program = lib.compile(expr, decls, check)
        got = lib.evaluate(program, {k: _to_input(v) for k, v in bindings.items()})
    except EvalFailed:
        return want_error
    return not want_error and same(got, want)


def conformance(lib: Library, data: Path, names: tuple[str, ...]) -> dict[str, Tally]:
    out: dict[str, Tally] = {}
    for name in names:
        tally = Tally()
        path = data / f"{name}.textproto"
        doc = parse_textproto(path.read_text(encoding="utf-8"))
        for section in doc.get("section", []):
            for test in section.get("test", []):
                label = f"{name}/{_text(_one(section, 'name'))}/{_text(_one(test, 'name'))}"
                try:
                    ok = run_test(lib, test)
                except NotApplicable:
                    tally.not_applicable += 1
                    continue
                except Exception as exc:  # a crash in the library's binding counts as a fail
                    ok = False
                    label += f" (raised {type(exc).__name__})"
                if ok:
                    tally.passed += 1
                else:
                    tally.failed += 1
                    tally.failures.append(label)
        out[name] = tally
    return out


# ----------------------------------------------------------------- condition table

TOPIC = {
    "name": "projects/shop-prod/topics/prod-orders",
    "labels": {"env": "prod", "team": "payments"},
    "messageStoragePolicy": {
        "allowedPersistenceRegions": ["europe-west1", "europe-west4"],
        "enforceInTransit": True,
    },
    "messageRetentionDuration": "604800s",
    "kmsKeyName": "projects/kms-prod/locations/europe-west1/keyRings/r/cryptoKeys/k",
    "schemaSettings": {"schema": "projects/shop-prod/schemas/order", "encoding": "JSON"},
}

# (condition, expected): True / False, or "error" where CEL's semantics give an error.
CONDITIONS: tuple[tuple[str, bool | str], ...] = (
    ("has(resource.kmsKeyName)", True),
    ("has(resource.ingestionDataSourceSettings)", False),
    ("resource.kmsKeyName.startsWith('projects/kms-prod/')", True),
    ("resource.name.endsWith('-orders')", True),
    ("resource.name.contains('/topics/prod-')", True),
    ("resource.name.matches('^projects/[a-z0-9-]+/topics/prod-[a-z]+$')", True),
    ("resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r.startsWith('europe-'))",
     True),
    ("resource.messageStoragePolicy.allowedPersistenceRegions.exists(r, r == 'us-east1')", False),
    ("'europe-west4' in resource.messageStoragePolicy.allowedPersistenceRegions", True),
    ("size(resource.messageStoragePolicy.allowedPersistenceRegions) <= 2", True),
    ("resource.messageStoragePolicy.enforceInTransit == true", True),
    ("resource.labels['env'] == 'prod'", True),
    ("'team' in resource.labels && resource.labels.team == 'payments'", True),
    ("resource.schemaSettings.encoding in ['JSON', 'BINARY']", True),
    ("!has(resource.schemaSettings.firstRevisionId)", True),
    ("resource.messageRetentionDuration == '604800s'", True),
    ("resource.ingestionDataSourceSettings.awsKinesis.streamArn != ''", "error"),
    ("resource.labels['cost-center'] == 'x'", "error"),
    ("resource.kmsKeyName.matches('[')", "error"),
    ("has(resource.ingestionDataSourceSettings) && "
     "resource.ingestionDataSourceSettings.awsKinesis.streamArn != ''", False),
    ("resource.labels['cost-center'] == 'x' || true", True),
    ("size(resource.name) > 1000 || resource.name.size() < 3", False),
)

TYPICAL = (
    "resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r in "
    "['europe-west1', 'europe-west3', 'europe-west4']) && has(resource.kmsKeyName) && "
    "resource.kmsKeyName.startsWith('projects/kms-prod/') && "
    "resource.name.matches('^projects/[a-z0-9-]+/topics/prod-[a-z-]+$')"
)


def condition_table(lib: Library) -> tuple[int, list[str]]:
    passed, failures = 0, []
    for condition, want in CONDITIONS:
        try:
            got: bool | str = lib.evaluate(lib.compile(condition, {"resource": None}, True),
                                           {"resource": TOPIC})
        except EvalFailed:
            got = "error"
        if got == want and type(got) is type(want):
            passed += 1
        else:
            failures.append(f"{condition}: {got!r}, expected {want!r}")
    return passed, failures


def error_behaviour(lib: Library) -> dict[str, str]:
    out = {}
    try:
        lib.evaluate(lib.compile("resource.kmsKeyName == 'x'", {"resource": None}, True),
                     {"resource": {"name": "t"}})
        out["missing field"] = "no error (a silent value)"
    except EvalFailed as exc:
        text = str(exc)
        named = "kmsKeyName" in text
        out["missing field"] = "an error naming the key" if named else f"an error: {text[:60]}"
    try:
        lib.compile("resource.name.startsWith('a') &&", {"resource": None}, True)
        out["syntax error"] = "accepted"
    except EvalFailed as exc:
        text = str(exc)
        out["syntax error"] = "position given" if ":1:" in text or "^" in text else text[:60]
    return out


# ------------------------------------------------------------------------------- speed


def _cpu(fn: Callable[[], None], n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n


def speed(libs: list[Library], rounds: int) -> dict[str, dict[str, float]]:
    """Median CPU seconds per compile and per evaluation; rounds alternate the libraries."""
    samples: dict[str, dict[str, list[float]]] = {
        lib.name: {"compile": [], "evaluate": []} for lib in libs
    }
    for r in range(rounds):
        order = libs if r % 2 == 0 else list(reversed(libs))
        for lib in order:
            program = lib.compile(TYPICAL, {"resource": None}, True)
            if lib.evaluate(program, {"resource": TOPIC}) is not True:
                raise SystemExit(f"{lib.name}: the typical condition is not true on the topic")
            samples[lib.name]["compile"].append(
                _cpu(lambda lib=lib: lib.compile(TYPICAL, {"resource": None}, True), 200)
            )
            samples[lib.name]["evaluate"].append(
                _cpu(lambda lib=lib, p=program: lib.evaluate(p, {"resource": TOPIC}), 2000)
            )
    return {
        name: {k: statistics.median(v) for k, v in kinds.items()}
        for name, kinds in samples.items()
    }


def import_cost(lib: Library, rounds: int) -> float:
    """Median CPU seconds a fresh interpreter spends importing the library."""
    code = (
        "import resource, time\n"
        "def cpu():\n"
        "    u = resource.getrusage(resource.RUSAGE_SELF)\n"
        "    return u.ru_utime + u.ru_stime\n"
        f"t = cpu(); import {lib.module}; print(cpu() - t)\n"
    )
    values = []
    for _ in range(rounds):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)
        values.append(float(out.stdout.strip()))
    return statistics.median(values)


# -------------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--failures", action="store_true", help="list each failing test")
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args()
    if args.smoke:
        args.rounds = 1
    data = args.shared / "data" / "cel-spec"
    if not data.is_dir():
        print(f"no cel-spec data at {data}: pass --shared DIR", file=sys.stderr)
        return 1
    libs, missing = libraries()
    for line in missing:
        print(f"not installed: {line}", file=sys.stderr)
    report: dict[str, Any] = {}
    timings = speed(libs, args.rounds)
    for lib in libs:
        tallies = conformance(lib, data, RELEVANT + BESIDE)
        relevant = [tallies[n] for n in RELEVANT]
        conditions, condition_failures = condition_table(lib)
        report[lib.name] = {
            "conformance": {
                n: f"{t.passed}/{t.applicable}" + (f" ({t.not_applicable} n/a)"
                                                   if t.not_applicable else "")
                for n, t in tallies.items()
            },
            "conformance_total": f"{sum(t.passed for t in relevant)}/"
            f"{sum(t.applicable for t in relevant)}",
            "conditions": f"{conditions}/{len(CONDITIONS)}",
            "errors": error_behaviour(lib),
            "compile_us": round(timings[lib.name]["compile"] * 1e6, 1),
            "evaluate_us": round(timings[lib.name]["evaluate"] * 1e6, 1),
            "import_ms": round(import_cost(lib, args.rounds) * 1e3, 1),
        }
        if args.failures:
            report[lib.name]["failures"] = [
                f for n in RELEVANT for f in tallies[n].failures
            ] + condition_failures
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for name, figures in report.items():
        print(f"== {name}")
        for key, value in figures.items():
            if isinstance(value, dict):
                print(f"  {key}:")
                for k, v in value.items():
                    print(f"    {k}: {v}")
            elif isinstance(value, list):
                print(f"  {key}:")
                for v in value:
                    print(f"    {v}")
            else:
                print(f"  {key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
