"""Per-flow look at one 16:1 incast round in ns-3 and pisanet (issue 19).

    nice -n 10 .venv/bin/python experiments/crosscheck/trace_incast.py [--cc newreno|dctcp]
        [--size 32000] [--ns3 KEY=VALUE ...] [--set KEY=VALUE ...]

Runs one round (16 senders x `size` bytes to host 0, starting at 1 ms) in
ns-3 (ns3_sim.py with its per-socket trace: congestion-state changes, RTO and
RTT updates, data segments sent; switch queue drops) and in pisanet with the
ns-3-like options (crosscheck.NS3_LIKE, plus `--set` overrides; a packet
trace of every flow), and prints per flow: FCT, data segments sent and
resent, drops, and in ns-3 the fast recoveries, RTO expiries and last RTO.
Not part of the test suite (ns-3 is slow and installed on demand).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import crosscheck as xc
import numpy as np
import traces


def ns3_round(
    cc: str, size: int, extra: dict[str, str]
) -> tuple[list[float], dict[int, dict[str, Any]], int]:
    flows = incast_flows(size)
    global NS3_TRACE_TEXT
    res, NS3_TRACE_TEXT = traces.ns3_traced(xc.ns3_spec("incast", cc, flows, extra, 0.1))
    per: dict[int, dict[str, Any]] = defaultdict(
        lambda: {
            "tx": 0,
            "seqs": set(),
            "resent": 0,
            "recoveries": 0,
            "rtos": 0,
            "rto_ns": [],
            "rtt_ns": [],
        }
    )
    drops = 0
    for line in NS3_TRACE_TEXT.splitlines():
        t, ctx, ev, a, b = line.split()
        if ev == "drop":
            drops += 1
            continue
        node = int(ctx.split("/")[2])
        if node == 0:
            continue  # the receiver's sockets
        f = per[node]
        if ev == "tx":
            f["tx"] += 1
            if int(a) in f["seqs"]:
                f["resent"] += 1
            f["seqs"].add(int(a))
        elif ev == "cong" and int(b) == 3:
            f["recoveries"] += 1
        elif ev == "cong" and int(b) == 4:
            f["rtos"] += 1
            f.setdefault("rto_at_us", []).append(int(t) / 1000 - 1000)
        elif ev == "rto":
            f["rto_ns"].append(int(b))
        elif ev == "rtt":
            f["rtt_ns"].append(int(b))
    return res["fct_us"], per, drops


NS3_TRACE_TEXT = ""
JITTER_NS = 0


def incast_flows(size: int) -> list[dict[str, Any]]:
    """16 senders at 1 ms, sender i delayed by i * JITTER_NS ns (0: all at once)."""
    return [
        {"start_us": 1000 + (s - 1) * JITTER_NS / 1000, "src": s, "dst": 0, "bytes": size}
        for s in range(1, 17)
    ]


def main() -> None:
    ap = traces.parser(__doc__)
    ap.add_argument("--cc", default="newreno")
    ap.add_argument("--size", type=int, default=32_000)
    ap.add_argument("--ns3", action="append", default=[], help="ns-3 attribute KEY=VALUE")
    ap.add_argument("--set", action="append", default=[], help="pisanet override KEY=VALUE")
    ap.add_argument("--skip-ns3", action="store_true")
    ap.add_argument("--dump", type=int, default=-1, help="print this flow's events in both")
    ap.add_argument("--save-ns3-trace", help="write ns-3's per-socket trace to this file")
    ap.add_argument("--jitter-ns", type=int, default=0, help="sender i starts i * this later")
    args = ap.parse_args()
    global JITTER_NS
    JITTER_NS = args.jitter_ns
    if not args.skip_ns3:
        extra = dict(kv.split("=", 1) for kv in args.ns3)
        fct, per, drops = ns3_round(args.cc, args.size, extra)
        print(
            f"ns-3 {args.cc} {args.size} B x 16 {extra or ''}: drops {drops}, FCT mean {np.mean(fct):.0f} us max {np.max(fct):.0f} us"
        )
        print(
            "  flow  fct_us  segs  resent  recoveries  rtos  rto_at_us  last_rto_us  rtt_samples(us)"
        )
        for i, node in enumerate(range(1, 17)):
            f = per[node]
            rtts = sorted({round(x / 1000, 1) for x in f["rtt_ns"]})
            print(
                f"  {i:4d} {fct[i]:7.0f} {f['tx']:5d} {f['resent']:7d} {f['recoveries']:11d} {f['rtos']:5d}"
                f"  {','.join(f'{x:.0f}' for x in f.get('rto_at_us', [])) or '-':>9}"
                f"  {(f['rto_ns'][-1] / 1000 if f['rto_ns'] else float('nan')):10.0f}  {rtts[:6]}"
            )
        if args.save_ns3_trace:
            Path(args.save_ns3_trace).write_text(NS3_TRACE_TEXT)
        if args.dump >= 0:
            node = args.dump + 1
            for line in NS3_TRACE_TEXT.splitlines():
                t, ctx, ev, a, b = line.split()
                if ev in ("tx", "rx", "cong") and int(ctx.split("/")[2]) == node:
                    print(f"    ns-3 {int(t) / 1000 - 1000:9.3f} {ev} {a} {b}")
    pisanet_trace(args.cc, args.size, args.set, args.dump)


def pisanet_trace(
    cc: str, size: int, sets: list[str], dump: int = -1
) -> tuple[list[float], None, int]:
    flows = incast_flows(size)
    over: dict[str, Any] = xc.ns3_like_overrides(cc)
    extra = list(sets)
    r = xc.run_custom(
        "incast",
        cc,
        flows,
        over,
        extra,
        max_sim_time_ms=100,
        metrics={"trace": {"flows": list(range(16))}},
    )
    fl = r.flows.sort_values("id")
    tr = r.trace
    assert tr is not None
    drops = int(r.summary["packets"]["dropped"])
    print(
        f"pisanet {cc} {size} B x 16 {extra or ''}: drops {drops}, FCT mean {fl['fct'].mean():.0f} us max {fl['fct'].max():.0f} us"
    )
    print("  flow  fct_us  segs  resent  drops  resent_after_gap>=500us")
    data = tr[(tr["size"] > 100)]
    for i, row in enumerate(fl.itertuples()):
        d = data[data["flow"] == row.id]
        # Data segments leaving the sender (the host's own port: node = its name).
        sent = d[(d["event"] == "enqueue") & (d["node"] == f"h{i + 1}")]
        seqs = sent["seq"].to_numpy()
        resent = len(seqs) - len(set(seqs.tolist()))
        dr = int((d["event"] == "drop").sum())
        times = sent["time"].to_numpy()
        gaps = int((np.diff(times) >= 500).sum()) if len(times) > 1 else 0
        print(f"  {i:4d} {row.fct:7.0f} {len(seqs):5d} {resent:7d} {dr:6d} {gaps:6d}")
    if dump >= 0:
        d = tr[tr["flow"] == dump]
        for row in d.itertuples():
            if (
                row.node in (f"h{dump + 1}", "h0") and row.event in ("enqueue", "drop")
            ) or row.event == "drop":
                print(
                    f"    pisanet {row.time - 1000:9.3f} {row.node} {row.event} seq {row.seq} size {row.size}"
                )
    return fl["fct"].tolist(), None, drops


if __name__ == "__main__":
    main()
