"""Priority flow control through the Python API: the PFC figures reach the
sweep database (`runs`, `ports`), the queue samples carry the priority, and a
lossless run drops nothing while the same run without PFC drops."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import pisanet

# Two UDP senders at line rate into one receiver, all on one switch.
TOPOLOGY = """\
nodes = [
  { name = "a", kind = "host" }, { name = "b", kind = "host" }, { name = "r", kind = "host" },
  { name = "s", kind = "switch" },
]
links = [
  { a = "a", b = "s", gbps = 10 }, { a = "b", b = "s", gbps = 10 }, { a = "r", b = "s", gbps = 10 },
]
"""
FLOWS = "0,0,2,1000000\n0,1,2,1000000\n"
CONFIG = """\
[run]
max_sim_time_ms = 20
[topology]
kind = "custom"
file = "incast.toml"
buffer_kb = 200
[transport]
kind = "udp"
udp_rate_gbps = 10.0
[workload]
pattern = "file"
file = "flows.csv"
[metrics]
queue_sample_interval_us = 20
queue_sample_ports = ["s->r"]
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> pisanet.SweepResult:
    root = tmp_path_factory.mktemp("pfc")
    (root / "incast.toml").write_text(TOPOLOGY)
    (root / "flows.csv").write_text(FLOWS)
    (root / "incast_pfc.toml").write_text(CONFIG)
    with ThreadPoolExecutor(2) as pool:
        return pisanet.sweep(
            root / "incast_pfc.toml",
            {"topology.pfc.enabled": [False, True]},
            out=root / "sw",
            executor=pool,
        )


def test_pfc_figures_are_in_the_runs_table(swept: pisanet.SweepResult) -> None:
    runs = swept.query(
        "SELECT topology_pfc_enabled AS pfc, status, packets_dropped, pfc_pause_frames_sent,"
        " pfc_paused_time_us FROM runs ORDER BY pfc"
    )
    assert list(runs["status"]) == ["ok", "ok"]
    off, on = runs.iloc[0], runs.iloc[1]
    assert not off["pfc"] and on["pfc"]
    # Without PFC the receiver's port overflows; with it the fabric is lossless.
    assert off["packets_dropped"] > 0
    assert on["packets_dropped"] == 0
    assert on["pfc_pause_frames_sent"] > 0
    assert on["pfc_paused_time_us"] > 0
    assert pisanet_is_null(off["pfc_pause_frames_sent"])


def test_pfc_counters_per_port_and_priority_are_in_the_ports_table(
    swept: pisanet.SweepResult,
) -> None:
    ports = swept.query(
        "SELECT r.topology_pfc_enabled AS pfc, p.name, p.pause_sent, p.pause_received,"
        " p.pause_sent_p0, p.paused_us FROM ports p JOIN runs r USING (point_id)"
        " ORDER BY pfc, p.name"
    )
    on = ports[ports["pfc"]]
    off = ports[~ports["pfc"].astype(bool)]
    # The switch pauses the senders: its ports towards them send PAUSE, the
    # senders' NIC ports receive it and stay paused for a while.
    assert on.loc[on["name"].isin(["s->a", "s->b"]), "pause_sent"].min() > 0
    sender_nics = on[on["name"].isin(["a->s", "b->s"])]
    assert (sender_nics["pause_received"] > 0).all()
    assert (sender_nics["paused_us"] > 0).all()
    # All traffic is priority 0: the per-priority column equals the total.
    assert (on["pause_sent_p0"] == on["pause_sent"]).all()
    assert off["pause_sent"].isna().all()


def test_queue_samples_carry_the_priority(swept: pisanet.SweepResult) -> None:
    q = swept.query(
        "SELECT r.topology_pfc_enabled AS pfc, max(q.depth_bytes) AS peak, min(q.priority) AS lo,"
        " max(q.priority) AS hi FROM queues q JOIN runs r USING (point_id) GROUP BY ALL"
        " ORDER BY pfc"
    )
    assert list(q["lo"]) == [0, 0] and list(q["hi"]) == [0, 0]
    # Both runs fill the receiver's port. (With PFC a lossless queue is admitted
    # by its ingress accounts, not the port's drop-tail limit: docs/model.md.)
    assert (q["peak"] > 100_000).all()


def pisanet_is_null(v: object) -> bool:
    return v is None or v != v  # NULL comes back as None or NaN


def test_pfc_result_directory_has_the_port_counters(tmp_path: Path) -> None:
    (tmp_path / "incast.toml").write_text(TOPOLOGY)
    (tmp_path / "flows.csv").write_text(FLOWS)
    (tmp_path / "c.toml").write_text(CONFIG)
    res = pisanet.run(tmp_path / "c.toml", tmp_path / "out", topology__pfc__enabled=True)
    assert res.summary["pfc"]["pause_frames_sent"] > 0
    assert res.summary["packets"]["dropped"] == 0
    assert (tmp_path / "out" / "ports.json").exists()
