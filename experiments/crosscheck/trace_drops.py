"""Where the switch drops fall, in ns-3 and pisanet ns-3-like (issue 19).

    nice -n 5 .venv/bin/python experiments/crosscheck/trace_drops.py \\
        --scenario "newreno datamining 0.3" [--full] --load T \\
        [--window-us 10000] [--top 10] [--cycle-resent 1000] [--set KEY=VALUE ...]

Reads an ns-3 trace that `trace_marks.py --save T` wrote (its per-socket
trace and `trace_qdisc`; the same `--scenario` and `--full`) and runs
pisanet ns-3-like (crosscheck.NS3_LIKE plus `--set`) on the same flow list
with a packet trace of every flow. Prints, for both:

* the drops per switch port by packet kind: SYN, SYN-ACK or pure ACK,
  data segments sent for the first time and resent ones (a segment not
  beyond the highest byte its flow had sent);
* the data drops by the sender's state when it sent the dropped segment
  (ns-3 only, from its per-socket trace: CA_OPEN in slow start (cwnd <
  ssthresh) or in congestion avoidance, CA_DISORDER, CA_RECOVERY, CA_LOSS);
* per flow-size class: flows, data drops (new / resent), SYNs dropped,
  segments sent (new / resent), timeouts and fast recoveries (ns-3:
  entries into CA_LOSS (`rtos`), every doubling of the RTO (`timeouts`)
  and entries into CA_RECOVERY; pisanet: its per-flow counters, where
  `rtos` and `timeouts` are both every timeout);
* the windows grouped by whether a flow resends `--cycle-resent` segments
  in them (finding 15's cycle resends at about the line's rate), with the
  drops in each group, and how concentrated the drops are;
* the `--top` flows with the most extra drops in pisanet, with those
  counts and FCTs, and the `--window-us` windows with the most extra
  drops.

The ns-3 trace is read a line at a time. Not part of the test suite.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import crosscheck as xc
import numpy as np
import trace_marks as tm
import traces

STATES = ("open-ss", "open-ca", "disorder", "cwr", "recovery", "loss")
KINDS = ("syn", "ack", "data-new", "data-resent")


def class_of(nbytes: int) -> str:
    for name, lo, hi in xc.CLASSES:
        if lo <= nbytes < hi:
            return str(name)
    return "?"


def ns3_side(
    sc: xc.Scenario, trace: Path, flows: list[dict[str, Any]], window_us: int
) -> dict[str, Any]:
    """ns-3's drops from the trace: per port and kind, per sender state,
    per flow, per window; and per flow segments sent, timeouts, recoveries."""
    senders = traces.Senders(flows)
    by_port: Counter[tuple[str, str]] = Counter()
    by_state: Counter[str] = Counter()
    by_state_new: Counter[str] = Counter()
    per_flow: dict[int, Counter[str]] = defaultdict(Counter)
    per_win: Counter[int] = Counter()
    # Per (window, flow): ACT counts (see below).
    act: dict[tuple[int, int], Counter[str]] = defaultdict(Counter)
    state: dict[int, int] = {}
    cwnd: dict[int, int] = {}
    ssth: dict[int, int] = {}
    # Each flow's last send of each sequence number: (resent, state name).
    sent: dict[int, dict[int, tuple[float, bool, str]]] = defaultdict(dict)
    unknown = 0
    for t, ctx, ev, f, i, resent in senders.read(trace):
        if ev == "qdrop":
            port = ctx.replace("qdisc", "")
            flags, sport, dport, seq, n = int(f[4]), int(f[5]), int(f[6]), int(f[7]), int(f[8])
            per_win[int(t // window_us)] += 1
            if dport != traces.SINK_PORT:
                by_port[(port, "ack")] += 1
                continue
            if flags & 2:
                by_port[(port, "syn")] += 1
                waiting = senders.syn_waiting(sport, t)
                if waiting:
                    per_flow[senders.last_started(waiting)]["syn_drops"] += 1
                continue
            if n == 0:
                by_port[(port, "ack")] += 1
                continue
            (last, resent, st), i = senders.last_sender(sent, sport, seq, (-1.0, False, "?"))
            if last < 0:
                unknown += 1
                continue
            kind = "data-resent" if resent else "data-new"
            by_port[(port, kind)] += 1
            by_state[st] += 1
            if not resent:
                by_state_new[st] += 1
            per_flow[i]["drops"] += 1
            per_flow[i]["drops_resent"] += resent
            act[(int(t // window_us), i)]["drops"] += 1
            act[(int(t // window_us), i)]["drops_resent"] += resent
            continue
        if i < 0:
            continue
        if ev == "tx":
            seq = int(f[3])
            s = state.get(i, 0)
            if s == 0:
                name = "open-ss" if cwnd.get(i, 0) < ssth.get(i, 1 << 62) else "open-ca"
            else:
                name = ("open", "disorder", "cwr", "recovery", "loss")[s]
            sent[i][seq] = (t, resent, name)
            w = int(t // window_us)
            if resent:
                per_flow[i]["resent"] += 1
                act[(w, i)]["resent"] += 1
            else:
                per_flow[i]["new"] += 1
                act[(w, i)]["new"] += 1
        elif ev == "cong":
            old, new = int(f[3]), int(f[4])
            state[i] = new
            if new != old and new == 4:
                per_flow[i]["rtos"] += 1
                act[(int(t // window_us), i)]["rtos"] += 1
            elif new != old and new == 3:
                per_flow[i]["recov"] += 1
                act[(int(t // window_us), i)]["recov"] += 1
        elif ev == "rto" and int(f[4]) == 2 * int(f[3]):
            # `ReTxTimeout` doubles m_rto: every timeout, repeated ones in
            # CA_LOSS included (an entry into CA_LOSS counts only the first).
            per_flow[i]["timeouts"] += 1
        elif ev == "cwnd":
            cwnd[i] = int(f[4])
        elif ev == "ssth":
            ssth[i] = int(f[4])
    if unknown:
        print(f"ns-3: {unknown} data drops of no known send (not counted)")
    return {
        "by_port": by_port,
        "by_state": by_state,
        "by_state_new": by_state_new,
        "per_flow": per_flow,
        "per_win": per_win,
        "act": act,
    }


def pisanet_side(
    sc: xc.Scenario, flows: list[dict[str, Any]], sets: list[str], window_us: int
) -> dict[str, Any]:
    r, tr = traces.pisanet_traced(
        sc, flows, sets, list(range(len(flows))), 200_000_000, flow_stats=True
    )
    print(f"pisanet: drops {r.summary['packets']['dropped']}")
    fl = r.flows.sort_values("id").reset_index(drop=True)
    data = tr[tr["size"] > 100]
    out = data[data["event"].isin(["enqueue", "drop"]) & data["port"].str.startswith("h")]
    out = out.sort_values(["time"], kind="stable")
    seq = out["seq"].to_numpy()
    before = out.groupby("flow")["seq"].cummax().groupby(out["flow"]).shift(1).to_numpy()
    resent = seq <= np.nan_to_num(before, nan=-1)
    resent_of = dict(zip(out["packet"].to_numpy(), resent, strict=True))
    per_flow: dict[int, Counter[str]] = defaultdict(Counter)
    act: dict[tuple[int, int], Counter[str]] = defaultdict(Counter)
    for t, i, r_ in zip(out["time"].to_numpy(), out["flow"].to_numpy(), resent, strict=True):
        per_flow[int(i)]["resent" if r_ else "new"] += 1
        act[(int(float(t) // window_us), int(i))]["resent" if r_ else "new"] += 1
    drops = tr[(tr["event"] == "drop") & ~tr["port"].str.startswith("h")]
    by_port: Counter[tuple[str, str]] = Counter()
    per_win: Counter[int] = Counter()
    for t, port, pkt, i, sz, sq in zip(
        drops["time"].to_numpy(),
        drops["port"].to_numpy(),
        drops["packet"].to_numpy(),
        drops["flow"].to_numpy(),
        drops["size"].to_numpy(),
        drops["seq"].to_numpy(),
        strict=True,
    ):
        per_win[int(float(t) // window_us)] += 1
        if sz <= 100:
            # A SYN: a minimum frame with sequence number 0 (as
            # trace_marks.py) on a port towards the receivers (SYN-ACKs and
            # the receivers' ACKs go the other way).
            is_syn = sq == 0 and str(port) in SYN_PORTS
            by_port[(str(port), "syn" if is_syn else "ack")] += 1
            if is_syn:
                per_flow[int(i)]["syn_drops"] += 1
            continue
        rs = bool(resent_of.get(pkt, False))
        by_port[(str(port), "data-resent" if rs else "data-new")] += 1
        per_flow[int(i)]["drops"] += 1
        per_flow[int(i)]["drops_resent"] += rs
        act[(int(float(t) // window_us), int(i))]["drops"] += 1
        act[(int(float(t) // window_us), int(i))]["drops_resent"] += rs
    for i, rtos, recov in zip(fl["id"], fl["timeouts"], fl["fast_retransmits"], strict=True):
        per_flow[int(i)]["rtos"] = int(rtos)
        per_flow[int(i)]["timeouts"] = int(rtos)
        per_flow[int(i)]["recov"] = int(recov)
    return {
        "by_port": by_port,
        "per_flow": per_flow,
        "per_win": per_win,
        "act": act,
        "fct": fl["fct"],
    }


# The ports a SYN crosses on the dumbbell (left hosts to right ones).
SYN_PORTS = {"s0->s1", "s1->h4", "s1->h5", "s1->h6", "s1->h7"}


def port_names(kind: str) -> dict[str, str]:
    """ns3_sim.py's queue-disc numbers to pisanet's port names."""
    out = {}
    for k in range(1000):
        try:
            out[str(k)] = tm.switch_port_name(kind, k)
        except IndexError:
            break
    return out


def main() -> None:
    ap = traces.parser(__doc__, "newreno datamining 0.3", full=True)
    ap.add_argument("--load", required=True, help="ns-3's trace (trace_marks.py --save)")
    ap.add_argument("--window-us", type=int, default=10_000)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument(
        "--cycle-resent",
        type=int,
        default=1000,
        help="a flow resending this many segments in a window marks the window",
    )
    ap.add_argument("--set", action="append", default=[], help="pisanet KEY=VALUE")
    args = ap.parse_args()
    sc = traces.scenario(args.scenario, args.full)
    flows = xc.flow_list(sc)
    names = port_names(sc.kind)
    n3 = ns3_side(sc, Path(args.load), flows, args.window_us)
    n2 = pisanet_side(sc, flows, args.set, args.window_us)
    xc.CACHED_ONLY = True
    cached = xc.run_ns3(sc, flows, {})
    fct3 = [float(x) for x in cached["fct_us"]] if cached else [float("nan")] * len(flows)

    print("\ndrops per switch port and kind (ns-3 | pisanet):")
    ports = sorted({names.get(p, p) for p, _ in n3["by_port"]} | {p for p, _ in n2["by_port"]})
    inv = {v: k for k, v in names.items()}
    for p in ports:
        c3 = [n3["by_port"][(inv.get(p, p), k)] for k in KINDS]
        c2 = [n2["by_port"][(p, k)] for k in KINDS]
        print(
            f"  {p:8s} " + " ".join(f"{k} {a}|{b}" for k, a, b in zip(KINDS, c3, c2, strict=True))
        )
    tot3 = Counter({k: sum(v for (_, kk), v in n3["by_port"].items() if kk == k) for k in KINDS})
    tot2 = Counter({k: sum(v for (_, kk), v in n2["by_port"].items() if kk == k) for k in KINDS})
    print("  total    " + " ".join(f"{k} {tot3[k]}|{tot2[k]}" for k in KINDS))
    print("\nns-3's data drops by the sender's state at the send (all | new data only):")
    for s in STATES:
        print(f"  {s:9s} {n3['by_state'][s]:7d} {n3['by_state_new'][s]:7d}")

    cols = ("drops", "drops_resent", "syn_drops", "new", "resent", "rtos", "timeouts", "recov")
    print("\nper class (ns-3 | pisanet): flows, " + ", ".join(cols))
    for name, _lo, _hi in xc.CLASSES:
        ids = [i for i, f in enumerate(flows) if class_of(f["bytes"]) == name]
        if not ids:
            continue
        s3 = [sum(n3["per_flow"][i][c] for i in ids) for c in cols]
        s2 = [sum(n2["per_flow"][i][c] for i in ids) for c in cols]
        print(
            f"  {name:14s} {len(ids):4d} "
            + " ".join(f"{c} {a}|{b}" for c, a, b in zip(cols, s3, s2, strict=True))
        )

    print(
        f"\nwindows by whether a flow resends >= {args.cycle_resent} segments in them"
        " (ns-3 | pisanet): windows, drops (data new / resent), segments resent"
    )
    for side, n in (("ns-3", n3), ("pisanet", n2)):
        hot = {w for (w, _i), v in n["act"].items() if v["resent"] >= args.cycle_resent}
        for name, sel in (("a flow resends so", True), ("no flow does", False)):
            ws = [w for w in set(n["per_win"]) | hot if (w in hot) == sel]
            dn = sum(
                v["drops"] - v["drops_resent"]
                for (w, _i), v in n["act"].items()
                if (w in hot) == sel
            )
            dr = sum(v["drops_resent"] for (w, _i), v in n["act"].items() if (w in hot) == sel)
            rs = sum(v["resent"] for (w, _i), v in n["act"].items() if (w in hot) == sel)
            print(f"  {side:8s} {name:18s}: {len(ws):4d} windows, drops {dn}/{dr}, resent {rs}")
    ndrops = {
        side: sorted(n["per_win"].values(), reverse=True)
        for side, n in (("ns-3", n3), ("pisanet", n2))
    }
    for side, v in ndrops.items():
        tot = sum(v)
        print(
            f"  {side}: windows with drops {sum(1 for x in v if x)}, the 10 / 20 with most hold"
            f" {sum(v[:10]) / tot:.2f} / {sum(v[:20]) / tot:.2f} of {tot}; with >= 1000: "
            f"{sum(1 for x in v if x >= 1000)} windows, {sum(x for x in v if x >= 1000)} drops"
        )

    print(f"\nthe {args.top} flows with the most extra drops in pisanet:")
    print(
        "  flow src bytes  start_us  | " + " ".join(cols) + " (ns-3|pisanet) | FCT us ns-3|pisanet"
    )
    extra = {i: n2["per_flow"][i]["drops"] - n3["per_flow"][i]["drops"] for i in range(len(flows))}
    for i in sorted(extra, key=lambda i: -extra[i])[: args.top]:
        f = flows[i]
        print(
            f"  {i:4d} h{f['src']} {f['bytes']:9d} {f['start_us']:9.0f} | "
            + " ".join(f"{n3['per_flow'][i][c]}|{n2['per_flow'][i][c]}" for c in cols)
            + f" | {fct3[i]:.0f}|{float(n2['fct'][i]):.0f}"
        )
    print(f"  sum of extra drops over all flows: {sum(extra.values())}")

    print(f"\nthe {args.top} windows ({args.window_us} us) with the most extra drops in pisanet:")
    wins = set(n3["per_win"]) | set(n2["per_win"])
    acols = ("drops", "drops_resent", "new", "resent", "rtos", "recov")
    for w in sorted(wins, key=lambda w: -(n2["per_win"][w] - n3["per_win"][w]))[: args.top]:
        print(
            f"  {w * args.window_us / 1000:9.1f} ms: ns-3 {n3['per_win'][w]}, pisanet {n2['per_win'][w]}"
        )
        busy: set[int] = set()
        for n in (n3, n2):
            busy |= {i for (ww, i), v in n["act"].items() if ww == w and (v["new"] or v["resent"])}
        for i in sorted(busy):
            a3, a2 = n3["act"][(w, i)], n2["act"][(w, i)]
            if not (a3["drops"] or a2["drops"] or a3["new"] + a2["new"] > 100):
                continue
            f = flows[i]
            print(
                f"    flow {i:4d} h{f['src']} {f['bytes']:9d} from {f['start_us'] / 1000:8.1f} ms: "
                + " ".join(f"{c} {a3[c]}|{a2[c]}" for c in acols)
            )


if __name__ == "__main__":
    main()
