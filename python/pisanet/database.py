"""The DuckDB database of a sweep directory: `DIR/results.duckdb`.

Owns building it from the point folders (`pisanet.sweeps` writes those) and
running SQL against it. Holds:

- `runs` (table): one row per finished or failed point. `point_id`, `status`
  (`ok` or `failed`), one column per varied key (dots become underscores:
  `workload.load` -> `workload_load`; `workload_load` is there even when the
  load is not varied), `seed`, every summary figure flattened the same way
  (`fct_us_mean`, `fct_us_short_p99`, `packets_dropped`, with PFC on
  `pfc_pause_frames_sent`, `pfc_paused_time_us`, ...), and `error` (the
  message of a failed point, else NULL).
- `flows` (view): every finished point's `flows.parquet`, with `point_id`, the
  varied keys and `seed` in front.
- `queues` (view): the same over `queues.parquet`, for points that sampled queues.
- `port_rates` (view): the same over `port_rates.parquet`, for points that sampled
  port rates.
- `trace` (view): the same over `trace.parquet`, for points that traced packets
  (`[metrics.trace]`).
- `goodput` (view): the same over `goodput.parquet`, for points with
  `metrics.goodput_interval_us` > 0.
- `jain(x)` (macro): Jain's fairness index of the values of `x` in a group,
  `sum(x)^2 / (count(x) * sum(x^2))`, e.g. per point and interval:
  `SELECT point_id, time, jain(gbps) FROM goodput GROUP BY ALL` (an interval in
  which a flow delivered nothing has no row, so such a flow does not count there).
- `ports` (table): every finished point's `ports.json`, with `point_id` (with
  PFC on also `pause_sent`, `pause_received`, `paused_us`, ... per port, and
  per lossless priority as `pause_sent_p0`, ...; NULL for points without PFC).
- `meta` (table): the directory the views read from, and when it was built.

The database is derived data: it is rebuilt (into a temp file, then renamed)
after every sweep and by `query` when it is missing or older than a point.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from pisanet._core import ConfigError
from pisanet.results import GOODPUT_FILE, PORT_RATES_FILE, QUEUES_FILE, TRACE_FILE
from pisanet.sweeps import (
    ERROR_FILE,
    MANIFEST,
    POINTS,
    SEED_KEY,
    json_object,
    read_finished,
    read_manifest,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DB_FILE = "results.duckdb"
# Always in `runs`, varied or not: the x axis of most plots.
LOAD_KEY = "workload.load"


def column_name(key: str) -> str:
    """A config key or summary path as a column name: `fct_us.short.p99` -> `fct_us_short_p99`."""
    return key.replace(".", "_").replace("-", "_")


def flatten(value: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Flattens nested dicts into `(column, value)` pairs."""
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping):
            yield from flatten(item, f"{name}.")
        else:
            yield column_name(name), item


def _config_value(resolved: dict[str, Any], key: str) -> Any:
    value: Any = resolved
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _cell(value: Any) -> Any:
    """Lists and tables (a varied `queue_sample_ports`, say) go into the table as JSON text."""
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def runs_frame(directory: Path, left_out: list[str] | None = None) -> pd.DataFrame:
    """The `runs` table of a sweep directory, built from its point folders.

    A point whose files are corrupt is left out, with a line naming the file:
    appended to `left_out`, or a RuntimeWarning when it is None.
    """
    manifest = read_manifest(directory)
    # NOTE: `run.seed` is the `seed` column, varied or not.
    varied = [key for key, _ in manifest["vary"] if key != SEED_KEY]
    keys = varied if LOAD_KEY in varied else [*varied, LOAD_KEY]
    rows = []
    for pid, values in manifest["points"].items():
        point_dir = directory / POINTS / pid
        summary_path, error_path = point_dir / "summary.json", point_dir / ERROR_FILE
        try:
            if summary_path.is_file():
                summary = read_finished(point_dir)
                status, error = "ok", None
            elif error_path.is_file():
                summary = {}
                error = json_object(error_path).get("message")
                status = "failed"
            else:
                continue
        except (ValueError, OSError) as e:
            message = f"{e}; point {pid} left out (a rerun of the sweep runs it again)"
            if left_out is None:
                warnings.warn(message, RuntimeWarning, stacklevel=2)
            else:
                left_out.append(message)
            continue
        try:
            resolved = tomllib.loads((point_dir / "config.resolved.toml").read_text("utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            resolved = {}
        row: dict[str, Any] = {"point_id": pid, "status": status}
        for key in keys:
            value = values[key] if key in values else _config_value(resolved, key)
            row[column_name(key)] = _cell(value)
        row["seed"] = _config_value(resolved, "run.seed")
        row["scheme"] = _config_value(resolved, "scheme.kind")
        for name, value in flatten(summary):
            # NOTE: a varied key wins over a summary figure of the same column name.
            if name not in row or name in ("seed", "scheme"):
                row[name] = _cell(value)
        row["error"] = error
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        frame = pd.DataFrame(
            {c: pd.Series(dtype="object") for c in ["point_id", "status", "seed", "error"]}
        )
    error = frame.pop("error")
    frame["error"] = error.astype("object")
    return frame


def _ports_frame(directory: Path, ok: list[str]) -> pd.DataFrame:
    frames = []
    for pid in ok:
        path = directory / POINTS / pid / "ports.json"
        if path.is_file():
            ports = pd.DataFrame(json.loads(path.read_text(encoding="utf-8")))
            ports.insert(0, "point_id", pid)
            frames.append(ports)
    if not frames:
        return pd.DataFrame({"point_id": pd.Series(dtype="object")})
    return pd.concat(frames, ignore_index=True)


def _sql_list(paths: list[Path]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _file_view(name: str, file: str, paths: list[Path], front: list[str]) -> str:
    if not paths:
        return f"CREATE VIEW {name} AS SELECT NULL::VARCHAR AS point_id WHERE false"
    cols = ", ".join(f"r.{_quote(c)}" for c in front)
    pattern = r"([^/\\]+)[/\\]" + file.replace(".", r"\.") + "$"
    return (
        f"CREATE VIEW {name} AS SELECT {cols}, f.* EXCLUDE (filename) "
        f"FROM read_parquet({_sql_list(paths)}, filename = true) AS f "
        f"JOIN runs AS r ON r.point_id = regexp_extract(f.filename, '{pattern}', 1)"
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clear_dead_temp_files(directory: Path) -> list[Path]:
    """Removes `.results.duckdb.<pid>.tmp` (and its `.wal`) left by a process that died."""
    removed = []
    for path in directory.glob(f".{DB_FILE}.*.tmp*"):
        pid_text, _, rest = path.name[len(f".{DB_FILE}.") :].partition(".")
        if not pid_text.isdigit() or rest not in ("tmp", "tmp.wal"):
            continue
        if int(pid_text) != os.getpid() and not _alive(int(pid_text)):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def build(directory: str | os.PathLike[str]) -> Path:
    """(Re)builds `DIR/results.duckdb` from the point folders; returns its path."""
    import duckdb

    directory = Path(directory).resolve()
    left_out: list[str] = []
    runs = runs_frame(directory, left_out)
    ok = runs.loc[runs["status"] == "ok", "point_id"].tolist() if len(runs) else []
    manifest = read_manifest(directory)
    front = ["point_id", *(column_name(k) for k, _ in manifest["vary"] if k != SEED_KEY), "seed"]
    front = list(dict.fromkeys(front))
    target = directory / DB_FILE
    clear_dead_temp_files(directory)
    tmp = directory / f".{DB_FILE}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    try:
        con = duckdb.connect(str(tmp))
        try:
            con.register("runs_df", runs)
            con.execute("CREATE TABLE runs AS SELECT * FROM runs_df")
            con.unregister("runs_df")
            ports = _ports_frame(directory, ok)
            con.register("ports_df", ports)
            con.execute("CREATE TABLE ports AS SELECT * FROM ports_df")
            con.unregister("ports_df")
            flows = [directory / POINTS / pid / "flows.parquet" for pid in ok]
            con.execute(_file_view("flows", "flows.parquet", flows, front))
            # NOTE: only points that sampled have the file; the others are left out.
            for view, file in (
                ("queues", QUEUES_FILE),
                ("port_rates", PORT_RATES_FILE),
                ("trace", TRACE_FILE),
                ("goodput", GOODPUT_FILE),
            ):
                paths = [
                    directory / POINTS / pid / file
                    for pid in ok
                    if (directory / POINTS / pid / file).is_file()
                ]
                con.execute(_file_view(view, file, paths, front))
            # Jain's fairness index (docs/metrics.md, "Fairness").
            con.execute("CREATE MACRO jain(x) AS power(sum(x), 2) / (count(x) * sum(x * x))")
            con.execute(
                "CREATE TABLE meta AS SELECT ? AS directory, ? AS built_unix_s, ? AS left_out",
                [str(directory), time.time(), json.dumps(left_out)],
            )
        finally:
            con.close()
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
        raise
    return target


def _newest_point_mtime(directory: Path) -> float:
    newest = (directory / MANIFEST).stat().st_mtime
    points = directory / POINTS
    if points.is_dir():
        for point_dir in points.iterdir():
            for name in ("summary.json", ERROR_FILE):
                with contextlib.suppress(FileNotFoundError):
                    newest = max(newest, (point_dir / name).stat().st_mtime)
    return newest


def is_stale(directory: Path) -> bool:
    """Whether `results.duckdb` is missing, older than a point, or built for another path."""
    import duckdb

    target = directory / DB_FILE
    if not target.is_file() or target.stat().st_mtime < _newest_point_mtime(directory):
        return True
    try:
        con = duckdb.connect(str(target), read_only=True)
        try:
            row = con.execute("SELECT directory FROM meta").fetchone()
        finally:
            con.close()
    except duckdb.Error:
        return True
    return row is None or row[0] != str(directory.resolve())


def _warn_left_out(con: Any) -> None:
    """Warns (RuntimeWarning) of each point the database leaves out (corrupt files)."""
    import duckdb

    try:
        row = con.execute("SELECT left_out FROM meta").fetchone()
    except duckdb.Error:  # built by an older pisanet
        return
    for message in json.loads(row[0]) if row and row[0] else []:
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def query(directory: str | os.PathLike[str], sql: str) -> pd.DataFrame:
    """Runs SQL against a sweep's database (rebuilt first if stale); `ConfigError` if it fails."""
    import duckdb

    directory = Path(directory)
    read_manifest(directory)
    if not sql.strip():
        raise ConfigError('query: empty SQL; e.g. "SELECT * FROM runs"')
    if is_stale(directory):
        build(directory)
    con = duckdb.connect(str(directory / DB_FILE), read_only=True)
    try:
        _warn_left_out(con)
        result = con.execute(sql)
        if result is None or result.description is None:
            raise ConfigError(f"query: {sql.strip()!r} returns no rows; give a SELECT")
        return result.df()
    except duckdb.Error as e:
        message = " ".join(str(e).split())
        raise ConfigError(f"query: {message}") from None
    finally:
        con.close()
