"""One sender host of a dumbbell scenario in ns-3 and pisanet, over time (issue 19).

    nice -n 10 .venv/bin/python experiments/crosscheck/trace_dumbbell.py \\
        --scenario "dctcp datamining 0.3" --host 1 [--from-us T0 --to-us T1]
        [--sack] [--ns3 KEY=VALUE ...] [--set KEY=VALUE ...]

Runs the scenario's `--quick` flow list in ns-3 (ns3_sim.py with its
per-socket trace: congestion states, cwnd, ssthresh, ACKs with and without
ECE, data segments; and the NIC queue of `--host`) and in pisanet with the
ns-3-like options (crosscheck.NS3_LIKE plus `--set`; a packet trace of the
host's flows), and prints, per 100 us between `--from-us` and `--to-us`: the
host's NIC queue (packets) in both, and for each of the host's flows active
then, ns-3's congestion state, cwnd (segments) and ECE ACKs, and the
segments each simulator sent. Not part of the test suite.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import crosscheck as xc
import traces

STATE = {0: "open", 1: "disorder", 2: "cwr", 3: "recovery", 4: "loss"}


def ns3_trace(
    sc: xc.Scenario, flows: list[dict[str, Any]], host: int, extra: dict[str, str]
) -> str:
    spec = xc.ns3_spec(sc.kind, sc.cc, flows, extra, flows[-1]["start_us"] / 1e6 + 1.0)
    return traces.ns3_traced(spec, trace_nics=[f"h{host}"])[1]


def main() -> None:
    ap = traces.parser(__doc__, "dctcp datamining 0.3")
    ap.add_argument("--host", type=int, default=1)
    ap.add_argument("--from-us", type=float, default=0.0)
    ap.add_argument("--to-us", type=float, default=1e12)
    ap.add_argument("--step-us", type=float, default=100.0)
    ap.add_argument("--ns3", action="append", default=[], help="ns-3 attribute KEY=VALUE")
    ap.add_argument("--set", action="append", default=[], help="pisanet override KEY=VALUE")
    ap.add_argument(
        "--sack",
        action="store_true",
        help="SACK in both: ns-3 Sack = true, pisanet crosscheck.NS3_LIKE_SACK",
    )
    ap.add_argument("--save-ns3-trace", help="write ns-3's trace to this file")
    ap.add_argument("--load-ns3-trace", help="read ns-3's trace from this file (no ns-3 run)")
    args = ap.parse_args()
    sc = traces.scenario(args.scenario)
    flows = xc.flow_list(sc)
    mine = [i for i, f in enumerate(flows) if f["src"] == args.host]
    # The k-th flow from a host is its socket k + 1 (socket 0: the PacketSink's listener).
    sock_of = {
        k + 1: i for k, i in enumerate(sorted(mine, key=lambda i: (flows[i]["start_us"], i)))
    }
    if args.load_ns3_trace:
        text = Path(args.load_ns3_trace).read_text()
    else:
        extra = dict(kv.split("=", 1) for kv in args.ns3)
        if args.sack:
            extra.update(xc.SACK_NS3)
        text = ns3_trace(sc, flows, args.host, extra)
        if args.save_ns3_trace:
            Path(args.save_ns3_trace).write_text(text)
    step = args.step_us

    def b(t_us: float) -> int:
        return int((t_us - args.from_us) // step)

    nic3: dict[int, int] = {}
    st3: dict[tuple[int, int], str] = {}
    cw3: dict[tuple[int, int], int] = {}
    ece3: dict[tuple[int, int], int] = defaultdict(int)
    ack3: dict[tuple[int, int], int] = defaultdict(int)
    tx3: dict[tuple[int, int], int] = defaultdict(int)
    state: dict[int, str] = {}
    cwnd: dict[int, int] = {}
    for line in text.splitlines():
        t, ctx, ev, _a, bb = line.split()
        t_us = int(t) / 1000
        if ev == "qlen":
            if args.from_us <= t_us < args.to_us:
                k = b(t_us)
                nic3[k] = max(nic3.get(k, 0), int(bb))
            continue
        if ev == "drop":
            continue
        parts = ctx.split("/")
        if int(parts[2]) != args.host:
            continue
        sock = int(parts[5])
        f = sock_of.get(sock)
        if f is None:
            continue
        if ev == "cong":
            state[f] = STATE[int(bb)]
        elif ev == "cwnd":
            cwnd[f] = int(bb) // 1448
        if not args.from_us <= t_us < args.to_us:
            continue
        kf = (b(t_us), f)
        st3[kf] = state.get(f, "open") if kf not in st3 or st3[kf] == "open" else st3[kf]
        if ev == "cong":
            st3[kf] = STATE[int(bb)]
        cw3[kf] = max(cw3.get(kf, 0), cwnd.get(f, 0))
        if ev == "rxe":
            ece3[kf] += 1
            ack3[kf] += 1
        elif ev == "rx":
            ack3[kf] += 1
        elif ev == "tx":
            tx3[kf] += 1
    # pisanet.
    like = xc.NS3_LIKE_SACK if args.sack else xc.NS3_LIKE
    over: dict[str, Any] = xc.for_cc(sc.cc, {**xc.PISANET_BASE, **like})
    r, tr = traces.pisanet_traced(
        sc, flows, args.set, mine, 5_000_000, overrides=over, margin_ms=1000
    )
    at_nic = tr[(tr["node"] == f"h{args.host}") & (tr["event"] == "enqueue")]
    nicp: dict[int, int] = {}
    txp: dict[tuple[int, int], int] = defaultdict(int)
    for row in at_nic.itertuples():
        if not args.from_us <= row.time < args.to_us:
            continue
        k = b(row.time)
        nicp[k] = max(nicp.get(k, 0), round(row.depth_bytes / 1518))
        if row.size > 100:
            txp[(k, int(row.flow))] += 1
    fl = r.flows.set_index("id")
    print(f"{args.scenario}, host h{args.host}: flows {mine}")
    for i in mine:
        print(
            f"  flow {i}: start {flows[i]['start_us']} us, {flows[i]['bytes']} B, FCT ns-3 ? pisanet {fl.loc[i, 'fct']:.0f} us"
        )
    print("  t_us      nic3 nicP | per flow: ns-3 state cwnd acks/ece tx | pisanet tx")
    nb = max([k for k in nic3] + [k for k, _ in tx3] + [k for k in nicp] + [0]) + 1
    for k in range(nb):
        cells = []
        for i in mine:
            if (k, i) in st3 or (k, i) in txp:
                cells.append(
                    f"f{i}: {st3.get((k, i), '-'):8s} {cw3.get((k, i), 0):4d} {ack3.get((k, i), 0):3d}/{ece3.get((k, i), 0):3d} {tx3.get((k, i), 0):3d} | {txp.get((k, i), 0):3d}"
                )
        if cells or k in nic3 or k in nicp:
            print(
                f"  {args.from_us + k * step:9.0f} {nic3.get(k, 0):5d} {nicp.get(k, 0):4d}  "
                + "  ".join(cells)
            )


if __name__ == "__main__":
    main()
