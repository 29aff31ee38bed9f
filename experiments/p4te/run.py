#!/usr/bin/env python3
"""Runs the P4TE evaluation set (experiments/p4te/README.md) and writes the
tables into docs/results/p4te.md (everything above its "## Discussion").

Usage: python3 experiments/p4te/run.py [--seeds 1,2,3] [--quick] [--cache DIR]
Needs `cargo build --release -p pisanet --example run` first. Runs one
simulation at a time; each run's summary is cached in --cache (default
target/p4te-runs), keyed by its arguments, so the tables can be rewritten
without re-running.
"""

import argparse
import hashlib
import json
import os
import statistics
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RUN = ROOT / "target" / "release" / "examples" / "run"
OUT = ROOT / "docs" / "results" / "p4te.md"

# A switch CPU that keeps up with alg. 1's events (docs/schemes/p4te.md).
FAST_CPU = ["control_plane.write_latency_us=1", "control_plane.write_interval_us=0.1"]
NRA = ["scheme.p4te.rate_adaptation=false"]
VARIANTS = {
    "ECMP": ["scheme.kind=ecmp"],
    # The paper's ECMP selects paths per flowlet (section 7.1.2).
    "flowlet ECMP": ["scheme.kind=flowlet_ecmp"],
    "HULA": ["scheme.kind=hula"],
    "P4TE-RA": ["scheme.kind=p4te"],
    "P4TE-NRA": ["scheme.kind=p4te", *NRA],
    "P4TE-RA fast": ["scheme.kind=p4te", *FAST_CPU],
    "P4TE-NRA fast": ["scheme.kind=p4te", *NRA, *FAST_CPU],
}
# Flows per point, chosen so that the whole set runs in about 40 minutes on
# one shared core: web-search runs take ~1 s per 150 flows, data-mining ones
# (flows up to 1 GB) ~1 s per 50 flows.
FLOWS = {
    ("leaf_spine_10g.toml", "websearch"): 600,
    ("leaf_spine_40g.toml", "websearch"): 600,
    ("leaf_spine_10g.toml", "datamining"): 100,
    ("leaf_spine_40g.toml", "datamining"): 100,
}
CONFIGS = [("leaf_spine_10g.toml", "host 10G / fabric 5G"), ("leaf_spine_40g.toml", "host 40G / fabric 20G")]

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


def cache_key(config, sets):
    return hashlib.sha1(json.dumps([config, sets]).encode()).hexdigest()[:16]


def run(cache, config, sets):
    f = cache / f"{cache_key(config, sets)}.json"
    if f.exists():
        return json.loads(f.read_text())
    env = dict(os.environ, PISANET_PORTS="1")
    p = subprocess.run([str(RUN), str(HERE / config), *sets], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{config} {sets}: {p.stderr.strip()}")
    out = stats(json.loads(p.stdout))
    f.write_text(json.dumps(out))
    return out


def stats(out):
    s = out["summary"]
    sw = s.get("switches") or {}
    counters = sw.get("counters") or {}
    done = s["flows"]["completed"] or 1
    ups = {}
    for port in out["ports"]:
        if port["uplink"] and port["name"].startswith("leaf"):
            ups.setdefault(port["name"].split("->")[0], []).append(port["tx_packets"])
    wait = sw.get("write_wait_us") or {}
    return {
        "short": s["fct_us"]["short"]["mean"],
        "large": s["fct_us"]["large"]["mean"],
        "retx": s["retransmissions"] / done,
        "completed": s["flows"]["completed"],
        "total": s["flows"]["total"],
        "delivered": s["packets"]["delivered"],
        "hops": s["packet_hops"],
        "feedback": counters.get("feedback", {}).get("packets", 0),
        "facks": counters.get("facks", {}).get("packets", 0),
        "writes": sw.get("writes_applied", 0),
        "issued": sw.get("writes_issued", 0),
        "wait_mean": wait.get("mean", 0.0),
        "wait_max": wait.get("max", 0.0),
        "sim_s": s["sim_time_s"],
        "sd": {k: statistics.pstdev(v) for k, v in sorted(ups.items())},
        "cv": {k: statistics.pstdev(v) / max(statistics.mean(v), 1) for k, v in sorted(ups.items())},
        "wall": s["wall_time_s"],
    }


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def fmt(x, d=0):
    return "-" if x is None else f"{x:,.{d}f}"


def pct(a, b):
    return "-" if a is None or b is None or b == 0 else f"{100 * (a / b - 1):+.0f}%"


# Which seeds, loads and variants each section runs (the full grid at 3
# seeds does not fit the time budget of one shared core: the web-search
# grids (10G: all variants; 40G: the core five), the incast and the fat tree
# run with 3 seeds, the data-mining grids reduced).
ALL = list(VARIANTS)
CORE = ["flowlet ECMP", "HULA", "P4TE-RA", "P4TE-RA fast", "P4TE-NRA fast"]
PLAN = {
    ("leaf_spine_10g.toml", "websearch"): ([1, 2, 3], [0.2, 0.4, 0.6, 0.8], ALL),
    ("leaf_spine_40g.toml", "websearch"): ([1, 2, 3], [0.2, 0.4, 0.6, 0.8], CORE),
    ("leaf_spine_10g.toml", "datamining"): ([1], [0.4, 0.8], CORE),
    ("leaf_spine_40g.toml", "datamining"): ([1], [0.4, 0.8], CORE),
}


def jobs(seeds):
    def grid(cfg, cdf):
        ss, loads, vs = PLAN[(cfg, cdf)]
        for load in loads:
            for seed in ss:
                for v in vs:
                    sets = VARIANTS[v] + [f"workload.cdf={cdf}", f"workload.load={load}",
                                          f"workload.flows={FLOWS[(cfg, cdf)]}", f"run.seed={seed}"]
                    yield ("grid", cfg, cdf, load, seed, v), cfg, sets
    first, *rest = PLAN
    yield from grid(*first)
    for seed in seeds:
        for v in VARIANTS:
            yield ("incast", seed, v), "incast_10g.toml", VARIANTS[v] + [f"run.seed={seed}"]
    for v in VARIANTS:
        yield ("fat", v), "fat_tree_k8.toml", VARIANTS[v]
    for k in rest:
        yield from grid(*k)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--quick", action="store_true", help="one seed, loads 0.4 and 0.8")
    ap.add_argument("--cache", default=str(ROOT / "target" / "p4te-runs"))
    a = ap.parse_args()
    seeds = [1] if a.quick else [int(s) for s in a.seeds.split(",")]
    if a.quick:
        for k, (_, _, vs) in PLAN.items():
            PLAN[k] = ([1], [0.4, 0.8], vs)
    cache = Path(a.cache)
    cache.mkdir(parents=True, exist_ok=True)
    res = {}
    for key, cfg, sets in jobs(seeds):
        res[key] = run(cache, cfg, sets)
    write(res, seeds)
    try:
        import plot
    except ImportError as e:
        print(f"plots not redrawn ({e}); run .venv/bin/python experiments/p4te/plot.py")
    else:
        for f in plot.plot(res, PLAN):
            print(f"wrote {f}")


def write(res, seeds):
    L = []
    w = L.append
    V = list(VARIANTS)

    def g(cfg, cdf, load, v, k):
        ss = PLAN[(cfg, cdf)][0]
        return mean([res[("grid", cfg, cdf, load, s, v)][k] for s in ss if ("grid", cfg, cdf, load, s, v) in res])
    w("# P4TE: results\n")
    w("Generated by `python3 experiments/p4te/run.py` (configs and the figure each reproduces: "
      "experiments/p4te/README.md; the scheme: docs/schemes/p4te.md). "
      "Each point is the mean over the seeds in its section's title (\"-\": not run); flows per point "
      "are there too  (the paper: 500 s per load on 40/20 packets/s links, 5 repetitions). FCT in us (mean over the class's flows: short <= p90 of the "
      "size CDF); retransmissions are segments resent per completed flow. Hosts run DCTCP with TCP "
      "Small Queues (`transport.tsq_kb` = 131.072, default) and congestion-window validation "
      "(docs/model.md, Hosts), with the ordinary receive window. \"ECMP\" hashes each flow; "
      "\"flowlet ECMP\" re-hashes per flowlet (the paper's ECMP, section 7.1.2). \"P4TE-RA\"/\"P4TE-NRA\": "
      "with/without rate adaptation (section 7.1.1), default switch CPU (10 us to the CPU, 50 us per "
      "write, writes 5 us apart); \"fast\": writes in 1 us, 0.1 us apart.\n")
    for cdf in ["websearch", "datamining"]:
        for cfg, title in CONFIGS:
            fig = "9" if cdf == "websearch" else "10"
            ss, loads, V = PLAN[(cfg, cdf)]
            w(f"\n## Fig. {fig}: {cdf}, leaf-spine {title}, stride, {FLOWS[(cfg, cdf)]} flows, seeds {ss}\n")
            w("| load | metric | " + " | ".join(V) + " |")
            w("|---|---|" + "---|" * len(V))
            for load in loads:
                for metric, key, d in [("short FCT", "short", 0), ("large FCT", "large", 0), ("retx/flow", "retx", 2)]:
                    w(f"| {int(load * 100)}% | {metric} | " + " | ".join(fmt(g(cfg, cdf, load, v, key), d) for v in V) + " |")
            if cdf == "websearch":
                png = "websearch_10g.png" if "10g" in cfg else "websearch_40g.png"
                w(f"\n![mean FCT against load, {title}](p4te/{png})\n\n"
                  f"Plot: [p4te/{png}](p4te/{png}) (mean over the seeds, bars min-max; solid P4TE lines: fast CPU, "
                  f"dashed: default CPU).")
            w(f"\n**vs the paper** (x% = the scheme needs x% more time than P4TE-RA; ours per load 20/40/60/80%):\n")
            w("| comparison | flows | paper | ours, default CPU | ours, fast CPU |")
            w("|---|---|---|---|---|")
            for other, ours_other in [("ECMP", "flowlet ECMP"), ("HULA", "HULA")]:
                for cls in ["short", "large"]:
                    d = " / ".join(pct(g(cfg, cdf, l, ours_other, cls), g(cfg, cdf, l, "P4TE-RA", cls)) for l in loads)
                    f = " / ".join(pct(g(cfg, cdf, l, ours_other, cls), g(cfg, cdf, l, "P4TE-RA fast", cls)) for l in loads)
                    w(f"| {ours_other} vs P4TE | {cls} | {PAPER[(cdf, other, cls)]} | {d} | {f} |")
            for cls in ["short", "large"]:
                d = " / ".join(pct(g(cfg, cdf, l, "P4TE-NRA", cls), g(cfg, cdf, l, "P4TE-RA", cls)) for l in loads)
                f = " / ".join(pct(g(cfg, cdf, l, "P4TE-NRA fast", cls), g(cfg, cdf, l, "P4TE-RA fast", cls)) for l in loads)
                w(f"| Fig. 8: NRA vs RA | {cls} | +5 to +12% at high load | {d} | {f} |")
            d = " / ".join(pct(g(cfg, cdf, l, "P4TE-RA", "retx"), g(cfg, cdf, l, "flowlet ECMP", "retx")) for l in loads)
            f = " / ".join(pct(g(cfg, cdf, l, "P4TE-RA fast", "retx"), g(cfg, cdf, l, "flowlet ECMP", "retx")) for l in loads)
            w(f"| retransmissions, P4TE vs flowlet ECMP | all | {'+6 to +26%' if cdf == 'websearch' else 'more'} | {d} | {f} |")
            fk = " / ".join(fmt(g(cfg, cdf, l, "P4TE-RA fast", "facks") * 1000 / max(g(cfg, cdf, l, "P4TE-RA fast", "delivered"), 1), 1) for l in loads)
            w(f"\nFACKs per 1000 delivered packets (P4TE-RA fast): {fk}.")
    w("\n## Fig. 11: load over each leaf's uplinks (web-search, 80%, 10G/5G)\n")
    w("Standard deviation of the packets each leaf sends on its 4 uplinks over a whole run, and the same "
      "divided by the mean (coefficient of variation, comparable across run lengths), mean over the seeds. "
      "Paper: SD 196-661 packets (ECMP), 28-221 (P4TE), HULA lowest.\n")
    V = list(VARIANTS)
    cfg = "leaf_spine_10g.toml"
    seeds, loads, _ = PLAN[(cfg, "websearch")]
    load = loads[-1]
    leaves = sorted(res[("grid", cfg, "websearch", load, seeds[0], "ECMP")]["sd"])
    w("| leaf | " + " | ".join(f"{v} SD" for v in V) + " |")
    w("|---|" + "---|" * len(V))
    for leaf in leaves:
        w(f"| {leaf} | " + " | ".join(fmt(mean([res[("grid", cfg, "websearch", load, s, v)]["sd"].get(leaf) for s in seeds])) for v in V) + " |")
    w("| CV, mean of leaves | " + " | ".join(
        f"{100 * mean([mean(list(res[('grid', cfg, 'websearch', load, s, v)]['cv'].values())) for s in seeds]):.1f}%" for v in V) + " |")
    w("\n## Fig. 12: incast, 24 x 512 KB and 8 x 1 MB from 12 hosts on other leaves to one host (10G/5G)\n")
    w("Mean over the seeds. Paper: P4TE slightly faster for short flows, more for large ones, more retransmissions.\n")
    w("| scheme | short FCT | large FCT | retx/flow | completed | FACKs |")
    w("|---|---|---|---|---|---|")
    for v in V:
        rs = [res[("incast", s, v)] for s in seeds]
        w(f"| {v} | {fmt(mean([r['short'] for r in rs]))} | {fmt(mean([r['large'] for r in rs]))} | "
          f"{fmt(mean([r['retx'] for r in rs]), 2)} | {sum(r['completed'] for r in rs)}/{sum(r['total'] for r in rs)} | "
          f"{fmt(mean([r['facks'] for r in rs]))} |")
    w("\n## At scale: fat_tree k=8, hosts 40G, fabric 100G, web-search 60%, uniform, 1500 flows, seed 1\n")
    w("| scheme | short FCT | large FCT | retx/flow | completed | CPU writes issued | mean write wait us | wall s |")
    w("|---|---|---|---|---|---|---|---|")
    for v in V:
        r = res[("fat", v)]
        w(f"| {v} | {fmt(r['short'])} | {fmt(r['large'])} | {fmt(r['retx'], 2)} | {r['completed']}/{r['total']} | "
          f"{r['issued']:,} | {fmt(r['wait_mean'], 1)} | {fmt(r['wall'], 1)} |")
    w("\n## P4TE's overhead: feedback and the switch CPU (web-search, P4TE-RA)\n")
    w("Feedback packets are alg. 1's clones to the CPU (queue-depth and colour events); \"per egress pass\" "
      "divides by packet hops (each delivered packet passes 2-3 switches). Writes: alg. 3's writes issued "
      "after start-up (all switches); wait: how long a write queued behind earlier ones beyond its latency, "
      "mean and worst; applied: writes that took effect before the run ended. Mean over the seeds.\n")
    w("| fabric | load | feedback / delivered pkt | feedback / egress pass | FACKs / delivered pkt | writes issued | default CPU: applied | default CPU: wait mean / max ms | fast CPU: wait mean / max us | traffic ms |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for cfg, title in CONFIGS:
        ss, loads, _ = PLAN[(cfg, "websearch")]
        for load in loads:
            rs = [res[("grid", cfg, "websearch", load, s, "P4TE-RA")] for s in ss]
            fs = [res[("grid", cfg, "websearch", load, s, "P4TE-RA fast")] for s in ss]
            w(f"| {title} | {int(load * 100)}% | {mean([r['feedback'] / max(r['delivered'], 1) for r in rs]):.3f} | "
              f"{mean([r['feedback'] / max(r['hops'], 1) for r in rs]):.3f} | {mean([r['facks'] / max(r['delivered'], 1) for r in rs]):.4f} | "
              f"{fmt(mean([r['issued'] for r in rs]))} | {fmt(mean([r['writes'] for r in rs]))} | "
              f"{fmt(mean([r['wait_mean'] for r in rs]) / 1000, 1)} / {fmt(max(r['wait_max'] for r in rs) / 1000, 1)} | "
              f"{fmt(mean([r['wait_mean'] for r in fs]), 2)} / {fmt(max(r['wait_max'] for r in fs), 1)} | "
              f"{fmt(mean([r['sim_s'] for r in rs]) * 1000, 0)} |")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tail = ""
    if OUT.exists():
        text = OUT.read_text()
        marker = "\n## Discussion"
        if marker in text:
            tail = text[text.index(marker):]
    OUT.write_text("\n".join(L) + "\n" + tail)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
