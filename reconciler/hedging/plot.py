"""The advisor's CDF plot: publish latency with and without hedging (matplotlib, an
optional extra: `pip install 'pubsub-reconcile[plot]'`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from reconciler.errors import InputError, UsageError
from reconciler.hedging.advise import Advice
from reconciler.hedging.profile import format_ms

# The distribution pip installs, and its extra with matplotlib (the one place the
# install hint names them).
DISTRIBUTION = "pubsub-reconcile"  # the package index name (the command is `reconcile`)
PLOT_EXTRA = f"{DISTRIBUTION}[plot]"


def _missing() -> UsageError:
    return UsageError(
        "--plot needs matplotlib, which is not installed",
        hint=f"pip install '{PLOT_EXTRA}' (or pip install matplotlib), or leave out --plot",
    )


def require_matplotlib() -> None:
    """Fail before any work is done when --plot cannot be drawn."""
    if importlib.util.find_spec("matplotlib") is None:
        raise _missing()


def plot_cdf(advice: Advice, out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        raise _missing() from None
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    r = advice.recommended
    assert r.hedge_delay_ms is not None
    for outcome, label in (
        (advice.baseline, "without hedging"),
        (r, f"hedged, delay {format_ms(r.hedge_delay_ms)} (+{r.extra_fraction:.1%} requests)"),
    ):
        xs = outcome.latencies_ms
        n = len(xs)
        ax.step(xs, [(i + 1) / n for i in range(n)], where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("publish latency (ms, log scale)")
    ax.set_ylabel("fraction of publishes")
    ax.set_ylim(0.9, 1.0005)
    ax.axhline(0.99, color="grey", linewidth=0.6, linestyle=":")
    ax.axhline(0.999, color="grey", linewidth=0.6, linestyle=":")
    ax.set_title("Simulated publish latency CDF (top 10%)")
    ax.legend(loc="lower right")
    ax.grid(True, which="both", linewidth=0.3)
    fig.tight_layout()
    try:
        fig.savefig(out)
    except OSError as exc:
        raise InputError(f"{out}: cannot write the plot: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
