"""New segments, resends and ACKs of a host's flows in ns-3 and pisanet, over time (issue 19).

    nice -n 10 .venv/bin/python experiments/crosscheck/trace_resends.py \\
        --scenario "dctcp datamining 0.3" --host 1 --flows 17,22 \\
        [--from-us T0 --to-us T1] [--stop-ms 20] [--ns3 KEY=VALUE ...]
        [--ns3-socket FLOW:US:ATTR=VALUE ...] [--set KEY=VALUE ...]
        [--save-ns3-trace F | --load-ns3-trace F] [--full]

Runs the scenario's `--quick` flow list (seed 1; `--full`: the full-size
one) in ns-3 (ns3_sim.py's per-socket and queue-disc trace, to `--stop-ms`)
and in pisanet with the ns-3-like options (crosscheck.NS3_LIKE plus `--set`;
a packet trace of the host's flows), and prints:

* per `--step-us` between `--from-us` and `--to-us`: the host's NIC queue
  (packets, the largest in the bin) in each, and for each of `--flows` the
  new segments, resent segments (a segment not beyond the highest byte the
  flow had sent) and ACKs the host received, in each simulator;
* ns-3's events of those flows: congestion-state changes, a cwnd that grew
  by more than 8 segments on one ACK (slow start by every segment acked),
  the RTO in force when a CA_LOSS began, and the switch drops of each flow;
* per flow, the longest gaps between two ACKs in each simulator (a gap
  longer than the RTO is a timeout).

Not part of the test suite.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path
from typing import Any

import crosscheck as xc
import traces

STATE = {0: "open", 1: "disorder", 2: "cwr", 3: "recovery", 4: "loss"}
SEG = 1448  # ns-3's SegmentSize in the cross-check


def ns3_trace(
    sc: xc.Scenario,
    flows: list[dict[str, Any]],
    host: int,
    stop_s: float,
    extra: dict[str, str],
    set_at: list[list[Any]],
) -> tuple[str, list[float]]:
    """ns-3's trace of the run to STOP_S and its FCTs (us; NaN: not done by then)."""
    out, text = traces.ns3_traced(
        xc.ns3_spec(sc.kind, sc.cc, flows, extra, stop_s),
        trace_nics=[f"h{host}"],
        trace_qdisc=True,
        set_at=set_at,
    )
    return text, [float(x) for x in out["fct_us"]]


def gaps(times: list[float], n: int) -> list[tuple[float, float]]:
    """The N longest gaps between consecutive TIMES: (start, length)."""
    out = [(a, b - a) for a, b in itertools.pairwise(times)]
    return sorted(sorted(out, key=lambda g: -g[1])[:n])


def main() -> None:
    ap = traces.parser(__doc__, "dctcp datamining 0.3")
    ap.add_argument("--host", type=int, default=1)
    ap.add_argument("--flows", default="17,22", help="flow ids (of --host), comma-separated")
    ap.add_argument("--from-us", type=float, default=0.0)
    ap.add_argument("--to-us", type=float, default=20_000.0)
    ap.add_argument("--step-us", type=float, default=100.0)
    ap.add_argument("--stop-ms", type=float, default=20.0, help="ns-3's simulated time")
    ap.add_argument("--ns3", action="append", default=[], help="ns-3 attribute KEY=VALUE")
    ap.add_argument(
        "--ns3-socket",
        action="append",
        default=[],
        metavar="FLOW:US:ATTR=VALUE",
        help="set an attribute of one ns-3 flow's socket at a time (us), e.g. "
        "22:12000:ClockGranularity=1100us",
    )
    ap.add_argument("--set", action="append", default=[], help="pisanet override KEY=VALUE")
    ap.add_argument("--gaps", type=int, default=4, help="longest ACK gaps shown per flow")
    ap.add_argument(
        "--full", action="store_true", help="the full-size flow list (crosscheck without --quick)"
    )
    ap.add_argument("--save-ns3-trace", help="write ns-3's trace to this file")
    ap.add_argument("--load-ns3-trace", help="read ns-3's trace from this file (no ns-3 run)")
    args = ap.parse_args()
    sc = traces.scenario(args.scenario, args.full)
    flows = xc.flow_list(sc)
    want = [int(x) for x in args.flows.split(",")]
    mine = [i for i, f in enumerate(flows) if f["src"] == args.host]
    if any(i not in mine for i in want):
        raise SystemExit(f"trace_resends: --flows must be flows of h{args.host}: {mine}")
    order = sorted(mine, key=lambda i: (flows[i]["start_us"], i))
    # The k-th flow from a host is its socket k + 1 (socket 0: the
    # PacketSink's listener) and has ns-3's ephemeral port 49152 + k + 1.
    sock_of = {k + 1: i for k, i in enumerate(order)}
    port_of = {49153 + k: i for k, i in enumerate(order)}
    fct3: list[float] | None = None
    if args.load_ns3_trace:
        text = Path(args.load_ns3_trace).read_text()
    else:
        extra = dict(kv.split("=", 1) for kv in args.ns3)
        set_at: list[list[Any]] = []
        socket_of = {i: k for k, i in sock_of.items()}
        for arg in args.ns3_socket:
            f_s, at_s, kv = arg.split(":", 2)
            attr, value = kv.split("=", 1)
            path = (
                f"/NodeList/{args.host}/$ns3::TcpL4Protocol/SocketList/{socket_of[int(f_s)]}/{attr}"
            )
            set_at.append([round(float(at_s) * 1000), path, value])
        text, fct3 = ns3_trace(sc, flows, args.host, args.stop_ms / 1000, extra, set_at)
        if args.save_ns3_trace:
            Path(args.save_ns3_trace).write_text(text)
    step = args.step_us

    def b(t_us: float) -> int:
        return int((t_us - args.from_us) // step)

    def inside(t_us: float) -> bool:
        return args.from_us <= t_us < args.to_us

    # ns-3.
    nic3: dict[int, int] = {}
    new3: dict[tuple[int, int], int] = defaultdict(int)
    re3: dict[tuple[int, int], int] = defaultdict(int)
    ack3: dict[tuple[int, int], int] = defaultdict(int)
    acks3: dict[int, list[float]] = defaultdict(list)
    high3: dict[int, int] = {}
    cwnd3: dict[int, int] = {}
    # Per flow: the RTO in force and the time and old value of its last change.
    rto3: dict[int, float] = {}
    rto_was3: dict[int, tuple[float, float]] = {}
    last_ack3: dict[int, float] = {}
    events: list[str] = []
    drops3: dict[int, list[float]] = defaultdict(list)
    sent3: dict[int, dict[int, float]] = defaultdict(dict)
    for line in text.splitlines():
        w = line.split()
        t_us = int(w[0]) / 1000
        ctx, ev = w[1], w[2]
        if ev == "qlen":
            if ctx == f"nic-h{args.host}" and inside(t_us):
                nic3[b(t_us)] = max(nic3.get(b(t_us), 0), int(w[4]))
            continue
        if ev == "qdrop":
            # Ports and sequence numbers repeat across hosts (ephemeral
            # ports from 49153 and ISN 0 on every node): a drop is the
            # flow's if it sent that sequence number in the last 5 ms.
            f = port_of.get(int(w[5]))
            seq = int(w[7])
            if (
                f in want
                and int(w[6]) == traces.SINK_PORT
                and t_us - sent3[f].get(seq, -1e18) < 5000.0
            ):
                drops3[f].append(t_us)
            continue
        if not ctx.startswith("/NodeList/") or int(ctx.split("/")[2]) != args.host:
            continue
        f = sock_of.get(int(ctx.split("/")[5]), -1)
        if f not in want:
            continue
        a, v = int(w[3]), int(w[4])
        if ev == "rto":
            rto_was3[f] = (t_us, a / 1000)
            rto3[f] = v / 1000
        elif ev == "cwnd":
            if v - a > 8 * SEG and a > 0 and inside(t_us):
                events.append(
                    f"{t_us:10.1f} us  flow {f}: cwnd {a // SEG} -> {v // SEG} segments on one ACK"
                )
            cwnd3[f] = v
        elif ev == "cong" and inside(t_us):
            note = ""
            if v == 4:
                since = t_us - last_ack3.get(f, flows[f]["start_us"])
                # ns-3 doubles the RTO at the expiry, just before the state change.
                at, old = rto_was3.get(f, (-1.0, 0.0))
                rto = old if at == t_us else rto3.get(f, 0.0)
                note = f" (RTO {rto:.1f} us, {since:.1f} us after the last ACK)"
            events.append(f"{t_us:10.1f} us  flow {f}: {STATE[a]} -> {STATE[v]}{note}")
        elif ev == "tx":
            sent3[f][a] = t_us
            end = a + v
            k = (b(t_us), f)
            if end <= high3.get(f, 0):
                re3[k] += inside(t_us)
            else:
                high3[f] = end
                new3[k] += inside(t_us)
        elif ev in ("rx", "rxe"):
            last_ack3[f] = t_us
            acks3[f].append(t_us)
            if inside(t_us):
                ack3[(b(t_us), f)] += 1
    # pisanet.
    r, tr = traces.pisanet_traced(sc, flows, args.set, mine, 5_000_000, margin_ms=1000)
    node = f"h{args.host}"
    nicp: dict[int, int] = {}
    newp: dict[tuple[int, int], int] = defaultdict(int)
    rep: dict[tuple[int, int], int] = defaultdict(int)
    ackp: dict[tuple[int, int], int] = defaultdict(int)
    acksp: dict[int, list[float]] = defaultdict(list)
    highp: dict[int, int] = {}
    dropsp: dict[int, list[float]] = defaultdict(list)
    for row in tr.itertuples():
        t_us = float(row.time)
        f = int(row.flow)
        if row.node == node and row.event == "enqueue":
            if inside(t_us):
                nicp[b(t_us)] = max(nicp.get(b(t_us), 0), round(row.depth_bytes / xc.FRAME))
            if f in want and row.size > 100:
                k = (b(t_us), f)
                if row.seq < highp.get(f, -1):
                    rep[k] += inside(t_us)
                else:
                    highp[f] = int(row.seq)
                    newp[k] += inside(t_us)
        elif row.port == f"s0->{node}" and row.event == "dequeue" and f in want:
            acksp[f].append(t_us)
            if inside(t_us):
                ackp[(b(t_us), f)] += 1
        elif row.event == "drop" and f in want and row.size > 100:
            dropsp[f].append(t_us)
    if fct3 is None and not args.ns3:
        xc.CACHED_ONLY = True  # the table's cached run, for its FCTs; none is started
        cached = xc.run_ns3(sc, flows, {})
        fct3 = [float(x) for x in cached["fct_us"]] if cached else None
    fl = r.flows.set_index("id")
    print(f"{args.scenario}, host h{args.host}, flows {want} (of h{args.host}: {mine})")
    for i in mine:
        ns3 = f"{fct3[i]:.0f}" if fct3 else "?"
        print(
            f"  flow {i}: start {flows[i]['start_us']} us, {flows[i]['bytes']} B, "
            f"FCT ns-3 {ns3} us, pisanet {fl.loc[i, 'fct']:.0f} us"
        )
    print("  t_us     nic: ns-3 pisanet | per flow: new/resent/acks ns-3 ; pisanet")
    nb = int((min(args.to_us, args.stop_ms * 1000) - args.from_us) // step)
    for n in range(nb):
        cells = [
            f"f{f}: {new3[(n, f)]:4d}/{re3[(n, f)]:3d}/{ack3[(n, f)]:3d} ; "
            f"{newp[(n, f)]:4d}/{rep[(n, f)]:3d}/{ackp[(n, f)]:3d}"
            for f in want
        ]
        busy = any(new3[(n, f)] + re3[(n, f)] + newp[(n, f)] + rep[(n, f)] for f in want)
        if busy or nic3.get(n, 0) or nicp.get(n, 0):
            print(
                f"  {args.from_us + n * step:8.0f} {nic3.get(n, 0):5d} {nicp.get(n, 0):5d} | "
                + " | ".join(cells)
            )
    print("ns-3 events:")
    for e in events:
        print("  " + e)
    for f in want:
        d3, dp = drops3[f], dropsp[f]
        print(
            f"flow {f}: switch drops ns-3 {len(d3)}"
            + (f" ({min(d3):.1f}-{max(d3):.1f} us)" if d3 else "")
            + f", pisanet {len(dp)}"
            + (f" ({min(dp):.1f}-{max(dp):.1f} us)" if dp else "")
        )
        for name, times in (("ns-3", acks3[f]), ("pisanet", acksp[f])):
            g = ", ".join(f"{a:.1f} +{d:.1f}" for a, d in gaps(times, args.gaps))
            print(f"  longest ACK gaps, {name} (from us +length us): {g}")


if __name__ == "__main__":
    main()
