"""flows.parquet streamed while the run goes (issue 18): the same rows, schema and
digest as the table written whole, every row once across batches, and nothing
left behind when the run fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import pisanet
from _support import TINY
from pisanet import results

ROOT = Path(__file__).resolve().parents[2]

# Stopped early: some flows are still running (NaN FCT) when the run ends.
STOPPED = TINY.replace("max_sim_time_ms = 200", "max_sim_time_ms = 2")


@pytest.mark.parametrize("config", [TINY, STOPPED], ids=["finished", "stopped"])
def test_streamed_flows_parquet_equals_the_table_written_whole(config: str, tmp_path: Path) -> None:
    streamed = pisanet.run(config, out=tmp_path / "streamed")
    whole = pisanet.run(config)  # in memory, as before streaming
    assert streamed.summary["digest"] == whole.summary["digest"]
    old = tmp_path / "old.parquet"
    results._write_parquet(old, whole.flows)  # how flows.parquet was written before

    new_file = pq.read_table(tmp_path / "streamed" / "flows.parquet")
    old_file = pq.read_table(old)
    assert new_file.num_rows == old_file.num_rows == streamed.summary["flows"]["started"]
    # Same columns, types and units (the old file also carries pandas' metadata).
    assert new_file.schema.names == old_file.schema.names
    for a, b in zip(new_file.schema, old_file.schema, strict=True):
        assert (a.name, a.type, a.metadata) == (b.name, b.type, b.metadata)
    assert new_file.schema.metadata[b"pisanet.units"] == old_file.schema.metadata[b"pisanet.units"]
    # Same rows: NaN stored as null in both.
    assert new_file.sort_by("id").equals(old_file)
    pd.testing.assert_frame_equal(streamed.flows, whole.flows, check_dtype=True)
    if config is STOPPED:
        assert whole.flows["fct"].isna().any()


def test_more_flows_than_a_batch_are_each_written_once(tmp_path: Path) -> None:
    n = 70_000  # the native batch is 65 536 rows
    config = f"""
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4
[transport]
kind = "dctcp"
[workload]
cdf = "{ROOT / "experiments" / "soak" / "short_flows.cdf"}"
load = 0.3
flows = {n}
"""
    result = pisanet.run(config, out=tmp_path / "res")
    meta = pq.read_metadata(tmp_path / "res" / "flows.parquet")
    assert meta.num_rows == n
    assert meta.num_row_groups >= 2  # one per batch: it was streamed
    ids = pq.read_table(tmp_path / "res" / "flows.parquet", columns=["id"])["id"].to_pylist()
    assert sorted(ids) == list(range(n))
    assert result.flows["id"].tolist() == list(range(n))
    assert not [p.name for p in (tmp_path / "res").iterdir() if p.name.startswith(".")]


def test_a_failed_run_leaves_no_temp_file(tmp_path: Path) -> None:
    out = tmp_path / "res"

    def stop(*_: object) -> bool:
        return False

    with pytest.raises(KeyboardInterrupt):
        pisanet.run(TINY.replace("flows = 50", "flows = 5000"), out=out, progress=stop)
    assert not out.exists()


def test_a_failing_flow_writer_stops_the_run_with_its_error(tmp_path: Path) -> None:
    from pisanet import _core

    def full(columns: object) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        _core.run(TINY, None, [], None, full)


def test_import_pisanet_loads_no_heavy_library() -> None:
    code = (
        "import sys, pisanet\n"
        "heavy = [m for m in ('pandas', 'numpy', 'pyarrow', 'duckdb', 'matplotlib', 'dask')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_a_run_writing_its_directory_does_not_load_pandas(tmp_path: Path) -> None:
    code = (
        "import sys, pisanet\n"
        f"pisanet.run({TINY!r}, out={str(tmp_path / 'res')!r})\n"
        "print('pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_relative_out_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # NOTE: the streamed temp file's name is absolute (mkstemp); the directory
    # clean-up before the rename must still tell it from an old run's leftovers.
    monkeypatch.chdir(tmp_path)
    result = pisanet.run(TINY, out="res")
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == [
        "config.resolved.toml",
        "flows.parquet",
        "ports.json",
        "summary.json",
    ]
    assert len(result.flows) == result.summary["flows"]["started"]
