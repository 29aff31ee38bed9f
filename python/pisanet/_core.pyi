"""Typed stub of the native module `pisanet._core` (crates/pisanet-py).

Columns cross as `(dtype, buffer)` pairs: a numpy dtype string and a
little-endian byte buffer (`numpy.frombuffer(buffer, dtype)`). The ports of
queue samples and port rates are dictionary-encoded: `port` holds `<u4` codes
into `port_names`.
"""

import os
from collections.abc import Callable
from typing import Any

__all__ = [
    "ConfigError",
    "InvariantError",
    "__version__",
    "bench_config",
    "dbb_plan",
    "resolve",
    "resources",
    "run",
    "schema",
    "unused_keys",
]
__version__: str

class ConfigError(ValueError):
    """The config or another input (CDF, flow list, topology file) is invalid."""

class InvariantError(RuntimeError):
    """A run violated an invariant (packet conservation, exactly-once delivery)."""

def run(
    text: str,
    base_dir: str | os.PathLike[str] | None = None,
    overrides: list[str] = ...,
    progress: Callable[[float, int, int], bool | None] | None = None,
    flows: Callable[[dict[str, tuple[str, bytes]]], object] | None = None,
) -> tuple[
    str,
    dict[str, tuple[str, bytes]],
    dict[str, tuple[str, bytes] | tuple[str, list[str]]],
    str,
    dict[str, tuple[str, bytes] | tuple[str, list[str]]],
    dict[str, Any],
    dict[str, tuple[str, bytes]],
]:
    """Runs a config (TOML text).

    Returns `(summary_json, flows, queues, ports_json, port_rates, capture, goodput)`.

    `goodput` holds the per-flow goodput series columns (`time_us`, `flow`,
    `bytes`, `gbps`), empty unless `metrics.goodput_interval_us` > 0.

    `capture` is `{"pcap": [(port, pcap file bytes)], "trace": columns}`; the
    trace's `node` and `port` are dictionary-encoded (`node_names`,
    `port_names`) and `event` holds codes into `event_names`.

    `progress(sim_time_s, flows_completed, flows_total)` is called at most every
    50 ms of wall time; returning False stops the run (KeyboardInterrupt).

    With `flows`, the flow table's columns go to `flows(columns)` instead, a
    batch of at most 65 536 rows at a time as flows end (then the flows still
    running at the end; the last call may have no rows), and the returned
    `flows` columns are empty. An exception it raises stops the run and is
    raised here.
    """

def resolve(
    text: str,
    base_dir: str | os.PathLike[str] | None = None,
    overrides: list[str] = ...,
    check: bool = True,
) -> str:
    """Validates a config and returns it resolved, every default filled in, as TOML.

    With `check=False` only keys, types and ranges are validated (the network
    and workload are not built): for a caller that runs the config next.
    """

def schema() -> str:
    """The JSON Schema of the config."""

def unused_keys(text: str, overrides: list[str]) -> list[str]:
    """The keys the config (with overrides) gives but does not read."""

def bench_config(name: str) -> str | None:
    """A standard benchmark scenario's config (TOML), or None for an unknown name."""

def resources(scheme: str) -> str:
    """The resource report of a scheme's switch programs, as text."""

def dbb_plan(
    text: str,
    src: str,
    sink: str,
    base_dir: str | os.PathLike[str] | None = None,
    overrides: list[str] = ...,
) -> str:
    """DBB's plan of the pair `src` -> `sink` (switch names) of the config's topology, as JSON."""
