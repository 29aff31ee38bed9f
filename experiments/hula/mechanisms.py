#!/usr/bin/env python3
"""Experiments on the mechanisms behind docs/results/hula.md's open points:
data-mining at a scale where the schemes differ, why CONGA' stays close to
HULA, whether HULA's drops at the bottleneck come from herding, and why a
10x probe interval costs HULA time at 30-50% load (`probe10x`).

Tables go into docs/results/hula.md between `<!-- mechanisms:begin -->` and
`<!-- mechanisms:end -->`. Every run goes through `pisanet.sweep` into
results/hula-mechanisms/MODE/ (experiments/points.py), so a rerun only
simulates what is missing; `--tables` rewrites the tables from the finished
runs without running anything.

`.venv/bin/python experiments/hula/mechanisms.py [--only NAME ...] [--tables]
[--quick | --smoke] [--workers N] [--out DIR]` (342 runs, about 90 minutes on one core
from nothing; `--quick`: seed 1 and data-mining at 80% only).

Per-run numbers beyond the FCTs (from the sweep's `runs` table, `ports`
table and `queues`/`port_rates` views):
- the programs' diagnostic counters (`summary.switches.counters`):
  `new_data_flowlets_tier0` (data packets that started a flowlet at a ToR;
  HULA and CONGA'), `hula_best_hop_changes_tier{0,1,2}` (probes that moved a
  best hop to another port);
- the per-port counters: drops and bytes per link class (ToR up, A->S, S->A,
  ...), and S2's share of the bytes the pod-1 aggregation switches send up;
- with `ts`, 50 us samples of the A1/A2 uplink rates and of the S2->A3 queue.
"""

import argparse
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import points as P
import run as hula

# A run: (config, sets, scheme, seed).
Job = tuple[str, list[str], str, int]
# A run's numbers (`one`), and every run's by `key`.
Rec = dict[str, Any]
Cache = dict[str, Rec]

OUT = "results/hula-mechanisms"
SEEDS = hula.SEEDS
NAMES = dict(hula.NAMES, flowlet_ecmp="flowlet ECMP")

WS = [
    "workload.cdf=websearch",
    f"workload.flows={hula.WS_FLOWS}",
    f"run.max_sim_time_ms={hula.WS_MAX_MS}",
]
ASYM60 = ("asym.toml", [*WS, "workload.load=0.6"])
SYM70 = ("base.toml", [*WS, "workload.load=0.7"])
# Data-mining at scale: 3000 flows (15x the sweep's 200), run to completion
# (the cap is a safety net only): 3-4 s of simulated time at 80% load.
DM_FLOWS = 3000
DM = ["workload.cdf=datamining", f"workload.flows={DM_FLOWS}", "run.max_sim_time_ms=30000"]
# 20% and 10% take the most simulated time (10 s and 20 s) but not the most
# wall time (about 30 s per run at 10%, 35-60 s at 90%).
DM_LOADS = [0.1, 0.2, 0.4, 0.6, 0.8, 0.9]
DM_RUN_ORDER = [0.4, 0.6, 0.8, 0.2, 0.9, 0.1]
DM_SEEDS: dict[float, list[int]] = {}  # load -> seeds, to run fewer than SEEDS at a load
# 50 us samples of the pod-1 aggregation uplinks and of the bottleneck.
TS = [
    "metrics.port_rate_interval_us=50",
    'metrics.port_rate_ports=["A1->S","A2->S","S2->A3"]',
    "metrics.queue_sample_interval_us=50",
    'metrics.queue_sample_ports=["S2->A3"]',
]
TS_BIN_US = 50
# Lags (in 50 us bins) for the autocorrelation of S2's inflow: 50 us, 200 us, 500 us, 1 ms, 2 ms.
INFLOW_LAGS = [1, 4, 10, 20, 40]
BUFFER_B = 500_000
LINK_GBPS = 40.0


def jobs_of(name: str) -> list[Job]:
    """(cfg, sets, scheme, seed) of one experiment."""
    out: list[Job] = []
    if name == "datamining":
        for load in DM_RUN_ORDER:
            for cfg in ["base.toml", "asym.toml"]:
                for seed in DM_SEEDS.get(load, SEEDS):
                    out += [(cfg, [*DM, f"workload.load={load}"], s, seed) for s in hula.SCHEMES]
    elif name == "flowlets":
        for cfg, sets in [ASYM60, SYM70]:
            for s in ["ecmp", "flowlet_ecmp", "conga_prime", "hula"]:
                out += [(cfg, sets, s, seed) for seed in SEEDS]
    elif name == "timeout":
        for cfg, sets in [ASYM60, SYM70]:
            for tf in [25, 500, 2000]:
                for s in ["conga_prime", "hula"]:
                    out += [
                        (cfg, [*sets, f"scheme.flowlet_timeout_us={tf}"], s, seed) for seed in SEEDS
                    ]
            # Cross-check: plain flowlet ECMP with a long timeout.
            out += [
                (cfg, [*sets, "scheme.flowlet_timeout_us=500"], "flowlet_ecmp", seed)
                for seed in SEEDS
            ]
    elif name == "longtf":
        # Two more seeds for the T_f = 500 us symmetric point, where CONGA'
        # is behind ECMP in seeds 1-3 (docs/results/hula.md item 7).
        cfg, sets = SYM70
        for seed in LONG_TF_SEEDS:
            out.append((cfg, sets, "ecmp", seed))
            out += [
                (cfg, [*sets, "scheme.flowlet_timeout_us=500"], s, seed)
                for s in ["flowlet_ecmp", "conga_prime", "hula"]
            ]
            # Random source ports: ECMP without the structure that a CRC
            # gives sequential ports (docs/results/hula.md item 12).
            out += [
                (cfg, [*sets, RANDOM_PORTS], "ecmp", seed),
                (cfg, [*sets, "scheme.flowlet_timeout_us=500", RANDOM_PORTS], "flowlet_ecmp", seed),
            ]
    elif name == "probe":
        cfg, sets = ASYM60
        for tp, tau in [(50, 400), (100, 400), (200, 400), (1000, 2000)]:
            extra = [f"scheme.hula.probe_interval_us={tp}", f"scheme.hula.tau_us={tau}"]
            out += [(cfg, sets + extra, "hula", seed) for seed in SEEDS]
    elif name == "probe10x":
        # Why 10x T_p costs HULA 1.20x at 50% load (docs/results/hula.md item 13).
        for cfg, sets in PROBE10X_SETUPS:
            for _label, extra in PROBE10X_ROWS:
                out += [(cfg, sets + TS + extra, "hula", seed) for seed in SEEDS]
    elif name == "ts":
        cfg, sets = ASYM60
        for s in ["ecmp", "conga_prime", "hula"]:
            out += [(cfg, sets + TS, s, seed) for seed in SEEDS]
        for tp, tau in [(50, 400)]:
            extra = [f"scheme.hula.probe_interval_us={tp}", f"scheme.hula.tau_us={tau}"]
            out += [(cfg, sets + TS + extra, "hula", seed) for seed in SEEDS]
    elif name == "window":
        for cfg, sets in [ASYM60, SYM70]:
            for s in hula.SCHEMES:
                out += [(cfg, [*sets, f"transport.rwnd_kb={WINDOW_KB}"], s, seed) for seed in SEEDS]
    elif name == "flowletid":
        # scheme.flowlet_id: the default random id per new flowlet against
        # HULA section 6's increment (docs/schemes/hula.md, "Flowlet ids").
        for cfg, sets in [ASYM60, SYM70]:
            for tf in [100, 500]:
                ss = sets if tf == 100 else [*sets, f"scheme.flowlet_timeout_us={tf}"]
                for ids in [[], [INCREMENT]]:
                    out += [
                        (cfg, ss + ids, s, seed)
                        for s in ["flowlet_ecmp", "conga_prime"]
                        for seed in SEEDS
                    ]
    elif name == "ideal":
        for cfg, sets in [ASYM60, SYM70]:
            for s in ["ecmp", "hula"]:
                out += [
                    (cfg, [*sets, f"topology.fabric_link_gbps={IDEAL_GBPS}"], s, seed)
                    for seed in SEEDS
                ]
    return out


EXPERIMENTS = [
    "datamining",
    "flowlets",
    "timeout",
    "longtf",
    "probe",
    "ts",
    "window",
    "ideal",
    "probe10x",
    "flowletid",
]
# Flowlet ids as HULA section 6 writes them (the default before session 3).
INCREMENT = "scheme.flowlet_id=increment"
FLOWLET_ID_SCHEMES = ("flowlet_ecmp", "conga_prime")
# Fig. 9c below 70%: web-search on the asymmetric topology at 50% (2000 and
# 4000 flows) and 30%. keepalive and tau default to 3 T_p and 2 T_p
# (crates/pisanet/src/config.rs), so the sweep's 10x run has tau 4 ms and
# keepalive 6 ms; the rows below separate the probe interval from tau and
# from aging. tau < 2 T_p is rejected (section 4.2), so T_p 2 ms with a fast
# tau cannot be run.
WS50 = [*WS, "workload.load=0.5"]
PROBE10X_SETUPS = [
    ("asym.toml", WS50),
    (
        "asym.toml",
        [
            "workload.cdf=websearch",
            "workload.flows=4000",
            f"run.max_sim_time_ms={hula.WS_MAX_MS}",
            "workload.load=0.5",
        ],
    ),
    ("asym.toml", [*WS, "workload.load=0.3"]),
    # Fewer decisions per round: T_f 500 us (about 0.5 data flowlets per flow, item 7).
    ("asym.toml", [*WS50, "scheme.flowlet_timeout_us=500"]),
]
PROBE10X_ROWS = [
    ("T_p 200 us (defaults: tau 400 us, keepalive 600 us)", ["scheme.hula.probe_interval_us=200"]),
    ("T_p 200 us, tau 4 ms", ["scheme.hula.probe_interval_us=200", "scheme.hula.tau_us=4000"]),
    ("T_p 500 us (tau 1 ms, keepalive 1.5 ms)", ["scheme.hula.probe_interval_us=500"]),
    ("T_p 1 ms (tau 2 ms, keepalive 3 ms)", ["scheme.hula.probe_interval_us=1000"]),
    ("T_p 2 ms (defaults: tau 4 ms, keepalive 6 ms)", ["scheme.hula.probe_interval_us=2000"]),
    (
        "T_p 2 ms, keepalive 1 s (no aging)",
        ["scheme.hula.probe_interval_us=2000", "scheme.hula.keepalive_us=1000000"],
    ),
]
LONG_TF_SEEDS = [1, 2, 3, 4, 5]
RANDOM_PORTS = "workload.source_ports=random"
# ns-2's default TCP window_ is 20 packets; the paper gives no window. 32 KB
# is about 20 full-sized segments: a sensitivity, not a setting we adopt.
WINDOW_KB = 32
# A fabric 10x faster than the hosts' links: no fabric congestion, so FCTs
# are set by the hosts' links alone (a lower bound for any load balancer).
IDEAL_GBPS = 400


def key(cfg: str, sets: list[str], scheme: str, seed: int) -> str:
    return " ".join([cfg, *sets, f"scheme.kind={scheme}", f"run.seed={seed}"])


def port_class(name: str) -> str:
    a, b = name.split("->")
    t = lambda x: "H" if x.startswith("h") else x[0]
    return f"{t(a)}->{t(b)}"


def corr(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    if len(xs) < 3:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
    sy = math.sqrt(sum((y - my) ** 2 for y in ys))
    return (
        None
        if sx == 0 or sy == 0
        else sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=False)) / (sx * sy)
    )


def series(d: dict[str, Any]) -> dict[str, Any]:
    """Time-series statistics of a `ts` run (50 us bins)."""
    r = d["port_rates"]
    by: dict[str, dict[float, float]] = {}
    for t, p, g in zip(r["time_us"], r["port"], r["tx_gbps"], strict=False):
        by.setdefault(p, {})[t] = g
    ts = sorted(by.get("A1->S1", {}))
    g = lambda p, t: by.get(p, {}).get(t, 0.0)
    into_s2 = [g("A1->S2", t) + g("A2->S2", t) for t in ts]
    # Only bins where both A1 and A2 send upward, for their S2 shares.
    share: dict[str, list[float]] = {a: [] for a in ["A1", "A2"]}
    both: list[tuple[float, float]] = []
    for t in ts:
        u1, u2 = g("A1->S1", t) + g("A1->S2", t), g("A2->S1", t) + g("A2->S2", t)
        if u1 > 1 and u2 > 1:
            both.append((g("A1->S2", t) / u1, g("A2->S2", t) / u2))
    share["A1"] = [x for x, _ in both]
    share["A2"] = [y for _, y in both]
    q = d["queues"]
    qd = {
        t: b
        for t, p, b in zip(q["time_us"], q["port"], q["depth_bytes"], strict=False)
        if p == "S2->A3"
    }
    qs = [qd.get(t, 0) for t in ts]
    full = [i for i, b in enumerate(qs) if b >= 0.9 * BUFFER_B]
    # The S2 inflow in the 200 us before the bottleneck queue fills, against all bins.
    pre = [statistics.fmean(into_s2[max(0, i - 4) : i]) for i in full if i >= 4]
    # Autocorrelation of A1's S2 share at 50-400 us (probe rounds are 200 us).
    s1 = share["A1"]
    acf = {lag: corr(s1[:-lag], s1[lag:]) for lag in [1, 2, 4, 8]} if len(s1) > 10 else {}
    # Autocorrelation of S2's inflow at 50 us-2 ms: how long a probe's reading of it stays true.
    inflow_acf = (
        {lag: corr(into_s2[:-lag], into_s2[lag:]) for lag in INFLOW_LAGS}
        if len(into_s2) > 2 * max(INFLOW_LAGS)
        else {}
    )
    return {
        "bins": len(ts),
        "into_s2_mean": statistics.fmean(into_s2) if ts else None,
        "into_s2_over40": sum(1 for x in into_s2 if x > LINK_GBPS) / len(ts) if ts else None,
        "into_s2_pre_full": statistics.fmean(pre) if pre else None,
        "q_full": len(full) / len(ts) if ts else None,
        "share_sd_a1": statistics.pstdev(s1) if len(s1) > 1 else None,
        "share_corr_a1_a2": corr(share["A1"], share["A2"]),
        "share_acf": acf,
        "inflow_acf": inflow_acf,
        "share_extreme": sum(1 for x, y in both if (x > 0.9 and y > 0.9) or (x < 0.1 and y < 0.1))
        / len(both)
        if both
        else None,
    }


def columns(frame: pd.DataFrame, names: dict[str, str]) -> dict[str, list[Any]]:
    return {n: frame[c].tolist() for n, c in names.items()}


def one(cfg: str, sets: list[str], scheme: str, seed: int, point: P.Point) -> Rec:
    """The numbers the tables use, from a point of a sweep."""
    r = point.row
    rates = point.port_rates()
    d: dict[str, Any] = {
        "ports": point.ports(),
        "queues": columns(
            point.queues(), {"time_us": "time", "port": "port", "depth_bytes": "depth_bytes"}
        ),
        "port_rates": columns(rates, {"time_us": "time", "port": "port", "tx_gbps": "tx_gbps"}),
    }
    ports = [p for p in d["ports"] if p["switch_port"] or p["name"].startswith("h")]
    cls: dict[str, dict[str, int]] = {}
    for p in ports:
        c = cls.setdefault(port_class(p["name"]), {"drops": 0, "tx_bytes": 0})
        c["drops"] += p["drops"]
        c["tx_bytes"] += p["tx_bytes"]
    by = {p["name"]: p for p in ports}
    up = lambda a, sp: by.get(f"{a}->{sp}", {}).get("tx_bytes", 0)
    s2 = up("A1", "S2") + up("A2", "S2")
    tot = s2 + up("A1", "S1") + up("A2", "S1")
    q = d["queues"]["depth_bytes"]
    rec = {
        "key": key(cfg, sets, scheme, seed),
        "cfg": cfg,
        "sets": sets,
        "scheme": scheme,
        "seed": seed,
        "mean": r["fct_us_mean"],
        "p50": r["fct_us_p50"],
        "p99": r["fct_us_p99"],
        "small": r.get("fct_us_lt_100KB_mean"),
        "large": r.get("fct_us_gt_10MB_mean"),
        "completed": int(r["flows_completed"]),
        "total": int(r["flows_total"]),
        "sim_s": r["sim_time_s"],
        "wall": r["wall_time_s"],
        "reordered": r["packets_reordered"],
        "counters": point.counters(),
        "classes": cls,
        "drops_s2a3": by.get("S2->A3", {}).get("drops", 0),
        "drops_a_s1": by.get("A1->S1", {}).get("drops", 0) + by.get("A2->S1", {}).get("drops", 0),
        "s2_share": s2 / tot if tot else None,
        "s2a3_gbps": by.get("S2->A3", {}).get("tx_bytes", 0) * 8 / r["sim_time_s"] / 1e9,
        "q0": sum(1 for x in q if x == 0) / len(q) if q else None,
    }
    if d["port_rates"]["time_us"]:
        rec["ts"] = series(d)
    return rec


def pick(
    cache: Cache, cfg: str, sets: list[str], scheme: str, seeds: list[int] | None = None
) -> list[Rec]:
    seeds = SEEDS if seeds is None else seeds
    return [cache[k] for k in (key(cfg, sets, scheme, s) for s in seeds) if k in cache]


def avg(rs: list[Rec], f: Callable[[Rec], float | None]) -> float | None:
    got = [f(r) for r in rs]
    xs = [x for x in got if x is not None]
    return statistics.fmean(xs) if xs else None


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x / 1000:.2f}"


def rat(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}x"


def num(x: float | None, fmt: str = "{:.0f}") -> str:
    return "-" if x is None else fmt.format(x)


def flowlets_per_flow(r: Rec) -> float | None:
    n = r["counters"].get("new_data_flowlets_tier0")
    return None if n is None else n / r["completed"]


def table_datamining(cache: Cache) -> str:
    out = []
    for cfg, topo in [("base.toml", "symmetric"), ("asym.toml", "asymmetric")]:
        out += [
            f"#### Data-mining, {topo}: average FCT (ms), {DM_FLOWS} flows, run to completion",
            "",
            "| load | seeds | ECMP | CONGA' | HULA | ECMP / HULA | CONGA' / HULA | small: ECMP / HULA | large: ECMP / HULA | p99: ECMP / HULA | ECMP / HULA per seed | sim s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for load in DM_LOADS:
            sets = [*DM, f"workload.load={load}"]
            v = {s: pick(cache, cfg, sets, s) for s in hula.SCHEMES}
            if not all(v.values()):
                continue
            seeds = sorted(set.intersection(*[{r["seed"] for r in v[s]} for s in hula.SCHEMES]))
            v = {s: [r for r in v[s] if r["seed"] in seeds] for s in hula.SCHEMES}
            m = {s: avg(v[s], lambda r: r["mean"]) for s in hula.SCHEMES}
            sm = {s: avg(v[s], lambda r: r["small"]) for s in hula.SCHEMES}
            lg = {s: avg(v[s], lambda r: r["large"]) for s in hula.SCHEMES}
            p = {s: avg(v[s], lambda r: r["p99"]) for s in hula.SCHEMES}
            per = ", ".join(
                f"{a['mean'] / b['mean']:.2f}" for a, b in zip(v["ecmp"], v["hula"], strict=False)
            )
            sim = max(r["sim_s"] for s in hula.SCHEMES for r in v[s])
            out.append(
                f"| {int(load * 100)}% | {','.join(map(str, seeds))} | "
                + " | ".join(ms(m[s]) for s in hula.SCHEMES)
                + f" | {rat(m['ecmp'], m['hula'])} | {rat(m['conga_prime'], m['hula'])} | {rat(sm['ecmp'], sm['hula'])}"
                + f" | {rat(lg['ecmp'], lg['hula'])} | {rat(p['ecmp'], p['hula'])} | {per} | {sim:.1f} |"
            )
        out.append("")
    return "\n".join(out)


def table_flowlets(cache: Cache) -> str:
    schemes = ["ecmp", "flowlet_ecmp", "conga_prime", "hula"]
    out = [
        "#### Flowlets and where the bytes go (web-search, 2000 flows, seeds 1-3)",
        "",
        "| set-up | scheme | avg FCT | / HULA | data flowlets per flow (ToR) | S2's share of A1, A2 up bytes | S2->A3 Gb/s | drops: all switch ports | T->A | A->S | S->A | A->T | T->H | S2->A3 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (cfg, sets), label in [(ASYM60, "asymmetric, 60%"), (SYM70, "symmetric, 70%")]:
        h = avg(pick(cache, cfg, sets, "hula"), lambda r: r["mean"])
        for s in schemes:
            rs = pick(cache, cfg, sets, s)
            if not rs:
                continue
            c = lambda k: avg(rs, lambda r: r["classes"].get(k, {}).get("drops", 0))
            allsw = avg(
                rs,
                lambda r: sum(
                    v["drops"] for k, v in r["classes"].items() if not k.startswith("H->")
                ),
            )
            m = avg(rs, lambda r: r["mean"])
            out.append(
                f"| {label} | {NAMES[s]} | {ms(m)} | {rat(m, h)} | {num(avg(rs, flowlets_per_flow), '{:.2f}')}"
                f" | {num(avg(rs, lambda r: r['s2_share']), '{:.2f}')} | {num(avg(rs, lambda r: r['s2a3_gbps']), '{:.1f}')}"
                f" | {num(allsw)} | {num(c('T->A'))} | {num(c('A->S'))} | {num(c('S->A'))} | {num(c('A->T'))} | {num(c('T->H'))}"
                f" | {num(avg(rs, lambda r: r['drops_s2a3']))} |"
            )
    return "\n".join(out)


def table_timeout(cache: Cache) -> str:
    out = [
        "#### Flowlet timeout T_f (web-search, 2000 flows, seeds 1-3; ECMP does not read it)",
        "",
        "| set-up | T_f (us) | ECMP | flowlet ECMP | CONGA' | HULA | CONGA' / HULA | ECMP / HULA | data flowlets per flow: CONGA' / HULA | S2's share of A1, A2 up bytes: CONGA' / HULA | reordered packets: CONGA' / HULA | S2->A3 drops: CONGA' / HULA |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (cfg, sets), label in [(ASYM60, "asymmetric, 60%"), (SYM70, "symmetric, 70%")]:
        e = avg(pick(cache, cfg, sets, "ecmp"), lambda r: r["mean"])
        for tf in [25, 100, 500, 2000]:
            ss = sets if tf == 100 else [*sets, f"scheme.flowlet_timeout_us={tf}"]
            c, h = pick(cache, cfg, ss, "conga_prime"), pick(cache, cfg, ss, "hula")
            if not c or not h:
                continue
            mc, mh = avg(c, lambda r: r["mean"]), avg(h, lambda r: r["mean"])
            fe = avg(pick(cache, cfg, ss, "flowlet_ecmp"), lambda r: r["mean"])
            out.append(
                f"| {label} | {tf} | {ms(e)} | {ms(fe)} | {ms(mc)} | {ms(mh)} | {rat(mc, mh)} | {rat(e, mh)}"
                f" | {num(avg(c, flowlets_per_flow), '{:.2f}')} / {num(avg(h, flowlets_per_flow), '{:.2f}')}"
                f" | {num(avg(c, lambda r: r['s2_share']), '{:.2f}')} / {num(avg(h, lambda r: r['s2_share']), '{:.2f}')}"
                f" | {num(avg(c, lambda r: r['reordered']))} / {num(avg(h, lambda r: r['reordered']))}"
                f" | {num(avg(c, lambda r: r['drops_s2a3']))} / {num(avg(h, lambda r: r['drops_s2a3']))} |"
            )
    return "\n".join(out)


def table_longtf(cache: Cache) -> str:
    cfg, sets = SYM70
    tf = [*sets, "scheme.flowlet_timeout_us=500"]
    cols = [
        ("ecmp", sets),
        ("flowlet_ecmp", tf),
        ("conga_prime", tf),
        ("hula", tf),
        ("ecmp", [*sets, RANDOM_PORTS]),
        ("flowlet_ecmp", [*tf, RANDOM_PORTS]),
    ]
    out = [
        "#### T_f = 500 us on the symmetric topology, per seed (web-search 70%, 2000 flows; ECMP does not read T_f)",
        "",
        "| seed | ECMP | flowlet ECMP | CONGA' | HULA | ECMP, random ports | flowlet ECMP, random ports"
        " | CONGA' / ECMP | flowlet ECMP / ECMP | the same, random ports |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = []
    for seed in LONG_TF_SEEDS:
        v = [pick(cache, cfg, ss, s, [seed]) for s, ss in cols]
        if not all(v[:4]):
            continue
        m = [x[0]["mean"] if x else None for x in v]
        rows.append(m)
        out.append(
            f"| {seed} | "
            + " | ".join(ms(x) for x in m)
            + f" | {rat(m[2], m[0])} | {rat(m[1], m[0])} | {rat(m[5], m[4])} |"
        )
    for label, rs in [("mean, seeds 1-3", rows[:3]), (f"mean, seeds 1-{len(rows)}", rows)]:
        if len(rs) < 2 or (rs is rows and len(rows) == 3):
            continue
        m = [statistics.fmean(c) if None not in c else None for c in zip(*rs, strict=False)]
        out.append(
            f"| {label} | "
            + " | ".join(ms(x) for x in m)
            + f" | {rat(m[2], m[0])} | {rat(m[1], m[0])} | {rat(m[5], m[4])} |"
        )
    return "\n".join(out)


def probe_us(r: Rec) -> float:
    return next(
        (
            float(x.split("=")[1])
            for x in r["sets"]
            if x.startswith("scheme.hula.probe_interval_us=")
        ),
        200.0,
    )


def changes_per_round(r: Rec, tier: int) -> float | None:
    tp = probe_us(r)
    n = r["counters"].get(f"hula_best_hop_changes_tier{tier}")
    return None if n is None else n / (r["sim_s"] * 1e6 / tp)


def table_probe(cache: Cache) -> str:
    cfg, sets = ASYM60
    out = [
        "#### HULA probe interval T_p (web-search 60%, asymmetric, 2000 flows, seeds 1-3)",
        "",
        "| T_p (us) | tau (us) | avg FCT | small flows | drops: S2->A3 | A1, A2->S1 | all switch ports | P(S2->A3 empty) | best-hop changes per round: ToRs / aggregation / spines | data flowlets per flow |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for tp, tau in [(50, 400), (100, 400), (200, 400), (1000, 2000)]:
        rs = pick(
            cache,
            cfg,
            [*sets, f"scheme.hula.probe_interval_us={tp}", f"scheme.hula.tau_us={tau}"],
            "hula",
        )
        if not rs:
            continue
        allsw = avg(
            rs,
            lambda r: sum(v["drops"] for k, v in r["classes"].items() if not k.startswith("H->")),
        )
        cpr = " / ".join(
            num(avg(rs, lambda r: changes_per_round(r, t)), "{:.2f}") for t in [0, 1, 2]
        )
        out.append(
            f"| {tp} | {tau} | {ms(avg(rs, lambda r: r['mean']))} | {ms(avg(rs, lambda r: r['small']))}"
            f" | {num(avg(rs, lambda r: r['drops_s2a3']))} | {num(avg(rs, lambda r: r['drops_a_s1']))} | {num(allsw)}"
            f" | {num(avg(rs, lambda r: r['q0']), '{:.2f}')} | {cpr} | {num(avg(rs, flowlets_per_flow), '{:.2f}')} |"
        )
    return "\n".join(out)


def table_probe10x(cache: Cache) -> str:
    out = [
        "#### HULA probe interval at 30-50% load (web-search, asymmetric, seeds 1-3; 50 us samples)",
        "",
        '"Flowlets per round" is data flowlets started at the ToRs per probe round (both pod-1 ToRs; each ToR sends all of a round\'s '
        'flowlets to one destination ToR by one best hop). "S2 inflow" is A1->S2 + A2->S2 in 50 us bins (S2->A3 carries 40 Gb/s); '
        "its autocorrelation says how long a probe's reading of the bottleneck stays true.",
        "",
        "| load, flows | set-up | avg FCT | / T_p 200 us | p50 | small flows | large flows | drops: S2->A3 | P(S2->A3 empty) "
        "| flowlets per round (ToRs) | best-hop changes per round: ToRs / aggregation / spines | S2's share of A1, A2 up bytes "
        "| S2 inflow: bins > 40 Gb/s | A1, A2 both > 0.9 or both < 0.1 to S2 | S2 inflow autocorrelation at 50 us / 200 us / 500 us / 1 ms / 2 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cfg, sets in PROBE10X_SETUPS:
        load = next(x.split("=")[1] for x in sets if x.startswith("workload.load="))
        flows = next(x.split("=")[1] for x in sets if x.startswith("workload.flows="))
        flows += "".join(
            f", T_f {x.split('=')[1]} us"
            for x in sets
            if x.startswith("scheme.flowlet_timeout_us=")
        )
        base = None
        for label, extra in PROBE10X_ROWS:
            rs = [r for r in pick(cache, cfg, sets + TS + extra, "hula") if "ts" in r]
            if not rs:
                continue
            m = avg(rs, lambda r: r["mean"])
            base = base or m
            t = lambda f: avg(rs, lambda r: r["ts"][f])
            cpr = " / ".join(
                num(avg(rs, lambda r: changes_per_round(r, k)), "{:.2f}") for k in [0, 1, 2]
            )
            fpr = avg(
                rs,
                lambda r: (
                    r["counters"].get("new_data_flowlets_tier0", 0)
                    / (r["sim_s"] * 1e6 / probe_us(r))
                ),
            )
            acf = " / ".join(
                num(
                    avg(
                        rs,
                        lambda r: r["ts"]["inflow_acf"].get(str(k), r["ts"]["inflow_acf"].get(k)),
                    ),
                    "{:.2f}",
                )
                for k in INFLOW_LAGS
            )
            out.append(
                f"| {float(load) * 100:.0f}%, {flows} | {label} | {ms(m)} | {rat(m, base)} | {ms(avg(rs, lambda r: r.get('p50')))}"
                f" | {ms(avg(rs, lambda r: r['small']))} | {ms(avg(rs, lambda r: r['large']))}"
                f" | {num(avg(rs, lambda r: r['drops_s2a3']))} | {num(avg(rs, lambda r: r['q0']), '{:.2f}')}"
                f" | {num(fpr, '{:.1f}')} | {cpr} | {num(avg(rs, lambda r: r['s2_share']), '{:.2f}')}"
                f" | {num(t('into_s2_over40'), '{:.3f}')} | {num(t('share_extreme'), '{:.2f}')} | {acf} |"
            )
    return "\n".join(out)


def table_ts(cache: Cache) -> str:
    cfg, sets = ASYM60
    out = [
        "#### Herding: 50 us samples (web-search 60%, asymmetric, 2000 flows, seeds 1-3)",
        "",
        "A1's and A2's \"S2 share\" is the fraction of their upward bytes in a 50 us bin sent to S2 (bins where both send upward). "
        '"Both > 0.9 or both < 0.1" counts bins where the two switches send (nearly) everything the same way. '
        '"S2 inflow before a full queue" is the mean of A1->S2 + A2->S2 over the 200 us before each sample with the S2->A3 queue at >= 90% of the buffer.',
        "",
        "| scheme | S2 share: sd (A1) | corr(A1, A2) | both > 0.9 or both < 0.1 | autocorrelation of A1's share at 50 / 100 / 200 / 400 us | S2 inflow (Gb/s): mean | bins > 40 Gb/s | before a full queue | P(S2->A3 >= 90% full) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = [
        ("ECMP", "ecmp", []),
        ("CONGA'", "conga_prime", []),
        ("HULA", "hula", []),
        (
            "HULA, T_p 50 us, tau 400 us",
            "hula",
            ["scheme.hula.probe_interval_us=50", "scheme.hula.tau_us=400"],
        ),
    ]
    for label, s, extra in rows:
        rs = [r for r in pick(cache, cfg, sets + TS + extra, s) if "ts" in r]
        if not rs:
            continue
        t = lambda f: avg(rs, lambda r: r["ts"][f])
        acf = " / ".join(
            num(
                avg(rs, lambda r: r["ts"]["share_acf"].get(str(k), r["ts"]["share_acf"].get(k))),
                "{:.2f}",
            )
            for k in [1, 2, 4, 8]
        )
        out.append(
            f"| {label} | {num(t('share_sd_a1'), '{:.2f}')} | {num(t('share_corr_a1_a2'), '{:.2f}')} | {num(t('share_extreme'), '{:.2f}')}"
            f" | {acf} | {num(t('into_s2_mean'), '{:.1f}')} | {num(t('into_s2_over40'), '{:.3f}')} | {num(t('into_s2_pre_full'), '{:.1f}')}"
            f" | {num(t('q_full'), '{:.3f}')} |"
        )
    return "\n".join(out)


def table_window(cache: Cache) -> str:
    out = [
        f"#### Receive window {WINDOW_KB} KB (about ns-2's default of 20 packets; web-search, 2000 flows, seeds 1-3)",
        "",
        "| set-up | window | ECMP | CONGA' | HULA | ECMP / HULA | CONGA' / HULA | drops at all switch ports E / C / H | S2->A3 drops E / C / H | P(S2->A3 empty) E / C / H |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (cfg, sets), label in [(ASYM60, "asymmetric, 60%"), (SYM70, "symmetric, 70%")]:
        for w, ss in [
            ("default (4 MB)", sets),
            (f"{WINDOW_KB} KB", [*sets, f"transport.rwnd_kb={WINDOW_KB}"]),
        ]:
            v = {s: pick(cache, cfg, ss, s) for s in hula.SCHEMES}
            if not all(v.values()):
                continue
            m = {s: avg(v[s], lambda r: r["mean"]) for s in hula.SCHEMES}
            allsw = " / ".join(
                num(
                    avg(
                        v[s],
                        lambda r: sum(
                            x["drops"] for k, x in r["classes"].items() if not k.startswith("H->")
                        ),
                    )
                )
                for s in hula.SCHEMES
            )
            bn = " / ".join(num(avg(v[s], lambda r: r["drops_s2a3"])) for s in hula.SCHEMES)
            q0 = " / ".join(num(avg(v[s], lambda r: r["q0"]), "{:.2f}") for s in hula.SCHEMES)
            out.append(
                f"| {label} | {w} | "
                + " | ".join(ms(m[s]) for s in hula.SCHEMES)
                + f" | {rat(m['ecmp'], m['hula'])} | {rat(m['conga_prime'], m['hula'])} | {allsw} | {bn} | {q0} |"
            )
    return "\n".join(out)


def table_flowletid(cache: Cache) -> str:
    out = [
        "#### Flowlet ids: a random id per new flowlet (default) or HULA section 6's increment (web-search, 2000 flows, seeds 1-3)",
        "",
        "| set-up | T_f (us) | flowlet ECMP: increment | random | CONGA': increment | random | HULA | CONGA' / HULA: increment | random | S2's share of A1, A2 up bytes, CONGA': increment / random | S2->A3 drops, CONGA': increment / random |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (cfg, sets), label in [(ASYM60, "asymmetric, 60%"), (SYM70, "symmetric, 70%")]:
        for tf in [100, 500]:
            ss = sets if tf == 100 else [*sets, f"scheme.flowlet_timeout_us={tf}"]
            v = {
                (s, i): pick(cache, cfg, ss + ([INCREMENT] if i else []), s)
                for s in FLOWLET_ID_SCHEMES
                for i in (True, False)
            }
            h = pick(cache, cfg, ss, "hula")
            if not all(v.values()) or not h:
                continue
            m = {k: avg(x, lambda r: r["mean"]) for k, x in v.items()}
            mh = avg(h, lambda r: r["mean"])
            c = lambda i, field, fmt: num(avg(v[("conga_prime", i)], lambda r: r[field]), fmt)
            out.append(
                f"| {label} | {tf} | {ms(m[('flowlet_ecmp', True)])} | {ms(m[('flowlet_ecmp', False)])}"
                f" | {ms(m[('conga_prime', True)])} | {ms(m[('conga_prime', False)])} | {ms(mh)}"
                f" | {rat(m[('conga_prime', True)], mh)} | {rat(m[('conga_prime', False)], mh)}"
                f" | {c(True, 's2_share', '{:.2f}')} / {c(False, 's2_share', '{:.2f}')}"
                f" | {c(True, 'drops_s2a3', '{:.0f}')} / {c(False, 'drops_s2a3', '{:.0f}')} |"
            )
    return "\n".join(out)


def table_ideal(cache: Cache) -> str:
    out = [
        f"#### A fabric without congestion ({IDEAL_GBPS:.0f}G fabric links, 10G hosts; web-search, 2000 flows, seeds 1-3)",
        "",
        "| set-up | ECMP, 40G fabric | HULA, 40G fabric | ECMP, 400G fabric | HULA, 400G fabric | ECMP / HULA (40G) | largest possible ECMP / HULA: ECMP (40G) / best (400G) | HULA (40G) / best (400G) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (cfg, sets), label in [(ASYM60, "asymmetric, 60%"), (SYM70, "symmetric, 70%")]:
        ss = [*sets, f"topology.fabric_link_gbps={IDEAL_GBPS}"]
        e, h = pick(cache, cfg, sets, "ecmp"), pick(cache, cfg, sets, "hula")
        ei, hi = pick(cache, cfg, ss, "ecmp"), pick(cache, cfg, ss, "hula")
        if not (e and h and ei and hi):
            continue
        me, mh, mei, mhi = (avg(x, lambda r: r["mean"]) for x in (e, h, ei, hi))
        # No mean (no flow finished at 400G): no best.
        best = None if mei is None or mhi is None else min(mei, mhi)
        out.append(
            f"| {label} | {ms(me)} | {ms(mh)} | {ms(mei)} | {ms(mhi)} | {rat(me, mh)} | {rat(me, best)} | {rat(mh, best)} |"
        )
    return "\n".join(out)


def tables(cache: Cache) -> str:
    parts = [
        table_datamining(cache),
        table_flowlets(cache),
        table_timeout(cache),
        table_longtf(cache),
        table_probe(cache),
        table_ts(cache),
        table_window(cache),
        table_ideal(cache),
        table_probe10x(cache),
        table_flowletid(cache),
    ]
    return "\n\n".join(p for p in parts if p.count("\n|") > 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="experiments: " + ", ".join(EXPERIMENTS))
    ap.add_argument(
        "--tables", action="store_true", help="run nothing: the tables from the finished points"
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="seed 1 only, data-mining at 80%% only; tables into OUT/quick/, not docs/",
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="flowlets on both topologies, seed 1, 40 flows; prints, writes nothing",
    )
    P.add_arguments(ap, OUT)
    a = ap.parse_args()
    if a.smoke:
        P.smoke_threads()
    names = a.only or EXPERIMENTS
    out = a.out / P.mode_name(a)
    global ASYM60, SYM70, SEEDS
    if a.quick or a.smoke:
        SEEDS = [1]
        LONG_TF_SEEDS[:] = [1]
        DM_LOADS[:] = DM_RUN_ORDER[:] = [0.8]
    if a.smoke:
        names = ["flowlets"]
        ASYM60 = (ASYM60[0], [*ASYM60[1], "workload.flows=40"])
        SYM70 = (SYM70[0], [*SYM70[1], "workload.flows=40"])
    cache: Cache = {}
    missing: set[str] = set()
    # Every experiment's finished points are read, so that the section keeps
    # the tables of those not run this time.
    for name in names if a.smoke else EXPERIMENTS:
        jobs = jobs_of(name)
        todo = name in names and not a.tables
        got = P.run_points(
            [
                (hula.HERE / cfg, [*sets, f"scheme.kind={s}", f"run.seed={seed}"])
                for cfg, sets, s, seed in jobs
            ],
            out,
            a.workers,
            run=todo,
        )
        for cfg, sets, scheme, seed in jobs:
            point = got.get(
                P.point_key(hula.HERE / cfg, [*sets, f"scheme.kind={scheme}", f"run.seed={seed}"])
            )
            if point is None:
                missing.add(key(cfg, sets, scheme, seed))
            else:
                cache[key(cfg, sets, scheme, seed)] = one(cfg, sets, scheme, seed, point)
    body = tables(cache)
    P.publish(
        a, out, "mechanisms", body, lambda b: hula.write_section("mechanisms", b), len(missing)
    )


if __name__ == "__main__":
    main()
