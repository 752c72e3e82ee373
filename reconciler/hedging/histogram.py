"""A latency histogram as Cloud Monitoring's `Distribution` describes it, checked
against the service's rules before anything is computed from it. One reader for both
of the advisor's sources: a `distributionValue` in a file exported from the API
(advise.py) and a point ListTimeSeries returns for `--topic` (observed.py; the
backend's reader hands each point over in the same REST form).

    read(value, where) -> Histogram        HistogramError(where, what) at the first
                                           rule the value breaks
    Histogram.latencies(unit_ms) -> LatencyDistribution

The rules, from `google.api.Distribution` and its `BucketOptions`:

- `linearBuckets`: `numFiniteBuckets` > 0, `width` > 0; bucket i (1..N-2) is
  [offset + width·(i-1), offset + width·i).
- `exponentialBuckets`: `numFiniteBuckets` > 0, `growthFactor` > 1, `scale` > 0;
  bucket i is [scale·growthFactor^(i-1), scale·growthFactor^i).
- `explicitBuckets`: at least one bound, strictly increasing; bucket i is
  [bounds[i-1], bounds[i]).
- Bucket 0 is the underflow, bucket N-1 the overflow (N = numFiniteBuckets + 2, or
  len(bounds) + 1). `bucketCounts` has at most N values, each a non-negative int64
  (fewer: the rest are 0), and their sum is `count` when both are given; `count` is
  non-negative, `mean` and `sumOfSquaredDeviation` finite (the latter not negative),
  and both 0 when `count` is.
- At most 200 buckets: Cloud Monitoring's published limit, "Histogram buckets per
  custom distribution metric" (https://cloud.google.com/monitoring/quotas). No
  figure is published for built-in metrics such as `topic/send_request_latencies`,
  whose points have far fewer (the local server's: 68); the same limit is applied to
  every histogram read, so that no input decides how much is computed.

And one of the advisor's own: a latency is never negative, so a bucket holding
observations must reach above 0 (one below 0 is an error; a lower bound below 0 is
read as 0).

Bounds are computed for the buckets that have counts only, never for all N, and a
bound that a double cannot hold is an error before any is computed.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.hedging.distribution import Bucket, LatencyDistribution

MAX_BUCKETS = 200
INT64_MAX = 2**63 - 1
_LOG_MAX = math.log(sys.float_info.max)
OPTIONS = ("linearBuckets", "exponentialBuckets", "explicitBuckets")
_DECIMAL = re.compile(r"[+-]?[0-9]{1,20}")  # an int64 in the REST form's string


class HistogramError(ValueError):
    """`where`: the member of the value that breaks a rule (a JSON path such as
    `bucketOptions.exponentialBuckets.growthFactor`, "" for the value itself);
    `what`: the rule, with the value as given."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}" if where else what)
        self.where = where
        self.what = what


@dataclass(frozen=True)
class Histogram:
    """A checked distribution: `kind` one of OPTIONS; `params` (num_finite, width or
    growth, offset or scale) for linear and exponential buckets, `bounds` for
    explicit ones; `counts` as given (at most `buckets`)."""

    kind: str
    counts: tuple[int, ...]
    params: tuple[int, float, float] = (0, 0.0, 0.0)
    bounds: tuple[float, ...] = ()
    mean: float | None = None
    sum_of_squared_deviation: float | None = None

    @property
    def buckets(self) -> int:
        """N: the underflow, the finite buckets and the overflow."""
        if self.kind == "explicitBuckets":
            return len(self.bounds) + 1
        return self.params[0] + 2

    @property
    def count(self) -> int:
        return sum(self.counts)

    def upper(self, i: int) -> float:
        """Bucket i's upper bound (+inf for the overflow)."""
        if i >= self.buckets - 1:
            return math.inf
        if self.kind == "explicitBuckets":
            return self.bounds[i]
        _, step, base = self.params
        if self.kind == "linearBuckets":
            return base + step * i
        return _exponential_bound(base, step, i)

    def lower(self, i: int) -> float:
        """Bucket i's lower bound (-inf for the underflow)."""
        return -math.inf if i == 0 else self.upper(i - 1)

    def latencies(self, unit_ms: float = 1.0) -> LatencyDistribution:
        """The observations as a latency distribution in milliseconds (`unit_ms`: one
        unit of the bounds in ms), fitted to the mean and variance when given."""
        geometric = self.kind == "exponentialBuckets"
        out = []
        for i, count in enumerate(self.counts):
            if count:
                lo, hi = max(self.lower(i), 0.0) * unit_ms, self.upper(i) * unit_ms
                out.append(Bucket(lo, lo if math.isinf(hi) else hi, count, geometric))
        dist = LatencyDistribution(buckets=tuple(out))
        if self.mean is None:
            return dist
        ssd = self.sum_of_squared_deviation
        return dist.fitted(
            self.mean * unit_ms, None if ssd is None else ssd * unit_ms * unit_ms
        )


def read(value: Any, where: str = "") -> Histogram:
    """The histogram a `distributionValue` (REST form: camelCase keys, int64 as number
    or string, doubles as number or string) describes; HistogramError at the first
    rule it breaks, its `where` under the given one."""
    at = _Path(where)
    if not isinstance(value, Mapping):
        raise HistogramError(at.here, f"a distribution is an object, not {_kind(value)}")
    if "bucketOptions" not in value:
        raise HistogramError(at.of("bucketOptions"), "missing: the buckets' bounds are needed")
    options = _options(value["bucketOptions"], at.of("bucketOptions"))
    counts = _counts(value.get("bucketCounts", []), at.of("bucketCounts"), options)
    total = sum(counts)
    if "count" in value:
        count = _int(value["count"], at.of("count"))
        if count != total:
            raise HistogramError(
                at.of("count"),
                f"{count} is not the sum of bucketCounts ({total}); the distribution is "
                "inconsistent",
            )
    mean = _float(value["mean"], at.of("mean")) if "mean" in value else None
    ssd = None
    if "sumOfSquaredDeviation" in value:
        ssd = _float(value["sumOfSquaredDeviation"], at.of("sumOfSquaredDeviation"))
        if ssd < 0:
            raise HistogramError(at.of("sumOfSquaredDeviation"), f"{ssd:g} must not be negative")
    if not total:
        for name, given in (("mean", mean), ("sumOfSquaredDeviation", ssd)):
            if given:
                raise HistogramError(at.of(name), f"{given:g} must be 0 when count is 0")
    histogram = Histogram(options.kind, counts, options.params, options.bounds, mean, ssd)
    _no_negative_latency(histogram, at)
    return histogram


class _Path:
    def __init__(self, here: str) -> None:
        self.here = here

    def of(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.here}[{key}]"
        return f"{self.here}.{key}" if self.here else key


@dataclass(frozen=True)
class _Options:
    kind: str
    params: tuple[int, float, float] = (0, 0.0, 0.0)
    bounds: tuple[float, ...] = ()

    @property
    def buckets(self) -> int:
        return len(self.bounds) + 1 if self.kind == "explicitBuckets" else self.params[0] + 2


def _options(value: Any, where: str) -> _Options:
    at = _Path(where)
    if not isinstance(value, Mapping):
        raise HistogramError(where, f"an object, not {_kind(value)}")
    given = [k for k in OPTIONS if k in value]
    if len(given) != 1:
        raise HistogramError(
            where,
            f"exactly one of {', '.join(OPTIONS)} is needed"
            + (f", not {len(given)}" if given else ""),
        )
    kind = given[0]
    inner = value[kind]
    at = _Path(at.of(kind))
    if not isinstance(inner, Mapping):
        raise HistogramError(at.here, f"an object, not {_kind(inner)}")
    if kind == "explicitBuckets":
        return _Options(kind, bounds=_explicit(inner, at))
    n = _int(inner.get("numFiniteBuckets", 0), at.of("numFiniteBuckets"))
    if n <= 0:
        raise HistogramError(at.of("numFiniteBuckets"), f"{n} must be greater than 0")
    if n + 2 > MAX_BUCKETS:
        raise HistogramError(
            at.of("numFiniteBuckets"),
            f"{n} finite buckets are more than Cloud Monitoring's limit of {MAX_BUCKETS} "
            "buckets (the underflow and overflow included)",
        )
    if kind == "linearBuckets":
        width = _float(inner.get("width", 0), at.of("width"))
        offset = _float(inner.get("offset", 0), at.of("offset"))
        if width <= 0:
            raise HistogramError(at.of("width"), f"{width:g} must be greater than 0")
        if not math.isfinite(offset + width * n):
            raise HistogramError(
                at.here, "the last bound, offset + width × numFiniteBuckets, is beyond "
                "the largest number a double holds",
            )
        return _Options(kind, (n, width, offset))
    growth = _float(inner.get("growthFactor", 0), at.of("growthFactor"))
    scale = _float(inner.get("scale", 0), at.of("scale"))
    if growth <= 1:
        raise HistogramError(at.of("growthFactor"), f"{growth:g} must be greater than 1")
    if scale <= 0:
        raise HistogramError(at.of("scale"), f"{scale:g} must be greater than 0")
    if math.isinf(_exponential_bound(scale, growth, n)):
        raise HistogramError(
            at.here, "the last bound, scale × growthFactor^numFiniteBuckets, is beyond "
            "the largest number a double holds",
        )
    return _Options(kind, (n, growth, scale))


def _exponential_bound(scale: float, growth: float, i: int) -> float:
    """scale × growth^i, +inf where a double cannot hold it (never OverflowError)."""
    try:
        return float(scale * growth**i)
    except OverflowError:  # growth^i alone is too large; the product may not be
        log = math.log(scale) + i * math.log(growth)
        return math.exp(log) if log < _LOG_MAX else math.inf


def _explicit(inner: Mapping[str, Any], at: _Path) -> tuple[float, ...]:
    raw = inner.get("bounds", [])
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise HistogramError(at.of("bounds"), f"a list of numbers, not {_kind(raw)}")
    if not raw:
        raise HistogramError(at.of("bounds"), "at least one bound is needed")
    if len(raw) + 1 > MAX_BUCKETS:
        raise HistogramError(
            at.of("bounds"),
            f"{len(raw)} bounds make more than Cloud Monitoring's limit of {MAX_BUCKETS} "
            "buckets",
        )
    bounds = tuple(_float(b, _Path(at.of("bounds")).of(i)) for i, b in enumerate(raw))
    for i in range(1, len(bounds)):
        if bounds[i] <= bounds[i - 1]:
            raise HistogramError(
                _Path(at.of("bounds")).of(i),
                f"{bounds[i]:g} is not greater than the bound before it ({bounds[i - 1]:g}): "
                "bounds must be strictly increasing",
            )
    return bounds


def _counts(value: Any, where: str, options: _Options) -> tuple[int, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise HistogramError(where, f"a list of counts, not {_kind(value)}")
    if len(value) > options.buckets:
        raise HistogramError(
            where,
            f"{len(value)} counts for {options.buckets} buckets (the finite ones, the "
            "underflow and the overflow)",
        )
    counts = tuple(_int(c, _Path(where).of(i)) for i, c in enumerate(value))
    for i, c in enumerate(counts):
        if c < 0:
            raise HistogramError(_Path(where).of(i), f"{c} must not be negative")
    if sum(counts) > INT64_MAX:
        raise HistogramError(where, "the counts sum to more than an int64 holds")
    return counts


def _no_negative_latency(histogram: Histogram, at: _Path) -> None:
    for i, count in enumerate(histogram.counts):
        if count and histogram.upper(i) <= 0:
            raise HistogramError(
                _Path(at.of("bucketCounts")).of(i),
                f"{count} observations below {histogram.upper(i):g}: a latency is never "
                "negative",
            )


def _int(value: Any, where: str) -> int:
    """An int64 as the REST form writes it: a number or a decimal string."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise HistogramError(where, f"an integer, not {_kind(value)}")
    number: int | None = None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        number = int(value) if value.is_integer() else None
    elif _DECIMAL.fullmatch(value.strip()):
        number = int(value)
    if number is None:
        raise HistogramError(where, f"{value!r} is not an integer")
    if not -INT64_MAX - 1 <= number <= INT64_MAX:
        raise HistogramError(where, f"{value!r} is beyond what an int64 holds")
    return number


def _float(value: Any, where: str) -> float:
    """A double as the REST form writes it: a number or a string; finite."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise HistogramError(where, f"a number, not {_kind(value)}")
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise HistogramError(where, f"{value!r} is not a number") from None
    if not math.isfinite(number):
        raise HistogramError(where, f"{value!r} is not a finite number")
    return number


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")
