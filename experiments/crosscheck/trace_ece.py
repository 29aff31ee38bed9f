"""Which CE marks ns-3's DCTCP receivers echo, from an ns-3 trace (issue 19).

    nice -n 10 .venv/bin/python experiments/crosscheck/trace_ece.py --full \\
        --scenario "dctcp websearch 0.3" --load T [--flow 762 --from-us A --to-us B]
    nice -n 10 .venv/bin/python experiments/crosscheck/trace_ece.py --full \\
        --scenario "dctcp websearch 0.3" --stop-ms 3700 --save T   # runs ns-3

ns-3 3.44's `TcpSocketBase::ForwardUp` takes a CE-marked segment as CE only
if its sequence number is above `m_ecnCESeq`, the sequence number of the
last segment it so took; any other ECT segment (a CE-marked one below it
too) is a `CA_EVENT_ECN_NO_CE`, which `TcpDctcp::CeState1to0` turns into
ECN_IDLE: the ACK carries no ECE. A resend after a timeout starts below the
highest CE-marked segment of the flight it resends, so its CE mark is not
echoed. pisanet's receiver (receiver.rs) echoes the CE bit of the last data
segment, whatever its sequence number.

Reads an ns-3 trace with the switch queue discs' marks and drops
(`trace_qdisc`: `trace_marks.py --save`, or this script's `--save`, which
also sets `trace_ecn`: each socket's ECN state, `m_ecnCESeq` and pure ACKs)
and prints:

* over the whole trace, the data segments marked CE at `--port` and not
  dropped there, split by whether ns-3's rule takes the mark as CE
  (sequence number above the flow's last one taken, replayed per flow from
  the marks in arrival order) and by whether the segment was a resend;
  with `trace_ecn`, the replay checked against the receivers' own
  `m_ecnCESeq` updates (a multiset of receiving host and sequence number);
* per timeout (a sender socket entering CA_LOSS): whether the first segment
  sent after it was marked CE at the port, whether the rule takes that mark,
  and whether the first ACK the sender got after the mark carried ECE;
* with `--flow`: that flow's segments sent, marks, drops, ACKs (ECE or not)
  between `--from-us` and `--to-us`, and with `trace_ecn` its receiver's
  ECN state changes, `m_ecnCESeq` updates and pure ACKs.

A mark is given to the flow (sender host, socket) whose port and sequence
number it carries and which sent that sequence number last (ports repeat
across hosts). Not part of the test suite.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import crosscheck as xc
import traces

ECN_NAME = {0: "disabled", 1: "idle", 2: "ce_rcvd", 3: "sending_ece", 4: "ece_rcvd", 5: "cwr_sent"}


def run(sc: xc.Scenario, flows: list[dict[str, Any]], stop_s: float, save: Path) -> None:
    """ns-3 to STOP_S with the queue-disc and ECN traces, into SAVE."""
    traces.ns3_traced(
        xc.ns3_spec(sc.kind, sc.cc, flows, {}, stop_s), save, trace_qdisc=True, trace_ecn=True
    )


def main() -> None:
    ap = traces.parser(__doc__, "dctcp websearch 0.3", full=True)
    ap.add_argument("--port", type=int, default=8, help="queue disc (8: the dumbbell's s0 -> s1)")
    ap.add_argument("--load", help="read this ns-3 trace")
    ap.add_argument("--save", help="run ns-3 (to --stop-ms) and write its trace here")
    ap.add_argument("--stop-ms", type=float, default=3700.0)
    ap.add_argument("--flow", type=int, help="list this flow's events")
    ap.add_argument("--from-us", type=float, default=0.0)
    ap.add_argument("--to-us", type=float, default=0.0)
    args = ap.parse_args()
    sc = traces.scenario(args.scenario, args.full)
    flows = xc.flow_list(sc)
    if args.save:
        run(sc, flows, args.stop_ms / 1000, Path(args.save))
        path = Path(args.save)
    elif args.load:
        path = Path(args.load)
    else:
        raise SystemExit("trace_ece: --load T or --save T")
    # The k-th flow from a host (by start) is its socket k + 1, port 49153 + k.
    sock_flow: dict[tuple[int, int], int] = {}
    for h in sorted({f["src"] for f in flows}):
        mine = sorted((f["start_us"], i) for i, f in enumerate(flows) if f["src"] == h)
        for k, (_, i) in enumerate(mine):
            sock_flow[(h, k + 1)] = i
    senders = {f["src"] for f in flows}
    qd = f"qdisc{args.port}"
    # Per sender socket: last send time of each sequence number, the highest
    # byte sent; per flow: the replayed m_ecnCESeq.
    sent: dict[tuple[int, int], dict[int, tuple[int, bool]]] = defaultdict(dict)
    high: dict[tuple[int, int], int] = defaultdict(int)
    ceseq: dict[int, int] = defaultdict(int)
    count: Counter[str] = Counter()
    taken_pairs: Counter[tuple[int, int]] = Counter()
    traced_pairs: Counter[tuple[int, int]] = Counter()
    has_ecn = False
    # A mark waits for a drop of the same packet at the same instant.
    pending: tuple[int, int, int, int, bool] | None = None  # (t, sport, seq, flow, resent)
    # Timeouts: sender socket -> (state, ...) while the first resend is followed.
    loss: dict[tuple[int, int], dict[str, Any]] = {}
    out_loss: Counter[str] = Counter()
    mark_of: dict[tuple[int, int], tuple[int, bool]] = {}  # last mark: (flow, seq) -> t, taken
    lines: list[str] = []
    want = args.flow
    lo, hi = args.from_us * 1000, args.to_us * 1000

    def settle(p: tuple[int, int, int, int, bool], dropped: bool) -> None:
        t, _sport, seq, f, resent = p
        kind = "resent" if resent else "new"
        if dropped:
            count[f"marked, dropped, {kind}"] += 1
            return
        taken = seq > ceseq[f]
        if taken:
            ceseq[f] = seq
            taken_pairs[(flows[f]["dst"], seq)] += 1
        count[f"marked, delivered, {kind}, {'taken' if taken else 'not taken'}"] += 1
        mark_of[(f, seq)] = (t, taken)

    for w in traces.trace_lines(path):
        ctx, ev = w[1], w[2]
        t = int(w[0])
        if ctx == qd and ev in ("qmark", "qdrop"):
            sport, dport, seq = int(w[5]), int(w[6]), int(w[7])
            if dport != traces.SINK_PORT or int(w[8]) == 0:
                continue
            if ev == "qdrop":
                if pending and pending[0] == t and pending[1] == sport and pending[2] == seq:
                    settle(pending, True)
                    pending = None
                continue
            if pending:
                settle(pending, False)
                pending = None
            k = sport - 49152
            best = None
            for h in senders:
                st = sent[(h, k)].get(seq)
                if st is not None and (best is None or st[0] > best[0]):
                    best = (st[0], h, st[1])
            if best is None:
                count["marked, no sender found"] += 1
                continue
            key = (best[1], k)
            f = sock_flow.get(key, -1)
            if f < 0:
                continue
            pending = (t, sport, seq, f, best[2])
            if f == want and lo <= t < hi:
                lines.append(f"{t / 1000:12.3f} port  mark CE seq {seq}")
            continue
        if pending and t != pending[0]:
            settle(pending, False)
            pending = None
        if not ctx.startswith("/NodeList/"):
            continue
        parts = ctx.split("/")
        node, sock = int(parts[2]), int(parts[5])
        a = int(w[3])
        if ev in ("ecn", "ceseq", "txack"):
            has_ecn = True
            if ev == "ceseq":
                traced_pairs[(node, int(w[4]))] += 1
            if want is not None and node == flows[want]["dst"] and lo <= t < hi:
                txt = (
                    f"ecn {ECN_NAME.get(a, a)} -> {ECN_NAME.get(int(w[4]), w[4])}"
                    if ev == "ecn"
                    else f"{ev} {a} {w[4]}"
                )
                lines.append(f"{t / 1000:12.3f} rcv h{node} s{sock}  {txt}")
            continue
        key = (node, sock)
        f = sock_flow.get(key, -1) if node in senders else -1
        if f < 0:
            continue
        show = f == want and lo <= t < hi
        if ev == "tx":
            size = int(w[4])
            resent = a + size <= high[key]
            if show:
                kind = "resend" if resent else "new"
                lines.append(f"{t / 1000:12.3f} snd  tx {kind} seq {a}")
            sent[key][a] = (t, resent)
            high[key] = max(high[key], a + size)
            lo_state = loss.get(key)
            if lo_state is not None and lo_state.get("seq") is None:
                lo_state["seq"] = a
        elif ev == "cong" and int(w[4]) == 4 and a != 4:
            loss[key] = {"t": t, "seq": None}
            out_loss["timeouts"] += 1
            if show:
                lines.append(f"{t / 1000:12.3f} snd  CA_LOSS")
        elif ev in ("rx", "rxe"):
            if show:
                lines.append(f"{t / 1000:12.3f} snd  ACK {a}{' ECE' if ev == 'rxe' else ''}")
            lo_state = loss.get(key)
            if lo_state is not None and lo_state.get("seq") is not None and a > lo_state["seq"]:
                m = mark_of.get((f, lo_state["seq"]))
                if m is None or m[0] < lo_state["t"]:
                    out_loss["first resend acknowledged, not marked"] += 1
                    del loss[key]
                    continue
                taken = "taken" if m[1] else "not taken"
                echo = "ECE" if ev == "rxe" else "no ECE"
                out_loss[f"first resend marked CE, {taken}, its ACK {echo}"] += 1
                del loss[key]
    if pending:
        settle(pending, False)
    print(f"{args.scenario}, {path}: CE marks at {qd} (data segments)")
    for name in sorted(count):
        print(f"  {name}: {count[name]}")
    if has_ecn:
        diff = (taken_pairs - traced_pairs) + (traced_pairs - taken_pairs)
        print(
            f"  receivers' m_ecnCESeq updates traced {sum(traced_pairs.values())}, replayed "
            f"{sum(taken_pairs.values())}, (host, seq) pairs in one and not the other "
            f"{sum(diff.values())}"
        )
    print("timeouts (sender sockets entering CA_LOSS):")
    for name in sorted(out_loss):
        print(f"  {name}: {out_loss[name]}")
    if want is not None:
        print(f"flow {want} ({flows[want]}), {args.from_us:.0f}-{args.to_us:.0f} us:")
        for ln in lines:
            print("  " + ln)


if __name__ == "__main__":
    main()
