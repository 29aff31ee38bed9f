"""The result directory: atomic writes and the columns' units."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from pisanet import results
from pisanet.results import Result, write_atomic, write_text_atomic


def test_write_atomic_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    write_text_atomic(path, "one")
    write_text_atomic(path, "two")
    assert path.read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_write_atomic_failure_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("old")

    def half_then_fail(tmp: Path) -> None:
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, half_then_fail)
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def _columns(**arrays: np.ndarray) -> dict[str, tuple[str, bytes]]:
    return {k: (a.dtype.str, a.tobytes()) for k, a in arrays.items()}


def test_columns_cross_as_little_endian_buffers() -> None:
    n = 3
    flows = results.flows_frame(
        _columns(
            id=np.arange(n, dtype="<u4"),
            src=np.array([0, 1, 2], dtype="<u4"),
            dst=np.array([3, 2, 1], dtype="<u4"),
            bytes=np.array([1000, 2_000_000, 50], dtype="<u8"),
            **{"class": np.array([0, 1, 0], dtype="u1")},
            start_us=np.array([0.0, 1.5, 2.0]),
            finish_us=np.array([10.0, np.nan, 4.0]),
            fct_us=np.array([10.0, np.nan, 2.0]),
            slowdown=np.array([1.5, np.nan, 1.0]),
            retransmissions=np.zeros(n, dtype="<u4"),
            reordered=np.array([0, 2, 0], dtype="<u4"),
            transport=np.array([0, 1, 0], dtype="u1"),
            priority=np.zeros(n, dtype="u1"),
            group=np.zeros(n, dtype="<u4"),
            lost_packets=np.array([0, 3, 0], dtype="<u4"),
            lost_bytes=np.array([0, 4380, 0], dtype="<u8"),
            delay_mean_us=np.full(n, np.nan),
            delay_p50_us=np.full(n, np.nan),
            delay_p99_us=np.full(n, np.nan),
            delay_max_us=np.full(n, np.nan),
            rtt_mean_us=np.full(n, np.nan),
            rtt_p99_us=np.full(n, np.nan),
            rtt_max_us=np.full(n, np.nan),
            deadline_missed_packets=np.zeros(n, dtype="<u8"),
            dup_acks=np.zeros(n, dtype="<u4"),
            fast_retransmits=np.zeros(n, dtype="<u4"),
            timeouts=np.zeros(n, dtype="<u4"),
            delay_packets=np.zeros(n, dtype="<u8"),
            delivered=np.array([1000, 14600, 50], dtype="<u8"),
        )
    )
    assert list(flows.columns) == list(results.FLOW_COLUMNS.values())
    assert flows["bytes"].tolist() == [1000, 2_000_000, 50]
    assert flows["fct"].isna().tolist() == [False, True, False]

    queues = results.queues_frame(
        {
            **_columns(
                time_us=np.array([0.0, 100.0, 100.0]),
                port=np.array([1, 0, 1], dtype="<u4"),
                depth_bytes=np.array([0, 1500, 3000], dtype="<u8"),
                priority=np.array([0, 0, 1], dtype="<u1"),
            ),
            "port_names": ("str", ["leaf0->spine0", "leaf0->spine1"]),
        }
    )
    assert queues is not None
    assert queues["port"].astype(str).tolist() == [
        "leaf0->spine1",
        "leaf0->spine0",
        "leaf0->spine1",
    ]
    assert list(queues.columns) == list(results.QUEUE_COLUMNS.values())
    assert queues["priority"].tolist() == [0, 0, 1]

    rates = results.port_rates_frame(
        {
            **_columns(
                time_us=np.array([50.0, 50.0, 100.0]),
                port=np.array([0, 1, 0], dtype="<u4"),
                tx_gbps=np.array([9.5, 0.0, 2.5]),
                carried_gbps=np.array([9.5, 0.0, 0.0]),
            ),
            "port_names": ("str", ["S1->A3", "S2->A3"]),
        }
    )
    assert rates is not None
    assert list(rates.columns) == list(results.PORT_RATE_COLUMNS.values())
    assert rates["port"].astype(str).tolist() == ["S1->A3", "S2->A3", "S1->A3"]
    assert rates["tx_gbps"].tolist() == [9.5, 0.0, 2.5]
    assert rates["carried_gbps"].tolist() == [9.5, 0.0, 0.0]


def test_no_samples_means_no_queue_or_port_rate_table() -> None:
    empty = np.array([], dtype="<f8")
    columns = {
        "time_us": ("<f8", empty.tobytes()),
        "port": ("<u4", b""),
        "depth_bytes": ("<u8", b""),
        "tx_gbps": ("<f8", b""),
        "carried_gbps": ("<f8", b""),
        "port_names": ("str", []),
    }
    assert results.queues_frame(columns) is None
    assert results.port_rates_frame(columns) is None


def test_write_records_units_in_parquet(tmp_path: Path) -> None:
    flows = pd.DataFrame({name: [1] for name in results.FLOW_COLUMNS.values()})
    result = Result(summary={"digest": "x"}, flows=flows, queues=None, ports=[], resolved_config="")
    written = results.write(tmp_path / "out", result)
    assert [p.name for p in written] == [
        "config.resolved.toml",
        "flows.parquet",
        "ports.json",
        "summary.json",
    ]
    schema = pq.read_schema(tmp_path / "out" / "flows.parquet")
    assert schema.field("fct").metadata == {b"unit": b"us"}
    assert b"pisanet.units" in schema.metadata


def test_a_rewrite_drops_the_samples_the_new_run_does_not_have(tmp_path: Path) -> None:
    flows = pd.DataFrame({name: [1] for name in results.FLOW_COLUMNS.values()})
    samples = pd.DataFrame({"time": [1.0], "port": ["a->b"], "depth_bytes": [0]})
    rates = pd.DataFrame({"time": [1.0], "port": ["a->b"], "tx_gbps": [1.0], "carried_gbps": [1.0]})
    sampled = Result(
        summary={"digest": "x"},
        flows=flows,
        queues=samples,
        ports=[],
        resolved_config="",
        port_rates=rates,
    )
    out = tmp_path / "out"
    results.write(out, sampled)
    assert (out / results.QUEUES_FILE).is_file() and (out / results.PORT_RATES_FILE).is_file()
    plain = Result(summary={"digest": "y"}, flows=flows, queues=None, ports=[], resolved_config="")
    results.write(out, plain)
    assert not (out / results.QUEUES_FILE).exists()
    assert not (out / results.PORT_RATES_FILE).exists()
    assert sorted(p.name for p in out.iterdir()) == [
        "config.resolved.toml",
        "flows.parquet",
        "ports.json",
        "summary.json",
    ]


def test_ports_json_is_written_as_the_core_made_it_and_parsed_when_asked(tmp_path: Path) -> None:
    import json

    import pisanet

    toml = tmp_path / "tiny.toml"
    toml.write_text(
        '[topology]\nkind = "leaf_spine"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n'
        '[workload]\ncdf = "websearch"\nflows = 5\nload = 0.3\n'
    )
    res = pisanet.run(toml, out=tmp_path / "out")
    # Not parsed until asked for: the core's text goes to the file as it is.
    assert res.__dict__["_ports"] is None
    text = (tmp_path / "out" / "ports.json").read_text()
    assert text == res.ports_json()
    lines = text.splitlines()
    # One port a line, between the brackets; 2 leaves x (2 hosts + 2 spines)
    # ports, 2 spines x 2 leaves, 4 hosts x 1.
    assert lines[0] == "[" and lines[-1] == "]"
    assert len(lines) == 2 + 2 * 4 + 2 * 2 + 4
    assert json.loads(text) == res.ports
    assert {"name", "tx_packets", "drops"} <= set(res.ports[0])


def test_ports_given_parsed_are_written_in_the_same_layout(tmp_path: Path) -> None:
    import json

    ports = [{"name": "a->b", "drops": 1}, {"name": "b->a", "drops": 0}]
    flows = pd.DataFrame({name: [1] for name in results.FLOW_COLUMNS.values()})
    result = Result(
        summary={"digest": "x"}, flows=flows, queues=None, ports=ports, resolved_config=""
    )
    results.write(tmp_path / "out", result)
    text = (tmp_path / "out" / "ports.json").read_text()
    assert text == '[\n{"name":"a->b","drops":1},\n{"name":"b->a","drops":0}\n]\n'
    assert json.loads(text) == ports
    with pytest.raises(TypeError, match="ports"):
        Result(summary={}, flows=flows, queues=None, ports=None, resolved_config="")
