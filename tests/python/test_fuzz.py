"""Fuzzing of the Python-side parsers a user feeds (hypothesis): `--set` and `--vary`
options, sweep manifests and point summaries, SQL. Each input is accepted or refused
with a `ConfigError` (one line, exit 2 in the CLI); never another exception.

The suite runs a short pass (`PISANET_FUZZ_CASES`, default 40 to 200 examples per test);
a long one: `PISANET_FUZZ_CASES=1000000 .venv/bin/python -m pytest tests/python/test_fuzz.py`.
The Rust parsers (config, flow lists, CDFs, topologies) are fuzzed by
crates/pisanet/tests/fuzz.rs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _support import TINY
from pisanet import _core, database, sweeps
from pisanet._core import ConfigError
from pisanet.config import parse_set


def fuzz(default: int) -> settings:
    return settings(
        max_examples=int(os.environ.get("PISANET_FUZZ_CASES", default)),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


KEYS = ["workload.load", "scheme.kind", "topology.leaves", "run.seed", "transport.min_rto_us"]
PIECES = [
    "=", ",", "[", "]", "{", "}", '"', "'", ".", "0.3", "1e300", "nan", "-1", "inf",
    "18446744073709551616", "ecmp", "hula", " ", "\n", "\x00", "\ufeff", "=,", "[1,", "é",
]  # fmt: skip
tokens = st.lists(st.sampled_from(PIECES + KEYS), max_size=12).map("".join)
text = st.one_of(tokens, st.text(max_size=60))


def one_line(e: BaseException) -> None:
    assert isinstance(e, ConfigError), repr(e)
    assert "\n" not in str(e) and str(e), repr(e)


@fuzz(200)
@given(st.lists(st.one_of(text, st.builds(lambda k, v: f"{k}={v}", st.sampled_from(KEYS), text))))
def test_set_options(items: list[str]) -> None:
    try:
        overrides = parse_set(items)
    except ConfigError as e:
        one_line(e)
        return
    try:
        _core.resolve(TINY, None, overrides)
    except ConfigError as e:
        one_line(e)


@fuzz(200)
@given(
    st.lists(
        st.one_of(text, st.builds(lambda k, v: f"{k}={v}", st.sampled_from(KEYS), text)),
        max_size=3,
    )
)
def test_vary_specs(items: list[str]) -> None:
    try:
        vary = sweeps.parse_vary(items)
    except ConfigError as e:
        one_line(e)
        return
    # Planning (every point resolved) is bounded: at most a few hundred points here.
    if len(vary) > 0 and all(len(v) < 8 for v in vary.values()):
        try:
            sweeps.plan(TINY, vary)
        except ConfigError as e:
            one_line(e)


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fuzz") / "sw"
    sweeps.sweep(TINY, {"workload.load": [0.3, 0.5]}, out=out, workers=1)
    return out


@fuzz(40)
@given(st.one_of(text, st.builds(lambda t: f"SELECT {t} FROM runs", text)))
def test_sql(sweep_dir: Path, sql: str) -> None:
    try:
        database.query(sweep_dir, sql)
    except ConfigError as e:
        one_line(e)


@fuzz(100)
@given(st.one_of(text, st.binary(max_size=80).map(lambda b: b.decode("latin-1"))))
def test_damaged_manifest_and_summary(tmp_path_factory: pytest.TempPathFactory, junk: str) -> None:
    directory = tmp_path_factory.mktemp("damaged")
    (directory / sweeps.MANIFEST).write_text(junk, encoding="utf-8", errors="surrogateescape")
    try:
        sweeps.read_manifest(directory)
    except ConfigError as e:
        one_line(e)
    point = directory / "point"
    point.mkdir()
    (point / "summary.json").write_text(junk, encoding="utf-8", errors="surrogateescape")
    (point / "flows.parquet").write_bytes(junk.encode("utf-8", "surrogateescape"))
    try:
        sweeps.read_finished(point)
    except ValueError as e:
        assert str(point) in str(e) and "\n" not in str(e)
    # Junk is never a Parquet file: the point is to be run again.
    assert sweeps.is_finished(point) is False
