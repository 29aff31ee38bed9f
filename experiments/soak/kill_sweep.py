"""The soak's sweep (docs/soak.md): a sweep of N points killed with SIGKILL at random
moments K times, resumed each time, then checked: exactly N rows, each point once,
all ok, results.duckdb opens, every point's Parquet files read.

    .venv/bin/python experiments/soak/kill_sweep.py [--points 200] [--kills 5] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--points", type=int, default=200)
    ap.add_argument("--kills", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("results/soak-sweep"))
    args = ap.parse_args()
    if args.points % 10:
        ap.error("--points must be a multiple of 10 (10 loads x points/10 seeds)")
    loads = ",".join(f"{0.05 + 0.09 * i:.2f}" for i in range(10))
    command = [
        sys.executable, "-m", "pisanet", "sweep", str(HERE / "sweep_point.toml"),
        "--vary", f"workload.load={loads}", "--seeds", str(args.points // 10),
        "--out", str(args.out), "--workers", str(args.workers), "-q",
    ]  # fmt: skip
    shutil.rmtree(args.out, ignore_errors=True)
    rng = random.Random(args.seed)
    start = time.monotonic()
    for kill in range(1, args.kills + 1):
        proc = subprocess.Popen(command, start_new_session=True, stdin=subprocess.DEVNULL)
        wait = rng.uniform(2.0, 15.0)
        time.sleep(wait)
        if proc.poll() is not None:
            print(f"kill {kill}: the sweep had ended before {wait:.1f} s", flush=True)
            break
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        done = len(list(args.out.glob("points/*/summary.json")))
        print(f"kill {kill}: SIGKILL after {wait:.1f} s, {done} points finished", flush=True)
    final = subprocess.run(command, stdin=subprocess.DEVNULL, check=False)
    elapsed = time.monotonic() - start
    con = duckdb.connect(str(args.out / "results.duckdb"), read_only=True)
    runs = con.execute("SELECT point_id, status FROM runs").df()
    flows = con.execute("SELECT count(DISTINCT point_id) FROM flows").fetchone()
    con.close()
    manifest = json.loads((args.out / "sweep.json").read_text())
    for point in (args.out / "points").iterdir():
        pq.read_table(point / "flows.parquet")
    leftovers = [p for p in args.out.rglob("*") if p.name.endswith((".tmp", ".wal"))]
    ok = (
        final.returncode == 0
        and len(runs) == args.points
        and runs["point_id"].is_unique
        and set(runs["point_id"]) == set(manifest["points"])
        and (runs["status"] == "ok").all()
        and flows is not None
        and flows[0] == args.points
        and not leftovers
    )
    print(
        f"soak sweep: {len(runs)} rows for {args.points} points, unique: "
        f"{runs['point_id'].is_unique}, all ok: {(runs['status'] == 'ok').all()}, "
        f"points in the flows view: {flows[0] if flows else None}, temp files left: "
        f"{len(leftovers)}, {elapsed:.0f} s in all: {'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
