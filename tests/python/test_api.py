"""The Python API: `pisanet.run` and friends."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import pisanet
from _support import FLOW_COLUMNS, TINY

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

# The tiny config with the rates of two fabric ports (links of 10 Gb/s) sampled.
LINK_GBPS = 10.0
RATE_INTERVAL_US = 50.0
RATE_PORTS = ["leaf0->spine0", "spine1->leaf1"]
RATES = (
    TINY
    + f"\n[metrics]\nport_rate_interval_us = {RATE_INTERVAL_US}\n"
    + f"port_rate_ports = {json.dumps(RATE_PORTS)}\n"
)
# One 1500-byte packet over a sampling interval, in Gb/s.
RATE_SLACK_GBPS = 1500 * 8 / (RATE_INTERVAL_US * 1e3)


@pytest.fixture(scope="module")
def tiny_result() -> pisanet.Result:
    return pisanet.run(TINY)


def test_run_returns_a_flow_dataframe(tiny_result: pisanet.Result) -> None:
    flows = tiny_result.flows
    assert isinstance(flows, pd.DataFrame)
    assert list(flows.columns) == FLOW_COLUMNS
    assert len(flows) == 50
    assert flows["id"].tolist() == list(range(50))
    assert flows["class"].isin([0, 1]).all()
    assert (flows["bytes"] > 0).all()
    assert (flows["src"] != flows["dst"]).all()
    done = flows[flows["fct"].notna()]
    assert len(done) == tiny_result.summary["flows"]["completed"]
    # Times are microseconds: fct = finish - start.
    np.testing.assert_allclose(done["fct"], done["finish"] - done["start"], rtol=1e-9, atol=1e-6)
    assert tiny_result.queues is None
    assert tiny_result.port_rates is None
    assert tiny_result.summary["conservation_ok"] is True


def test_same_seed_same_digest_other_seed_other_digest(tiny_result: pisanet.Result) -> None:
    again = pisanet.run(TINY)
    assert again.summary["digest"] == tiny_result.summary["digest"]
    pd.testing.assert_frame_equal(again.flows, tiny_result.flows)
    other = pisanet.run(TINY, run__seed=8)
    assert other.summary["digest"] != tiny_result.summary["digest"]


def test_dict_file_and_text_configs_agree(tiny_result: pisanet.Result, tmp_path: Path) -> None:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    from_file = pisanet.run(path)
    from_dict = pisanet.run(tomllib.loads(TINY))
    assert from_file.summary["digest"] == tiny_result.summary["digest"]
    assert from_dict.summary["digest"] == tiny_result.summary["digest"]


def test_overrides_as_keywords_and_set(tmp_path: Path) -> None:
    by_keyword = pisanet.run(TINY, workload__flows=20, scheme__kind="ecmp")
    by_set = pisanet.run(TINY, set=["workload.flows=20"])
    assert len(by_keyword.flows) == 20
    assert by_keyword.summary["digest"] == by_set.summary["digest"]
    assert "flows = 20" in by_keyword.resolved_config


def test_run_with_out_writes_the_result_directory(tmp_path: Path) -> None:
    result = pisanet.run(TINY, out=tmp_path / "res")
    assert (tmp_path / "res" / "summary.json").is_file()
    # NOTE: streamed rows are in the order flows ended; `result.flows` is by id.
    written = pd.read_parquet(tmp_path / "res" / "flows.parquet")
    pd.testing.assert_frame_equal(
        written.sort_values("id", ignore_index=True), result.flows, check_dtype=True
    )


def test_port_rates_of_the_requested_ports(tmp_path: Path) -> None:
    result = pisanet.run(RATES, out=tmp_path / "res")
    rates = result.port_rates
    assert rates is not None
    assert list(rates.columns) == ["time", "port", "tx_gbps", "carried_gbps"]
    assert isinstance(rates["port"].dtype, pd.CategoricalDtype)
    assert set(rates["port"].astype(str)) == set(RATE_PORTS)
    for port, times in rates.groupby("port", observed=True)["time"]:
        # One sample per interval, at its end, in microseconds.
        expected = RATE_INTERVAL_US * np.arange(1, len(times) + 1)
        np.testing.assert_allclose(times, expected, err_msg=str(port))
    for column in ("tx_gbps", "carried_gbps"):
        assert (rates[column] >= 0).all(), column
        # NOTE: a packet counts in the interval its transmission starts in, so
        # an interval can hold up to one packet more than the link carries.
        assert (rates[column] <= LINK_GBPS + RATE_SLACK_GBPS).all(), column
    assert (rates["tx_gbps"] > 0).any()
    # No link fails: everything sent is carried.
    np.testing.assert_array_equal(rates["carried_gbps"], rates["tx_gbps"])

    path = tmp_path / "res" / "port_rates.parquet"
    pd.testing.assert_frame_equal(pd.read_parquet(path), rates, check_dtype=True)
    assert pq.read_schema(path).field("tx_gbps").metadata == {b"unit": b"Gb/s"}


def test_invalid_config_raises_config_error() -> None:
    with pytest.raises(pisanet.ConfigError, match="leafs"):
        pisanet.run(TINY.replace("leaves = 2", "leafs = 2"))
    with pytest.raises(pisanet.ConfigError):
        pisanet.run(TINY, workload__load=-0.5)
    with pytest.raises(pisanet.ConfigError, match=r"expected key\.path=value"):
        pisanet.run(TINY, set=["nonsense"])


def test_run_checks_files_once_and_resolve_without_check_reads_none(tmp_path: Path) -> None:
    # A flow list that does not exist: only building the workload finds it.
    missing = [
        "workload.pattern=file",
        f'workload.file="{tmp_path / "none.csv"}"',
        "run.unused_keys=ignore",
    ]
    with pytest.raises(pisanet.ConfigError, match=r"none\.csv"):
        pisanet.resolve(TINY, set=missing)
    with pytest.raises(pisanet.ConfigError, match=r"none\.csv"):
        pisanet.run(TINY, tmp_path / "out", set=missing)
    assert not (tmp_path / "out").exists()
    # Keys and ranges only (what `run` resolves before it runs).
    text = pisanet._core.resolve(TINY, None, missing, check=False)
    assert tomllib.loads(text)["workload"]["pattern"] == "file"
    with pytest.raises(pisanet.ConfigError, match="load"):
        pisanet._core.resolve(TINY, None, ["workload.load=-0.5"], check=False)


def test_progress_callback_sees_progress_and_can_stop() -> None:
    seen: list[tuple[float, int, int]] = []

    def stop(sim_time_s: float, completed: int, total: int) -> bool:
        seen.append((sim_time_s, completed, total))
        return False

    with pytest.raises(KeyboardInterrupt):
        pisanet.run(TINY, workload__flows=5000, progress=stop)
    assert len(seen) == 1
    sim_time_s, completed, total = seen[0]
    assert isinstance(sim_time_s, float) and sim_time_s >= 0
    assert 0 <= completed <= total == 5000


def test_progress_callback_exception_propagates() -> None:
    def boom(*_: object) -> bool:
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        pisanet.run(TINY, workload__flows=5000, progress=boom)


def test_schema_bench_and_resources() -> None:
    assert isinstance(pisanet.schema(), dict)
    assert "[topology]" in pisanet.bench_config("fat_tree_k8")
    with pytest.raises(pisanet.ConfigError):
        pisanet.bench_config("nope")
    assert pisanet.resources("ecmp").strip()
