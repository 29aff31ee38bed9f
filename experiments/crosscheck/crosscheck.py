"""Cross-check of pisanet against ns-3 3.44 on identical flow lists (issue 19).

    nice -n 10 .venv/bin/python experiments/crosscheck/crosscheck.py [--quick]

Installs ns-3 (the `ns3` wheel from PyPI, 3.44; prebuilt, no compiler) into
experiments/crosscheck/.venv-ns3 on first use, generates each scenario's flow
list once, runs ns-3 (ns3_sim.py; `--jobs N` runs N at a time) and pisanet
(its Python API) on it, and writes the tables between the markers of
docs/results/crosscheck.md. ns-3's outputs are stored, gzip'd, in
experiments/crosscheck/ns3-runs (in the repository) by a hash of their input,
so a second run only reruns pisanet. `--quick` uses fewer flows (100
web-search, 30 data-mining, 6 incast rounds) and writes every table; the full
size (1000 / 300 / 40) writes the main tables only, to a section of their own,
and takes hours of ns-3 (which simulates about 1-5 MB of flow data per
wall-clock second here; pisanet's runs take well under a second).

Scenarios (single path, since ns-3 3.44 has no per-flow ECMP):
* dumbbell: 4 senders on switch s0, 4 receivers on s1, s0-s1 one link; every
  link 10 Gb/s, 1 us. Poisson arrivals at `load` of the s0-s1 link, sizes from
  pisanet's built-in web-search or data-mining CDF, each flow from a random
  sender to a random receiver.
* incast: 17 hosts on one switch; rounds every 10 ms in which 16 hosts each
  send `size` bytes to host 0 at once (sizes alternate 32 KB and 512 KB).
* leafspine (`--leafspine`: only these, into their own section of the doc):
  4 leaves x 4 spines, 4 hosts per leaf, every link 10 Gb/s, 1 us. Poisson
  arrivals at `load` of the 16 hosts' aggregate capacity, each flow from a
  random host to a random host on another leaf. Two routings: packet
  spraying (ns-3 RandomEcmpRouting against pisanet `rps`) and flow-hash ECMP
  (ns3_sim.py's 5-tuple hash routing, three salts, against pisanet `ecmp`
  with random source ports, three seeds); see ns3_sim.py.
Switch ports hold 100 packets; DCTCP marks at K = 65 packets.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import itertools
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import pisanet

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VENV = HERE / ".venv-ns3"
# ns-3's outputs, one gzip'd JSON per run, named by a hash of its input
# (`run_ns3`). Kept in the repository: they are the reference the doc's
# tables are computed against, and rerunning them takes hours of ns-3.
CACHE = HERE / "ns3-runs"
DOC = ROOT / "docs" / "results" / "crosscheck.md"
NS3_VERSION = "3.44.post0"
BEGIN, END = "<!-- crosscheck:begin -->", "<!-- crosscheck:end -->"
# `--seeds N` (N > 1) writes its pooled tables here instead.
SEEDS_BEGIN, SEEDS_END = "<!-- crosscheck-seeds:begin -->", "<!-- crosscheck-seeds:end -->"

GBPS = 10.0
DELAY_US = 1.0
BUFFER_PKTS = 100
K_PKTS = 65
FRAME = 1518  # pisanet's wire bytes of a full 1460 B segment
CLASSES = [
    ("< 100 KB", 0, 100_000),
    ("100 KB-10 MB", 100_000, 10_000_001),
    ("> 10 MB", 10_000_001, math.inf),
]

# ns-3, set where both simulators have the knob to what pisanet does (see the
# doc): 1460 B segments, IW 10, an ACK per segment, no SACK, classic NewReno
# recovery (not PRR), 1 ms minimum RTO, 4 MB socket buffers (pisanet's rwnd).
# SegmentSize 1448, not 1460: ns-3's timestamp option (on by default, as in
# Linux) takes 12 B of each segment's header, and 1460 + 12 + 40 = 1512 B IP
# packets exceed the point-to-point links' 1500 B MTU, so IP fragments every
# segment into two packets (the earlier tables had that: two packets per
# segment in the 100-packet queues, and a segment lost with either). Linux
# sends 1448 B segments with timestamps for the same reason; the IP packets
# are then 1500 B, as pisanet's 1460 B segments without options.
NS3_ATTRS = {
    "ns3::TcpSocket::SegmentSize": "1448",
    "ns3::TcpSocket::InitialCwnd": "10",
    "ns3::TcpSocket::DelAckCount": "1",
    "ns3::TcpSocket::SndBufSize": "4096000",
    "ns3::TcpSocket::RcvBufSize": "4096000",
    "ns3::TcpSocket::ConnTimeout": "3ms",
    "ns3::TcpSocketBase::Sack": "false",
    "ns3::TcpSocketBase::MinRto": "1ms",
    "ns3::TcpL4Protocol::RecoveryType": "ns3::TcpClassicRecovery",
    "ns3::RttEstimator::InitialEstimation": "1ms",
}

# pisanet, matched: same rates, delays, 100-packet buffers (in bytes of full
# frames by default), K in bytes of full frames, 1 ms minimum RTO.
PISANET_BASE: dict[str, Any] = {
    "topology.buffer_kb": BUFFER_PKTS * FRAME / 1000,
    "topology.ecn_threshold_kb": (K_PKTS - 0.5) * FRAME / 1000,
    "transport.min_rto_us": 1000,
    "transport.initial_rto_us": 3000,
    "transport.rwnd_kb": 4096,
}
# Without timestamps ns-3's segments carry 1460 B in 1500 B IP packets,
# exactly pisanet's packets.
NO_TIMESTAMPS = {"ns3::TcpSocketBase::Timestamp": "false", "ns3::TcpSocket::SegmentSize": "1460"}
# pisanet with ns-3's behaviour selected: `transport.profile = "ns3"` sets
# each option that selects what ns-3 3.44's TcpSocketBase does (docs/model.md,
# "Hosts"; the doc's "What moves the numbers" lists them with the finding
# that measured each), and the switch ports count in packets as ns-3's queue
# discs do: 100 packets, RED's K = 65 packets (ACKs included). The
# one-change tables take the options out one at a time.
NS3_LIKE: dict[str, Any] = {
    "transport.profile": "ns3",
    "topology.buffer_pkts": BUFFER_PKTS,
    "topology.buffer_kb": 10_000,
    "topology.ecn_threshold_kb": 0,
    "topology.ecn_threshold_pkts": K_PKTS,
}
# ns-3 with SACK on (its default) against pisanet's SACK (RFC 6675): the
# profile then leaves off the three options that model ns-3's CA_CWR and
# loss bookkeeping without SACK (its SACK path recovers from CA_CWR;
# docs/model.md, "Hosts").
SACK_NS3 = {"ns3::TcpSocketBase::Sack": "true"}
# ns-3 that does not give a connection up (it does after 6 SYNs, `ConnCount`,
# or 6 resends of one segment, `DataRetries`; pisanet never does): for the
# full-size scenarios where ns-3 gave one up, so that every class has an
# ns-3 value to compare.
NO_GIVE_UP = {"ns3::TcpSocket::ConnCount": "15", "ns3::TcpSocket::DataRetries": "15"}
NS3_LIKE_SACK: dict[str, Any] = {**NS3_LIKE, "transport.sack": True}
CACHED_ONLY = False
# `--jobs N` (N > 1): a first pass over the same code collects the ns-3 runs
# it would make here (key -> spec, scenario name) instead of making them;
# they then run N at a time, and the second pass finds them all stored.
PLAN: dict[str, tuple[dict[str, Any], str]] | None = None
# Flow-list seeds pooled per dumbbell scenario (`--seeds N`: 1..N); the
# incast's list does not depend on the seed.
SEEDS = [1]


@dataclass
class Scenario:
    name: str
    cc: str
    kind: str  # dumbbell | incast
    cdf: str = ""
    load: float = 0.0
    flows: int = 0
    rounds: int = 0
    extra_ns3: dict[str, str] = field(default_factory=dict)
    # leafspine: how ns-3 picks among equal-cost next hops ("spray":
    # RandomEcmpRouting, against pisanet's `rps`; "flowhash": ns3_sim.py's
    # 5-tuple hash routing, against pisanet's `ecmp`), and the hash's salt.
    routing: str = ""
    salt: int = 0


def flow_count(cdf: str, quick: bool) -> int:
    """The flows of a web-search or data-mining scenario's list: 1000 or
    300 (quick: 100 or 30)."""
    if quick:
        return 100 if cdf == "websearch" else 30
    return 1000 if cdf == "websearch" else 300


def scenarios(quick: bool, kinds: tuple[str, ...] = ("dumbbell", "incast")) -> list[Scenario]:
    out = []
    if "leafspine" in kinds:
        # Leaf-spine 4x4 (section "Leaf-spine" of the doc): web-search and
        # data-mining at 0.3 and 0.7 of the hosts' aggregate capacity, random
        # pairs across leaves, with packet spraying and with flow-hash ECMP
        # (three salts: the hash functions differ, so the comparison is
        # statistical).
        for routing, salts in (("spray", (0,)), ("flowhash", (0, 1, 2))):
            for cc in ("dctcp", "newreno"):
                for cdf in ("websearch", "datamining"):
                    for load in (0.3, 0.7):
                        n = flow_count(cdf, quick)
                        for salt in salts:
                            tag = f" #{salt}" if routing == "flowhash" else ""
                            out.append(
                                Scenario(
                                    f"{cc} {cdf} {load} {routing}{tag}",
                                    cc,
                                    "leafspine",
                                    cdf,
                                    load,
                                    n,
                                    routing=routing,
                                    salt=salt,
                                )
                            )
        if kinds == ("leafspine",):
            return out
    for cc in ("dctcp", "newreno"):
        for cdf in ("websearch", "datamining"):
            for load in (0.3, 0.7):
                n = flow_count(cdf, quick)
                out.append(Scenario(f"{cc} {cdf} {load}", cc, "dumbbell", cdf, load, n))
        out.append(Scenario(f"{cc} incast 16:1", cc, "incast", rounds=6 if quick else 40))
    return out


LS_LEAVES, LS_SPINES, LS_HOSTS_PER_LEAF = 4, 4, 4


def topology(kind: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    def link(a: str, b: str) -> dict[str, Any]:
        return {"a": a, "b": b, "gbps": GBPS, "delay_us": DELAY_US}

    if kind == "leafspine":
        # Hosts h0-h15 first (host i on leaf i // 4), then leaves and spines;
        # every link 10 Gb/s, 1 us; every leaf to every spine (1:1).
        n_hosts = LS_LEAVES * LS_HOSTS_PER_LEAF
        nodes = [{"name": f"h{i}", "kind": "host"} for i in range(n_hosts)]
        nodes += [{"name": f"l{j}", "kind": "switch"} for j in range(LS_LEAVES)]
        nodes += [{"name": f"s{k}", "kind": "switch"} for k in range(LS_SPINES)]
        links = [link(f"h{i}", f"l{i // LS_HOSTS_PER_LEAF}") for i in range(n_hosts)]
        links += [link(f"l{j}", f"s{k}") for j in range(LS_LEAVES) for k in range(LS_SPINES)]
        return nodes, links
    if kind == "dumbbell":
        nodes = [{"name": f"h{i}", "kind": "host"} for i in range(8)]
        nodes += [{"name": "s0", "kind": "switch"}, {"name": "s1", "kind": "switch"}]
        links = [link(f"h{i}", "s0" if i < 4 else "s1") for i in range(8)] + [link("s0", "s1")]
    else:
        nodes = [{"name": f"h{i}", "kind": "host"} for i in range(17)] + [
            {"name": "s0", "kind": "switch"}
        ]
        links = [link(f"h{i}", "s0") for i in range(17)]
    return nodes, links


def read_cdf(name: str) -> list[tuple[float, float]]:
    path = ROOT / "crates" / "pisanet-workload" / "data" / f"{name}.cdf"
    pts = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#"):
            pts.append((float(parts[0]), float(parts[1])))
    return pts


def sample(cdf: list[tuple[float, float]], u: float) -> int:
    for (x0, p0), (x1, p1) in itertools.pairwise(cdf):
        if u <= p1:
            x = x0 if p1 == p0 else x0 + (x1 - x0) * (u - p0) / (p1 - p0)
            return max(1, round(x))
    return int(cdf[-1][0])


def flow_list(sc: Scenario, seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    flows = []
    if sc.kind == "leafspine":
        return leafspine_flows(sc, seed)
    if sc.kind == "dumbbell":
        cdf = read_cdf(sc.cdf)
        sizes = [sample(cdf, rng.random()) for _ in range(sc.flows)]
        mean = sum(sizes) / len(sizes)
        rate = sc.load * GBPS * 1e9 / 8 / mean  # flows per second on the s0-s1 link
        t = 0.0
        for size in sizes:
            t += rng.expovariate(rate) * 1e6
            flows.append(
                {
                    "start_us": int(t),
                    "src": rng.randrange(4),
                    "dst": 4 + rng.randrange(4),
                    "bytes": size,
                }
            )
    else:
        for r in range(sc.rounds):
            size = 32_000 if r % 2 == 0 else 512_000
            for s in range(1, 17):
                flows.append({"start_us": 1000 + r * 10_000, "src": s, "dst": 0, "bytes": size})
    return flows


def jittered(flows: list[dict[str, Any]], jitter_ns: int, draw: int) -> list[dict[str, Any]]:
    """FLOWS with every start moved later by a whole number of ns drawn
    uniformly from [0, JITTER_NS] (draw DRAW of a generator of its own, so
    the list's sizes, hosts and order of draws are those of FLOWS), in start
    order (both simulators number flows by start; equal starts keep list
    order). The noise floor of the cross-check: how far each simulator moves
    from itself when the flows start a fraction of a packet time later."""
    rng = random.Random(f"jitter {jitter_ns} ns, draw {draw}")
    out = [
        {**f, "start_us": round(f["start_us"] + rng.randint(0, jitter_ns) / 1000, 3)} for f in flows
    ]
    return sorted(out, key=lambda f: f["start_us"])


def leafspine_flows(sc: Scenario, seed: int) -> list[dict[str, Any]]:
    """Poisson arrivals at `sc.load` of the hosts' aggregate capacity (16 x
    10 Gb/s, as pisanet's `workload.load`: per sending host, a fraction of its
    link), each flow from a random host to a random host on another leaf."""
    rng = random.Random(seed)
    cdf = read_cdf(sc.cdf)
    sizes = [sample(cdf, rng.random()) for _ in range(sc.flows)]
    n_hosts = LS_LEAVES * LS_HOSTS_PER_LEAF
    rate = sc.load * n_hosts * GBPS * 1e9 / 8 / (sum(sizes) / len(sizes))
    flows = []
    t = 0.0
    for size in sizes:
        t += rng.expovariate(rate) * 1e6
        src = rng.randrange(n_hosts)
        others = [h for h in range(n_hosts) if h // LS_HOSTS_PER_LEAF != src // LS_HOSTS_PER_LEAF]
        flows.append({"start_us": int(t), "src": src, "dst": rng.choice(others), "bytes": size})
    return flows


def ensure_ns3() -> Path:
    py = VENV / "bin" / "python"
    if not py.exists():
        print(f"crosscheck: installing ns3=={NS3_VERSION} into {VENV}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", f"ns3=={NS3_VERSION}"], check=True)
    return py


def nice10() -> list[str]:
    """`nice` to run ns-3 at niceness 10 (not 10 more than an already niced caller)."""
    return ["nice", "-n", str(max(0, 10 - os.nice(0)))]


def ns3_spec(
    kind: str, cc: str, flows: list[dict[str, Any]], attrs: dict[str, str], stop_s: float
) -> dict[str, Any]:
    """ns3_sim.py's input for FLOWS on topology KIND with CC: the cross-check's
    attributes (ATTRS over NS3_ATTRS), 100-packet queue discs, and for DCTCP
    ECN in the sockets and RED marking at K_PKTS."""
    nodes, links = topology(kind)
    all_attrs = {**NS3_ATTRS, **attrs}
    queue: dict[str, Any] = {"limit_pkts": BUFFER_PKTS}
    if cc == "dctcp":
        all_attrs["ns3::TcpSocketBase::UseEcn"] = "On"
        queue["ecn_k_pkts"] = K_PKTS
    return {
        "nodes": nodes,
        "links": links,
        "flows": flows,
        "cc": cc,
        "queue": queue,
        "attrs": all_attrs,
        "stop_s": stop_s,
    }


def run_ns3_spec(spec: dict[str, Any], tmp: Path, name: str = "a trace run") -> dict[str, Any]:
    """Runs ns3_sim.py (niced) on SPEC in the directory TMP and returns its output.

    The one way to run ns-3 (the cached runs and the trace scripts); exits
    with ns-3's error output if the run fails.
    """
    py = ensure_ns3()
    spec_path, out = tmp / "spec.json", tmp / "out.json"
    spec_path.write_text(json.dumps(spec))
    proc = subprocess.run(
        [*nice10(), str(py), str(HERE / "ns3_sim.py"), str(spec_path), str(out)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 or not out.exists():
        sys.exit(f"crosscheck: ns-3 failed on {name}:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def run_ns3(
    sc: Scenario, flows: list[dict[str, Any]], attrs: dict[str, str]
) -> dict[str, Any] | None:
    spec = ns3_spec(sc.kind, sc.cc, flows, attrs, flows[-1]["start_us"] / 1e6 + 5.0)
    if sc.routing:
        spec.update(routing=sc.routing, hash_salt=sc.salt, count_tcp=True)
    key = hashlib.sha256((json.dumps(spec, sort_keys=True) + NS3_VERSION).encode()).hexdigest()[:16]
    cached = CACHE / f"{key}.json.gz"
    if cached.exists():
        result: dict[str, Any] = json.loads(gzip.decompress(cached.read_bytes()))
        # Outputs stored before ns3_sim.py checked each flow's bytes
        # ("incomplete"): every byte not delivered must belong to a flow
        # without an FCT, or some flow's FCT is that of a connection ns-3
        # gave up on (finding 19).
        missing = result["expected_bytes"] - result["delivered_bytes"]
        no_fct = sum(f["bytes"] for f, x in zip(flows, result["fct_us"], strict=True) if x != x)
        if "incomplete" not in result and missing != no_fct:
            sys.exit(
                f"crosscheck: stored ns-3 run {cached.name} ({sc.name}) is missing {missing} B "
                f"but its flows without an FCT hold {no_fct} B; delete it to rerun ns-3"
            )
        return result
    if PLAN is not None:
        PLAN[key] = (spec, sc.name)
        return None
    if CACHED_ONLY:
        return None
    return run_and_store(key, spec, sc.name)


def run_and_store(key: str, spec: dict[str, Any], name: str) -> dict[str, Any]:
    """Runs ns-3 on SPEC and stores its output as CACHE/KEY.json.gz (atomically)."""
    CACHE.mkdir(exist_ok=True)
    print(
        f"crosscheck: ns-3 {name} ({len(spec['flows'])} flows, {key})", file=sys.stderr, flush=True
    )
    with tempfile.TemporaryDirectory() as tmp:
        result = run_ns3_spec(spec, Path(tmp), name)
        part = Path(tmp) / "out.json.gz"
        part.write_bytes(gzip.compress(json.dumps(result).encode(), mtime=0))
        os.replace(part, CACHE / f"{key}.json.gz")
    return result


def run_planned(jobs: int, body: Callable[[], None]) -> None:
    """BODY once collecting its missing ns-3 runs (no doc written), those
    runs JOBS at a time, then BODY for real."""
    global PLAN, DOC
    real_doc = DOC
    with tempfile.TemporaryDirectory() as tmp:
        DOC = Path(tmp) / DOC.name
        if real_doc.exists():
            DOC.write_text(real_doc.read_text())
        PLAN = {}
        try:
            body()
        finally:
            plan, PLAN, DOC = PLAN, None, real_doc
    print(f"crosscheck: {len(plan)} ns-3 runs to make, {jobs} at a time", file=sys.stderr)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for f in [pool.submit(run_and_store, k, spec, name) for k, (spec, name) in plan.items()]:
            f.result()
    body()


def write_inputs(tmp: str, kind: str, flows: list[dict[str, Any]]) -> tuple[Path, Path]:
    """pisanet's custom topology file and flow list for `kind` and `flows`, in `tmp`."""
    nodes, links = topology(kind)
    topo = Path(tmp) / "topo.toml"
    lines = []
    for n in nodes:
        lines += ["[[nodes]]", f'name = "{n["name"]}"', f'kind = "{n["kind"]}"']
    for lk in links:
        lines += [
            "[[links]]",
            f'a = "{lk["a"]}"',
            f'b = "{lk["b"]}"',
            f"gbps = {lk['gbps']}",
            f"delay_us = {lk['delay_us']}",
        ]
    topo.write_text("\n".join(lines) + "\n")
    csv = Path(tmp) / "flows.csv"
    csv.write_text("".join(f"{f['start_us']},{f['src']},{f['dst']},{f['bytes']}\n" for f in flows))
    return topo, csv


DCTCP_ONLY = (
    "transport.dctcp_dupack_bytes",
    "transport.dctcp_loss_uses_alpha",
    "transport.dctcp_no_floor",
    "transport.dctcp_window_end_next_tx",
)


def for_cc(cc: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """`overrides` without the DCTCP-only keys when `cc` is not DCTCP (pisanet refuses them)."""
    return {k: v for k, v in overrides.items() if cc == "dctcp" or k not in DCTCP_ONLY}


def ns3_like_overrides(cc: str) -> dict[str, Any]:
    """pisanet's ns-3-like settings for CC on the cross-check's topologies:
    what the trace scripts run pisanet with (before their `--set`)."""
    return for_cc(cc, {**PISANET_BASE, **NS3_LIKE})


def run_custom(
    kind: str,
    cc: str,
    flows: list[dict[str, Any]],
    overrides: dict[str, Any],
    sets: list[str] | None = None,
    *,
    max_sim_time_ms: float,
    metrics: dict[str, Any] | None = None,
) -> Any:
    """pisanet on `kind`'s topology and `flows` (the custom topology and flow
    list `write_inputs` writes), with `overrides` (keys to values) and then
    `sets` (`key=value`) on top, and `metrics` as the config's `[metrics]`:
    the `pisanet.Result`. The one pisanet run of the tables and of the trace
    scripts."""
    with tempfile.TemporaryDirectory() as tmp:
        topo, csv = write_inputs(tmp, kind, flows)
        cfg: dict[str, Any] = {
            "run": {"seed": 1, "max_sim_time_ms": max_sim_time_ms},
            "topology": {
                "kind": "custom",
                "file": str(topo),
                "host_link_gbps": GBPS,
                "fabric_link_gbps": GBPS,
                "link_delay_us": DELAY_US,
            },
            "transport": {"kind": cc},
            "workload": {"pattern": "file", "file": str(csv)},
        }
        if metrics is not None:
            cfg["metrics"] = metrics
        both = [f"{k}={pisanet.config.toml_value(v)}" for k, v in overrides.items()]
        return pisanet.run(cfg, set=both + list(sets or []))


def run_pisanet(
    sc: Scenario, flows: list[dict[str, Any]], overrides: dict[str, Any]
) -> dict[str, Any]:
    r = run_custom(
        sc.kind,
        sc.cc,
        flows,
        for_cc(sc.cc, {**PISANET_BASE, **overrides}),
        max_sim_time_ms=flows[-1]["start_us"] / 1000 + 5000,
    )
    fl = r.flows.sort_values("id")
    return {
        "fct_us": fl["fct"].to_numpy(dtype=float).tolist(),
        "retx": fl["retransmissions"].to_numpy(dtype=float).tolist(),
        "summary": r.summary,
        "drops": int(r.summary["packets"]["dropped"]),
        "ecn_marks": int(r.summary["packets"]["ecn_marked"]),
        "trace": r.trace,
        # Loss-recovery counters (0 unless metrics.flow_stats = true).
        "tcp": {
            c: int(fl[c].sum())
            for c in ("retransmissions", "dup_acks", "fast_retransmits", "timeouts", "reordered")
        },
    }


def class_stats(flows: list[dict[str, Any]], fct: list[float]) -> list[tuple[int, float, float]]:
    sizes = np.array([f["bytes"] for f in flows])
    f = np.array(fct, dtype=float)
    out = []
    for _, lo, hi in CLASSES:
        sel = f[(sizes >= lo) & (sizes < hi)]
        if len(sel) == 0 or np.isnan(sel).any():
            out.append((len(sel), math.nan, math.nan))
        else:
            out.append((len(sel), float(sel.mean()), float(np.percentile(sel, 99))))
    return out


def fmt_us(x: float) -> str:
    if math.isnan(x):
        return "-"
    return f"{x / 1000:.2f} ms" if x >= 1000 else f"{x:.0f} us"


def ratio(a: float, b: float) -> str:
    return "-" if math.isnan(a) or math.isnan(b) or b == 0 else f"{a / b:.2f}"


def comparison_table(
    rows: list[tuple[Scenario, list[dict[str, Any]], dict[str, Any], dict[str, dict[str, Any]]]],
    label: str,
) -> str:
    head = f"| scenario | class | flows | ns-3 mean | {label} mean | ratio | ns-3 p99 | {label} p99 | ratio |"
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for sc, flows, ns3, pis in rows:
        a = class_stats(flows, ns3["fct_us"])
        b = class_stats(flows, pis[label]["fct_us"])
        for (cname, _, _), (n, m3, p3), (_, mp, pp) in zip(CLASSES, a, b, strict=False):
            if n == 0:
                continue
            lines.append(
                f"| {sc.name} | {cname} | {n} | {fmt_us(m3)} | {fmt_us(mp)} | {ratio(mp, m3)} | {fmt_us(p3)} | {fmt_us(pp)} | {ratio(pp, p3)} |"
            )
    return "\n".join(lines)


def drops_table(
    rows: list[tuple[Scenario, list[dict[str, Any]], dict[str, Any], dict[str, dict[str, Any]]]],
    labels: list[str],
) -> str:
    lines = [
        "| scenario | ns-3 drops | "
        + " | ".join(f"{lb} drops" for lb in labels)
        + " | ns-3 marks | "
        + " | ".join(f"{lb} marks" for lb in labels)
        + " |"
    ]
    lines.append("|---" * (2 + 2 * len(labels)) + "|---|")
    for sc, _, ns3, pis in rows:
        lines.append(
            f"| {sc.name} | {ns3['drops']} | "
            + " | ".join(str(pis[lb]["drops"]) for lb in labels)
            + f" | {ns3['ecn_marks']} | "
            + " | ".join(str(pis[lb]["ecn_marks"]) for lb in labels)
            + " |"
        )
    return "\n".join(lines)


def goal_count(
    rows: list[tuple[Scenario, list[dict[str, Any]], dict[str, Any], dict[str, dict[str, Any]]]],
    label: str,
) -> tuple[int, int, list[str]]:
    """(classes within the goal, classes, the others described) for LABEL's
    runs against ns-3's: mean within 15%, p99 within 25%."""
    fails = []
    total = 0
    for sc, flows, ns3, pis in rows:
        for (cname, _, _), (n, m3, p3), (_, mp, pp) in zip(
            CLASSES,
            class_stats(flows, ns3["fct_us"]),
            class_stats(flows, pis[label]["fct_us"]),
            strict=False,
        ):
            if n == 0:
                continue
            total += 1
            if math.isnan(m3):
                # ns-3 gave up a connection of this class (finding 19).
                fails.append(f"{sc.name} {cname} (no ns-3 value: ns-3 gave up a flow)")
                continue
            bad = []
            if not abs(mp / m3 - 1) <= 0.15:
                bad.append(f"mean {mp / m3:.2f}")
            if not abs(pp / p3 - 1) <= 0.25:
                bad.append(f"p99 {pp / p3:.2f}")
            if bad:
                fails.append(f"{sc.name} {cname} ({', '.join(bad)})")
    return total - len(fails), total, fails


def within_goal(
    rows: list[tuple[Scenario, list[dict[str, Any]], dict[str, Any], dict[str, dict[str, Any]]]],
    label: str,
) -> str:
    ok, total, fails = goal_count(rows, label)
    text = f"{ok} of {total} scenario-classes within the goal (mean within 15%, p99 within 25%)"
    return text + (": outside: " + "; ".join(fails) + "." if fails else ".")


# Finding 31's rules (with findings 19, 20 and 23's), taken out one at a time.
FINDING_31_KEYS = (
    "dctcp_window_end_next_tx",
    "ca_segment_count",
    "slow_start_all_acked",
    "unvalidated_cwnd",
)
# Rows after a topology's own, with the same labels on both: NewReno's
# TcpNewReno growth (finding 28) back to RFC 5681 slow start and byte
# counting; DCTCP's finding 25 rule and finding 31's, taken out.
NEWRENO_RULE_LABELS = {
    "newreno-ack-adder": "ns-3-like but byte-counted growth (newreno_ack_adder off)",
}
DCTCP_RULE_LABELS = {
    "ce-new-seq-only": "ns-3-like but every CE mark echoed (ce_new_seq_only off)",
    **{key: f"ns-3-like but {key} off" for key in FINDING_31_KEYS},
}

# A row of the one-change-at-a-time table: the change's label, the scenario,
# pisanet's overrides and ns-3's attributes.
AblationRow = tuple[str, Scenario, dict[str, Any], dict[str, str]]


def ablation_changes() -> dict[str, tuple[dict[str, Any], dict[str, str]]]:
    """The changes of the one-change-at-a-time table, by name: pisanet's
    overrides and ns-3's attributes (`ABLATION_LABELS` names them)."""

    def but(key: str, value: Any) -> dict[str, Any]:
        """pisanet's ns-3-like settings but `transport.KEY = VALUE`."""
        return {**NS3_LIKE, f"transport.{key}": value}

    buffers = ("topology.buffer_pkts", "topology.buffer_kb")
    return {
        "defaults": ({}, {}),
        "ns3-like": (NS3_LIKE, {}),
        "tsq": (but("tsq_kb", 131.072), {}),
        "byte-buffers": ({k: v for k, v in NS3_LIKE.items() if k not in buffers}, {}),
        "no-handshake": (but("handshake", False), {}),
        "no-limited-transmit": (but("limited_transmit", False), {}),
        "rto-granularity": (but("rto_granularity_us", 0), {}),
        "rto-reset": (but("rto_reset_on_ack", False), {}),
        # The profile sets ece_ends_recovery only with cwr_ignores_dupacks.
        "cwr-ignores-dupacks": (but("cwr_ignores_dupacks", False), {}),
        "ece-ends-recovery": (but("ece_ends_recovery", False), {}),
        "ts-clock": (but("ts_clock_us", 0), {}),
        # ts_clock_us is read only with rtt_every_ack.
        "rtt-every-ack": (but("rtt_every_ack", False), {}),
        "reno-scoreboard": (but("reno_scoreboard", False), {}),
        "ns3-clock": (NS3_LIKE, {"ns3::TcpSocketBase::ClockGranularity": "1ns"}),
        "ns3-no-timestamps": (NS3_LIKE, NO_TIMESTAMPS),
        "ns3-no-limited-transmit": (NS3_LIKE, {"ns3::TcpSocketBase::LimitedTransmit": "false"}),
        "ns3-sack": (NS3_LIKE, SACK_NS3),
        "dupack-bytes": (but("dctcp_dupack_bytes", False), {}),
        "loss-uses-alpha": (but("dctcp_loss_uses_alpha", False), {}),
        "cwr-freeze": (but("cwr_freeze", False), {}),
        "cwr-ends-at-timeout": (but("cwr_ends_at_timeout", False), {}),
        "no-floor": (
            {**NS3_LIKE, "transport.dctcp_no_floor": False, "transport.full_segment_window": False},
            {},
        ),
        "k-bytes": (
            {
                **NS3_LIKE,
                "topology.ecn_threshold_kb": PISANET_BASE["topology.ecn_threshold_kb"],
                "topology.ecn_threshold_pkts": 0,
            },
            {},
        ),
        "newreno-ack-adder": (but("newreno_ack_adder", False), {}),
        "ce-new-seq-only": (but("ce_new_seq_only", False), {}),
        **{key: (but(key, False), {}) for key in FINDING_31_KEYS},
    }


# The one-change-at-a-time table's rows per topology, in order: the
# changes (`ablation_changes`) run on every scenario and then those run on
# DCTCP's only, each with its label (the incast's fewer, shorter).
ABLATION_LABELS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "dumbbell": (
        {
            "defaults": "pisanet defaults (TSQ, byte buffers, no handshake)",
            "ns3-like": "ns-3-like (all the options)",
            "tsq": "ns-3-like but TSQ on (tsq_kb = 131.072)",
            "byte-buffers": "ns-3-like but byte buffers (151.8 KB)",
            "no-handshake": "ns-3-like but no handshake",
            "no-limited-transmit": "ns-3-like but no limited transmit",
            "rto-granularity": "ns-3-like but RTO granularity 0 (max(min RTO, SRTT + 4 RTTVAR))",
            "rto-reset": "ns-3-like but the RTO backoff kept until an RTT sample (rto_reset_on_ack off)",
            "cwr-ignores-dupacks": "ns-3-like but fast retransmit after an ECN cut (cwr_ignores_dupacks and ece_ends_recovery off)",
            "ece-ends-recovery": "ns-3-like but an ECE does not end fast recovery (ece_ends_recovery off)",
            "ts-clock": "ns-3-like but RTT samples on pisanet's clock (ts_clock_us = 0)",
            "rtt-every-ack": "ns-3-like but one RTT sample per round trip (rtt_every_ack off)",
            "reno-scoreboard": "ns-3-like but RFC 6582 recovery and go-back-N after a timeout (reno_scoreboard off)",
            "ns3-clock": "ns-3-like, ns-3 ClockGranularity 1 ns (pisanet's G; ns-3's 1 ms)",
            "ns3-no-timestamps": "ns-3-like, ns-3 without timestamps (1460 B segments, RTT samples timed by the sender)",
            "ns3-no-limited-transmit": "ns-3-like, ns-3 without limited transmit (RFC 3042)",
            "ns3-sack": "ns-3-like, ns-3 with SACK (its default)",
        },
        {
            "dupack-bytes": "ns-3-like but duplicate ACKs not in DCTCP's alpha (dctcp_dupack_bytes off)",
            "loss-uses-alpha": "ns-3-like but ssthresh halved on a loss (dctcp_loss_uses_alpha off)",
            "cwr-freeze": "ns-3-like but cwnd grows after an ECN cut (cwr_freeze off)",
            "cwr-ends-at-timeout": "ns-3-like but the ECN guard outlives a timeout (cwr_ends_at_timeout off)",
            "no-floor": "ns-3-like but DCTCP's cut floored at 2 SMSS (dctcp_no_floor and full_segment_window off)",
            "k-bytes": "ns-3-like but K in bytes (64.5 full frames, ecn_threshold_pkts off)",
        },
    ),
    "incast": (
        {
            "defaults": "pisanet defaults (TSQ, byte buffers, no handshake)",
            "ns3-like": "ns-3-like (all the options)",
            "rto-granularity": "ns-3-like but RTO granularity 0",
            "rto-reset": "ns-3-like but rto_reset_on_ack off",
            "cwr-ignores-dupacks": "ns-3-like but cwr_ignores_dupacks (and ece_ends_recovery) off",
            "ece-ends-recovery": "ns-3-like but ece_ends_recovery off",
            "rtt-every-ack": "ns-3-like but rtt_every_ack off",
            "reno-scoreboard": "ns-3-like but reno_scoreboard off",
            "ns3-sack": "ns-3-like, ns-3 with SACK (its default)",
            "ns3-no-timestamps": "ns-3-like, ns-3 without timestamps",
            "ns3-no-limited-transmit": "ns-3-like, ns-3 without limited transmit",
        },
        {
            "dupack-bytes": "ns-3-like but dctcp_dupack_bytes off",
            "loss-uses-alpha": "ns-3-like but dctcp_loss_uses_alpha off",
            "cwr-freeze": "ns-3-like but cwr_freeze off",
            "cwr-ends-at-timeout": "ns-3-like but cwr_ends_at_timeout off",
            "no-floor": "ns-3-like but dctcp_no_floor and full_segment_window off",
        },
    ),
}


def labelled_changes(sc: Scenario, labels: dict[str, str]) -> list[AblationRow]:
    """The changes LABELS names (name: label, in order) on SC."""
    changes = ablation_changes()
    return [(label, sc, *changes[name]) for name, label in labels.items()]


def ablation_rows(quick: bool) -> list[AblationRow]:
    """One change at a time from pisanet's ns-3-like settings, or of ns-3:
    on DCTCP web-search 0.7 and NewReno web-search 0.3, then on the incasts."""
    ws = [s for s in scenarios(quick) if s.name in ("dctcp websearch 0.7", "newreno websearch 0.3")]
    out = []
    for sc in ws + [s for s in scenarios(quick) if s.kind == "incast"]:
        every, dctcp = ABLATION_LABELS[sc.kind]
        out += labelled_changes(sc, every)
        if sc.cc == "newreno":
            out += labelled_changes(sc, NEWRENO_RULE_LABELS)
        if sc.cc == "dctcp":
            out += labelled_changes(sc, {**dctcp, **DCTCP_RULE_LABELS})
    return out


def seeds_of(sc: Scenario) -> list[int]:
    return SEEDS if sc.kind == "dumbbell" else [1]


def run_ns3_pooled(
    sc: Scenario, extra: dict[str, str]
) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """ns-3 on each seed's flow list, pooled: (all flows, their FCTs, summed drops and marks)."""
    flows_all: list[dict[str, Any]] = []
    out: dict[str, Any] = {"fct_us": [], "drops": 0, "ecn_marks": 0}
    for seed in seeds_of(sc):
        flows = flow_list(sc, seed)
        r = run_ns3(sc, flows, extra)
        if r is None:
            return None
        flows_all += flows
        out["fct_us"] += r["fct_us"]
        out["drops"] += r["drops"]
        out["ecn_marks"] += r["ecn_marks"]
    return flows_all, out


def run_pisanet_pooled(sc: Scenario, overrides: dict[str, Any]) -> dict[str, Any]:
    """pisanet on each seed's flow list, pooled as `run_ns3_pooled`."""
    out: dict[str, Any] = {"fct_us": [], "drops": 0, "ecn_marks": 0}
    for seed in seeds_of(sc):
        r = run_pisanet(sc, flow_list(sc, seed), overrides)
        out["fct_us"] += r["fct_us"]
        out["drops"] += r["drops"]
        out["ecn_marks"] += r["ecn_marks"]
    return out


def write_section(
    begin: str, end: str, body: str, what: str, after: tuple[str, ...] = (), heading: str = ""
) -> None:
    """Writes BODY (WHAT, for the message) between the doc's markers BEGIN
    and END. Where the doc has none yet they go (under HEADING) after the
    first text of AFTER it holds, or at its end. The planning pass of
    `--jobs` writes to a copy and says nothing."""
    text = DOC.read_text() if DOC.exists() else "# Cross-check against ns-3\n"
    if begin not in text:
        new = (f"{heading}\n\n" if heading else "") + f"{begin}\n{end}"
        at = next((a for a in after if a in text), None)
        text = text.replace(at, f"{at}\n\n{new}", 1) if at else text + f"\n{new}\n"
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    DOC.write_text(f"{head}{begin}\n{body}\n{end}{tail}")
    if PLAN is None:
        shown = DOC.relative_to(ROOT) if DOC.is_relative_to(ROOT) else DOC
        print(f"crosscheck: wrote {what} to {shown}", file=sys.stderr)


def sack_rows(rows: list[Row]) -> tuple[list[Row], list[str]]:
    """SACK in both, ns-3's default against pisanet's `transport.sack`, on
    the scenarios of ROWS: their rows, and the names of those without an
    ns-3 run with SACK (not in the cache)."""
    rows_sack = []
    missing = []
    for sc, flows, _, _ in rows:
        sack = run_ns3_pooled(sc, SACK_NS3)
        if sack is not None:
            pis_sack = {"pisanet ns-3-like + SACK": run_pisanet_pooled(sc, NS3_LIKE_SACK)}
            rows_sack.append((sc, flows, sack[1], pis_sack))
        else:
            missing.append(sc.name)
    return rows_sack, missing


def write_seeds(
    rows: list[tuple[Scenario, list[dict[str, Any]], dict[str, Any], dict[str, dict[str, Any]]]],
    quick: bool,
) -> None:
    """The pooled tables of `--seeds N` (ns-3-like, defaults, SACK in both), between the seed markers."""
    rows_sack, missing = sack_rows(rows)
    parts = [
        f"Generated by `experiments/crosscheck/crosscheck.py{' --quick' if quick else ''} "
        f"--seeds {len(SEEDS)}` (ns-3 {NS3_VERSION}): each dumbbell scenario's "
        f"classes pool the flow lists of seeds 1-{len(SEEDS)}; the incasts are seed 1's.",
        "",
        "#### ns-3-like, pooled",
        "",
        comparison_table(rows, "pisanet ns-3-like"),
        "",
        within_goal(rows, "pisanet ns-3-like"),
        "",
        "#### pisanet defaults, pooled",
        "",
        comparison_table(rows, "pisanet defaults"),
        "",
        within_goal(rows, "pisanet defaults"),
        "",
        "#### SACK in both, pooled",
        "",
        *(
            [f"Left out (an ns-3 run with SACK not in the cache): {', '.join(missing)}.", ""]
            if missing
            else []
        ),
        comparison_table(rows_sack, "pisanet ns-3-like + SACK"),
        "",
        within_goal(rows_sack, "pisanet ns-3-like + SACK"),
    ]
    # Two seeds between the seed markers; N > 2 seeds in a section of their
    # own, after the two seeds' (`crosscheck-seedsN`).
    begin, end = SEEDS_BEGIN, SEEDS_END
    if len(SEEDS) > 2:
        begin = SEEDS_BEGIN.replace("seeds:", f"seeds{len(SEEDS)}:")
        end = SEEDS_END.replace("seeds:", f"seeds{len(SEEDS)}:")
    write_section(begin, end, "\n".join(parts), "the pooled tables", after=(SEEDS_END, END))


NOISE_BEGIN, NOISE_END = "<!-- crosscheck-noise:begin -->", "<!-- crosscheck-noise:end -->"


def spread(xs: list[float]) -> str:
    """Ratios of one class over the jitter draws, in draw order."""
    return ", ".join("-" if math.isnan(x) else f"{x:.2f}" for x in xs)


def noise_floor_section(quick: bool, jitter_ns: int, draws: list[int], only: list[str]) -> str:
    """Per scenario (flow-list seed 1) and class: how far ns-3 and pisanet
    ns-3-like each move from their own FCTs on the original list when every
    flow starts up to JITTER_NS later (`jittered`, draws DRAWS), and
    pisanet / ns-3 on the original list and on each jittered one."""
    rows = []
    missing = []
    gave_up: list[str] = []
    for sc in scenarios(quick):
        if only and sc.name not in only:
            continue
        flows = flow_list(sc)
        lists = [flows] + [jittered(flows, jitter_ns, d) for d in draws]
        ns3 = [run_ns3(sc, fl, {}) for fl in lists]
        if any(r is None for r in ns3):
            missing.append(sc.name)
            continue
        pis = [run_pisanet(sc, fl, NS3_LIKE) for fl in lists]
        n3 = [class_stats(fl, r["fct_us"]) for fl, r in zip(lists, ns3, strict=True) if r]
        ps = [class_stats(fl, r["fct_us"]) for fl, r in zip(lists, pis, strict=True)]
        # All the lists pooled (as `--seeds` pools seeds): each class's
        # flows once per list.
        every = [f for fl in lists for f in fl]
        pooled = [
            class_stats(every, [x for r in runs if r for x in r["fct_us"]]) for runs in (ns3, pis)
        ]
        rows.append((sc, n3, ps, pooled))
        # Flows ns-3 gave up on (no FCT, so their class has no mean or p99 there).
        for i, r in enumerate(ns3):
            for k in (r or {}).get("incomplete", []):
                f = lists[i][k]
                gave_up.append(
                    f"{sc.name}, {'original list' if i == 0 else f'draw {draws[i - 1]}'}: "
                    f"{f['bytes']} B from h{f['src']} to h{f['dst']} at {f['start_us'] / 1000:.3f} ms"
                )
    tag = f"{jitter_ns} ns"
    lines = [
        "| scenario | class | flows | ns-3 self, mean | ns-3 self, p99 | pisanet self, mean | "
        "pisanet self, p99 | pisanet / ns-3, mean: original; draws | pisanet / ns-3, p99: original; draws | "
        "pisanet / ns-3, all lists: pooled mean / mean p99 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    total = 0
    # Classes ns-3 itself moves out of the goal; classes pisanet / ns-3
    # meets per list (original, then each draw).
    floor: list[str] = []
    met = [0] * (1 + len(draws))
    met_pooled = 0
    inside: list[str] = []
    for sc, n3, ps, pooled in rows:
        for c, (cname, _, _) in enumerate(CLASSES):
            n = n3[0][c][0]
            if n == 0:
                continue
            total += 1

            def rat(a: list[Any], b: list[Any], k: int, c: int = c) -> list[float]:
                # Ratio of quantity k (1 mean, 2 p99) of list a[i] to b[i].
                return [
                    x[c][k] / y[c][k] if y[c][k] == y[c][k] and y[c][k] else math.nan
                    for x, y in zip(a, b, strict=True)
                ]

            self3_m = rat(n3[1:], [n3[0]] * len(draws), 1)
            self3_p = rat(n3[1:], [n3[0]] * len(draws), 2)
            selfp_m = rat(ps[1:], [ps[0]] * len(draws), 1)
            selfp_p = rat(ps[1:], [ps[0]] * len(draws), 2)
            vs_m = rat(ps, n3, 1)
            vs_p = rat(ps, n3, 2)
            # Over all the lists: the mean of the pooled flows; the p99s
            # averaged (a pooled p99 of one list repeated is its slowest
            # flow, not a p99).
            pm = pooled[1][c][1] / pooled[0][c][1]
            pp = sum(x[c][2] for x in ps) / sum(x[c][2] for x in n3)
            for i, (m, p) in enumerate(zip(vs_m, vs_p, strict=True)):
                met[i] += abs(m - 1) <= 0.15 and abs(p - 1) <= 0.25
            out_m = [x for x in self3_m if not abs(x - 1) <= 0.15]
            out_p = [x for x in self3_p if not abs(x - 1) <= 0.25]
            what = ", ".join(w for w, o in (("mean", out_m), ("p99", out_p)) if o)
            if what:
                floor.append(f"{sc.name} {cname} ({what})")

            # A miss on the original list against each simulator's own move:
            # inside a simulator's if each quantity missed (mean, p99) is off
            # by no larger a factor than the largest by which a jitter moved
            # that simulator's same quantity of the class.
            def largest(own: list[float]) -> float:
                moves = [abs(math.log(x)) for x in own if x == x and x > 0]
                return max(moves) if moves else math.nan

            def times(log_move: float) -> str:
                return "-" if math.isnan(log_move) else f"x{math.exp(log_move):.2f}"

            judged = []
            for q, vs, own3, ownp, tol, on_draws in (
                ("mean", vs_m[0], self3_m, selfp_m, 0.15, vs_m[1:]),
                ("p99", vs_p[0], self3_p, selfp_p, 0.25, vs_p[1:]),
            ):
                if abs(vs - 1) <= tol:
                    continue
                k = sum(abs(x - 1) <= tol for x in on_draws)
                off = abs(math.log(vs)) if vs == vs and vs > 0 else math.inf
                b3, bp = largest(own3), largest(ownp)
                judged.append(
                    (
                        off <= b3,
                        off <= b3 or off <= bp,
                        f"{q} {vs:.2f}, ns-3's own {times(b3)}, pisanet's {times(bp)}, "
                        f"within the goal on {k} of {len(on_draws)} draws",
                    )
                )
            if judged:
                if all(a for a, _, _ in judged):
                    verdict = "inside ns-3's own move"
                elif all(b for _, b, _ in judged):
                    verdict = "inside pisanet's own move only"
                else:
                    verdict = "outside both"
                inside.append(
                    f"{sc.name} {cname} ({verdict}: {'; '.join(t for _, _, t in judged)})"
                )
            lines.append(
                f"| {sc.name} | {cname} | {n} | {spread(self3_m)} | {spread(self3_p)} | "
                f"{spread(selfp_m)} | {spread(selfp_p)} | "
                f"{spread(vs_m[:1])}; {spread(vs_m[1:])} | {spread(vs_p[:1])}; {spread(vs_p[1:])} | "
                f"{ratio(pm, 1.0)} / {ratio(pp, 1.0)} |"
            )
            met_pooled += abs(pm - 1) <= 0.15 and abs(pp - 1) <= 0.25
    dr = f"{draws[0]}-{draws[-1]}" if len(draws) > 1 else f"{draws[0]}"
    parts = [
        f"### Flow starts up to {tag} later (draws {dr})",
        "",
        *(
            [f"Left out (an ns-3 run not in the cache): {', '.join(missing)}.", ""]
            if missing
            else []
        ),
        "\n".join(lines),
        "",
        *(
            [
                "ns-3 gave up a connection (6 SYN retries or 6 resends of one segment; "
                'its class has no ns-3 mean or p99 on that list, "-"): ' + "; ".join(gave_up) + ".",
                "",
            ]
            if gave_up
            else []
        ),
        f"pisanet ns-3-like / ns-3 within the goal: {met[0]} of {total} classes on the original "
        f"lists, {', '.join(str(x) for x in met[1:])} of {total} on draws {dr}, {met_pooled} of {total} "
        f"over the {1 + len(draws)} lists (pooled mean, mean p99).",
        "",
        f"ns-3 against itself: {total - len(floor)} of {total} classes stay within the goal "
        "(mean within 15 %, p99 within 25 % of its own) on every draw"
        + (": moved out: " + "; ".join(floor) + "." if floor else "."),
        "",
        "Misses on the original list against each simulator's own move (inside a "
        "simulator's: each quantity missed, mean or p99, is off by no larger a factor than "
        "the largest by which a jitter moved that simulator's own value of it): "
        + ("; ".join(inside) + "." if inside else "none."),
    ]
    return "\n".join(parts)


def write_noise_floor(
    quick: bool, jitters_ns: list[int], draws: list[int], only: list[str]
) -> None:
    cmd = (
        f"experiments/crosscheck/crosscheck.py{' --quick' if quick else ''} "
        f"--jitter-ns {','.join(str(j) for j in jitters_ns)} --jitter-draws {len(draws)}"
        + (f" --only '{','.join(only)}'" if only else "")
    )
    body = [
        f"Generated by `{cmd}` (ns-3 {NS3_VERSION}): flow-list seed 1, every flow's start "
        "moved later by a whole number of ns drawn uniformly from [0, J] (one draw of "
        "offsets per draw number, list re-sorted by start) and the same list fed to both "
        'simulators. "self" is a simulator\'s class mean or p99 on a jittered list over its '
        "own on the original list, one ratio per draw; pisanet is the ns-3-like set; "
        "p99 of 55 or fewer flows is about the class's slowest flow.",
    ]
    for j in jitters_ns:
        body += ["", noise_floor_section(quick, j, draws, only)]
    write_section(NOISE_BEGIN, NOISE_END, "\n".join(body), "the noise-floor tables")


LS_BEGIN, LS_END = "<!-- crosscheck-leafspine:begin -->", "<!-- crosscheck-leafspine:end -->"
LS_LABELS: dict[str, dict[str, Any]] = {
    "pisanet defaults": {},
    "pisanet ns-3-like": NS3_LIKE,
}
FLOWHASH_PISANET = {"scheme.kind": "ecmp", "workload.source_ports": "random"}
Row = tuple[Scenario, list[dict[str, Any]], dict[str, Any], dict[str, dict[str, Any]]]


def leafspine_rows(quick: bool) -> tuple[list[Row], list[Row], list[Row]]:
    """Spray rows, and flow-hash rows per salt and pooled over the salts
    that every scenario has in the cache (pisanet `ecmp` with random source
    ports, run.seed = salt + 1, against ns-3 with that hash salt)."""
    spray: list[Row] = []
    per_salt: dict[str, list[Row]] = {}
    for sc in scenarios(quick, ("leafspine",)):
        flows = flow_list(sc)
        ns3 = run_ns3(sc, flows, {})
        if ns3 is None:
            print(f"crosscheck: {sc.name}: no cached ns-3 run, left out", file=sys.stderr)
            continue
        extra: dict[str, Any] = {"metrics.flow_stats": True}
        if sc.routing == "spray":
            extra["scheme.kind"] = "rps"
        else:
            extra.update(FLOWHASH_PISANET)
            extra["run.seed"] = sc.salt + 1
        pis = {lb: run_pisanet(sc, flows, {**ov, **extra}) for lb, ov in LS_LABELS.items()}
        row = (sc, flows, ns3, pis)
        if sc.routing == "spray":
            spray.append(row)
        else:
            per_salt.setdefault(sc.name.rsplit(" #", 1)[0], []).append(row)
    single: list[Row] = []
    pooled: list[Row] = []
    for name, rs in per_salt.items():
        single += rs
        sc0 = rs[0][0]
        sc = Scenario(
            f"{name}, {len(rs)} run{'s' if len(rs) > 1 else ''}",
            sc0.cc,
            sc0.kind,
            sc0.cdf,
            sc0.load,
            sc0.flows,
        )
        flows = [f for r in rs for f in r[1]]

        def cat(runs: list[dict[str, Any]]) -> dict[str, Any]:
            return {
                "fct_us": [x for r in runs for x in r["fct_us"]],
                "drops": sum(r["drops"] for r in runs),
                "ecn_marks": sum(r["ecn_marks"] for r in runs),
            }

        pooled.append(
            (
                sc,
                flows,
                cat([r[2] for r in rs]),
                {lb: cat([r[3][lb] for r in rs]) for lb in LS_LABELS},
            )
        )
    return spray, single, pooled


def counters_table(rows: list[Row]) -> str:
    """Drops, marks and loss recovery: ns-3 / pisanet ns-3-like / pisanet defaults."""
    lines = [
        "| scenario | drops | ECN marks | segments resent | dup ACKs | fast recoveries | RTOs | pisanet reordered packets |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for sc, _, ns3, pis in rows:
        t3 = ns3.get("tcp", {})
        a, b = pis["pisanet ns-3-like"], pis["pisanet defaults"]

        def three(x3: Any, key: str) -> str:
            return f"{x3} / {a['tcp'][key]} / {b['tcp'][key]}"

        lines.append(
            f"| {sc.name} | {ns3['drops']} / {a['drops']} / {b['drops']} | "
            f"{ns3['ecn_marks']} / {a['ecn_marks']} / {b['ecn_marks']} | "
            + " | ".join(
                [
                    three(t3.get("retransmissions", "-"), "retransmissions"),
                    three(t3.get("dup_acks", "-"), "dup_acks"),
                    three(t3.get("fast_recoveries", "-"), "fast_retransmits"),
                    three(t3.get("rtos", "-"), "timeouts"),
                    f"{a['tcp']['reordered']} / {b['tcp']['reordered']}",
                ]
            )
            + " |"
        )
    return "\n".join(lines)


SPREAD_SEEDS = (1, 2, 3, 4, 5)


def seed_spread_table(rows: list[Row]) -> str:
    """pisanet ns-3-like with `rps` under run seeds 1-5 (other random
    spraying choices, same flows): per class, the lowest and highest ratio
    of its mean and p99 to ns-3's, the spread that spraying alone makes."""
    lines = [
        "| scenario | class | mean ratio, seeds 1-5 | p99 ratio, seeds 1-5 |",
        "|---|---|---|---|",
    ]
    for sc, flows, ns3, _ in rows:
        ref = class_stats(flows, ns3["fct_us"])
        runs = [
            class_stats(
                flows,
                run_pisanet(
                    sc,
                    flows,
                    {**NS3_LIKE, "scheme.kind": "rps", "run.seed": seed},
                )["fct_us"],
            )
            for seed in SPREAD_SEEDS
        ]
        for c, (cname, _, _) in enumerate(CLASSES):
            n, m3, p3 = ref[c]
            if n == 0:
                continue
            means = [r[c][1] / m3 for r in runs]
            p99s = [r[c][2] / p3 for r in runs]
            lines.append(
                f"| {sc.name} | {cname} | {min(means):.2f}-{max(means):.2f} | {min(p99s):.2f}-{max(p99s):.2f} |"
            )
    return "\n".join(lines)


def leafspine_section(quick: bool) -> str:
    spray, single, pooled = leafspine_rows(quick)
    parts = [
        f"Generated by `experiments/crosscheck/crosscheck.py{' --quick' if quick else ''} --leafspine` (ns-3 {NS3_VERSION}).",
        "",
        "### Packet spraying: ns-3 `RandomEcmpRouting` against pisanet `rps`, pisanet ns-3-like",
        "",
        comparison_table(spray, "pisanet ns-3-like"),
        "",
        within_goal(spray, "pisanet ns-3-like"),
        "",
        "### Packet spraying, pisanet defaults",
        "",
        comparison_table(spray, "pisanet defaults"),
        "",
        within_goal(spray, "pisanet defaults"),
        "",
        "### Packet spraying: drops, marks and loss recovery (ns-3 / pisanet ns-3-like / pisanet defaults)",
        "",
        counters_table(spray),
        "",
        "### Packet spraying: pisanet ns-3-like under five run seeds (ratio to ns-3's one run)",
        "",
        "The seed changes only pisanet's spraying choices here (the flow list is fixed): "
        "the range is what the random paths alone move a class.",
        "",
        seed_spread_table(spray),
    ]
    if pooled:
        parts += [
            "",
            "### Flow-hash ECMP: ns-3 with ns3_sim.py's 5-tuple hash against pisanet `ecmp`, pisanet ns-3-like, runs pooled",
            "",
            "Each run of a scenario has the same flow list; ns-3 run k hashes with salt k, "
            'pisanet run k has `run.seed = k + 1` and `workload.source_ports = "random"`. '
            "The two hashes differ, so the flows' paths differ: only the pooled statistics compare.",
            "",
            comparison_table(pooled, "pisanet ns-3-like"),
            "",
            within_goal(pooled, "pisanet ns-3-like"),
            "",
            "### Flow-hash ECMP, pisanet defaults, runs pooled",
            "",
            comparison_table(pooled, "pisanet defaults"),
            "",
            within_goal(pooled, "pisanet defaults"),
            "",
            "### Flow-hash ECMP, each run (ns-3 salt k against pisanet seed k + 1), pisanet ns-3-like",
            "",
            comparison_table(single, "pisanet ns-3-like"),
            "",
            "### Flow-hash ECMP: drops, marks and loss recovery per run (ns-3 / pisanet ns-3-like / pisanet defaults)",
            "",
            counters_table(single),
        ]
    return "\n".join(parts)


def write_leafspine(quick: bool) -> None:
    write_section(LS_BEGIN, LS_END, leafspine_section(quick), "the leaf-spine tables")


FULL_BEGIN, FULL_END = "<!-- crosscheck-full:begin -->", "<!-- crosscheck-full:end -->"


def write_full(
    rows: list[tuple[Scenario, list[dict[str, Any]], dict[str, Any], dict[str, dict[str, Any]]]],
) -> None:
    """The full-size tables (1000 web-search flows, 300 data-mining, 40 incast
    rounds; ns-3-like, defaults, drops) into a section of their own; the
    variants (no timestamps, SACK, one change at a time) are quick mode's."""
    parts = [
        f"Generated by `experiments/crosscheck/crosscheck.py --jobs 2` (ns-3 {NS3_VERSION}): "
        f"full size, {len(rows)} scenarios.",
        "",
        "#### ns-3-like, full size",
        "",
        comparison_table(rows, "pisanet ns-3-like"),
        "",
        within_goal(rows, "pisanet ns-3-like"),
        "",
        "#### pisanet defaults, full size",
        "",
        comparison_table(rows, "pisanet defaults"),
        "",
        within_goal(rows, "pisanet defaults"),
        "",
        "#### Drops and ECN marks, full size",
        "",
        drops_table(rows, ["pisanet defaults", "pisanet ns-3-like"]),
    ]
    # Where ns-3 gave a connection up, ns-3 again with `NO_GIVE_UP`.
    kept = []
    for sc, _, ns3, pis in rows:
        if any(x != x for x in ns3["fct_us"]):
            pooled = run_ns3_pooled(sc, NO_GIVE_UP)
            if pooled is not None:
                kept.append((sc, pooled[0], pooled[1], pis))
    if kept:
        parts += [
            "",
            "#### ns-3 that gives no connection up (`ConnCount` and `DataRetries` 15), full size",
            "",
            "The scenarios where ns-3 gave a connection up above, against pisanet ns-3-like.",
            "",
            comparison_table(kept, "pisanet ns-3-like"),
            "",
            within_goal(kept, "pisanet ns-3-like"),
            "",
            drops_table(kept, ["pisanet ns-3-like"]),
        ]
    heading = "## Full size (1000 web-search flows, 300 data-mining flows, 40 incast rounds)"
    write_section(
        FULL_BEGIN,
        FULL_END,
        "\n".join(parts),
        "the full-size tables",
        after=(END,),
        heading=heading,
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="fewer flows per scenario (a few minutes)")
    ap.add_argument(
        "--no-ablation", action="store_true", help="skip the one-change-at-a-time table"
    )
    ap.add_argument(
        "--cached-only",
        action="store_true",
        help="run no ns-3 simulation: leave out what the cache does not hold",
    )
    ap.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="pool the dumbbell scenarios over flow-list seeds 1..N and write their tables to a section of their own",
    )
    ap.add_argument(
        "--leafspine",
        action="store_true",
        help="only the leaf-spine scenarios (spraying, flow-hash ECMP) and their section",
    )
    ap.add_argument(
        "--jitter-ns",
        default="",
        help="only the noise floor: each scenario (seed 1) also on lists whose flows start up to J ns later (J, or J1,J2,...), into its own section",
    )
    ap.add_argument(
        "--jitter-draws",
        type=int,
        default=3,
        help="with --jitter-ns: jittered lists 1..N per scenario",
    )
    ap.add_argument(
        "--only",
        default="",
        help="only these scenarios (names as in the tables, comma-separated; not with --leafspine)",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="ns-3 runs at a time (each takes one core; pisanet's runs stay one at a time)",
    )
    args = ap.parse_args()
    global CACHED_ONLY, SEEDS
    CACHED_ONLY = args.cached_only
    SEEDS = list(range(1, max(1, args.seeds) + 1))
    if args.jobs > 1 and not CACHED_ONLY:
        run_planned(args.jobs, lambda: generate(args))
    else:
        generate(args)


def generate(args: argparse.Namespace) -> None:
    """What main does with its arguments: the tables it asks for, into the doc."""
    only = [x.strip() for x in args.only.split(",") if x.strip()]
    names = {sc.name for sc in scenarios(args.quick)}
    if unknown := [x for x in only if x not in names]:
        sys.exit(
            f"crosscheck: --only: no scenario {unknown[0]!r}; names: {', '.join(sorted(names))}"
        )
    if args.jitter_ns:
        try:
            jitters = [int(x) for x in args.jitter_ns.split(",")]
        except ValueError:
            jitters = []
        if not jitters or min(jitters) <= 0:
            sys.exit(
                f"crosscheck: --jitter-ns: expected whole numbers > 0 of ns, comma-separated, got {args.jitter_ns!r}"
            )
        draws = list(range(1, max(1, args.jitter_draws) + 1))
        write_noise_floor(args.quick, jitters, draws, only)
        return
    if args.leafspine:
        write_leafspine(args.quick)
        return
    labels = {"pisanet defaults": {}, "pisanet ns-3-like": NS3_LIKE}
    rows = []
    for sc in scenarios(args.quick):
        if only and sc.name not in only:
            continue
        pooled = run_ns3_pooled(sc, {})
        if pooled is None:
            print(f"crosscheck: {sc.name}: no cached ns-3 run, left out", file=sys.stderr)
            continue
        flows, ns3 = pooled
        pis = {lb: run_pisanet_pooled(sc, ov) for lb, ov in labels.items()}
        rows.append((sc, flows, ns3, pis))
    if len(SEEDS) > 1:
        write_seeds(rows, args.quick)
        return
    if not args.quick:
        write_full(rows)
        return
    # ns-3 moved towards pisanet where pisanet has no option yet: no TCP
    # timestamps (no per-ACK RTT samples, 12 B less per packet).
    rows_nots = []
    for sc, flows, _, pis in rows:
        nots = run_ns3_pooled(sc, NO_TIMESTAMPS)
        if nots is not None:
            rows_nots.append((sc, flows, nots[1], pis))
    rows_sack, _ = sack_rows(rows)
    parts = [
        f"Generated by `experiments/crosscheck/crosscheck.py{' --quick' if args.quick else ''}"
        f"{f' --seeds {len(SEEDS)}' if len(SEEDS) > 1 else ''}` (ns-3 {NS3_VERSION}).",
        "",
        '### pisanet with ns-3\'s behaviour selected (`transport.profile = "ns3"`: `tsq_kb = 0`, `handshake`, `limited_transmit`, `rto_granularity_us = 1000`, `cwr_ignores_dupacks`, `ece_ends_recovery`, `dctcp_dupack_bytes`, `rtt_every_ack`, `ts_clock_us = 1000`, `cwr_freeze`, `reno_scoreboard`, `cwr_ends_at_timeout`, `dctcp_no_floor`, `full_segment_window`, `ce_new_seq_only`, `rto_reset_on_ack`, `unvalidated_cwnd`, `newreno_ack_adder` (NewReno), `dctcp_loss_uses_alpha`, `dctcp_window_end_next_tx`, `slow_start_all_acked`, `ca_segment_count` (DCTCP); `buffer_pkts = 100`, `ecn_threshold_pkts = 65`)',
        "",
        comparison_table(rows, "pisanet ns-3-like"),
        "",
        within_goal(rows, "pisanet ns-3-like"),
        "",
        "### pisanet defaults (TSQ, 151.8 KB byte-counted buffers, no handshake)",
        "",
        comparison_table(rows, "pisanet defaults"),
        "",
        within_goal(rows, "pisanet defaults"),
        "",
        "### pisanet ns-3-like against ns-3 without TCP timestamps",
        "",
        "pisanet has no timestamp option; here ns-3 is moved instead "
        "(`TcpSocketBase::Timestamp = false`, and 1460 B segments: the same "
        "1500 B packets as pisanet's), everything else as above.",
        "",
        comparison_table(rows_nots, "pisanet ns-3-like"),
        "",
        within_goal(rows_nots, "pisanet ns-3-like"),
        "",
        "### SACK in both: ns-3 with SACK (its default) against pisanet `transport.sack`",
        "",
        "ns-3 as above but `TcpSocketBase::Sack = true`; pisanet ns-3-like with "
        "`sack = true` and without `cwr_ignores_dupacks` / `ece_ends_recovery` "
        "(which model ns-3's CA_CWR without SACK).",
        "",
        comparison_table(rows_sack, "pisanet ns-3-like + SACK"),
        "",
        within_goal(rows_sack, "pisanet ns-3-like + SACK"),
        "",
        "### Drops and ECN marks (switch ports)",
        "",
        drops_table(rows, list(labels)),
        "",
        "With SACK in both:",
        "",
        drops_table(rows_sack, ["pisanet ns-3-like + SACK"]),
    ]
    if not args.no_ablation:
        lines = [
            "| scenario | change | < 100 KB mean | p99 | 100 KB-10 MB mean | p99 | > 10 MB mean | p99 | drops (ns-3) |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for what, sc, ov, ns3_extra in ablation_rows(args.quick):
            flows = flow_list(sc)
            ns3_a = run_ns3(sc, flows, ns3_extra)
            if ns3_a is None:
                continue
            pis_a = run_pisanet(sc, flows, ov)
            cells = []
            for (n, m3, p3), (_, mp, pp) in zip(
                class_stats(flows, ns3_a["fct_us"]),
                class_stats(flows, pis_a["fct_us"]),
                strict=False,
            ):
                cells += ["-", "-"] if n == 0 else [ratio(mp, m3), ratio(pp, p3)]
            lines.append(
                f"| {sc.name} | {what} | "
                + " | ".join(cells)
                + f" | {pis_a['drops']} ({ns3_a['drops']}) |"
            )
        parts += [
            "",
            "### One change at a time (ratio pisanet / ns-3 per class)",
            "",
            "\n".join(lines),
        ]
    write_section(BEGIN, END, "\n".join(parts), "the seed-1 tables")
    write_leafspine(args.quick)


if __name__ == "__main__":
    main()
