"""Plots of a result directory (matplotlib, Agg backend: no display needed).

- `fct_cdf.png`: CDF of flow completion time, all flows and per class.
- `slowdown_by_size.png`: mean and p99 slowdown per flow-size bucket.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter, ScalarFormatter

from pisanet.results import read_flows, write_atomic

CLASS_NAMES = {0: "short", 1: "large"}


def save(fig: Figure, path: Path) -> Path:
    """Writes `fig` to `path` as PNG (atomically) and closes it."""
    write_atomic(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
    plt.close(fig)
    return path


def fct_cdf(flows: pd.DataFrame) -> Figure:
    """CDF of the FCT (microseconds) of the completed flows, all and per class."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    done = flows[flows["fct"].notna()]
    groups = [("all", done)] + [
        (CLASS_NAMES.get(int(c), f"class {c}"), g) for c, g in done.groupby("class")
    ]
    for label, group in groups:
        fct = np.sort(group["fct"].to_numpy())
        if len(fct) == 0:
            continue
        cdf = np.arange(1, len(fct) + 1) / len(fct)
        ax.step(fct, cdf, where="post", label=f"{label} (n={len(fct)})")
    ax.set_xscale("log")
    ax.set_xlabel("Flow completion time (µs)")
    ax.set_ylabel("Fraction of flows (CDF)")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(f"FCT CDF: {len(done)} of {len(flows)} flows completed")
    ax.legend(loc="lower right")
    return fig


def slowdown_by_size(flows: pd.DataFrame, buckets: int = 10) -> Figure:
    """Mean and p99 slowdown per flow-size bucket (equal-count buckets)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    done = flows[flows["slowdown"].notna()]
    if len(done) > 0:
        codes = pd.qcut(done["bytes"].rank(method="first"), min(buckets, len(done)), labels=False)
        by = done.groupby(codes)
        size = by["bytes"].median()
        ax.plot(size, by["slowdown"].mean(), marker="o", label="mean")
        ax.plot(size, by["slowdown"].quantile(0.99), marker="s", label="p99")
        ax.legend(loc="upper right")
    ax.set_xscale("log")
    ax.set_yscale("log")
    # NOTE: plain numbers (5, 10, 50), not 5x10^0, on the log slowdown axis.
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("Flow size (bytes, bucket median)")
    ax.set_ylabel("Slowdown (FCT / ideal FCT)")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title("Slowdown by flow size")
    return fig


def plot_dir(directory: str | os.PathLike[str]) -> list[Path]:
    """Writes `fct_cdf.png` and `slowdown_by_size.png` into a result directory."""
    directory = Path(directory)
    flows = read_flows(directory)
    return [
        save(fct_cdf(flows), directory / "fct_cdf.png"),
        save(slowdown_by_size(flows), directory / "slowdown_by_size.png"),
    ]
