"""One lone bulk flow on the dumbbell in ns-3 and pisanet, over time (issue 19).

    nice -n 10 .venv/bin/python experiments/crosscheck/trace_bulk.py \\
        [--cc newreno] [--mb 50] [--step-us 1000] [--ns3 KEY=VALUE ...] [--set KEY=VALUE ...]

One flow of `--mb` MB from h0 to h4 (nothing else runs), ns-3 with the
cross-check's attributes and its per-socket trace, pisanet with the ns-3-like
options and a packet trace. Per `--step-us`: h0's NIC queue (packets) in
both, and from ns-3's per-socket trace the sender's cwnd (segments) and
bytes in flight (highest byte sent minus highest ACK). Used for finding 19
of docs/results/crosscheck.md (a lone flow holds the same window in both).
Not part of the test suite.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import crosscheck as xc
import traces


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cc", default="newreno")
    ap.add_argument("--mb", type=float, default=50.0)
    ap.add_argument("--step-us", type=float, default=1000.0)
    ap.add_argument("--ns3", action="append", default=[])
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--load-ns3-trace")
    ap.add_argument("--save-ns3-trace")
    ap.add_argument("--no-pisanet", action="store_true")
    args = ap.parse_args()
    flows = [{"start_us": 0, "src": 0, "dst": 4, "bytes": int(args.mb * 1e6)}]
    step = args.step_us
    # ns-3.
    if args.load_ns3_trace:
        text = Path(args.load_ns3_trace).read_text()
    else:
        spec = xc.ns3_spec(
            "dumbbell", args.cc, flows, dict(kv.split("=", 1) for kv in args.ns3), 1.0
        )
        res, text = traces.ns3_traced(spec, trace_nics=["h0"])
        print("ns-3:", res["fct_us"])
        if args.save_ns3_trace:
            Path(args.save_ns3_trace).write_text(text)
    rows3: dict[int, dict[str, int]] = {}
    nic = cwnd = high = ack = 0
    for line in text.splitlines():
        t, ctx, ev, a, b = line.split()[:5]
        k = int(int(t) / 1000 // step)
        if ev == "qlen":
            nic = int(b)
        elif "/NodeList/0/" in ctx and ev == "cwnd":
            cwnd = int(b)
        elif "/NodeList/0/" in ctx and ev == "tx":
            high = max(high, int(a) + int(b))
        elif "/NodeList/0/" in ctx and ev in ("rx", "rxe"):
            ack = max(ack, int(a))
        else:
            continue
        r = rows3.setdefault(k, {"nic": 0, "cwnd": 0, "flight": 0})
        r["nic"] = max(r["nic"], nic)
        r["cwnd"] = max(r["cwnd"], cwnd // 1448)
        if high and ack:
            r["flight"] = max(r["flight"], high - ack)
    if args.no_pisanet:
        for k in sorted(rows3):
            r = rows3[k]
            print(
                f"{k * step:8.0f} ns3 nic {r['nic']:5d} cwnd {r['cwnd']:6d} flight {r['flight']:8d}"
            )
        return
    # pisanet.
    over = xc.ns3_like_overrides(args.cc)
    r = xc.run_custom(
        "dumbbell",
        args.cc,
        flows,
        over,
        args.set,
        max_sim_time_ms=1000,
        metrics={"trace": {"flows": [0], "max_rows": 10_000_000}},
    )
    print("pisanet:", r.flows["fct"].tolist())
    tr = r.trace
    assert tr is not None
    rowsp: dict[int, dict[str, int]] = {}
    enq = tr[(tr["node"] == "h0") & (tr["event"] == "enqueue")]
    for row in enq.itertuples():
        k = int(row.time // step)
        rp = rowsp.setdefault(k, {"nic": 0})
        rp["nic"] = max(rp["nic"], round(row.depth_bytes / 1518))
    for k in sorted(set(rows3) | set(rowsp)):
        r3 = rows3.get(k, {"nic": 0, "cwnd": 0, "flight": 0})
        rp = rowsp.get(k, {"nic": 0})
        print(
            f"{k * step:8.0f} ns3 nic {r3['nic']:5d} cwnd {r3['cwnd']:6d} flight {r3['flight']:8d} | pisanet nic {rp['nic']:5d}"
        )


if __name__ == "__main__":
    main()
