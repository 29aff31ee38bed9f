"""Writes the P4QCN experiment's input files: the Fig. 10 topology at a line
rate and the flow list (the 4 Mb/s foreground flow host11 -> host41 and the
random background UDP streams into host41), at 7 Mb/s as in the paper or
scaled to 10, 40, 100 Gb/s by the rule of docs/schemes/p4qcn.md ("Scaling"):
every rate in proportion to the line rate, every flow's length in packets
unchanged (so durations shrink by 7 Mb/s / C).

`python experiments/p4qcn/inputs.py` regenerates the committed files
(fig10*_topology.toml, fig10*_flows.csv: background 4 Mb/s, seed 1).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

PAPER_BPS = 7_000_000
# Line rates of the scaled versions (suffix of their files).
RATES = {"": 7e6, "_10g": 10e9, "_40g": 40e9, "_100g": 100e9}
HOSTS = [f"host{t}{h}" for t in range(1, 5) for h in (1, 2)]
FOREGROUND_SRC, FOREGROUND_DST = 0, 6  # host11 -> host41
# At 7 Mb/s: the foreground flow runs 0-10 s; the background streams into
# host41 from 1 s to 9 s, one after another, each for 0.5-1.5 s (uniform),
# each from a random host other than host11 and host41.
RUN_S = 10.0
BG_FROM_S, BG_TO_S = 1.0, 9.0
BG_MIN_S, BG_MAX_S = 0.5, 1.5


def topology(line_bps: float) -> str:
    """Fig. 10, reconstructed (docs/schemes/p4qcn.md, "Experiments")."""
    out = [
        "# P4QCN (seed 002) Fig. 10, reconstructed (the figure is not in the text;",
        '# docs/schemes/p4qcn.md, "Experiments"): a 3-tier fabric of two spines',
        "# S1-S2, four leaves L1-L4 and four ToRs T1-T4 in two pods (T1, T2 under",
        "# L1 and L2; T3, T4 under L3 and L4), every leaf to both spines, two hosts",
        "# per ToR: hostXY = host Y of ToR X (host ids 0..7 in this order).",
        f"# Every link {line_bps / 1e9:g} Gb/s, 1 us. Written by inputs.py.",
        "",
    ]
    for n in HOSTS:
        out += ["[[nodes]]", f'name = "{n}"', 'kind = "host"', ""]
    for n in ["S1", "S2", "L1", "L2", "L3", "L4", "T1", "T2", "T3", "T4"]:
        out += ["[[nodes]]", f'name = "{n}"', 'kind = "switch"', ""]
    links = [(f"host{t}{h}", f"T{t}") for t in range(1, 5) for h in (1, 2)]
    links += [(f"T{t}", f"L{leaf}") for t in (1, 2) for leaf in (1, 2)]
    links += [(f"T{t}", f"L{leaf}") for t in (3, 4) for leaf in (3, 4)]
    links += [(f"L{leaf}", f"S{s}") for leaf in range(1, 5) for s in (1, 2)]
    for a, b in links:
        out += ["[[links]]", f'a = "{a}"', f'b = "{b}"', f"gbps = {line_bps / 1e9:g}", ""]
    return "\n".join(out)


def flows(line_bps: float, bg_mbps: float, seed: int) -> str:
    """The flow list: rates are the paper's (Mb/s at 7 Mb/s) times C / 7 Mb/s."""
    k = line_bps / PAPER_BPS
    t = 1e6 / k  # microseconds per paper-second
    gbps = lambda mbps: f"{mbps * k / 1000:.9g}"
    rng = random.Random(seed)
    rows = ["start_us,src,dst,bytes,transport,rate_gbps,duration_us"]
    # The foreground flow: transport empty, so transport.kind (and
    # transport.reaction_point) decide; as TCP its rate is a cap (iperf3 -b).
    rows.append(f"0,{FOREGROUND_SRC},{FOREGROUND_DST},,,{gbps(4)},{RUN_S * t:.3f}")
    at = BG_FROM_S
    others = [h for h in range(len(HOSTS)) if h not in (FOREGROUND_SRC, FOREGROUND_DST)]
    while at < BG_TO_S - 1e-9:
        d = min(rng.uniform(BG_MIN_S, BG_MAX_S), BG_TO_S - at)
        src = rng.choice(others)
        rows.append(f"{at * t:.3f},{src},{FOREGROUND_DST},,udp,{gbps(bg_mbps)},{d * t:.3f}")
        at += d
    return "\n".join(rows) + "\n"


def main() -> int:
    for suffix, rate in RATES.items():
        (HERE / f"fig10{suffix}_topology.toml").write_text(topology(rate))
        (HERE / f"fig10{suffix}_flows.csv").write_text(flows(rate, 4, 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
