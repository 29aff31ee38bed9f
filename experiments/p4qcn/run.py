#!/usr/bin/env python3
"""Runs the P4QCN evaluation (seed 002, section 4.2: Figs. 13a-17) and writes
the tables and figures into docs/results/p4qcn.md (between the markers
`<!-- results:begin -->` and `<!-- results:end -->`) and docs/results/p4qcn/.

`.venv/bin/python experiments/p4qcn/run.py [--quick | --smoke] [--out DIR]`:
every point is a run of experiments/p4qcn/fig10.toml (or a scaled version)
with `--set` overrides, as a user would type them, run through
`pisanet.sweep` (experiments/points.py) into sweep directories under `--out`
(default results/p4qcn; `full/`, `quick/` or `smoke/` below it) and read back
with DuckDB. A rerun resumes: finished points are not run again. The flow
lists of each background rate and seed are written by inputs.py into
`OUT/<mode>/inputs/`.

Modes: `--smoke` (the test suite's: one background rate, one seed; prints
only), `--quick` (every figure, 3 seeds: 156 runs of well under a second each,
about 10 minutes on a busy 2-core machine, nearly all of it starting the
sweeps: each point has its own flow list, so its own sweep; writes docs/),
full (10 seeds; writes docs/). The page says which mode wrote it.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import inputs
import points as P

DOC = ROOT / "docs" / "results" / "p4qcn.md"
FIGS = ROOT / "docs" / "results" / "p4qcn"
OUT = "results/p4qcn"

BOTTLENECK = "T4->host41"
FRAME_KB = 1.506  # a 1460 B UDP datagram on the wire
THREE = ["scheme.kind=dcqcn_cp", "scheme.dcqcn_cp.kmin_pkts=11", "scheme.dcqcn_cp.kmax_pkts=11"]
# What each compared system is, as overrides of fig10.toml (P4QCN 2-point).
VARIANTS = {
    "p4qcn": ["scheme.kind=p4qcn"],
    "udp": ["scheme.kind=ecmp", "transport.kind=udp"],
    "tcp": ["scheme.kind=ecmp", "transport.kind=newreno"],
    "p4qcn_pfc": ["scheme.kind=p4qcn", "topology.pfc.enabled=true"],
    "pfc": ["scheme.kind=ecmp", "topology.pfc.enabled=true"],
    "3pt_qcn": [*THREE, "transport.reaction_point=qcn_cnp"],
    "3pt_dcqcn": [
        *THREE,
        "transport.reaction_point=dcqcn",
        "transport.dcqcn.scale_to_line_rate=true",
    ],
    # Not in the paper: P4QCN with N = 10 ms, about one feedback loop at 7 Mb/s.
    "p4qcn_n10ms": ["scheme.kind=p4qcn", "scheme.p4qcn.feedback_interval_us=10000"],
}
NAMES = {
    "p4qcn": "P4QCN",
    "udp": "UDP",
    "tcp": "TCP NewReno",
    "p4qcn_pfc": "P4QCN + PFC",
    "pfc": "PFC",
    "3pt_qcn": "3-point (QCN RP + NP)",
    "3pt_dcqcn": "3-point (DCQCN)",
    "p4qcn_n10ms": "P4QCN, N = 10 ms",
}
BG = [2, 3, 4, 5]  # background rates (Mb/s at 7 Mb/s links), section 4
THRESHOLDS = [3, 5, 7, 9, 11, 13, 15]  # Fig. 17 (packets)
SCALED = {"_10g": 10e9, "_40g": 40e9, "_100g": 100e9}

# A run's metrics (`measure`); None: not measured (no sample, no rate cut).
Metrics = dict[str, float | None]
# A run: (config, overrides).
Job = tuple[Path, list[str]]


class Mode:
    def __init__(self, quick: bool, smoke: bool):
        self.smoke = smoke
        self.seeds = [1] if smoke else [1, 2, 3] if quick else list(range(1, 11))
        self.bg = [4] if smoke else BG
        self.thresholds = [5, 11] if smoke else THRESHOLDS
        self.name = "smoke" if smoke else "quick" if quick else "full"


def flow_file(out: Path, suffix: str, bg: float, seed: int) -> Path:
    path = out / "inputs" / f"fig10{suffix}_bg{bg:g}_seed{seed}.csv"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(inputs.flows(inputs.RATES[suffix], bg, seed))
    return path


def job(
    out: Path, variant: str, bg: float, seed: int, suffix: str = "", extra: Iterable[str] = ()
) -> Job:
    sets = VARIANTS[variant] + [
        f"workload.file={flow_file(out, suffix, bg, seed)}",
        f"run.seed={seed}",
        *extra,
    ]
    return (HERE / f"fig10{suffix}.toml", sets)


def measure(point: P.Point, line_bps: float) -> Metrics:
    """The metrics (docs/results/p4qcn.md, "Metrics") of one run."""
    r = point.row
    flows = point.flows()
    fg = flows[flows["id"] == 0].iloc[0]
    k = line_bps / inputs.PAPER_BPS
    rates = point.port_rates()
    lo, hi = inputs.BG_FROM_S * 1e6 / k, inputs.BG_TO_S * 1e6 / k
    win = rates[(rates["port"] == BOTTLENECK) & (rates["time"] > lo) & (rates["time"] <= hi)]
    util = float(win["tx_gbps"].mean()) * 1e9 / line_bps if len(win) else None
    sent = float(flows["bytes"].sum())
    return {
        "delay_mean_ms": float(fg["delay_mean"]) / 1000,
        "delay_p99_ms": float(fg["delay_p99"]) / 1000,
        "fg_loss": float(fg["lost_bytes"]) / float(fg["bytes"]) if fg["bytes"] else 0.0,
        "loss": float(flows["lost_bytes"].sum()) / sent if sent else 0.0,
        "fg_goodput": float(fg["delivered"]) * 8 / (inputs.RUN_S / k) / line_bps,
        "util": util,
        "pauses": r.get("pfc_pause_frames_sent") or 0,
        "dropped": r.get("packets_dropped") or 0,
        "cuts": r.get("rate_control_rate_cuts") or 0,
        "first_cut_ms": (
            None
            if r.get("rate_control_first_cut_us") is None
            else r["rate_control_first_cut_us"] / 1000
        ),
    }


def mean(xs: Iterable[float | None]) -> float | None:
    got = [x for x in xs if x is not None]
    return statistics.mean(got) if got else None


def gap(v: float | None) -> float:
    """A value to plot: None (no value) as NaN, which matplotlib leaves out
    (as it does None itself)."""
    return math.nan if v is None else v


def cell(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def table(
    res: dict[tuple[str, float], list[Metrics]],
    variants: list[str],
    metric: str,
    fmt: str,
    bgs: list[int],
    label: str,
) -> str:
    out = [
        "| background (Mb/s) | " + " | ".join(NAMES[v] for v in variants) + " |",
        "|---" * (len(variants) + 1) + "|",
    ]
    for bg in bgs:
        vals = [cell(mean([m[metric] for m in res.get((v, bg), [])]), fmt) for v in variants]
        out.append(f"| {bg:g} | " + " | ".join(vals) + " |")
    return f"{label}\n\n" + "\n".join(out)


def plots(
    res: dict[tuple[str, float], list[Metrics]],
    bgs: list[int],
    fig17: dict[tuple[str, float], list[Metrics]],
    thresholds: list[int],
) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "(Figures skipped: matplotlib is not importable.)"
    FIGS.mkdir(parents=True, exist_ok=True)
    made = []

    def fig(name: str, variants: list[str], metric: str, ylabel: str, scale: float = 1.0) -> None:
        f, ax = plt.subplots(figsize=(4.5, 3.2))
        for v in variants:
            ys = [mean([m[metric] for m in res.get((v, bg), [])]) for bg in bgs]
            ax.plot(bgs, [gap(y) * scale for y in ys], "o-", label=NAMES[v])
        ax.set_xlabel("background rate (Mb/s)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        f.tight_layout()
        f.savefig(FIGS / f"{name}.png", dpi=110)
        plt.close(f)
        made.append(name)

    fig("fig13a_latency", ["p4qcn", "udp", "tcp"], "delay_mean_ms", "foreground delay, mean (ms)")
    fig("fig13b_loss", ["p4qcn", "udp"], "loss", "packet loss (%)", 100)
    fig("fig14a_latency", ["p4qcn", "p4qcn_pfc"], "delay_mean_ms", "foreground delay, mean (ms)")
    fig("fig14b_loss", ["p4qcn", "p4qcn_pfc"], "loss", "packet loss (%)", 100)
    fig("fig15_latency", ["p4qcn_pfc", "pfc"], "delay_mean_ms", "foreground delay, mean (ms)")
    fig("fig15_pauses", ["p4qcn_pfc", "pfc"], "pauses", "PFC PAUSE frames sent")
    fig(
        "fig16a_latency",
        ["p4qcn", "3pt_qcn", "3pt_dcqcn"],
        "delay_mean_ms",
        "foreground delay, mean (ms)",
    )
    fig("fig16b_loss", ["p4qcn", "3pt_qcn", "3pt_dcqcn"], "loss", "packet loss (%)", 100)
    f, ax = plt.subplots(figsize=(4.5, 3.2))
    for v in ["p4qcn", "pfc"]:
        ax.plot(
            thresholds,
            [gap(mean([m["util"] for m in fig17.get((v, q), [])])) for q in thresholds],
            "o-",
            label=NAMES[v],
        )
    ax.set_xlabel("threshold Q_P4QCN / Q_PFC (packets)")
    ax.set_ylabel(f"utilization of {BOTTLENECK}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    f.tight_layout()
    f.savefig(FIGS / "fig17_utilization.png", dpi=110)
    plt.close(f)
    made.append("fig17_utilization")
    return "### Figures\n\n" + "\n".join(f"![{m}](p4qcn/{m}.png)" for m in made)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 seeds (156 runs; minutes)")
    ap.add_argument("--smoke", action="store_true", help="one rate, one seed; prints only")
    P.add_arguments(ap, OUT)
    a = ap.parse_args()
    mode = Mode(a.quick, a.smoke)
    out = (a.out / P.mode_name(a)).resolve()
    pool = ThreadPoolExecutor(a.workers or 2)  # runs are tiny: threads, not processes

    def run_all(jobs: list[Job]) -> dict[P.PointKey, P.Point]:
        return P.run_points(jobs, out, executor=pool)

    # Figs. 13-16: every variant, background rate and seed at 7 Mb/s.
    keys = [(v, bg, s) for v in VARIANTS for bg in mode.bg for s in mode.seeds]
    jobs = {key: job(out, *key) for key in keys}
    got = run_all(list(jobs.values()))
    res: dict[tuple[str, float], list[Metrics]] = {}
    for (v, bg, _), j in jobs.items():
        res.setdefault((v, bg), []).append(measure(got[P.point_key(*j)], inputs.PAPER_BPS))
    # Fig. 17: utilization against the threshold, "slight congestion" (4 Mb/s).
    f17: dict[tuple[str, int, int], Job] = {}
    for q in mode.thresholds:
        for s in mode.seeds:
            f17[("p4qcn", q, s)] = job(
                out,
                "p4qcn",
                4,
                s,
                extra=[f"scheme.p4qcn.qmin_pkts={q}", f"scheme.p4qcn.qmax_pkts={q}"],
            )
            f17[("pfc", q, s)] = job(
                out, "pfc", 4, s, extra=[f"topology.pfc.xoff_kb={q * FRAME_KB:.3f}"]
            )
    got17 = run_all(list(f17.values()))
    fig17: dict[tuple[str, float], list[Metrics]] = {}
    for (v, q, _), j in f17.items():
        fig17.setdefault((v, q), []).append(measure(got17[P.point_key(*j)], inputs.PAPER_BPS))
    # The scaled versions: background 4 Mb/s-equivalent, each variant, seed 1.
    scaled_v = ["p4qcn", "udp", "p4qcn_pfc", "pfc", "3pt_qcn", "3pt_dcqcn"]
    sj = (
        {(suf, v): job(out, v, 4, 1, suffix=suf) for suf in SCALED for v in scaled_v}
        if not mode.smoke
        else {}
    )
    gots = run_all(list(sj.values())) if sj else {}
    scaled = {k: measure(gots[P.point_key(*j)], SCALED[k[0]]) for k, j in sj.items()}

    bgs = mode.bg
    parts = [
        f"Mode: `{mode.name}` ({len(mode.seeds)} background seed(s) per point; "
        f"`experiments/p4qcn/run.py{'' if mode.name == 'full' else ' --' + mode.name}`). "
        "Each cell is the mean over the seeds.",
        table(
            res,
            ["p4qcn", "udp", "tcp"],
            "delay_mean_ms",
            ".1f",
            bgs,
            "### Fig. 13a: foreground one-way delay, mean (ms)",
        ),
        table(
            res,
            ["p4qcn", "udp", "tcp"],
            "delay_p99_ms",
            ".1f",
            bgs,
            "Foreground one-way delay, p99 (ms):",
        ),
        table(
            res,
            ["p4qcn", "udp"],
            "loss",
            ".2%",
            bgs,
            "### Fig. 13b: packet loss, all flows (lost / sent)",
        ),
        table(
            res,
            ["p4qcn", "udp", "tcp"],
            "fg_loss",
            ".2%",
            bgs,
            "Foreground loss (TCP: packets dropped in the network, retransmitted):",
        ),
        table(
            res,
            ["p4qcn", "udp", "tcp"],
            "fg_goodput",
            ".2f",
            bgs,
            "Foreground goodput (fraction of the 7 Mb/s link; offered 4/7 = 0.57):",
        ),
        table(
            res,
            ["p4qcn", "p4qcn_pfc"],
            "delay_mean_ms",
            ".1f",
            bgs,
            "### Fig. 14a: foreground delay, mean (ms), P4QCN vs P4QCN + PFC",
        ),
        table(res, ["p4qcn", "p4qcn_pfc"], "loss", ".2%", bgs, "### Fig. 14b: packet loss"),
        table(
            res,
            ["p4qcn_pfc", "pfc"],
            "delay_mean_ms",
            ".1f",
            bgs,
            "### Fig. 15: foreground delay, mean (ms), P4QCN + PFC vs PFC",
        ),
        table(
            res, ["p4qcn_pfc", "pfc"], "pauses", ".0f", bgs, "PFC PAUSE frames sent (all switches):"
        ),
        table(res, ["p4qcn_pfc", "pfc"], "loss", ".2%", bgs, "Packet loss:"),
        table(
            res,
            ["p4qcn", "3pt_qcn", "3pt_dcqcn", "p4qcn_n10ms"],
            "delay_mean_ms",
            ".1f",
            bgs,
            "### Fig. 16a: foreground delay, mean (ms), 2-point vs 3-point",
        ),
        table(
            res,
            ["p4qcn", "3pt_qcn", "3pt_dcqcn", "p4qcn_n10ms"],
            "loss",
            ".2%",
            bgs,
            "### Fig. 16b: packet loss, 2-point vs 3-point",
        ),
        table(
            res,
            ["p4qcn", "3pt_qcn", "3pt_dcqcn"],
            "first_cut_ms",
            ".2f",
            bgs,
            "First rate cut at any source (ms after the start; congestion starts at 1000 ms):",
        ),
        table(
            res,
            ["p4qcn", "3pt_qcn", "3pt_dcqcn", "p4qcn_n10ms"],
            "util",
            ".2f",
            bgs,
            f"Utilization of {BOTTLENECK}, 1-9 s:",
        ),
    ]
    t17 = [
        "| threshold (packets) | P4QCN (Q_P4QCN) | PFC (Q_PFC) | P4QCN loss | PFC pauses |",
        "|---|---|---|---|---|",
    ]
    for q in mode.thresholds:
        p, f = fig17.get(("p4qcn", q), []), fig17.get(("pfc", q), [])
        t17.append(
            f"| {q} | {cell(mean([m['util'] for m in p]), '.3f')} | "
            f"{cell(mean([m['util'] for m in f]), '.3f')} | "
            f"{cell(mean([m['loss'] for m in p]), '.2%')} | "
            f"{cell(mean([m['pauses'] for m in f]), '.0f')} |"
        )
    parts.append(
        f"### Fig. 17: utilization of {BOTTLENECK} (1-9 s) against the threshold, "
        "background 4 Mb/s\n\n" + "\n".join(t17)
    )
    if scaled:
        ts = [
            "| links | " + " | ".join(NAMES[v] for v in scaled_v) + " |",
            "|---" * (len(scaled_v) + 1) + "|",
        ]
        for metric, fmt, what in [
            ("delay_mean_ms", ".4f", "delay mean (ms)"),
            ("loss", ".2%", "loss"),
            ("util", ".2f", "utilization"),
            ("pauses", ".0f", "PAUSE frames"),
        ]:
            for suf, rate in SCALED.items():
                ts.append(
                    f"| {rate / 1e9:g} Gb/s, {what} | "
                    + " | ".join(cell(scaled[(suf, v)][metric], fmt) for v in scaled_v)
                    + " |"
                )
        parts.append(
            "### Scaled versions (fig10_10g/40g/100g.toml, background 4/7 of the link, seed 1)\n\n"
            + "\n".join(ts)
        )
    if not mode.smoke:
        parts.append(plots(res, bgs, fig17, mode.thresholds))
    body = "\n\n".join(parts)
    print(body)
    if not mode.smoke:
        P.write_section(DOC, "results", body)
    pool.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
