#!/usr/bin/env python3
"""Runs DBB's evaluation (seed 001, section IV, Figs. 7-10) on the
reconstructed Fig. 6 testbed, and a comparison beyond the paper on an
asymmetric leaf-spine, and writes the tables into docs/results/dbb.md between
`<!-- results:begin -->` and `<!-- results:end -->`.

`.venv/bin/python experiments/dbb/run.py [--quick | --smoke] [--workers N]
[--out DIR]`: writes each experiment's flow lists (iperf3-like connections:
`rate_gbps` is iperf3's -b, `duration_us` its -t) into `OUT/MODE/flows/`, runs
every point through `pisanet.sweep` (experiments/points.py) into sweep
directories under `OUT/MODE/` (default results/dbb), reads them back with
DuckDB (`runs`, `flows` and `goodput`) and writes the tables and the figures
(docs/results/dbb/*.png). `--quick` (one seed, the paper's seconds scaled to
0.5 ms) and the full mode (three seeds, 2 ms per paper second) both write
docs/results/dbb.md and say which mode produced it; `--smoke` (the test
suite's: a few short runs) only prints. A rerun resumes: finished points are
not run again.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
import points as P

from pisanet import database

DOC = ROOT / "docs" / "results" / "dbb.md"
FIGS = ROOT / "docs" / "results" / "dbb"
OUT = "results/dbb"

# Section IV's host pairs (h1, h9), (h3, h10), (h6, h11), (h8, h12), as host
# ids of fig6_topology.toml (h1 = 0, ..., h12 = 11).
PAIRS = [(0, 8), (2, 9), (5, 10), (7, 11)]
BW_RATIO = [0.5, 0.1, 0.9, 0.2, 0.8, 0.3, 0.7, 0.4, 0.6, 0.5]  # section IV.C
PKT_RATIO = [1, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.95]  # section IV.D
# IPv4 + TCP headers: a "packet size" of 1500 x r bytes is an IP packet, so
# its TCP payload (the flow's MSS) is 1500 x r - 40.
IP_TCP = 40

# The variants compared on Fig. 6. The paper's three are RPS and DBB with
# shared and independent (per-flow) counters; the others show what
# pisanet's TCP settings do (SACK) and a flow-level reference (ECMP).
VARIANTS = {
    "rps": ["scheme.kind=rps"],
    "rps_sack": ["scheme.kind=rps", "transport.sack=true"],
    "dbb_shared": ["scheme.kind=dbb"],
    "dbb_per_flow": ["scheme.kind=dbb", "scheme.dbb.counter=per_flow"],
    "dbb_shared_sack": ["scheme.kind=dbb", "transport.sack=true"],
    "ecmp": ["scheme.kind=ecmp"],
}
NAMES = {
    "rps": "RPS",
    "rps_sack": "RPS + SACK",
    "dbb_shared": "DBB shared",
    "dbb_per_flow": "DBB per-flow",
    "dbb_shared_sack": "DBB shared + SACK",
    "ecmp": "ECMP (flow level)",
}
PAPER_VARIANTS = ["rps", "dbb_shared", "dbb_per_flow"]

# (name, figure, what, paper's goodput RPS / DBB shared / DBB per-flow)
SCENARIOS = [
    (
        "a20",
        "Fig. 7a",
        "4 connections x 5 Gb/s (20 Gb/s), started 10 s apart",
        (15.94, 20.00, 20.00),
    ),
    (
        "a40",
        "Fig. 7b",
        "4 connections x 10 Gb/s (40 Gb/s), started 10 s apart",
        (15.77, 36.63, 37.03),
    ),
    ("b40", "Fig. 8a", "40 connections x 1 Gb/s", (18.87, 37.48, 37.57)),
    ("b400", "Fig. 8b", "400 connections x 0.1 Gb/s", (18.93, 37.50, 37.55)),
    ("c40", "Fig. 9a", "40 connections, 2 Gb/s x bw_ratio", (18.84, 37.50, 37.54)),
    ("c400", "Fig. 9b", "400 connections, 0.2 Gb/s x bw_ratio", (19.07, 37.62, 37.67)),
    (
        "d40",
        "Fig. 10a",
        "40 connections x 2 Gb/s (80 Gb/s), 1500 x pkt_size_ratio B",
        (18.40, 36.51, 36.46),
    ),
    (
        "d400",
        "Fig. 10b",
        "400 connections x 0.2 Gb/s (80 Gb/s), 1500 x pkt_size_ratio B",
        (18.40, 36.61, 36.73),
    ),
]

# Beyond the paper: asym.toml (asym_topology.toml), web-search flows.
ASYM_SCHEMES = {
    "ecmp": ["scheme.kind=ecmp"],
    "flowlet_ecmp": ["scheme.kind=flowlet_ecmp"],
    "hula": ["scheme.kind=hula"],
    "rps": ["scheme.kind=rps"],
    "dbb": ["scheme.kind=dbb"],
    "dbb_per_flow": ["scheme.kind=dbb", "scheme.dbb.counter=per_flow"],
    "rps_sack": ["scheme.kind=rps", "transport.sack=true"],
    "dbb_sack": ["scheme.kind=dbb", "transport.sack=true"],
}
ASYM_NAMES = {
    "ecmp": "ECMP",
    "flowlet_ecmp": "flowlet ECMP",
    "hula": "HULA",
    "rps": "RPS",
    "dbb": "DBB shared",
    "dbb_per_flow": "DBB per-flow",
    "rps_sack": "RPS + SACK",
    "dbb_sack": "DBB shared + SACK",
}


class Mode:
    """Time scale, seeds and sizes of a run of the script."""

    def __init__(self, quick: bool = False, smoke: bool = False):
        self.name = "smoke" if smoke else "quick" if quick else "full"
        # Simulated microseconds per second of the paper's runs.
        self.us_per_s = 100 if smoke else 500 if quick else 2000
        self.seeds = [1] if quick or smoke else [1, 2, 3]
        self.scenarios = [s for s in SCENARIOS if s[0] in ("a40", "b40")] if smoke else SCENARIOS
        self.variants = ["rps", "dbb_shared"] if smoke else list(VARIANTS)
        self.asym_loads = [0.3] if smoke else [0.2, 0.4] if quick else [0.2, 0.3, 0.4, 0.5]
        self.asym_flows = 30 if smoke else 400 if quick else 2000
        self.asym_schemes = ["ecmp", "dbb"] if smoke else list(ASYM_SCHEMES)


def flows_of(name: str, mode: Mode) -> tuple[list[str], float, float, float]:
    """A scenario's flow list (CSV lines), run length (ms) and the window
    [t0, t1] (us) over which goodput is averaged."""
    sec = mode.us_per_s
    head = "start_us,src,dst,bytes,rate_gbps,duration_us,mss"
    rows = []
    if name.startswith("a"):
        # IV.A: one connection per pair, a new one every 10 s, each 60 s;
        # averaged over 30-60 s, when all four run.
        rate = 5.0 if name == "a20" else 10.0
        for i, (s, d) in enumerate(PAIRS):
            rows.append(f"{i * 10 * sec},{s},{d},,{rate},{60 * sec},")
        return [head, *rows], (90 * sec) / 1000 + 5, 30 * sec, 60 * sec
    n = int(name[1:]) // len(PAIRS)  # connections per pair
    base = {"b": 1.0, "c": 2.0, "d": 2.0}[name[0]] * (10 / n)
    for p, (s, d) in enumerate(PAIRS):
        for k in range(n):
            i = p * n + k
            rate = base * BW_RATIO[i % 10] if name[0] == "c" else base
            mss = round(1500 * PKT_RATIO[i % 10]) - IP_TCP if name[0] == "d" else ""
            rows.append(f"0,{s},{d},,{rate:g},{90 * sec},{mss}")
    # IV.B-D: all start at 0 and last 90 s; averaged over 10-90 s (the first
    # 10 s hold the slow starts, a larger share of a scaled-down run).
    return [head, *rows], (90 * sec) / 1000 + 5, 10 * sec, 90 * sec


def sec4_points(mode: Mode, out: Path) -> list[tuple[str, str, int, Path, list[str]]]:
    """(scenario, variant, seed, config, overrides)."""
    flows_dir = out / "flows"
    flows_dir.mkdir(parents=True, exist_ok=True)
    pts = []
    for name, *_ in mode.scenarios:
        lines, run_ms, _, _ = flows_of(name, mode)
        path = flows_dir / f"{name}.csv"
        text = "\n".join(lines) + "\n"
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
        for v in mode.variants:
            for seed in mode.seeds:
                sets = [
                    f'workload.file="{path.resolve()}"',
                    f"run.max_sim_time_ms={run_ms:g}",
                    f"run.seed={seed}",
                    *VARIANTS[v],
                ]
                pts.append((name, v, seed, HERE / "sec4.toml", sets))
    return pts


def goodput_series(point: P.Point) -> dict[float, float]:
    """Total goodput (Gb/s) of all flows per 1 ms interval, by interval end (us)."""
    frame = database.query(
        point.directory,
        "SELECT time, sum(gbps) AS gbps FROM goodput "
        f"WHERE point_id = '{point.point_id}' GROUP BY time ORDER BY time",
    )
    return dict(zip(frame["time"].tolist(), frame["gbps"].tolist(), strict=True))


# A section IV run's numbers: floats, and `series` (`goodput_series`).
Sec4Row = dict[str, Any]
# (scenario, variant, seed) -> its row.
Sec4Rows = dict[tuple[str, str, int], Sec4Row]
# (scheme, load, seed) -> an asymmetric run's numbers (`asym_row`).
AsymRows = dict[tuple[str, float, int], dict[str, float]]


def sec4_row(point: P.Point, t0: float, t1: float) -> Sec4Row:
    series = goodput_series(point)
    # Mean total goodput over the intervals that end in (t0, t1].
    bins = [g for t, g in series.items() if t0 < t <= t1]
    width = 1000.0  # metrics.goodput_interval_us of sec4.toml
    n_bins = max(1, round((t1 - t0) / width))
    flows = point.flows()
    return {
        "gbps": sum(bins) / n_bins,
        "reordered": float(flows["reordered"].sum()),
        "dup_acks": float(flows["dup_acks"].sum()),
        "retx": float(flows["retransmissions"].sum()),
        "fast_retx": float(flows["fast_retransmits"].sum()),
        "timeouts": float(flows["timeouts"].sum()),
        "drops": float(point.get("packets_dropped", 0)),
        "delivered_pkts": float(point.get("packets_delivered", 0)),
        "wall": float(point.get("wall_time_s", 0)),
        "series": series,
    }


def mean(xs: Iterable[float | None]) -> float:
    got = [x for x in xs if x is not None]
    return statistics.fmean(got) if got else float("nan")


def sec4_tables(mode: Mode, rows: Sec4Rows) -> str:
    """Goodput beside the paper's, and reordering / duplicate ACKs /
    retransmissions per scheme."""
    out = []
    vs = mode.variants
    head = (
        "| setting | offered | "
        + " | ".join(NAMES[v] for v in vs)
        + " | paper RPS / DBB shared / DBB per-flow |"
    )
    out.append(
        "#### Goodput (Gb/s), mean total over the measurement window\n\n"
        + head
        + "\n|"
        + "---|" * (len(vs) + 3)
    )
    for name, fig, what, paper in mode.scenarios:
        offered = {"a20": 20, "a40": 40}.get(name, 80 if name[0] == "d" else 40)
        cells = [f"{mean([rows[name, v, s]['gbps'] for s in mode.seeds]):.2f}" for v in vs]
        out.append(
            f"| {fig} {what} | {offered} | "
            + " | ".join(cells)
            + f" | {paper[0]:.2f} / {paper[1]:.2f} / {paper[2]:.2f} |"
        )
    for metric, title in [
        (
            "reordered",
            "Reordered data packets (network reordering, RFC 4737 in send order), sum over flows",
        ),
        ("dup_acks", "Duplicate ACKs received by the senders, sum over flows"),
        ("retx", "Retransmitted segments, sum over flows"),
        ("timeouts", "Retransmission timeouts, sum over flows"),
        ("drops", "Packets dropped in the network"),
    ]:
        out.append(
            f"\n#### {title}\n\n| setting | "
            + " | ".join(NAMES[v] for v in vs)
            + " |\n|"
            + "---|" * (len(vs) + 1)
        )
        for name, fig, _, _ in mode.scenarios:
            cells = [f"{mean([rows[name, v, s][metric] for s in mode.seeds]):,.0f}" for v in vs]
            out.append(f"| {fig} | " + " | ".join(cells) + " |")
    walls = [r["wall"] for r in rows.values()]
    out.append(
        f"\n{len(rows)} runs, {sum(walls):.0f} s of wall-clock time in all "
        f"(mean {mean(walls):.1f} s per run)."
    )
    return "\n".join(out)


def asym_points(mode: Mode) -> list[tuple[str, float, int, Path, list[str]]]:
    pts = []
    for scheme in mode.asym_schemes:
        for load in mode.asym_loads:
            for seed in mode.seeds:
                sets = [
                    f"workload.load={load}",
                    f"workload.flows={mode.asym_flows}",
                    f"run.seed={seed}",
                    *ASYM_SCHEMES[scheme],
                ]
                pts.append((scheme, load, seed, HERE / "asym.toml", sets))
    return pts


def asym_row(point: P.Point) -> dict[str, float]:
    f = point.flows()
    done = f[f["fct"].notna()]
    large = done[done["bytes"] >= 1_000_000]
    gput = (large["bytes"] * 8 / (large["fct"] * 1e3)).tolist()
    r = point.row
    return {
        "mean": r["fct_us_mean"],
        "p99": r["fct_us_p99"],
        "small": r.get("fct_us_lt_100KB_mean"),
        "large": r.get("fct_us_gt_10MB_mean"),
        "gput": mean(gput),
        "completed": float(r["flows_completed"]),
        "total": float(r["flows_total"]),
        "reordered": float(f["reordered"].sum()),
        "dup_acks": float(f["dup_acks"].sum()),
        "retx": float(f["retransmissions"].sum()),
        "drops": float(r["packets_dropped"]),
        "wall": float(r["wall_time_s"]),
    }


def asym_tables(mode: Mode, rows: AsymRows) -> str:
    out = []
    ss = mode.asym_schemes

    def table(metric: str, title: str, fmt: Callable[[float], str]) -> None:
        out.append(
            f"\n#### {title}\n\n| load | "
            + " | ".join(ASYM_NAMES[s] for s in ss)
            + " |\n|"
            + "---|" * (len(ss) + 1)
        )
        for load in mode.asym_loads:
            cells = [fmt(mean([rows[s, load, seed][metric] for seed in mode.seeds])) for s in ss]
            out.append(f"| {int(load * 100)}% | " + " | ".join(cells) + " |")

    def ms(us: float) -> str:
        return "-" if us != us else f"{us / 1000:.2f}"

    table("mean", "Mean FCT (ms), all flows", ms)
    table("p99", "99th percentile FCT (ms), all flows", ms)
    table("small", "Mean FCT (ms), flows < 100 KB", ms)
    table("large", "Mean FCT (ms), flows > 10 MB", ms)
    table("gput", "Mean goodput (Gb/s) of flows >= 1 MB (bytes x 8 / FCT)", lambda g: f"{g:.2f}")
    table("reordered", "Reordered data packets, sum over flows", lambda x: f"{x:,.0f}")
    table("dup_acks", "Duplicate ACKs, sum over flows", lambda x: f"{x:,.0f}")
    table("retx", "Retransmitted segments, sum over flows", lambda x: f"{x:,.0f}")
    table("drops", "Packets dropped in the network", lambda x: f"{x:,.0f}")
    runs = [(load, seed) for load in mode.asym_loads for seed in mode.seeds]
    done = [
        f"{ASYM_NAMES[s]} {sum(rows[s, ld, sd]['completed'] for ld, sd in runs):.0f}"
        f"/{sum(rows[s, ld, sd]['total'] for ld, sd in runs):.0f}"
        for s in ss
    ]
    out.append("\nFlows completed (all loads and seeds): " + ", ".join(done) + ".")
    return "\n".join(out)


def plots(
    mode: Mode, sec4: Sec4Rows, windows: dict[str, tuple[float, float]], asym: AsymRows
) -> str:
    """PNG figures in docs/results/dbb/ (skipped without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "(Figures skipped: matplotlib is not importable.)"
    FIGS.mkdir(parents=True, exist_ok=True)
    names = []
    figs: dict[str, list[tuple[str, str, str]]] = {}
    for name, fig, what, _ in mode.scenarios:
        figs.setdefault(fig.split()[1].rstrip("ab"), []).append((name, fig, what))
    for number, members in figs.items():
        f, axes = plt.subplots(1, len(members), figsize=(5.5 * len(members), 3.6), squeeze=False)
        for ax, (name, fig, what) in zip(axes[0], members, strict=True):
            for v in mode.variants:
                s = sec4[name, v, mode.seeds[0]]["series"]
                ts = sorted(s)
                ax.plot([t / 1000 for t in ts], [s[t] for t in ts], label=NAMES[v], lw=1.2)
            t0, t1 = windows[name]
            ax.axvspan(t0 / 1000, t1 / 1000, color="0.9", zorder=0)
            ax.set_title(f"{fig}: {what}", fontsize=8)
            ax.set_xlabel(f"simulated time (ms; {mode.us_per_s / 1000:g} ms = 1 paper s)")
            ax.set_ylabel("total goodput (Gb/s)")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=7)
        f.tight_layout()
        path = FIGS / f"fig{number}.png"
        f.savefig(path, dpi=110)
        plt.close(f)
        names.append(path.name)
    f, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for s in mode.asym_schemes:
        for ax, metric in zip(axes, ["mean", "large"], strict=True):
            ys = [
                mean([asym[s, load, d][metric] for d in mode.seeds]) / 1000
                for load in mode.asym_loads
            ]
            xs = [int(load * 100) for load in mode.asym_loads]
            ax.plot(xs, ys, marker="o", label=ASYM_NAMES[s])
    for ax, t in zip(
        axes, ["mean FCT, all flows (ms)", "mean FCT, flows > 10 MB (ms)"], strict=True
    ):
        ax.set_xlabel("load (%)")
        ax.set_ylabel(t)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    f.tight_layout()
    f.savefig(FIGS / "asym_fct.png", dpi=110)
    plt.close(f)
    names.append("asym_fct.png")
    return "Figures: " + ", ".join(f"[{n}](dbb/{n})" for n in names) + "."


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="one seed, 0.5 ms per paper second (minutes)"
    )
    ap.add_argument(
        "--smoke", action="store_true", help="a few short runs; prints, writes nothing under docs/"
    )
    P.add_arguments(ap, OUT)
    a = ap.parse_args()
    if a.smoke:
        P.smoke_threads()
    mode = Mode(a.quick, a.smoke)
    out = (a.out / mode.name).resolve()
    pts = sec4_points(mode, out)
    done = P.run_points([(c, s) for *_, c, s in pts], out, a.workers)
    windows: dict[str, tuple[float, float]] = {}
    sec4: Sec4Rows = {}
    for name, v, seed, c, s in pts:
        _, _, t0, t1 = flows_of(name, mode)
        windows[name] = (t0, t1)
        sec4[name, v, seed] = sec4_row(done[P.point_key(c, s)], t0, t1)
    apts = asym_points(mode)
    adone = P.run_points([(c, s) for *_, c, s in apts], out, a.workers)
    asym = {(s, load, d): asym_row(adone[P.point_key(c, sets)]) for s, load, d, c, sets in apts}
    seeds = ", ".join(map(str, mode.seeds))
    parts = [
        f"Produced by `experiments/dbb/run.py{' --quick' if a.quick else ' --smoke' if a.smoke else ''}` "
        f"(mode **{mode.name}**: seeds {seeds}; {mode.us_per_s / 1000:g} ms of simulated time per second of the paper's runs; "
        f"{mode.asym_flows} web-search flows per asymmetric point).",
        "### Section IV on the reconstructed Fig. 6 testbed\n\n" + sec4_tables(mode, sec4),
        "### Beyond the paper: asymmetric leaf-spine, web-search traffic\n"
        + asym_tables(mode, asym),
    ]
    if not a.smoke:
        parts.append(plots(mode, sec4, windows, asym))
    body = "\n\n".join(parts)
    print(body)
    if not a.smoke:
        P.write_section(DOC, "results", body)
        print(f"wrote {DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
