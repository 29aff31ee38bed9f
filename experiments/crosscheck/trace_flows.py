"""What happens to single flows in ns-3 and pisanet: the flows that carry a class's difference (issue 19).

    nice -n 5 .venv/bin/python experiments/crosscheck/trace_flows.py --full \\
        --scenario "dctcp datamining 0.3" --load T [--flows 272,55 | --top 8] \\
        [--split [--nic-us 1000]] [--drops 10 [--bin-ms 50]] [--set KEY=VALUE ...]

Reads ns-3's trace of a run (`trace_marks.py --save T`: the per-socket
trace, the switch queue discs' drops, marks and SYNs, and the s0 -> s1 port's
queue length) and runs pisanet ns-3-like (crosscheck.NS3_LIKE plus `--set`,
a packet trace of every flow). Picks `--flows`, or per size class the
`--top` flows whose FCT differs most between the two (the flow lists are the
same, so a flow is its index), and prints per flow, for each simulator:

* FCT, and each SYN: when it reached the s0 -> s1 port (its wait in the
  host's NIC: the time from its send less one link's propagation and
  serialization) and the port's queue then (packets), or its drop there;
* the first data segment's send (the handshake's end), data segments new
  and resent, data segments dropped and marked at s0 -> s1;
* timeouts and fast recoveries (ns-3: each expiry, where `ReTxTimeout`
  doubles the RTO, with the RTO that expired, and entries into CA_RECOVERY;
  pisanet: its per-flow counters, whose timeouts count SYN timeouts too) and
  in ns-3 ECN cuts (entries into CA_CWR);
* the host's NIC queue when the flow started (pisanet: bytes, from its
  trace; ns-3's trace has no NIC queue, its SYN's NIC wait stands for it).

With `--split`, first each class's flows by what happened to them in either
simulator (first match): a SYN dropped at s0 -> s1, a SYN that waited
`--nic-us` or more in its NIC, a data timeout, none of these; per group the
flows, both means, their ratio and the group's share of the class's
difference of the sums (docs/results/crosscheck.md, finding 27).

With `--drops N`, first the data segments dropped at s0 -> s1 in each: per
`--bin-ms` the bins where either dropped more than 50, and the N flows
with the most drops in pisanet beyond ns-3's, each with its drops per bin
where it had any (finding 29).

ns-3's packets at the port are given to flows as in `trace_marks.py`: its
ephemeral ports repeat across hosts, so a segment is the flow of its port
that sent its sequence number last, and a SYN the last started flow of its
port that has sent no data yet. pisanet's SYN is a 64 B frame with sequence
number 0. Not part of the test suite.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import crosscheck as xc
import numpy as np
import traces

CONN_TIMEOUT_US = 3000.0  # crosscheck.ns3_spec's TcpSocket::ConnTimeout
LINK_US = xc.DELAY_US + 64 * 8 / (xc.GBPS * 1000)  # a SYN's one hop (us)


def ns3_story(
    trace: Path, flows: list[dict[str, Any]], want: set[int], port: int
) -> dict[int, dict[str, Any]]:
    """Per flow in WANT: ns-3's SYNs at port PORT (time, queue found or
    'drop'), data segments, drops, marks, state changes and RTOs."""
    senders = traces.Senders(flows)
    st: dict[int, dict[str, Any]] = {
        i: {
            "syn": [],
            "first_tx": None,
            "new": 0,
            "resent": 0,
            "drops": 0,
            "drop_us": [],
            "marks": 0,
            "loss": [],
            "recov": 0,
            "cuts": 0,
        }
        for i in want
    }
    sent: dict[int, dict[int, float]] = defaultdict(dict)
    q = 0
    ctx_port = f"qdisc{port}"
    for t, ctx, ev, f, i, resent in senders.read(trace):
        if ctx == ctx_port:
            if ev == "qlen":
                q = int(f[4])
                continue
            if ev not in ("qmark", "qdrop", "qsyn") or int(f[6]) != traces.SINK_PORT:
                continue
            if int(f[4]) & 2:
                if ev == "qmark":
                    continue
                waiting = senders.syn_waiting(int(f[5]), t)
                if waiting:
                    i = senders.last_started(waiting)
                    if i in st:
                        st[i]["syn"].append((t, "drop" if ev == "qdrop" else q))
                continue
            if ev == "qsyn" or int(f[8]) == 0:
                continue
            last, i = senders.last_sender(sent, int(f[5]), int(f[7]), -1.0)
            if last >= 0 and i in st:
                st[i]["marks" if ev == "qmark" else "drops"] += 1
                if ev == "qdrop":
                    st[i]["drop_us"].append(t)
            continue
        if i < 0:
            continue
        if ev == "tx":
            sent[i][int(f[3])] = t
            if i not in st:
                continue
            if st[i]["first_tx"] is None:
                st[i]["first_tx"] = t
            st[i]["resent" if resent else "new"] += 1
        elif i in st and ev == "rto" and int(f[4]) == 2 * int(f[3]):
            # An expiry: `ReTxTimeout` doubles the RTO (then enters CA_LOSS,
            # which a second expiry in CA_LOSS does not change).
            st[i]["loss"].append((t, int(f[3]) / 1000.0))
        elif i in st and ev == "cong" and f[3] != f[4]:
            if f[4] == "3":
                st[i]["recov"] += 1
            elif f[4] == "2":
                st[i]["cuts"] += 1
    return st


def pisanet_story(
    r: Any, tr: Any, flows: list[dict[str, Any]], want: set[int]
) -> dict[int, dict[str, Any]]:
    """Per flow in WANT, from pisanet's run R and its packet trace TR: its
    SYNs at s0 -> s1 (time, queue found or 'drop') and their sends, its NIC
    queue at the start, data segments, drops, marks, timeouts and fast
    retransmits."""
    fl = r.flows.sort_values("id").reset_index(drop=True)
    # The s0 -> s1 queue in packets after each of its events (a marked
    # packet is traced as ecn_mark instead of enqueue).
    port = tr[tr["port"] == "s0->s1"]
    ev = port["event"].to_numpy()
    step = np.where(
        (ev == "enqueue") | (ev == "ecn_mark"), 1, np.where(ev == "dequeue", -1, 0)
    ).astype(np.int64)
    qlen = np.cumsum(step)
    ptimes = port["time"].to_numpy()
    # Each sender NIC's depth after each of its events.
    nics = {
        name: (g["time"].to_numpy(), g["depth_bytes"].to_numpy())
        for name, g in tr[tr["port"].str.startswith("h")].groupby("port", observed=True)
    }
    mine = tr[tr["flow"].isin(list(want)) & tr["port"].isin(["s0->s1", *nics])]
    st: dict[int, dict[str, Any]] = {}
    for i, me in mine.groupby("flow"):
        f = flows[int(i)]
        nic = f"h{f['src']}->s0"
        at_nic = me[(me["port"] == nic) & (me["event"] == "enqueue")]
        syn_nic = at_nic[(at_nic["size"] <= 64) & (at_nic["seq"] == 0)]
        at_port = me[me["port"] == "s0->s1"]
        syns: list[tuple[float, Any]] = []
        for row in at_port[(at_port["size"] <= 64) & (at_port["seq"] == 0)].itertuples():
            if row.event == "drop":
                syns.append((float(row.time), "drop"))
            elif row.event in ("enqueue", "ecn_mark"):
                k = int(np.searchsorted(ptimes, float(row.time), side="left"))
                syns.append((float(row.time), int(qlen[k - 1]) if k else 0))
        data_nic = at_nic[at_nic["size"] > 100]
        seq = data_nic["seq"].to_numpy()
        before = np.maximum.accumulate(np.concatenate([[-1], seq]))[:-1]
        data_port = at_port[at_port["size"] > 100]
        nt, nd = nics.get(nic, (np.array([]), np.array([])))
        k = int(np.searchsorted(nt, f["start_us"], side="left"))
        st[int(i)] = {
            "syn": syns,
            "syn_sent": syn_nic["time"].tolist(),
            "first_tx": float(data_nic["time"].iloc[0]) if len(data_nic) else None,
            "new": int((seq > before).sum()),
            "resent": int((seq <= before).sum()),
            "drops": int((data_port["event"] == "drop").sum()),
            "drop_us": data_port[data_port["event"] == "drop"]["time"].tolist(),
            "marks": int((data_port["event"] == "ecn_mark").sum()),
            "nic_kb": float(nd[k - 1]) / 1000 if k else 0.0,
            "timeouts": int(fl.loc[int(i), "timeouts"]),
            "fast": int(fl.loc[int(i), "fast_retransmits"]),
        }
    return st


def nic_wait(syns: list[tuple[float, Any]], sent: list[float]) -> float:
    """The longest wait (us) of a flow's SYNs in its host's NIC."""
    return max(
        (max(0.0, t - sent[k] - LINK_US) for k, (t, _q) in enumerate(syns) if k < len(sent)),
        default=0.0,
    )


def split(
    flows: list[dict[str, Any]],
    fct3: list[float],
    fct2: list[float],
    s3: dict[int, dict[str, Any]],
    s2: dict[int, dict[str, Any]],
    nic_us: float,
) -> None:
    """Each size class's flows by what happened to them in either
    simulator, first match: a SYN dropped at s0 -> s1; a SYN that waited
    NIC_US or more in its host's NIC; a data timeout; none of these. Per
    group: flows, means, ratio and share of the class's difference of the
    sums (ns-3 minus pisanet)."""

    def sent3(i: int) -> list[float]:
        return [
            flows[i]["start_us"] + CONN_TIMEOUT_US * (2**k - 1) for k in range(len(s3[i]["syn"]))
        ]

    def group(i: int) -> str:
        a, b = s3[i], s2[i]
        if any(q == "drop" for _t, q in a["syn"] + b["syn"]):
            return "a SYN dropped at s0->s1"
        if max(nic_wait(a["syn"], sent3(i)), nic_wait(b["syn"], b["syn_sent"])) >= nic_us:
            return f"a SYN waited >= {nic_us:.0f} us in the NIC"
        if a["loss"] or b["timeouts"]:
            return "a data timeout"
        return "none of these"

    names = [
        "a SYN dropped at s0->s1",
        f"a SYN waited >= {nic_us:.0f} us in the NIC",
        "a data timeout",
        "none of these",
    ]
    for cname, lo, hi in xc.CLASSES:
        idx = [i for i, f in enumerate(flows) if lo <= f["bytes"] < hi and fct3[i] == fct3[i]]
        if not idx:
            continue
        total = sum(fct3[i] - fct2[i] for i in idx)
        m3, m2 = np.mean([fct3[i] for i in idx]), np.mean([fct2[i] for i in idx])
        print(
            f"{cname}: {len(idx)} flows, ns-3 {m3:.0f} us, pisanet {m2:.0f} us"
            f" (ratio {m2 / m3:.2f}), difference of the sums {total:.0f} us"
        )
        by: dict[str, list[int]] = defaultdict(list)
        for i in idx:
            by[group(i)].append(i)
        for name in names:
            part = by.get(name, [])
            if not part:
                continue
            p3 = float(np.mean([fct3[i] for i in part]))
            p2 = float(np.mean([fct2[i] for i in part]))
            d = sum(fct3[i] - fct2[i] for i in part)
            lost3 = sum(q == "drop" for i in part for _t, q in s3[i]["syn"])
            lost2 = sum(q == "drop" for i in part for _t, q in s2[i]["syn"])
            to3 = sum(len(s3[i]["loss"]) for i in part)
            to2 = sum(s2[i]["timeouts"] for i in part)
            print(
                f"  {name}: {len(part)} flows, ns-3 {p3:.0f} us, pisanet {p2:.0f} us"
                f" (ratio {p2 / p3:.2f}), share {d / total:.3f}; SYNs dropped {lost3} / {lost2},"
                f" data timeouts {to3} / {to2}"
                + (f"; flows {', '.join(map(str, part))}" if len(part) <= 12 else "")
            )


def drops_view(
    s3: dict[int, dict[str, Any]],
    s2: dict[int, dict[str, Any]],
    flows: list[dict[str, Any]],
    top: int,
    bin_ms: float,
) -> None:
    """Data segments dropped at s0 -> s1 in each simulator: the bins of
    BIN_MS where either dropped more than 50, then the TOP flows with the
    most drops beyond ns-3's, with their drops per bin."""

    def bins(times: list[float]) -> dict[int, int]:
        out: dict[int, int] = defaultdict(int)
        for t in times:
            out[int(t // (bin_ms * 1000))] += 1
        return out

    t3 = [t for s in s3.values() for t in s["drop_us"]]
    t2 = [t for s in s2.values() for t in s["drop_us"]]
    print(f"data segments dropped at s0->s1: ns-3 {len(t3)}, pisanet {len(t2)}")
    b3, b2 = bins(t3), bins(t2)
    busy = sorted(k for k in set(b3) | set(b2) if max(b3.get(k, 0), b2.get(k, 0)) > 50)
    print(f"{bin_ms:g} ms bins with more than 50 in either (from ms: ns-3 / pisanet):")
    print("  " + ", ".join(f"{k * bin_ms:g}: {b3.get(k, 0)} / {b2.get(k, 0)}" for k in busy))
    extra = sorted(s2, key=lambda i: -(s2[i]["drops"] - s3[i]["drops"]))[:top]
    for i in extra:
        f = flows[i]
        p3, p2 = bins(s3[i]["drop_us"]), bins(s2[i]["drop_us"])
        per = ", ".join(
            f"{k * bin_ms:g}: {p3.get(k, 0)} / {p2.get(k, 0)}" for k in sorted(set(p3) | set(p2))
        )
        print(
            f"  flow {i} h{f['src']}->h{f['dst']} {f['bytes']} B from {f['start_us'] / 1000:.1f} ms:"
            f" ns-3 {s3[i]['drops']}, pisanet {s2[i]['drops']}; per bin {per}"
        )


def syn_text(syns: list[tuple[float, Any]], sent: list[float]) -> str:
    out = []
    for k, (t, q) in enumerate(syns):
        wait = f", NIC {max(0.0, t - sent[k] - LINK_US):.0f} us" if k < len(sent) else ""
        out.append(f"{t:.1f} {'dropped' if q == 'drop' else f'q {q}'}{wait}")
    return "; ".join(out) or "none at the port"


def main() -> None:
    ap = traces.parser(__doc__, "dctcp datamining 0.3", full=True)
    ap.add_argument("--load", required=True, help="ns-3's trace (trace_marks.py --save)")
    ap.add_argument("--flows", default="", help="flow ids, comma-separated")
    ap.add_argument("--top", type=int, default=8, help="flows per class (without --flows)")
    ap.add_argument("--port", type=int, default=8, help="ns-3's queue disc of s0 -> s1")
    ap.add_argument("--set", action="append", default=[], help="pisanet KEY=VALUE")
    ap.add_argument("--split", action="store_true", help="each class's flows by what happened")
    ap.add_argument("--nic-us", type=float, default=1000.0, help="a long NIC wait (--split)")
    ap.add_argument(
        "--drops", type=int, default=0, help="the N flows with the most extra drops, and when"
    )
    ap.add_argument("--bin-ms", type=float, default=50.0, help="bin for --drops (ms)")
    args = ap.parse_args()
    sc = traces.scenario(args.scenario, args.full)
    flows = xc.flow_list(sc)
    xc.CACHED_ONLY = True
    cached = xc.run_ns3(sc, flows, {})
    if cached is None:
        raise SystemExit("trace_flows: no stored ns-3 run of this flow list")
    fct3 = [float(x) for x in cached["fct_us"]]
    # A packet trace of every flow, and the per-flow loss counters.
    r, tr = traces.pisanet_traced(
        sc, flows, args.set, list(range(len(flows))), 100_000_000, flow_stats=True
    )
    fct2 = r.flows.sort_values("id")["fct"].tolist()
    if args.flows:
        want = [int(x) for x in args.flows.split(",")]
    else:
        want = []
        for _name, lo, hi in xc.CLASSES:
            idx = [i for i, f in enumerate(flows) if lo <= f["bytes"] < hi]
            want += sorted(idx, key=lambda i: -abs(fct2[i] - fct3[i]))[: args.top]
    every = set(range(len(flows))) if args.split or args.drops else set(want)
    s3 = ns3_story(Path(args.load), flows, every, args.port)
    s2 = pisanet_story(r, tr, flows, every)
    if args.drops:
        for i in every:
            # A flow with nothing traced at the port in pisanet.
            s2.setdefault(i, {"drops": 0, "drop_us": []})
        drops_view(s3, s2, flows, args.drops, args.bin_ms)
        print()
    if args.split:
        split(flows, fct3, fct2, s3, s2, args.nic_us)
        print()
    for i in want:
        f = flows[i]
        a, b = s3[i], s2[i]
        print(
            f"flow {i} h{f['src']}->h{f['dst']} {f['bytes']} B from {f['start_us']:.1f} us:"
            f" ns-3 {fct3[i]:.0f} us, pisanet {fct2[i]:.0f} us"
        )
        # ns-3 resends a SYN ConnTimeout (3 ms) after the last, doubling.
        sent3 = [f["start_us"] + CONN_TIMEOUT_US * (2**k - 1) for k in range(len(a["syn"]))]
        print(f"  ns-3 SYNs at s0->s1: {syn_text(a['syn'], sent3)}")
        print(f"  pisanet SYNs at s0->s1: {syn_text(b['syn'], b['syn_sent'])}")
        for name, s in (("ns-3", a), ("pisanet", b)):
            hs = f"{s['first_tx'] - f['start_us']:.0f} us" if s["first_tx"] is not None else "-"
            extra = (
                f"timeouts {len(s['loss'])}"
                + "".join(f" [{t:.1f}, RTO {r:.0f} us]" for t, r in s["loss"])
                + f", recoveries {s['recov']}, ECN cuts {s['cuts']}"
                if name == "ns-3"
                else f"timeouts {s['timeouts']}, fast retransmits {s['fast']},"
                f" NIC at start {s['nic_kb']:.1f} KB"
            )
            print(
                f"  {name}: first data {hs} after start; new {s['new']}, resent {s['resent']},"
                f" at s0->s1 dropped {s['drops']}, marked {s['marks']}; {extra}"
            )


if __name__ == "__main__":
    main()
