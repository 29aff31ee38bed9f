"""Shared fixtures: a tiny config file and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

from _support import TINY, cli_env

CliResult = subprocess.CompletedProcess[str]

# NOTE: Hypothesis keeps caches in a directory of its own; keep it out of the work tree.
os.environ.setdefault(
    "HYPOTHESIS_STORAGE_DIRECTORY",
    str(Path(__file__).resolve().parents[2] / "target" / "hypothesis"),
)

# NOTE: CI explores the same examples every run; locally each run draws new ones.
# Neither keeps an example database in the work tree.
settings.register_profile("dev", database=None)
settings.register_profile("ci", database=None, derandomize=True, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def tiny_config(tmp_path: Path) -> Path:
    """The tiny config (a 2x2 leaf-spine, 2 hosts per leaf, 50 flows) as a file."""
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


@pytest.fixture
def cli(tmp_path: Path) -> Callable[..., CliResult]:
    """Runs `python -m pisanet ARGS` in tmp_path; returns the completed process."""

    def run(*args: str | os.PathLike[str], timeout: float = 120) -> CliResult:
        return subprocess.run(
            [sys.executable, "-m", "pisanet", *map(str, args)],
            cwd=tmp_path,
            env=cli_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    return run
