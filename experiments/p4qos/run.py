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
DURATION_MS = 60_000  # the paper's 60 s flows (paper scale)
JITTER_MS = 100  # second flow's start offset, uniform in [0, 100 ms)
# d1 (ms at paper scale, us at DC scale); d2 = 2 d1.
D1_FULL = [10, 20, 30, 40, 50]
D1_QUICK = [10, 20, 40]
LLEP_MS = [0.1, 1, 5, 10, 25]
BACKOFFS = ["none", "fixed", "adaptive"]
# t_{0.975, n-1} for the 95% confidence interval.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


class Mode:
    def __init__(self, quick: bool = False, smoke: bool = False) -> None:
        self.smoke = smoke
        self.seeds = [1] if smoke else [1, 2, 3] if quick else list(range(1, 11))
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
    for d1 in mode.d1:
        for seed in mode.seeds:
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
        "util": 100 * sum(delivered) * 8 / (rate * dur_s),
        "jain": jain,
        "delay_mean": r.get("flow_stats_delay_us_mean"),
        "delay_max": r.get("flow_stats_delay_us_max"),
        "rtt_mean": r.get("flow_stats_rtt_us_mean"),
        "rtt_p99": r.get("flow_stats_rtt_us_p99"),
        "rtt_max": r.get("flow_stats_rtt_us_max"),
        "updates": point.get("switches_counters_p4qos_target_updates_packets", 0),
        "marks": point.get("switches_counters_aqm_marks_packets", 0),
    }


def run_single(mode: Mode, out: Path, workers: int | None, scale: str) -> list[dict]:
    pts = single_points(mode, out, scale)
    got = P.run_points([(p[4], p[5]) for p in pts], out, workers)
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


# ---------------------------------------------------------------- Fig. 2b / 4


def multi_flows(out: Path, seed: int, mode: Mode, length_ms: float | None = None) -> Path:
    dur = mode.duration_ms * 1000.0
    # Cross traffic: C1 -> S1 from 10 to 40 s, C2 -> S2 from 20 to 50 s
    # (scaled with the run length in --smoke).
    f = mode.duration_ms / DURATION_MS
    rows = [
        (0.0, 0, 2, dur, 40_000),
        (start_jitter(seed) * 1000, 1, 3, dur, 80_000),
        (10e6 * f, 4, 5, 30e6 * f, None),
        (20e6 * f, 6, 7, 30e6 * f, None),
    ]
    return flow_list(out, f"multi-s{seed}-{mode.duration_ms}", rows)


def multi_points(mode: Mode, out: Path) -> list[tuple]:
    """(kind, backoff, seed, length_ms, config, sets)."""
    pts = []
    cfg = HERE / "multi_bottleneck.toml"
    end = mode.duration_ms + JITTER_MS + 1000
    for seed in mode.seeds:
        f = multi_flows(out, seed, mode)
        for b in BACKOFFS:
            sets = [
                "scheme.kind=p4qos",
                f"run.seed={seed}",
                f"workload.file={f}",
                f"scheme.p4qos.backoff={b}",
                f"run.max_sim_time_ms={end}",
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
                    f"run.max_sim_time_ms={t}",
                ]
                pts.append(("slice", "none", seed, t, cfg, sets))
    return pts


def llep_topology(out: Path, ms: float) -> Path:
    text = (HERE / "multi_bottleneck_topology.toml").read_text()
    text = text.replace("delay_us = 1000\n", f"delay_us = {ms * 1000:g}\n")
    path = out / "topologies" / f"multi_llep_{ms:g}ms.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path.resolve()


def llep_points(mode: Mode, out: Path) -> list[tuple]:
    cfg = HERE / "multi_bottleneck.toml"
    f = multi_flows(out, 1, mode)
    pts = []
    for ms in mode.llep:
        sets = [
            "scheme.kind=p4qos",
            "run.seed=1",
            f"workload.file={f}",
            f"topology.file={llep_topology(out, ms)}",
            "run.max_sim_time_ms=5000",
        ]
        pts.append(("llep", ms, 1, 5000, cfg, sets))
    return pts


def run_multi(mode: Mode, out: Path, workers: int | None) -> tuple[list[dict], list[dict]]:
    pts = multi_points(mode, out) + llep_points(mode, out)
    got = P.run_points([(p[4], p[5]) for p in pts], out, workers)
    rows, llep = [], []
    for p in pts:
        point = got[P.point_key(p[4], p[5])]
        kind, b, seed, length, _, _ = p
        if kind == "llep":
            n = point.get("switches_counters_qos_llep_estimate_ns_packets", 0)
            s = point.get("switches_counters_qos_llep_estimate_ns_bytes", 0)
            llep.append({"ms": b, "replies": n, "est_us": s / n / 1000 if n else None})
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
                # The two deadline flows over the 10 Mb/s links.
                "util": 100 * sum(delivered[:2]) * 8 / (10e6 * mode.duration_ms / 1000),
            }
        )
    return rows, llep


def fig4_tables(rows: list[dict], llep: list[dict], mode: Mode) -> str:
    out = []
    # 4a
    out.append("**Fig. 4a: LLEP estimate against the configured latency of the switch links**\n")
    out.append(
        "| configured (ms) | replies | mean estimate (us) | error (us) | error (%) | "
        "ideal error: half the data + reply serialization (us) |"
    )
    out.append("|---|---|---|---|---|---|")
    # The stamped packet is a full segment (1518 wire bytes with MSS 1460)
    # plus the 9-byte QoS header; the reply is 64 bytes; 10 Mb/s links.
    ideal = (1518 + 9 + 64) * 8 / 10e6 / 2 * 1e6
    for r in sorted(llep, key=lambda x: x["ms"]):
        if r["est_us"] is None:
            out.append(f"| {r['ms']:g} | 0 | - | - | - | - |")
            continue
        err = r["est_us"] - r["ms"] * 1000
        out.append(
            f"| {r['ms']:g} | {r['replies']} | {r['est_us']:.1f} | {err:.1f} | "
            f"{100 * err / (r['ms'] * 1000):.2f} | {ideal:.1f} |"
        )
    out.append("")
    # 4b
    out.append(
        "**Fig. 4b: share of packets at the last switch by bottleneck count n_btl, "
        "per 10 s slice (%, P4QoS without back-off)**\n"
    )
    sl = [r for r in rows if r["kind"] == "slice"]
    if sl:
        ends = sorted({r["length"] for r in sl})
        out.append(
            "| n_btl | " + " | ".join(f"{(t - 10000) // 1000}-{t // 1000} s" for t in ends) + " |"
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
    out.append("**Fig. 4c: target updates per 60 s, late packets and utilization by back-off**\n")
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
    P.add_arguments(ap, OUT)
    args = ap.parse_args()
    mode = Mode(quick=args.quick, smoke=args.smoke)
    out = args.out / P.mode_name(args)
    if args.smoke:
        P.smoke_threads()
    parts = [
        f"Produced by `experiments/p4qos/run.py{' --quick' if args.quick else ''}` "
        f"({len(mode.seeds)} seeds, d1 in {mode.d1}, {mode.duration_ms / 1000:g} s flows at "
        "paper scale). Mean ± 95% confidence interval over the seeds.\n"
    ]
    figs = []
    for scale in ["paper", "dc"]:
        rows = run_single(mode, out, args.workers, scale)
        title = (
            "paper scale (10 Mb/s bottleneck, d1 in ms)"
            if scale == "paper"
            else "data-center scale (10 Gb/s bottleneck, every time /1000, d1 in us)"
        )
        parts.append(f"### Fig. 3, {title}\n")
        parts.append(fig3_tables(rows, scale, mode))
        if not args.smoke:
            name = fig3_plot(rows, scale, mode)
            if name:
                figs.append(name)
                parts.append(f"![Fig. 3 at {scale} scale](p4qos/{name})\n")
    mrows, llep = run_multi(mode, out, args.workers)
    parts.append("### Fig. 4, multiple bottlenecks (paper scale)\n")
    parts.append(fig4_tables(mrows, llep, mode))
    body = "\n".join(parts)
    print(body)
    if args.smoke:
        return
    # NOTE: --quick writes docs/ too: the committed tables say which mode made them.
    P.write_section(DOC, "results", body)
    print(f"wrote {DOC}", file=sys.stderr)


if __name__ == "__main__":
    main()
