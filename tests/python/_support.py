"""Test support: the tiny config, the documented columns, and CLI assertions."""

from __future__ import annotations

import os
import subprocess

TINY = """\
[run]
seed = 7
max_sim_time_ms = 200

[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
host_link_gbps = 10.0
fabric_link_gbps = 10.0
link_delay_us = 1.0
buffer_kb = 200
ecn_threshold_kb = 65

[transport]
kind = "dctcp"
min_rto_us = 1000

[workload]
cdf = "websearch"
load = 0.5
flows = 50
pattern = "uniform"

[scheme]
kind = "ecmp"
"""

FLOW_COLUMNS = [
    "id",
    "src",
    "dst",
    "bytes",
    "class",
    "start",
    "finish",
    "fct",
    "slowdown",
    "retransmissions",
    "reordered",
    "transport",
    "priority",
    "group",
    "lost_packets",
    "lost_bytes",
    "delay_mean",
    "delay_p50",
    "delay_p99",
    "delay_max",
    "rtt_mean",
    "rtt_p99",
    "rtt_max",
    "deadline_missed_packets",
    "dup_acks",
    "fast_retransmits",
    "timeouts",
    "delay_packets",
    "delivered",
]


def cli_env() -> dict[str, str]:
    # NOTE: a wide, plain terminal so that tables and messages are not wrapped.
    return {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The process exited with `code` and printed exactly one `error: ...` line on stderr."""
    lines = result.stderr.splitlines()
    assert result.returncode == code, (result.returncode, result.stderr)
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]
