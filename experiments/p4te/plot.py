#!/usr/bin/env python3
"""Plots mean short- and large-flow FCT against load per scheme for the
web-search grids (Fig. 9 style) into docs/results/p4te/*.png.

Usage: .venv/bin/python experiments/p4te/plot.py (needs matplotlib). Reads
only the run cache of run.py (target/p4te-runs); points not cached are left
out. run.py calls plot() itself when matplotlib is importable.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run as R  # noqa: E402

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
}
PLOTS = [("leaf_spine_10g.toml", "websearch", "websearch_10g.png"),
         ("leaf_spine_40g.toml", "websearch", "websearch_40g.png")]


def plot(res, plan=None):
    """res: run.py's results, keyed as in run.jobs(); plan: run.py's PLAN as
    run (default: the module's). Returns the files written."""
    plan = plan or R.PLAN
    OUTDIR.mkdir(parents=True, exist_ok=True)
    written = []
    for cfg, cdf, name in PLOTS:
        seeds, loads, variants = plan[(cfg, cdf)]
        title = dict(R.CONFIGS)[cfg]
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, cls, label in [(axes[0], "short", "short flows (<= p90 size)"), (axes[1], "large", "large flows")]:
            for v in variants:
                xs, ys, lo, hi = [], [], [], []
                for load in loads:
                    vals = [res[k][cls] / 1000 for k in (("grid", cfg, cdf, load, s, v) for s in seeds) if k in res]
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
                ax.errorbar(xs, ys, yerr=[lo, hi], color=c, marker=mk, linestyle=ls, capsize=3, label=v)
            ax.set_xlabel("offered load (%)")
            ax.set_ylabel("mean FCT (ms)")
            ax.set_title(label)
            ax.set_xticks([int(l * 100) for l in loads])
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=8)
        n = R.FLOWS[(cfg, cdf)]
        fig.suptitle(f"{cdf}, leaf-spine {title}, stride, {n} flows; mean over seeds {seeds} (bars: min-max)")
        fig.tight_layout()
        out = OUTDIR / name
        fig.savefig(out, dpi=110)
        plt.close(fig)
        written.append(out)
    return written


def main():
    cache = R.ROOT / "target" / "p4te-runs"
    res = {}
    for key, cfg, sets in R.jobs([1, 2, 3]):
        f = cache / f"{R.cache_key(cfg, sets)}.json"
        if f.exists():
            res[key] = R.json.loads(f.read_text())
    for f in plot(res):
        print(f"wrote {f}")


if __name__ == "__main__":
    main()
