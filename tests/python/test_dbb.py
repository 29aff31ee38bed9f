"""`pisanet dbb-plan`: DBB's plan (seed 001) of the paper's Fig. 2a and Fig. 5."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from _support import assert_one_line_error
from conftest import CliResult

Cli = Callable[..., CliResult]
DBB = Path(__file__).resolve().parents[2] / "experiments" / "dbb"


def table(paths: list[list[str]]) -> list[str]:
    """Paths as the paper's tables write them: "1246", ..."""
    return ["".join(s.removeprefix("S") for s in path) for path in paths]


def test_fig2a_json_is_table_iii(cli: Cli) -> None:
    result = cli("dbb-plan", DBB / "fig2a.toml", "--src", "S1", "--sink", "S6", "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["N"] == 4
    assert table(plan["pdc_paths"]) == ["1246", "1356", "1256", "1346"]
    assert plan["stage_sums"] == [2, 4, 2]
    assert plan["max_flow_bps"] == 12_000_000_000


def test_fig5_json_is_table_iv(cli: Cli) -> None:
    result = cli("dbb-plan", DBB / "fig5.toml", "--src", "S1", "--sink", "S6", "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["N"] == 10
    assert table(plan["pdc_paths"]) == [
        "1246", "1356", "1356", "1346", "1356", "1256", "1346", "1356", "1346", "1356"
    ]  # fmt: skip
    assert [link["n"] for link in plan["links"]] == [2, 8, 1, 1, 3, 5, 4, 6]


def test_text_output_names_n_and_the_pdc(cli: Cli) -> None:
    result = cli("dbb-plan", DBB / "fig2a.toml", "--src", "S1", "--sink", "S6")
    assert result.returncode == 0, result.stderr
    assert "N = lcm(2, 4, 2) = 4" in result.stdout
    assert "Q(S6) = 4" in result.stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--src", "S1", "--sink", "S9"], ['unknown switch "S9"']),
        (["--src", "h1", "--sink", "S6"], ["is a host"]),
        (["--src", "S1", "--sink", "S6", "--set", "scheme.dbb.max_pdc=5"], ["5, 10, 5", "max_pdc"]),
        (["--src", "S1", "--sink", "S1"], ["same switch"]),
    ],
)
def test_bad_input_is_one_line_exit_2(cli: Cli, args: list[str], words: list[str]) -> None:
    line = assert_one_line_error(cli("dbb-plan", DBB / "fig5.toml", *args))
    for w in words:
        assert w in line, line


def test_non_layered_topology_is_refused(cli: Cli, tmp_path: Path) -> None:
    nodes = [("h1", "host"), ("h2", "host"), ("S1", "switch"), ("S2", "switch")]
    nodes.append(("S3", "switch"))
    links = [("h1", "S1"), ("h2", "S3"), ("S1", "S2"), ("S2", "S3"), ("S1", "S3")]
    (tmp_path / "tri.toml").write_text(
        "".join(f'[[nodes]]\nname = "{n}"\nkind = "{k}"\n' for n, k in nodes)
        + "".join(f'[[links]]\na = "{a}"\nb = "{b}"\ngbps = 10.0\n' for a, b in links)
    )
    config = (DBB / "fig5.toml").read_text().replace("fig5_topology.toml", "tri.toml")
    config = config.replace('file = "one_flow.csv"', 'file = "flows.csv"')
    (tmp_path / "flows.csv").write_text("0,0,1,1000\n")
    (tmp_path / "tri_config.toml").write_text(config)
    line = assert_one_line_error(
        cli("dbb-plan", tmp_path / "tri_config.toml", "--src", "S1", "--sink", "S3")
    )
    assert "not layered" in line
