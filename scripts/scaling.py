"""The scaling table of docs/performance.md ("Scaling"), through the public API.

Three tables, each point a fresh process (peak RSS is the process's VmHWM, so
points must not share one) calling `pisanet.run`:

1. hosts: fat_tree k = 4, 8, 16 (16, 128, 1024 hosts), DCTCP, ECMP, the
   soak's short flows (experiments/soak/short_flows.cdf) at load 0.5, a fixed
   flow count: events/s, packet-hops/s, peak RSS;
2. flows: fat_tree k = 8, 2 000 to 200 000 flows of the same workload: the
   same figures, and peak RSS per finished flow;
3. set-up: fat_tree k = 16, 32, 64 and a 1000-leaf leaf-spine, 10 flows:
   the run's wall time (set-up dominates it) and peak RSS.

Each point writes its result directory to a temp directory (`pisanet.run`
with `out`, as `pisanet run` does): the flow table is streamed to Parquet.

Usage: python scripts/scaling.py [--quick] [--setup-only] [--json OUT.json]
`--quick` takes fewer, smaller points (about a minute on a 2-core machine);
the full run took 6 minutes of wall time on a busy 2-core machine (about 2
of CPU). "run wall" is the summary's `wall_time_s` (set-up and run, inside
the Rust core); "process wall" the whole child process (interpreter,
imports, writing the result directory). Prints Markdown tables to stdout.
Figures are of this machine at this moment: compare them only with figures
from the same run (docs/performance.md says which machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CDF = ROOT / "experiments" / "soak" / "short_flows.cdf"

# One point: the config text, run in a child through pisanet.run; prints
# the summary's figures and the child's own peak RSS, as JSON.
# The run writes a result directory (as `pisanet run` does), so its flow
# table is streamed to flows.parquet, not kept in memory.
CHILD = r"""
import json, resource, sys, tempfile, time
t0 = time.perf_counter()
import pisanet
imported = time.perf_counter()
rss_import_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
text, sets = sys.argv[1], json.loads(sys.argv[2])
with tempfile.TemporaryDirectory() as out:
    r = pisanet.run(text, out=out + "/res", set=sets)
s = r.summary
print(json.dumps({
    "import_s": imported - t0,
    "rss_import_mb": rss_import_mb,
    "wall_s": s["wall_time_s"],
    "events": s["events"],
    "events_per_s": s["events_per_s"],
    "packet_hops_per_s": s["packet_hops_per_s"],
    "flows": s["flows"],
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "digest": s["digest"],
}))
"""


def config(topology: str, flows: int, cdf: str) -> str:
    return f"""
[run]
seed = 1
max_sim_time_ms = 100000
[topology]
{topology}
host_link_gbps = 10.0
fabric_link_gbps = 10.0
[transport]
kind = "dctcp"
min_rto_us = 1000
[workload]
cdf = "{cdf}"
load = 0.5
flows = {flows}
pattern = "uniform"
[scheme]
kind = "ecmp"
"""


def point(topology: str, flows: int, cdf: str = str(CDF)) -> dict[str, float]:
    text = config(topology, flows, cdf)
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, text, "[]"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    if out.returncode != 0:
        raise SystemExit(f"scaling: {topology!r}, {flows} flows: {out.stderr.strip()}")
    res: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    res["process_s"] = time.perf_counter() - t0
    return res


def fat_tree(k: int) -> str:
    return f'kind = "fat_tree"\nk = {k}'


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer, smaller points")
    ap.add_argument("--json", type=Path, help="also write every point's figures here")
    ap.add_argument("--setup-only", action="store_true", help="only the set-up table")
    args = ap.parse_args()
    if args.quick:
        hosts_k, hosts_flows = [4, 8, 16], 2000
        flow_counts = [2000, 10000, 50000]
        setup = [("fat_tree k=16", fat_tree(16)), ("fat_tree k=32", fat_tree(32))]
    else:
        hosts_k, hosts_flows = [4, 8, 16], 20000
        flow_counts = [2000, 20000, 200000]
        setup = [
            ("fat_tree k=16", fat_tree(16)),
            ("fat_tree k=32", fat_tree(32)),
            ("fat_tree k=64", fat_tree(64)),
            ("leaf_spine 1000 leaves", 'kind = "leaf_spine"\nleaves = 1000'),
        ]
    record: dict[str, list[dict[str, object]]] = {"hosts": [], "flows": [], "setup": []}

    if not args.setup_only:
        print(f"### Throughput and memory against hosts ({hosts_flows} flows)\n")
        print("| topology | hosts | events | events/s | packet-hops/s | peak RSS (MB) |")
        print("|---|---:|---:|---:|---:|---:|")
        for k in hosts_k:
            r = point(fat_tree(k), hosts_flows)
            record["hosts"].append({"k": k, **r})
            print(
                f"| fat_tree k={k} | {k**3 // 4} | {r['events']:,.0f} "
                f"| {r['events_per_s'] / 1e6:.2f} M | {r['packet_hops_per_s'] / 1e6:.2f} M "
                f"| {r['peak_rss_mb']:.0f} |"
            )

        print("\n### Throughput and memory against flows (fat_tree k=8)\n")
        print(
            "| flows | events | events/s | packet-hops/s | peak RSS (MB) "
            "| bytes per flow over the first |"
        )
        print("|---:|---:|---:|---:|---:|---:|")
        first: dict[str, float] | None = None
        for n in flow_counts:
            r = point(fat_tree(8), n)
            record["flows"].append({"flows": n, **r})
            per = ""
            if first is not None:
                grown = (r["peak_rss_mb"] - first["peak_rss_mb"]) * 2**20
                per = f"{grown / (n - flow_counts[0]):.0f}"
            first = first or r
            print(
                f"| {n:,} | {r['events']:,.0f} | {r['events_per_s'] / 1e6:.2f} M "
                f"| {r['packet_hops_per_s'] / 1e6:.2f} M | {r['peak_rss_mb']:.0f} | {per} |"
            )

    print("\n### Set-up (10 flows)\n")
    print("| topology | run wall (s) | process wall (s) | peak RSS (MB) |")
    print("|---|---:|---:|---:|")
    for name, topo in setup:
        r = point(topo, 10)
        record["setup"].append({"topology": name, **r})
        print(f"| {name} | {r['wall_s']:.2f} | {r['process_s']:.1f} | {r['peak_rss_mb']:.0f} |")

    imp = record["setup"][0]
    print(
        f"\nPython front end: `import pisanet` takes {imp['import_s']:.2f} s and "
        f"{imp['rss_import_mb']:.0f} MB of RSS before any run."
    )
    if args.json:
        args.json.write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
