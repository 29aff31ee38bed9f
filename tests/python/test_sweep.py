"""Sweeps: the cross product, resume, Ctrl-C and kill, Dask, the database, the report, errors."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

import pisanet
from _support import TINY, assert_one_line_error, cli_env
from pisanet import _core, database, sweeps

# 2 schemes x 2 loads x 2 seeds; the queues and the rates of leaf0's uplinks are sampled.
SAMPLED = (
    TINY + '\n[metrics]\nqueue_sample_interval_us = 50\nqueue_sample_ports = ["leaf0->spine"]\n'
    'port_rate_interval_us = 100\nport_rate_ports = ["leaf0->spine"]\n'
)
VARY = ["--vary", "scheme.kind=ecmp,hula", "--vary", "workload.load=0.3,0.6", "--seeds", "2"]
# Points that take about a second each, so that a sweep can be stopped halfway.
SLOW = TINY.replace("flows = 50", "flows = 700").replace(
    "max_sim_time_ms = 200", "max_sim_time_ms = 100000"
)


def pisanet_cli(
    cwd: Path, *args: str | Path, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pisanet", *map(str, args)],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def runs_of(directory: Path) -> pd.DataFrame:
    con = duckdb.connect(str(directory / "results.duckdb"), read_only=True)
    try:
        return con.execute("SELECT * FROM runs ORDER BY point_id").df()
    finally:
        con.close()


def summary_mtimes(directory: Path) -> dict[str, int]:
    return {p.parent.name: p.stat().st_mtime_ns for p in directory.glob("points/*/summary.json")}


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 8-point sweep on 2 local worker processes."""
    root = tmp_path_factory.mktemp("sweep")
    (root / "sampled.toml").write_text(SAMPLED)
    out = pisanet_cli(root, "sweep", "sampled.toml", *VARY, "--out", "sw", "--workers", "2")
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    return root / "sw"


def test_sweep_runs_every_point_once(swept: Path) -> None:
    runs = runs_of(swept)
    assert len(runs) == 8
    assert runs["point_id"].is_unique
    assert (runs["status"] == "ok").all()
    assert runs["error"].isna().all()
    combos = set(zip(runs["scheme_kind"], runs["workload_load"], runs["seed"], strict=True))
    assert combos == {
        (scheme, load, seed)
        for scheme in ("ecmp", "hula")
        for load in (0.3, 0.6)
        for seed in (1, 2)
    }
    for column in ("fct_us_mean", "fct_us_p99", "fct_us_short_p99", "flows_completed", "digest"):
        assert runs[column].notna().all(), column
    assert runs["digest"].is_unique
    assert sorted(p.name for p in (swept / "points").iterdir()) == sorted(runs["point_id"])
    for point in (swept / "points").iterdir():
        names = sorted(p.name for p in point.iterdir())
        assert names == [
            "config.resolved.toml",
            "flows.parquet",
            "port_rates.parquet",
            "ports.json",
            "queues.parquet",
            "summary.json",
        ]


def test_a_point_is_the_run_of_its_overrides(swept: Path) -> None:
    runs = runs_of(swept)
    row = runs[
        (runs["scheme_kind"] == "hula") & (runs["workload_load"] == 0.6) & (runs["seed"] == 2)
    ]
    alone = pisanet.run(SAMPLED, scheme__kind="hula", workload__load=0.6, run__seed=2)
    assert row["digest"].tolist() == [alone.summary["digest"]]
    assert row["fct_us_mean"].iloc[0] == pytest.approx(alone.summary["fct_us"]["mean"])


def test_flows_view_and_query_command(swept: Path) -> None:
    out = pisanet_cli(
        swept.parent,
        "query",
        "sw",
        "SELECT scheme_kind, workload_load, count(*) AS n, count(DISTINCT point_id) AS points "
        "FROM flows GROUP BY ALL ORDER BY ALL",
        "--format",
        "csv",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "scheme_kind,workload_load,n,points",
        "ecmp,0.3,100,2",
        "ecmp,0.6,100,2",
        "hula,0.3,100,2",
        "hula,0.6,100,2",
    ]
    table = pisanet_cli(swept.parent, "query", "sw", "SELECT count(*) AS points FROM runs")
    assert table.returncode == 0, table.stderr
    assert "points" in table.stdout and "8" in table.stdout
    line = assert_one_line_error(pisanet_cli(swept.parent, "query", "sw", "SELECT nope FROM runs"))
    assert "nope" in line
    assert_one_line_error(pisanet_cli(swept.parent, "query", "nowhere", "SELECT 1"))


def test_port_rates_view_holds_every_points_file(swept: Path) -> None:
    view = database.query(swept, "SELECT * FROM port_rates ORDER BY point_id, port, time")
    assert {"point_id", "scheme_kind", "workload_load", "seed"} <= set(view.columns)
    assert sorted(view["point_id"].unique()) == sorted(runs_of(swept)["point_id"])
    for pid, rows in view.groupby("point_id"):
        own = pd.read_parquet(swept / "points" / str(pid) / "port_rates.parquet")
        own = own.astype({"port": str}).sort_values(["port", "time"], ignore_index=True)
        assert set(own["port"]) == {"leaf0->spine0", "leaf0->spine1"}
        pd.testing.assert_frame_equal(
            rows[list(own.columns)].astype({"port": str}).reset_index(drop=True), own
        )


def test_rerun_does_nothing(swept: Path) -> None:
    before = summary_mtimes(swept)
    out = pisanet_cli(swept.parent, "sweep", "sampled.toml", *VARY, "--out", "sw")
    assert out.returncode == 0, out.stderr
    assert re.search(r"finished now\W+0\b", out.stdout), out.stdout
    assert re.search(r"finished before\W+8\b", out.stdout), out.stdout
    assert summary_mtimes(swept) == before
    assert len(runs_of(swept)) == 8


def test_report_writes_plots_and_index(swept: Path) -> None:
    out = pisanet_cli(swept.parent, "report", "sw")
    assert out.returncode == 0, out.stderr
    report = swept / "report"
    pngs = [
        "fct_vs_load.png",
        "fct_cdf.png",
        "slowdown_vs_load.png",
        "retransmissions_vs_load.png",
        "uplink_load_sd.png",
        "queue_depth_cdf.png",
    ]
    for name in pngs:
        data = (report / name).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000, name
    index = (report / "index.html").read_text()
    for name in pngs:
        assert f'src="{name}"' in index
    for point_id in runs_of(swept)["point_id"]:
        assert point_id in index
    assert not list(report.glob(".*.tmp"))


def test_scheme_colours_are_stable() -> None:
    from pisanet.report import scheme_colour

    assert scheme_colour("ecmp") == "#1f77b4"
    assert scheme_colour("hula") != scheme_colour("ecmp")
    assert scheme_colour("my_scheme") == scheme_colour("my_scheme")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_stopped_sweep_finishes_the_rest_without_duplicates(tmp_path: Path, sig: int) -> None:
    (tmp_path / "slow.toml").write_text(SLOW)
    args = ["-m", "pisanet", "sweep", "slow.toml", *VARY, "--out", "sw", "--workers", "1"]
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=tmp_path,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # NOTE: see test_interrupt.py: restore the default SIGINT disposition.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    points = tmp_path / "sw" / "points"
    deadline = time.monotonic() + 120
    while len(list(points.glob("*/summary.json"))) < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no point finished in time"
        time.sleep(0.05)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=30)
    if sig == signal.SIGINT:
        line = assert_one_line_error(
            subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), code=130
        )
        assert "interrupted" in line and "of 8 points finished" in line
    else:
        assert proc.returncode == -signal.SIGKILL
    finished = summary_mtimes(tmp_path / "sw")
    assert 2 <= len(finished) < 8, "the sweep was not stopped halfway"

    again = pisanet_cli(tmp_path, "sweep", "slow.toml", *VARY, "--out", "sw", "--workers", "2")
    assert again.returncode == 0, again.stderr
    runs = runs_of(tmp_path / "sw")
    assert len(runs) == 8
    assert runs["point_id"].is_unique
    assert (runs["status"] == "ok").all()
    after = summary_mtimes(tmp_path / "sw")
    assert len(after) == 8
    assert {k: after[k] for k in finished} == finished, "a finished point was run again"
    assert not list((tmp_path / "sw").rglob("*.tmp"))


@pytest.fixture(scope="module")
def dask_scheduler() -> Iterator[str]:
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        yield cluster.scheduler_address


def test_dask_sweep_gives_the_same_digests(
    swept: Path, dask_scheduler: str, tmp_path: Path
) -> None:
    (tmp_path / "sampled.toml").write_text(SAMPLED)
    out = pisanet_cli(
        tmp_path, "sweep", "sampled.toml", *VARY, "--out", "dsw", "--scheduler", dask_scheduler
    )
    assert out.returncode == 0, out.stderr
    local = runs_of(swept).set_index("point_id")["digest"]
    remote = runs_of(tmp_path / "dsw").set_index("point_id")["digest"]
    assert len(remote) == 8
    pd.testing.assert_series_equal(local, remote)


def test_unreachable_scheduler_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "tiny.toml").write_text(TINY)
    start = time.monotonic()
    out = pisanet_cli(
        tmp_path,
        "sweep",
        "tiny.toml",
        "--vary",
        "workload.load=0.3,0.6",
        "--out",
        "sw",
        "--scheduler",
        "tcp://127.0.0.1:9",
        "--connect-timeout",
        "1",
    )
    line = assert_one_line_error(out)
    assert "tcp://127.0.0.1:9" in line and "scheduler" in line
    assert time.monotonic() - start < 30
    assert not list((tmp_path / "sw" / "points").iterdir())


@pytest.mark.parametrize(
    ("vary", "needle"),
    [
        (["--vary", "workload.lod=0.3,0.6"], "lod"),
        (["--vary", "workload.load=0.3,-1"], "workload.load"),
        (["--vary", "workload.load"], "KEY=V1,V2"),
        (["--vary", "workload.load=0.3,"], "KEY=V1,V2"),
        (["--vary", "run.seed=1,2", "--seeds", "2"], "run.seed"),
        (["--vary", "workload.load=0.3", "--vary", "workload.load=0.6"], "twice"),
        (["--vary", "workload.load=0.3", "--workers", "2", "--scheduler", "tcp://x:1"], "both"),
    ],
)
def test_bad_vary_is_one_line_exit_2(tmp_path: Path, vary: list[str], needle: str) -> None:
    (tmp_path / "tiny.toml").write_text(TINY)
    line = assert_one_line_error(pisanet_cli(tmp_path, "sweep", "tiny.toml", *vary, "--out", "sw"))
    assert needle in line
    assert not (tmp_path / "sw").exists()


def test_out_holding_another_sweep_is_refused(swept: Path, tmp_path: Path) -> None:
    before = summary_mtimes(swept)
    (tmp_path / "sampled.toml").write_text(SAMPLED)
    other_vary = pisanet_cli(
        tmp_path, "sweep", "sampled.toml", "--vary", "workload.load=0.3,0.6", "--out", swept
    )
    assert "another sweep" in assert_one_line_error(other_vary)
    (tmp_path / "other.toml").write_text(SAMPLED.replace("flows = 50", "flows = 40"))
    other_config = pisanet_cli(tmp_path, "sweep", "other.toml", *VARY, "--out", swept)
    assert "another sweep" in assert_one_line_error(other_config)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    not_a_sweep = pisanet_cli(tmp_path, "sweep", "sampled.toml", *VARY, "--out", "busy")
    assert "not a sweep directory" in assert_one_line_error(not_a_sweep)
    assert summary_mtimes(swept) == before
    assert len(runs_of(swept)) == 8


def test_parse_vary() -> None:
    assert sweeps.parse_vary(
        [
            "scheme.kind=ecmp,hula",
            "workload.load=0.3, 0.6",
            'metrics.queue_sample_ports=["a","b"],[]',
        ]
    ) == {
        "scheme.kind": ["ecmp", "hula"],
        "workload.load": [0.3, 0.6],
        "metrics.queue_sample_ports": [["a", "b"], []],
    }
    assert sweeps.parse_vary(['scheme.kind="ecmp"']) == {"scheme.kind": ["ecmp"]}


def test_point_ids_are_stable_and_order_free() -> None:
    assert sweeps.point_id(["a=1", "b=2"]) == sweeps.point_id(["b=2", "a=1"])
    assert sweeps.point_id(["a=1"]) != sweeps.point_id(["a=2"])


def test_python_sweep_records_a_failed_point_and_retries_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run = _core.run

    def fail_at_high_load(text: str, base_dir: Any, overrides: list[str], progress: Any) -> Any:
        if "workload.load=0.6" in overrides:
            raise pisanet.InvariantError("conservation: 3 packets lost")
        return real_run(text, base_dir, overrides, progress)

    monkeypatch.setattr(_core, "run", fail_at_high_load)
    seen: list[pisanet.SweepProgress] = []
    with ThreadPoolExecutor(2) as pool:
        first = pisanet.sweep(
            TINY,
            {"workload.load": [0.3, 0.6]},
            seeds=2,
            out=tmp_path / "sw",
            executor=pool,
            progress=seen.append,
        )
    assert (first.total, first.ran, first.failed, first.skipped) == (4, 2, 2, 0)
    assert seen[-1] == pisanet.SweepProgress(total=4, done=2, running=0, failed=2, skipped=0)
    failed = first.runs[first.runs["status"] == "failed"]
    assert sorted(failed["workload_load"]) == [0.6, 0.6]
    assert (failed["error"] == "conservation: 3 packets lost").all()
    for pid in failed["point_id"]:
        error = json.loads((tmp_path / "sw" / "points" / pid / "error.json").read_text())
        assert error["type"] == "InvariantError"
        assert not (tmp_path / "sw" / "points" / pid / "summary.json").exists()

    monkeypatch.setattr(_core, "run", real_run)
    second = pisanet.sweep(
        TINY, {"workload.load": [0.3, 0.6]}, seeds=2, out=tmp_path / "sw", workers=2
    )
    assert (second.ran, second.failed, second.skipped) == (2, 0, 2)
    assert (second.runs["status"] == "ok").all()
    assert not list((tmp_path / "sw").glob("points/*/error.json"))
    flows = second.flows
    assert len(flows) == 4 * 50
    assert {"point_id", "workload_load", "seed", "fct"} <= set(flows.columns)


def test_python_sweep_errors_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(pisanet.ConfigError, match="lod"):
        pisanet.sweep(TINY, {"workload.lod": [0.5]}, out=tmp_path / "a")
    with pytest.raises(pisanet.ConfigError, match="non-empty list"):
        pisanet.sweep(TINY, {"workload.load": []}, out=tmp_path / "a")
    with pytest.raises(pisanet.ConfigError, match="seeds"):
        pisanet.sweep(TINY, seeds=0, out=tmp_path / "a")
    assert not (tmp_path / "a").exists()


def test_a_key_no_point_reads_is_refused_unless_the_base_ignores_unused_keys(
    tmp_path: Path,
) -> None:
    # ECMP does not read scheme.flowlet_timeout_us: refused, as `pisanet run` refuses it.
    config = TINY + "flowlet_timeout_us = 100.0\n"
    with pytest.raises(pisanet.ConfigError, match="flowlet_timeout_us"):
        pisanet.sweep(config, {"workload.load": [0.3, 0.5]}, out=tmp_path / "refused")
    # With run.unused_keys = "ignore" in the base (as `pisanet run` allows it).
    swept = pisanet.sweep(
        config,
        {"workload.load": [0.3, 0.5]},
        set=["run.unused_keys=ignore"],
        out=tmp_path / "ok",
        executor=ThreadPoolExecutor(2),
    )
    assert swept.ran == 2 and swept.failed == 0
