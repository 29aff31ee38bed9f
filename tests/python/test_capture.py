"""pcap capture and the per-packet trace: the files of a result directory read
back by an independent reader (dpkt) and by Wireshark's tshark with the
generated dissector (tools/wireshark/pisanet.lua), for every scheme header.

A packet the test knows: the trace records, for each packet a port sends, its
id, flow, sequence number and size at the time it starts on the wire; the
capture's frame at that time must carry the same values (IPv4 id = packet id
mod 2^16, TCP sequence = seq mod 2^32, frame length = size - FCS).
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dpkt
import pandas as pd
import pytest

import pisanet
from _support import TINY

ROOT = Path(__file__).resolve().parents[2]
LUA = ROOT / "tools" / "wireshark" / "pisanet.lua"
HEADERS_MD = ROOT / "docs" / "headers.md"

# Scheme -> the port whose capture carries its header.
PORTS = {
    "ecmp": "leaf0->spine0",
    "hula": "spine0->leaf1",
    "conga": "leaf0->spine0",
    "p4te": "leaf0->spine0",
}


@dataclass(frozen=True)
class Field:
    name: str
    offset: int
    bits: int


def documented_layouts() -> dict[str, list[Field]]:
    """Each header's fields as docs/headers.md documents them (`pisanet_<name>`)."""
    layouts: dict[str, list[Field]] = {}
    current: list[Field] | None = None
    for line in HEADERS_MD.read_text().splitlines():
        m = re.match(r"## .* \(`pisanet_(\w+)`\)", line)
        if m:
            current = layouts.setdefault(m.group(1), [])
            continue
        m = re.match(r"\| `(\w+)` \| (\d+) \| (\d+) \|", line)
        if m and current is not None:
            current.append(Field(m.group(1), int(m.group(3)), int(m.group(2))))
    return layouts


def decode(data: bytes, fields: list[Field]) -> dict[str, int]:
    """Reads bit fields (most significant bit first) from the start of `data`."""
    total = sum(f.bits for f in fields)
    word = int.from_bytes(data[: total // 8], "big")
    return {
        f.name: (word >> (total - f.offset - f.bits)) & ((1 << f.bits) - 1)
        for f in fields
        if f.name != "reserved"
    }


def ipv4_checksum_ok(header: bytes) -> bool:
    total = sum(struct.unpack("!10H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


@dataclass
class Frame:
    ip: Any
    header: dict[str, int] | None
    tcp: Any


def read_frames(path: Path, layouts: dict[str, list[Field]]) -> list[Frame]:
    """Parses a capture with dpkt and the documented scheme header layouts."""
    frames = []
    with open(path, "rb") as f:
        reader = dpkt.pcap.Reader(f)
        assert reader.datalink() == dpkt.pcap.DLT_EN10MB
        for _, buf in reader:
            eth_type = struct.unpack("!H", buf[12:14])[0]
            header = None
            rest = buf[14:]
            if eth_type == 0x88B5:
                n = sum(x.bits for x in layouts["conga"]) // 8
                header, rest = decode(rest, layouts["conga"]), rest[n:]
            else:
                assert eth_type == 0x0800
            ip = dpkt.ip.IP(rest)
            assert ipv4_checksum_ok(bytes(rest[:20]))
            tcp = None
            payload = bytes(rest[20:])
            if ip.p in (253, 254):
                name = "hula" if ip.p == 253 else "p4te"
                n = sum(x.bits for x in layouts[name]) // 8
                header, payload = decode(payload, layouts[name]), payload[n:]
                if header.get("next_proto") == 6:
                    tcp = dpkt.tcp.TCP(payload)
            elif ip.p == 6:
                tcp = ip.data
            frames.append(Frame(ip, header, tcp))
    return frames


def orig_lengths(path: Path) -> list[tuple[int, int]]:
    """(timestamp ns, orig_len) of every record, read from the record headers."""
    data = path.read_bytes()
    magic, _, _, _, _, _, link = struct.unpack("<IHHiIII", data[:24])
    assert magic == 0xA1B23C4D and link == 1, "nanosecond pcap, Ethernet"
    out, o = [], 24
    while o < len(data):
        sec, nsec, incl, orig = struct.unpack("<IIII", data[o : o + 16])
        out.append((sec * 1_000_000_000 + nsec, orig))
        o += 16 + incl
    return out


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, pd.DataFrame]]:
    """One small run per scheme, capturing and tracing its port."""
    out = {}
    for scheme, port in PORTS.items():
        d = tmp_path_factory.mktemp(scheme)
        pisanet.run(
            TINY,
            d,
            set=[
                f"scheme.kind={scheme}",
                f'metrics.pcap.ports=["{port}"]',
                f'metrics.trace.ports=["{port}"]',
                "workload.flows=8",
            ],
        )
        trace = pd.read_parquet(d / "trace.parquet")
        out[scheme] = (d / "pcap" / f"{port}.pcap", trace)
    return out


@pytest.mark.parametrize("scheme", list(PORTS))
def test_capture_matches_the_trace_and_the_documented_headers(
    scheme: str, captures: dict[str, tuple[Path, pd.DataFrame]]
) -> None:
    path, trace = captures[scheme]
    frames = read_frames(path, documented_layouts())
    lengths = orig_lengths(path)
    sent = trace[trace["event"] == "dequeue"].reset_index(drop=True)
    assert len(frames) == len(sent) == len(lengths) > 20
    for i, frame in enumerate(frames):
        row = sent.iloc[i]
        assert abs(lengths[i][0] - row["time"] * 1000) < 2, "timestamp in ns"
        assert lengths[i][1] == row["size"] - 4, "orig_len = wire size without FCS"
        assert frame.ip.id == row["packet"] & 0xFFFF
        if frame.tcp is not None:
            assert frame.tcp.seq == row["seq"] % 2**32
    headers = [f.header for f in frames if f.header is not None]
    if scheme == "ecmp":
        assert not headers
    elif scheme == "hula":
        # Probes down to leaf1 come from leaf0's ToR; utilizations are 8 bits.
        assert headers and all(h["tor_id"] == 0 for h in headers)
        assert all(0 <= h["min_util"] <= 255 for h in headers)
    elif scheme == "conga":
        # leaf0 pushed every header on this uplink, with feedback for its peer.
        assert headers and all(h["src_leaf"] == 0 and h["fb_valid"] == 1 for h in headers)
        assert all(h["lbtag"] in (0, 1) and h["ce"] <= 7 for h in headers)
    elif scheme == "p4te":
        assert headers and all(h["next_proto"] == 6 and h["flags"] < 16 for h in headers)
        data = [f for f in frames if f.header and f.header["flags"] & 4 == 0 and f.tcp.data]
        assert data, "data packets with the shim"


TSHARK_FIELDS = {
    "hula": ["tor_id", "min_util"],
    "conga": ["src_leaf", "lbtag", "ce", "fb_lbtag", "fb_metric", "fb_valid", "hash"],
    "p4te": ["flags", "next_proto", "ack", "inflight"],
}


@pytest.mark.parametrize("scheme", list(PORTS))
def test_tshark_shows_the_same_fields(
    scheme: str, captures: dict[str, tuple[Path, pd.DataFrame]]
) -> None:
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip(
            "tshark is not installed: the dissector is not checked here "
            "(bash scripts/test.sh installs Debian's tshark when it can: apt-get install tshark)"
        )
    path, _ = captures[scheme]
    names = [f"pisanet_{scheme}.{f}" for f in TSHARK_FIELDS.get(scheme, [])]
    cmd = [tshark, "-n", "-X", f"lua_script:{LUA}", "-r", str(path)]
    cmd += ["-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE"]
    cmd += ["-T", "fields", "-E", "separator=,", "-e", "ip.id", "-e", "ip.checksum.status"]
    cmd += ["-e", "tcp.seq_raw", "-e", "tcp.checksum.status"]
    for n in names:
        cmd += ["-e", n]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()
    frames = read_frames(path, documented_layouts())
    lengths = orig_lengths(path)
    assert len(out) == len(frames)
    verified = 0
    for line, frame, (_, orig) in zip(out, frames, lengths, strict=True):
        ip_id, ip_ok, seq, tcp_ok, *values = line.split(",")
        assert int(ip_id, 0) == frame.ip.id
        assert ip_ok == "1", "IPv4 checksum good"
        if frame.tcp is not None:
            assert int(seq) == frame.tcp.seq
            # tshark verifies a TCP checksum only when the whole segment was
            # captured (the default snap length, 128 bytes, cuts data packets).
            if orig <= 128:
                assert tcp_ok == "1", "TCP checksum good"
                verified += 1
        if frame.header is None:
            assert all(v == "" for v in values)
        else:
            assert [int(v) for v in values] == [frame.header[f] for f in TSHARK_FIELDS[scheme]], (
                line
            )
    assert verified > 0 or scheme == "hula"


def test_cli_captures_traces_and_plots_a_flow(
    cli: Callable[..., subprocess.CompletedProcess[str]], tiny_config: Path, tmp_path: Path
) -> None:
    out = tmp_path / "res"
    sets = ['metrics.pcap.ports=["leaf1->spine1"]', "metrics.pcap.max_packets=10"]
    sets += ["metrics.trace.flows=[4]", "workload.flows=10"]
    run = cli("run", tiny_config, "--out", out, "-q", *(x for s in sets for x in ("--set", s)))
    assert run.returncode == 0, run.stderr
    # The bound was hit: the file holds 10 packets and the CLI says so.
    assert run.stderr.startswith(
        "warning: metrics.pcap: pcap/leaf1->spine1.pcap holds its first 10"
    )
    assert len(orig_lengths(out / "pcap" / "leaf1->spine1.pcap")) == 10
    trace = pd.read_parquet(out / "trace.parquet")
    assert set(trace["flow"]) == {4}
    assert list(trace.columns) == [
        "time", "node", "port", "queue", "event", "depth_bytes", "packet", "flow", "seq", "size",
    ]  # fmt: skip
    plotted = cli("plot", out, "--flow", "4")
    assert plotted.returncode == 0, plotted.stderr
    assert (out / "flow_4.png").stat().st_size > 1000
    missing = cli("plot", out, "--flow", "5")
    assert missing.returncode == 2
    assert missing.stderr.strip().endswith(
        "no events of flow 5 in the trace; run with [metrics.trace] flows = [5]"
    )
    # A rerun without capture leaves no stale capture files behind.
    again = cli("run", tiny_config, "--out", out, "-q")
    assert again.returncode == 0, again.stderr
    assert not (out / "trace.parquet").exists()
    assert not list((out / "pcap").glob("*.pcap"))


def test_sweep_database_has_the_trace(tmp_path: Path) -> None:
    swept = pisanet.sweep(
        TINY,
        {"scheme.kind": ["ecmp", "hula"]},
        out=tmp_path / "sweep",
        executor=ThreadPoolExecutor(2),
        set=["metrics.trace.flows=[1]", "workload.flows=5", 'metrics.pcap.ports=["h0->leaf0"]'],
    )
    # The capture's counts are summary figures like the others.
    sent = swept.query("SELECT capture_pcap_packets AS n FROM runs")
    assert (sent["n"] > 0).all()
    for point in (tmp_path / "sweep" / "points").iterdir():
        assert (point / "pcap" / "h0->leaf0.pcap").stat().st_size > 24
    per_scheme = swept.query(
        "SELECT scheme_kind, count(DISTINCT packet) AS packets, min(flow) AS lo, max(flow) AS hi "
        "FROM trace GROUP BY ALL ORDER BY ALL"
    )
    assert list(per_scheme["scheme_kind"]) == ["ecmp", "hula"]
    assert (per_scheme["packets"] > 0).all()
    assert (per_scheme["lo"] == 1).all() and (per_scheme["hi"] == 1).all()
