"""The `pisanet` command line: exit codes, one-line errors, and the result directory."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from _support import FLOW_COLUMNS, TINY, assert_one_line_error
from conftest import CliResult

Cli = Callable[..., CliResult]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_unknown_key_is_one_line_exit_2(cli: Cli, tmp_path: Path) -> None:
    config = write(tmp_path, "bad.toml", TINY.replace("leaves = 2", "leaves = 2\nleafs = 3"))
    line = assert_one_line_error(cli("run", config))
    assert "leafs" in line
    assert not (tmp_path / "results").exists()


def test_odd_fat_tree_k_is_one_line_exit_2(cli: Cli, tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "odd.toml",
        TINY.replace('kind = "leaf_spine"', 'kind = "fat_tree"\nk = 5').replace(
            "leaves = 2\nspines = 2\nhosts_per_leaf = 2\n", ""
        ),
    )
    line = assert_one_line_error(cli("run", config))
    assert "k" in line.split(":", 2)[1]
    assert "5" in line


@pytest.mark.parametrize("item", ["workload.load", "=0.5", "work load=1", "workload.load="])
def test_bad_set_syntax_is_one_line_exit_2(cli: Cli, tiny_config: Path, item: str) -> None:
    line = assert_one_line_error(cli("run", tiny_config, "--set", item))
    assert "key.path=value" in line


def test_set_of_an_unknown_key_is_one_line_exit_2(cli: Cli, tiny_config: Path) -> None:
    line = assert_one_line_error(cli("run", tiny_config, "--set", "workload.lod=0.5"))
    assert "lod" in line


def test_missing_config_file_is_one_line_exit_2(cli: Cli) -> None:
    line = assert_one_line_error(cli("run", "nowhere.toml"))
    assert "nowhere.toml" in line


def test_bad_usage_is_one_line_exit_2(cli: Cli, tiny_config: Path) -> None:
    assert_one_line_error(cli("run", tiny_config, "--no-such-option"))
    assert_one_line_error(cli("run"))
    assert_one_line_error(cli("frobnicate"))


def test_validate(cli: Cli, tiny_config: Path, tmp_path: Path) -> None:
    ok = cli("validate", tiny_config)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("ok: ")
    shown = cli("validate", tiny_config, "--show", "--set", "workload.flows=20")
    assert shown.returncode == 0, shown.stderr
    assert "flows = 20" in shown.stdout

    bad = write(tmp_path, "bad.toml", TINY.replace("load = 0.5", "load = -1.0"))
    line = assert_one_line_error(cli("validate", bad))
    assert "load" in line


def test_schema_is_json_schema(cli: Cli) -> None:
    out = cli("schema")
    assert out.returncode == 0, out.stderr
    schema = json.loads(out.stdout)
    assert isinstance(schema, dict)
    text = json.dumps(schema)
    for section in ("topology", "transport", "workload", "scheme"):
        assert section in text


def test_version_and_help_show_defaults(cli: Cli) -> None:
    import pisanet

    out = cli("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"pisanet {pisanet.__version__}"
    # Rich markup once ate "[default: ...]" from the help of --out and --workers.
    sweep_help = " ".join(cli("sweep", "--help").stdout.replace("│", " ").split())
    assert "(default: one per core)" in sweep_help


def test_resources(cli: Cli) -> None:
    ok = cli("resources", "ecmp")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip()
    assert_one_line_error(cli("resources", "no_such_scheme"))


def test_run_writes_every_file_atomically(cli: Cli, tiny_config: Path, tmp_path: Path) -> None:
    sampled = write(
        tmp_path,
        "sampled.toml",
        TINY
        + '\n[metrics]\nqueue_sample_interval_us = 50\nqueue_sample_ports = ["leaf0->spine"]\n',
    )
    out = cli("run", sampled, "--out", "res")
    assert out.returncode == 0, out.stderr
    res = tmp_path / "res"
    names = sorted(p.name for p in res.iterdir())
    # Nothing else, in particular no leftover temp file (`.name.XXXX.tmp`).
    assert names == [
        "config.resolved.toml",
        "flows.parquet",
        "ports.json",
        "queues.parquet",
        "summary.json",
    ]
    summary = json.loads((res / "summary.json").read_text())
    assert summary["flows"]["total"] == 50
    assert summary["digest"] in out.stdout
    flows = pd.read_parquet(res / "flows.parquet")
    assert list(flows.columns) == FLOW_COLUMNS
    assert len(flows) == 50
    queues = pd.read_parquet(res / "queues.parquet")
    assert list(queues.columns) == ["time", "port", "depth_bytes", "priority"]
    assert len(queues) > 0
    assert all(str(p).startswith("leaf0->spine") for p in queues["port"].unique())
    ports = json.loads((res / "ports.json").read_text())
    assert {"name", "tx_packets", "tx_bytes", "drops", "ecn_marks"} <= set(ports[0])
    assert "seed = 7" in (res / "config.resolved.toml").read_text()


def test_run_default_out_and_no_queues_when_not_sampled(cli: Cli, tiny_config: Path) -> None:
    out = cli("run", tiny_config, "--quiet")
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    res = tiny_config.parent / "results" / "tiny"
    assert (res / "summary.json").is_file()
    assert not (res / "queues.parquet").exists()


def test_dry_run_prints_the_resolved_config_and_writes_nothing(
    cli: Cli, tiny_config: Path, tmp_path: Path
) -> None:
    out = cli("run", tiny_config, "--dry-run", "--set", "run.seed=11", "--out", "res")
    assert out.returncode == 0, out.stderr
    assert "seed = 11" in out.stdout
    assert not (tmp_path / "res").exists()


def test_plot_writes_pngs(cli: Cli, tiny_config: Path, tmp_path: Path) -> None:
    assert cli("run", tiny_config, "--out", "res", "--quiet").returncode == 0
    out = cli("plot", "res")
    assert out.returncode == 0, out.stderr
    for name in ("fct_cdf.png", "slowdown_by_size.png"):
        data = (tmp_path / "res" / name).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n"), name
    assert not [p for p in (tmp_path / "res").iterdir() if p.name.endswith(".tmp")]
    assert_one_line_error(cli("plot", "nowhere"))


def test_bench_reports_speed(cli: Cli) -> None:
    out = cli("bench", "--scenario", "fat_tree_k8", "--flows", "200")
    assert out.returncode == 0, out.stderr
    for label in ("events/s", "packet-hops/s", "peak memory", "wall time"):
        assert label in out.stdout
    assert_one_line_error(cli("bench", "--scenario", "fat_tree_k99"))
