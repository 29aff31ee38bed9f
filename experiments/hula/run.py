#!/usr/bin/env python3
"""Runs the HULA evaluation (seed 004, section 6) and writes the tables into
docs/results/hula.md between the markers `<!-- results:begin -->` and
`<!-- results:end -->`.

`.venv/bin/python experiments/hula/run.py [--quick | --smoke] [--workers N]
[--out DIR]`: runs every point through `pisanet.sweep` (experiments/points.py)
into sweep directories under `--out` (default results/hula; `full/`,
`quick/` or `smoke/` below it), reads them back with DuckDB and writes the
tables (the full mode also the figures into docs/results/hula/). A rerun
resumes: finished points are not run again. `--quick` writes its tables to
`OUT/quick/results.md` and leaves docs/ alone; `--smoke` only prints.
The controlled experiments that chose these settings are in ablate.py.
"""

import argparse
import math
import os
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
import points as P

DOC = ROOT / "docs" / "results" / "hula.md"
FIGS = ROOT / "docs" / "results" / "hula"
OUT = "results/hula"

SCHEMES = ["ecmp", "conga_prime", "hula"]
NAMES = {"ecmp": "ECMP", "conga_prime": "CONGA'", "hula": "HULA", "hula10x": "HULA 10x T_p"}
SEEDS = [1, 2, 3]
WS_LOADS = [0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9]
DM_LOADS = [0.2, 0.5, 0.8]
# Flows per point. The paper gives no run length. On the asymmetric topology
# ECMP overloads S2->A3 from 50% load on, so its FCT grows with the run
# length (ablate.py "length"); 2000 is what a full sweep on one core allows in
# about 15 minutes, not a value chosen to match the paper.
WS_FLOWS = 2000
# A safety cap only: 2000 web-search flows at 10% load span about 3 s.
WS_MAX_MS = 10000
DM_FLOWS = 200
DM_MAX_MS = 300
# --smoke (the test suite's): one seed, one load per CDF, few flows.
SMOKE_FLOWS = 40

# (topology config, cdf, scheme, load, seed, extra sets)
FctPoint = tuple[str, str, str, float, int, list[str]]
# A point's numbers (`row_of`).
Row = dict[str, Any]
# A failure run's carried rates: sample times (us), ports, rate by time and port.
Series = tuple[list[float], list[str], dict[float, dict[str, float]]]


class Mode:
    """Which seeds, loads and flows a run of the script uses."""

    def __init__(self, quick: bool = False, smoke: bool = False) -> None:
        self.smoke = smoke
        self.seeds = SEEDS[:1] if quick or smoke else SEEDS
        self.ws = [0.6] if smoke else [0.3, 0.7] if quick else WS_LOADS
        self.dm = [0.8] if quick or smoke else DM_LOADS
        self.ws_flows = SMOKE_FLOWS if smoke else WS_FLOWS
        self.dm_flows = SMOKE_FLOWS // 4 if smoke else DM_FLOWS


def fct_points(mode: Mode) -> list[FctPoint]:
    """(topology config, cdf, scheme, load, seed, extra sets)."""
    pts: list[FctPoint] = []
    for cfg in ["base.toml", "asym.toml"]:
        for cdf, loads in [("websearch", mode.ws), ("datamining", mode.dm)]:
            for scheme in SCHEMES:
                for load in loads:
                    for seed in mode.seeds:
                        pts.append((cfg, cdf, scheme, load, seed, []))
    for load in mode.ws:
        for seed in mode.seeds:
            pts.append(
                (
                    "asym.toml",
                    "websearch",
                    "hula10x",
                    load,
                    seed,
                    ["scheme.hula.probe_interval_us=2000"],
                )
            )
    return pts


def sets_of(
    cdf: str, scheme: str, load: float, seed: int, extra: list[str], mode: Mode
) -> list[str]:
    kind = "hula" if scheme == "hula10x" else scheme
    s = [f"scheme.kind={kind}", f"workload.cdf={cdf}", f"workload.load={load}", f"run.seed={seed}"]
    if cdf == "datamining":
        s += [f"workload.flows={mode.dm_flows}", f"run.max_sim_time_ms={DM_MAX_MS}"]
    else:
        s += [f"workload.flows={mode.ws_flows}", f"run.max_sim_time_ms={WS_MAX_MS}"]
    return s + extra


def row_of(pt: FctPoint, point: P.Point) -> Row:
    """The numbers the tables use, from a point of a sweep (its `runs` row, its
    ports and the S2->A3 queue samples)."""
    cfg, cdf, scheme, load, seed, _ = pt
    r = point.row
    ports = point.ports()
    return {
        "cfg": cfg,
        "cdf": cdf,
        "scheme": scheme,
        "load": load,
        "seed": seed,
        "mean": r["fct_us_mean"],
        "p99": r["fct_us_p99"],
        "small": r.get("fct_us_lt_100KB_mean"),
        "large": r.get("fct_us_gt_10MB_mean"),
        "completed": int(r["flows_completed"]),
        "total": int(r["flows_total"]),
        "drops": r["packets_dropped"],
        "queue": point.queues()["depth_bytes"].tolist(),
        "events_per_s": r["events_per_s"],
        "hops_per_s": r["packet_hops_per_s"],
        "wall": r["wall_time_s"],
        "events": r["events"],
        "ports": ports if scheme == "hula" and seed == 1 and load == 0.6 else None,
        "sim_s": r["sim_time_s"],
        "switch_drops": sum(p["drops"] for p in ports if p["switch_port"]),
        "bottleneck_drops": sum(p["drops"] for p in ports if p["name"] == "S2->A3"),
    }


def run_fct(mode: Mode, out: Path, workers: int | None) -> list[Row]:
    pts = fct_points(mode)
    jobs = [(HERE / p[0], sets_of(*p[1:], mode)) for p in pts]
    got = P.run_points(jobs, out, workers)
    return [row_of(pt, got[P.point_key(*job)]) for pt, job in zip(pts, jobs, strict=False)]


def mean(xs: Iterable[float | None]) -> float | None:
    got = [x for x in xs if x is not None]
    return statistics.mean(got) if got else None


def fmt_mean(xs: Iterable[float | None], scale: float = 1.0) -> str:
    """`mean(xs) / scale` with two decimals; `-` for no values."""
    m = mean(xs)
    return "-" if m is None else f"{m / scale:.2f}"


def fmt_ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1000:.2f}"


def table(
    rows: list[Row], cfg: str, cdf: str, metric: str, schemes: list[str], loads: list[float]
) -> str:
    out = [
        "| load | " + " | ".join(NAMES[s] for s in schemes) + " | ECMP / HULA |",
        "|---" * (len(schemes) + 2) + "|",
    ]
    for load in loads:
        vals = {
            s: mean(
                [
                    r[metric]
                    for r in rows
                    if (r["cfg"], r["cdf"], r["scheme"], r["load"]) == (cfg, cdf, s, load)
                ]
            )
            for s in schemes
        }
        ecmp, hula = vals.get("ecmp"), vals.get("hula")
        ratio = "-" if not hula or ecmp is None else f"{ecmp / hula:.2f}x"
        out.append(
            f"| {int(load * 100)}% | "
            + " | ".join(fmt_ms(vals[s]) for s in schemes)
            + f" | {ratio} |"
        )
    return "\n".join(out)


def completion(rows: list[Row], cfg: str, cdf: str, loads: list[float]) -> str:
    out = []
    for s in SCHEMES:
        c = sum(
            r["completed"]
            for r in rows
            if (r["cfg"], r["cdf"], r["scheme"]) == (cfg, cdf, s) and r["load"] in loads
        )
        t = sum(
            r["total"]
            for r in rows
            if (r["cfg"], r["cdf"], r["scheme"]) == (cfg, cdf, s) and r["load"] in loads
        )
        out.append(f"{NAMES[s]} {c}/{t}")
    return ", ".join(out)


def queue_cdf(rows: list[Row], load: float) -> str:
    out = [
        "| scheme | P(queue = 0) | p50 (KB) | p90 (KB) | p95 (KB) | p99 (KB) | max (KB) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in SCHEMES:
        q = sorted(
            x
            for r in rows
            if (r["cfg"], r["cdf"], r["scheme"], r["load"]) == ("asym.toml", "websearch", s, load)
            for x in r["queue"]
        )
        if not q:
            continue
        pct = lambda p: q[min(len(q) - 1, int(p * len(q)))] / 1000
        zero = sum(1 for x in q if x == 0) / len(q)
        out.append(
            f"| {NAMES[s]} | {zero:.2f} | {pct(0.5):.1f} | {pct(0.9):.1f} | {pct(0.95):.1f} | {pct(0.99):.1f} | {q[-1] / 1000:.1f} |"
        )
    return "\n".join(out)


def rate_series(
    point: P.Point, down_ms: float, up_ms: float, every: int
) -> tuple[str, float | None, Series]:
    frame = point.port_rates()
    r: dict[str, list[Any]] = {
        "time_us": frame["time"].tolist(),
        "port": frame["port"].tolist(),
        "tx_gbps": frame["tx_gbps"].tolist(),
        "carried_gbps": frame["carried_gbps"].tolist(),
    }
    ports = sorted(set(p for p in r["port"] if p.endswith("A3") or p.endswith("A4")))
    rows: dict[float, dict[str, float]] = {}
    for t, p, c in zip(r["time_us"], r["port"], r["carried_gbps"], strict=False):
        rows.setdefault(t, {})[p] = c
    times = sorted(rows)
    out = ["| t (ms) | " + " | ".join(ports) + " |", "|---" * (len(ports) + 1) + "|"]
    for i, t in enumerate(times):
        if i % every == 0 or (down_ms * 1000 - 100 <= t <= down_ms * 1000 + 1500):
            out.append(
                f"| {t / 1000:.1f} | "
                + " | ".join(f"{rows[t].get(p, 0):.1f}" for p in ports)
                + " |"
            )
    # Time from the failure until nothing more is sent into the failed link.
    last = max(
        (
            t
            for t, p, tx in zip(r["time_us"], r["port"], r["tx_gbps"], strict=False)
            if p == "S2->A3" and down_ms * 1000 < t <= up_ms * 1000 and tx > 0.5
        ),
        default=None,
    )
    moved = None if last is None else (last - down_ms * 1000) / 1000
    return "\n".join(out), moved, (times, ports, rows)


def overhead(rows: list[Row]) -> str:
    r = next((r for r in rows if r["ports"]), None)
    if r is None:
        return ""
    # HULA section 4.5: probeSize * numToRs / (T_p * C), per link and direction.
    bound = 64 * 8 * 4 / (200e-6 * 40e9)
    out = [
        "| link | probe bytes | overhead (% of 40G) | paper's formula (% of 40G) |",
        "|---|---|---|---|",
    ]
    for p in r["ports"]:
        if (
            p["switch_port"]
            and p["made_tx_bytes"] > 0
            and (
                "->A" in p["name"]
                or "->S" in p["name"]
                or p["name"].startswith("A")
                or p["name"].startswith("S")
            )
        ):
            pct = p["made_tx_bytes"] * 8 / r["sim_s"] / 40e9 * 100
            out.append(f"| {p['name']} | {p['made_tx_bytes']} | {pct:.4f} | {bound * 100:.4f} |")
    return "\n".join(out)


def drops_table(rows: list[Row], loads: list[float]) -> str:
    out = [
        "| load | " + " | ".join(NAMES[s] for s in SCHEMES) + " |",
        "|---" * (len(SCHEMES) + 1) + "|",
    ]
    for load in loads:
        cells = []
        for s in SCHEMES:
            rs = [
                r
                for r in rows
                if (r["cfg"], r["cdf"], r["scheme"], r["load"])
                == ("asym.toml", "websearch", s, load)
            ]
            cells.append(
                f"{mean([r['switch_drops'] for r in rs]):.0f} / {mean([r['bottleneck_drops'] for r in rs]):.0f}"
            )
        out.append(f"| {int(load * 100)}% | " + " | ".join(cells) + " |")
    return "\n".join(out)


def plots(
    rows: list[Row],
    ws: list[float],
    dm: list[float],
    qload: float,
    s9a: Series,
    s9b: Series,
) -> str:
    """PNG figures in docs/results/hula/ (skipped without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "(Figures skipped: matplotlib is not importable.)"
    FIGS.mkdir(parents=True, exist_ok=True)
    colors = {
        "ecmp": "tab:red",
        "conga_prime": "tab:blue",
        "hula": "tab:green",
        "hula10x": "tab:olive",
    }

    def curve(
        ax: Any, cfg: str, cdf: str, metric: str, loads: list[float], schemes: list[str] = SCHEMES
    ) -> None:
        for s in schemes:
            ys = [
                mean(
                    [
                        r[metric]
                        for r in rows
                        if (r["cfg"], r["cdf"], r["scheme"], r["load"]) == (cfg, cdf, s, ld)
                    ]
                )
                for ld in loads
            ]
            ax.plot(
                [ld * 100 for ld in loads],
                # A mean over no values (no such flows finished): a gap.
                [math.nan if y is None else y / 1000 for y in ys],
                "o-",
                color=colors[s],
                label=NAMES[s],
            )
        ax.set_xlabel("load (%)")
        ax.grid(alpha=0.3)

    made = []
    fig, axs = plt.subplots(1, 2, figsize=(9, 3.5))
    curve(axs[0], "base.toml", "websearch", "mean", ws)
    axs[0].set_title("(a) web-search, symmetric")
    curve(axs[1], "base.toml", "datamining", "mean", dm)
    axs[1].set_title("(b) data-mining, symmetric")
    axs[0].set_ylabel("average FCT (ms)")
    axs[0].legend()
    fig.tight_layout()
    fig.savefig(FIGS / "fig5_symmetric.png", dpi=110)
    made.append("fig5_symmetric.png")
    fig, axs = plt.subplots(1, 3, figsize=(12, 3.5))
    for ax, (metric, title) in zip(
        axs,
        [("mean", "(a) all flows"), ("small", "(b) < 100 KB"), ("large", "(c) > 10 MB")],
        strict=False,
    ):
        curve(ax, "asym.toml", "websearch", metric, ws)
        ax.set_title(title)
    axs[0].set_ylabel("average FCT (ms)")
    axs[0].legend()
    fig.suptitle("web-search, asymmetric (S2-A4 down)")
    fig.tight_layout()
    fig.savefig(FIGS / "fig6_asymmetric_websearch.png", dpi=110)
    made.append("fig6_asymmetric_websearch.png")
    fig, axs = plt.subplots(1, 3, figsize=(12, 3.5))
    curve(axs[0], "asym.toml", "websearch", "p99", ws)
    axs[0].set_title("(a) 99th pct FCT, web-search")
    axs[0].set_ylabel("FCT (ms)")
    axs[0].legend()
    curve(axs[1], "asym.toml", "datamining", "p99", dm)
    axs[1].set_title("(b) 99th pct FCT, data-mining")
    for s in SCHEMES:
        q = sorted(
            x / 1000
            for r in rows
            if (r["cfg"], r["cdf"], r["scheme"], r["load"]) == ("asym.toml", "websearch", s, qload)
            for x in r["queue"]
        )
        if q:
            axs[2].plot(
                q, [(i + 1) / len(q) for i in range(len(q))], color=colors[s], label=NAMES[s]
            )
    axs[2].set_xlabel("S2->A3 queue (KB)")
    axs[2].set_title(f"(c) queue CDF, web-search {int(qload * 100)}%")
    axs[2].grid(alpha=0.3)
    fig.suptitle("asymmetric topology")
    fig.tight_layout()
    fig.savefig(FIGS / "fig8_tail_and_queue.png", dpi=110)
    made.append("fig8_tail_and_queue.png")
    fig, axs = plt.subplots(1, 3, figsize=(12, 3.5))
    for ax, (times, ports, series), title in [
        (axs[0], s9a, "(a) web-search 60%, S2-A3 down 20-40 ms"),
        (axs[1], s9b, "(b) long flows, S2-A3 down 6-10 ms"),
    ]:
        for p in ports:
            ax.plot([t / 1000 for t in times], [series[t].get(p, 0) for t in times], label=p)
        ax.set_xlabel("time (ms)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axs[0].set_ylabel("carried (Gb/s)")
    axs[0].legend(fontsize=7)
    curve(axs[2], "asym.toml", "websearch", "mean", ws, ["ecmp", "conga_prime", "hula", "hula10x"])
    axs[2].set_title("(c) probe interval 1x and 10x")
    axs[2].set_ylabel("average FCT (ms)")
    axs[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(FIGS / "fig9_failures_probes.png", dpi=110)
    made.append("fig9_failures_probes.png")
    plt.close("all")
    return "### Figures\n\n" + "\n".join(f"![{m}](hula/{m})" for m in made)


def write_section(name: str, body: str) -> None:
    """Puts `body` into docs/results/hula.md between `<!-- NAME:begin -->` and `<!-- NAME:end -->`."""
    P.write_section(DOC, name, body)


FAILURES = [
    # config, down ms, up ms, table rows: every n-th sample (and all around the failure)
    ("failure_websearch.toml", 20.0, 40.0, 4),
    ("failure_longflows.toml", 6.0, 10.0, 5),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one seed, two web-search loads (minutes)")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="one seed, one load, 40 flows; prints the tables, writes nothing under docs/",
    )
    P.add_arguments(ap, OUT)
    a = ap.parse_args()
    if a.smoke:
        P.smoke_threads()
    mode = Mode(a.quick, a.smoke)
    out = a.out / P.mode_name(a)
    rows = run_fct(mode, out, a.workers)
    ws, dm = mode.ws, mode.dm
    fail_jobs = [
        (
            HERE / cfg,
            ["scheme.kind=hula"]
            + (["run.max_sim_time_ms=25"] if a.smoke and "websearch" in cfg else []),
        )
        for cfg, *_ in FAILURES
    ]
    fail = P.run_points(fail_jobs, out, a.workers)
    (t9a, moved_a, s9a), (t9b, moved_b, s9b) = [
        rate_series(fail[P.point_key(*job)], down, up, every)
        for job, (_, down, up, every) in zip(fail_jobs, FAILURES, strict=False)
    ]
    parts = []
    parts.append(
        "### Fig. 5: average FCT (ms), symmetric topology\n\nWeb-search:\n\n"
        + table(rows, "base.toml", "websearch", "mean", SCHEMES, ws)
        + "\n\nData-mining:\n\n"
        + table(rows, "base.toml", "datamining", "mean", SCHEMES, dm)
        + f"\n\nFlows completed (data-mining, capped at {DM_MAX_MS} ms): "
        + completion(rows, "base.toml", "datamining", dm)
        + "; web-search: "
        + completion(rows, "base.toml", "websearch", ws)
    )
    parts.append(
        "### Fig. 6: web-search, asymmetric topology (S2-A4 down): average FCT (ms)\n\nAll flows:\n\n"
        + table(rows, "asym.toml", "websearch", "mean", SCHEMES, ws)
        + "\n\nSmall flows (< 100 KB):\n\n"
        + table(rows, "asym.toml", "websearch", "small", SCHEMES, ws)
        + "\n\nLarge flows (> 10 MB):\n\n"
        + table(rows, "asym.toml", "websearch", "large", SCHEMES, ws)
    )
    parts.append(
        "### Fig. 7: data-mining, asymmetric topology: average FCT (ms)\n\nAll flows:\n\n"
        + table(rows, "asym.toml", "datamining", "mean", SCHEMES, dm)
        + "\n\nSmall flows (< 100 KB):\n\n"
        + table(rows, "asym.toml", "datamining", "small", SCHEMES, dm)
        + "\n\nLarge flows (> 10 MB):\n\n"
        + table(rows, "asym.toml", "datamining", "large", SCHEMES, dm)
        + f"\n\nFlows completed (capped at {DM_MAX_MS} ms): "
        + completion(rows, "asym.toml", "datamining", dm)
    )
    parts.append(
        "### Fig. 8a, 8b: 99th percentile FCT (ms), asymmetric topology\n\nWeb-search:\n\n"
        + table(rows, "asym.toml", "websearch", "p99", SCHEMES, ws)
        + "\n\nData-mining:\n\n"
        + table(rows, "asym.toml", "datamining", "p99", SCHEMES, dm)
    )
    qload = 0.7 if 0.7 in ws else ws[-1]
    parts.append(
        f"### Fig. 8c: queue depth at the bottleneck S2->A3 (sampled every 100 us), web-search {int(qload * 100)}%, asymmetric\n\n"
        + queue_cdf(rows, qload)
    )
    parts.append(
        "### Fig. 9c: probe interval 1x (200 us) and 10x (2 ms), web-search, asymmetric: average FCT (ms)\n\n"
        + table(
            rows, "asym.toml", "websearch", "mean", ["ecmp", "conga_prime", "hula", "hula10x"], ws
        )
    )
    parts.append(
        "### Fig. 9a: spine-to-aggregation link rates (Gb/s, carried), web-search 60%, asymmetric; S2-A3 down at 20 ms, up at 40 ms (HULA)\n\n"
        + f"HULA stopped sending into the failed link {moved_a} ms after the failure (500 us samples).\n\n"
        + t9a
    )
    parts.append(
        "### Fig. 9b: long-running flows; S2-A3 down at 6 ms, up at 10 ms (HULA)\n\n"
        + f"HULA stopped sending into the failed link {moved_b} ms after the failure (100 us samples).\n\n"
        + t9b
    )
    parts.append(
        "### Probe overhead (HULA, web-search 60%, symmetric, seed 1)\n\n" + overhead(rows)
    )
    speed = [
        "| scheme | events/s (M) | packet-hops/s (M) | events per run (M) | wall s per run |",
        "|---|---|---|---|---|",
    ]
    for s in SCHEMES:
        rs = [
            r
            for r in rows
            if r["scheme"] == s and r["cdf"] == "websearch" and r["cfg"] == "asym.toml"
        ]
        speed.append(
            f"| {NAMES[s]} | {fmt_mean([r['events_per_s'] for r in rs], 1e6)} | {fmt_mean([r['hops_per_s'] for r in rs], 1e6)} | {fmt_mean([r['events'] for r in rs], 1e6)} | {fmt_mean([r['wall'] for r in rs])} |"
        )
    jobs = a.workers or os.cpu_count()
    parts.append(
        f"### Speed (asymmetric web-search runs, all loads and seeds, {jobs} job(s) in parallel)\n\n"
        + "\n".join(speed)
    )
    parts.insert(
        4,
        "### Switch drops, web-search, asymmetric (packets per run, all switch ports / at S2->A3)\n\n"
        + drops_table(rows, ws),
    )
    if not (a.quick or a.smoke):
        parts.append(plots(rows, ws, dm, qload, s9a, s9b))
    body = "\n\n".join(parts)
    P.publish(a, out, "results", body, lambda b: write_section("results", b))


if __name__ == "__main__":
    main()
