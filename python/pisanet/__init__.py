"""pisanet: a packet-level data-center network simulator with programmable switches.

The simulator is Rust (the native module `pisanet._core`); this package is the
Python face of it: `run` a config and get a `Result` (summary dict, flows as a
pandas DataFrame), `sweep` it over loads, schemes and seeds and get a
`SweepResult` (the `runs` table, SQL over every point's flows), or use the
`pisanet` command line.

    >>> import pisanet
    >>> result = pisanet.run("experiments/demo/leaf_spine_ecmp.toml", workload__load=0.5)
    >>> result.flows["fct"].quantile(0.99)  # microseconds
    >>> swept = pisanet.sweep(
    ...     "experiments/demo/leaf_spine_ecmp.toml",
    ...     {"scheme.kind": ["ecmp", "hula"], "workload.load": [0.3, 0.6]},
    ...     seeds=2,
    ... )
    >>> swept.runs.groupby(["scheme", "workload_load"])["fct_us_p99"].mean()
"""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pisanet import _core, results
from pisanet._core import ConfigError, InvariantError, __version__
from pisanet.config import ConfigLike, keyword_overrides, load, parse_set
from pisanet.results import Result

if TYPE_CHECKING:
    from pisanet.sweeps import SweepInterrupted, SweepProgress, SweepResult, sweep

# NOTE: `import pisanet` loads no numpy, pandas, pyarrow, DuckDB or plotting
# library: each is imported where it is used (a run that writes its result
# directory needs pyarrow only; `Result.flows` pandas). The sweep API is
# loaded when first named (docs/performance.md, "The fixed cost").
_SWEEP_NAMES = ("SweepInterrupted", "SweepProgress", "SweepResult", "sweep")


def __getattr__(name: str) -> Any:
    if name in _SWEEP_NAMES:
        from pisanet import sweeps

        return getattr(sweeps, name)
    raise AttributeError(f"module 'pisanet' has no attribute {name!r}")


__all__ = [
    "ConfigError",
    "InvariantError",
    "Result",
    "SweepInterrupted",
    "SweepProgress",
    "SweepResult",
    "__version__",
    "bench_config",
    "dbb_plan",
    "resolve",
    "resources",
    "run",
    "schema",
    "sweep",
]

Progress = Callable[[float, int, int], "bool | None"]


def _overrides(set: Iterable[str], overrides: dict[str, Any]) -> list[str]:
    return parse_set(set) + keyword_overrides(overrides)


def resolve(config: ConfigLike, *, set: Iterable[str] = (), **overrides: Any) -> str:
    """Validates a config and returns it resolved, every default filled in, as TOML.

    Raises `ConfigError` naming the offending key.
    """
    text, base_dir = load(config)
    return _core.resolve(text, base_dir, _overrides(set, overrides))


def run(
    config: ConfigLike,
    out: str | os.PathLike[str] | None = None,
    *,
    set: Iterable[str] = (),
    progress: Progress | None = None,
    **overrides: Any,
) -> Result:
    """Runs a simulation and returns its `Result`.

    `config` is a TOML file (`Path`, or `str` without newline or `=`), TOML text,
    or a dict. Overrides are `key.path=value` strings in `set`, or keywords with
    `__` for dots: `run(cfg, workload__load=0.5, run__seed=7)`. With `out`, the
    result directory is written as well (see `pisanet.results`).

    `progress(sim_time_s, flows_completed, flows_total)` is called now and then;
    returning False stops the run. Ctrl-C stops it with `KeyboardInterrupt`.
    Raises `ConfigError` for invalid input, `InvariantError` when the run broke
    an invariant (a simulator bug).

    With `out`, the flow table is written to `out/flows.parquet` while the run
    goes, a batch of finished flows at a time, and not kept in memory:
    `result.flows` reads it back when first asked for.
    """
    result, _ = _run(config, out, set=set, progress=progress, overrides=overrides)
    return result


def _run(
    config: ConfigLike,
    out: str | os.PathLike[str] | None,
    *,
    set: Iterable[str],
    progress: Progress | None,
    overrides: dict[str, Any],
) -> tuple[Result, list[Path]]:
    """`run`, and the files it wrote into `out` (for the command line)."""
    text, base_dir = load(config)
    flat = _overrides(set, overrides)
    # Keys and ranges only: the run itself builds (and so checks) the network
    # and workload, once.
    resolved = _core.resolve(text, base_dir, flat, check=False)
    if out is None:
        result = results.from_native(_core.run(text, base_dir, flat, progress), resolved)
        _warn(result)
        return result, []
    directory = results.check_out(out)  # before the run, not after it
    created = not directory.exists()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OSError(e.errno, f"cannot write: {e.strerror}", str(directory)) from None
    flows = results.FlowsWriter(directory)
    try:
        payload = _core.run(text, base_dir, flat, progress, flows)
        result = results.from_native(payload, resolved, flows_file=flows.path)
        _warn(result)
        written = results.write(directory, result, flows=flows)
    except BaseException:
        flows.discard()
        if created:
            # A failed or interrupted run leaves no result directory behind.
            with contextlib.suppress(OSError):
                directory.rmdir()
        raise
    return result, written


def _warn(result: Result) -> None:
    for message in result.summary.get("warnings", []):
        warnings.warn(message, RuntimeWarning, stacklevel=4)


def schema() -> dict[str, Any]:
    """The JSON Schema of the config."""
    parsed: dict[str, Any] = json.loads(_core.schema())
    return parsed


def bench_config(name: str) -> str:
    """The config (TOML) of a standard benchmark scenario, e.g. "fat_tree_k8"."""
    text = _core.bench_config(name)
    if text is None:
        raise ConfigError(f"bench scenario: unknown {name!r}, expected fat_tree_k8 or fat_tree_k16")
    return text


def resources(scheme: str) -> str:
    """The resource report (tables, registers, stages) of a scheme's switch programs."""
    return _core.resources(scheme)


def dbb_plan(
    config: ConfigLike, src: str, sink: str, *, set: Iterable[str] = (), **overrides: Any
) -> dict[str, Any]:
    """DBB's plan (seed 001, section III) of the source-sink switch pair `src` ->
    `sink` on the config's topology: `links` (b_ij, stage, rho_ij, N_ij), `stages`,
    `stage_sums`, `N`, `quotas`, each switch's `rules` and `pdc_paths` (the N paths
    of a PDC in order, each a list of switch names from `src` to `sink`).

    Raises `ConfigError` for an unknown switch, a non-layered maximum flow or a
    PDC longer than `scheme.dbb.max_pdc`.
    """
    text, base_dir = load(config)
    plan: dict[str, Any] = json.loads(
        _core.dbb_plan(text, src, sink, base_dir, _overrides(set, overrides))
    )
    return plan
