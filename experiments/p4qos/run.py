#!/usr/bin/env python3
"""Runs the P4QoS evaluation (seed 003, section III) and writes its tables
into docs/results/p4qos.md between `<!-- results:begin -->` and
`<!-- results:end -->` (figures into docs/results/p4qos/).

`.venv/bin/python experiments/p4qos/run.py [--quick | --smoke] [--workers N]
[--out DIR]`: every point runs through `pisanet.sweep` (experiments/points.py)
into sweep directories under `--out` (default results/p4qos; `full/`,
`quick/` or `smoke/` below it), is read back with DuckDB, and a rerun resumes
(finished points are not run again).

- Fig. 2a / Fig. 3a-3h (single bottleneck): two 60 s TCP Cubic flows (classic
  ECN) with deadlines d1 and d2 = 2 d1, for each scheme and d1, at the paper's
  scale (single_bottleneck.toml, 10 Mb/s) and at data-center scale
  (single_bottleneck_dc.toml, 10 Gb/s, every time /1000).
- Fig. 2b / Fig. 4 (multiple bottlenecks, multi_bottleneck.toml): 4a LLEP's
  error against the configured link latency, 4b the share of packets at each
  bottleneck count per 10 s slice, 4c target updates without back-off, fixed
  and adaptive.

The seeds: the runs are deterministic, so a seed's only randomness is the
second flow's start, uniform in [0, 100 ms) (scaled), drawn here from the
seed and written into the point's flow list (the paper's ten runs differ by
the testbed's own noise). Mean and 95% confidence interval (Student's t)
over the seeds. `--quick` (the committed tables: it says so in the page) runs
3 seeds and 3 values of d1; the full mode 10 seeds and 5; `--smoke` one
short run per scheme and nothing is written.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
import points as P

DOC = ROOT / "docs" / "results" / "p4qos.md"
FIGS = ROOT / "docs" / "results" / "p4qos"
OUT = "results/p4qos"

SCHEMES = ["p4qos", "p4qos_interval", "p4qos_codel", "noaqm", "codel", "prio"]
NAMES = {
    "p4qos": "P4QoS",
    "p4qos_interval": "Interval P4QoS",
    "p4qos_codel": "P4QoS+CoDel",
    "noaqm": "NoAQM",
    "codel": "P4-CoDel",
    "prio": "Prio",
}
# Scales: (config, the unit of d1 and of the flow list's times in us (ms at
# paper scale, us at DC scale), bottleneck rate in b/s).
SCALES = {
    "paper": ("single_bottleneck.toml", 1000.0, 10e6),
    "dc": ("single_bottleneck_dc.toml", 1.0, 10e9),
}
# Fig. 2b at each scale: (config, its topology, the switch links' delay line
# of the topology, which Fig. 4a's points replace).
MULTI = {
    "paper": ("multi_bottleneck.toml", "multi_bottleneck_topology.toml", "delay_us = 1000\n"),
    "dc": ("multi_bottleneck_dc.toml", "multi_bottleneck_dc_topology.toml", "delay_us = 1\n"),
}
PARTS = [
    "single-paper",
    "multi-paper",
    "multi-dc",
    "single-dc",
    "rates-paper",
    "trace-paper",
    "interval-paper",
]
TRACE_MS = 20_000  # the traced runs' length (paper scale)
# Link-rate sensitivity (the late packets' explanation): Fig. 2a with the
# bottleneck (and host links) x10 and x100, the same delays and deadlines,
# the buffer the same in time; shorter runs, a few schemes, 3 seeds.
RATES = [(10, 0.01, 300), (100, 0.1, 3000), (1000, 1.0, 30000)]  # (Mb/s, gbps, buffer KB)
RATE_SCHEMES = ["p4qos", "p4qos_interval", "p4qos_codel", "noaqm"]
RATE_MS = 20_000
DURATION_MS = 60_000  # the paper's 60 s flows (paper scale)
JITTER_MS = 100  # second flow's start offset, uniform in [0, 100 ms)
# d1 (ms at paper scale, us at DC scale); d2 = 2 d1.
D1_FULL = [10, 20, 30, 40, 50]
D1_QUICK = [10, 20, 40]
LLEP_MS = [0.1, 1, 5, 10, 25]
BACKOFFS = ["none", "fixed", "adaptive"]
# t_{0.975, n-1} for the 95% confidence interval.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


# `--report-only`: read the finished points back, run nothing.
READ_ONLY = False


def run_points(pts: list, out: Path, workers: int | None, run: bool | None = None) -> dict:
    """P.run_points, or (`--report-only`, `run=False`) the finished points only."""
    return P.run_points(pts, out, workers, run=not READ_ONLY if run is None else run)


class Mode:
    def __init__(self, quick: bool = False, smoke: bool = False, seeds: int | None = None) -> None:
        self.smoke = smoke
        self.seeds = [1] if smoke else [1, 2, 3] if quick else list(range(1, 11))
        if seeds is not None:
            self.seeds = self.seeds[:seeds]
        self.d1 = [20] if smoke else D1_QUICK if quick else D1_FULL
        self.duration_ms = 5000 if smoke else DURATION_MS
        self.slices = not smoke
        self.llep = LLEP_MS[:2] if smoke else LLEP_MS


def ci(xs: list[float]) -> tuple[float, float]:
    """Mean and half-width of the 95% confidence interval."""
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    if not xs:
        return float("nan"), float("nan")
    m = statistics.mean(xs)
    if len(xs) < 2:
        return m, 0.0
    return m, T975.get(len(xs) - 1, 1.96) * statistics.stdev(xs) / math.sqrt(len(xs))


def fmt(xs: list[float], digits: int = 1) -> str:
    m, h = ci(xs)
    if math.isnan(m):
        return "-"
    return f"{m:.{digits}f} ± {h:.{digits}f}"


# ---------------------------------------------------------------- flow lists


def start_jitter(seed: int) -> float:
    """The second flow's start offset (ms at paper scale) of a seed."""
    return random.Random(seed).uniform(0, JITTER_MS)


def flow_list(out: Path, name: str, rows: list[tuple]) -> Path:
    """Writes a flow list (start_us, src, dst, duration_us, deadline_us) once."""
    path = out / "flows" / f"{name}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "start_us,src,dst,bytes,duration_us,deadline_us\n" + "".join(
        f"{s:.3f},{a},{b},,{d:.3f},{'' if dl is None else f'{dl:g}'}\n" for s, a, b, d, dl in rows
    )
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path.resolve()


def single_points(mode: Mode, out: Path, scale: str) -> list[tuple]:
    """(scale, scheme, d1, seed, config, sets) of Fig. 3."""
    config, unit, _ = SCALES[scale]
    k = unit / 1000.0  # paper ms -> this scale's ms
    pts = []
    # Seed by seed: a full run cut short has every d1 of its first seeds.
    for seed in mode.seeds:
        for d1 in mode.d1:
            dur_us = mode.duration_ms * 1000 * k
            rows = [
                (0.0, 0, 2, dur_us, d1 * unit),
                (start_jitter(seed) * 1000 * k, 1, 3, dur_us, 2 * d1 * unit),
            ]
            f = flow_list(out, f"single-{scale}-d{d1}-s{seed}-{mode.duration_ms}", rows)
            for scheme in SCHEMES:
                sets = [
                    f"scheme.kind={scheme}",
                    f"run.seed={seed}",
                    f"workload.file={f}",
                    f"run.max_sim_time_ms={(mode.duration_ms + JITTER_MS + 1000) * k:g}",
                ]
                pts.append((scale, scheme, d1, seed, HERE / config, sets))
    return pts


def single_row(pt: tuple, point: P.Point, mode: Mode) -> dict:
    scale, scheme, d1, seed, _, _ = pt
    r = point.row
    flows = point.flows().sort_values("id")
    delivered = [float(x) for x in flows["delivered"]]
    missed = [float(x) for x in flows["deadline_missed_packets"]]
    pkts = [float(x) for x in flows["delay_packets"]]
    _, unit, rate = SCALES[scale]
    dur_s = mode.duration_ms * 1e-3 * unit / 1000.0
    jain = sum(delivered) ** 2 / (len(delivered) * sum(d * d for d in delivered))
    return {
        "scale": scale,
        "scheme": scheme,
        "d1": d1,
        "seed": seed,
        "late": 100 * (r.get("flow_stats_deadline_missed_fraction") or 0),
        "late1": 100 * missed[0] / pkts[0] if pkts[0] else None,
        "late2": 100 * missed[1] / pkts[1] if pkts[1] else None,
        # In the network: packets whose deadline d ran out at a switch (the
        # host links are not in d; docs/schemes/p4qos.md), both flows.
        "late_sw": 100 * point.get("switches_counters_qos_deadline_missed_packets", 0) / sum(pkts)
        if sum(pkts)
        else None,
        "util": 100 * sum(delivered) * 8 / (rate * dur_s),
        "jain": jain,
        "delay_mean": r.get("flow_stats_delay_us_mean"),
        "delay_max": r.get("flow_stats_delay_us_max"),
        "rtt_mean": r.get("flow_stats_rtt_us_mean"),
        "rtt_p99": r.get("flow_stats_rtt_us_p99"),
        "rtt_max": r.get("flow_stats_rtt_us_max"),
        "updates": point.get("switches_counters_p4qos_target_updates_packets", 0),
        "marks": point.get("switches_counters_aqm_marks_packets", 0),
        "packets": sum(pkts),
    }


# The d1 flow's path outside the S1 -> S2 queue at paper scale (ms): the
# host links (0.1 ms + 1518 B at 100 Mb/s each), S1 -> S2 (0.1 ms + 1527 B
# with the QoS header at 10 Mb/s); and LL_est of S1 -> S2, what P4QoS
# subtracts (0.1 ms + (1527 + 64) B at 10 Mb/s / 2; docs/schemes/p4qos.md).
PATH_MS = 2 * (0.1 + 1518 * 8 / 100e3) + 0.1 + 1527 * 8 / 10e3
LL_EST_MS = 0.1 + (1527 + 64) * 8 / 10e3 / 2


def run_single(
    mode: Mode, out: Path, workers: int | None, scale: str, run: bool | None = None
) -> list[dict]:
    pts = single_points(mode, out, scale)
    got = run_points([(p[4], p[5]) for p in pts], out, workers, run)
    return [single_row(p, got[P.point_key(p[4], p[5])], mode) for p in pts]


def fig3_tables(rows: list[dict], scale: str, mode: Mode) -> str:
    ms = scale == "paper"
    u = "ms" if ms else "us"
    div = 1000.0 if ms else 1.0
    metrics = [
        ("util", "Fig. 3a: utilization (%)", 1, 1),
        ("jain", "Fig. 3b: Jain's fairness index", 2, 1),
        ("delay_max", f"Fig. 3c: maximum one-way delay ({u})", 1, div),
        ("delay_mean", f"average one-way delay ({u})", 1, div),
        ("rtt_mean", f"average RTT ({u})", 1, div),
        ("rtt_p99", f"99th-percentile RTT ({u})", 1, div),
        ("rtt_max", f"maximum RTT ({u})", 1, div),
        ("late", "Fig. 3d-3h: packets past their deadline, both flows (%)", 2, 1),
        ("late1", "packets past their deadline, the d1 flow (%)", 2, 1),
        ("late2", "packets past their deadline, the d2 = 2 d1 flow (%)", 2, 1),
        (
            "late_sw",
            "packets whose deadline ran out inside the network (switch counter "
            "`qos_deadline_missed`: the host links not counted), both flows (%)",
            2,
            1,
        ),
        ("updates", "target updates sent", 0, 1),
    ]
    out = []
    for key, title, digits, scale_div in metrics:
        out.append(f"**{title}**\n")
        out.append("| scheme | " + " | ".join(f"d1 = {d} {u}" for d in mode.d1) + " |")
        out.append("|---" * (len(mode.d1) + 1) + "|")
        for s in SCHEMES:
            cells = []
            for d in mode.d1:
                xs = [
                    r[key] / scale_div
                    for r in rows
                    if r["scheme"] == s and r["d1"] == d and r[key] is not None
                ]
                cells.append(fmt(xs, digits))
            out.append(f"| {NAMES[s]} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def late_check(rows: list[dict], mode: Mode) -> str:
    """P4QoS's late packets beside its marks (paper scale): it marks every
    packet that queued longer than trgt, and at 10 Mb/s such a packet is
    late (docs/results/p4qos.md)."""
    out = [
        "**P4QoS: the d1 flow's late packets (%) / packets P4QoS marked, both flows "
        "(% of their data packets)**: P4QoS marks exactly the packets that queued "
        f"longer than trgt = d1 - LL_est = d1 - {LL_EST_MS:.2f} ms, and a d1 packet is "
        f"late once it queued longer than d1 - {PATH_MS:.2f} ms (the rest of its path)\n"
    ]
    out.append("| scheme | " + " | ".join(f"d1 = {d} ms" for d in mode.d1) + " |")
    out.append("|---" * (len(mode.d1) + 1) + "|")
    cells = []
    for d in mode.d1:
        rs = [r for r in rows if r["scheme"] == "p4qos" and r["d1"] == d]
        late = ci([r["late1"] for r in rs])[0]
        marked = ci([100 * r["marks"] / r["packets"] for r in rs if r["packets"]])[0]
        cells.append(f"{late:.1f} / {marked:.1f}")
    out.append(f"| {NAMES['p4qos']} | " + " | ".join(cells) + " |")
    out.append("")
    return "\n".join(out)


def fig3_plot(rows: list[dict], scale: str, mode: Mode) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    u = "ms" if scale == "paper" else "us"
    div = 1000.0 if scale == "paper" else 1.0
    panels = [
        ("util", "utilization (%)", 1),
        ("jain", "Jain's index", 1),
        ("delay_max", f"max one-way delay ({u})", div),
        ("late1", "late packets, d1 flow (%)", 1),
        ("late2", "late packets, d2 flow (%)", 1),
        ("late", "late packets, both (%)", 1),
    ]
    fig, axes = plt.subplots(2, 3, figsize=(13, 7))
    for ax, (key, label, dv) in zip(axes.flat, panels, strict=False):
        for s in SCHEMES:
            ms, hs = [], []
            for d in mode.d1:
                m, h = ci([r[key] / dv for r in rows if r["scheme"] == s and r["d1"] == d])
                ms.append(m)
                hs.append(h)
            ax.errorbar(mode.d1, ms, yerr=hs, marker="o", capsize=3, label=NAMES[s])
        if key == "delay_max":
            ax.set_yscale("log")  # Prio's starved flow waits the whole run
        ax.set_xlabel(f"d1 ({u}; d2 = 2 d1)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(f"P4QoS Fig. 3 reproduction, {scale} scale (95% CI over {len(mode.seeds)} seeds)")
    fig.tight_layout()
    FIGS.mkdir(parents=True, exist_ok=True)
    name = f"fig3_{scale}.png"
    fig.savefig(FIGS / name, dpi=90)
    plt.close(fig)
    return name


# ---------------------------------------------------------------- Interval P4QoS's reset


def run_interval(mode: Mode, out: Path, workers: int | None, paper: list[dict]) -> str:
    """Interval P4QoS with `scheme.p4qos.interval_reset = "quiet_interval"`
    (docs/schemes/p4qos.md) on Fig. 3's points at paper scale, beside the
    default reading (Fig. 3's own Interval P4QoS rows)."""
    pts = []
    for _, _, d1, seed, cfg, sets in single_points(mode, out, "paper"):
        if "scheme.kind=p4qos_interval" in sets:
            pts.append((d1, seed, cfg, [*sets, "scheme.p4qos.interval_reset=quiet_interval"]))
    got = run_points([(p[2], p[3]) for p in pts], out, workers)
    rows = [
        {
            **single_row(
                ("paper", "p4qos_interval", d1, seed, cfg, sets), got[P.point_key(cfg, sets)], mode
            ),
            "reset": "quiet_interval",
        }
        for d1, seed, cfg, sets in pts
    ]
    rows += [{**r, "reset": "below_target"} for r in paper if r["scheme"] == "p4qos_interval"]
    metrics = [
        ("late1", "late, d1 flow (%)", 2, 1.0),
        ("late2", "late, d2 flow (%)", 2, 1.0),
        ("late_sw", "late in the network, both (%)", 2, 1.0),
        ("util", "utilization (%)", 1, 1.0),
        ("jain", "Jain's index", 2, 1.0),
        ("delay_mean", "average one-way delay (ms)", 1, 1000.0),
        ("delay_max", "maximum one-way delay (ms)", 1, 1000.0),
        ("rtt_max", "maximum RTT (ms)", 1, 1000.0),
        ("marks", "marks", 0, 1.0),
    ]
    out_ = [
        '**Interval P4QoS, two readings of its reset** (section III: "if a packet is '
        "marked the interval is reduced, otherwise the interval is reset to its default "
        "value\"): `below_target` (the default, Fig. 3's rows: any packet at or below "
        "trgt resets the interval) and `quiet_interval` (`scheme.p4qos.interval_reset`: "
        "only an interval without a packet above trgt resets it); "
        f"{len(mode.seeds)} seeds, paper scale\n",
        "| metric | reset | " + " | ".join(f"d1 = {d} ms" for d in mode.d1) + " |",
        "|---" * (len(mode.d1) + 2) + "|",
    ]
    for key, title, digits, div in metrics:
        for reset in ["below_target", "quiet_interval"]:
            cells = []
            for d in mode.d1:
                xs = [
                    r[key] / div
                    for r in rows
                    if r["reset"] == reset and r["d1"] == d and r[key] is not None
                ]
                cells.append(fmt(xs, digits))
            out_.append(f"| {title} | {reset} | " + " | ".join(cells) + " |")
    out_.append("")
    return "\n".join(out_)


# ---------------------------------------------------------------- traced d1 packets


def run_trace(mode: Mode, out: Path, workers: int | None) -> str:
    """P4QoS at paper scale, seed 1, the d1 flow's packets traced hop by hop
    (`[metrics.trace]`): which of them were late, and why (docs/results/p4qos.md)."""
    import pandas as pd

    from pisanet import database

    dur = 3000 if mode.smoke else TRACE_MS
    pts = []
    for d1 in mode.d1:
        rows = [
            (0.0, 0, 2, mode.duration_ms * 1000.0, d1 * 1000),
            (start_jitter(1) * 1000, 1, 3, mode.duration_ms * 1000.0, 2 * d1 * 1000),
        ]
        f = flow_list(out, f"single-paper-d{d1}-s1-{mode.duration_ms}", rows)
        sets = [
            "scheme.kind=p4qos",
            "run.seed=1",
            f"workload.file={f}",
            f"run.max_sim_time_ms={dur}",
            "metrics.trace.flows=[0]",
        ]
        pts.append((d1, HERE / SCALES["paper"][0], sets))
    got = run_points([(p[1], p[2]) for p in pts], out, workers)
    trgt_ms = LL_EST_MS
    out_ = [
        "**P4QoS's late d1 packets, one by one** (seed 1, the first "
        f"{dur / 1000:g} s, packets sent after 1 s; `[metrics.trace]` of the d1 "
        "flow): late (% of the d1 flow's packets) = above trgt (queued at S1 -> S2 "
        f"longer than trgt = d1 - {trgt_ms:.2f} ms: marked) + below trgt, late "
        f"(queued between d1 - {PATH_MS:.2f} ms and trgt: not marked, still late); "
        "the longest queueing of an on-time packet and the shortest of a late one "
        "(ms)\n",
        "| d1 | late | above trgt (marked) | below trgt, late | on-time max queueing | "
        "late min queueing |",
        "|---|---|---|---|---|---|",
    ]
    for d1, cfg, sets in pts:
        point = got[P.point_key(cfg, sets)]
        tr = database.query(
            point.directory,
            "SELECT time, node, port, event, packet FROM trace "
            f"WHERE point_id = '{point.point_id}' AND size > 1000",
        )
        first = tr[(tr.node == "h1") & (tr.event == "enqueue")].groupby("packet").time.min()
        at = tr[tr.port == "S1->S2"]
        enq = at[at.event == "enqueue"].groupby("packet").time.first()
        deq = at[at.event == "dequeue"].groupby("packet").time.first()
        out_t = tr[(tr.port == "S2->h3") & (tr.event == "dequeue")].groupby("packet").time.first()
        # The last link after its dequeue: 1518 B at 100 Mb/s and 0.1 ms.
        owd = out_t + 1518 * 8 / 100 + 100 - first
        q = (deq - enq).reindex(owd.index)
        both = pd.DataFrame({"owd": owd, "q": q, "sent": first.reindex(owd.index)}).dropna()
        both = both[both.sent > 1e6]
        owd, q = both.owd, both.q
        late = owd > d1 * 1000
        above = q > (d1 - LL_EST_MS) * 1000
        n = len(owd)
        if not n:
            continue
        out_.append(
            f"| {d1} ms | {100 * late.mean():.1f} | {100 * (late & above).sum() / n:.1f} | "
            f"{100 * (late & ~above).sum() / n:.1f} | {q[~late].max() / 1000:.2f} | "
            f"{q[late].min() / 1000 if late.any() else float('nan'):.2f} |"
        )
    out_.append("")
    return "\n".join(out_)


# ---------------------------------------------------------------- link rates


def rate_topology(out: Path, gbps: float) -> Path:
    """Fig. 2a's topology with the bottleneck at `gbps` and the hosts at 10x."""
    text = (HERE / "single_bottleneck_topology.toml").read_text()
    text = text.replace("gbps = 0.1\n", f"gbps = {gbps * 10:g}\n")
    text = text.replace("gbps = 0.01\n", f"gbps = {gbps:g}\n")
    path = out / "topologies" / f"single_{gbps:g}gbps.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path.resolve()


def rate_points(mode: Mode, out: Path) -> list[tuple]:
    """(mbps, scheme, d1, seed, config, sets): P4QoS's late packets against
    the link rate (paper-scale delays and deadlines)."""
    pts = []
    dur_ms = 2000 if mode.smoke else RATE_MS
    seeds = mode.seeds[:3]
    for seed in seeds:
        for d1 in mode.d1[:1] if mode.smoke else D1_QUICK:
            rows = [
                (0.0, 0, 2, dur_ms * 1000.0, d1 * 1000),
                (start_jitter(seed) * 1000, 1, 3, dur_ms * 1000.0, 2 * d1 * 1000),
            ]
            f = flow_list(out, f"rates-d{d1}-s{seed}-{dur_ms}", rows)
            for mbps, gbps, buf in RATES:
                for scheme in RATE_SCHEMES:
                    sets = [
                        f"scheme.kind={scheme}",
                        f"run.seed={seed}",
                        f"workload.file={f}",
                        f"topology.file={rate_topology(out, gbps)}",
                        f"topology.buffer_kb={buf}",
                        f"run.max_sim_time_ms={dur_ms + JITTER_MS + 1000}",
                    ]
                    pts.append((mbps, scheme, d1, seed, HERE / SCALES["paper"][0], sets))
    return pts


def run_rates(mode: Mode, out: Path, workers: int | None) -> str:
    pts = rate_points(mode, out)
    got = run_points([(p[4], p[5]) for p in pts], out, workers)
    dur_ms = 2000 if mode.smoke else RATE_MS
    rows = []
    for mbps, scheme, d1, _seed, cfg, sets in pts:
        point = got[P.point_key(cfg, sets)]
        flows = point.flows().sort_values("id")
        pk = [float(x) for x in flows["delay_packets"]]
        ms = [float(x) for x in flows["deadline_missed_packets"]]
        rows.append(
            {
                "mbps": mbps,
                "scheme": scheme,
                "d1": d1,
                "late1": 100 * ms[0] / pk[0] if pk[0] else None,
                "util": 100 * float(flows["delivered"].sum()) * 8 / (mbps * 1e6 * dur_ms / 1000),
                "delay_mean": point.get("flow_stats_delay_us_mean"),
            }
        )
    d1s = sorted({r["d1"] for r in rows})
    out_ = [
        "**Link-rate sensitivity: the d1 flow's late packets (%) / utilization (%) / "
        "average one-way delay (ms)**, Fig. 2a with the bottleneck at 10, 100 and "
        "1000 Mb/s (host links 10x), the same delays, deadlines (d2 = 2 d1) and "
        f"buffer in time (240 ms); {len(mode.seeds[:3])} seeds, {dur_ms / 1000:g} s runs\n"
    ]
    out_.append("| scheme | rate | " + " | ".join(f"d1 = {d} ms" for d in d1s) + " |")
    out_.append("|---" * (len(d1s) + 2) + "|")
    for s in RATE_SCHEMES:
        for mbps, _, _ in RATES:
            cells = []
            for d in d1s:
                rs = [r for r in rows if r["scheme"] == s and r["mbps"] == mbps and r["d1"] == d]
                if not rs:
                    cells.append("-")
                    continue
                late = ci([r["late1"] for r in rs])[0]
                util = ci([r["util"] for r in rs])[0]
                delay = ci([r["delay_mean"] / 1000 for r in rs])[0]
                cells.append(f"{late:.2f} / {util:.1f} / {delay:.1f}")
            out_.append(f"| {NAMES[s]} | {mbps} Mb/s | " + " | ".join(cells) + " |")
    out_.append("")
    return "\n".join(out_)


# ---------------------------------------------------------------- Fig. 2b / 4


def multi_flows(out: Path, seed: int, mode: Mode, scale: str) -> Path:
    k = SCALES[scale][1] / 1000.0  # paper ms -> this scale's ms
    dur = mode.duration_ms * 1000.0 * k
    # Cross traffic: C1 -> S1 from 10 to 40 s, C2 -> S2 from 20 to 50 s
    # (scaled with the run length in --smoke, and /1000 at DC scale).
    f = mode.duration_ms / DURATION_MS * k
    rows = [
        (0.0, 0, 2, dur, 40_000 * k),
        (start_jitter(seed) * 1000 * k, 1, 3, dur, 80_000 * k),
        (10e6 * f, 4, 5, 30e6 * f, None),
        (20e6 * f, 6, 7, 30e6 * f, None),
    ]
    return flow_list(out, f"multi-{scale}-s{seed}-{mode.duration_ms}", rows)


def multi_points(mode: Mode, out: Path, scale: str) -> list[tuple]:
    """(kind, backoff, seed, length in paper ms, config, sets)."""
    pts = []
    cfg = HERE / MULTI[scale][0]
    k = SCALES[scale][1] / 1000.0
    end = mode.duration_ms + JITTER_MS + 1000
    for seed in mode.seeds:
        f = multi_flows(out, seed, mode, scale)
        for b in BACKOFFS:
            sets = [
                "scheme.kind=p4qos",
                f"run.seed={seed}",
                f"workload.file={f}",
                f"scheme.p4qos.backoff={b}",
                f"run.max_sim_time_ms={end * k:g}",
            ]
            pts.append(("updates", b, seed, end, cfg, sets))
        if mode.slices:
            # Fig. 4b: the bottleneck counts are cumulative counters; runs
            # cut at 10, 20, ... s share their prefix (a run is
            # deterministic), so differences give each slice's counts.
            for t in range(10_000, mode.duration_ms + 1, 10_000):
                sets = [
                    "scheme.kind=p4qos",
                    f"run.seed={seed}",
                    f"workload.file={f}",
                    f"run.max_sim_time_ms={t * k:g}",
                ]
                pts.append(("slice", "none", seed, t, cfg, sets))
    return pts


def llep_topology(out: Path, ms: float, scale: str) -> Path:
    """Fig. 2b's topology with the switch links' delay `ms` (paper ms: /1000 at DC scale)."""
    _, topo, line = MULTI[scale]
    k = SCALES[scale][1] / 1000.0
    text = (HERE / topo).read_text()
    assert line in text, (topo, line)
    text = text.replace(line, f"delay_us = {ms * 1000 * k:g}\n")
    path = out / "topologies" / f"multi_llep_{scale}_{ms:g}ms.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path.resolve()


def llep_points(mode: Mode, out: Path, scale: str) -> list[tuple]:
    cfg = HERE / MULTI[scale][0]
    k = SCALES[scale][1] / 1000.0
    f = multi_flows(out, 1, mode, scale)
    pts = []
    for ms in mode.llep:
        sets = [
            "scheme.kind=p4qos",
            "run.seed=1",
            f"workload.file={f}",
            f"topology.file={llep_topology(out, ms, scale)}",
            f"run.max_sim_time_ms={5000 * k:g}",
        ]
        pts.append(("llep", ms, 1, 5000, cfg, sets))
    return pts


def run_multi(
    mode: Mode, out: Path, workers: int | None, scale: str
) -> tuple[list[dict], list[dict]]:
    pts = multi_points(mode, out, scale) + llep_points(mode, out, scale)
    _, unit, rate = SCALES[scale]
    dur_s = mode.duration_ms * 1e-3 * unit / 1000.0
    got = run_points([(p[4], p[5]) for p in pts], out, workers)
    rows, llep = [], []
    for p in pts:
        point = got[P.point_key(p[4], p[5])]
        kind, b, seed, length, _, _ = p
        if kind == "llep":
            n = point.get("switches_counters_qos_llep_estimate_ns_packets", 0)
            s = point.get("switches_counters_qos_llep_estimate_ns_bytes", 0)
            # Estimates in ns (the counter's bytes).
            llep.append({"ms": b, "replies": n, "est_ns": s / n if n else None})
            continue
        flows = point.flows().sort_values("id")
        delivered = [float(x) for x in flows["delivered"]]
        rows.append(
            {
                "kind": kind,
                "backoff": b,
                "seed": seed,
                "length": length,
                "updates": point.get("switches_counters_p4qos_target_updates_packets", 0),
                "nbtl": [
                    point.get(f"switches_counters_p4qos_nbtl_{k}_packets", 0)
                    for k in ["0", "1", "2", "3plus"]
                ],
                "late": 100 * (point.get("flow_stats_deadline_missed_fraction", 0)),
                # The two deadline flows over the switch links.
                "util": 100 * sum(delivered[:2]) * 8 / (rate * dur_s),
            }
        )
    return rows, llep


def fig4_tables(rows: list[dict], llep: list[dict], mode: Mode, scale: str) -> str:
    out = []
    _, unit, rate = SCALES[scale]
    # Paper scale: configured ms, estimates in us; DC scale: us and ns.
    big, small = ("ms", "us") if scale == "paper" else ("us", "ns")
    per_small = unit  # ns per `small` unit (us: 1000, ns: 1)
    # 4a
    out.append("**Fig. 4a: LLEP estimate against the configured latency of the switch links**\n")
    out.append(
        f"| configured ({big}) | replies | mean estimate ({small}) | error ({small}) | "
        f"error (%) | ideal error: half the data + reply serialization ({small}) |"
    )
    out.append("|---|---|---|---|---|---|")
    # The stamped packet is a full segment (1518 wire bytes with MSS 1460)
    # plus the 9-byte QoS header; the reply is 64 bytes.
    ideal = (1518 + 9 + 64) * 8 / rate / 2 * 1e9 / per_small
    for r in sorted(llep, key=lambda x: x["ms"]):
        if r["est_ns"] is None:
            out.append(f"| {r['ms']:g} | 0 | - | - | - | - |")
            continue
        est = r["est_ns"] / per_small
        conf = r["ms"] * 1000  # in `small` units at either scale
        err = est - conf
        out.append(
            f"| {r['ms']:g} | {r['replies']} | {est:.1f} | {err:.1f} | "
            f"{100 * err / conf:.2f} | {ideal:.1f} |"
        )
    out.append("")
    # 4b
    out.append(
        "**Fig. 4b: share of packets at the last switch by bottleneck count n_btl, "
        f"per 10 {'s' if scale == 'paper' else 'ms'} slice (%, P4QoS without back-off)**\n"
    )
    sl = [r for r in rows if r["kind"] == "slice"]
    if sl:
        ends = sorted({r["length"] for r in sl})
        sl_unit = "s" if scale == "paper" else "ms"
        out.append(
            "| n_btl | "
            + " | ".join(f"{(t - 10000) // 1000}-{t // 1000} {sl_unit}" for t in ends)
            + " |"
        )
        out.append("|---" * (len(ends) + 1) + "|")
        shares: dict[int, list[list[float]]] = {k: [] for k in range(4)}
        for i, t in enumerate(ends):
            per_seed = []
            for seed in mode.seeds:
                cur = next(r for r in sl if r["seed"] == seed and r["length"] == t)
                prev = (
                    next(r for r in sl if r["seed"] == seed and r["length"] == ends[i - 1])
                    if i
                    else None
                )
                diff = [c - (prev["nbtl"][k] if prev else 0) for k, c in enumerate(cur["nbtl"])]
                tot = sum(diff)
                per_seed.append([100 * d / tot if tot else 0 for d in diff])
            for k in range(4):
                shares[k].append([p[k] for p in per_seed])
        for k in range(4):
            label = "3+" if k == 3 else str(k)
            out.append(f"| {label} | " + " | ".join(fmt(xs, 1) for xs in shares[k]) + " |")
        out.append("")
    # 4c
    out.append(
        f"**Fig. 4c: target updates per 60 {'s' if scale == 'paper' else 'ms'}, "
        "late packets and utilization by back-off**\n"
    )
    out.append(
        "| back-off | target updates | late packets (%) | utilization of the deadline flows (%) |"
    )
    out.append("|---|---|---|---|")
    for b in BACKOFFS:
        rs = [r for r in rows if r["kind"] == "updates" and r["backoff"] == b]
        out.append(
            f"| {b} | {fmt([r['updates'] for r in rs], 0)} | {fmt([r['late'] for r in rs], 2)} | "
            f"{fmt([r['util'] for r in rs], 1)} |"
        )
    out.append("")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="3 seeds, 3 deadlines (minutes)")
    g.add_argument("--smoke", action="store_true", help="one short run per scheme; writes nothing")
    ap.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="only the first N seeds of the mode (the page says how many)",
    )
    ap.add_argument(
        "--part",
        choices=PARTS,
        action="append",
        default=None,
        help="run only these parts (repeatable); prints their tables, writes nothing",
    )
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="write the tables from the finished points; run nothing",
    )
    P.add_arguments(ap, OUT)
    args = ap.parse_args()
    global READ_ONLY
    READ_ONLY = args.report_only
    mode = Mode(quick=args.quick, smoke=args.smoke, seeds=args.seeds)
    out = args.out / P.mode_name(args)
    if args.smoke:
        P.smoke_threads()
    parts_run = args.part or PARTS
    sections: dict[str, str] = {}
    paper_rows: list[dict] = []
    for part in parts_run:
        kind, scale = part.split("-")
        if kind == "rates":
            body = [run_rates(mode, out, args.workers)]
        elif kind == "trace":
            body = [run_trace(mode, out, args.workers)]
        elif kind == "interval":
            if not paper_rows:
                # Fig. 3's own Interval P4QoS rows: read back, never rerun here.
                paper_rows = run_single(mode, out, args.workers, "paper", run=False)
            body = [run_interval(mode, out, args.workers, paper_rows)]
        elif kind == "single":
            rows = run_single(mode, out, args.workers, scale)
            if scale == "paper":
                paper_rows = rows
            title = (
                "paper scale (10 Mb/s bottleneck, d1 in ms)"
                if scale == "paper"
                else "data-center scale (10 Gb/s bottleneck, every time /1000, d1 in us)"
            )
            body = [f"### Fig. 3, {title}\n", fig3_tables(rows, scale, mode)]
            if scale == "paper":
                body.append(late_check(rows, mode))
            if not args.smoke and args.part is None:
                name = fig3_plot(rows, scale, mode)
                if name:
                    body.append(f"![Fig. 3 at {scale} scale](p4qos/{name})\n")
        else:
            mrows, llep = run_multi(mode, out, args.workers, scale)
            title = (
                "paper scale (10 Mb/s switch links, d1 = 40 ms, d2 = 80 ms)"
                if scale == "paper"
                else "data-center scale (10 Gb/s switch links, every time /1000, "
                "d1 = 40 us, d2 = 80 us)"
            )
            body = [f"### Fig. 4, multiple bottlenecks, {title}\n"]
            body.append(fig4_tables(mrows, llep, mode, scale))
        sections[part] = "\n".join(body)
        print(sections[part], flush=True)
    if args.smoke or args.part is not None:
        return
    head = (
        f"Produced by `experiments/p4qos/run.py{' --quick' if args.quick else ''}"
        f"{f' --seeds {args.seeds}' if args.seeds else ''}` "
        f"({len(mode.seeds)} seeds, d1 in {mode.d1}, {mode.duration_ms / 1000:g} s flows at "
        "paper scale). Mean ± 95% confidence interval over the seeds.\n"
    )
    order = [
        "single-paper",
        "trace-paper",
        "rates-paper",
        "interval-paper",
        "single-dc",
        "multi-paper",
        "multi-dc",
    ]
    page = "\n".join([head] + [sections[p] for p in order])
    # NOTE: --quick writes docs/ too: the committed tables say which mode made them.
    P.write_section(DOC, "results", page)
    print(f"wrote {DOC}", file=sys.stderr)


if __name__ == "__main__":
    main()
