"""Per-flow measurement reaching Python: goodput.parquet, the new flow columns,
the sweep database's `goodput` view and `jain` macro."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pisanet
from _support import TINY

INTERVAL_US = 20.0
MEASURED = TINY + f"\n[metrics]\nflow_stats = true\ngoodput_interval_us = {INTERVAL_US}\n"


@pytest.fixture(scope="module")
def measured() -> pisanet.Result:
    return pisanet.run(MEASURED)


def test_goodput_reaches_the_result_and_integrates_to_the_bytes(
    measured: pisanet.Result, tmp_path: Path
) -> None:
    goodput = measured.goodput
    assert goodput is not None
    assert list(goodput.columns) == ["time", "flow", "bytes", "gbps"]
    flows = measured.flows
    done = flows[flows["fct"].notna()]
    per_flow = goodput.groupby("flow")["bytes"].sum()
    for _, f in done.iterrows():
        # TCP (transport 0) delivers every byte; UDP what was not lost.
        delivered = f["bytes"] if f["transport"] == 0 else f["bytes"] - f["lost_bytes"]
        assert per_flow[f["id"]] == delivered
    np.testing.assert_allclose(
        goodput["gbps"], goodput["bytes"] * 8 / (INTERVAL_US * 1e3), rtol=1e-12
    )
    # Times are interval ends.
    np.testing.assert_allclose(goodput["time"] / INTERVAL_US % 1, 0, atol=1e-9)
    # Written and read back as it is.
    pisanet.results.write(tmp_path / "res", measured)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "res" / "goodput.parquet"), goodput)


def test_flow_stats_columns_and_summary(measured: pisanet.Result) -> None:
    flows = measured.flows
    done = flows[flows["fct"].notna()]
    assert done["delay_mean"].notna().all()
    assert (done["delay_p50"] <= done["delay_max"] + 1e-9).all()
    assert (done["rtt_mean"] > 0).all() or done["rtt_mean"].isna().any()
    s = measured.summary
    assert s["flow_stats"]["delay_us"]["packets"] > 0
    assert 0 < s["fairness"]["jain_index"] <= 1
    assert s["loss"]["packets"] == int(flows["lost_packets"].sum())


def test_off_by_default() -> None:
    plain = pisanet.run(TINY)
    assert plain.goodput is None
    assert plain.flows["delay_mean"].isna().all()
    assert plain.summary["flow_stats"] is None


def test_sweep_database_has_goodput_and_jain(tmp_path: Path) -> None:
    swept = pisanet.sweep(
        MEASURED,
        {"workload.load": [0.3, 0.5]},
        out=tmp_path / "sweep",
        executor=ThreadPoolExecutor(2),
    )
    view = swept.query("SELECT point_id, sum(bytes) AS b FROM goodput GROUP BY ALL ORDER BY 1")
    assert len(view) == 2
    for _, row in view.iterrows():
        own = pd.read_parquet(tmp_path / "sweep" / "points" / row["point_id"] / "goodput.parquet")
        assert row["b"] == own["bytes"].sum()
    jain = swept.query("SELECT point_id, jain(gbps) AS j FROM goodput GROUP BY ALL")
    assert ((jain["j"] > 0) & (jain["j"] <= 1 + 1e-12)).all()
    # The macro is Jain's index: equal values give 1, one of n non-zero 1/n.
    one = swept.query("SELECT jain(x) AS j FROM (VALUES (2.0), (2.0), (2.0)) AS t(x)")
    assert one["j"][0] == pytest.approx(1.0)
    third = swept.query("SELECT jain(x) AS j FROM (VALUES (3.0), (0.0), (0.0)) AS t(x)")
    assert third["j"][0] == pytest.approx(1 / 3)
    runs = swept.query("SELECT fairness_jain_index, loss_packets FROM runs")
    assert runs["fairness_jain_index"].notna().all()
