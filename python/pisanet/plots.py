"""Plots of a result directory (matplotlib, Agg backend: no display needed).

- `fct_cdf.png`: CDF of flow completion time, all flows and per class.
- `slowdown_by_size.png`: mean and p99 slowdown per flow-size bucket.
- `flow_<id>.png` (`pisanet plot DIR --flow ID`, from trace.parquet): one flow's
  packets over time and hops.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter, ScalarFormatter

from pisanet.results import TRACE_FILE, read_flows, write_atomic

CLASS_NAMES = {0: "short", 1: "large"}


class NothingToPlot(ValueError):
    """A result directory with no finished flow: every plot would be empty."""


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


# Marker of each trace event in the flow plot (events not listed are not drawn).
EVENT_STYLE: dict[str, dict[str, Any]] = {
    "dequeue": {"marker": ".", "color": "tab:blue", "label": "sent on the port"},
    "ecn_mark": {"marker": "^", "color": "tab:orange", "label": "ECN marked"},
    "drop": {"marker": "x", "color": "tab:red", "label": "dropped (queue full)"},
    "program_drop": {"marker": "X", "color": "darkred", "label": "dropped by the program"},
    "to_cpu": {"marker": "s", "color": "tab:purple", "label": "to the switch CPU"},
    "clone": {"marker": "D", "color": "tab:green", "label": "clone queued"},
    "recirculate": {"marker": "P", "color": "tab:olive", "label": "recirculated"},
}


def flow_journey(trace: pd.DataFrame, flow: int) -> Figure:
    """One flow's packets over time (x, microseconds) and hops (y: the ports
    and switches in the order the flow first reached them); each packet is a
    line from port to port, events are markers."""
    events = trace[trace["flow"] == flow]
    if events.empty:
        raise ValueError(f"no events of flow {flow} in the trace")
    where = np.where(events["port"].astype(str) == "", events["node"].astype(str), events["port"])
    hops = list(dict.fromkeys(where))
    y = pd.Series(where, index=events.index).map({h: i for i, h in enumerate(hops)})
    fig, ax = plt.subplots(figsize=(9, 1.5 + 0.45 * len(hops)), layout="constrained")
    sent = events["event"] == "dequeue"
    for _, packet in events[sent].groupby("packet"):
        ax.plot(packet["time"], y[packet.index], color="0.75", linewidth=0.6, zorder=1)
    # Time in each queue: from the enqueue (or ECN-marked enqueue) to the dequeue.
    queued = events["event"].isin(["enqueue", "ecn_mark", "clone", "recirculate"])
    enq = events[queued].assign(y=y[queued]).groupby(["packet", "y"])["time"].first()
    deq = events[sent].assign(y=y[sent]).groupby(["packet", "y"])["time"].first()
    both = pd.concat({"enq": enq, "deq": deq}, axis=1).dropna()
    if not both.empty:
        ax.hlines(
            both.index.get_level_values("y"),
            both["enq"],
            both["deq"],
            color="tab:blue",
            alpha=0.35,
            linewidth=4,
            label="queued",
            zorder=1,
        )
    for event, style in EVENT_STYLE.items():
        mask = events["event"] == event
        if mask.any():
            ax.scatter(events["time"][mask], y[mask], s=14, zorder=2, **style)
    ax.set_yticks(range(len(hops)), hops)
    ax.invert_yaxis()
    ax.set_xlabel("Time (µs)")
    ax.set_ylabel("Hop (port, or switch)")
    ax.grid(True, axis="x", alpha=0.3)
    n = events["packet"].nunique()
    ax.set_title(f"Flow {flow}: {n} packets, {len(events)} events")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    return fig


def plot_flow(directory: str | os.PathLike[str], flow: int) -> Path:
    """Writes `flow_<flow>.png` from the result directory's trace.parquet."""
    directory = Path(directory)
    trace = pd.read_parquet(directory / TRACE_FILE)
    return save(flow_journey(trace, flow), directory / f"flow_{flow}.png")


def plot_dir(directory: str | os.PathLike[str]) -> list[Path]:
    """Writes `fct_cdf.png` and `slowdown_by_size.png` into a result directory."""
    directory = Path(directory)
    flows = read_flows(directory)
    if not flows["fct"].notna().any():
        raise NothingToPlot(
            f"{directory}: nothing to plot: no flow finished ({len(flows):,} had started) "
            "(raise run.max_sim_time_ms, or look at flows.parquet's delivered bytes)"
        )
    return [
        save(fct_cdf(flows), directory / "fct_cdf.png"),
        save(slowdown_by_size(flows), directory / "slowdown_by_size.png"),
    ]
