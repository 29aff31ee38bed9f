"""pisanet ns-3-like plus option sets against the stored ns-3 runs (issue 19).

    nice -n 10 .venv/bin/python experiments/crosscheck/variants.py [--full] \\
        [--variant NAME:KEY=VALUE,KEY=VALUE ...] [--cc newreno] [--only] \\
        [--no-give-up] [--newreno] [--scenario NAME ...]

For each scenario (`--full`: the full size, else the quick lists, seed 1),
per variant: pisanet / ns-3 mean and p99 per size class and pisanet's ECN
marks and drops (ns-3's last), then each variant's count of classes within
the goal. A variant's keys go over crosscheck.NS3_LIKE on the scenarios of
`--cc` only (default dctcp: the options of findings 23 and 25 are DCTCP's
or change only ECN runs); the others take NS3_LIKE as is, or are skipped
with `--only`; `--scenario` runs only the scenarios named. `--no-give-up`
compares with ns-3 that gives no connection up (crosscheck.NO_GIVE_UP)
where that run is stored. `--newreno` is `--cc newreno --only
--no-give-up` (finding 26). The default variants take finding 25's rule
and two of finding 31's out of the set. ns-3 only from the store (no ns-3 run). Not part of the test
suite.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import crosscheck as xc

DEFAULT = [
    "ns-3-like:",
    "ce_new_seq_only off:transport.ce_new_seq_only=false",
    "window end off:transport.dctcp_window_end_next_tx=false",
    "segment count off:transport.ca_segment_count=false",
]


def parse(spec: str) -> tuple[str, dict[str, Any]]:
    name, _, sets = spec.partition(":")
    out: dict[str, Any] = {}
    for kv in filter(None, sets.split(",")):
        k, v = kv.split("=", 1)
        out[k] = json.loads(v)
    return name, out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--full", action="store_true", help="the full-size flow lists")
    ap.add_argument("--variant", action="append", help="NAME:KEY=VALUE,KEY=VALUE")
    ap.add_argument(
        "--cc", choices=["dctcp", "newreno"], default="dctcp", help="whose scenarios take the keys"
    )
    ap.add_argument("--only", action="store_true", help="run only the scenarios of --cc")
    ap.add_argument("--scenario", action="append", help="run only these scenarios (by name)")
    ap.add_argument(
        "--no-give-up", action="store_true", help="ns-3 with crosscheck.NO_GIVE_UP where stored"
    )
    ap.add_argument(
        "--newreno", action="store_true", help="--cc newreno --only --no-give-up (finding 26)"
    )
    args = ap.parse_args()
    if args.newreno:
        args.cc, args.only, args.no_give_up = "newreno", True, True
    variants = [parse(v) for v in args.variant or DEFAULT]
    xc.CACHED_ONLY = True
    rows = []
    for sc in xc.scenarios(quick=not args.full):
        if (args.only and sc.cc != args.cc) or (args.scenario and sc.name not in args.scenario):
            continue
        pooled = (xc.run_ns3_pooled(sc, xc.NO_GIVE_UP) if args.no_give_up else None) or (
            xc.run_ns3_pooled(sc, {})
        )
        if pooled is None:
            print(f"{sc.name}: no stored ns-3 run")
            continue
        flows, ns3 = pooled
        c3 = xc.class_stats(flows, ns3["fct_us"])
        pis = {}
        cells = []
        for name, sets in variants:
            extra = sets if sc.cc == args.cc else {}
            r = pis[name] = xc.run_pisanet_pooled(sc, {**xc.NS3_LIKE, **extra})
            ratios = " ".join(
                f"{m / m3:.2f}/{p / p3:.2f}"
                for (n, m, p), (_, m3, p3) in zip(
                    xc.class_stats(flows, r["fct_us"]), c3, strict=True
                )
                if n
            )
            cells.append(f"{name}: {ratios} marks {r['ecn_marks']} drops {r['drops']}")
        print(
            f"{sc.name} | " + " | ".join(cells) + f" | ns-3 marks {ns3['ecn_marks']}"
            f" drops {ns3['drops']}",
            flush=True,
        )
        rows.append((sc, flows, ns3, pis))
    for name, _ in variants:
        ok, total, _ = xc.goal_count(rows, name)
        print(f"{name}: {ok} of {total} within the goal")


if __name__ == "__main__":
    main()
