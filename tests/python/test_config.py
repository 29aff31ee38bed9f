"""Config input on the Python side: files, text, dicts, `--set` and keyword overrides."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pisanet
from pisanet.config import keyword_overrides, load, parse_set, toml_value

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")


def test_load_reads_a_file_and_its_directory(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[run]\nseed = 1\n")
    assert load(path) == ("[run]\nseed = 1\n", tmp_path)
    assert load(str(path)) == ("[run]\nseed = 1\n", tmp_path)


def test_load_takes_text_and_dicts() -> None:
    assert load("[run]\nseed = 1\n") == ("[run]\nseed = 1\n", None)
    text, base_dir = load({"run": {"seed": 3}, "workload": {"load": 0.5, "cdf": "websearch"}})
    assert base_dir is None
    assert tomllib.loads(text) == {
        "run": {"seed": 3},
        "workload": {"load": 0.5, "cdf": "websearch"},
    }


def test_load_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(pisanet.ConfigError, match="no such file"):
        load(tmp_path / "missing.toml")
    with pytest.raises(pisanet.ConfigError, match="is a directory"):
        load(tmp_path)


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ("workload.load=0.5", "workload.load=0.5"),
        (" topology.k = 4 ", "topology.k=4"),
        ('scheme.kind="ecmp"', 'scheme.kind="ecmp"'),
        ('metrics.queue_sample_ports=["a=b"]', 'metrics.queue_sample_ports=["a=b"]'),
    ],
)
def test_parse_set_accepts_key_value(item: str, expected: str) -> None:
    assert parse_set([item]) == [expected]


@pytest.mark.parametrize("item", ["foo", "=1", "a.=1", ".a=1", "a..b=1", "a b=1", "a.b=", "1a=2"])
def test_parse_set_rejects_malformed(item: str) -> None:
    with pytest.raises(pisanet.ConfigError, match=r"expected key\.path=value"):
        parse_set([item])


def test_keyword_overrides_use_double_underscore_for_dots() -> None:
    assert keyword_overrides({"workload__load": 0.5, "scheme__kind": "ecmp", "run__seed": 9}) == [
        "workload.load=0.5",
        'scheme.kind="ecmp"',
        "run.seed=9",
    ]


TOML_SCALARS = (
    st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text()
)


TOML_VALUES = st.recursive(
    TOML_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(TOML_VALUES)
def test_toml_value_round_trips(value: object) -> None:
    text = toml_value(value)
    assert "\n" not in text
    assert tomllib.loads(f"v = {text}")["v"] == value


def test_toml_value_non_finite_floats() -> None:
    assert math.isnan(tomllib.loads(f"v = {toml_value(math.nan)}")["v"])
    assert tomllib.loads(f"v = {toml_value(-math.inf)}")["v"] == -math.inf
