"""Runs an experiment's points through `pisanet.sweep` and reads them back.

The experiment scripts (experiments/hula, experiments/p4te) describe each
run as a config file and a list of `key=value` overrides, as a user would
type them after `pisanet run CONFIG --set`. `run_points` groups those runs
into sweeps: the runs of one config whose overrides differ only in
`scheme.kind` and `run.seed` form one sweep over those two keys (or, when
they are not a full cross product, one sweep over `run.seed` per scheme).
Each sweep goes into its own directory under the script's `--out` folder,
named `<config stem>-<hash of the config file's name and text, the other
overrides and the vary spec>`; a sweep directory remembers which points are finished, so an
interrupted script, run again, runs only what is missing.

Results come back as `Point`s: a point's row of the sweep's `runs` table
(the summary figures, flattened: `fct_us_mean`, `flows_completed`, ...) and,
on demand, its rows of the `ports` table and the `queues`, `port_rates` and
`flows` views (docs/results-format.md), all read with DuckDB.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

import pisanet
from pisanet import database

SCHEME_KEY = "scheme.kind"
SEED_KEY = "run.seed"

# A run's identity (`point_key`): its config file name and effective overrides.
PointKey = tuple[str, tuple[tuple[str, str], ...]]


def settings(sets: Iterable[str]) -> dict[str, str]:
    """`key=value` overrides as a dict (a later value of a key wins, as in a run)."""
    out: dict[str, str] = {}
    for s in sets:
        key, _, value = s.partition("=")
        out[key.strip()] = value.strip()
    return out


def point_key(config: str | Path, sets: Iterable[str]) -> PointKey:
    """The identity of a run: its config file name and its effective overrides."""
    return Path(config).name, tuple(sorted(settings(sets).items()))


@dataclass
class Point:
    """One finished run of a sweep."""

    directory: Path
    """The sweep directory."""
    point_id: str
    row: dict[str, Any]
    """The point's row of the `runs` table (NaN as None)."""

    def get(self, column: str, default: Any = None) -> Any:
        value = self.row.get(column, default)
        return default if value is None else value

    def _table(self, table: str, columns: str) -> pd.DataFrame:
        # NOTE: one query per sweep and table, shared by its points.
        frame = _sweep_table(self.directory, table, columns)
        if columns != "*" and not set(columns.split(", ")) <= set(frame.columns):
            # A view over no Parquet files (nothing sampled): no rows.
            return pd.DataFrame({c: pd.Series(dtype="float64") for c in columns.split(", ")})
        return frame[frame["point_id"] == self.point_id]

    def ports(self) -> list[dict[str, Any]]:
        """The point's per-port counters (`ports` table), as dicts."""
        frame = self._table("ports", "*")
        return [
            {k: v for k, v in rec.items() if k != "point_id"} for rec in frame.to_dict("records")
        ]

    def queues(self) -> pd.DataFrame:
        """`time`, `port`, `depth_bytes` of the point's queue samples."""
        return self._table("queues", "point_id, time, port, depth_bytes")

    def port_rates(self) -> pd.DataFrame:
        """`time`, `port`, `tx_gbps`, `carried_gbps` of the point's port-rate samples."""
        return self._table("port_rates", "point_id, time, port, tx_gbps, carried_gbps")

    def flows(self) -> pd.DataFrame:
        """The point's flows (`id`, `bytes`, `class`, `fct`, ...), in flow id order."""
        return database.query(
            self.directory,
            f"SELECT * FROM flows WHERE point_id = '{self.point_id}' ORDER BY id",
        )

    def counters(self) -> dict[str, float]:
        """The switch programs' diagnostic counters (`switches.counters.NAME.packets`)."""
        prefix, suffix = "switches_counters_", "_packets"
        return {
            k[len(prefix) : -len(suffix)]: v
            for k, v in self.row.items()
            if k.startswith(prefix) and k.endswith(suffix) and v is not None
        }


_TABLES: dict[tuple[Path, str], pd.DataFrame] = {}


def _sweep_table(directory: Path, table: str, columns: str) -> pd.DataFrame:
    key = (directory, table)
    if key not in _TABLES:
        # NOTE: a view over no Parquet files has only `point_id`: read all its columns.
        _TABLES[key] = database.query(directory, f"SELECT * FROM {table}")
    return _TABLES[key]


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return _clean(value.item())
    return value


@dataclass(frozen=True)
class _Group:
    config: Path
    base: tuple[tuple[str, str], ...]
    vary: tuple[tuple[str, tuple[Any, ...]], ...]
    lenient: bool = False
    """One scheme only: `run.unused_keys=ignore` (see `_groups`)."""

    def directory(self, out: Path) -> Path:
        # NOTE: the config file's text is in the name: after an edit to it, the
        # script runs its points again into a new directory (a sweep refuses
        # a directory that holds another base config).
        text = hashlib.sha256(self.config.read_bytes()).hexdigest()
        ident = json.dumps([self.config.name, text, self.base, self.vary], sort_keys=True)
        return out / f"{self.config.stem}-{hashlib.sha256(ident.encode()).hexdigest()[:10]}"


def _value(text: str) -> Any:
    """A vary value as the sweep wants it (a seed is a number, a scheme a string)."""
    try:
        return int(text)
    except ValueError:
        return text.strip('"')


def _groups(points: Sequence[tuple[Path, list[str]]]) -> list[_Group]:
    by: dict[tuple[Path, tuple[tuple[str, str], ...]], list[tuple[str | None, str | None]]] = {}
    for config, sets in points:
        s = settings(sets)
        scheme, seed = s.pop(SCHEME_KEY, None), s.pop(SEED_KEY, None)
        pairs = by.setdefault((Path(config), tuple(sorted(s.items()))), [])
        if (scheme, seed) not in pairs:
            pairs.append((scheme, seed))
    groups = []
    for (config, base), pairs in by.items():
        schemes = list(dict.fromkeys(p[0] for p in pairs))
        seeds = sorted(dict.fromkeys(p[1] for p in pairs), key=lambda x: (x is None, x and int(x)))
        full = len(pairs) == len(schemes) * len(seeds)
        parts = (
            [(schemes, seeds)]
            if full
            else [([sc], [p[1] for p in pairs if p[0] == sc]) for sc in schemes]
        )
        for sc, se in parts:
            vary: list[tuple[str, tuple[Any, ...]]] = []
            fixed = list(base)
            for key, values in [(SCHEME_KEY, sc), (SEED_KEY, se)]:
                if values == [None]:
                    continue
                if len(values) == 1:
                    fixed.append((key, str(values[0])))
                else:
                    vary.append((key, tuple(_value(str(v)) for v in values)))
            # NOTE (lenient): the configs carry the tables of every scheme a
            # script compares (a sweep over scheme.kind tolerates them); one
            # scheme alone would refuse the others' keys. Unknown keys are
            # still refused.
            lenient = not any(k == SCHEME_KEY for k, _ in vary)
            groups.append(_Group(config, tuple(sorted(fixed)), tuple(vary), lenient))
    return groups


# The executor of the sweeps that are given none (see `smoke_threads`).
_EXECUTOR: Executor | None = None


def smoke_threads() -> None:
    """Runs every sweep of this process on two threads (a run releases the GIL):
    for --smoke, whose many tiny sweeps would spend longer spawning worker
    processes than running."""
    global _EXECUTOR
    from concurrent.futures import ThreadPoolExecutor

    _EXECUTOR = ThreadPoolExecutor(2)


# Sweep directories whose `rerun` points were removed by this process (once each).
_FORGOTTEN: set[Path] = set()


def _forget(directory: Path, base: dict[str, str], rerun: Sequence[str]) -> None:
    """Removes the finished points of a sweep directory whose settings contain
    one of `rerun` (`key=value`), so that the sweep runs them again."""
    manifest = directory / "sweep.json"
    if not rerun or not manifest.is_file() or directory in _FORGOTTEN:
        return
    _FORGOTTEN.add(directory)
    wanted = settings(rerun).items()
    for pid, values in json.loads(manifest.read_text())["points"].items():
        own = {**base, **{k: str(v) for k, v in values.items()}}
        if any(own.get(k) == v for k, v in wanted):
            shutil.rmtree(directory / "points" / pid, ignore_errors=True)


def run_points(
    points: Iterable[tuple[str | Path, list[str]]],
    out: Path,
    workers: int | None = None,
    *,
    rerun: Sequence[str] = (),
    run: bool = True,
    executor: Executor | None = None,
    lenient: bool = False,
) -> dict[PointKey, Point]:
    """Runs every `(config, overrides)` (those already finished in `out` are read
    back, not run) and returns each as a `Point`, keyed by `point_key`.

    `rerun`: `key=value` settings; finished points with any of them are run
    again (after a change to a scheme: `scheme.kind=hula`). With `run=False`
    nothing runs: the points already finished are returned, the others are
    missing from the result. `executor`: run the points on it (e.g. a
    `ThreadPoolExecutor`) instead of `workers` spawned processes. `lenient`:
    every sweep gets `run.unused_keys=ignore` (otherwise only the sweeps of
    one scheme; see `_groups`).
    Raises RuntimeError naming the run when a point failed.
    """
    pts = [(Path(c), list(s)) for c, s in points]
    groups = _groups(pts)
    result: dict[PointKey, Point] = {}
    todo_total = len(groups)
    for i, g in enumerate(groups):
        directory = g.directory(out)
        sets = [f"{k}={v}" for k, v in g.base]
        if (g.lenient or lenient) and "run.unused_keys" not in dict(g.base):
            sets.append("run.unused_keys=ignore")
        vary = {k: list(vs) for k, vs in g.vary}
        if not run:
            if not (directory / "sweep.json").is_file():
                continue
            runs = database.query(directory, "SELECT * FROM runs WHERE status = 'ok'")
        else:
            _forget(directory, dict(g.base), rerun)
            done = _finished(directory)
            if done is None or done < _count(vary):
                print(
                    f"[{i + 1}/{todo_total}] {g.config.name} {' '.join(sets)}"
                    + "".join(f" {k}={','.join(map(str, vs))}" for k, vs in vary.items())
                    + f" -> {directory}",
                    file=sys.stderr,
                    flush=True,
                )
            executor = executor or _EXECUTOR
            pool = {"executor": executor} if executor is not None else {"workers": workers}
            runs = pisanet.sweep(g.config, vary, set=sets, out=directory, **pool).runs
        _TABLES.pop((directory, "ports"), None)
        _TABLES.pop((directory, "queues"), None)
        _TABLES.pop((directory, "port_rates"), None)
        for rec in runs.to_dict("records"):
            row = {str(k): _clean(v) for k, v in rec.items()}
            own = dict(g.base)
            if SCHEME_KEY in vary:
                own[SCHEME_KEY] = str(row["scheme_kind"])
            if SEED_KEY in vary:
                own[SEED_KEY] = str(int(row["seed"]))
            label = f"{g.config.name} " + " ".join(f"{k}={v}" for k, v in sorted(own.items()))
            if row["status"] != "ok":
                raise RuntimeError(f"{label}: {row['error']} (in {directory})")
            key = (g.config.name, tuple(sorted(own.items())))
            result[key] = Point(directory, str(row["point_id"]), row)
    missing = [p for p in pts if point_key(*p) not in result]
    if missing and run:  # a point whose settings the grouping lost: a bug here
        raise RuntimeError(f"not run: {missing[0]}")
    return result


def _count(vary: dict[str, list[Any]]) -> int:
    n = 1
    for vs in vary.values():
        n *= len(vs)
    return n


def _finished(directory: Path) -> int | None:
    points = directory / "points"
    if not points.is_dir():
        return None
    return sum(1 for p in points.iterdir() if (p / "summary.json").is_file())


def write_section(doc: Path, name: str, body: str) -> None:
    """Puts `body` into `doc` between `<!-- NAME:begin -->` and `<!-- NAME:end -->`."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = doc.read_text() if doc.exists() else f"{begin}\n{end}\n"
    if begin not in text or end not in text:
        print(f"warning: {doc} has no {begin} ... {end} markers; not written", file=sys.stderr)
        return
    i, j = text.index(begin) + len(begin), text.index(end)
    doc.write_text(text[:i] + "\n" + body + "\n" + text[j:])


def mode_name(args: Any) -> str:
    """The folder of a mode under `--out`: `smoke`, `quick` or `full`."""
    return "smoke" if args.smoke else "quick" if args.quick else "full"


def publish(args: Any, out: Path, name: str, body: str, write: Any, missing: int = 0) -> None:
    """Prints the tables; the full mode writes them into docs/ (`write(body)`),
    `--quick` into `OUT/quick/NAME.md` (its numbers are not the page's), and
    `--smoke` nowhere. With `missing` runs not finished (and not `--smoke`),
    the tables are printed but not written."""
    print(body)
    if missing and not args.smoke:
        print(
            f"{missing} runs not finished (run without --only/--tables): tables not written",
            file=sys.stderr,
        )
        return
    if args.smoke:
        return
    if args.quick:
        path = out / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body + "\n")
        print(f"wrote {path} (--quick: docs/results is left as it is)", file=sys.stderr)
        return
    write(body)


def add_arguments(ap: Any, default_out: str) -> None:
    """The options every experiment script shares."""
    ap.add_argument(
        "--out",
        type=Path,
        default=Path(default_out),
        help=f"folder of the sweep directories (default {default_out}); "
        "a rerun resumes the sweeps found there",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes per sweep (default: one per core)",
    )
