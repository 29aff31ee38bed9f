"""Sweeps: one config run at every point of a cross product of overrides and seeds.

Owns the sweep directory and the running of its points; the database over it is
`pisanet.database`'s, the plots `pisanet.report`'s. A sweep directory holds
(docs/results-format.md):

    DIR/sweep.json              the manifest: base config (resolved) and its hash,
                                the vary spec, the seeds, every point's overrides
    DIR/points/<id>/            one result directory per point (`pisanet.results`),
                                or error.json (+ config.resolved.toml) for a failed one
    DIR/results.duckdb          `runs` table, `flows`/`queues`/`port_rates` views,
                                `ports` table

Guarantees:
- A point's id is a hash of its own sorted overrides (`key=value`, values in
  canonical TOML), so the same point always lands in the same folder.
- A point is finished exactly when its `summary.json` exists; every file is
  written atomically (temp file, then rename) by this process, never by a worker,
  so an interrupted or killed sweep leaves no half-finished point behind.
- Rerunning a sweep runs only the points that are not finished (failed ones
  again); a different base config or vary spec into the same directory is refused.
- Every point is resolved (validated) before anything runs.
- Workers return results to the caller: local worker processes and Dask workers
  need no shared file system with it (only the config's own files, if any).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from pisanet import _core, results
from pisanet._core import ConfigError
from pisanet.config import ConfigLike, keyword_overrides, load, parse_set, toml_value

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MANIFEST = "sweep.json"
POINTS = "points"
ERROR_FILE = "error.json"
MANIFEST_FORMAT = "pisanet-sweep/1"
SEED_KEY = "run.seed"
DEFAULT_CONNECT_TIMEOUT_S = 10.0

# What a worker hands back: ("ok", native run tuple), ("failed", {"type", "message"})
# or ("interrupted", None).
Outcome = tuple[str, Any]


@dataclass(frozen=True)
class Point:
    """One run of a sweep."""

    id: str
    values: dict[str, Any]
    """The varied keys (and `run.seed`) and their values, in vary order."""
    overrides: list[str]
    """The point's own overrides, `key=value` (canonical TOML values)."""


@dataclass(frozen=True)
class Plan:
    """A validated sweep: its manifest and every point with its resolved config."""

    manifest: dict[str, Any]
    points: list[Point]
    resolved: dict[str, str]
    """Point id -> the point's resolved config (TOML)."""
    text: str
    base_dir: Path | None
    base_overrides: list[str]

    @property
    def sweep_id(self) -> str:
        """A short hash of what makes the sweep (base config, vary spec, seeds)."""
        return str(self.manifest["sweep_id"])


@dataclass(frozen=True)
class SweepProgress:
    """Where a sweep stands; handed to the `progress` callback of `sweep`."""

    total: int
    done: int
    """Finished points, including those finished by an earlier run."""
    running: int
    """Points being run (at most the number of worker slots)."""
    failed: int
    skipped: int
    """Points finished by an earlier run of the same sweep."""


@dataclass(frozen=True)
class SweepResult:
    """What a sweep produced: the `runs` table and access to its database."""

    directory: Path
    runs: pd.DataFrame
    """The `runs` table: one row per finished or failed point."""
    total: int
    """Points in the sweep."""
    ran: int
    """Points finished by this call."""
    skipped: int
    """Points already finished before this call."""
    failed: int
    """Points that failed in this call (their error is in `runs.error`)."""

    def query(self, sql: str) -> pd.DataFrame:
        """Runs SQL against the sweep's database (see `pisanet.database`).

        Tables `runs` and `ports`; views `flows`, `queues` and `port_rates`.
        """
        from pisanet import database

        return database.query(self.directory, sql)

    @property
    def flows(self) -> pd.DataFrame:
        """Every finished point's flows, with `point_id`, the varied keys and `seed`."""
        return self.query("SELECT * FROM flows")


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a sweep; the points finished before it are kept."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"interrupted; {done} of {total} points finished")
        self.done = done
        self.total = total


# ---------------------------------------------------------------- the vary spec


def _split_values(text: str) -> list[str]:
    """Splits `V1,V2,...` at top-level commas (not inside brackets, braces or quotes)."""
    parts: list[str] = []
    depth, quote, start = 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def parse_value(text: str) -> Any:
    """A `--vary` value: a TOML value (`0.5`, `true`, `"a"`, `[1, 2]`), else a bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_vary(items: Iterable[str]) -> dict[str, list[Any]]:
    """Parses `--vary KEY=V1,V2,...` options into `{key: [values]}` (in the given order)."""
    vary: dict[str, list[Any]] = {}
    for item in items:
        key, eq, values = item.partition("=")
        key = key.strip()
        parts = _split_values(values) if eq else []
        if not eq or not key or not all(parts):
            raise ConfigError(
                f"--vary {item!r}: expected KEY=V1,V2,..., e.g. workload.load=0.3,0.6"
            )
        try:
            parse_set([f"{key}=0"])  # the key's syntax
        except ConfigError:
            raise ConfigError(
                f"--vary {item!r}: {key!r} is not a key path, e.g. workload.load"
            ) from None
        if key in vary:
            raise ConfigError(f"--vary {key}: given twice; list all its values in one --vary")
        vary[key] = [parse_value(p) for p in parts]
    return vary


def _plain(key: str, value: Any) -> Any:
    """A vary value as a JSON-able value (what the manifest and the runs table hold)."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple)):
        return [_plain(key, v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(key, v) for k, v in value.items()}
    raise ConfigError(f"vary {key}: {value!r} is not a number, string, boolean, list or table")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def point_id(overrides: Iterable[str]) -> str:
    """The stable id of a point: a hash of its sorted `key=value` overrides."""
    return _sha256("\n".join(sorted(overrides)))[:16]


# Points of a cross product may carry keys that only other points read.
_LENIENT = "run.unused_keys=ignore"


def plan(
    config: ConfigLike,
    vary: Mapping[str, Sequence[Any]],
    *,
    seeds: int | None = None,
    set: Iterable[str] = (),
    **overrides: Any,
) -> Plan:
    """Validates a sweep: every vary key and every point's config. Raises `ConfigError`."""
    text, base_dir = load(config)
    base_overrides = parse_set(set) + keyword_overrides(overrides)
    # The base may carry keys only some points read (a [scheme.hula] table in
    # a sweep over scheme.kind): each point is checked below, and a key is
    # refused only when no point reads it.
    base_resolved = _core.resolve(text, base_dir, [*base_overrides, _LENIENT])
    spec: list[tuple[str, list[Any]]] = []
    for key, values in vary.items():
        parse_set([f"{key}=0"])
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise ConfigError(f"vary {key}: expected a non-empty list of values")
        spec.append((key, [_plain(key, v) for v in values]))
    if seeds is not None:
        if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
            raise ConfigError(f"seeds: expected a positive number of seeds, got {seeds!r}")
        if SEED_KEY in vary:
            raise ConfigError(f"vary {SEED_KEY} and seeds together: give one of them")
        spec.append((SEED_KEY, list(range(1, seeds + 1))))
    # Each key's first value, alone: an unknown key is named before any point is built.
    for key, values in spec:
        try:
            _core.resolve(
                text, base_dir, [*base_overrides, f"{key}={toml_value(values[0])}", _LENIENT]
            )
        except ConfigError as e:
            message = str(e)
            raise ConfigError(
                message if message.startswith(key) else f"vary {key}: {message}"
            ) from None

    points: list[Point] = []
    resolved: dict[str, str] = {}
    keys = [k for k, _ in spec]
    unread: dict[str, int] = {}
    first_refusal: dict[str, str] = {}
    for combo in itertools.product(*(vs for _, vs in spec)):
        own = [f"{k}={toml_value(v)}" for k, v in zip(keys, combo, strict=True)]
        pid = point_id(own)
        if pid in resolved:
            raise ConfigError(f"vary: the point {', '.join(own)} occurs twice (a repeated value?)")
        try:
            unused = _core.unused_keys(text, [*base_overrides, *own])
            for key in unused:
                unread[key] = unread.get(key, 0) + 1
            if unused:
                try:
                    _core.resolve(text, base_dir, [*base_overrides, *own])
                except ConfigError as e:
                    first_refusal.setdefault(unused[0], str(e))
                own = [*own, _LENIENT]
            resolved[pid] = _core.resolve(text, base_dir, [*base_overrides, *own])
        except ConfigError as e:
            raise ConfigError(f"point {', '.join(own)}: {e}") from None
        points.append(Point(pid, dict(zip(keys, combo, strict=True)), own))
    # Every key given is read by some point, or refused (as a run refuses it),
    # unless the config or `set` says `run.unused_keys = "ignore"` (as a run allows).
    lenient = _ignores_unused(text, base_overrides)
    for key, count in unread.items():
        if count == len(points) and not lenient:
            raise ConfigError(first_refusal.get(key, f"{key}: no point of the sweep reads it"))

    identity = {
        "config_sha256": _sha256(base_resolved),
        "vary": [[k, [toml_value(v) for v in vs]] for k, vs in spec],
    }
    manifest = {
        "format": MANIFEST_FORMAT,
        "sweep_id": _sha256(json.dumps(identity, sort_keys=True))[:12],
        **identity,
        "seeds": seeds,
        "config": base_resolved,
        "points": {p.id: p.values for p in points},
    }
    return Plan(manifest, points, resolved, text, base_dir, base_overrides)


def _ignores_unused(text: str, base_overrides: list[str]) -> bool:
    """Whether the base config (the file, then `set`) has `run.unused_keys = "ignore"`."""
    try:
        value = tomllib.loads(text).get("run", {}).get("unused_keys")
    except tomllib.TOMLDecodeError:
        value = None
    for item in base_overrides:
        key, _, raw = item.partition("=")
        if key.strip() == "run.unused_keys":
            value = parse_value(raw.strip())
    return bool(value == "ignore")


# ---------------------------------------------------------------- the directory


def default_out(config: ConfigLike, the_plan: Plan) -> Path:
    """`results/<config stem>-<sweep id>` (`results/sweep-<sweep id>` for text or a dict)."""
    is_file = isinstance(config, os.PathLike) or (
        isinstance(config, str) and "\n" not in config and "=" not in config
    )
    stem = Path(config).stem if is_file else "sweep"  # type: ignore[arg-type]
    return Path("results") / f"{stem}-{the_plan.sweep_id}"


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of a sweep directory; `ConfigError` if there is none."""
    path = directory / MANIFEST
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{directory}: not a sweep directory (no {MANIFEST})") from None
    except (ValueError, UnicodeDecodeError):
        raise ConfigError(f"{path}: not a pisanet sweep manifest") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise ConfigError(f"{path}: not a pisanet sweep manifest ({MANIFEST_FORMAT})")
    return manifest


LOCK_FILE = ".pisanet-sweep.lock"


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Holds `DIR/.pisanet-sweep.lock` while a sweep writes DIR; a second sweep is refused.

    An advisory `flock`: the kernel releases it when the holder exits, however
    it ends (SIGKILL included), so a stale lock file never blocks a rerun.
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        reason = f"cannot create the sweep directory: {e.strerror}"
        raise OSError(e.errno, reason, str(directory)) from None
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # pragma: no cover (Windows: no lock)
            pass
        except OSError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
            raise ConfigError(
                f"{directory}: another sweep (pid {holder}) is writing this directory; "
                "wait for it to end, or choose another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)


def prepare(directory: Path, the_plan: Plan) -> None:
    """Creates the sweep directory, or checks that it holds this same sweep."""
    if (directory / MANIFEST).exists():
        old = read_manifest(directory)
        new = the_plan.manifest
        if old.get("config_sha256") != new["config_sha256"]:
            raise ConfigError(
                f"{directory} holds another sweep's results (a different base config); "
                "choose another --out"
            )
        if old.get("vary") != new["vary"]:
            raise ConfigError(
                f"{directory} holds another sweep's results (different --vary/--seeds: "
                f"{_describe(old.get('vary'))}); choose another --out"
            )
        return
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{directory}: exists and is not a directory")
    if directory.is_dir() and any(e.name != LOCK_FILE for e in directory.iterdir()):
        raise ConfigError(
            f"{directory}: not empty and not a sweep directory (no {MANIFEST}); "
            "choose another --out"
        )
    (directory / POINTS).mkdir(parents=True, exist_ok=True)
    results.write_text_atomic(directory / MANIFEST, json.dumps(the_plan.manifest, indent=2) + "\n")


def _describe(vary: Any) -> str:
    try:
        return " ".join(f"{k}={','.join(vs)}" for k, vs in vary) or "nothing varied"
    except (TypeError, ValueError):
        return "unreadable"


def json_object(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: corrupt ({type(e).__name__})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: corrupt (not a JSON object)")
    return value


def read_finished(point_dir: Path) -> dict[str, Any]:
    """A finished point's summary, after checking that its files can be read.

    `ValueError` naming the first file that is corrupt or missing: such a point
    is left out of the database (and a rerun of the sweep runs it again).
    """
    import pyarrow.parquet as pq

    summary = json_object(point_dir / "summary.json")
    ports = point_dir / "ports.json"
    if ports.is_file():
        json_list(ports)
    for name in ("flows.parquet", results.QUEUES_FILE, results.PORT_RATES_FILE, results.TRACE_FILE):
        path = point_dir / name
        if name != "flows.parquet" and not path.is_file():
            continue
        try:
            pq.read_metadata(path)
        except FileNotFoundError:
            raise ValueError(f"{path}: missing") from None
        except Exception as e:  # pyarrow raises ArrowInvalid, OSError, ...
            raise ValueError(f"{path}: corrupt ({type(e).__name__})") from None
    return summary


def json_list(path: Path) -> list[Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: corrupt ({type(e).__name__})") from None
    if not isinstance(value, list):
        raise ValueError(f"{path}: corrupt (not a JSON list)")
    return value


def is_finished(point_dir: Path) -> bool:
    """A point is finished when its summary.json is there and its files can be read
    (`read_finished`); a corrupt one is run again."""
    if not (point_dir / "summary.json").is_file():
        return False
    try:
        read_finished(point_dir)
    except (ValueError, OSError):
        return False
    return True


def _clear_temp_files(point_dir: Path) -> None:
    """Removes temp files a killed writer left behind (`.<name>.XXXX.tmp`)."""
    for leftover in point_dir.glob(".*.tmp"):
        leftover.unlink(missing_ok=True)


def _write_ok(point_dir: Path, payload: Any, resolved: str) -> None:
    point_dir.mkdir(parents=True, exist_ok=True)
    _clear_temp_files(point_dir)
    results.write(point_dir, results.from_native(payload, resolved))
    (point_dir / ERROR_FILE).unlink(missing_ok=True)


def _write_failed(point_dir: Path, error: dict[str, str], resolved: str) -> None:
    point_dir.mkdir(parents=True, exist_ok=True)
    _clear_temp_files(point_dir)
    results.write_text_atomic(point_dir / "config.resolved.toml", resolved)
    results.write_text_atomic(point_dir / ERROR_FILE, json.dumps(error, indent=2) + "\n")


# ---------------------------------------------------------------- the workers


@dataclass(frozen=True)
class Task:
    """What a worker needs to run one point (picklable)."""

    id: str
    text: str
    base_dir: str | None
    overrides: list[str]


# Set in local worker processes: asks a running point to stop (Ctrl-C in the parent).
_STOP: Any = None


def _init_worker(stop: Any) -> None:
    global _STOP
    # NOTE: the parent decides what Ctrl-C means (it sets `stop`); a worker that
    # raised KeyboardInterrupt while idle would break the whole pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _STOP = stop
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent.sentinel,), daemon=True).start()


def _exit_with(parent_sentinel: int) -> None:
    """Ends this worker when its parent is gone (killed): nobody would read its result."""
    multiprocessing.connection.wait([parent_sentinel])
    os._exit(1)


def run_point(task: Task) -> Outcome:
    """Runs one point; never raises (a failure is an outcome). The function workers run."""
    stop = _STOP
    progress = (lambda *_: not stop.is_set()) if stop is not None else None
    try:
        return "ok", _core.run(task.text, task.base_dir, task.overrides, progress)
    except KeyboardInterrupt:
        return "interrupted", None
    except Exception as e:
        return "failed", {"type": type(e).__name__, "message": str(e) or repr(e)}


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignores SIGINT while worker processes start, so that they inherit SIG_IGN."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


Record = Callable[[str, Outcome], None]


def _crashed(e: BaseException) -> Outcome:
    return "failed", {"type": type(e).__name__, "message": f"the worker died: {e}".strip()}


def _worker_main(conn: multiprocessing.connection.Connection, stop: Any) -> None:
    """A local worker process: runs the tasks it is sent until it is sent None."""
    _init_worker(stop)
    while True:
        task = conn.recv()
        if task is None:
            return
        conn.send(run_point(task))


def _death(exitcode: int | None) -> str:
    """Why a worker process ended without handing back its point's result."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        reason = f"the worker process was killed by {name}"
        if -exitcode == signal.SIGKILL:
            reason += (
                " (the kernel's out-of-memory killer sends it when memory runs out: see "
                "`dmesg`; give the point less to simulate, or run fewer --workers)"
            )
        return reason
    return f"the worker process exited with code {exitcode} before it handed back the result"


class _LocalPool:
    """Worker processes, one point at a time each; a worker that dies (SIGKILL, the
    OOM killer, a crash) fails only its own point, and a new worker takes its place.

    NOTE: not a ProcessPoolExecutor: a dead worker breaks that whole pool and
    every point queued on it.
    """

    def __init__(self, workers: int) -> None:
        self.ctx = multiprocessing.get_context("spawn")
        self.stop = self.ctx.Event()
        self.size = workers
        # conn -> (process, the task it runs)
        self.busy: dict[Any, tuple[Any, Task]] = {}

    def _spawn(self) -> tuple[Any, Any]:
        parent, child = self.ctx.Pipe()
        with _sigint_ignored():
            proc = self.ctx.Process(target=_worker_main, args=(child, self.stop), daemon=True)
            proc.start()
        child.close()
        return parent, proc

    def run(self, tasks: list[Task], record: Record) -> None:
        pending = list(reversed(tasks))
        idle: list[tuple[Any, Any]] = []
        try:
            self._loop(pending, idle, record)
        except KeyboardInterrupt:
            # Stop the running points, drop the queued ones, keep what finishes meanwhile.
            self.stop.set()
            pending.clear()
            with contextlib.suppress(KeyboardInterrupt):
                self._loop(pending, idle, record)
            raise
        finally:
            for conn, proc in idle + [(c, p) for c, (p, _) in self.busy.items()]:
                with contextlib.suppress(OSError):
                    conn.send(None)
                proc.join(timeout=5)
                if proc.is_alive():
                    proc.kill()
                    proc.join()
                conn.close()

    def _loop(self, pending: list[Task], idle: list[tuple[Any, Any]], record: Record) -> None:
        while pending or self.busy:
            while pending and (idle or len(self.busy) < self.size):
                conn, proc = idle.pop() if idle else self._spawn()
                task = pending.pop()
                conn.send(task)
                self.busy[conn] = (proc, task)
            sentinels = {proc.sentinel: conn for conn, (proc, _) in self.busy.items()}
            ready = multiprocessing.connection.wait([*self.busy, *sentinels])
            for item in ready:
                conn = sentinels.get(item, item)
                if conn not in self.busy:
                    continue
                proc, task = self.busy.pop(conn)
                outcome: Outcome | None = None
                try:
                    if conn.poll():
                        outcome = conn.recv()
                except (EOFError, OSError):
                    outcome = None
                if outcome is None:
                    proc.join()
                    conn.close()
                    outcome = ("failed", {"type": "WorkerDied", "message": _death(proc.exitcode)})
                elif proc.is_alive():
                    idle.append((conn, proc))
                else:
                    proc.join()
                    conn.close()
                record(task.id, outcome)


def _run_local(tasks: list[Task], workers: int, record: Record) -> None:
    _LocalPool(workers).run(tasks, record)


def _run_executor(tasks: list[Task], executor: Executor, record: Record) -> None:
    futures = {executor.submit(run_point, t): t.id for t in tasks}
    _collect(futures, record, on_interrupt=lambda: None, shutdown=None)


def _collect(
    futures: dict[Future[Outcome], str],
    record: Record,
    on_interrupt: Callable[[], object],
    shutdown: Callable[..., None] | None,
) -> None:
    recorded: set[str] = set()

    def take(future: Future[Outcome]) -> None:
        pid = futures[future]
        if pid in recorded or future.cancelled():
            return
        recorded.add(pid)
        error = future.exception()
        record(pid, _crashed(error) if error is not None else future.result())

    try:
        for future in as_completed(futures):
            take(future)
    except KeyboardInterrupt:
        # Stop the running points, drop the queued ones, keep what finished meanwhile.
        on_interrupt()
        for future in futures:
            future.cancel()
        if shutdown is not None:
            shutdown(wait=True, cancel_futures=True)
        for future in futures:
            if future.done():
                take(future)
        raise
    finally:
        if shutdown is not None:
            shutdown(wait=True, cancel_futures=True)


def tls_security(ca_file: str | None, cert: str | None, key: str | None) -> Any:
    """Dask's `Security` for a `tls://` scheduler: the CA that signed the cluster's
    certificates, and this client's certificate and key (PEM files). None when no
    file is given (then the connection is plain, unauthenticated TCP)."""
    if ca_file is None and cert is None and key is None:
        return None
    if ca_file is None or cert is None:
        raise ConfigError(
            "--tls-ca-file and --tls-cert go together "
            "(and --tls-key, unless the key is in the cert file)"
        )
    for flag, path in (("--tls-ca-file", ca_file), ("--tls-cert", cert), ("--tls-key", key)):
        if path is not None and not Path(path).is_file():
            raise ConfigError(f"{flag} {path}: no such file")
    from distributed.security import Security

    return Security(
        tls_ca_file=ca_file, tls_client_cert=cert, tls_client_key=key, require_encryption=True
    )


def _connect(scheduler: str, timeout: float, security: Any = None) -> Any:
    import logging

    try:
        from distributed import Client
    except ImportError:
        raise ConfigError(
            "a sweep on a Dask cluster needs dask.distributed: pip install 'pisanet[dask]'"
        ) from None

    # NOTE: distributed logs its connection attempts; the one-line error says it all.
    # (and its own loggers, whose levels its config sets one by one: a lost
    # scheduler is a failed point, not a page of tracebacks).
    for name in ["distributed", *logging.root.manager.loggerDict]:
        if name == "distributed" or name.startswith("distributed."):
            logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        client = Client(scheduler, timeout=timeout, set_as_default=False, security=security)
    except Exception as e:
        reason = " ".join(str(e).split()) or type(e).__name__
        raise ConfigError(f"cannot reach the Dask scheduler at {scheduler}: {reason}") from None
    try:
        client.wait_for_workers(1, timeout=timeout)
    except Exception:
        client.close()
        raise ConfigError(
            f"the Dask scheduler at {scheduler} has no workers (waited {timeout:g} s); "
            f"start one with `dask worker {scheduler}`"
        ) from None
    return client


def _run_dask(tasks: list[Task], client: Any, key_prefix: str, record: Record) -> None:
    from distributed import as_completed as dask_completed

    futures = {
        client.submit(run_point, t, key=f"{key_prefix}-{t.id}", pure=False): t.id for t in tasks
    }
    recorded: set[str] = set()

    def take(future: Any) -> None:
        pid = futures[future]
        if pid in recorded:
            return
        recorded.add(pid)
        if future.status == "finished":
            record(pid, future.result())
        elif future.status == "error":
            record(pid, _crashed(future.exception()))
        else:  # cancelled or lost: the scheduler went away, or dropped the point
            record(
                pid, ("failed", {"type": "Lost", "message": f"the Dask point was {future.status}"})
            )

    try:
        for future in dask_completed(list(futures), loop=client.loop):
            take(future)
    except KeyboardInterrupt:
        pending = [f for f in futures if not f.done()]
        with contextlib.suppress(Exception):
            client.cancel(pending)
        for future in futures:
            if future.done():
                take(future)
        raise
    except Exception as e:
        # The scheduler went away: every point not handed back fails (a rerun
        # resumes them), the finished ones are kept.
        reason = " ".join(str(e).split()) or type(e).__name__
        for future, pid in futures.items():
            if pid not in recorded:
                with contextlib.suppress(Exception):
                    if future.status == "finished":
                        take(future)
                        continue
                recorded.add(pid)
                record(
                    pid,
                    ("failed", {"type": "Lost", "message": f"lost the Dask scheduler: {reason}"}),
                )


def _slots(client: Any) -> int:
    try:
        return max(1, sum(client.nthreads().values()))
    except Exception:
        return 1


# ---------------------------------------------------------------- the sweep


def sweep(
    config: ConfigLike,
    vary: Mapping[str, Sequence[Any]] | None = None,
    *,
    seeds: int | None = None,
    out: str | os.PathLike[str] | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    executor: Executor | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
    security: Any = None,
    set: Iterable[str] = (),
    progress: Callable[[SweepProgress], object] | None = None,
    **overrides: Any,
) -> SweepResult:
    """Runs `config` at every point of the cross product of `vary` and `seeds`.

    `vary` maps config keys to lists of values: `{"scheme.kind": ["ecmp", "hula"],
    "workload.load": [0.3, 0.6]}`; `seeds=N` adds `run.seed` = 1..N. `set` and
    keyword overrides (`workload__flows=500`) change the base config. Results go
    to `out` (default `results/<config stem>-<sweep id>`); points finished by an
    earlier call are not run again.

    Runs on `workers` local processes (default: one per core), on the Dask
    cluster whose scheduler is at `scheduler` (`tcp://host:port`, or `tls://host:port`
    with `security`, a `distributed.security.Security`; see `tls_security`), or on a
    `concurrent.futures.Executor` of yours (a `ThreadPoolExecutor` works well: a
    run releases the GIL). `progress(SweepProgress)` is called as points finish.
    NOTE: local worker processes are spawned, so a script (not a notebook) that
    calls `sweep` needs the usual `if __name__ == "__main__":` guard.

    Raises `ConfigError` for invalid input (bad key or value, an unreachable
    scheduler, an `out` holding another sweep) before anything runs, and
    `SweepInterrupted` (a `KeyboardInterrupt`) on Ctrl-C, after saving every
    finished point. A failed point does not raise: it is in `runs` with
    `status = 'failed'` and its `error`.
    """

    if sum(x is not None for x in (workers, scheduler, executor)) > 1:
        raise ConfigError("give at most one of workers, scheduler and executor")
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise ConfigError(f"workers: expected a positive number, got {workers!r}")
    the_plan = plan(config, vary or {}, seeds=seeds, set=set, **overrides)
    if out is not None and not os.fspath(out).strip():
        raise ConfigError("--out: an empty path; name the sweep directory, e.g. --out results/s1")
    directory = Path(out) if out is not None else default_out(config, the_plan)
    with locked(directory):
        return _sweep_locked(
            directory, the_plan, workers, scheduler, executor, connect_timeout, security, progress
        )


def _sweep_locked(
    directory: Path,
    the_plan: Plan,
    workers: int | None,
    scheduler: str | None,
    executor: Executor | None,
    connect_timeout: float,
    security: Any,
    progress: Callable[[SweepProgress], object] | None,
) -> SweepResult:
    from pisanet import database

    prepare(directory, the_plan)

    points_dir = directory / POINTS
    todo = [p for p in the_plan.points if not is_finished(points_dir / p.id)]
    total = len(the_plan.points)
    skipped = total - len(todo)
    base_dir = str(the_plan.base_dir) if the_plan.base_dir is not None else None
    tasks = [
        Task(p.id, the_plan.text, base_dir, [*the_plan.base_overrides, *p.overrides]) for p in todo
    ]

    client = None
    if scheduler is not None and tasks:
        client = _connect(scheduler, connect_timeout, security)
    slots = (
        _slots(client)
        if client is not None
        else getattr(executor, "_max_workers", None) or workers or os.cpu_count() or 1
    )
    counts = {"ran": 0, "failed": 0}

    def report() -> None:
        if progress is None:
            return
        outstanding = len(tasks) - counts["ran"] - counts["failed"]
        progress(
            SweepProgress(
                total=total,
                done=skipped + counts["ran"],
                running=min(slots, outstanding),
                failed=counts["failed"],
                skipped=skipped,
            )
        )

    def record(pid: str, outcome: Outcome) -> None:
        kind, payload = outcome
        if kind == "ok":
            _write_ok(points_dir / pid, payload, the_plan.resolved[pid])
            counts["ran"] += 1
        elif kind == "failed":
            _write_failed(points_dir / pid, payload, the_plan.resolved[pid])
            counts["failed"] += 1
        report()

    report()
    try:
        if not tasks:
            pass
        elif client is not None:
            try:
                _run_dask(tasks, client, f"pisanet-{the_plan.sweep_id}", record)
            finally:
                with contextlib.suppress(Exception):
                    client.close()
        elif executor is not None:
            _run_executor(tasks, executor, record)
        else:
            _run_local(tasks, min(workers or os.cpu_count() or 1, len(tasks)), record)
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):
            database.build(directory)
        raise SweepInterrupted(skipped + counts["ran"], total) from None
    database.build(directory)
    return SweepResult(
        directory=directory,
        runs=database.query(directory, "SELECT * FROM runs"),
        total=total,
        ran=counts["ran"],
        skipped=skipped,
        failed=counts["failed"],
    )
