"""The report of a sweep directory: PNG plots and an index.html, in `DIR/report/`.

Reads the sweep's database (`pisanet.database`) and writes, every file atomically:

- `fct_vs_load.png`: mean and p99 FCT against load per scheme, for all, short
  and large flows (mean over seeds; the bars span the seeds' min to max).
- `fct_cdf.png`: FCT CDF per scheme, one panel per load (at most four loads).
- `slowdown_vs_load.png`: mean and p99 slowdown against load per scheme.
- `retransmissions_vs_load.png`: retransmitted packets against load per scheme.
- `uplink_load_sd.png`: per switch, the standard deviation of the bytes sent on
  its uplinks (from `ports.json`), per scheme, one panel per load.
- `queue_depth_cdf.png` (only when points sampled queues): CDF of the sampled
  ports' depths (all priority queues of a port together) per scheme, one panel
  per load.
- `index.html`: the plots and the `runs` table.

A series is a scheme plus any other varied key (not the load, not the seed). A
scheme keeps its colour in every plot (and every report): `scheme_colour`.
"""

from __future__ import annotations

import hashlib
import html
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pisanet import database
from pisanet._core import ConfigError
from pisanet.plots import save
from pisanet.results import write_text_atomic
from pisanet.sweeps import SEED_KEY, read_manifest

REPORT_DIR = "report"
LOAD = "workload_load"
SCHEME_KEY = "scheme.kind"
# NOTE: fixed colours for the schemes we ship, so that a scheme looks the same in
# every report; any other name gets a colour from a hash of it.
SCHEME_COLOURS = {
    "ecmp": "#1f77b4",
    "ecmp_native": "#aec7e8",
    "flowlet_ecmp": "#17becf",
    "rps": "#7f7f7f",
    "hula": "#2ca02c",
    "conga": "#9467bd",
    "p4te": "#d62728",
    "dbb": "#ff7f0e",
    "p4qcn": "#8c564b",
    "dcqcn_cp": "#c49c94",
    "p4qos": "#e377c2",
    "letflow": "#bcbd22",
}
_FALLBACK = ["#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d"]
_LINESTYLES = ["-", "--", ":", "-."]
_MARKERS = ["o", "s", "^", "D", "v", "P"]
MAX_PANELS = 4


def scheme_colour(scheme: str) -> str:
    """The colour of a scheme in every plot: fixed for known schemes, else from a hash."""
    if scheme in SCHEME_COLOURS:
        return SCHEME_COLOURS[scheme]
    digest = hashlib.sha256(scheme.encode("utf-8")).digest()
    return _FALLBACK[digest[0] % len(_FALLBACK)]


@dataclass(frozen=True)
class Style:
    colour: str
    linestyle: str
    marker: str


def series_labels(runs: pd.DataFrame, varied: Sequence[str]) -> pd.Series:
    """Each run's series: its scheme, plus `key=value` for every other varied key."""
    others = [
        database.column_name(k)
        for k in varied
        if k not in (SEED_KEY, "workload.load", SCHEME_KEY)
        and database.column_name(k) in runs.columns
    ]

    def label(row: pd.Series) -> str:
        extra = ", ".join(f"{c}={row[c]}" for c in others)
        return f"{row['scheme']}, {extra}" if extra else str(row["scheme"])

    if runs.empty:
        return pd.Series([], dtype=object)
    return runs.apply(label, axis=1)


def series_styles(runs: pd.DataFrame) -> dict[str, Style]:
    """A style per series: the scheme's colour; line and marker tell a scheme's variants apart."""
    styles: dict[str, Style] = {}
    per_scheme: dict[str, int] = {}
    pairs = runs[["series", "scheme"]].drop_duplicates().itertuples(index=False)
    for series, scheme in sorted(pairs, key=lambda p: (str(p[1]), str(p[0]))):
        i = per_scheme.get(scheme, 0)
        per_scheme[scheme] = i + 1
        styles[series] = Style(
            scheme_colour(str(scheme)),
            _LINESTYLES[i % len(_LINESTYLES)],
            _MARKERS[i % len(_MARKERS)],
        )
    return styles


def _against_load(
    ax: Axes, runs: pd.DataFrame, column: str, styles: dict[str, Style], scale: float = 1.0
) -> None:
    if column not in runs.columns:
        ax.text(0.5, 0.5, f"no {column}", ha="center", va="center", transform=ax.transAxes)
        return
    for series, group in runs.groupby("series", sort=True):
        by = group.groupby(LOAD)[column]
        mean, low, high = by.mean() * scale, by.min() * scale, by.max() * scale
        style = styles[str(series)]
        ax.errorbar(
            mean.index,
            mean.to_numpy(),
            yerr=[(mean - low).to_numpy(), (high - mean).to_numpy()],
            color=style.colour,
            linestyle=style.linestyle,
            marker=style.marker,
            capsize=3,
            label=str(series),
        )
    ax.grid(True, alpha=0.3)
    ax.set_xlabel("Offered load (fraction of host link rate)")


def fct_vs_load(runs: pd.DataFrame, styles: dict[str, Style]) -> Figure:
    """Mean (top) and p99 (bottom) FCT against load, for all, short and large flows."""
    fig, axes = plt.subplots(2, 3, figsize=(13, 7), layout="constrained", squeeze=False)
    for col, (group, prefix) in enumerate(
        [("all flows", "fct_us"), ("short flows", "fct_us_short"), ("large flows", "fct_us_large")]
    ):
        for row, stat in enumerate(["mean", "p99"]):
            ax = axes[row][col]
            _against_load(ax, runs, f"{prefix}_{stat}", styles)
            ax.set_ylabel(f"{stat} FCT (µs)")
            ax.set_title(f"{stat} FCT, {group}")
    axes[0][0].legend(loc="best", fontsize="small")
    fig.suptitle("Flow completion time against load (mean over seeds, bars: min to max)")
    return fig


def slowdown_vs_load(runs: pd.DataFrame, styles: dict[str, Style]) -> Figure:
    """Mean and p99 slowdown against load."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained", squeeze=False)
    for ax, stat in zip(axes[0], ["mean", "p99"], strict=True):
        _against_load(ax, runs, f"slowdown_{stat}", styles)
        ax.set_ylabel(f"{stat} slowdown (FCT / ideal FCT)")
        ax.set_title(f"{stat} slowdown")
    axes[0][0].legend(loc="best", fontsize="small")
    return fig


def retransmissions_vs_load(runs: pd.DataFrame, styles: dict[str, Style]) -> Figure:
    """Retransmitted packets against load."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    _against_load(ax, runs, "retransmissions", styles)
    ax.set_ylabel("Retransmissions (packets per run)")
    ax.set_title("Retransmissions")
    ax.legend(loc="best", fontsize="small")
    return fig


def _panel_loads(loads: Sequence[float]) -> list[float]:
    loads = sorted(loads)
    if len(loads) <= MAX_PANELS:
        return loads
    picks = np.linspace(0, len(loads) - 1, MAX_PANELS).round().astype(int)
    return [loads[i] for i in sorted(set(picks.tolist()))]


def _load_panels(runs: pd.DataFrame, width: float = 5.0) -> tuple[Figure, list[tuple[float, Axes]]]:
    loads = _panel_loads(runs[LOAD].dropna().unique().tolist())
    fig, axes = plt.subplots(
        1, max(1, len(loads)), figsize=(width * max(1, len(loads)), 4.2),
        layout="constrained", squeeze=False,
    )  # fmt: skip
    return fig, list(zip(loads, axes[0], strict=False))


def _cdf(ax: Axes, values: np.ndarray, style: Style, label: str) -> None:
    values = np.sort(values[np.isfinite(values)])
    if len(values) == 0:
        return
    # NOTE: at most 2,000 steps per curve, however many flows or samples.
    if len(values) > 2000:
        q = np.linspace(0, 1, 2000)
        values, cdf = np.quantile(values, q), q
    else:
        cdf = np.arange(1, len(values) + 1) / len(values)
    ax.step(values, cdf, where="post", color=style.colour, linestyle=style.linestyle, label=label)


def cdf_by_load(
    samples: pd.DataFrame,
    column: str,
    runs: pd.DataFrame,
    styles: dict[str, Style],
    xlabel: str,
    title: str,
    scale: float = 1.0,
    log_x: bool = True,
) -> Figure:
    """CDF of `samples[column]` per series, one panel per load (all seeds pooled)."""
    joined = samples.merge(runs[["point_id", "series", LOAD]], on="point_id")
    fig, panels = _load_panels(runs)
    for load, ax in panels:
        at_load = joined[joined[LOAD] == load]
        for series, group in at_load.groupby("series", sort=True):
            values = group[column].to_numpy(dtype=float) * scale
            _cdf(ax, values, styles[str(series)], f"{series} (n={len(values):,})")
        if log_x and (at_load[column] > 0).any():
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("Fraction (CDF)")
        ax.set_ylim(0, 1.01)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"load {load:g}")
        ax.legend(loc="lower right", fontsize="small")
    fig.suptitle(title)
    return fig


def uplink_sd(ports: pd.DataFrame, runs: pd.DataFrame, styles: dict[str, Style]) -> Figure:
    """Per switch, the SD of the bytes sent on its uplinks; bars per series, panels per load."""
    up = ports[ports["uplink"].astype(bool)].copy()
    up["switch"] = up["name"].astype(str).str.split("->").str[0]
    sd = (
        up.groupby(["point_id", "switch"])["tx_bytes"]
        .agg(lambda b: float(np.std(b.to_numpy(dtype=float))) / 1e6)
        .rename("sd_mb")
        .reset_index()
        .merge(runs[["point_id", "series", LOAD]], on="point_id")
    )
    fig, panels = _load_panels(runs, width=6.0)
    switches = sorted(sd["switch"].unique(), key=_natural)
    series = sorted(sd["series"].unique())
    width = 0.8 / max(1, len(series))
    for load, ax in panels:
        mean = sd[sd[LOAD] == load].groupby(["series", "switch"])["sd_mb"].mean()
        for i, name in enumerate(series):
            heights = [mean.get((name, s), np.nan) for s in switches]
            x = np.arange(len(switches)) + (i - (len(series) - 1) / 2) * width
            hatch = ["", "//", "..", "xx"][_LINESTYLES.index(styles[name].linestyle)]
            ax.bar(x, heights, width, color=styles[name].colour, label=name, hatch=hatch)
        ax.set_xticks(np.arange(len(switches)), switches, rotation=45 if len(switches) > 8 else 0)
        ax.set_xlabel("Switch")
        ax.set_ylabel("SD of bytes sent per uplink (MB)")
        ax.set_title(f"load {load:g}")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    fig.suptitle("Uplink load balance: lower is more even (mean over seeds)")
    return fig


def _natural(name: str) -> tuple[Any, ...]:
    """`leaf2` before `leaf10`."""
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return (head, int(tail) if tail else -1)


SUMMARY_COLUMNS = [
    "flows_completed",
    "flows_total",
    "fct_us_mean",
    "fct_us_p99",
    "fct_us_short_mean",
    "fct_us_short_p99",
    "fct_us_large_mean",
    "fct_us_large_p99",
    "slowdown_mean",
    "slowdown_p99",
    "retransmissions",
    "packets_dropped",
    "digest",
    "error",
]


def _html(directory: Path, manifest: dict[str, Any], runs: pd.DataFrame, pngs: list[Path]) -> str:
    varied = [database.column_name(k) for k, _ in manifest["vary"] if k != SEED_KEY]
    front = ["point_id", "status", *varied, "seed", "scheme"]
    compact = [c for c in dict.fromkeys([*front, *SUMMARY_COLUMNS]) if c in runs.columns]
    sort = [c for c in ["scheme", *varied, "seed"] if c in runs.columns]
    ordered = runs.sort_values(sort, kind="stable") if sort else runs

    def table(frame: pd.DataFrame) -> str:
        return frame.to_html(
            index=False, na_rep="", float_format=lambda x: f"{x:,.3f}", border=0, classes="runs"
        )

    vary = "; ".join(f"{k} = {', '.join(vs)}" for k, vs in manifest["vary"]) or "nothing"
    ok = int((runs["status"] == "ok").sum())
    failed = int((runs["status"] == "failed").sum())
    figures = "\n".join(
        f'<figure><img src="{html.escape(p.name)}" alt="{html.escape(p.stem)}">'
        f"<figcaption>{html.escape(p.name)}</figcaption></figure>"
        for p in pngs
    )
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>pisanet sweep {html.escape(directory.name)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
figure {{ margin: 1em 0; }} img {{ max-width: 100%; }}
table.runs {{ border-collapse: collapse; font-size: 0.85em; }}
table.runs td, table.runs th {{
  padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: right;
}}
.scroll {{ overflow-x: auto; }}
</style>
</head>
<body>
<h1>pisanet sweep {html.escape(directory.name)}</h1>
<p>Varied: {html.escape(vary)}. Points: {len(manifest["points"])} ({ok} finished, {failed} failed).
Base config SHA-256: <code>{html.escape(str(manifest["config_sha256"]))}</code>.</p>
{figures}
<h2>Runs</h2>
<div class="scroll">{table(ordered[compact])}</div>
<details><summary>Every column of the runs table</summary>
<div class="scroll">{table(ordered)}</div></details>
<details><summary>Base config (resolved)</summary>
<pre>{html.escape(manifest["config"])}</pre></details>
</body>
</html>
"""


def write(directory: str | os.PathLike[str]) -> list[Path]:
    """Writes the report into `DIR/report/`; returns the files written (index.html last)."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    all_runs = database.query(directory, "SELECT * FROM runs")
    if all_runs.empty or not (all_runs["status"] == "ok").any():
        raise ConfigError(f"{directory}: no finished points to report on (run the sweep first)")
    varied = [k for k, _ in manifest["vary"]]
    all_runs["series"] = series_labels(all_runs, varied)
    runs = all_runs[all_runs["status"] == "ok"].copy()
    styles = series_styles(runs)
    out = directory / REPORT_DIR
    out.mkdir(exist_ok=True)

    pngs = [
        save(fct_vs_load(runs, styles), out / "fct_vs_load.png"),
        save(
            cdf_by_load(
                database.query(directory, "SELECT point_id, fct FROM flows"),
                "fct", runs, styles, "Flow completion time (µs)", "FCT CDF (all seeds pooled)",
            ),
            out / "fct_cdf.png",
        ),
        save(slowdown_vs_load(runs, styles), out / "slowdown_vs_load.png"),
        save(retransmissions_vs_load(runs, styles), out / "retransmissions_vs_load.png"),
    ]  # fmt: skip
    ports = database.query(directory, "SELECT * FROM ports")
    if {"uplink", "name", "tx_bytes"} <= set(ports.columns) and ports["uplink"].any():
        pngs.append(save(uplink_sd(ports, runs, styles), out / "uplink_load_sd.png"))
    # One depth per port and sample: with several priority queues a port has a
    # row per queue, and the CDF is of the port's depth (their sum).
    queues = database.query(directory, "SELECT * FROM queues LIMIT 0")
    if "depth_bytes" in queues.columns:
        queues = database.query(
            directory,
            "SELECT point_id, time, port, sum(depth_bytes) AS depth_bytes FROM queues GROUP BY ALL",
        )
    if "depth_bytes" in queues.columns and len(queues) > 0:
        figure = cdf_by_load(
            queues[["point_id", "depth_bytes"]], "depth_bytes", runs, styles,
            "Queue depth (KB)", "Queue-depth CDF (sampled ports, all seeds pooled)",
            scale=1e-3, log_x=False,
        )  # fmt: skip
        pngs.append(save(figure, out / "queue_depth_cdf.png"))
    index = out / "index.html"
    write_text_atomic(index, _html(directory, manifest, all_runs.drop(columns="series"), pngs))
    return [*pngs, index]
