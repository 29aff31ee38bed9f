"""Which packets ns-3's RED drops and marks at the switch ports (issue 19).

    nice -n 10 .venv/bin/python experiments/crosscheck/trace_red.py \\
        --scenario "dctcp websearch 0.3" [--save T] [--load T] [--ns3 KEY=VALUE ...]

Runs the scenario's `--quick` flow list in ns-3 (ns3_sim.py with
`trace_qdisc`: every packet a switch queue disc drops or marks, with the
queue disc's reason, the packet's IP ECN bits and TCP flags, and every SYN
enqueued) and prints, per queue disc: drops by reason and packet kind (SYN,
SYN-ACK, pure ACK, data, and whether the packet was ECT), marks by kind, and
the ECN bits of the SYNs and SYN-ACKs enqueued. Not part of the test suite.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import crosscheck as xc
import traces

ECN = {0: "not-ECT", 1: "ECT(1)", 2: "ECT(0)", 3: "CE"}
SYN, ACK = 0x02, 0x10


def kind(flags: int, payload: int) -> str:
    if flags & SYN:
        return "SYN-ACK" if flags & ACK else "SYN"
    return "data" if payload > 0 else "pure ACK"


def ns3_trace(sc: xc.Scenario, flows: list[dict[str, Any]], extra: dict[str, str]) -> str:
    spec = xc.ns3_spec(sc.kind, sc.cc, flows, extra, flows[-1]["start_us"] / 1e6 + 5.0)
    res, text = traces.ns3_traced(spec, trace_qdisc=True)
    print("ns-3 summary:", res.get("reasons"))
    # Only the queue-disc lines (the per-socket ones are not needed here).
    return "".join(
        ln + "\n"
        for ln in text.splitlines()
        if " qdrop " in ln or " qmark " in ln or " qsyn " in ln
    )


def main() -> None:
    ap = traces.parser(__doc__, "dctcp websearch 0.3")
    ap.add_argument("--ns3", action="append", default=[], help="ns-3 ATTR=VALUE")
    ap.add_argument("--save", help="write the queue-disc trace here")
    ap.add_argument("--load", help="read the queue-disc trace from here (no ns-3 run)")
    args = ap.parse_args()
    sc = traces.scenario(args.scenario)
    flows = xc.flow_list(sc)
    if args.load:
        text = Path(args.load).read_text()
    else:
        text = ns3_trace(sc, flows, dict(kv.split("=", 1) for kv in args.ns3))
        if args.save:
            Path(args.save).write_text(text)
    drops: Counter[tuple[str, str, str, str]] = Counter()
    marks: Counter[tuple[str, str]] = Counter()
    syns: Counter[tuple[str, str, str]] = Counter()
    for ln in text.splitlines():
        f = ln.split(" ", 9)
        _t, ctx, ev, ecn, flags, _sp, _dp, _seq, size = f[:9]
        reason = f[9] if len(f) > 9 else ""
        k = kind(int(flags), int(size))
        if ev == "qdrop":
            drops[(ctx, reason, k, ECN[int(ecn)])] += 1
        elif ev == "qmark":
            marks[(ctx, k)] += 1
        else:
            syns[(ctx, k, ECN[int(ecn)])] += 1
    print("drops (queue disc, reason, packet, ECN bits): count")
    for key, n in sorted(drops.items()):
        print("  ", key, n)
    print("marks (queue disc, packet): count")
    for mark, n in sorted(marks.items()):
        print("  ", mark, n)
    print("SYNs enqueued (queue disc, packet, ECN bits): count")
    for syn, n in sorted(syns.items()):
        print("  ", syn, n)


if __name__ == "__main__":
    main()
