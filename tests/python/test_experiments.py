"""The paper reproductions under experiments/ run their smallest mode (`--smoke`:
a few runs of a few flows), so that they cannot rot; and experiments/points.py
groups an experiment's runs into sweeps correctly.

crosscheck.py is not run here: it needs ns-3 in a venv of its own."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))

import points  # noqa: E402  (experiments/points.py)

# script, a line its printed tables must hold
SCRIPTS = [
    ("hula/run.py", "### Fig. 5: average FCT (ms), symmetric topology"),
    ("hula/ablate.py", "| min RTO 1 ms |"),
    ("hula/mechanisms.py", "| asymmetric, 60% | HULA |"),
    ("p4te/run.py", "## Delta calibration (section 7)"),
    ("p4qcn/run.py", "### Fig. 13b: packet loss, all flows (lost / sent)"),
    ("dbb/run.py", "### Section IV on the reconstructed Fig. 6 testbed"),
    (
        "p4qos/run.py",
        "**Fig. 4c: target updates per 60 s, late packets and utilization by back-off**",
    ),
]


def _docs_digest() -> str:
    h = hashlib.sha256()
    for path in sorted((ROOT / "docs" / "results").rglob("*")):
        if path.is_file():
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _run(script: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "experiments" / script), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(("script", "expected"), SCRIPTS)
def test_smoke_mode_runs_and_prints_the_tables(script: str, expected: str, tmp_path: Path) -> None:
    before = _docs_digest()
    done = _run(script, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert expected in done.stdout
    # The smoke mode writes its sweep directories under --out, nothing under docs/.
    assert _docs_digest() == before
    assert list(tmp_path.rglob("sweep.json")), "no sweep directory under --out"


def test_a_second_run_resumes_and_runs_nothing(tmp_path: Path) -> None:
    first = _run("hula/ablate.py", tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert " -> " in first.stderr  # a sweep ran
    again = _run("hula/ablate.py", tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert " -> " not in again.stderr
    # The same tables, read back from the sweep directory.
    assert again.stdout == first.stdout


def test_runs_differing_in_scheme_and_seed_form_one_sweep() -> None:
    cfg = ROOT / "experiments" / "hula" / "base.toml"
    pts = [
        (cfg, ["workload.load=0.5", f"scheme.kind={s}", f"run.seed={seed}"])
        for s in ["ecmp", "hula"]
        for seed in [1, 2]
    ]
    groups = points._groups(pts)
    assert len(groups) == 1
    (g,) = groups
    assert dict(g.base) == {"workload.load": "0.5"}
    assert dict(g.vary) == {"scheme.kind": ("ecmp", "hula"), "run.seed": (1, 2)}
    assert not g.lenient


def test_runs_that_are_not_a_cross_product_split_by_scheme() -> None:
    cfg = ROOT / "experiments" / "hula" / "base.toml"
    pts = [
        (cfg, ["scheme.kind=ecmp", "run.seed=1"]),
        (cfg, ["scheme.kind=ecmp", "run.seed=2"]),
        (cfg, ["scheme.kind=hula", "run.seed=1"]),
    ]
    groups = points._groups(pts)
    assert [(dict(g.base), dict(g.vary)) for g in groups] == [
        ({"scheme.kind": "ecmp"}, {"run.seed": (1, 2)}),
        ({"scheme.kind": "hula", "run.seed": "1"}, {}),
    ]
    # One scheme alone: the other schemes' keys in the config are tolerated.
    assert all(g.lenient for g in groups)


def test_a_later_override_of_a_key_wins_as_in_a_run() -> None:
    assert points.point_key("a.toml", ["x.y=1", "x.y=2"]) == points.point_key("a.toml", ["x.y=2"])


def test_rerun_runs_the_matching_points_again_with_the_same_digest(tmp_path: Path) -> None:
    cfg = ROOT / "experiments" / "hula" / "base.toml"
    pts = [(cfg, ["workload.flows=10", f"scheme.kind={s}"]) for s in ["ecmp", "hula"]]

    def summaries(got: dict[Any, points.Point]) -> dict[str, tuple[int, str]]:
        out = {}
        for key, p in got.items():
            summary = p.directory / "points" / p.point_id / "summary.json"
            out[dict(key[1])["scheme.kind"]] = (summary.stat().st_mtime_ns, p.row["digest"])
        return out

    first = summaries(points.run_points(pts, tmp_path, executor=ThreadPoolExecutor(2)))
    again = summaries(
        points.run_points(pts, tmp_path, executor=ThreadPoolExecutor(2), rerun=["scheme.kind=hula"])
    )
    assert again["ecmp"] == first["ecmp"]  # not run again
    assert again["hula"][0] != first["hula"][0]  # run again ...
    assert again["hula"][1] == first["hula"][1]  # ... to the same digest
