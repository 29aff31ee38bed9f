"""Flow-by-flow comparison of pisanet and ns-3 on the cross-check's cached runs (issue 19).

    nice -n 10 .venv/bin/python experiments/crosscheck/perflow.py \\
        --scenario "newreno websearch 0.3" [--seed 1] [--full] [--top 6] [--set KEY=VALUE ...]
    nice -n 10 .venv/bin/python experiments/crosscheck/perflow.py --cc dctcp --error [--set ...] \\
        [--full [--no-give-up]]

The first form prints, per size class, both means and the `--top` flows that
carry most of the difference of the class sums (their FCT in each simulator);
`--full` takes the full-size flow list (crosscheck without `--quick`).
The second prints, per scenario and seed (1-3 for the dumbbell, the
incast's one list), the mean of |ln(pisanet FCT / ns-3 FCT)| over its flows
and the share of flows more than 2x apart, then the same over all of them:
a measure that, unlike a class mean, does not let two flows' differences
cancel; `--full` over the full-size lists (one seed), `--no-give-up`
against ns-3 that gives no connection up where that run is stored (flows
ns-3 gave up have no FCT and are left out). pisanet runs with
crosscheck.NS3_LIKE plus `--set`; ns-3 only from the cache (no ns-3 run).
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import crosscheck as xc
import numpy as np


def overrides(sets: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in sets:
        k, v = kv.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def by_flow(sc: xc.Scenario, seed: int, extra: dict[str, Any], top: int = 6) -> None:
    flows = xc.flow_list(sc, seed)
    ns3 = xc.run_ns3(sc, flows, {})
    if ns3 is None:
        raise SystemExit(f"perflow: no cached ns-3 run of {sc.name} seed {seed}")
    pis = xc.run_pisanet(sc, flows, {**xc.NS3_LIKE, **extra})
    a, b = np.array(ns3["fct_us"]), np.array(pis["fct_us"])
    print(f"{sc.name} seed {seed}: drops ns-3 {ns3['drops']}, pisanet {pis['drops']}")
    for cname, lo, hi in xc.CLASSES:
        idx = [i for i, f in enumerate(flows) if lo <= f["bytes"] < hi]
        if not idx:
            continue
        diff = b[idx].sum() - a[idx].sum()
        print(
            f"{cname}: {len(idx)} flows, mean ns-3 {a[idx].mean():.0f} us, "
            f"pisanet {b[idx].mean():.0f} us, difference of the sums {diff:+.0f} us"
        )
        for i in sorted(idx, key=lambda i: -abs(b[i] - a[i]))[:top]:
            f = flows[i]
            print(
                f"   flow {i:3d} h{f['src']}->h{f['dst']} start {f['start_us']} us, {f['bytes']} B: "
                f"ns-3 {a[i]:.0f} us, pisanet {b[i]:.0f} us ({b[i] - a[i]:+.0f}), "
                f"pisanet resent {pis['retx'][i]:.0f}"
            )


def errors(
    cc: str, extra: dict[str, Any], full: bool = False, no_give_up: bool = False, quiet: bool = True
) -> np.ndarray:
    """|ln(pisanet FCT / ns-3 FCT)| of every flow of CC's scenarios that
    both completed (quick: seeds 1-3 of the dumbbell, the incast's one list;
    `full`: the full-size lists), pisanet with crosscheck.NS3_LIKE plus
    EXTRA; unless QUIET, each run's mean printed."""
    every: list[float] = []
    for sc in xc.scenarios(not full):
        if sc.cc != cc:
            continue
        for seed in [1] if sc.kind == "incast" or full else [1, 2, 3]:
            flows = xc.flow_list(sc, seed)
            ns3 = (xc.run_ns3(sc, flows, xc.NO_GIVE_UP) if no_give_up else None) or xc.run_ns3(
                sc, flows, {}
            )
            if ns3 is None:
                continue
            pis = xc.run_pisanet(sc, flows, {**xc.NS3_LIKE, **extra})
            a, b = np.array(ns3["fct_us"]), np.array(pis["fct_us"])
            ok = ~np.isnan(a) & ~np.isnan(b)
            e = np.abs(np.log(b[ok] / a[ok]))
            every += e.tolist()
            if not quiet:
                print(
                    f"{sc.name:24s} seed {seed}: mean |ln ratio| {e.mean():.3f}, "
                    f"flows > 2x apart {np.mean(e > math.log(2)):.1%}"
                )
    return np.array(every)


def error(cc: str, extra: dict[str, Any], full: bool, no_give_up: bool) -> None:
    e = errors(cc, extra, full, no_give_up, quiet=False)
    print(
        f"all {len(e)} flows: mean |ln ratio| {e.mean():.3f}, "
        f"flows > 2x apart {np.mean(e > math.log(2)):.1%}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--scenario", default="newreno websearch 0.3")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cc", default="dctcp")
    ap.add_argument("--error", action="store_true", help="the per-flow error measure")
    ap.add_argument("--set", action="append", default=[], help="pisanet override KEY=VALUE")
    ap.add_argument("--full", action="store_true", help="the full-size flow list(s)")
    ap.add_argument("--top", type=int, default=6, help="flows shown per class")
    ap.add_argument(
        "--no-give-up",
        action="store_true",
        help="--error against ns-3 that gives no connection up (crosscheck.NO_GIVE_UP) where stored",
    )
    args = ap.parse_args()
    xc.CACHED_ONLY = True
    extra = overrides(args.set)
    if args.error:
        error(args.cc, extra, args.full, args.no_give_up)
    else:
        sc = next(s for s in xc.scenarios(not args.full) if s.name == args.scenario)
        by_flow(sc, args.seed, extra, args.top)


if __name__ == "__main__":
    main()
