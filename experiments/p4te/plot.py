#!/usr/bin/env python3
"""Plots of the P4TE grids into docs/results/p4te/*.png: mean short- and
large-flow FCT against load per scheme (Fig. 9 and 10 style), and CDFs of
FCT per load and class (appendix A.2, Fig. 14 and 15).

Usage: .venv/bin/python experiments/p4te/plot.py. Reads the finished runs
of run.py's full set (its sweep directories, results/p4te/full) and runs
nothing; runs not finished are left out. run.py calls plot() and
plot_cdfs() itself after the full set.
"""

import sys
from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run as R

OUTDIR = R.ROOT / "docs" / "results" / "p4te"
# One colour (and marker) per scheme, the same in every plot.
STYLE = {
    "ECMP": ("tab:gray", "x", "-"),
    "flowlet ECMP": ("tab:blue", "o", "-"),
    "HULA": ("tab:orange", "s", "-"),
    "P4TE-RA": ("tab:green", "^", "--"),
    "P4TE-NRA": ("tab:olive", "v", "--"),
    "P4TE-RA fast": ("tab:red", "^", "-"),
    "P4TE-NRA fast": ("tab:purple", "v", "-"),
    "P4TE-RA batch": ("tab:brown", "D", "--"),
    "P4TE-RA fast, fixed delta": ("tab:pink", "^", ":"),
}
PLOTS = [
    ("leaf_spine_10g.toml", "websearch", "websearch_10g.png"),
    ("leaf_spine_40g.toml", "websearch", "websearch_40g.png"),
    ("leaf_spine_10g.toml", "datamining", "datamining_10g.png"),
    ("leaf_spine_40g.toml", "datamining", "datamining_40g.png"),
]


def plot(res: R.Res, plan: R.Plan | None = None) -> list[Path]:
    """res: run.py's results, keyed as in run.jobs(); plan: run.py's PLAN as
    run (default: the module's). Returns the files written."""
    plan = plan or R.PLAN
    OUTDIR.mkdir(parents=True, exist_ok=True)
    written = []
    for cfg, cdf, name in PLOTS:
        seeds, loads, variants = plan[(cfg, cdf)]
        title = dict(R.CONFIGS)[cfg]
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, cls, label in [
            (axes[0], "short", "short flows (<= p90 size)"),
            (axes[1], "large", "large flows"),
        ]:
            ax.set_xlabel("load of the aggregation layer (%)")
            for v in variants:
                xs: list[float] = []
                ys: list[float] = []
                lo: list[float] = []
                hi: list[float] = []
                for load in loads:
                    vals = [
                        res[k][cls] / 1000
                        for k in (("grid", cfg, cdf, load, s, v) for s in seeds)
                        if k in res
                    ]
                    if not vals:
                        continue
                    m = sum(vals) / len(vals)
                    xs.append(load * 100)
                    ys.append(m)
                    lo.append(m - min(vals))
                    hi.append(max(vals) - m)
                if not xs:
                    continue
                c, mk, ls = STYLE[v]
                ax.errorbar(
                    xs, ys, yerr=[lo, hi], color=c, marker=mk, linestyle=ls, capsize=3, label=v
                )
            ax.set_ylabel("mean FCT (ms)")
            ax.set_title(label)
            ax.set_xticks([int(ld * 100) for ld in loads])
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=8)
        n = R.flows_title(cfg, cdf, loads)
        fig.suptitle(
            f"{cdf}, leaf-spine {title}, stride, {n};\nmean over seeds {seeds} (bars: min-max)",
            fontsize=9,
        )
        fig.tight_layout()
        out = OUTDIR / name
        fig.savefig(out, dpi=110)
        plt.close(fig)
        written.append(out)
    return written


def cdf_points(values: Iterable[float]) -> tuple[list[float], list[float]]:
    xs = sorted(values)
    n = len(xs)
    return xs, [(i + 1) / n for i in range(n)]


def plot_cdfs(
    store: R.Store, plan: R.Plan | None = None, cfg: str = "leaf_spine_10g.toml"
) -> list[Path]:
    """Appendix A.2: CDF of FCT per load (columns) for short, large and all
    flows (rows), per-flow records pooled over the seeds. Unfinished flows
    (null FCT) are left out and counted in the panel title."""
    plan = plan or R.PLAN
    OUTDIR.mkdir(parents=True, exist_ok=True)
    written = []
    for cdf, fig_no in [("datamining", "14"), ("websearch", "15")]:
        seeds, loads, variants = plan[(cfg, cdf)]
        vs = [v for v in R.CDF_VARIANTS if v in variants]
        fig, axes = plt.subplots(3, len(loads), figsize=(4 * len(loads), 9.5), squeeze=False)
        for j, load in enumerate(loads):
            for v in vs:
                fcts: dict[str, list[float]] = {"short": [], "large": [], "all": []}
                missing = 0
                for seed in seeds:
                    try:
                        d = store.flows(cfg, R.grid_sets(cfg, cdf, load, seed, v))
                    except KeyError:  # not run (plot.py reads finished runs only)
                        continue
                    for c, t in zip(d["class"], d["fct_us"], strict=False):
                        if t is None:
                            missing += 1
                            continue
                        fcts["large" if c else "short"].append(t / 1000)
                        fcts["all"].append(t / 1000)
                c, _, ls = STYLE[v]
                for i, cls in enumerate(["short", "large", "all"]):
                    if fcts[cls]:
                        xs, ys = cdf_points(fcts[cls])
                        label = v + (f" ({missing} unfinished)" if missing and i == 0 else "")
                        axes[i][j].step(xs, ys, where="post", color=c, linestyle=ls, label=label)
            for i, cls in enumerate(["short", "large", "all"]):
                ax = axes[i][j]
                ax.set_xscale("log")
                ax.set_title(f"{cls} flows, load {int(load * 100)}%", fontsize=9)
                ax.set_xlabel("FCT (ms)", fontsize=8)
                ax.set_ylabel("CDF", fontsize=8)
                ax.set_ylim(0, 1.01)
                ax.grid(alpha=0.3, which="both")
                ax.tick_params(labelsize=7)
            axes[0][j].legend(fontsize=7, loc="lower right")
        title = dict(R.CONFIGS)[cfg]
        fig.suptitle(
            f"Fig. {fig_no} (appendix A.2): CDF of FCT, {cdf}, leaf-spine {title}, stride, "
            f"{R.flows_title(cfg, cdf, loads)}, seeds {seeds} pooled",
            fontsize=10,
        )
        fig.tight_layout()
        out = OUTDIR / f"cdf_{cdf}_10g.png"
        fig.savefig(out, dpi=100)
        plt.close(fig)
        written.append(out)
    return written


def main() -> None:
    """The plots from the finished runs of run.py's full set (nothing is run)."""
    store = R.Store(R.ROOT / R.RESULTS / "full", run=False)
    try:
        R.calibrate_all(store, [1, 2, 3])
    except KeyError:
        sys.exit("plot.py: the delta calibration of run.py has not run yet (results/p4te/full)")
    jobs = list(R.jobs([1, 2, 3]))
    store.run([(cfg, sets) for _, cfg, sets in jobs])
    res: R.Res = {}
    for key, cfg, sets in jobs:
        try:
            res[key] = R.stats(store.point(cfg, sets))
        except KeyError:
            continue
    for f in plot(res) + plot_cdfs(store):
        print(f"wrote {f}")


if __name__ == "__main__":
    main()
