"""Run results: columns from the native module into pandas, and the files of a result directory.

A result directory holds (every file written atomically: a temp file in the same
directory, then `os.replace`, so a reader never sees a half-written file):

- `summary.json`: the run summary (see docs/results-format.md).
- `flows.parquet`: one row per flow. Written while the run goes (by `pisanet run` and
  `pisanet.run(..., out=...)`), a batch of rows at a time as flows end, so the rows
  are in the order flows ended, then the flows still running when the run stopped,
  by id (sweep points are written in flow id order); `read_flows`, `Result.flows`
  and the sweep database's `Point.flows()` give them in flow id order. Columns: `id`, `src`, `dst`
  (host ids), `bytes`, `class` (0 = short, 1 = large), `start`, `finish`, `fct`
  (microseconds; NaN for a flow that did not finish), `slowdown` (FCT over the
  ideal FCT on an idle network), `retransmissions`, `reordered` (packets),
  `transport` (0 = TCP, 1 = UDP), `priority` (strict-priority queue), `group` (flow
  group: 0 = `[workload]`, k + 1 = `workload.groups[k]`), `lost_packets`,
  `lost_bytes` (data lost: TCP, dropped in the network; UDP, sent but not
  received), and with `metrics.flow_stats` (else NaN / 0) `delay_mean`,
  `delay_p50`, `delay_p99`, `delay_max` (one-way delay of delivered data
  packets, microseconds), `rtt_mean`, `rtt_p99`, `rtt_max` (TCP RTT samples, microseconds),
  `deadline_missed_packets`, `dup_acks`, `fast_retransmits`, `timeouts` (TCP
  sender's duplicate ACKs, entries into fast recovery, RTO expiries; 0 for UDP)
  (docs/metrics.md),
  `delivered` (bytes the receiver had in order: all of them for a finished flow,
  those delivered so far for one still running when the run stopped at
  `run.max_sim_time_ms`; flows that had not arrived by then have no row).
- `goodput.parquet` (only with `metrics.goodput_interval_us` > 0): `time`
  (microseconds, the end of each interval), `flow`, `bytes` (payload bytes
  delivered to the receiving application in the interval), `gbps`; intervals in
  which a flow delivered nothing have no row.
- `queues.parquet` (only when queues were sampled): `time` (microseconds), `port`
  (link name, e.g. `leaf0->spine1`), `depth_bytes`, `priority` (the priority
  queue: with `topology.priorities` > 1 one row per port and priority queue,
  whose depths sum to the port's; else one row per port, priority 0).
- `port_rates.parquet` (only when port rates were sampled): `time` (microseconds,
  the end of each sampling interval), `port` (link name), `tx_gbps` (the rate
  the port sent at over the interval), `carried_gbps` (the part of it that went
  onto a working link: zero while the link is down).
- `pcap/<port>.pcap` (only with `[metrics.pcap]`): what each captured port sent,
  one Ethernet frame per packet with the schemes' headers (docs/headers.md), pcap
  format with nanosecond timestamps; open with Wireshark and
  tools/wireshark/pisanet.lua.
- `trace.parquet` (only with `[metrics.trace]`): one row per event of the traced
  packets: `time` (microseconds), `node`, `port` (link name, empty for an event of
  the switch itself), `queue` (priority), `event` (enqueue, dequeue, drop,
  ecn_mark, clone, recirculate, replicate, to_cpu, program_drop), `depth_bytes`
  (the port's queue then), `packet` (packet id), `flow` (-1 for none), `seq`,
  `size` (bytes).
- `ports.json`: per-port counters, a JSON array of objects, one port a line
  (name, tx_packets, tx_bytes, drops, ecn_marks;
  with `topology.pfc.enabled` also pause_sent, xon_sent, pause_received,
  xon_received, paused_us, lossless_drops, in total and per lossless priority
  with a `_p<i>` suffix).
- `config.resolved.toml`: the config as run, every default filled in.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

# NOTE: numpy, pandas and pyarrow are imported where they are used, not here:
# `import pisanet` and `pisanet run` then pay only for what a run needs
# (docs/performance.md, "The fixed cost").

# Native column name -> published column name (times lose their `_us` suffix:
# every time column is in microseconds, written down in the Parquet metadata).
FLOW_COLUMNS = {
    "id": "id",
    "src": "src",
    "dst": "dst",
    "bytes": "bytes",
    "class": "class",
    "start_us": "start",
    "finish_us": "finish",
    "fct_us": "fct",
    "slowdown": "slowdown",
    "retransmissions": "retransmissions",
    "reordered": "reordered",
    "transport": "transport",
    "priority": "priority",
    "group": "group",
    "lost_packets": "lost_packets",
    "lost_bytes": "lost_bytes",
    "delay_mean_us": "delay_mean",
    "delay_p50_us": "delay_p50",
    "delay_p99_us": "delay_p99",
    "delay_max_us": "delay_max",
    "rtt_mean_us": "rtt_mean",
    "rtt_p99_us": "rtt_p99",
    "rtt_max_us": "rtt_max",
    "deadline_missed_packets": "deadline_missed_packets",
    "dup_acks": "dup_acks",
    "fast_retransmits": "fast_retransmits",
    "timeouts": "timeouts",
    "delay_packets": "delay_packets",
    "delivered": "delivered",
}
GOODPUT_COLUMNS = {"time_us": "time", "flow": "flow", "bytes": "bytes", "gbps": "gbps"}
QUEUE_COLUMNS = {
    "time_us": "time",
    "port": "port",
    "depth_bytes": "depth_bytes",
    "priority": "priority",
}
PORT_RATE_COLUMNS = {
    "time_us": "time",
    "port": "port",
    "tx_gbps": "tx_gbps",
    "carried_gbps": "carried_gbps",
}
UNITS = {
    "start": "us",
    "finish": "us",
    "fct": "us",
    "time": "us",
    "bytes": "bytes",
    "delivered": "bytes",
    "depth_bytes": "bytes",
    "size": "bytes",
    "seq": "bytes",
    "tx_gbps": "Gb/s",
    "carried_gbps": "Gb/s",
    "retransmissions": "packets",
    "reordered": "packets",
    "lost_packets": "packets",
    "lost_bytes": "bytes",
    "delay_mean": "us",
    "delay_p50": "us",
    "delay_p99": "us",
    "delay_max": "us",
    "rtt_mean": "us",
    "rtt_p99": "us",
    "rtt_max": "us",
    "deadline_missed_packets": "packets",
    "dup_acks": "packets",
    "fast_retransmits": "count",
    "timeouts": "count",
    "delay_packets": "packets",
    "gbps": "Gb/s",
}

FILES = ("summary.json", "flows.parquet", "ports.json", "config.resolved.toml")
QUEUES_FILE = "queues.parquet"
PORT_RATES_FILE = "port_rates.parquet"
GOODPUT_FILE = "goodput.parquet"
TRACE_FILE = "trace.parquet"
PCAP_DIR = "pcap"
# What `pisanet plot` writes into a result directory (`flow_<id>.png` too).
PLOT_FILES = ("fct_cdf.png", "slowdown_by_size.png")


class Result:
    """What a run produced (read-only).

    - `summary`: the run summary (the contents of `summary.json`).
    - `flows`: one row per flow, in flow id order; columns as in `flows.parquet`
      (times in microseconds). A run that wrote a result directory streamed its
      flows there: they are read from its `flows.parquet` when first asked for.
    - `queues`: queue-depth samples, or None when queues were not sampled.
    - `ports`: per-port counters (the contents of `ports.json`), parsed when
      first asked for (a large fabric has hundreds of thousands of ports).
    - `resolved_config`: the config as run, every default filled in (TOML).
    - `port_rates`: per-port transmit rates, or None when not sampled.
    - `pcaps`: pcap file contents by port name (`[metrics.pcap]`), empty when
      not captured.
    - `trace`: per-packet events (`[metrics.trace]`), or None when not traced.
    - `goodput`: per-flow goodput series (`metrics.goodput_interval_us`), or
      None when off.
    """

    summary: dict[str, Any]
    queues: pd.DataFrame | None
    resolved_config: str
    port_rates: pd.DataFrame | None
    pcaps: Mapping[str, bytes]
    trace: pd.DataFrame | None
    goodput: pd.DataFrame | None

    def __init__(
        self,
        summary: dict[str, Any],
        flows: pd.DataFrame | None,
        queues: pd.DataFrame | None,
        ports: Any,
        resolved_config: str,
        port_rates: pd.DataFrame | None = None,
        pcaps: Mapping[str, bytes] | None = None,
        trace: pd.DataFrame | None = None,
        goodput: pd.DataFrame | None = None,
        *,
        flows_file: Path | None = None,
        ports_json: str | None = None,
    ) -> None:
        if flows is None and flows_file is None:
            raise TypeError("Result: give flows or flows_file")
        if ports is None and ports_json is None:
            raise TypeError("Result: give ports or ports_json")
        values = {
            "summary": summary,
            "_flows": flows,
            "_flows_file": flows_file,
            "queues": queues,
            "_ports": ports,
            "_ports_json": ports_json,
            "resolved_config": resolved_config,
            "port_rates": port_rates,
            "pcaps": dict(pcaps or {}),
            "trace": trace,
            "goodput": goodput,
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Result is read-only (cannot set {name})")

    @property
    def flows(self) -> pd.DataFrame:
        """One row per flow, in flow id order (times in microseconds)."""
        frame: pd.DataFrame | None = self.__dict__["_flows"]
        if frame is None:
            frame = _read_flows_file(self.__dict__["_flows_file"])
            object.__setattr__(self, "_flows", frame)
        return frame

    @property
    def ports(self) -> Any:
        """Per-port counters (the contents of `ports.json`)."""
        ports = self.__dict__["_ports"]
        if ports is None:
            ports = json.loads(self.__dict__["_ports_json"])
            object.__setattr__(self, "_ports", ports)
        return ports

    def ports_json(self) -> str:
        """The text of `ports.json`: a JSON array, one port a line."""
        text: str | None = self.__dict__["_ports_json"]
        if text is None:
            text = ports_text(self.ports)
        return text + "\n"

    @property
    def flows_file(self) -> Path | None:
        """The `flows.parquet` the run streamed its flows to, if it did."""
        path: Path | None = self.__dict__["_flows_file"]
        return path

    def __repr__(self) -> str:
        return f"Result(digest={self.summary.get('digest')!r}, flows={self.summary.get('flows')})"


def ports_text(ports: Any) -> str:
    """`ports` as the native module writes ports.json: compact, one port a line."""
    if isinstance(ports, list) and ports:
        return "[\n" + ",\n".join(json.dumps(p, separators=(",", ":")) for p in ports) + "\n]"
    return json.dumps(ports)


def _array(dtype: str, buffer: bytes) -> np.ndarray:
    import numpy as np

    return np.frombuffer(buffer, dtype=np.dtype(dtype))


def _empty(column: tuple[str, bytes]) -> bool:
    return len(column[1]) == 0


def flows_frame(columns: Mapping[str, tuple[str, bytes]]) -> pd.DataFrame:
    """The flow table from the native module's `(dtype, buffer)` columns."""
    import pandas as pd

    return pd.DataFrame({FLOW_COLUMNS[k]: _array(*columns[k]) for k in FLOW_COLUMNS})


def _sampled_frame(columns: Mapping[str, Any], names: Mapping[str, str]) -> pd.DataFrame | None:
    """Per-port samples (`port` dictionary-encoded), or None when there are none."""
    if _empty(columns["time_us"]):
        return None
    import numpy as np
    import pandas as pd

    codes = _array(*columns["port"]).astype(np.int64)
    port = pd.Categorical.from_codes(codes, categories=columns["port_names"][1])
    return pd.DataFrame(
        {
            published: port if native == "port" else _array(*columns[native])
            for native, published in names.items()
        }
    )


def queues_frame(columns: Mapping[str, Any]) -> pd.DataFrame | None:
    """Queue samples from the native module's columns, or None when there are none."""
    return _sampled_frame(columns, QUEUE_COLUMNS)


def port_rates_frame(columns: Mapping[str, Any]) -> pd.DataFrame | None:
    """Port rate samples from the native module's columns, or None when there are none."""
    return _sampled_frame(columns, PORT_RATE_COLUMNS)


def goodput_frame(columns: Mapping[str, tuple[str, bytes]]) -> pd.DataFrame | None:
    """Goodput series from the native module's columns, or None when there are none."""
    if _empty(columns["time_us"]):
        return None
    import pandas as pd

    return pd.DataFrame({GOODPUT_COLUMNS[k]: _array(*columns[k]) for k in GOODPUT_COLUMNS})


def from_native(payload: tuple[Any, ...], resolved: str, flows_file: Path | None = None) -> Result:
    """The `Result` of the native module's `run` tuple and the resolved config.

    With `flows_file`, the run streamed its flows there (`FlowsWriter`) and
    `Result.flows` reads them from it when first asked for.
    """
    summary, flows, queues, ports, port_rates, capture, goodput = payload
    return Result(
        summary=json.loads(summary),
        flows=None if flows_file is not None else flows_frame(flows),
        flows_file=flows_file,
        queues=queues_frame(queues),
        ports=None,
        ports_json=ports,
        resolved_config=resolved,
        port_rates=port_rates_frame(port_rates),
        pcaps=dict(capture["pcap"]),
        trace=trace_frame(capture["trace"]),
        goodput=goodput_frame(goodput),
    )


def _codes(columns: Mapping[str, Any], name: str) -> pd.Categorical:
    import numpy as np
    import pandas as pd

    codes = _array(*columns[name]).astype(np.int64)
    return pd.Categorical.from_codes(codes, categories=columns[f"{name}_names"][1])


def trace_frame(columns: Mapping[str, Any]) -> pd.DataFrame | None:
    """The per-packet trace from the native module's columns, or None when empty."""
    if _empty(columns["time_us"]):
        return None
    import numpy as np
    import pandas as pd

    flow = _array(*columns["flow"]).astype(np.int64)
    flow[flow == 0xFFFF_FFFF] = -1
    return pd.DataFrame(
        {
            "time": _array(*columns["time_us"]),
            "node": _codes(columns, "node"),
            "port": _codes(columns, "port"),
            "queue": _array(*columns["queue"]),
            "event": _codes(columns, "event"),
            "depth_bytes": _array(*columns["depth_bytes"]),
            "packet": _array(*columns["packet"]),
            "flow": flow,
            "seq": _array(*columns["seq"]),
            "size": _array(*columns["size"]),
        }
    )


def pcap_file_name(port: str) -> str:
    """The file of a captured port inside the result directory, e.g. `pcap/leaf0->spine0.pcap`."""
    return f"{PCAP_DIR}/{port}.pcap"


def write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Calls `write(tmp)` on a temp file beside `path`, then renames it to `path`.

    On any failure (including KeyboardInterrupt) the temp file is removed and
    `path` is left as it was.
    """
    tmp = _temp_beside(path)
    try:
        write(tmp)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise _naming(e, path) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _commit(tmp, path)


def _temp_beside(path: Path) -> Path:
    """A new empty temp file in `path`'s directory (`.<name>.XXXX.tmp`)."""
    try:
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise _naming(e, path) from None
    os.close(fd)
    return Path(name)


def _commit(tmp: Path, path: Path) -> None:
    """Syncs the written temp file `tmp` and renames it to `path` (removed on failure)."""
    try:
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        # NOTE: mkstemp creates the file 0600; results are ordinary files.
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise _naming(e, path) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _naming(e: OSError, path: Path) -> OSError:
    """An I/O error (a full disk, a permission) as one naming the file being written."""
    # NOTE: pyarrow's and matplotlib's errors carry no file name, and the
    # temp file's name would mean nothing to the user.
    reason = e.strerror or " ".join(str(e).split()) or type(e).__name__
    return OSError(e.errno, f"cannot write: {reason}", str(path))


def write_text_atomic(path: Path, text: str) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _with_units(schema: pa.Schema) -> pa.Schema:
    """`schema` with each column's unit in its field metadata, and all of them in
    the schema's (`pisanet.units`)."""
    import pyarrow as pa

    fields = [f.with_metadata({"unit": UNITS[f.name]}) if f.name in UNITS else f for f in schema]
    names = set(schema.names)
    meta = {b"pisanet.units": json.dumps({k: v for k, v in UNITS.items() if k in names}).encode()}
    return pa.schema(fields, metadata={**(schema.metadata or {}), **meta})


def _write_parquet(path: Path, frame: pd.DataFrame) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    schema = _with_units(table.schema)
    write_atomic(path, lambda tmp: pq.write_table(table.cast(schema), tmp))


def flows_table(columns: Mapping[str, tuple[str, bytes]]) -> pa.Table:
    """The flow table from the native module's columns as an Arrow table, as
    `flows.parquet` holds it (NaN as null, units in the metadata), without pandas."""
    import pyarrow as pa

    arrays = [_arrow_array(*columns[k]) for k in FLOW_COLUMNS]
    schema = pa.schema(
        [pa.field(n, a.type) for n, a in zip(FLOW_COLUMNS.values(), arrays, strict=True)]
    )
    return pa.Table.from_arrays(arrays, schema=_with_units(schema))


def _arrow_array(dtype: str, buffer: bytes) -> pa.Array:
    """A native column as an Arrow array without a copy, NaN as null (what
    `Table.from_pandas` makes of the DataFrame the whole table was written from)."""
    import numpy as np
    import pyarrow as pa

    # NOTE: built from the buffers: pa.array() of a numpy array imports pandas
    # (half a second and 40 MB) to check whether it was given a pandas object.
    arrow_type = {"|u1": pa.uint8(), "<u4": pa.uint32(), "<u8": pa.uint64(), "<f8": pa.float64()}
    validity = None
    if dtype == "<f8":
        nan = np.isnan(_array(dtype, buffer))
        if nan.any():
            validity = pa.py_buffer(np.packbits(~nan, bitorder="little"))
    n = len(buffer) // np.dtype(dtype).itemsize
    return pa.Array.from_buffers(arrow_type[dtype], n, [validity, pa.py_buffer(buffer)])


class FlowsWriter:
    """The flow sink of a run that writes a result directory (`pisanet.run` with
    `out`, `pisanet run`): the native module calls it with each batch of
    finished flows' columns, and it appends them to a temp file beside
    `flows.parquet` (one row group per batch); `write` renames that file into
    place, `discard` removes it. So the flow table never has to be in memory
    whole (docs/performance.md, "Memory against finished flows")."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "flows.parquet"
        self.tmp = _temp_beside(self.path)
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None

    def __call__(self, columns: Mapping[str, tuple[str, bytes]]) -> None:
        import pyarrow.parquet as pq

        table = flows_table(columns)
        try:
            if self._writer is None:
                self._writer = pq.ParquetWriter(self.tmp, table.schema)
            self._writer.write_table(table)
        except OSError as e:
            raise _naming(e, self.path) from None
        self.rows += table.num_rows

    def close(self) -> Path:
        """Finishes the temp file (the native module's last call came) and returns it."""
        if self._writer is None:
            raise RuntimeError("FlowsWriter.close: the run wrote no flow batch")
        try:
            self._writer.close()
        except OSError as e:
            raise _naming(e, self.path) from None
        self._writer = None
        return self.tmp

    def discard(self) -> None:
        """Drops the temp file (the run failed or was interrupted)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
        self.tmp.unlink(missing_ok=True)


def _is_ours(entry: Path) -> bool:
    """Whether a directory entry is one a pisanet run or `pisanet plot` writes."""
    name = entry.name
    return (
        name in FILES
        or name == "error.json"  # a failed sweep point's (pisanet.sweeps)
        or name in (QUEUES_FILE, PORT_RATES_FILE, TRACE_FILE, PCAP_DIR, *PLOT_FILES)
        or (name.startswith("flow_") and name.endswith(".png"))
        or (name.startswith(".") and name.endswith(".tmp"))
    )


def check_out(out: str | os.PathLike[str]) -> Path:
    """The result directory `out`, refused (`ConfigError`) when a run must not write there.

    Refused: an empty path, a path that is a file, and a non-empty directory that
    is not an earlier pisanet result (it holds files a run does not write).
    """
    from pisanet._core import ConfigError

    if not os.fspath(out).strip():
        raise ConfigError(
            "--out: an empty path; name the result directory, e.g. --out results/run1"
        )
    directory = Path(out)
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{directory}: exists and is not a directory; choose another --out")
    if directory.is_dir():
        foreign = sorted(e.name for e in directory.iterdir() if not _is_ours(e))
        if foreign:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise ConfigError(
                f"{directory}: not empty and not a pisanet result directory (holds {shown}); "
                "choose another --out, or empty it to write there"
            )
    return directory


def write(
    out: str | os.PathLike[str], result: Result, flows: FlowsWriter | None = None
) -> list[Path]:
    """Writes the result directory `out` (created if missing); returns the files written.

    `out` must be empty, missing or an earlier result directory (`check_out`);
    the files of the earlier run that this one does not write (samples, pcaps,
    plots) are removed. With `flows`, the run streamed its flow table there
    (in `out`): that file becomes `flows.parquet`.
    """
    directory = check_out(out)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _naming(e, directory) from None
    # NOTE: a rewrite first unmarks the directory as complete, and drops the
    # samples of an earlier run that this one does not have, so no file of
    # the old run is read as part of the new one.
    (directory / "summary.json").unlink(missing_ok=True)
    for name, frame in (
        (QUEUES_FILE, result.queues),
        (PORT_RATES_FILE, result.port_rates),
        (TRACE_FILE, result.trace),
        (GOODPUT_FILE, result.goodput),
    ):
        if frame is None:
            (directory / name).unlink(missing_ok=True)
    if (directory / PCAP_DIR).is_dir():
        for old in (directory / PCAP_DIR).glob("*.pcap"):
            if old.name[: -len(".pcap")] not in result.pcaps:
                old.unlink()
    # Plots and temp files of the earlier run (a killed writer's) describe other results.
    for entry in directory.iterdir():
        if (
            entry.is_file()
            and (
                entry.name in PLOT_FILES
                or (entry.name.startswith("flow_") and entry.name.endswith(".png"))
                or (entry.name.startswith(".") and entry.name.endswith(".tmp"))
            )
            and (flows is None or entry.name != flows.tmp.name)
        ):
            entry.unlink(missing_ok=True)
    written = []

    def text(name: str, content: str) -> None:
        write_text_atomic(directory / name, content)
        written.append(directory / name)

    text("config.resolved.toml", result.resolved_config)
    if flows is not None:
        _commit(flows.close(), directory / "flows.parquet")
    else:
        _write_parquet(directory / "flows.parquet", result.flows)
    written.append(directory / "flows.parquet")
    if result.queues is not None:
        _write_parquet(directory / QUEUES_FILE, result.queues)
        written.append(directory / QUEUES_FILE)
    if result.port_rates is not None:
        _write_parquet(directory / PORT_RATES_FILE, result.port_rates)
        written.append(directory / PORT_RATES_FILE)
    if result.trace is not None:
        _write_parquet(directory / TRACE_FILE, result.trace)
        written.append(directory / TRACE_FILE)
    if result.goodput is not None:
        _write_parquet(directory / GOODPUT_FILE, result.goodput)
        written.append(directory / GOODPUT_FILE)
    if result.pcaps:
        (directory / PCAP_DIR).mkdir(exist_ok=True)
    for port, content in result.pcaps.items():
        path = directory / pcap_file_name(port)
        write_atomic(path, partial(Path.write_bytes, data=content))
        written.append(path)
    text("ports.json", result.ports_json())
    # NOTE: the summary goes last: its presence marks a complete result directory.
    text("summary.json", json.dumps(result.summary, indent=2) + "\n")
    return written


def read_flows(directory: str | os.PathLike[str]) -> pd.DataFrame:
    """The flow table of a result directory, in flow id order."""
    return _read_flows_file(Path(directory) / "flows.parquet")


def _read_flows_file(path: Path) -> pd.DataFrame:
    import pandas as pd

    frame = pd.read_parquet(path)
    if not frame["id"].is_monotonic_increasing:
        frame = frame.sort_values("id", kind="stable", ignore_index=True)
    return frame
