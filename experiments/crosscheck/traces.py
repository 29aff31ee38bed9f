"""What the trace scripts share (issue 19): ns-3 runs with ns3_sim.py's
trace, that trace read a line at a time, ns-3's sockets and the packets at
a switch port given to flows, and pisanet runs with a packet trace.

Not part of the test suite (tests/python/test_crosscheck.py imports
crosscheck.py only).
"""

from __future__ import annotations

import argparse
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import crosscheck as xc

SINK_PORT = 5000  # ns3_sim.SINK_PORT (ns3_sim.py imports ns-3, so not imported here)


def parser(
    doc: str | None, scenario: str | None = None, full: bool = False
) -> argparse.ArgumentParser:
    """A trace script's arguments: its docstring DOC as the help, and
    `--scenario` (default SCENARIO) and with FULL `--full` when asked."""
    ap = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    if scenario is not None:
        ap.add_argument("--scenario", default=scenario)
    if full:
        ap.add_argument("--full", action="store_true", help="the full-size flow list")
    return ap


def scenario(name: str, full: bool = False) -> xc.Scenario:
    """The cross-check's scenario NAME with its quick flow list (FULL: the
    full-size one, crosscheck.py without `--quick`)."""
    return next(s for s in xc.scenarios(not full) if s.name == name)


def ns3_traced(
    spec: dict[str, Any], trace: Path | None = None, **keys: Any
) -> tuple[dict[str, Any], str]:
    """ns-3 (crosscheck.run_ns3_spec) on SPEC with its trace (ns3_sim.py's
    spec key `trace`, and the trace keys KEYS) written to TRACE, or to a
    temporary file: ns-3's output, and the temporary file's text ("" for
    TRACE, which may be too large to hold: `trace_lines` reads it)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.txt" if trace is None else trace
        out = xc.run_ns3_spec({**spec, "trace": str(path), **keys}, Path(tmp))
        return out, path.read_text() if trace is None else ""


def trace_lines(trace: Path) -> Iterator[list[str]]:
    """ns-3's trace, one line at a time, split into fields (the full-size
    trace is too large to hold as text and as split lines at once)."""
    with trace.open() as fh:
        for ln in fh:
            yield ln.split()


class Senders:
    """The senders of FLOWS in ns-3's trace: `read` gives the lines of their
    sockets their flows, `syn_waiting` and `last_sender` the packets a
    switch port traces theirs. The k-th flow from a host (by start) is its
    socket k + 1 (socket 0: the PacketSink's listener) with the ephemeral
    port 49153 + k. Ports and sequence numbers repeat across
    hosts (ephemeral ports from 49153, ISN 0 on every node), so a data
    segment at a port is the flow of its source port that sent its sequence
    number last, and a SYN a flow of its port that has started and sent no
    data yet, the last started if there are several."""

    def __init__(self, flows: list[dict[str, Any]]) -> None:
        self.flows = flows
        # (node, socket), as in a per-socket trace line's context: the flow.
        self.sock_of: dict[tuple[str, str], int] = {}
        # Source port: the flows that use it (one per sending host).
        self.port_of: dict[int, list[int]] = defaultdict(list)
        for h in {f["src"] for f in flows}:
            mine = sorted(
                (i for i, f in enumerate(flows) if f["src"] == h),
                key=lambda i: (flows[i]["start_us"], i),
            )
            for k, i in enumerate(mine):
                self.sock_of[(str(h), str(k + 1))] = i
                self.port_of[49153 + k].append(i)
        # Per flow that has sent data: the highest byte sent so far.
        self.high: dict[int, int] = {}

    def read(self, trace: Path) -> Iterator[tuple[float, str, str, list[str], int, bool]]:
        """TRACE's lines (`trace_lines`) but the receivers' per-socket ones
        and the segments sent without data: time (us), context, event, the
        fields, the flow of a sender's socket (-1: not a socket's line) and
        for a data segment sent (`tx`) whether it is resent (not beyond the
        highest byte its flow had sent; `high` holds the segment by the time
        its line is given)."""
        for f in trace_lines(trace):
            t, ctx, ev = int(f[0]) / 1000.0, f[1], f[2]
            if not ctx.startswith("/NodeList/"):
                yield t, ctx, ev, f, -1, False
                continue
            parts = ctx.split("/")  # /NodeList/N/$ns3::TcpL4Protocol/SocketList/S
            i = self.sock_of.get((parts[2], parts[5]), -1)
            if i < 0:
                continue
            resent = False
            if ev == "tx":
                seq, n = int(f[3]), int(f[4])
                if n == 0:
                    continue
                resent = seq + n <= self.high.get(i, 0)
                if not resent:
                    self.high[i] = seq + n
            yield t, ctx, ev, f, i, resent

    def syn_waiting(self, sport: int, t: float) -> list[int]:
        """The flows a SYN from port SPORT at time T (us) may be: those of
        the port that have started and sent no data yet (by `high`)."""
        return [
            i
            for i in self.port_of.get(sport, [])
            if self.flows[i]["start_us"] <= t and i not in self.high
        ]

    def last_started(self, ids: list[int]) -> int:
        """The flow of IDS that started last (the first of those if several)."""
        return max(ids, key=lambda i: self.flows[i]["start_us"])

    def last_sender(
        self, sent: Mapping[int, Mapping[int, Any]], sport: int, seq: int, missing: Any
    ) -> tuple[Any, int]:
        """The flow of port SPORT that sent sequence number SEQ last, by
        SENT (per flow, per sequence number: its last send, ordered by
        time): (that send, the flow); a flow that did not send SEQ counts
        as MISSING, and a port without flows gives (MISSING, -1)."""
        return max(
            ((sent[i].get(seq, missing), i) for i in self.port_of.get(sport, [])),
            default=(missing, -1),
        )


def pisanet_traced(
    sc: xc.Scenario,
    flows: list[dict[str, Any]],
    sets: list[str],
    traced: list[int],
    max_rows: int,
    *,
    overrides: dict[str, Any] | None = None,
    margin_ms: float = 5000.0,
    flow_stats: bool = False,
) -> tuple[Any, Any]:
    """pisanet ns-3-like (crosscheck.ns3_like_overrides, or OVERRIDES; then
    `--set`s SETS) on FLOWS until MARGIN_MS after the last start, with a
    packet trace of the flows TRACED (at most MAX_ROWS rows) and with
    FLOW_STATS the per-flow loss counters: the run and its trace."""
    metrics: dict[str, Any] = {"trace": {"flows": traced, "max_rows": max_rows}}
    if flow_stats:
        metrics["flow_stats"] = True
    r = xc.run_custom(
        sc.kind,
        sc.cc,
        flows,
        xc.ns3_like_overrides(sc.cc) if overrides is None else overrides,
        sets,
        max_sim_time_ms=flows[-1]["start_us"] / 1000 + margin_ms,
        metrics=metrics,
    )
    tr = r.trace
    assert tr is not None
    return r, tr
