//! Packets a user can open: pcap capture of selected ports
//! (`[metrics.pcap]`) and a per-packet event trace (`[metrics.trace]`).
//!
//! Owns: the two config sections, the tap the event loop calls at its
//! trace points (a packet enters a port's queue, starts on a port's wire, a
//! switch absorbs or drops it), the pcap file format and the trace columns.
//! Guarantees: with both off, the loop's only cost is one `Option` test per
//! trace point (`World::tap` is `None`); both are bounded (`max_packets`,
//! `max_rows`) and say so in the summary's `warnings` when the bound is hit;
//! the same run gives the same bytes. Leaves to others: the bytes of a
//! packet (`pisanet_net::wire`), the headers' layouts (the schemes' tables,
//! `pisanet_schemes::wire::HEADERS`) and writing files (the caller: the
//! Python package writes `pcap/<port>.pcap` and `trace.parquet`
//! atomically into the result directory).

use std::collections::HashMap;

use pisanet_engine::SimTime;
use pisanet_net::arena::{PktId, Slot};
use pisanet_net::packet::{FlowId, Packet, L4};
use pisanet_net::wire::{node_mac, write_frame, HeaderDef, LinkEnds};
use pisanet_pisa::{Emit, InstanceType};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::api::Error;
use crate::config::Config;
use crate::sim::{Port, PortIdx, World};

/// `[metrics.pcap]`: write what selected ports transmit as pcap files.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PcapCfg {
    /// Ports to capture, by link name as in ports.json (e.g. "leaf0->spine0", "h0->leaf0"); one file `pcap/<port>.pcap` each. Empty = off.
    pub ports: Vec<String>,
    /// Only packets of these flow ids (empty = every packet, probes and switch-made copies included).
    pub flows: Vec<u32>,
    /// Packets kept per file (1..); later ones are counted, not written, and the summary warns.
    #[schemars(range(min = 1))]
    pub max_packets: u64,
    /// Bytes kept of each frame (64..=262144); the record keeps the full length.
    #[schemars(range(min = 64, max = 262144))]
    pub snaplen: u32,
}

impl Default for PcapCfg {
    fn default() -> Self {
        PcapCfg {
            ports: Vec::new(),
            flows: Vec::new(),
            max_packets: 1_000_000,
            snaplen: 128,
        }
    }
}

/// `[metrics.trace]`: one row per event of selected packets (trace.parquet).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TraceCfg {
    /// Only events at these ports (link names, as `metrics.pcap.ports`); empty = every port.
    pub ports: Vec<String>,
    /// Only packets of these flow ids; empty = every packet. Tracing is off while both lists are empty.
    pub flows: Vec<u32>,
    /// Rows kept (1..); later events are counted, not kept, and the summary warns.
    #[schemars(range(min = 1))]
    pub max_rows: u64,
}

impl Default for TraceCfg {
    fn default() -> Self {
        TraceCfg {
            ports: Vec::new(),
            flows: Vec::new(),
            max_rows: 1_000_000,
        }
    }
}

/// What happened to a packet (the trace's `event` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TraceEvent {
    /// Queued at an egress port.
    Enqueue = 0,
    /// Left the queue: starts on the wire.
    Dequeue = 1,
    /// Tail-dropped at the queue (buffer full).
    Drop = 2,
    /// Queued and marked CE (the ECN threshold was exceeded).
    EcnMark = 3,
    /// A clone (I2E or E2E) queued at an egress port.
    Clone = 4,
    /// Queued after a recirculation pass.
    Recirculate = 5,
    /// A multicast copy queued at an egress port.
    Replicate = 6,
    /// Absorbed by the switch: sent to its CPU, or a probe's journey ended.
    ToCpu = 7,
    /// Dropped by the switch program (mark_to_drop, no route, ...).
    ProgramDrop = 8,
    /// A PFC PAUSE frame (XOFF, or XON with zero quanta) starts on the wire
    /// at this port (`queue`: its priority; sim/pfc.rs).
    Pause = 9,
}

/// Names of [`TraceEvent`] by code.
pub const TRACE_EVENTS: [&str; 10] = [
    "enqueue",
    "dequeue",
    "drop",
    "ecn_mark",
    "clone",
    "recirculate",
    "replicate",
    "to_cpu",
    "program_drop",
    "pause",
];

/// The trace, as columns (one entry per event, in event order).
#[derive(Clone, Debug, Default)]
pub struct TraceTable {
    pub time_us: Vec<f64>,
    /// Node the event happened at (its name).
    pub node: Vec<String>,
    /// Link name of the port ("" for an event of the switch, not of a port).
    pub port: Vec<String>,
    /// Strict-priority queue (0 = highest).
    pub queue: Vec<u8>,
    /// A [`TraceEvent`] code; names in [`TRACE_EVENTS`].
    pub event: Vec<u8>,
    /// Bytes in the port's queue then: on arrival for enqueue events (without
    /// the packet), after it left for dequeue events.
    pub depth_bytes: Vec<u64>,
    pub packet: Vec<u64>,
    /// Flow id, u32::MAX for packets of no flow (probes).
    pub flow: Vec<u32>,
    /// TCP sequence number (byte offset in the flow), 0 otherwise.
    pub seq: Vec<u64>,
    /// Bytes on the wire.
    pub size: Vec<u32>,
}

/// What the capture and the trace produced.
#[derive(Clone, Debug, Default)]
pub struct CaptureOutput {
    /// `(port name, pcap file bytes)`, one per captured port.
    pub pcaps: Vec<(String, Vec<u8>)>,
    pub trace: TraceTable,
}

/// One captured port's file.
struct PcapFile {
    name: String,
    ends: LinkEnds,
    bytes: Vec<u8>,
    packets: u64,
    seen: u64,
}

/// Trace rows in the making (names by index, converted at the end).
#[derive(Default)]
struct Rows {
    time: Vec<SimTime>,
    node: Vec<u32>,
    port: Vec<PortIdx>,
    queue: Vec<u8>,
    event: Vec<u8>,
    depth: Vec<u64>,
    packet: Vec<u64>,
    flow: Vec<u32>,
    seq: Vec<u64>,
    size: Vec<u32>,
    seen: u64,
}

const NO_PORT: PortIdx = PortIdx::MAX;

/// The capture and trace state the event loop calls into (`World::tap`).
pub struct Tap {
    headers: &'static [&'static HeaderDef],
    /// Per global port: index into `files`, or u32::MAX.
    pcap_slot: Vec<u32>,
    files: Vec<PcapFile>,
    pcap_flows: Vec<FlowId>,
    max_packets: u64,
    snaplen: usize,
    frame: Vec<u8>,
    trace_on: bool,
    /// Per global port: events there are traced.
    trace_port: Vec<bool>,
    trace_all_ports: bool,
    trace_flows: Vec<FlowId>,
    max_rows: u64,
    rows: Rows,
    /// Parallel mode (sim/parallel.rs): the event being handled, as
    /// (time, key, sub) (`sub` orders what one event copied into several
    /// partitions does: the flow a `NextFlow` starts, the end of a link a
    /// `LinkEvent` sets), and that of each row kept, so that
    /// [`Tap::merge`] puts the partitions' rows in the single-thread
    /// run's order.
    pub(crate) at: (SimTime, u64, u64),
    tags: Option<Vec<(SimTime, u64, u64)>>,
}

/// pcap global header (nanosecond timestamps, link type 1 = Ethernet).
/// https://www.tcpdump.org/manpages/pcap-savefile.5.html
fn pcap_header(snaplen: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(24);
    h.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&4u16.to_le_bytes());
    h.extend_from_slice(&0i32.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h.extend_from_slice(&snaplen.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes());
    h
}

fn seq_of(pkt: &Packet) -> u64 {
    match pkt.l4 {
        L4::Tcp(t) => t.seq,
        _ => 0,
    }
}

/// Global ports named in `names` (key `key`), exactly; an unknown name is an input error.
fn ports_named(world: &World, key: &str, names: &[String]) -> Result<Vec<PortIdx>, Error> {
    let all: HashMap<String, PortIdx> = (0..world.ports.len() as PortIdx)
        .map(|p| (world.port_name(p), p))
        .collect();
    // Switch ports first in the examples: those are what one usually captures.
    let mut examples: Vec<PortIdx> = (0..world.ports.len() as PortIdx).collect();
    examples.sort_by_key(|&p| (world.ports[p as usize].is_host_port, p));
    names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            all.get(n).copied().ok_or_else(|| {
                let some: Vec<String> = examples
                    .iter()
                    .take(3)
                    .map(|&p| world.port_name(p))
                    .collect();
                Error::input(format!(
                    "{key}[{i}]: no port {n:?}; ports are named by link, e.g. {}",
                    some.join(", ")
                ))
            })
        })
        .collect()
}

impl Tap {
    /// The tap the config asks for, or `None` when capture and trace are off.
    pub fn from_config(cfg: &Config, world: &World) -> Result<Option<Box<Tap>>, Error> {
        let (pc, tc) = (&cfg.metrics.pcap, &cfg.metrics.trace);
        if pc.ports.is_empty() && !pc.flows.is_empty() {
            return Err(Error::input(
                "metrics.pcap.flows: needs metrics.pcap.ports (the ports to capture)",
            ));
        }
        if pc.max_packets == 0 {
            return Err(Error::input("metrics.pcap.max_packets: must be at least 1"));
        }
        if !(64..=262_144).contains(&pc.snaplen) {
            return Err(Error::input(format!(
                "metrics.pcap.snaplen: must be in 64..=262144, got {}",
                pc.snaplen
            )));
        }
        if tc.max_rows == 0 {
            return Err(Error::input("metrics.trace.max_rows: must be at least 1"));
        }
        let trace_on = !tc.ports.is_empty() || !tc.flows.is_empty();
        if pc.ports.is_empty() && !trace_on {
            return Ok(None);
        }
        let n = world.ports.len();
        let mut pcap_slot = vec![u32::MAX; n];
        let mut files = Vec::new();
        for p in ports_named(world, "metrics.pcap.ports", &pc.ports)? {
            if pcap_slot[p as usize] != u32::MAX {
                continue;
            }
            pcap_slot[p as usize] = files.len() as u32;
            let port = &world.ports[p as usize];
            let peer = &world.ports[port.peer as usize];
            files.push(PcapFile {
                name: world.port_name(p),
                ends: LinkEnds {
                    src_mac: node_mac(port.node),
                    dst_mac: node_mac(peer.node),
                },
                bytes: pcap_header(pc.snaplen),
                packets: 0,
                seen: 0,
            });
        }
        let mut trace_port = vec![false; n];
        for p in ports_named(world, "metrics.trace.ports", &tc.ports)? {
            trace_port[p as usize] = true;
        }
        Ok(Some(Box::new(Tap {
            headers: &pisanet_schemes::wire::HEADERS,
            pcap_slot,
            files,
            pcap_flows: pc.flows.clone(),
            max_packets: pc.max_packets,
            snaplen: pc.snaplen as usize,
            frame: Vec::with_capacity(2048),
            trace_on,
            trace_port,
            trace_all_ports: tc.ports.is_empty(),
            trace_flows: tc.flows.clone(),
            max_rows: tc.max_rows,
            rows: Rows::default(),
            at: (SimTime::ZERO, 0, 0),
            tags: None,
        })))
    }

    fn traced(&self, p: PortIdx, flow: FlowId) -> bool {
        self.trace_on
            && (if p == NO_PORT {
                self.trace_all_ports
            } else {
                self.trace_all_ports || self.trace_port[p as usize]
            })
            && (self.trace_flows.is_empty() || self.trace_flows.contains(&flow))
    }

    /// Appends a row; returns its index, or `None` past `max_rows`.
    #[allow(clippy::too_many_arguments)]
    fn row(
        &mut self,
        now: SimTime,
        node: u32,
        p: PortIdx,
        event: TraceEvent,
        depth: u64,
        pkt: &Packet,
    ) -> Option<usize> {
        let r = &mut self.rows;
        r.seen += 1;
        if r.time.len() as u64 >= self.max_rows {
            return None;
        }
        r.time.push(now);
        r.node.push(node);
        r.port.push(p);
        r.queue.push(pkt.prio);
        r.event.push(event as u8);
        r.depth.push(depth);
        r.packet.push(pkt.uid);
        r.flow.push(pkt.flow);
        r.seq.push(seq_of(pkt));
        r.size.push(pkt.size);
        if let Some(tags) = self.tags.as_mut() {
            tags.push(self.at);
        }
        Some(r.time.len() - 1)
    }

    /// This tap is a partition's (sim/parallel.rs): it tags its rows with
    /// their events for [`Tap::merge`].
    pub(crate) fn make_partition(&mut self) {
        self.tags = Some(Vec::new());
    }

    /// The single-thread run's tap from the partitions' `taps` (in
    /// partition order; `owner` gives the partition of a port): a port's
    /// pcap file is its own partition's (only it transmits there), and the
    /// trace rows of every partition are put in the order of the events
    /// that wrote them (within an event, in the order it wrote them), the
    /// first `max_rows` kept: each partition kept its first `max_rows`, a
    /// superset of what it contributes to them.
    pub(crate) fn merge(taps: Vec<Tap>, owner: impl Fn(PortIdx) -> usize) -> Tap {
        let mut taps = taps;
        let mut files: Vec<Option<PcapFile>> = Vec::new();
        let mut tagged: Vec<((SimTime, u64, u64), usize, usize)> = Vec::new();
        let mut seen = 0;
        for (i, t) in taps.iter_mut().enumerate() {
            seen += t.rows.seen;
            let tags = t.tags.take().unwrap_or_default();
            tagged.extend(tags.into_iter().enumerate().map(|(k, tag)| (tag, i, k)));
            if files.is_empty() {
                files = (0..t.files.len()).map(|_| None).collect();
            }
            for (p, &slot) in t.pcap_slot.iter().enumerate() {
                if slot != u32::MAX && owner(p as PortIdx) == i {
                    let f = &mut t.files[slot as usize];
                    files[slot as usize] = Some(PcapFile {
                        name: std::mem::take(&mut f.name),
                        ends: f.ends,
                        bytes: std::mem::take(&mut f.bytes),
                        packets: f.packets,
                        seen: f.seen,
                    });
                }
            }
        }
        // NOTE: stable: the rows of one event keep the order it wrote them.
        tagged.sort_by_key(|r| r.0);
        let mut rows = Rows {
            seen,
            ..Rows::default()
        };
        for &(_, i, k) in tagged.iter().take(taps[0].max_rows as usize) {
            let r = &taps[i].rows;
            rows.time.push(r.time[k]);
            rows.node.push(r.node[k]);
            rows.port.push(r.port[k]);
            rows.queue.push(r.queue[k]);
            rows.event.push(r.event[k]);
            rows.depth.push(r.depth[k]);
            rows.packet.push(r.packet[k]);
            rows.flow.push(r.flow[k]);
            rows.seq.push(r.seq[k]);
            rows.size.push(r.size[k]);
        }
        let mut tap = taps.swap_remove(0);
        tap.files = files.into_iter().flatten().collect();
        tap.rows = rows;
        tap
    }

    /// A packet is about to be queued at port `p`: records the enqueue row
    /// (depth on arrival). Returns what [`Tap::after_enqueue`] needs.
    // NOTE: cold and out of line: with the tap off the loop keeps only the test.
    #[cold]
    #[inline(never)]
    pub fn before_enqueue(
        &mut self,
        now: SimTime,
        port: &Port,
        p: PortIdx,
        q: &Slot,
    ) -> Option<(usize, u64, u64)> {
        if !self.traced(p, q.pkt.flow) {
            return None;
        }
        let event = match InstanceType::from_u8(q.tm.instance_type) {
            InstanceType::IngressClone | InstanceType::EgressClone => TraceEvent::Clone,
            InstanceType::Recirculated => TraceEvent::Recirculate,
            InstanceType::Replication => TraceEvent::Replicate,
            _ => TraceEvent::Enqueue,
        };
        let row = self.row(now, port.node, p, event, port.queue.bytes(), &q.pkt)?;
        let c = &port.queue.counters;
        Some((row, c.drops, c.ecn_marks))
    }

    /// The queue took the packet or not: the row becomes a drop or an ECN mark.
    // NOTE: cold and out of line: with the tap off the loop keeps only the test.
    #[cold]
    #[inline(never)]
    pub fn after_enqueue(&mut self, port: &Port, (row, drops, marks): (usize, u64, u64)) {
        let c = &port.queue.counters;
        if c.drops > drops {
            self.rows.event[row] = TraceEvent::Drop as u8;
        } else if c.ecn_marks > marks {
            self.rows.event[row] = TraceEvent::EcnMark as u8;
        }
    }

    /// Port `p` starts transmitting `pkt`.
    // NOTE: cold and out of line: with the tap off the loop keeps only the test.
    #[cold]
    #[inline(never)]
    pub fn on_transmit(&mut self, now: SimTime, port: &Port, p: PortIdx, pkt: &Packet) {
        let pause = crate::sim::is_pause(pkt);
        if pause && self.traced(p, pkt.flow) {
            // One row per priority the frame names, `queue` = the priority.
            let (vector, _) = crate::sim::pause_fields(pkt);
            for c in (0..8u8).filter(|c| vector & (1 << c) != 0) {
                let mut named = pkt.clone();
                named.prio = c;
                self.row(
                    now,
                    port.node,
                    p,
                    TraceEvent::Pause,
                    port.queue.bytes(),
                    &named,
                );
            }
        } else if self.traced(p, pkt.flow) {
            self.row(
                now,
                port.node,
                p,
                TraceEvent::Dequeue,
                port.queue.bytes(),
                pkt,
            );
        }
        let slot = self.pcap_slot[p as usize];
        if slot == u32::MAX || !(self.pcap_flows.is_empty() || self.pcap_flows.contains(&pkt.flow))
        {
            return;
        }
        let f = &mut self.files[slot as usize];
        f.seen += 1;
        if f.packets >= self.max_packets {
            return;
        }
        f.packets += 1;
        let orig = if pause {
            write_pause_frame(pkt, f.ends, self.snaplen, &mut self.frame)
        } else {
            write_frame(pkt, f.ends, self.headers, self.snaplen, &mut self.frame)
        };
        let ns = now.ps() / 1000;
        f.bytes
            .extend_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
        f.bytes
            .extend_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
        f.bytes
            .extend_from_slice(&(self.frame.len() as u32).to_le_bytes());
        f.bytes.extend_from_slice(&(orig as u32).to_le_bytes());
        f.bytes.extend_from_slice(&self.frame);
    }

    /// Switch node `node` emitted `e` (a program drop or a packet to its CPU).
    // NOTE: cold and out of line: with the tap off the loop keeps only the test.
    #[cold]
    #[inline(never)]
    pub fn on_emit(&mut self, now: SimTime, node: u32, e: &Emit) {
        let (event, pkt) = match e {
            Emit::Drop { pkt, .. } => (TraceEvent::ProgramDrop, pkt),
            Emit::Consumed(pkt) => (TraceEvent::ToCpu, pkt),
            _ => return,
        };
        if self.traced(NO_PORT, pkt.flow) {
            self.row(now, node, NO_PORT, event, 0, pkt);
        }
    }

    /// The files, the trace columns, and the summary's `capture` entry and warnings.
    pub fn finish(self, world: &World) -> (CaptureOutput, Value, Vec<String>) {
        let mut warnings = Vec::new();
        let mut files = Vec::new();
        let (mut written, mut seen) = (0, 0);
        let mut pcaps = Vec::new();
        for f in self.files {
            if f.seen > f.packets {
                warnings.push(format!(
                    "metrics.pcap: pcap/{}.pcap holds its first {} packets of {} (max_packets)",
                    f.name, f.packets, f.seen
                ));
            }
            files.push(json!({"port": f.name, "packets": f.packets, "seen": f.seen}));
            written += f.packets;
            seen += f.seen;
            pcaps.push((f.name, f.bytes));
        }
        let r = self.rows;
        let kept = r.time.len() as u64;
        if r.seen > kept {
            warnings.push(format!(
                "metrics.trace: trace.parquet holds the first {kept} events of {} (max_rows)",
                r.seen
            ));
        }
        let mut names: HashMap<PortIdx, String> = HashMap::new();
        let port = r
            .port
            .iter()
            .map(|&p| {
                if p == NO_PORT {
                    String::new()
                } else {
                    names.entry(p).or_insert_with(|| world.port_name(p)).clone()
                }
            })
            .collect();
        let trace = TraceTable {
            time_us: r.time.iter().map(|t| t.as_us_f64()).collect(),
            node: r
                .node
                .iter()
                .map(|&n| world.topo.nodes[n as usize].name.clone())
                .collect(),
            port,
            queue: r.queue,
            event: r.event,
            depth_bytes: r.depth,
            packet: r.packet,
            flow: r.flow,
            seq: r.seq,
            size: r.size,
        };
        let summary = json!({
            "pcap": {"packets": written, "seen": seen, "files": files},
            "trace": {"rows": kept, "events": r.seen},
        });
        (CaptureOutput { pcaps, trace }, summary, warnings)
    }
}

/// `World::enqueue_queued` with the tap on: the enqueue row, the enqueue,
/// then the row's outcome (drop, ECN mark). Out of line, so that with the
/// tap off an enqueue pays one test.
#[cold]
#[inline(never)]
pub(crate) fn enqueue_tapped(w: &mut World, now: SimTime, p: PortIdx, id: PktId) {
    let tapped = w
        .tap
        .as_deref_mut()
        .and_then(|t| t.before_enqueue(now, &w.ports[p as usize], p, w.arena.slot(id)));
    w.enqueue_untapped(now, p, id);
    if let (Some(t), Some(k)) = (w.tap.as_deref_mut(), tapped) {
        t.after_enqueue(&w.ports[p as usize], k)
    }
}

/// `World::transmit` with the tap on: capture and trace, then the transmit.
#[cold]
#[inline(never)]
pub(crate) fn transmit_tapped(w: &mut World, now: SimTime, p: PortIdx, id: PktId) {
    if let Some(t) = w.tap.as_deref_mut() {
        t.on_transmit(now, &w.ports[p as usize], p, w.arena.get(id))
    }
    w.transmit_untapped(now, p, id)
}

/// Writes a PFC PAUSE as the IEEE 802.1Qbb MAC control frame it is
/// (without FCS, as pcap link type 1): destination 01:80:C2:00:00:01,
/// ethertype 0x8808, opcode 0x0101, the class-enable vector, eight 16-bit
/// pause quanta, zero padding to the 64-byte minimum. Returns the frame's
/// full length (60).
pub fn write_pause_frame(
    pkt: &Packet,
    ends: pisanet_net::wire::LinkEnds,
    snaplen: usize,
    out: &mut Vec<u8>,
) -> usize {
    out.clear();
    out.extend_from_slice(&[0x01, 0x80, 0xc2, 0x00, 0x00, 0x01]);
    out.extend_from_slice(&ends.src_mac);
    out.extend_from_slice(&0x8808u16.to_be_bytes());
    out.extend_from_slice(&0x0101u16.to_be_bytes());
    let (vector, quanta) = crate::sim::pause_fields(pkt);
    out.extend_from_slice(&(vector as u16).to_be_bytes());
    for q in quanta {
        out.extend_from_slice(&q.to_be_bytes());
    }
    let full = pkt.size as usize - pisanet_net::wire::FCS_BYTES;
    out.resize(full, 0);
    out.truncate(snaplen.max(1));
    full
}

/// Puts what the tap produced into a run's output: the files and the trace,
/// `summary.capture`, and `summary.warnings` when a bound was hit.
pub fn attach(
    mut out: crate::api::RunOutput,
    captured: Option<(CaptureOutput, Value, Vec<String>)>,
) -> crate::api::RunOutput {
    let Some((capture, entry, warnings)) = captured else {
        return out;
    };
    if let Some(s) = out.summary.as_object_mut() {
        s.insert("capture".into(), entry);
        if !warnings.is_empty() {
            // After any warnings the run itself gave (PFC headroom).
            let mut all: Vec<Value> = s
                .get("warnings")
                .and_then(|w| w.as_array().cloned())
                .unwrap_or_default();
            all.extend(warnings.into_iter().map(Value::from));
            s.insert("warnings".into(), Value::Array(all));
        }
    }
    out.capture = capture;
    out
}
