"""Where the ECN marks of a switch port come from, in ns-3 and pisanet (issue 19).

    nice -n 5 .venv/bin/python experiments/crosscheck/trace_marks.py \\
        [--scenario "dctcp incast 16:1"] [--port 0] [--save T] [--load T] \\
        [--ns3 KEY=VALUE ...] [--set KEY=VALUE ...]

Runs the scenario's `--quick` flow list in ns-3 (ns3_sim.py with its
per-socket trace, `trace_qdisc`, `trace_qlen` for switch port `--port` (in
link order: 0 is the incast's port to h0, 8 the dumbbell's s0 -> s1) and
`trace_alpha`) and in pisanet ns-3-like (crosscheck.NS3_LIKE, a packet trace
of every flow), and prints per incast round (per 10 ms window on a dumbbell)
for that port: packets arriving, those arriving to >= K packets queued,
marks, drops, the time the queue spends at >= K and its time-weighted mean
while busy; and over the run, the arrivals by queue length at arrival, and
for the senders: data segments sent, ECN cuts (ns-3: entries into CA_CWR),
ACKs with ECE (ns-3) / CE data packets delivered (pisanet, each ACKed with
ECE), and ns-3's DCTCP alpha at the end of each observation window.

The queue is what waits at the port: ns-3's queue-disc length (its device
holds one more packet while it transmits), pisanet's packets not yet on the
wire. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import crosscheck as xc
import numpy as np

K = xc.K_PKTS
# ns3_sim.py's `dctcp_rules` (`--ns3-rules alpha,ca`): pisanet's DCTCP rules in ns-3.
RULES: dict[str, bool] = {}


class Port:
    """One port's queue over time: arrivals (with the queue they found),
    marks and drops, from a stream of events in time order."""

    def __init__(self) -> None:
        self.q = 0
        self.last_t = 0.0
        # Per window: [arrivals, arrivals to >= K, marks, drops, us at >= K,
        # queue x us while busy, busy us, max queue].
        self.win: dict[int, list[float]] = defaultdict(lambda: [0.0] * 8)
        self.hist: Counter[int] = Counter()

    def advance(self, t: float, window: Any) -> None:
        dt = t - self.last_t
        if dt > 0 and self.q > 0:
            w = self.win[window(self.last_t)]
            w[6] += dt
            w[5] += self.q * dt
            if self.q >= K:
                w[4] += dt
        self.last_t = t

    def arrive(self, t: float, window: Any, data: bool) -> None:
        self.advance(t, window)
        if data:
            w = self.win[window(t)]
            w[0] += 1
            if self.q >= K:
                w[1] += 1
            self.hist[min(self.q // 5 * 5, 100)] += 1

    def set_q(self, t: float, window: Any, q: int) -> None:
        self.advance(t, window)
        self.q = q
        w = self.win[window(t)]
        w[7] = max(w[7], q)


def ns3_run(sc: xc.Scenario, flows: list[dict[str, Any]], port: int, extra: dict[str, str]) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.txt"
        spec = {
            **xc.ns3_spec(sc.kind, sc.cc, flows, extra, flows[-1]["start_us"] / 1e6 + 5.0),
            "trace": str(trace),
            "trace_qdisc": True,
            "trace_qlen": [port],
            "trace_alpha": True,
        }
        if RULES:
            spec["dctcp_rules"] = RULES
        res = xc.run_ns3_spec(spec, Path(tmp))
        print(f"ns-3: drops {res['drops']}, marks {res['ecn_marks']}, {res['reasons']}")
        print(f"ns-3 FCT by class (flows, mean us, p99 us): {fct_classes(flows, res['fct_us'])}")
        return trace.read_text()


def fct_classes(flows: list[dict[str, Any]], fct: list[float]) -> str:
    return ", ".join(
        f"{name} {n} {m:.0f} {p:.0f}"
        for (name, _lo, _hi), (n, m, p) in zip(xc.CLASSES, xc.class_stats(flows, fct), strict=True)
        if n
    )


def ns3_side(sc: xc.Scenario, text: str, port: int) -> tuple[Port, dict[str, Any]]:
    window = window_of(sc)
    p = Port()
    ctx_port = f"qdisc{port}"
    senders: dict[str, Any] = {
        "tx": 0,
        "cuts": 0,
        "rx": 0,
        "rxe": 0,
        "alpha": [],
        "cut_cwnd": [],
        "marks_all": 0,
    }
    pending_cut: dict[str, bool] = {}
    rows: list[tuple[float, str, list[str]]] = []
    for ln in text.splitlines():
        f = ln.split(" ")
        rows.append((int(f[0]) / 1000.0, f[1], f[2:]))
    # A drop and the qlen change of one arrival share a time stamp; the
    # trace is already in event order (one simulator thread).
    for t, ctx, ev in rows:
        kind = ev[0]
        if ctx == ctx_port:
            if kind == "qlen":
                old, new = int(ev[1]), int(ev[2])
                if new > old:
                    p.arrive(t, window, True)
                p.set_q(t, window, new)
            elif kind == "qdrop":
                p.arrive(t, window, int(ev[5]) > 0)
                p.win[window(t)][3] += 1
            elif kind == "qmark":
                p.win[window(t)][2] += 1
            continue
        if kind == "qmark":
            senders["marks_all"] += 1
        if not ctx.startswith("/NodeList/"):
            continue
        if kind == "tx":
            senders["tx"] += 1
        elif kind == "rx" and ev[2] == "0":
            senders["rx"] += 1
        elif kind == "rxe" and ev[2] == "0":
            senders["rxe"] += 1
        elif kind == "cong" and ev[2] == "2" and ev[1] != "2":
            senders["cuts"] += 1
            pending_cut[ctx] = True
        elif kind == "cwnd" and pending_cut.pop(ctx, False):
            senders["cut_cwnd"].append((int(ev[1]), int(ev[2])))
        elif kind == "alpha":
            senders["alpha"].append((t, ctx, int(ev[1]), int(ev[2]), int(ev[3]) / 1e6))
    return p, senders


def replay_alpha(text: str, g: float = 1 / 16) -> None:
    """ns-3's senders' ACK streams through two DCTCP estimators: ns-3's
    (`TcpDctcp::PktsAcked`: an observation window ends when the ACK reaches
    `m_nextSeq`, set at each end to `m_nextTxSequence`, one past the last
    segment sent, a resent one included) and pisanet's (dctcp.rs: it ends
    when `snd_una` passes `window_end`, set to `snd_nxt`, which the
    reno-scoreboard sender keeps at the highest byte sent); alpha at each
    ECN cut (entry into CA_CWR) under each, and the windows' sizes."""
    socks: dict[str, dict[str, Any]] = {}
    for ln in text.splitlines():
        f = ln.split(" ")
        ctx, ev = f[1], f[2]
        if not ctx.startswith("/NodeList/") or ctx.startswith("/NodeList/0/"):
            continue
        if ev not in ("tx", "rx", "rxe", "cong", "alpha"):
            continue
        k = socks.setdefault(
            ctx,
            {
                "next_tx": 0,
                "high": 0,
                "una": None,
                # per rule: [alpha, end, acked, marked, started, windows, acked sum]
                "ns3": [1.0, 0, 0, 0, False, 0, 0],
                "pisa": [1.0, 0, 0, 0, True, 0, 0],
                "cuts": [],
                "traced": [],
            },
        )
        if ev == "tx":
            end = int(f[3]) + int(f[4])
            k["next_tx"] = end
            k["high"] = max(k["high"], end)
        elif ev in ("rx", "rxe") and f[4] == "0":
            ack = int(f[3])
            if k["una"] is None:
                k["una"] = ack
                continue
            acked = max(0, ack - k["una"])
            if acked == 0:
                acked = 1448  # a duplicate ACK: one segment (PktsAcked(1))
            k["una"] = max(k["una"], ack)
            for rule in ("ns3", "pisa"):
                st = k[rule]
                st[2] += acked
                if ev == "rxe":
                    st[3] += acked
                if rule == "ns3" and not st[4]:
                    st[1], st[4] = k["next_tx"], True
                done = k["una"] >= st[1] if rule == "ns3" else k["una"] > st[1]
                if done:
                    st[0] = (1 - g) * st[0] + g * (st[3] / st[2] if st[2] else 0.0)
                    st[5] += 1
                    st[6] += st[2]
                    st[1] = k["next_tx"] if rule == "ns3" else k["high"]
                    st[2] = st[3] = 0
        elif ev == "cong" and f[4] == "2" and f[3] != "2":
            k["cuts"].append((k["ns3"][0], k["pisa"][0]))
        elif ev == "alpha":
            k["traced"].append(int(f[5]) / 1e6)
    cuts = [c for k in socks.values() for c in k["cuts"]]
    a3 = np.array([c[0] for c in cuts])
    ap = np.array([c[1] for c in cuts])
    w3 = sum(k["ns3"][5] for k in socks.values())
    wp = sum(k["pisa"][5] for k in socks.values())
    b3 = sum(k["ns3"][6] for k in socks.values())
    bp = sum(k["pisa"][6] for k in socks.values())
    n_traced = sum(len(k["traced"]) for k in socks.values())
    print(
        f"  replay of ns-3's ACKs: ns-3's rule {w3} windows ({n_traced} traced),"
        f" mean {b3 / max(w3, 1) / 1448:.2f} segments; pisanet's rule {wp} windows,"
        f" mean {bp / max(wp, 1) / 1448:.2f} segments"
    )
    print(
        f"  alpha at the {len(cuts)} ECN cuts: ns-3's rule mean {a3.mean():.3f},"
        f" pisanet's rule {ap.mean():.3f}; cut factor (1 - alpha / 2)"
        f" {np.mean(1 - a3 / 2):.3f} / {np.mean(1 - ap / 2):.3f}"
    )


def replay_growth(text: str) -> None:
    """ns-3's congestion-avoidance growth against pisanet's rule on the same
    ACKs: ns-3's `TcpLinuxReno::CongestionAvoidance` adds a segment per
    floor(cwnd / SMSS) segments acknowledged (its count `m_cWndCnt` kept
    across cuts); pisanet's NewReno adds one per cwnd bytes acknowledged
    (`ca_bytes_acked`, reset at each cut). Over ns-3's ACKs in CA_OPEN with
    cwnd >= ssthresh: segments ns-3 added, and what cwnd-bytes counting
    would add on those ACKs (sum of acked / cwnd)."""
    socks: dict[str, dict[str, Any]] = {}
    added = 0.0
    pis = 0.0
    acks = 0
    for ln in text.splitlines():
        f = ln.split(" ")
        ctx, ev = f[1], f[2]
        if not ctx.startswith("/NodeList/") or ctx.startswith("/NodeList/0/"):
            continue
        k = socks.setdefault(ctx, {"cwnd": 0, "ssth": 1 << 31, "cong": 0, "una": None})
        if ev == "cwnd":
            old, new = int(f[3]), int(f[4])
            if k["cong"] == 0 and old >= k["ssth"] and new > old:
                added += (new - old) / 1448
            k["cwnd"] = new
        elif ev == "ssth":
            k["ssth"] = int(f[4])
        elif ev == "cong":
            k["cong"] = int(f[4])
        elif ev in ("rx", "rxe") and f[4] == "0":
            ack = int(f[3])
            una = k["una"]
            if una is not None and ack > una and k["cong"] == 0 and k["cwnd"] >= k["ssth"]:
                pis += (ack - una) / max(k["cwnd"], 1)
                acks += 1
            k["una"] = ack if k["una"] is None else max(k["una"], ack)
    print(
        f"  congestion avoidance: {acks} ACKs; ns-3 added {added:.0f} segments,"
        f" cwnd-bytes counting would add {pis:.0f} ({added / max(pis, 1e-9):.2f}x)"
    )


def window_of(sc: xc.Scenario) -> Any:
    if sc.kind == "incast":
        return lambda t: max(0, int((t - 1000) // 10_000))
    return lambda t: int(t // 10_000)


def pisanet_side(
    sc: xc.Scenario, flows: list[dict[str, Any]], port_name: str, sets: list[str]
) -> tuple[Port, dict[str, Any]]:
    over: dict[str, Any] = xc.ns3_like_overrides(sc.cc)
    r = xc.run_custom(
        sc.kind,
        sc.cc,
        flows,
        over,
        sets,
        max_sim_time_ms=flows[-1]["start_us"] / 1000 + 5000,
        metrics={"trace": {"flows": list(range(len(flows))), "max_rows": 20_000_000}},
    )
    print(
        f"pisanet: drops {r.summary['packets']['dropped']}, marks {r.summary['packets']['ecn_marked']}"
    )
    fl = r.flows.sort_values("id")
    print(
        f"pisanet FCT by class (flows, mean us, p99 us): {fct_classes(flows, fl['fct'].tolist())}"
    )
    tr = r.trace
    assert tr is not None
    window = window_of(sc)
    p = Port()
    at = tr[tr["port"] == port_name]
    for row in at.itertuples():
        t = float(row.time)
        if row.event in ("enqueue", "ecn_mark"):
            p.arrive(t, window, row.size > 100)
            if row.event == "ecn_mark":
                p.win[window(t)][2] += 1
            p.set_q(t, window, p.q + 1)
        elif row.event == "dequeue":
            p.set_q(t, window, p.q - 1)
        elif row.event == "drop":
            p.arrive(t, window, row.size > 100)
            p.win[window(t)][3] += 1
    # Data segments sent by the hosts (each host's own port), and data
    # packets that reached their receiver marked CE (anywhere).
    data = tr[tr["size"] > 100]
    sent = data[(data["event"].isin(["enqueue", "drop"])) & (data["port"].str.startswith("h"))]
    marked = set(data.loc[data["event"] == "ecn_mark", "packet"].tolist())
    dropped = set(data.loc[data["event"] == "drop", "packet"].tolist())
    senders = {
        "tx": len(sent),
        "ce_delivered": len(marked - dropped),
        "marks_all": int((tr["event"] == "ecn_mark").sum()),
    }
    return p, senders


def report(name: str, p: Port, senders: dict[str, Any]) -> None:
    print(f"\n{name}: per window (arrivals = data packets reaching the port)")
    print("  win  arrivals  at>=K  marks  drops  us_at>=K  mean_q_busy  busy_us  max_q")
    tot = [0.0] * 8
    for w in sorted(p.win):
        v = p.win[w]
        tot = [a + b for a, b in zip(tot, v, strict=True)]
        mq = v[5] / v[6] if v[6] else 0.0
        print(
            f"  {w:3d} {v[0]:9.0f} {v[1]:6.0f} {v[2]:6.0f} {v[3]:6.0f} {v[4]:9.1f}"
            f" {mq:12.1f} {v[6]:8.1f} {v[7]:6.0f}"
        )
    mq = tot[5] / tot[6] if tot[6] else 0.0
    print(
        f"  all {tot[0]:9.0f} {tot[1]:6.0f} {tot[2]:6.0f} {tot[3]:6.0f} {tot[4]:9.1f}"
        f" {mq:12.1f} {tot[6]:8.1f}"
    )
    n = sum(p.hist.values())
    print("  data arrivals by queue found (bucket of 5 packets): share")
    print("   " + " ".join(f"{b}:{p.hist[b] / n:.3f}" for b in sorted(p.hist)))
    al = senders.pop("alpha", None)
    cuts = senders.pop("cut_cwnd", None)
    print(f"  senders: {senders}")
    if cuts:
        before = np.array([c[0] for c in cuts], dtype=float)
        after = np.array([c[1] for c in cuts], dtype=float)
        print(
            f"  ECN cuts: {len(cuts)}, cwnd before mean {before.mean():.0f} B, after"
            f" {after.mean():.0f} B (ratio {np.mean(after / np.maximum(before, 1)):.3f})"
        )
    if al:
        a = np.array([x[4] for x in al])
        fr = np.array([x[2] / x[3] if x[3] else 0.0 for x in al])
        print(
            f"  alpha updates: {len(al)}, alpha mean {a.mean():.3f} (p10 {np.percentile(a, 10):.3f},"
            f" p90 {np.percentile(a, 90):.3f}); marked fraction per window mean {fr.mean():.3f}"
        )


def switch_port_name(kind: str, port: int) -> str:
    """pisanet's name of ns3_sim.py's switch queue disc number PORT: one per
    switch end of each link, in link order (on the dumbbell 0-7 the host
    ports, 8 s0 -> s1, 9 s1 -> s0; on the incast i is s0 -> hi)."""
    nodes, links = xc.topology(kind)
    switches = {n["name"] for n in nodes if n["kind"] == "switch"}
    ends = [
        (end, other)
        for lk in links
        for end, other in ((lk["a"], lk["b"]), (lk["b"], lk["a"]))
        if end in switches
    ]
    end, other = ends[port]
    return f"{end}->{other}"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--scenario", default="dctcp incast 16:1")
    ap.add_argument("--port", type=int, default=-1, help="switch port (link order)")
    ap.add_argument("--ns3", action="append", default=[], help="ns-3 ATTR=VALUE")
    ap.add_argument("--set", action="append", default=[], help="pisanet KEY=VALUE")
    ap.add_argument("--save", help="write ns-3's trace here")
    ap.add_argument("--load", help="read ns-3's trace from here (no ns-3 run)")
    ap.add_argument("--skip-ns3", action="store_true")
    ap.add_argument(
        "--jitter-ns", type=int, default=0, help="crosscheck.jittered: starts up to J ns later"
    )
    ap.add_argument("--draw", type=int, default=1, help="the jitter's draw")
    ap.add_argument(
        "--ns3-rules",
        default="",
        help="alpha,ca: ns-3's DCTCP with pisanet's alpha window and/or window growth",
    )
    args = ap.parse_args()
    for r in filter(None, args.ns3_rules.split(",")):
        RULES[r] = True
    sc = next(s for s in xc.scenarios(True) if s.name == args.scenario)
    flows = xc.flow_list(sc)
    if args.jitter_ns:
        flows = xc.jittered(flows, args.jitter_ns, args.draw)
    port = args.port if args.port >= 0 else (0 if sc.kind == "incast" else 8)
    port_name = switch_port_name(sc.kind, port)
    print(f"port {port}: {port_name}")
    if not args.skip_ns3:
        if args.load:
            text = Path(args.load).read_text()
        else:
            text = ns3_run(sc, flows, port, dict(kv.split("=", 1) for kv in args.ns3))
            if args.save:
                Path(args.save).write_text(text)
        p, s = ns3_side(sc, text, port)
        report("ns-3", p, s)
        replay_alpha(text)
        replay_growth(text)
    p2, s2 = pisanet_side(sc, flows, port_name, args.set)
    report("pisanet ns-3-like", p2, s2)


if __name__ == "__main__":
    main()
