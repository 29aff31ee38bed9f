"""Hostile inputs and lost work (issues 22 and 19): result and sweep directories that
were damaged, killed workers and sweeps, a second sweep into the same directory,
runs stopped early, I/O errors, bad output paths, memory under `ulimit -v`."""

from __future__ import annotations

import errno
import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest

import pisanet
from _support import TINY, assert_one_line_error, cli_env
from pisanet import database, results, sweeps

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "experiments" / "demo" / "leaf_spine_ecmp.toml"
# Points of about a second each (2 x 2 leaf-spine, 700 flows).
SLOW = TINY.replace("flows = 50", "flows = 700").replace(
    "max_sim_time_ms = 200", "max_sim_time_ms = 100000"
)


def cli(cwd: Path, *args: str | Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pisanet", *map(str, args)],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def popen(cwd: Path, *args: str | Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pisanet", *map(str, args)],
        cwd=cwd,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def runs_of(directory: Path) -> pd.DataFrame:
    con = duckdb.connect(str(directory / database.DB_FILE), read_only=True)
    try:
        return con.execute("SELECT * FROM runs ORDER BY point_id").df()
    finally:
        con.close()


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    (tmp_path / "tiny.toml").write_text(TINY)
    return tmp_path / "tiny.toml"


# ---------------------------------------------------------------- result directories


def test_corrupt_summary_is_skipped_with_one_warning_and_rerun(tiny: Path) -> None:
    root = tiny.parent
    vary = ["--vary", "workload.load=0.3,0.5,0.7"]
    assert cli(root, "sweep", tiny, *vary, "--out", "sw", "-q").returncode == 0
    broken = sorted((root / "sw" / "points").iterdir())[0]
    (broken / "summary.json").write_text('{"flows": {"tot')
    (root / "sw" / database.DB_FILE).unlink()

    out = cli(root, "query", "sw", "SELECT point_id FROM runs", "-f", "csv")
    assert out.returncode == 0, out.stderr
    [warning] = out.stderr.splitlines()
    assert warning.startswith("warning: ") and f"{broken}/summary.json: corrupt" in warning
    assert broken.name not in out.stdout and len(out.stdout.splitlines()) == 1 + 2
    report = cli(root, "report", "sw")
    assert report.returncode == 0, report.stderr
    assert "summary.json: corrupt" in report.stderr and "Traceback" not in report.stderr

    # A corrupt flows.parquet is the same: left out, then run again.
    other = sorted((root / "sw" / "points").iterdir())[1]
    (other / "flows.parquet").write_bytes(b"PAR1 not parquet")
    again = cli(root, "sweep", tiny, *vary, "--out", "sw", "-q")
    assert again.returncode == 0, again.stderr
    assert again.stderr == ""
    runs = runs_of(root / "sw")
    assert len(runs) == 3 and runs["point_id"].is_unique and (runs["status"] == "ok").all()
    json.loads((broken / "summary.json").read_text())
    pq.read_table(other / "flows.parquet")


@pytest.mark.parametrize(
    "sql", ["", "   ", "/* only a comment */"], ids=["empty", "blank", "comment"]
)
def test_query_of_no_statement_is_one_line_exit_2(tiny: Path, sql: str) -> None:
    root = tiny.parent
    assert (
        cli(root, "sweep", tiny, "--vary", "workload.load=0.3", "--out", "sw", "-q").returncode == 0
    )
    line = assert_one_line_error(cli(root, "query", "sw", sql))
    assert "query:" in line


def test_dead_processes_temp_databases_are_removed(tiny: Path) -> None:
    root = tiny.parent
    assert (
        cli(root, "sweep", tiny, "--vary", "workload.load=0.3", "--out", "sw", "-q").returncode == 0
    )
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = [
        root / "sw" / f".{database.DB_FILE}.{dead.pid}.tmp",
        root / "sw" / f".{database.DB_FILE}.{dead.pid}.tmp.wal",
    ]
    live = root / "sw" / f".{database.DB_FILE}.{os.getppid()}.tmp"
    for path in [*stale, live]:
        path.write_bytes(b"left by a killed process")
    database.build(root / "sw")
    assert not any(p.exists() for p in stale)
    assert live.exists(), "a temp file of a live process was removed"


def test_out_must_be_a_result_directory(tiny: Path) -> None:
    root = tiny.parent
    line = assert_one_line_error(cli(root, "run", tiny, "--out", "", "-q"))
    assert "--out" in line and "empty" in line
    line = assert_one_line_error(
        cli(root, "sweep", tiny, "--vary", "workload.load=0.3", "--out", "")
    )
    assert "--out" in line and "empty" in line
    (root / "thesis").mkdir()
    (root / "thesis" / "chapter1.tex").write_text("my work")
    line = assert_one_line_error(cli(root, "run", tiny, "--out", "thesis", "-q"))
    assert "thesis" in line and "chapter1.tex" in line and "not a pisanet result" in line
    assert (root / "thesis" / "chapter1.tex").read_text() == "my work"
    assert sorted(p.name for p in (root / "thesis").iterdir()) == ["chapter1.tex"]
    # Under a file: the path is named.
    line = assert_one_line_error(cli(root, "run", tiny, "--out", "tiny.toml/res", "-q"))
    assert "tiny.toml/res" in line


def test_rerun_into_a_result_directory_removes_the_old_plots(tiny: Path) -> None:
    root = tiny.parent
    assert cli(root, "run", tiny, "--out", "res", "-q").returncode == 0
    assert cli(root, "plot", "res").returncode == 0
    (root / "res" / "flow_3.png").write_bytes(b"an old flow plot")
    (root / "res" / ".summary.json.abc123.tmp").write_bytes(b"a killed writer's")
    assert (root / "res" / "fct_cdf.png").is_file()
    again = cli(root, "run", tiny, "--out", "res", "-q", "--set", "run.seed=2")
    assert again.returncode == 0, again.stderr
    names = {p.name for p in (root / "res").iterdir()}
    assert names == {"summary.json", "flows.parquet", "ports.json", "config.resolved.toml"}


def test_a_run_stopped_at_its_time_limit_says_so_and_keeps_its_unfinished_flows(
    tiny: Path,
) -> None:
    root = tiny.parent
    out = cli(
        root, "run", tiny, "--out", "res", "--set", "run.max_sim_time_ms=5",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    [line] = [x for x in out.stdout.splitlines() if x.startswith("stopped early")]
    assert "run.max_sim_time_ms" in line and "of 50 flows unfinished" in line
    summary = json.loads((root / "res" / "summary.json").read_text())
    assert summary["stop_reason"] == "time_limit"
    flows = pd.read_parquet(root / "res" / "flows.parquet")
    assert len(flows) == summary["flows"]["started"]
    done = flows["fct"].notna()
    assert (flows.loc[done, "delivered"] == flows.loc[done, "bytes"]).all()
    unfinished = flows[~done]
    assert len(unfinished) > 0
    assert (unfinished["delivered"] < unfinished["bytes"]).all()
    assert unfinished["delivered"].sum() > 0, "no unfinished flow had delivered anything"
    # -q keeps the line: the figures are of a partial run.
    quiet = cli(root, "run", tiny, "--out", "res", "-q", "--set", "run.max_sim_time_ms=5")
    assert quiet.stdout.startswith("stopped early"), quiet.stdout
    # A complete run has no such line.
    full = cli(root, "run", tiny, "--out", "res2")
    assert "stopped early" not in full.stdout


def test_plot_of_a_run_where_no_flow_finished_is_one_line(tiny: Path) -> None:
    root = tiny.parent
    out = cli(root, "run", tiny, "--out", "res", "-q", "--set", "run.max_sim_time_ms=0.001")
    assert out.returncode == 0, out.stderr
    line = assert_one_line_error(cli(root, "plot", "res"))
    assert "nothing to plot" in line and "res" in line
    assert not list((root / "res").glob("*.png"))


def test_an_io_error_names_the_file_being_written(tmp_path: Path) -> None:
    def disk_full(tmp: Path) -> None:
        tmp.write_bytes(b"x")
        raise OSError(errno.ENOSPC, "No space left on device")

    target = tmp_path / "flows.parquet"
    with pytest.raises(OSError) as info:
        results.write_atomic(target, disk_full)
    assert info.value.filename == str(target)
    assert "No space left on device" in str(info.value)
    assert list(tmp_path.iterdir()) == []
    # The library's errors for a result directory under a file name it too.
    (tmp_path / "file").write_text("")
    result = pisanet.run(TINY)
    with pytest.raises(OSError) as info:
        results.write(tmp_path / "file" / "res", result)
    assert "file/res" in str(info.value.filename)


# ---------------------------------------------------------------- sweeps that lose nothing


def test_a_second_sweep_into_the_same_directory_is_refused(tiny: Path) -> None:
    root = tiny.parent
    with sweeps.locked(root / "sw"):
        line = assert_one_line_error(
            cli(root, "sweep", tiny, "--vary", "workload.load=0.3", "--out", "sw")
        )
        assert "another sweep" in line and f"pid {os.getpid()}" in line
    # Released, and the lock file does not make the directory "not empty".
    # (With a long config path on an 80-column terminal: the title is one line.)
    deep = root / "a-rather-long-directory-name" / "experiments-of-this-week"
    deep.mkdir(parents=True)
    config = deep / "leaf_spine_ecmp_with_a_long_name.toml"
    config.write_text(TINY)
    out = subprocess.run(
        [sys.executable, "-m", "pisanet", "sweep", str(config), "--vary", "workload.load=0.3",
         "--out", "sw"],
        cwd=root, env={**cli_env(), "COLUMNS": "80"}, capture_output=True, text=True,
        timeout=180, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert len(f"pisanet sweep {config}") > 80
    assert f"pisanet sweep {config}" in out.stdout.splitlines()


def test_an_unexpected_error_is_one_line_and_debug_shows_the_traceback(
    tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pisanet import cli as cli_module

    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("a bug\nover two lines")

    monkeypatch.setattr(pisanet, "resolve", broken)
    for debug in ([], ["--debug"]):
        monkeypatch.setattr(sys, "argv", ["pisanet", "validate", str(tiny), *debug])
        if debug:
            with pytest.raises(RuntimeError, match="a bug"):
                cli_module.app()
            continue
        with pytest.raises(SystemExit) as exit_info:
            cli_module.app()
        assert exit_info.value.code == 1
        [line] = capsys.readouterr().err.splitlines()
        assert line.startswith("error: internal error: RuntimeError: a bug over two lines")
        assert "--debug" in line


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _descendants(pid: int) -> list[int]:
    # NOTE: every thread's children (Dask's nanny starts its worker from another thread).
    children = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return children + [d for c in children for d in _descendants(c)]


def _workers_of(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    found = []
    for child in children.read_text().split():
        cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        if b"spawn_main" in cmdline and b"resource_tracker" not in cmdline:
            found.append(int(child))
    return found


def test_a_killed_worker_fails_only_its_point_and_the_sweep_goes_on(tmp_path: Path) -> None:
    (tmp_path / "slow.toml").write_text(SLOW)
    vary = ["--vary", "workload.load=0.2,0.3,0.4,0.5,0.6"]
    proc = popen(tmp_path, "sweep", "slow.toml", *vary, "--out", "sw", "--workers", "2", "-q")
    deadline = time.monotonic() + 60
    while len(workers := _workers_of(proc.pid)) < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.3)  # inside a point
    os.kill(workers[0], signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    line = assert_one_line_error(subprocess.CompletedProcess([], 1, stdout, stderr), code=1)
    assert "1 of 5 points failed" in line
    runs = runs_of(tmp_path / "sw")
    assert len(runs) == 5
    [failed] = runs[runs["status"] == "failed"].itertuples()
    assert "killed by SIGKILL" in failed.error and "out-of-memory" in failed.error
    # The next run resumes it, and only it.
    again = cli(tmp_path, "sweep", "slow.toml", *vary, "--out", "sw", "-q")
    assert again.returncode == 0, again.stderr
    runs = runs_of(tmp_path / "sw")
    assert len(runs) == 5 and (runs["status"] == "ok").all()


def test_soak_a_sweep_killed_at_random_moments_ends_with_each_point_once(
    tmp_path: Path,
) -> None:
    """The small version of the soak (scripts/soak.sh runs the big one)."""
    (tmp_path / "slow.toml").write_text(SLOW.replace("flows = 700", "flows = 300"))
    vary = ["--vary", "workload.load=0.2,0.3,0.4,0.5,0.6,0.7", "--seeds", "2"]
    args = ["sweep", "slow.toml", *vary, "--out", "sw", "--workers", "2", "-q"]
    rng = random.Random(19)
    for _ in range(3):
        proc = popen(tmp_path, *args)
        time.sleep(rng.uniform(1.0, 3.0))
        # The whole process group, as a kill of the session would.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    out = cli(tmp_path, *args)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    sw = tmp_path / "sw"
    runs = runs_of(sw)
    assert len(runs) == 12 and runs["point_id"].is_unique and (runs["status"] == "ok").all()
    assert set(runs["point_id"]) == set(json.loads((sw / "sweep.json").read_text())["points"])
    for point in (sw / "points").iterdir():
        flows = pq.read_table(point / "flows.parquet").to_pandas()
        assert len(flows) == json.loads((point / "summary.json").read_text())["flows"]["started"]
    total = database.query(sw, "SELECT count(*) AS n, count(DISTINCT point_id) AS p FROM flows")
    assert total["p"].item() == 12
    assert not [p for p in sw.rglob("*") if p.name.endswith((".tmp", ".wal"))]


# ---------------------------------------------------------------- Dask


def test_dask_tls_settings_are_passed_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import distributed

    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("-----BEGIN CERTIFICATE-----\n")
    security = sweeps.tls_security(
        str(tmp_path / "ca.pem"), str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    )
    assert security.require_encryption
    assert security.tls_ca_file == str(tmp_path / "ca.pem")
    assert security.tls_client_cert == str(tmp_path / "cert.pem")
    seen: dict[str, object] = {}

    class Refused(Exception):
        pass

    def fake_client(address: str, **kwargs: object) -> None:
        seen.update(kwargs, address=address)
        raise Refused("handshake refused")

    monkeypatch.setattr(distributed, "Client", fake_client)
    with pytest.raises(pisanet.ConfigError, match=r"tls://127\.0\.0\.1:1"):
        sweeps.sweep(
            TINY, {"workload.load": [0.3]}, out=tmp_path / "sw",
            scheduler="tls://127.0.0.1:1", security=security,
        )  # fmt: skip
    assert seen["security"] is security and seen["address"] == "tls://127.0.0.1:1"
    (tmp_path / "tiny.toml").write_text(TINY)
    line = assert_one_line_error(
        cli(
            tmp_path, "sweep", "tiny.toml", "--vary", "workload.load=0.3",
            "--scheduler", "tls://127.0.0.1:1", "--tls-ca-file", "nope.pem", "--tls-cert", "c.pem",
        )
    )  # fmt: skip
    assert "--tls-ca-file nope.pem: no such file" in line
    line = assert_one_line_error(
        cli(tmp_path, "sweep", "tiny.toml", "--vary", "workload.load=0.3", "--tls-cert", "c.pem")
    )
    assert "--tls-ca-file and --tls-cert go together" in line


def test_dask_scheduler_that_goes_away_fails_the_rest_and_a_rerun_resumes(
    tmp_path: Path,
) -> None:
    (tmp_path / "slow.toml").write_text(SLOW)
    port = 20000 + os.getpid() % 20000
    address = f"tcp://127.0.0.1:{port}"
    bin_dir = Path(sys.executable).parent

    def cluster() -> list[subprocess.Popen[bytes]]:
        scheduler = subprocess.Popen(
            [bin_dir / "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port),
             "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        worker = subprocess.Popen(
            [bin_dir / "dask", "worker", address, "--nworkers", "1", "--nthreads", "1",
             "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        from distributed import Client

        with Client(address, timeout=120, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=120)
        return [scheduler, worker]

    def stop(procs: list[subprocess.Popen[bytes]]) -> None:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()

    vary = ["--vary", "workload.load=0.2,0.3,0.4,0.5"]
    args = ["sweep", "slow.toml", *vary, "--out", "sw", "--scheduler", address, "-q"]
    procs = cluster()
    try:
        sweep = popen(tmp_path, *args, "--connect-timeout", "120")
        deadline = time.monotonic() + 180

        # A worker killed mid-point: its nanny starts a new one, Dask runs the point again.
        def dask_workers() -> list[int]:
            return [p for p in _descendants(procs[1].pid) if b"spawn_main" in _cmdline(p)]

        while not (tmp_path / "sw" / "sweep.json").exists():
            assert sweep.poll() is None, sweep.communicate()
            assert time.monotonic() < deadline, "the sweep did not start"
            time.sleep(0.05)
        time.sleep(2.0)
        killed = [os.kill(pid, signal.SIGKILL) for pid in dask_workers()]
        assert len(killed) == 1, "no Dask worker process to kill"
        while not list((tmp_path / "sw" / "points").glob("*/summary.json")):
            assert sweep.poll() is None, sweep.communicate()
            assert time.monotonic() < deadline, "no point finished"
            time.sleep(0.05)
        stop(procs[:1])  # the scheduler goes away
        stdout, stderr = sweep.communicate(timeout=120)
    finally:
        stop(procs)
    line = assert_one_line_error(subprocess.CompletedProcess([], 1, stdout, stderr), code=1)
    assert "points failed" in line
    runs = runs_of(tmp_path / "sw")
    assert (runs["status"] == "ok").sum() >= 1 and (runs["status"] == "failed").sum() >= 1
    # The killed worker cost no point: only the lost scheduler failed some.
    assert runs.loc[runs["status"] == "failed", "error"].str.contains("Dask|scheduler").all()

    procs = cluster()
    try:
        again = cli(tmp_path, *args, "--connect-timeout", "120")
    finally:
        stop(procs)
    assert again.returncode == 0, again.stderr
    runs = runs_of(tmp_path / "sw")
    assert len(runs) == 4 and (runs["status"] == "ok").all()


# ---------------------------------------------------------------- memory


@pytest.mark.parametrize(
    "sets",
    [
        ["topology.leaves=100000"],
        ["topology.leaves=1e7"],
        ["workload.flows=1e12"],
        ["run.unused_keys=ignore", "topology.kind=fat_tree", "topology.k=64", "workload.flows=1e9"],
    ],
    ids=["1e5-leaves", "1e7-leaves", "1e12-flows", "fat-tree-1e9-flows"],
)
def test_runaway_sizes_are_refused_under_an_address_space_limit(
    tiny: Path, sets: list[str]
) -> None:
    """`ulimit -v` 3 GB: a runaway allocation would abort (exit 134), not be refused."""
    limit = 3 * 1024**3

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = {k: v for k, v in cli_env().items() if k != "PISANET_MEMORY_LIMIT_MB"}
    args = [a for s in sets for a in ("--set", s)]
    for command in (["validate"], ["run", "--out", "res", "-q"]):
        out = subprocess.run(
            [sys.executable, "-m", "pisanet", *command, str(tiny), *args],
            cwd=tiny.parent, env=env, capture_output=True, text=True, timeout=60,
            preexec_fn=limited, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        line = assert_one_line_error(out)
        # Refused by the memory estimate (before allocating), or by the key's range.
        assert line.startswith(("error: topology.", "error: workload.")), line
        assert "GB available" in line or "must be in" in line, line
