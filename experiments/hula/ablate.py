#!/usr/bin/env python3
"""Controlled experiments behind docs/results/hula.md ("Why our gaps differ
from the paper's"). Each experiment changes one thing from a reference
set-up and reruns ECMP, CONGA' and HULA on seeds 1-3; the tables go into
docs/results/hula.md between `<!-- ablations:begin -->` and
`<!-- ablations:end -->`. "polarization" reruns only ECMP and CONGA' (HULA
does not read scheme.ecmp_hash_per_tier) and shows them next to run.py's
numbers at the same points (its sweep directories, results/hula/full).

`.venv/bin/python experiments/hula/ablate.py [--only NAME ...] [--schemes S ...]
[--tables] [--quick | --smoke] [--workers N] [--out DIR]` (about 20 minutes on
one core). Runs go through `pisanet.sweep` into results/hula-ablations/MODE/
(experiments/points.py); a rerun resumes.
"""

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import points as P
import run as hula

FIGS = hula.FIGS
OUT = "results/hula-ablations"
SCHEMES = hula.SCHEMES
SEEDS = hula.SEEDS

# The first reproduction's set-up, as the reference the experiments change
# one at a time: 256 KB window cap, 400 flows, servers by permutation.
OLD = [
    "transport.rwnd_kb=256",
    "workload.flows=400",
    "workload.client_server_assignment=permutation",
]
# No window cap (TSQ bounds the NIC self-queue; docs/model.md "Hosts").
NOCAP = ["transport.rwnd_kb=4096", "workload.client_server_assignment=permutation"]
LONG = "run.max_sim_time_ms=5000"

# A row of an experiment: (row label, config, sets).
Case = tuple[str, str, list[str]]
# A run: (experiment, row label, config, sets, scheme, seed).
Job = tuple[str, str, str, list[str], str, int]

# name -> (title, [(row label, config, sets)]); every row runs 3 schemes x 3 seeds.
EXPERIMENTS: dict[str, tuple[str, list[Case]]] = {
    "window": (
        "Window cap (web-search 60%, asymmetric, 400 flows, permutation)",
        [
            (
                "rwnd 256 KB (as the first reproduction), TSQ",
                "asym.toml",
                [*OLD, "workload.load=0.6"],
            ),
            ("rwnd default (4 MB), TSQ", "asym.toml", OLD + NOCAP + ["workload.load=0.6"]),
        ],
    ),
    "length": (
        "Run length (web-search 60%, asymmetric, no cap, permutation)",
        [
            (f"{n} flows", "asym.toml", [*NOCAP, f"workload.flows={n}", "workload.load=0.6", LONG])
            for n in [400, 1000, 2000, 4000]
        ],
    ),
    "length_sym": (
        "Run length (web-search 70%, symmetric, no cap, permutation)",
        [
            (f"{n} flows", "base.toml", [*NOCAP, f"workload.flows={n}", "workload.load=0.7", LONG])
            for n in [400, 2000]
        ],
    ),
    "assignment": (
        "Server assignment (web-search, no cap, 2000 flows)",
        [
            (
                f"{topo}, {int(load * 100)}%, {a}",
                cfg,
                [
                    *NOCAP,
                    "workload.flows=2000",
                    f"workload.load={load}",
                    f"workload.client_server_assignment={a}",
                    LONG,
                ],
            )
            for topo, cfg, load in [
                ("asymmetric", "asym.toml", 0.6),
                ("symmetric", "base.toml", 0.7),
            ]
            for a in ["permutation", "random"]
        ],
    ),
    "rto": (
        "Minimum RTO, not given by the paper (web-search 60%, asymmetric, no cap, 2000 flows, permutation)",
        [
            (
                f"min RTO {r} ms",
                "asym.toml",
                [
                    *NOCAP,
                    "workload.flows=2000",
                    "workload.load=0.6",
                    f"transport.min_rto_us={r * 1000}",
                    LONG,
                ],
            )
            for r in [1, 10]
        ],
    ),
    "buffer": (
        "Switch buffer, not given by the paper (web-search 60%, asymmetric, no cap, 2000 flows, permutation)",
        [
            (
                f"{b} KB per port",
                "asym.toml",
                [
                    *NOCAP,
                    "workload.flows=2000",
                    "workload.load=0.6",
                    f"topology.buffer_kb={b}",
                    LONG,
                ],
            )
            for b in [150, 500, 2000]
        ],
    ),
    # The same points as run.py's sweep (2000 flows), with every tier hashing
    # on the same bits; ECMP, CONGA' and HULA as they are come from run.py's sweep.
    "polarization": (
        "Hash polarization (web-search, 2000 flows, as run.py; `scheme.ecmp_hash_per_tier=false`)",
        [
            (
                f"{topo}, {int(load * 100)}%",
                cfg,
                [
                    "workload.cdf=websearch",
                    f"workload.load={load}",
                    f"workload.flows={hula.WS_FLOWS}",
                    f"run.max_sim_time_ms={hula.WS_MAX_MS}",
                    "scheme.ecmp_hash_per_tier=false",
                ],
            )
            for topo, cfg, load in [
                ("symmetric", "base.toml", 0.7),
                ("asymmetric", "asym.toml", 0.6),
            ]
        ],
    ),
    # Sequential source ports (the default) hash to structured ECMP choices
    # under a CRC; random ports make every connection's path independent.
    "sport": (
        "Source ports (web-search, 2000 flows, as run.py; `workload.source_ports`)",
        [
            (
                f"{topo}, {int(load * 100)}%, {ports}",
                cfg,
                [
                    "workload.cdf=websearch",
                    f"workload.load={load}",
                    f"workload.flows={hula.WS_FLOWS}",
                    f"run.max_sim_time_ms={hula.WS_MAX_MS}",
                    f"workload.source_ports={ports}",
                ],
            )
            for topo, cfg, load in [
                ("asymmetric", "asym.toml", 0.6),
                ("symmetric", "base.toml", 0.7),
            ]
            for ports in ["sequential", "random"]
        ],
    ),
    "datamining": (
        "Data-mining run length (80%, asymmetric, no cap, permutation)",
        [
            (
                "200 flows, 300 ms cap",
                "asym.toml",
                [
                    *NOCAP,
                    "workload.cdf=datamining",
                    "workload.flows=200",
                    "workload.load=0.8",
                    "run.max_sim_time_ms=300",
                ],
            ),
            (
                "1000 flows, 1500 ms cap",
                "asym.toml",
                [
                    *NOCAP,
                    "workload.cdf=datamining",
                    "workload.flows=1000",
                    "workload.load=0.8",
                    "run.max_sim_time_ms=1500",
                ],
            ),
        ],
    ),
}

# Experiments that run only some schemes (the others come from elsewhere).
EXP_SCHEMES = {"polarization": ["ecmp", "conga_prime"]}
POLARIZED = {"ecmp": "ECMP polarized", "conga_prime": "CONGA' polarized"}


def sets_of(job: Job) -> list[str]:
    _, _, _, sets, scheme, seed = job
    return [*sets, f"scheme.kind={scheme}", f"run.seed={seed}"]


def row_of(job: Job, point: P.Point) -> hula.Row:
    name, label, _, _, scheme, seed = job
    r = point.row
    q = point.queues()["depth_bytes"].tolist()
    drops = sum(p["drops"] for p in point.ports() if p["switch_port"])
    return {
        "exp": name,
        "row": label,
        "scheme": scheme,
        "seed": seed,
        "mean": r["fct_us_mean"],
        "p99": r["fct_us_p99"],
        "small": r.get("fct_us_lt_100KB_mean"),
        "large": r.get("fct_us_gt_10MB_mean"),
        "completed": int(r["flows_completed"]),
        "total": int(r["flows_total"]),
        "sim_ms": r["sim_time_s"] * 1e3,
        "data_drops": drops,
        "q0": sum(1 for x in q if x == 0) / len(q) if q else None,
        "wall": r["wall_time_s"],
    }


def avg(rs: list[hula.Row], key: str) -> float | None:
    xs = [r[key] for r in rs if r[key] is not None]
    return sum(xs) / len(xs) if xs else None


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}x"


def tables(rows: list[hula.Row]) -> str:
    parts = []
    for name, (title, cases) in EXPERIMENTS.items():
        rs = [r for r in rows if r["exp"] == name]
        if not rs:
            continue
        if name == "polarization":
            parts.append(polarization_table(title, cases, rs))
            continue
        out = [
            f"### {title}",
            "",
            "| set-up | ECMP | CONGA' | HULA | ECMP / HULA | CONGA' / HULA | small: ECMP / HULA | p99: ECMP / HULA | P(S2->A3 empty) E / C / H | switch drops E / C / H | flows done | sim ms |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for label, _, _ in cases:
            v = {s: [r for r in rs if r["row"] == label and r["scheme"] == s] for s in SCHEMES}
            if not all(v.values()):
                continue
            m = {s: avg(v[s], "mean") for s in SCHEMES}
            sm = {s: avg(v[s], "small") for s in SCHEMES}
            p = {s: avg(v[s], "p99") for s in SCHEMES}
            q0 = " / ".join(
                "-" if avg(v[s], "q0") is None else f"{avg(v[s], 'q0'):.2f}" for s in SCHEMES
            )
            dr = " / ".join(f"{avg(v[s], 'data_drops'):.0f}" for s in SCHEMES)
            done = sum(r["completed"] for s in SCHEMES for r in v[s])
            tot = sum(r["total"] for s in SCHEMES for r in v[s])
            sim = max(r["sim_ms"] for s in SCHEMES for r in v[s])
            out.append(
                f"| {label} | "
                + " | ".join(hula.fmt_ms(m[s]) for s in SCHEMES)
                + f" | {ratio(m['ecmp'], m['hula'])} | {ratio(m['conga_prime'], m['hula'])}"
                + f" | {ratio(sm['ecmp'], sm['hula'])} | {ratio(p['ecmp'], p['hula'])} | {q0} | {dr} | {done}/{tot} | {sim:.0f} |"
            )
        parts.append("\n".join(out))
    return "\n\n".join(parts)


def polarization_table(title: str, cases: list[Case], rs: list[hula.Row]) -> str:
    """Polarized ECMP and CONGA' next to run.py's ECMP, CONGA' and HULA at the same points."""
    ref = REFERENCE
    out = [
        f"### {title}",
        "",
        "| set-up | ECMP | ECMP polarized | CONGA' | CONGA' polarized | HULA | ECMP / HULA | ECMP polarized / HULA | CONGA' polarized / HULA | small: ECMP pol. / HULA | p99: ECMP pol. / HULA | switch drops E / E pol. / C pol. / H | flows done (polarized) | sim ms (polarized) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, cfg, sets in cases:
        load = float(next(x for x in sets if x.startswith("workload.load=")).split("=")[1])
        base = {
            s: [
                r
                for r in ref
                if r["cfg"] == cfg
                and r["cdf"] == "websearch"
                and r["scheme"] == s
                and r["load"] == load
                and r["seed"] in SEEDS
            ]
            for s in SCHEMES
        }
        pol = {
            s: [r for r in rs if r["row"] == label and r["scheme"] == s]
            for s in EXP_SCHEMES["polarization"]
        }
        if not all(base.values()) or not all(pol.values()):
            continue
        m = {s: avg(base[s], "mean") for s in SCHEMES}
        pm = {s: avg(pol[s], "mean") for s in pol}
        h = m["hula"]
        dr = " / ".join(
            f"{x:.0f}"
            for x in [
                avg(base["ecmp"], "switch_drops"),
                avg(pol["ecmp"], "data_drops"),
                avg(pol["conga_prime"], "data_drops"),
                avg(base["hula"], "switch_drops"),
            ]
        )
        done = sum(r["completed"] for v in pol.values() for r in v)
        tot = sum(r["total"] for v in pol.values() for r in v)
        sim = max(r["sim_ms"] for v in pol.values() for r in v)
        out.append(
            f"| {label} | {hula.fmt_ms(m['ecmp'])} | {hula.fmt_ms(pm['ecmp'])} | {hula.fmt_ms(m['conga_prime'])}"
            f" | {hula.fmt_ms(pm['conga_prime'])} | {hula.fmt_ms(h)} | {ratio(m['ecmp'], h)} | {ratio(pm['ecmp'], h)}"
            f" | {ratio(pm['conga_prime'], h)} | {ratio(avg(pol['ecmp'], 'small'), avg(base['hula'], 'small'))}"
            f" | {ratio(avg(pol['ecmp'], 'p99'), avg(base['hula'], 'p99'))} | {dr} | {done}/{tot} | {sim:.0f} |"
        )
    return "\n".join(out)


def plot_length(rows: list[hula.Row]) -> str:
    """docs/results/hula/run_length.png (skipped without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ""
    rs = [r for r in rows if r["exp"] == "length"]
    if not rs:
        return ""
    colors = {"ecmp": "tab:red", "conga_prime": "tab:blue", "hula": "tab:green"}
    labels = [c[0] for c in EXPERIMENTS["length"][1]]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for s in SCHEMES:
        xs: list[int] = []
        ys: list[float] = []
        for label in labels:
            v = [r for r in rs if r["row"] == label and r["scheme"] == s]
            if v:
                xs.append(int(label.split()[0]))
                # A mean over no values (no flow finished): a gap.
                m = avg(v, "mean")
                ys.append(math.nan if m is None else m / 1000)
        ax.plot(xs, ys, "o-", color=colors[s], label=hula.NAMES[s])
    ax.set_xlabel("flows per run")
    ax.set_ylabel("average FCT (ms)")
    ax.set_title("web-search 60%, asymmetric: run length")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(FIGS / "run_length.png", dpi=110)
    plt.close(fig)
    return "\n\n![run_length.png](hula/run_length.png)"


# run.py's rows at the polarization table's points (its full sweep, read back).
REFERENCE: list[hula.Row] = []


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="experiment names: " + ", ".join(EXPERIMENTS))
    ap.add_argument(
        "--tables", action="store_true", help="run nothing: the tables from the finished points"
    )
    ap.add_argument(
        "--schemes",
        nargs="+",
        choices=SCHEMES,
        help="run these schemes' points again (after a change to them); keep the others'",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="seed 1 only (about a third of the time); tables into OUT/quick/, not docs/",
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="one row of one experiment, seed 1, 40 flows; prints the table, writes nothing",
    )
    P.add_arguments(ap, OUT)
    a = ap.parse_args()
    if a.smoke:
        P.smoke_threads()
    names = a.only or list(EXPERIMENTS)
    seeds = [1] if a.quick or a.smoke else SEEDS
    out = a.out / P.mode_name(a)
    if a.smoke:
        names = ["rto"]
        label, cfg, sets = EXPERIMENTS["rto"][1][0]
        EXPERIMENTS["rto"] = (EXPERIMENTS["rto"][0], [(label, cfg, [*sets, "workload.flows=40"])])
    rerun = [f"scheme.kind={s}" for s in a.schemes or []]
    rows: list[hula.Row] = []
    missing: set[tuple[str, tuple[str, ...]]] = set()
    # Every experiment's finished points are read, so that the section keeps
    # the tables of those not run this time.
    for n in EXPERIMENTS if not a.smoke else names:
        jobs = [
            (n, label, cfg, sets, s, seed)
            for (label, cfg, sets) in EXPERIMENTS[n][1]
            for s in EXP_SCHEMES.get(n, SCHEMES)
            for seed in seeds
        ]
        todo = n in names and not a.tables
        got = P.run_points(
            [(hula.HERE / j[2], sets_of(j)) for j in jobs], out, a.workers, rerun=rerun, run=todo
        )
        for j in jobs:
            point = got.get(P.point_key(hula.HERE / j[2], sets_of(j)))
            if point is None:
                missing.add((j[2], tuple(sets_of(j))))
            else:
                rows.append(row_of(j, point))
    if "polarization" in names and not a.smoke:
        # ECMP, CONGA' and HULA as they are: run.py's full sweep (run here if
        # missing); --quick: the same points with seed 1, in this script's folder.
        mode = hula.Mode()
        mode.seeds = seeds
        pts = [p for p in hula.fct_points(mode) if p[1] == "websearch" and p[2] in SCHEMES]
        pts = [p for p in pts if (p[0], p[3]) in {("base.toml", 0.7), ("asym.toml", 0.6)}]
        ref = P.run_points(
            [(hula.HERE / p[0], hula.sets_of(*p[1:], mode)) for p in pts],
            Path(hula.OUT) / "full" if not a.quick else out,
            a.workers,
            run=not a.tables,
        )
        for p in pts:
            point = ref.get(P.point_key(hula.HERE / p[0], hula.sets_of(*p[1:], mode)))
            if point is None:
                missing.add((p[0], tuple(hula.sets_of(*p[1:], mode))))
            else:
                REFERENCE.append(hula.row_of(p, point))
    body = tables(rows) + ("" if a.smoke or a.quick else plot_length(rows))
    P.publish(a, out, "ablations", body, lambda b: hula.write_section("ablations", b), len(missing))


if __name__ == "__main__":
    main()
