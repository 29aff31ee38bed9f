#!/usr/bin/env python3
"""Runs the P4TE evaluation set (experiments/p4te/README.md) and writes the
tables into docs/results/p4te.md (everything above its "## Discussion").

Usage: .venv/bin/python experiments/p4te/run.py [--quick | --smoke] [--seeds 1,2,3]
           [--rerun SETTING ...] [--workers N] [--out DIR]
Every run goes through `pisanet.sweep` (experiments/points.py) into sweep
directories under --out (default results/p4te; `full/`, `quick/` or `smoke/`
below it), with its per-flow records, queue and port-rate samples; the tables
and plots are read back from them with DuckDB, and a rerun resumes (finished
runs are not run again). After a change to one scheme, `--rerun
scheme.kind=NAME` runs that scheme's runs again. `--quick` (one seed, loads
40/80%) writes its page to OUT/quick/p4te.md and leaves docs/ alone.

Two steps follow the paper's section 7:
- loads are of the aggregation layer: with stride every flow crosses the
  fabric, so the hosts offer `load x fabric capacity` (workload.load is a
  fraction of host links: load x fabric / host capacity, 0.5 at 2:1);
- delta (alg. 1) is calibrated per topology: flowlet ECMP (the paper's ECMP)
  at 80% web-search load, fabric queues sampled every 10 us, p90 of the depth
  (packets) seen by departing packets, delta = max(1, round(p90 / 3)).
"""

import argparse
import json
import math
import statistics
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the `tomli` backport (pyproject.toml's dependency)
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
import points as P

OUT = ROOT / "docs" / "results" / "p4te.md"
RESULTS = "results/p4te"

# A switch CPU that keeps up with alg. 1's events (docs/schemes/p4te.md).
FAST_CPU = ["control_plane.write_latency_us=1", "control_plane.write_interval_us=0.1"]
NRA = ["scheme.p4te.rate_adaptation=false"]
# "+delta": the P4TE variant runs with the calibrated delta (DELTA[config]);
# the others use the config file's value.
VARIANTS = {
    "ECMP": ["scheme.kind=ecmp"],
    # The paper's ECMP selects paths per flowlet (section 7.1.2).
    "flowlet ECMP": ["scheme.kind=flowlet_ecmp"],
    "HULA": ["scheme.kind=hula"],
    "P4TE-RA": ["scheme.kind=p4te", "+delta"],
    "P4TE-NRA": ["scheme.kind=p4te", *NRA, "+delta"],
    "P4TE-RA fast": ["scheme.kind=p4te", *FAST_CPU, "+delta"],
    "P4TE-NRA fast": ["scheme.kind=p4te", *NRA, *FAST_CPU, "+delta"],
    # Default CPU as a batching P4Runtime controller (agent.rs).
    "P4TE-RA batch": ["scheme.kind=p4te", "scheme.p4te.cpu_coalesce=true", "+delta"],
    # The hand-picked delta of earlier versions (the config file's: 8 at 10G, 32 at 40G).
    "P4TE-RA fast, fixed delta": ["scheme.kind=p4te", *FAST_CPU],
}
# Short flows on data-mining (section "Why HULA beats P4TE on data-mining
# short flows"): one P4TE mechanism changed at a time, everything else as
# "P4TE-RA fast" (calibrated delta unless the variant sets one).
# Every port's link-utilization meter GREEN (CIR = PIR = line rate, a 10 ms
# burst): alg. 2's colour check never overrides lowQueueDepthPort.
ALL_GREEN = [
    "scheme.p4te.util_cir_pct=100",
    "scheme.p4te.util_pir_pct=100",
    "scheme.p4te.util_burst_pct=100",
    "scheme.p4te.util_burst_window_us=10000",
]
ABLATION = {
    "P4TE-RA fast, delta 8": ["scheme.kind=p4te", *FAST_CPU, "scheme.p4te.delta_pkts=8"],
    "P4TE-RA fast, delta 4": ["scheme.kind=p4te", *FAST_CPU, "scheme.p4te.delta_pkts=4"],
    "P4TE-RA fast, delta 2": ["scheme.kind=p4te", *FAST_CPU, "scheme.p4te.delta_pkts=2"],
    # No queue-depth information: one queue group holds every uplink.
    "P4TE-RA fast, 1 queue group": [
        "scheme.kind=p4te",
        *FAST_CPU,
        "+delta",
        "scheme.p4te.queue_groups=1",
    ],
    "P4TE-NRA fast, all GREEN": ["scheme.kind=p4te", *NRA, *FAST_CPU, "+delta", *ALL_GREEN],
    "P4TE-RA fast, flowlet 50 us": [
        "scheme.kind=p4te",
        *FAST_CPU,
        "+delta",
        "scheme.p4te.flowlet_interval_us=50",
    ],
    "P4TE-RA fast, flowlet 500 us": [
        "scheme.kind=p4te",
        *FAST_CPU,
        "+delta",
        "scheme.p4te.flowlet_interval_us=500",
    ],
    # Every flow in the short class (alg. 2's short-flow branch for all).
    "P4TE-RA fast, all short": [
        "scheme.kind=p4te",
        *FAST_CPU,
        "+delta",
        "workload.short_threshold_bytes=2000000000",
    ],
    # The finest leaf-local choice the program allows: 64 one-packet groups,
    # no colour override, no FACKs.
    "P4TE-NRA fast, delta 1 x 64 groups, all GREEN": [
        "scheme.kind=p4te",
        *NRA,
        *FAST_CPU,
        "scheme.p4te.delta_pkts=1",
        "scheme.p4te.queue_groups=64",
        *ALL_GREEN,
    ],
    # HULA with 5x staler path information.
    "HULA, probes 1 ms": ["scheme.kind=hula", "scheme.hula.probe_interval_us=1000"],
}
VARIANTS.update(ABLATION)
CONFIGS = [
    ("leaf_spine_10g.toml", "host 10G / fabric 5G"),
    ("leaf_spine_40g.toml", "host 40G / fabric 20G"),
]
# Mean flow size of the embedded CDFs (pisanet-workload Cdf::mean_bytes).
MEAN_BYTES = {"websearch": 1_711_250.0, "datamining": 12_658_198.6}
# Web-search points run a fixed number of flows; data-mining points (flows
# up to 1 GB) as many as arrive in this much time at the point's load
# (lambda = load x fabric capacity / (8 E[size])).
WEBSEARCH_FLOWS = 600
DATAMINING_ARRIVALS_S = {"leaf_spine_10g.toml": 1.5, "leaf_spine_40g.toml": 0.6}
# Data-mining runs last seconds: a 1 GB flow alone takes 1.6 s on a 5G link.
LONG_RUN = ["run.max_sim_time_ms=30000"]
# Calibration of delta (section 7), per topology config.
CALIB_VARIANT = "flowlet ECMP"
CALIB_LOAD = 0.8
CALIB_INTERVAL_US = 10
# A config's delta calibration (`calibrate`), by config file name.
Calib = dict[str, Any]
DELTA: dict[str, Calib] = {}
# A run's key in the results: ("grid", cfg, cdf, load, seed, variant),
# ("incast", seed, variant), ("fat", variant), ("short" or "short-ws", load, seed, variant).
Key = tuple[object, ...]
# A run's numbers (`stats`), and every run's by key.
Stats = dict[str, Any]
Res = dict[Key, Stats]
# (seeds, loads, variants) of a (config, cdf) grid.
Plan = dict[tuple[str, str], tuple[list[int], list[float], list[str]]]


def topology(cfg: str) -> tuple[float | None, float, list[str]]:
    """(fabric capacity in b/s of one direction, share of host capacity, fabric ports filter)."""
    t = tomllib.loads((HERE / cfg).read_text())["topology"]
    if t["kind"] == "leaf_spine":
        fabric = t["leaves"] * t["spines"] * t["fabric_link_gbps"] * 1e9
        hosts = t["leaves"] * t["hosts_per_leaf"] * t["host_link_gbps"] * 1e9
        return fabric, fabric / hosts, ["spine"]
    # fat_tree: not oversubscribed, uniform pairs (not in the paper): loads
    # are of host links as in its config.
    return None, 1.0, ["agg", "core"]


def host_load(cfg: str, load: float) -> float:
    """workload.load (fraction of host links) for the paper's aggregation-layer load."""
    return round(load * topology(cfg)[1], 6)


def flows_for(cfg: str, cdf: str, load: float) -> int:
    if cdf == "websearch":
        return WEBSEARCH_FLOWS
    fabric = topology(cfg)[0]
    if fabric is None:
        raise ValueError(f"{cfg}: data-mining flows are counted for a leaf-spine topology only")
    return round(load * fabric / (8 * MEAN_BYTES[cdf]) * DATAMINING_ARRIVALS_S[cfg])


def sets_for(v: str, cfg: str) -> list[str]:
    out = []
    for x in VARIANTS[v]:
        if x == "+delta":
            if cfg in DELTA:
                out.append(f"scheme.p4te.delta_pkts={DELTA[cfg]['delta']}")
        else:
            out.append(x)
    return out


# Section 7.1.2, as "scheme needs x% more time than P4TE" (ranges over loads).
PAPER = {
    ("websearch", "ECMP", "short"): "+40 to +55%",
    ("websearch", "ECMP", "large"): "+4 to +35%",
    ("websearch", "HULA", "short"): "+2 to +60% (60-80%: +23 to +40%)",
    ("websearch", "HULA", "large"): "+2 to +40% (60-80%: +29 to +47%)",
    ("datamining", "ECMP", "short"): "+27 to +56% (high load)",
    ("datamining", "ECMP", "large"): "+6 to +24% (high load)",
    ("datamining", "HULA", "short"): "+11 to +33% (high load)",
    ("datamining", "HULA", "large"): "+3 to +22% (high load)",
}


class Store:
    """The runs of this invocation: sweep directories under `out` (pisanet.sweep),
    read back as `points.Point`s. `rerun`: `key=value` settings whose finished
    runs are run again (once per invocation)."""

    def __init__(
        self,
        out: str | Path,
        workers: int | None = None,
        rerun: Iterable[str] = (),
        executor: Executor | None = None,
        run: bool = True,
    ) -> None:
        self.out, self.workers, self.rerun = Path(out), workers, list(rerun)
        self.executor, self.running = executor, run
        self.points: dict[P.PointKey, P.Point] = {}

    def run(self, jobs: Iterable[tuple[str, list[str]]]) -> None:
        """Runs `(config, sets)` jobs (config: a file name in experiments/p4te).
        Without `run` (plot.py), reads the finished ones only."""
        todo = [(HERE / c, s) for c, s in jobs if P.point_key(HERE / c, s) not in self.points]
        if todo:
            got = P.run_points(
                todo,
                self.out,
                self.workers,
                rerun=self.rerun,
                run=self.running,
                executor=self.executor,
                # The configs hold a [scheme.p4te] table that other schemes do not read.
                lenient=True,
            )
            self.points.update(got)

    def point(self, config: str, sets: list[str]) -> P.Point:
        """The finished run; KeyError if it is not finished and `run` is off."""
        key = P.point_key(HERE / config, sets)
        if key not in self.points:
            self.run([(config, sets)])
        return self.points[key]

    def flows(self, config: str, sets: list[str]) -> dict[str, list[Any]]:
        """Per-flow `bytes`, `class` and `fct_us` (None: unfinished), in flow id order."""
        f = self.point(config, sets).flows()
        return {
            "bytes": f["bytes"].tolist(),
            "class": f["class"].tolist(),
            "fct_us": [None if math.isnan(x) else x for x in f["fct"].tolist()],
        }


def quantile_weighted(pairs: Iterable[tuple[int, float]], q: float) -> int:
    """The smallest value v with weight(x <= v) >= q x total weight."""
    ps = sorted(pairs)
    total = sum(w for _, w in ps)
    acc = 0.0
    for v, w in ps:
        acc += w
        if acc >= q * total:
            return v
    return ps[-1][0] if ps else 0


def calibrate(store: Store, cfg: str, seeds: list[int], variant: str = CALIB_VARIANT) -> Calib:
    """Section 7: queue depths of the fabric ports under ECMP (with ECN) at
    80% web-search load, their p90 in packets, delta = p90 / 3.

    Depths are sampled every 10 us (bytes, converted to full-size packets,
    rounded up); each sample is weighted by the bytes the port sent in the
    10 us before it, so the distribution is that of the depth seen by
    departing packets (deq_qdepth, what alg. 1 reads; a port idle in that
    interval weighs nothing, an empty queue that is sending counts as 0).
    The p90 of all samples (idle ones included) and of non-empty samples
    are reported beside it."""
    frame = 1518
    _, _, ports = topology(cfg)
    load = (
        CALIB_LOAD
        if cfg.startswith("leaf_spine")
        else tomllib.loads((HERE / cfg).read_text())["workload"]["load"]
    )
    sets = [
        *sets_for(variant, cfg),
        "workload.cdf=websearch",
        f"workload.load={host_load(cfg, load)}",
        f"workload.flows={WEBSEARCH_FLOWS if cfg.startswith('leaf_spine') else 1500}",
        f"metrics.queue_sample_interval_us={CALIB_INTERVAL_US}",
        f"metrics.port_rate_interval_us={CALIB_INTERVAL_US}",
        "metrics.queue_sample_ports=" + json.dumps(ports),
        "metrics.port_rate_ports=" + json.dumps(ports),
        *EXTRA,
    ]
    weighted: list[tuple[int, float]] = []
    all_s: list[int] = []
    store.run([(cfg, [*sets, f"run.seed={seed}"]) for seed in seeds])
    for seed in seeds:
        d = store.point(cfg, [*sets, f"run.seed={seed}"])
        q, r = d.queues(), d.port_rates()
        rate = {
            (round(t, 3), port): g
            for t, port, g in zip(
                r["time"].tolist(), r["port"].tolist(), r["tx_gbps"].tolist(), strict=False
            )
        }
        for t, port, b in zip(
            q["time"].tolist(), q["port"].tolist(), q["depth_bytes"].tolist(), strict=False
        ):
            pk = math.ceil(b / frame)
            all_s.append(pk)
            weighted.append((pk, rate.get((round(t, 3), port), 0.0)))
    nonempty = [x for x in all_s if x > 0]
    p90 = quantile_weighted(weighted, 0.9)
    out = {
        "variant": variant,
        "load": load,
        "seeds": seeds,
        "samples": len(all_s),
        "p90_departures": p90,
        "p90_all": quantile_weighted([(x, 1) for x in all_s], 0.9),
        "p90_nonempty": quantile_weighted([(x, 1) for x in nonempty], 0.9),
        "nonempty_frac": len(nonempty) / max(len(all_s), 1),
        "p50_departures": quantile_weighted(weighted, 0.5),
        "p99_departures": quantile_weighted(weighted, 0.99),
        "delta": max(1, int(p90 / 3 + 0.5)),
    }
    return out


def stats(point: P.Point) -> Stats:
    """The numbers the tables use, from a point's `runs` row and its ports."""
    r = point.row
    counters = point.counters()
    done = int(r["flows_completed"]) or 1
    ups: dict[str, list[int]] = {}
    for port in point.ports():
        if port["uplink"] and port["name"].startswith("leaf"):
            ups.setdefault(port["name"].split("->")[0], []).append(port["tx_packets"])
    return {
        "short": r.get("fct_us_short_mean"),
        "large": r.get("fct_us_large_mean"),
        "retx": r["retransmissions"] / done,
        "completed": int(r["flows_completed"]),
        "total": int(r["flows_total"]),
        "delivered": r["packets_delivered"],
        "hops": r["packet_hops"],
        "feedback": counters.get("feedback", 0),
        "facks": counters.get("facks", 0),
        "writes": point.get("switches_writes_applied", 0),
        "issued": point.get("switches_writes_issued", 0),
        "wait_mean": point.get("switches_write_wait_us_mean", 0.0),
        "wait_max": point.get("switches_write_wait_us_max", 0.0),
        "sim_s": r["sim_time_s"],
        "sd": {k: statistics.pstdev(v) for k, v in sorted(ups.items())},
        "cv": {
            k: statistics.pstdev(v) / max(statistics.mean(v), 1) for k, v in sorted(ups.items())
        },
        "wall": r["wall_time_s"],
    }


def mean(xs: Iterable[float | None]) -> float | None:
    got = [x for x in xs if x is not None]
    return sum(got) / len(got) if got else None


def present(x: float | None) -> float:
    """`x`, a mean the caller knows has values (every run of the set has the
    figure); ValueError if it has none."""
    if x is None:
        raise ValueError("a mean over no values")
    return x


def fmt(x: float | None, d: int = 0) -> str:
    return "-" if x is None else f"{x:,.{d}f}"


def pct(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{100 * (a / b - 1):+.0f}%"


# Which seeds, loads and variants each section runs (about 75 minutes on one
# shared core in all; the data-mining grids take most of it).
LOADS = [0.2, 0.4, 0.6, 0.8]
ALL = [v for v in VARIANTS if v not in ABLATION]
BASE = [
    "ECMP",
    "flowlet ECMP",
    "HULA",
    "P4TE-RA",
    "P4TE-NRA",
    "P4TE-RA fast",
    "P4TE-NRA fast",
    "P4TE-RA batch",
]
CORE40 = [
    "ECMP",
    "flowlet ECMP",
    "HULA",
    "P4TE-RA",
    "P4TE-RA fast",
    "P4TE-NRA fast",
    "P4TE-RA batch",
    "P4TE-RA fast, fixed delta",
]
DM = ["ECMP", "flowlet ECMP", "HULA", "P4TE-RA fast", "P4TE-RA batch"]
PLAN = {
    ("leaf_spine_10g.toml", "websearch"): ([1, 2, 3], LOADS, ALL),
    ("leaf_spine_40g.toml", "websearch"): ([1, 2, 3], LOADS, CORE40),
    ("leaf_spine_10g.toml", "datamining"): ([1, 2, 3], LOADS, DM),
    ("leaf_spine_40g.toml", "datamining"): ([1, 2, 3], LOADS, DM),
}
# Why HULA beats P4TE on data-mining short flows (10G/5G): ABLATION's
# variants beside the grid's, the grid's flows and seeds 1-2 (the same runs).
SHORT_CFG = ("leaf_spine_10g.toml", "datamining")
SHORT_SEEDS = [1, 2]
SHORT_LOADS = [0.2, 0.4, 0.6, 0.8]
SHORT_VARIANTS = [
    "flowlet ECMP",
    "HULA",
    "HULA, probes 1 ms",
    "P4TE-RA fast",
    "P4TE-RA batch",
    "P4TE-NRA fast",
    "P4TE-RA fast, delta 8",
    "P4TE-RA fast, delta 2",
    "P4TE-RA fast, 1 queue group",
    "P4TE-RA fast, flowlet 500 us",
    "P4TE-RA fast, all short",
    "P4TE-NRA fast, all GREEN",
    "P4TE-NRA fast, delta 1 x 64 groups, all GREEN",
]
# The same on web-search at 10G/5G (HULA also wins its short flows at 20-40%).
SHORT_WS_SEEDS = [1, 2, 3]
SHORT_WS_VARIANTS = [
    "HULA",
    "P4TE-RA fast",
    "P4TE-NRA fast",
    "P4TE-RA fast, delta 2",
    "P4TE-NRA fast, all GREEN",
    "P4TE-NRA fast, delta 1 x 64 groups, all GREEN",
]
# Where the queues are: fabric queues and transmit rates sampled every 20 us
# (arrival period only), and alg. 2's decision counters; (load, seed, variants).
WHERE = (0.4, 1, ["HULA", "P4TE-RA fast", "P4TE-NRA fast, all GREEN"])
WHERE_INTERVAL_US = 20
# The CDF plots (appendix A.2): these schemes, 10G/5G.
CDF_VARIANTS = ["ECMP", "flowlet ECMP", "HULA", "P4TE-RA fast"]


# --smoke (the test suite's): overrides after every run's own, for runs of seconds.
EXTRA: list[str] = []
EXTRA_INCAST: list[str] = []


def smoke() -> None:
    """One seed, one load, two variants per grid, 20 flows per run cut at 30 ms."""
    EXTRA[:] = ["workload.flows=20", "run.max_sim_time_ms=30"]
    EXTRA_INCAST[:] = ["run.max_sim_time_ms=5"]
    for k in PLAN:
        PLAN[k] = (
            [1],
            [0.4],
            ["ECMP", "flowlet ECMP", "HULA", "P4TE-RA", "P4TE-RA fast", "P4TE-RA batch"],
        )
    BASE[:] = ["ECMP", "P4TE-RA"]
    SHORT_SEEDS[:] = SHORT_WS_SEEDS[:] = [1]
    SHORT_LOADS[:] = [0.4]
    SHORT_VARIANTS[:] = SHORT_WS_VARIANTS[:] = ["HULA", "P4TE-RA fast"]
    WHERE[2][:] = ["HULA"]


def grid_sets(cfg: str, cdf: str, load: float, seed: int, v: str) -> list[str]:
    sets = [
        *sets_for(v, cfg),
        f"workload.cdf={cdf}",
        f"workload.load={host_load(cfg, load)}",
        f"workload.flows={flows_for(cfg, cdf, load)}",
        f"run.seed={seed}",
    ]
    return sets + (LONG_RUN if cdf == "datamining" else []) + EXTRA


def jobs(seeds: list[int]) -> Iterator[tuple[Key, str, list[str]]]:
    def grid(cfg: str, cdf: str) -> Iterator[tuple[Key, str, list[str]]]:
        ss, loads, vs = PLAN[(cfg, cdf)]
        for load in loads:
            for seed in ss:
                for v in vs:
                    yield ("grid", cfg, cdf, load, seed, v), cfg, grid_sets(cfg, cdf, load, seed, v)

    first, *rest = PLAN
    yield from grid(*first)
    for seed in seeds:
        for v in BASE:
            yield (
                ("incast", seed, v),
                "incast_10g.toml",
                [*sets_for(v, "incast_10g.toml"), f"run.seed={seed}", *EXTRA_INCAST],
            )
    for v in BASE:
        yield ("fat", v), "fat_tree_k8.toml", sets_for(v, "fat_tree_k8.toml") + EXTRA
    for k in rest:
        yield from grid(*k)
    cfg, cdf = SHORT_CFG
    for load in SHORT_LOADS:
        for seed in SHORT_SEEDS:
            for v in SHORT_VARIANTS:
                yield ("short", load, seed, v), cfg, grid_sets(cfg, cdf, load, seed, v)
        for seed in SHORT_WS_SEEDS:
            for v in SHORT_WS_VARIANTS:
                yield ("short-ws", load, seed, v), cfg, grid_sets(cfg, "websearch", load, seed, v)


def short_flow_stats(
    store: Store, load: float, seed: int, v: str, cdf: str = SHORT_CFG[1]
) -> dict[str, Any]:
    """Mean FCT of the short flows (the default classes: the variant "all
    short" reclassifies its own) and the share of one-packet flows slower
    than 50 us, from the per-flow records."""
    cfg = SHORT_CFG[0]
    ref = store.flows(cfg, grid_sets(cfg, cdf, load, seed, "HULA"))
    d = store.flows(cfg, grid_sets(cfg, cdf, load, seed, v))
    short = [f for c, f in zip(ref["class"], d["fct_us"], strict=False) if c == 0 and f is not None]
    one = [f for b, f in zip(d["bytes"], d["fct_us"], strict=False) if b <= 1460 and f is not None]
    return {"short": mean(short), "one_slow": sum(f > 50 for f in one) / max(len(one), 1)}


def where_queues(store: Store, v: str, load: float, seed: int) -> dict[str, Any]:
    """Fabric queues while the data-mining flows arrive (first 1.5 s): the
    time-average depth (packets) of the leaf uplinks and of the spine
    downlinks, the share of time a leaf has an idle uplink (empty queue,
    nothing sent in the interval) while another of its uplinks holds 28+
    packets, what a one-packet flow and its ACK would wait (packets, four
    fabric queues) on a random path, on the uplinks with the shortest
    queue at each end, and on the shortest end-to-end paths (by PASTA,
    from the samples), and alg. 2's counters."""
    cfg, cdf = SHORT_CFG
    iv = WHERE_INTERVAL_US
    sets = [
        *grid_sets(cfg, cdf, load, seed, v),
        f"metrics.queue_sample_interval_us={iv}",
        f"metrics.port_rate_interval_us={iv}",
        'metrics.queue_sample_ports=["spine"]',
        'metrics.port_rate_ports=["spine"]',
    ]
    import numpy as np

    d = store.point(cfg, sets)
    qf, rf = d.queues(), d.port_rates()
    q = {
        "time_us": qf["time"].tolist(),
        "port": qf["port"].tolist(),
        "depth_bytes": qf["depth_bytes"].tolist(),
    }
    r = {
        "time_us": rf["time"].tolist(),
        "port": rf["port"].tolist(),
        "tx_gbps": rf["tx_gbps"].tolist(),
    }
    names = sorted(set(q["port"]))
    col = {n: i for i, n in enumerate(names)}
    ts = np.unique(np.array(q["time_us"]))

    def matrix(t: list[float], port: list[str], val: np.ndarray) -> np.ndarray:
        m = np.zeros((len(ts), len(names)))
        m[np.searchsorted(ts, np.array(t)), [col[x] for x in port]] = val
        return m[ts <= DATAMINING_ARRIVALS_S[cfg] * 1e6]

    depth = np.ceil(matrix(q["time_us"], q["port"], np.array(q["depth_bytes"], float)) / 1518)
    tx = matrix(r["time_us"], r["port"], np.array(r["tx_gbps"], float))
    n = 4

    def by(fmt_name: Callable[[int, int, int], str], shift: int = 0) -> np.ndarray:
        return np.array(
            [[depth[:, col[fmt_name(j, s, (j + shift) % n)]] for s in range(n)] for j in range(n)]
        )

    up = by(lambda j, s, k: f"leaf{j}->spine{s}")
    down = by(lambda j, s, k: f"spine{s}->leaf{k}", 1)
    up_tx = np.array([[tx[:, col[f"leaf{j}->spine{s}"]] for s in range(n)] for j in range(n)])
    # A leaf-j flow's ACK: leaf j+1's uplink, then the spine's downlink to leaf j.
    ack_up, ack_down = np.roll(up, -1, axis=0), by(lambda j, s, k: f"spine{s}->leaf{j}")
    rng = np.random.default_rng(0)

    def on_min_uplink(u: np.ndarray, dn: np.ndarray) -> float:
        i = (u + rng.random(u.shape) * 1e-3).argmin(axis=1)
        return float(np.take_along_axis(u + dn, i[:, None, :], 1).mean())

    idle = (up == 0) & (up_tx == 0)
    c = d.counters()
    out = {
        "up": float(up.mean()),
        "down": float(down.mean()),
        "idle_beside_deep": float((idle.any(axis=1) & (up >= 28).any(axis=1)).mean()),
        "random": float((up + down).mean() + (ack_up + ack_down).mean()),
        "min_uplink": on_min_uplink(up, down) + on_min_uplink(ack_up, ack_down),
        "min_path": float((up + down).min(axis=1).mean() + (ack_up + ack_down).min(axis=1).mean()),
        "counters": c,
    }
    return out


def calibrate_all(store: Store, seeds: list[int]) -> dict[str, Calib]:
    """DELTA for every config (incast: the 10G one, same topology)."""
    for cfg in ["leaf_spine_10g.toml", "leaf_spine_40g.toml", "fat_tree_k8.toml"]:
        DELTA[cfg] = calibrate(store, cfg, seeds)
    DELTA["incast_10g.toml"] = DELTA["leaf_spine_10g.toml"]
    return {
        cfg: calibrate(store, cfg, seeds, "ECMP")
        for cfg in ["leaf_spine_10g.toml", "leaf_spine_40g.toml"]
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--quick", action="store_true", help="one seed, loads 0.4 and 0.8")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="one seed, one load, a few variants, 20 flows; prints, writes nothing under docs/",
    )
    P.add_arguments(ap, RESULTS)
    ap.add_argument(
        "--rerun",
        action="append",
        default=[],
        metavar="SETTING",
        help="run again the finished runs whose settings contain SETTING "
        "(e.g. scheme.kind=flowlet_ecmp), once each",
    )
    a = ap.parse_args()
    seeds = [1] if a.quick or a.smoke else [int(s) for s in a.seeds.split(",")]
    if a.quick:
        for k, (_, _, vs) in PLAN.items():
            PLAN[k] = ([1], [0.4, 0.8], vs)
        SHORT_SEEDS[:] = SHORT_WS_SEEDS[:] = [1]
        SHORT_LOADS[:] = [0.4, 0.8]
    if a.smoke:
        smoke()
    out = a.out / ("smoke" if a.smoke else "quick" if a.quick else "full")
    if a.smoke:
        P.smoke_threads()
    store = Store(out, a.workers, a.rerun)
    per_flow_ecmp = calibrate_all(store, seeds)
    todo = list(jobs(seeds))
    store.run([(cfg, sets) for _, cfg, sets in todo])
    res = {key: stats(store.point(cfg, sets)) for key, cfg, sets in todo}
    text = write(res, seeds, per_flow_ecmp, store, doc=None)
    P.publish(a, out, "p4te", text, write_page)
    if a.smoke or a.quick:
        return
    # plot.py imports this module as `run`: let it share this run's state
    # (DELTA, PLAN) instead of importing a fresh copy.
    sys.modules.setdefault("run", sys.modules[__name__])
    import plot

    for f in plot.plot(res, PLAN) + plot.plot_cdfs(store, PLAN):
        print(f"wrote {f}")


def flows_title(cfg: str, cdf: str, loads: list[float]) -> str:
    n = [flows_for(cfg, cdf, ld) for ld in loads]
    if len(set(n)) == 1:
        return f"{n[0]} flows"
    return (
        "flows "
        + " / ".join(f"{x:,}" for x in n)
        + f" (arrivals over {DATAMINING_ARRIVALS_S[cfg]} s)"
    )


def write_short(res: Res, store: Store) -> list[str]:
    """The section on data-mining short flows (ABLATION, WHERE)."""
    L: list[str] = []
    w = L.append
    cfg = SHORT_CFG[0]
    w(
        f"\n## Data-mining short flows: why HULA is faster than P4TE ({cfg.removesuffix('.toml')}, seeds {SHORT_SEEDS})\n"
    )
    w(
        'One P4TE mechanism changed at a time, everything else as "P4TE-RA fast" (the grid\'s flows; the '
        "grid's own runs where the variant is the grid's). Short FCT: mean over the short flows (the default classes, "
        'also for "all short"), us; ">50 us": share of one-packet flows slower than 50 us (an empty path takes '
        '9-15 us; one queue at the ECN threshold adds ~100 us). "all GREEN": every link-utilization meter at '
        "CIR = PIR = line rate with a 10 ms burst, so alg. 2's colour check (lines 9-10) never overrides "
        "lowQueueDepthPort (and large flows see every port in the GREEN group); it runs without rate adaptation "
        '(compare P4TE-NRA fast), since T4 reads the same colours. "1 queue group": no queue-depth information. '
        '"all short": every flow takes alg. 2\'s short-flow branch.\n'
    )
    w(
        "| variant | "
        + " | ".join(f"{int(ld * 100)}% short FCT | {int(ld * 100)}% >50 us" for ld in SHORT_LOADS)
        + " |"
    )
    w("|---|" + "---|---|" * len(SHORT_LOADS))
    for v in SHORT_VARIANTS:
        cells = []
        for load in SHORT_LOADS:
            st = [
                short_flow_stats(store, load, s, v)
                for s in SHORT_SEEDS
                if ("short", load, s, v) in res
            ]
            cells += [
                fmt(mean([x["short"] for x in st])),
                f"{100 * present(mean([x['one_slow'] for x in st])):.0f}%" if st else "-",
            ]
        w(f"| {v} | " + " | ".join(cells) + " |")
    w(
        f"\nThe same on web-search ({cfg.removesuffix('.toml')}, 600 flows, seeds {SHORT_WS_SEEDS}), short FCT:\n"
    )
    w("| variant | " + " | ".join(f"{int(ld * 100)}%" for ld in SHORT_LOADS) + " |")
    w("|---|" + "---|" * len(SHORT_LOADS))
    for v in SHORT_WS_VARIANTS:
        w(
            f"| {v} | "
            + " | ".join(
                fmt(
                    mean(
                        [
                            short_flow_stats(store, load, s, v, "websearch")["short"]
                            for s in SHORT_WS_SEEDS
                            if ("short-ws", load, s, v) in res
                        ]
                    )
                )
                for load in SHORT_LOADS
            )
            + " |"
        )
    load, seed, vs = WHERE
    w(
        f"\n**Where the queues are** ({int(load * 100)}% load, seed {seed}, the first "
        f"{DATAMINING_ARRIVALS_S[cfg]} s while flows arrive; queues sampled every {WHERE_INTERVAL_US} us, packets). "
        "Stride sends leaf j's flows to leaf j+1, so leaf j's uplink to spine s feeds spine s's downlink to leaf j+1; "
        "a one-packet flow waits in four fabric queues (its packet: that uplink and downlink; its ACK: leaf j+1's "
        'uplink, then a spine\'s downlink to leaf j). "wait on ...": the time-average of those four queues (by PASTA, '
        "what a tiny flow arriving at a random time would see) on a random path, on the uplinks with the shortest "
        "queue at each leaf (the best a leaf-local choice can do with exact depths), and on the shortest whole paths. "
        "Overrides: share of alg. 2's flowlet decisions (data and ACK flowlets) where the colour check sent the "
        "flowlet to the other metric's port.\n"
    )
    w(
        "| variant | uplink depth | downlink depth | idle uplink beside a 28+ one | wait on random path | wait on min uplinks | wait on min paths | short-class overrides | large-class overrides |"
    )
    w("|---|---|---|---|---|---|---|---|---|")
    for v in vs:
        x = where_queues(store, v, load, seed)
        c = x["counters"]

        def share(cls: str) -> str:
            tot = c.get(f"path_choices_{cls}")
            return "-" if not tot else f"{100 * c.get(f'path_overrides_{cls}', 0) / tot:.0f}%"

        w(
            f"| {v} | {x['up']:.1f} | {x['down']:.1f} | {100 * x['idle_beside_deep']:.0f}% | {x['random']:.1f} | "
            f"{x['min_uplink']:.1f} | {x['min_path']:.1f} | {share('short')} | {share('large')} |"
        )
    return L


def write(
    res: Res,
    seeds: list[int],
    per_flow_ecmp: dict[str, Calib],
    store: Store,
    doc: Path | None = OUT,
) -> str:
    L: list[str] = []
    w = L.append

    def g(cfg: str, cdf: str, load: float, v: str, k: str) -> float | None:
        ss = PLAN[(cfg, cdf)][0]
        return mean(
            [
                res[("grid", cfg, cdf, load, s, v)][k]
                for s in ss
                if ("grid", cfg, cdf, load, s, v) in res
            ]
        )

    w("# P4TE: results\n")
    w(
        "Generated by `.venv/bin/python experiments/p4te/run.py` (every run through `pisanet.sweep` into "
        "`results/p4te/full/`; a rerun resumes where an interrupted one stopped; about 75 minutes on one "
        "core), or with one seed at 40 and 80% by `... run.py --quick` (into "
        "`results/p4te/quick/p4te.md`, not here). Configs and the figure each reproduces: "
        "experiments/p4te/README.md; the scheme: docs/schemes/p4te.md. "
        'Each point is the mean over the seeds in its section\'s title ("-": not run); flows per point '
        "are there too (the paper: 500 s per load on 40/20 packets/s links, 5 repetitions). **Loads are of the "
        'aggregation layer** as in the paper\'s section 7.1 ("20-80% capacity of the aggregation layer"): with '
        "stride every flow crosses the fabric, so the hosts offer load x fabric capacity, `workload.load` = load / 2 "
        "of the host links at 2:1. FCT in us (mean over the class's flows: short <= p90 of the "
        "size CDF); retransmissions are segments resent per completed flow. Hosts run DCTCP with TCP "
        "Small Queues (`transport.tsq_kb` = 131.072, default) and congestion-window validation "
        '(docs/model.md, Hosts), with the ordinary receive window. "ECMP" hashes each flow; '
        '"flowlet ECMP" re-hashes per flowlet (the paper\'s ECMP, section 7.1.2). "P4TE-RA"/"P4TE-NRA": '
        "with/without rate adaptation (section 7.1.1), default switch CPU (10 us to the CPU, 50 us per "
        'write, writes 5 us apart); "fast": writes in 1 us, 0.1 us apart; "batch": the default CPU as a '
        "batching controller (`scheme.p4te.cpu_coalesce = true`: one batch in flight, then the net change). "
        'Every P4TE variant runs with the calibrated delta below, except "fixed delta" (the hand-picked '
        "8 / 32 packets of earlier versions).\n"
    )
    w("\n## Delta calibration (section 7)\n")
    w(
        "The paper measured queue depths under ECMP with ECN, took the 90th percentile (6 packets) and set "
        f"delta = 6 / 3 = 2. Here: {CALIB_VARIANT} (the paper's ECMP), web-search, 80% load (fat tree: its "
        f"own 60%), seeds {seeds}, {WEBSEARCH_FLOWS} flows (fat tree 1500); every fabric port's queue "
        f"(leaf uplinks and spine downlinks; fat tree: all switch-to-switch ports) sampled every "
        f"{CALIB_INTERVAL_US} us, bytes / 1518 rounded up = packets. **p90 (departures)** weighs each sample "
        f"by the bytes the port sent in the {CALIB_INTERVAL_US} us before it: the depth a departing packet "
        "sees (deq_qdepth, what alg. 1 measures; idle ports weigh nothing, a sending port with an empty "
        "queue counts as 0). delta = max(1, round(p90 / 3)). The other two columns show the choice matters "
        "little here.\n"
    )
    w(
        "| topology | baseline | samples | non-empty | p50 / p90 / p99 (departures) | p90 all samples | p90 non-empty | delta | hand-picked before |"
    )
    w("|---|---|---|---|---|---|---|---|---|")
    fixed = {"leaf_spine_10g.toml": 8, "leaf_spine_40g.toml": 32, "fat_tree_k8.toml": 32}
    rows = [
        (c, DELTA[c]) for c in ["leaf_spine_10g.toml", "leaf_spine_40g.toml", "fat_tree_k8.toml"]
    ]
    rows += [(c, per_flow_ecmp[c]) for c in ["leaf_spine_10g.toml", "leaf_spine_40g.toml"]]
    for c, d in rows:
        used = d is DELTA[c]
        w(
            f"| {c.removesuffix('.toml')} | {d['variant']}{'' if used else ' (not used)'} | {d['samples']:,} | "
            f"{100 * d['nonempty_frac']:.0f}% | {d['p50_departures']} / {d['p90_departures']} / {d['p99_departures']} | "
            f"{d['p90_all']} | {d['p90_nonempty']} | {'**' + str(d['delta']) + '**' if used else d['delta']} | {fixed[c]} |"
        )
    for cdf in ["websearch", "datamining"]:
        for cfg, title in CONFIGS:
            fig = "9" if cdf == "websearch" else "10"
            ss, loads, V = PLAN[(cfg, cdf)]
            w(
                f"\n## Fig. {fig}: {cdf}, leaf-spine {title}, stride, {flows_title(cfg, cdf, loads)}, seeds {ss}\n"
            )
            w("| load | metric | " + " | ".join(V) + " |")
            w("|---|---|" + "---|" * len(V))
            for load in loads:
                for metric, key, digits in [
                    ("short FCT", "short", 0),
                    ("large FCT", "large", 0),
                    ("retx/flow", "retx", 2),
                ]:
                    w(
                        f"| {int(load * 100)}% | {metric} | "
                        + " | ".join(fmt(g(cfg, cdf, load, v, key), digits) for v in V)
                        + " |"
                    )
            if cdf == "datamining":
                w(
                    "| all | traffic ms | "
                    + " | ".join(
                        fmt(present(mean([g(cfg, cdf, ld, v, "sim_s") for ld in loads])) * 1000)
                        for v in V
                    )
                    + " |"
                )
            png = f"{cdf}_{'10g' if '10g' in cfg else '40g'}.png"
            w(
                f"\n![mean FCT against load, {cdf}, {title}](p4te/{png})\n\n"
                f"Plot: [p4te/{png}](p4te/{png}) (mean over the seeds, bars min-max; solid P4TE lines: fast CPU, "
                f"dashed: default CPU)."
            )
            w(
                "\n**vs the paper** (x% = the scheme needs x% more time than the P4TE variant of the column; ours per load "
                + "/".join(str(int(ld * 100)) for ld in loads)
                + "%):\n"
            )
            has = lambda v: v in V
            cols = [c for c in ["P4TE-RA", "P4TE-RA batch", "P4TE-RA fast"] if has(c)]
            w("| comparison | flows | paper | " + " | ".join(f"ours, vs {c}" for c in cols) + " |")
            w("|---|---|---|" + "---|" * len(cols))
            for other, ours_other in [("ECMP", "flowlet ECMP"), ("ECMP", "ECMP"), ("HULA", "HULA")]:
                for cls in ["short", "large"]:
                    cells = [
                        " / ".join(
                            pct(g(cfg, cdf, ld, ours_other, cls), g(cfg, cdf, ld, c, cls))
                            for ld in loads
                        )
                        for c in cols
                    ]
                    w(
                        f"| {ours_other} vs P4TE | {cls} | {PAPER[(cdf, other, cls)]} | "
                        + " | ".join(cells)
                        + " |"
                    )
            if has("P4TE-NRA fast"):
                for cls in ["short", "large"]:
                    cells = []
                    for c in cols:
                        nra = {"P4TE-RA": "P4TE-NRA", "P4TE-RA fast": "P4TE-NRA fast"}.get(c)
                        cells.append(
                            " / ".join(
                                pct(g(cfg, cdf, ld, nra, cls), g(cfg, cdf, ld, c, cls))
                                for ld in loads
                            )
                            if nra and has(nra)
                            else "-"
                        )
                    w(
                        f"| Fig. 8: NRA vs RA | {cls} | +5 to +12% at high load | "
                        + " | ".join(cells)
                        + " |"
                    )
            cells = [
                " / ".join(
                    pct(g(cfg, cdf, ld, c, "retx"), g(cfg, cdf, ld, "flowlet ECMP", "retx"))
                    for ld in loads
                )
                for c in cols
            ]
            w(
                f"| retransmissions, P4TE vs flowlet ECMP | all | {'+6 to +26%' if cdf == 'websearch' else 'more'} | "
                + " | ".join(cells)
                + " |"
            )
            fk = " / ".join(
                fmt(
                    present(g(cfg, cdf, ld, "P4TE-RA fast", "facks"))
                    * 1000
                    / max(present(g(cfg, cdf, ld, "P4TE-RA fast", "delivered")), 1),
                    1,
                )
                for ld in loads
            )
            w(f"\nFACKs per 1000 delivered packets (P4TE-RA fast): {fk}.")
    w("\n## Appendix A.2 (Fig. 14, 15): CDFs of FCT, host 10G / fabric 5G\n")
    w(
        "Per-flow FCTs of the grids above pooled over the seeds, one panel per load (columns) and class "
        "(rows: short, large, all), "
        + ", ".join(CDF_VARIANTS)
        + " (the P4TE of the paper's testbed: its CPU kept up).\n"
    )
    for cdf, fig in [("datamining", "14"), ("websearch", "15")]:
        w(
            f"- Fig. {fig}, {cdf}: ![CDF of FCT, {cdf}](p4te/cdf_{cdf}_10g.png) "
            f"[p4te/cdf_{cdf}_10g.png](p4te/cdf_{cdf}_10g.png)"
        )
    L.extend(write_short(res, store))
    w("\n## Fig. 11: load over each leaf's uplinks (web-search, 80%, 10G/5G)\n")
    w(
        "Standard deviation of the packets each leaf sends on its 4 uplinks over a whole run, and the same "
        "divided by the mean (coefficient of variation, comparable across run lengths), mean over the seeds. "
        "Paper: SD 196-661 packets (ECMP), 28-221 (P4TE), HULA lowest.\n"
    )
    cfg = "leaf_spine_10g.toml"
    seeds10, loads, V = PLAN[(cfg, "websearch")]
    load = loads[-1]
    leaves = sorted(res[("grid", cfg, "websearch", load, seeds10[0], "ECMP")]["sd"])
    w("| leaf | " + " | ".join(f"{v} SD" for v in V) + " |")
    w("|---|" + "---|" * len(V))
    for leaf in leaves:
        w(
            f"| {leaf} | "
            + " | ".join(
                fmt(
                    mean(
                        [
                            res[("grid", cfg, "websearch", load, s, v)]["sd"].get(leaf)
                            for s in seeds10
                        ]
                    )
                )
                for v in V
            )
            + " |"
        )
    w(
        "| CV, mean of leaves | "
        + " | ".join(
            f"{100 * present(mean([mean(list(res[('grid', cfg, 'websearch', load, s, v)]['cv'].values())) for s in seeds10])):.1f}%"
            for v in V
        )
        + " |"
    )
    w(
        "\n## Fig. 12: incast, 24 x 512 KB and 8 x 1 MB from 12 hosts on other leaves to one host (10G/5G)\n"
    )
    w(
        "Mean over the seeds. Paper: P4TE slightly faster for short flows, more for large ones, more retransmissions.\n"
    )
    w("| scheme | short FCT | large FCT | retx/flow | completed | FACKs |")
    w("|---|---|---|---|---|---|")
    for v in BASE:
        rs = [res[("incast", s, v)] for s in seeds]
        w(
            f"| {v} | {fmt(mean([r['short'] for r in rs]))} | {fmt(mean([r['large'] for r in rs]))} | "
            f"{fmt(mean([r['retx'] for r in rs]), 2)} | {sum(r['completed'] for r in rs)}/{sum(r['total'] for r in rs)} | "
            f"{fmt(mean([r['facks'] for r in rs]))} |"
        )
    w(
        "\n## At scale: fat_tree k=8, hosts 40G, fabric 100G, web-search 60% of host links, uniform, 1500 flows, seed 1\n"
    )
    w(
        "| scheme | short FCT | large FCT | retx/flow | completed | CPU writes issued | mean write wait us | wall s |"
    )
    w("|---|---|---|---|---|---|---|---|")
    for v in BASE:
        r = res[("fat", v)]
        w(
            f"| {v} | {fmt(r['short'])} | {fmt(r['large'])} | {fmt(r['retx'], 2)} | {r['completed']}/{r['total']} | "
            f"{r['issued']:,} | {fmt(r['wait_mean'], 1)} | {fmt(r['wall'], 1)} |"
        )
    w("\n## P4TE's overhead: feedback and the switch CPU (web-search)\n")
    w(
        'Feedback packets are alg. 1\'s clones to the CPU (queue-depth and colour events); "per egress pass" '
        "divides by packet hops (each delivered packet passes 2-3 switches). Writes: alg. 3's writes issued "
        "after start-up (all switches); wait: how long a write queued behind earlier ones beyond its latency, "
        "mean and worst; applied: writes that took effect before the run ended, including the ~230 of "
        "start-up (hence batch: applied > issued). Mean over the seeds. "
        "Feedback and FACK columns are P4TE-RA's (default CPU).\n"
    )
    w(
        "| fabric | load | feedback / delivered pkt | feedback / egress pass | FACKs / delivered pkt | default CPU: writes issued / applied | default CPU: wait mean / max ms | batch: writes issued / applied | batch: wait mean / max us | fast CPU: wait mean / max us | traffic ms |"
    )
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for cfg, title in CONFIGS:
        ss, loads, _ = PLAN[(cfg, "websearch")]
        for load in loads:
            rs = [res[("grid", cfg, "websearch", load, s, "P4TE-RA")] for s in ss]
            bs = [res[("grid", cfg, "websearch", load, s, "P4TE-RA batch")] for s in ss]
            fs = [res[("grid", cfg, "websearch", load, s, "P4TE-RA fast")] for s in ss]
            w(
                f"| {title} | {int(load * 100)}% | {mean([r['feedback'] / max(r['delivered'], 1) for r in rs]):.3f} | "
                f"{mean([r['feedback'] / max(r['hops'], 1) for r in rs]):.3f} | {mean([r['facks'] / max(r['delivered'], 1) for r in rs]):.4f} | "
                f"{fmt(mean([r['issued'] for r in rs]))} / {fmt(mean([r['writes'] for r in rs]))} | "
                f"{fmt(present(mean([r['wait_mean'] for r in rs])) / 1000, 1)} / {fmt(max(r['wait_max'] for r in rs) / 1000, 1)} | "
                f"{fmt(mean([r['issued'] for r in bs]))} / {fmt(mean([r['writes'] for r in bs]))} | "
                f"{fmt(mean([r['wait_mean'] for r in bs]), 1)} / {fmt(max(r['wait_max'] for r in bs), 0)} | "
                f"{fmt(mean([r['wait_mean'] for r in fs]), 2)} / {fmt(max(r['wait_max'] for r in fs), 1)} | "
                f"{fmt(present(mean([r['sim_s'] for r in rs])) * 1000, 0)} |"
            )
    if doc is not None:
        write_page("\n".join(L), doc)
    return "\n".join(L)


def write_page(text: str, doc: Path = OUT) -> None:
    """docs/results/p4te.md: `text`, then the page's hand-written "## Discussion" on."""
    doc.parent.mkdir(parents=True, exist_ok=True)
    tail = ""
    if doc.exists():
        old = doc.read_text()
        marker = "\n## Discussion"
        if marker in old:
            tail = old[old.index(marker) :]
    doc.write_text(text + "\n" + tail)
    print(f"wrote {doc}")


if __name__ == "__main__":
    main()
