"""Where the ECN marks of a switch port come from, in ns-3 and pisanet (issue 19).

    nice -n 5 .venv/bin/python experiments/crosscheck/trace_marks.py \\
        [--scenario "dctcp incast 16:1"] [--full] [--port 0[,N...]] \\
        [--save T] [--load T] [--window-us 10000] [--top 10] [--flows 5] \\
        [--cycle-resent 100] [--ns3 KEY=VALUE ...] [--set KEY=VALUE ...]

Runs the scenario's `--quick` flow list (`--full`: the full-size one,
crosscheck without `--quick`) in ns-3 (ns3_sim.py with its per-socket
trace, `trace_qdisc`, `trace_qlen` for the switch ports `--port` (in link
order: 0 is the incast's port to h0, 8 the dumbbell's s0 -> s1) and
`trace_alpha`) and in pisanet ns-3-like (crosscheck.NS3_LIKE, a packet trace
of every flow), and prints per incast round (per 10 ms window on a
dumbbell, `--window-us`) for each port: packets arriving, those arriving to
>= K packets queued, marks, drops, the time the queue spends at >= K and its
time-weighted mean while busy; and over the run, the arrivals by queue length at arrival, and
for the senders: data segments sent, ECN cuts (ns-3: entries into CA_CWR),
ACKs with ECE (ns-3) / CE data packets delivered (pisanet, each ACKed with
ECE), and ns-3's DCTCP alpha at the end of each observation window.

Then, side by side per port, the `--top` windows where ns-3 marks most
beyond pisanet and the share of ns-3's extra marks the worst windows hold;
for the first port, per worst window the `--flows` flows marked most there
with each simulator's new and resent segments, marks, drops and SYNs
dropped at the port (and ns-3's timeouts, recoveries and ECN cuts); the
windows grouped by whether a flow resends `--cycle-resent` segments or more
in them, in ns-3, in pisanet, in both (finding 15's cycle resends about
410 segments per ms), with the port's counts per group and the flows that
resend so; and the small class (< 100 KB) by the group of windows its
flows start in, and by whether they lost a SYN at the port (ns-3's FCTs
from the run, or with `--load` from the cross-check's stored run).

The ns-3 trace is read a line at a time (the full size's is about 650 MB;
`--save` writes it there directly, so a run that fails later keeps it). The
queue is what waits at the port: ns-3's queue-disc length (its device
holds one more packet while it transmits), pisanet's packets not yet on the
wire. Not part of the test suite.
"""

from __future__ import annotations

import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import crosscheck as xc
import numpy as np
import traces

K = xc.K_PKTS
# ns3_sim.py's `dctcp_rules` (`--ns3-rules alpha,ca`): pisanet's DCTCP rules in ns-3.
RULES: dict[str, bool] = {}
# A dumbbell's window (`--window-us`; us); the incast's is its round.
WINDOW_US = 10_000


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


def ns3_run(
    sc: xc.Scenario,
    flows: list[dict[str, Any]],
    ports: list[int],
    extra: dict[str, str],
    trace: Path,
) -> list[float]:
    """ns-3 on FLOWS with its trace written to TRACE (the queue length of
    switch ports PORTS); its FCTs."""
    spec = xc.ns3_spec(sc.kind, sc.cc, flows, extra, flows[-1]["start_us"] / 1e6 + 5.0)
    if RULES:
        spec["dctcp_rules"] = RULES
    res, _ = traces.ns3_traced(
        spec, trace.resolve(), trace_qdisc=True, trace_qlen=ports, trace_alpha=True
    )
    print(f"ns-3: drops {res['drops']}, marks {res['ecn_marks']}, {res['reasons']}")
    print(f"ns-3 FCT by class (flows, mean us, p99 us): {fct_classes(flows, res['fct_us'])}")
    return [float(x) for x in res["fct_us"]]


def fct_classes(flows: list[dict[str, Any]], fct: list[float]) -> str:
    return ", ".join(
        f"{name} {n} {m:.0f} {p:.0f}"
        for (name, _lo, _hi), (n, m, p) in zip(xc.CLASSES, xc.class_stats(flows, fct), strict=True)
        if n
    )


def ns3_side(
    sc: xc.Scenario, trace: Path, ports: list[int]
) -> tuple[dict[int, Port], dict[str, Any]]:
    window = window_of(sc)
    by_ctx = {f"qdisc{port}": Port() for port in ports}
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
    # A drop and the qlen change of one arrival share a time stamp; the
    # trace is already in event order (one simulator thread).
    for f in traces.trace_lines(trace):
        t, ctx, ev = int(f[0]) / 1000.0, f[1], f[2:]
        kind = ev[0]
        p = by_ctx.get(ctx)
        if p is not None:
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
    return {port: by_ctx[f"qdisc{port}"] for port in ports}, senders


# Per (window, flow) activity columns (`ns3_flows`, `pisanet_flows`): new
# and resent data segments (a segment not beyond the highest byte the flow had
# sent), marks and drops of data segments at the port, SYNs dropped there, and
# in ns-3 RTO expiries (entries into CA_LOSS), fast recoveries (CA_RECOVERY)
# and ECN cuts (CA_CWR).
ACT = ("new", "resent", "marks", "drops", "syn_drops", "rtos", "recov", "cuts")


def ns3_flows(
    sc: xc.Scenario, trace: Path, flows: list[dict[str, Any]], port: int
) -> dict[tuple[int, int], list[int]]:
    """ns-3's per (window, flow) activity (ACT) from its per-socket trace and
    switch port PORT's marks and drops."""
    window = window_of(sc)
    senders = traces.Senders(flows)
    act: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0] * len(ACT))
    # Each flow's last send of each sequence number (traces.Senders.last_sender).
    sent: dict[int, dict[int, float]] = defaultdict(dict)
    ctx_port = f"qdisc{port}"
    syn_shared = syn_none = 0
    for t, ctx, ev, f, i, resent in senders.read(trace):
        if ctx == ctx_port and ev in ("qmark", "qdrop"):
            if int(f[6]) != traces.SINK_PORT:
                continue
            if int(f[4]) & 2:
                # A SYN (TCP flag 0x02): a flow of its port that has started
                # and sent no data yet, the last started if there are several
                # (then which one is not known: counted in `syn_shared`; none:
                # `syn_none`).
                if ev == "qdrop":
                    waiting = senders.syn_waiting(int(f[5]), t)
                    syn_shared += len(waiting) > 1
                    syn_none += not waiting
                    if waiting:
                        act[(window(t), senders.last_started(waiting))][4] += 1
                continue
            if int(f[8]) == 0:
                continue
            last, i = senders.last_sender(sent, int(f[5]), int(f[7]), -1.0)
            if last >= 0:
                act[(window(t), i)][2 if ev == "qmark" else 3] += 1
            continue
        if i < 0:
            continue
        if ev == "tx":
            sent[i][int(f[3])] = t
            act[(window(t), i)][1 if resent else 0] += 1
        elif ev == "cong" and f[3] != f[4]:
            col = {"4": 5, "3": 6, "2": 7}.get(f[4])
            if col is not None:
                act[(window(t), i)][col] += 1
    if syn_shared or syn_none:
        print(
            f"ns-3: SYNs dropped at the port while several flows of their port waited"
            f" {syn_shared}, while none did (not counted) {syn_none}"
        )
    return act


def pisanet_flows(sc: xc.Scenario, tr: Any, port_name: str) -> dict[tuple[int, int], list[int]]:
    """pisanet's per (window, flow) activity (ACT; no RTO, recovery or cut
    counts: its packet trace has none) from its packet trace: segments at the
    senders' NIC ports, marks and drops at PORT_NAME. Its trace has no TCP
    flags: a SYN is a minimum frame (64 B) with sequence number 0, which a
    data segment of 6 B or less at a flow's start would be too."""
    window = window_of(sc)
    act: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0] * len(ACT))
    data = tr[tr["size"] > 100]
    # A data segment entering (or dropped at) its host's NIC is sent; it is
    # resent if its first byte is not beyond the highest first byte sent before.
    out = data[data["event"].isin(["enqueue", "drop"]) & data["port"].str.startswith("h")]
    seq = out["seq"].to_numpy()
    before = out.groupby("flow")["seq"].cummax().groupby(out["flow"]).shift(1).to_numpy()
    resent = seq <= np.nan_to_num(before, nan=-1)
    for t, i, r in zip(out["time"].to_numpy(), out["flow"].to_numpy(), resent, strict=True):
        act[(window(float(t)), int(i))][1 if r else 0] += 1
    here = tr[tr["port"] == port_name]
    syn = here[(here["event"] == "drop") & (here["size"] <= 64) & (here["seq"] == 0)]
    for t, i in zip(syn["time"].to_numpy(), syn["flow"].to_numpy(), strict=True):
        act[(window(float(t)), int(i))][4] += 1
    at = here[here["size"] > 100]
    for t, i, ev in zip(
        at["time"].to_numpy(), at["flow"].to_numpy(), at["event"].to_numpy(), strict=True
    ):
        if ev in ("ecn_mark", "drop"):
            act[(window(float(t)), int(i))][2 if ev == "ecn_mark" else 3] += 1
    return act


def sender_nodes(flows: list[dict[str, Any]]) -> set[str]:
    """ns-3's node numbers (as in a trace context) of the flows' senders:
    hosts are the first nodes, in host order. The receivers' sockets only
    ACK, and the replays below leave them out."""
    return {str(f["src"]) for f in flows}


def replay_alpha(trace: Path, senders: set[str], g: float = 1 / 16) -> None:
    """ns-3's senders' ACK streams through two DCTCP estimators: ns-3's
    (`TcpDctcp::PktsAcked`: an observation window ends when the ACK reaches
    `m_nextSeq`, set at each end to `m_nextTxSequence`, one past the last
    segment sent, a resent one included) and pisanet's (dctcp.rs: it ends
    when `snd_una` passes `window_end`, set to `snd_nxt`, which the
    reno-scoreboard sender keeps at the highest byte sent); alpha at each
    ECN cut (entry into CA_CWR) under each, and the windows' sizes."""
    socks: dict[str, dict[str, Any]] = {}
    for f in traces.trace_lines(trace):
        ctx, ev = f[1], f[2]
        if not ctx.startswith("/NodeList/") or ctx.split("/")[2] not in senders:
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


def replay_growth(trace: Path, senders: set[str]) -> None:
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
    for f in traces.trace_lines(trace):
        ctx, ev = f[1], f[2]
        if not ctx.startswith("/NodeList/") or ctx.split("/")[2] not in senders:
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
    """The window number of a time (us): the incast's round, else WINDOW_US
    long windows (`--window-us`)."""
    if sc.kind == "incast":
        return lambda t: max(0, int((t - 1000) // 10_000))
    return lambda t: int(t // WINDOW_US)


def pisanet_side(
    sc: xc.Scenario, flows: list[dict[str, Any]], port_names: list[str], sets: list[str]
) -> tuple[dict[str, Port], dict[str, Any], Any, list[float]]:
    """pisanet ns-3-like on FLOWS: the ports PORT_NAMES, the senders'
    counts, the packet trace and the FCTs."""
    r, tr = traces.pisanet_traced(sc, flows, sets, list(range(len(flows))), 100_000_000)
    print(
        f"pisanet: drops {r.summary['packets']['dropped']}, marks {r.summary['packets']['ecn_marked']}"
    )
    fl = r.flows.sort_values("id")
    print(
        f"pisanet FCT by class (flows, mean us, p99 us): {fct_classes(flows, fl['fct'].tolist())}"
    )
    window = window_of(sc)
    ports = {name: Port() for name in port_names}
    at = tr[tr["port"].isin(port_names)]
    for row in at.itertuples():
        p = ports[row.port]
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
    return ports, senders, tr, fl["fct"].tolist()


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


def compare(p3: Port, p2: Port, top: int) -> list[int]:
    """ns-3 against pisanet at one port, per window: the windows ranked by
    ns-3's extra marks (ns-3's minus pisanet's), the TOP first, side by side;
    how much of the run's extra the worst windows hold; the rest of the run
    summed. Returns the windows ranked."""
    wins = sorted(set(p3.win) | set(p2.win))
    extra = {w: p3.win[w][2] - p2.win[w][2] for w in wins}
    ranked = sorted(wins, key=lambda w: -extra[w])
    total = sum(extra.values())

    def cells(v: list[float]) -> str:
        mq = v[5] / v[6] if v[6] else 0.0
        return f"{v[0]:8.0f} {v[1]:6.0f} {v[2]:6.0f} {v[3]:5.0f} {mq:6.1f} {v[6]:7.0f}"

    def summed(p: Port, ws: list[int]) -> list[float]:
        return [sum(p.win[w][c] for w in ws) for c in range(7)] + [0.0]

    print(f"\nns-3 against pisanet, per {len(wins)} windows: ns-3 marks {total:+.0f} more")
    head = "arrivals  at>=K  marks drops mean_q busy_us"
    print(f"  win    ns-3: {head} | pisanet: {head} | extra  cum. share")
    cum = 0.0
    for w in ranked[:top]:
        cum += extra[w]
        print(
            f"  {w:4d} {cells(p3.win[w])} | {cells(p2.win[w])} |"
            f" {extra[w]:+6.0f} {cum / total if total else 0.0:6.3f}"
        )
    rest = ranked[top:]
    print(f"  rest {cells(summed(p3, rest))} | {cells(summed(p2, rest))} | {total - cum:+6.0f}")
    if total:
        shares = [
            f"{n}: {sum(extra[w] for w in ranked[:n]) / total:.3f}" for n in (1, 3, 10, 30, 100)
        ]
        print(f"  share of the extra marks in the worst n windows: {', '.join(shares)}")
    more3 = sum(x for x in extra.values() if x > 0)
    more2 = sum(-x for x in extra.values() if x < 0)
    marked = [w for w in wins if p3.win[w][2] or p2.win[w][2]]
    print(
        f"  windows with marks in either: {len(marked)}; ns-3 marks more in"
        f" {sum(extra[w] > 0 for w in marked)} (by {more3:.0f}), pisanet in"
        f" {sum(extra[w] < 0 for w in marked)} (by {more2:.0f})"
    )
    return ranked


def flows_in(
    windows: list[int],
    act3: dict[tuple[int, int], list[int]],
    act2: dict[tuple[int, int], list[int]],
    flows: list[dict[str, Any]],
    n: int,
) -> None:
    """Per window of WINDOWS, its N flows with the most marks at the port (in
    either simulator): each simulator's activity (ACT)."""
    print("\nper window, the flows marked most (ns-3 | pisanet):")
    print(f"  flow  src  bytes      start_us  ns-3: {' '.join(ACT)} | pisanet: {' '.join(ACT[:5])}")
    zero = [0] * len(ACT)
    for w in windows:
        ids = {i for (v, i) in act3 if v == w} | {i for (v, i) in act2 if v == w}
        tot3 = [sum(act3.get((w, i), zero)[c] for i in ids) for c in range(len(ACT))]
        tot2 = [sum(act2.get((w, i), zero)[c] for i in ids) for c in range(5)]
        print(f"  window {w} ({len(ids)} flows): all {tot3} | {tot2}")
        busy = sorted(ids, key=lambda i: -(act3.get((w, i), zero)[2] + act2.get((w, i), zero)[2]))
        for i in busy[:n]:
            f = flows[i]
            print(
                f"  {i:4d}  h{f['src']} {f['bytes']:9d} {f['start_us']:10d}"
                f"  {act3.get((w, i), zero)} | {act2.get((w, i), zero)[:5]}"
            )


def small_flows(
    flows: list[dict[str, Any]],
    fct3: list[float],
    fct2: list[float],
    groups: dict[str, set[int]],
    window: Any,
) -> None:
    """The small class (< 100 KB) by the group of windows (GROUPS: name ->
    windows) its flows start in: flows, mean FCT in each simulator, their
    ratio, and each group's share of the class's difference of the sums
    (ns-3 minus pisanet)."""
    small = small_class(flows, fct3)
    m3, m2, total = part_means(small, fct3, fct2)
    print(
        f"  small flows (< 100 KB) by start window: {len(small)} flows, ns-3 mean {m3:.0f} us,"
        f" pisanet {m2:.0f} us, difference of the sums {total:.0f} us"
    )
    for name, wins in groups.items():
        part = [i for i in small if window(flows[i]["start_us"]) in wins]
        if not part:
            continue
        print(f"    {name}: {len(part)} flows, {part_text(part, fct3, fct2, total)}")


def small_class(flows: list[dict[str, Any]], fct3: list[float]) -> list[int]:
    """The flows of the small class (< 100 KB) that ns-3 completed."""
    lo, hi = xc.CLASSES[0][1], xc.CLASSES[0][2]
    return [i for i, f in enumerate(flows) if lo <= f["bytes"] < hi and fct3[i] == fct3[i]]


def part_means(part: list[int], fct3: list[float], fct2: list[float]) -> tuple[float, float, float]:
    """Flows `part`'s mean FCT in ns-3 and in pisanet, and the difference of
    their sums (ns-3 minus pisanet)."""
    m3 = float(np.mean([fct3[i] for i in part]))
    m2 = float(np.mean([fct2[i] for i in part]))
    return m3, m2, sum(fct3[i] - fct2[i] for i in part)


def part_text(part: list[int], fct3: list[float], fct2: list[float], total: float) -> str:
    """Flows `part`'s means, their ratio and their share of the class's
    difference of the sums `total`, as the small-class splits print them."""
    m3, m2, d = part_means(part, fct3, fct2)
    return (
        f"ns-3 mean {m3:.0f} us, pisanet {m2:.0f} us (ratio {m2 / m3:.2f}),"
        f" difference {d:.0f} us ({d / total:.3f} of the class's)"
    )


def small_by_syn(
    flows: list[dict[str, Any]],
    fct3: list[float],
    fct2: list[float],
    act3: dict[tuple[int, int], list[int]],
    act2: dict[tuple[int, int], list[int]],
) -> None:
    """The small class (< 100 KB) by whether a flow lost a SYN at the port
    in either simulator (each lost SYN waits ns-3's ConnTimeout, 3 ms,
    doubling): flows, SYNs lost in each, mean FCTs and share of the class's
    difference of the sums."""
    syn3: Counter[int] = Counter()
    syn2: Counter[int] = Counter()
    for act, syn in ((act3, syn3), (act2, syn2)):
        for (_w, i), v in act.items():
            syn[i] += v[4]
    small = small_class(flows, fct3)
    total = part_means(small, fct3, fct2)[2]
    print(
        f"  SYNs lost at the port: ns-3 {sum(syn3.values())} ({len(+syn3)} flows), pisanet"
        f" {sum(syn2.values())} ({len(+syn2)} flows); small flows by a SYN lost in either:"
    )
    lost = [i for i in small if syn3[i] or syn2[i]]
    for name, part in (("a SYN lost", lost), ("none lost", sorted(set(small) - set(lost)))):
        if not part:
            continue
        print(
            f"    {name}: {len(part)} flows (SYNs lost ns-3 {sum(syn3[i] for i in part)}, pisanet"
            f" {sum(syn2[i] for i in part)}), {part_text(part, fct3, fct2, total)}"
        )


def cycles(
    p3: Port,
    p2: Port,
    act3: dict[tuple[int, int], list[int]],
    act2: dict[tuple[int, int], list[int]],
    flows: list[dict[str, Any]],
    thr: int,
    n: int,
) -> dict[str, set[int]]:
    """The windows by whether a flow resends at least THR segments in them
    (finding 15's cycle sends each segment about twice at the line's rate,
    410 resent per ms; a timeout's go-back-N resends what was in flight):
    one of ns-3's such flows does so in pisanet too, only ns-3's do, only
    pisanet's, neither. Per group: the port's counts in both and its share of
    ns-3's extra marks. Then the flows that resend so (in either): counts,
    and the N with the most extra marks in their ns-3 windows, with their
    windows and resent segments in each. Returns the groups."""
    hot3: dict[int, set[int]] = defaultdict(set)
    hot2: dict[int, set[int]] = defaultdict(set)
    for act, hot in ((act3, hot3), (act2, hot2)):
        for (w, i), v in act.items():
            if v[1] >= thr:
                hot[w].add(i)
    wins = sorted(set(p3.win) | set(p2.win))
    groups: dict[str, set[int]] = {
        "ns-3's flow resends there in pisanet too": set(),
        "only ns-3's flows resend": set(),
        "only pisanet's flows resend": set(),
        "no flow resends": set(),
    }
    names = list(groups)
    for w in wins:
        g = 0 if hot3[w] & hot2[w] else 1 if hot3[w] else 2 if hot2[w] else 3
        groups[names[g]].add(w)
    extra = {w: p3.win[w][2] - p2.win[w][2] for w in wins}
    total = sum(extra.values())
    print(f"\nwindows by flows resending >= {thr} segments in them (ns-3 | pisanet):")
    print(
        "  group: windows | arrivals  at>=K  marks  drops  SYN_drops  us_at>=K  mean_q_busy (each)"
        " | extra, share"
    )
    for name, ws in groups.items():
        cells = []
        for p, act in ((p3, act3), (p2, act2)):
            su = [sum(p.win[w][c] for w in ws) for c in range(7)]
            mq = su[5] / su[6] if su[6] else 0.0
            syn = sum(v[4] for (w, _i), v in act.items() if w in ws)
            cells.append(
                f"{su[0]:8.0f} {su[1]:7.0f} {su[2]:7.0f} {su[3]:5.0f} {syn:4d} {su[4]:8.0f} {mq:5.1f}"
            )
        ex = sum(extra[w] for w in ws)
        print(
            f"  {name}: {len(ws)} | {cells[0]} | {cells[1]} | {ex:+.0f}, {ex / total if total else 0.0:.3f}"
        )
    by3: dict[int, set[int]] = defaultdict(set)
    by2: dict[int, set[int]] = defaultdict(set)
    for w, ids in hot3.items():
        for i in ids:
            by3[i].add(w)
    for w, ids in hot2.items():
        for i in ids:
            by2[i].add(w)
    res3: Counter[int] = Counter()
    res2: Counter[int] = Counter()
    for (_w, i), v in act3.items():
        res3[i] += v[1]
    for (_w, i), v in act2.items():
        res2[i] += v[1]
    print(
        f"  flows resending so: ns-3 {len(by3)}, pisanet {len(by2)}, both {len(set(by3) & set(by2))};"
        f" segments resent over the run: ns-3 {sum(res3.values())}, pisanet {sum(res2.values())}"
    )
    ranked = sorted(by3, key=lambda i: -sum(extra[w] for w in by3[i]))
    print(
        "  flow  src  bytes      ns-3: windows, resent | pisanet: windows, resent | extra marks in ns-3's windows"
    )
    for i in ranked[:n]:
        f = flows[i]
        print(
            f"  {i:4d}  h{f['src']} {f['bytes']:9d}  {sorted(by3[i])}, {res3[i]}"
            f" | {sorted(by2[i])}, {res2[i]} | {sum(extra[w] for w in by3[i]):+.0f}"
        )
    return groups


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
    ap = traces.parser(__doc__, "dctcp incast 16:1")
    ap.add_argument(
        "--port",
        default="",
        help="switch port(s) (link order), comma-separated; all traced in ns-3",
    )
    ap.add_argument(
        "--full", action="store_true", help="the full-size flow list (crosscheck without --quick)"
    )
    ap.add_argument(
        "--top", type=int, default=10, help="the windows with the most extra marks in ns-3, shown"
    )
    ap.add_argument(
        "--flows", type=int, default=5, help="flows shown per worst window (0: no per-flow pass)"
    )
    ap.add_argument("--window-us", type=int, default=10_000, help="a dumbbell's window (us)")
    ap.add_argument(
        "--cycle-resent",
        type=int,
        default=100,
        help="a flow resending this many segments in a window marks the window (cycles)",
    )
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
    global WINDOW_US
    WINDOW_US = args.window_us
    sc = traces.scenario(args.scenario, args.full)
    flows = xc.flow_list(sc)
    if args.jitter_ns:
        flows = xc.jittered(flows, args.jitter_ns, args.draw)
    default = "0" if sc.kind == "incast" else "8"
    ports = [int(x) for x in (args.port or default).split(",")]
    names = [switch_port_name(sc.kind, port) for port in ports]
    by_port: dict[int, Port] = {}
    act3: dict[tuple[int, int], list[int]] = {}
    fct3: list[float] | None = None
    if not args.skip_ns3:
        with tempfile.TemporaryDirectory() as tmp:
            trace = Path(args.load or args.save or Path(tmp) / "trace.txt")
            if not args.load:
                extra = dict(kv.split("=", 1) for kv in args.ns3)
                fct3 = ns3_run(sc, flows, ports, extra, trace)
            by_port, s = ns3_side(sc, trace, ports)
            for port, name in zip(ports, names, strict=True):
                report(f"ns-3, port {port} ({name})", by_port[port], s)
            replay_alpha(trace, sender_nodes(flows))
            replay_growth(trace, sender_nodes(flows))
            if args.flows:
                act3 = ns3_flows(sc, trace, flows, ports[0])
    by_name, s2, tr, fct2 = pisanet_side(sc, flows, names, args.set)
    for port, name in zip(ports, names, strict=True):
        report(f"pisanet ns-3-like, port {port} ({name})", by_name[name], s2)
    if not by_port:
        return
    ranked = {}
    for port, name in zip(ports, names, strict=True):
        print(f"\nport {port} ({name}):", end="")
        ranked[port] = compare(by_port[port], by_name[name], args.top)
    # The first port's worst windows, and the windows where flows resend:
    # who sends into them, and the small flows that start in them.
    worst = ranked[ports[0]][: args.top]
    act2 = pisanet_flows(sc, tr, names[0]) if args.flows else {}
    if args.flows:
        flows_in(worst, act3, act2, flows, args.flows)
    if fct3 is None and not (args.ns3 or RULES or args.jitter_ns):
        xc.CACHED_ONLY = True  # the tables' stored run, for its FCTs; none is started
        cached = xc.run_ns3(sc, flows, {})
        fct3 = [float(x) for x in cached["fct_us"]] if cached else None
    window = window_of(sc)
    p3, p2 = by_port[ports[0]], by_name[names[0]]
    if fct3 is not None:
        print()
        rest = set(p3.win) | set(p2.win) | {window(f["start_us"]) for f in flows}
        small_flows(
            flows,
            fct3,
            fct2,
            {f"the worst {len(worst)} windows": set(worst), "the others": rest - set(worst)},
            window,
        )
    if args.flows:
        groups = cycles(p3, p2, act3, act2, flows, args.cycle_resent, args.top)
        if fct3 is not None:
            # A window without any data at the port belongs to the last group.
            last = list(groups)[-1]
            groups[last] |= {window(f["start_us"]) for f in flows} - set().union(*groups.values())
            small_flows(flows, fct3, fct2, groups, window)
            small_by_syn(flows, fct3, fct2, act3, act2)


if __name__ == "__main__":
    main()
