//! The event loop: hosts, switches, ports and links driven by one event queue.
//!
//! This module holds the [`World`], the event kinds and the loop; each event
//! kind is a few lines calling into the model that owns it:
//!
//! | module | models | events |
//! |---|---|---|
//! | `port` | egress queue, transmitter, wire, link failures | `TxDone`, `Arrive`, `LinkEvent` |
//! | `switch` | switches running their programs | `SwitchTimer` |
//! | `host` | host NIC queue, TCP small queues, delivery to endpoints | |
//! | `flow` | flow lifecycle: arrival, endpoints, timers, completion | `NextFlow`, `SenderTimer`, `ReceiverTimer` |
//! | `sampling` | queue-depth and port-rate samples | `Sample`, `RateSample` |
//! | `pfc` | priority flow control: ingress accounting, PAUSE frames, deadlock detector | `PfcExpire`, `PfcRefresh`, `PfcCheck` |
//!
//! ```text
//!   host NIC queue ──tx──▶ wire FIFO ──arrive──▶ switch ingress ──▶ egress queue ──tx──▶ ...
//! ```
//!
//! Each port keeps only its *next* events in the queue (htsim's idea): a
//! `TxDone` only while packets wait behind the one on the transmitter (a
//! packet that finds the port idle is sent at once, with no event for the
//! end of its serialization) and an `Arrive` for the head of its
//! wire FIFO. Packets wait in the port's queues and wire, never in the event
//! queue, so the queue grows with busy ports and timers, not with packets.

use std::collections::VecDeque;

use pisanet_engine::{BitRate, RngStreams, SimRng, SimTime, StreamKind};
use pisanet_net::arena::{PacketArena, PktId, TmMeta};
use pisanet_net::packet::{FlowId, HostId, NodeId, Packet, PortNo};
use pisanet_net::queue::{EgressQueue, QueueConfig, SharedBuffer};
use pisanet_net::topology::Topology;
use pisanet_transport::{TcpConfig, TcpReceiver, TcpSender};
use pisanet_workload::{FlowSource, FlowSpec};
use rand::Rng;

use crate::api::Progress;
use crate::forward::Forwarding;
use pisanet_pisa::{DeqInfo, Emit, InstanceType, QueueMeta};

mod flow;
mod host;
pub mod meter;
mod order;
pub mod parallel;
mod pfc;
mod port;
pub mod records;
mod sampling;
mod switch;

use flow::ActiveFlow;
pub use flow::{source_port, CcChoice, FlowRecord, HostParams};
pub use order::Events;
pub use pfc::{is_pause, pause_fields, Pfc, PfcStats, PAUSE_KIND};
pub use port::{Port, Wire};
pub use records::{FlowRecords, FlowSink};
pub use sampling::RateSampler;

/// A global port index.
pub type PortIdx = u32;

#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// The port's transmitter finished serializing its current packet.
    TxDone(PortIdx),
    /// The head of the port's wire FIFO reaches the peer.
    Arrive(PortIdx),
    SenderTimer(FlowId),
    ReceiverTimer(FlowId),
    NextFlow,
    LinkEvent(u32),
    Sample,
    /// Sample the transmitted bytes of selected ports (link utilization series).
    RateSample,
    /// A switch's own pending work is due (control plane, generator, recirculation).
    SwitchTimer(u32),
    /// PFC: pause timers of the port may have run out (sim/pfc.rs).
    PfcExpire(PortIdx),
    /// PFC: the port's XOFF frames may be due for a refresh.
    PfcRefresh(PortIdx),
    /// PFC: the deadlock detector looks for a cycle of paused queues.
    PfcCheck,
    /// The flow's receiver is released, `World::lookahead` after its
    /// sender completed (sim/flow.rs `complete_flow`).
    Release(FlowId),
}

/// Packet accounting for the conservation check.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub injected: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub consumed: u64,
    // (ECN marks: `World::ecn_marked`, the ports' counts.)
    pub packet_hops: u64,
    pub late_packets: u64,
    /// Packets of rate-based flows that reached their senders (feedback).
    pub rate_feedback: u64,
    /// Feedback packets after which a reaction point's rate was lower.
    pub rate_cuts: u64,
    pub first_rate_cut: Option<SimTime>,
    /// CNPs sent by receivers' notification points.
    pub cnps: u64,
}

pub struct LinkEventSpec {
    pub at: SimTime,
    pub up: bool,
    pub ports: [PortIdx; 2],
}

pub struct World {
    pub topo: Topology,
    /// Ordered by (time, `Ev::key`): sim/order.rs.
    pub q: Events,
    pub ports: Vec<Port>,
    /// Every packet in a queue or on a wire; queues and wires hold its id.
    pub arena: PacketArena,
    /// First global port of each node.
    pub port_base: Vec<PortIdx>,
    pub shared: Vec<SharedBuffer>,
    pub fwd: Forwarding,
    /// What ended flows left: rows, digest, statistics (`records`).
    pub records: FlowRecords,
    pub(crate) active: Vec<Option<Box<ActiveFlow>>>,
    pub active_count: u64,
    pub completed: u64,
    pub(crate) gen: FlowSource,
    pub(crate) pending_flow: Option<FlowSpec>,
    pub total_flows: u64,
    pub(crate) tcp: TcpConfig,
    /// Per-flow defaults: what a flow's unset attributes take.
    pub(crate) hosts: HostParams,
    /// Per-flow measurement (`sim::meter`); `None` when off.
    pub meter: Option<Box<meter::Meter>>,
    pub counts: Counts,
    /// Packets each node made so far (host packets, PAUSE frames): a
    /// packet's id is its node's and that count ([`World::new_uid`]).
    pub(crate) next_uid: Vec<u64>,
    pub(crate) out: Vec<Packet>,
    pub violations: Vec<String>,
    pub link_events: Vec<LinkEventSpec>,
    pub sample_interval: Option<SimTime>,
    pub sample_ports: Vec<PortIdx>,
    /// Queue samples: time, port, depth (bytes), priority queue (sampling.rs).
    pub samples: (Vec<SimTime>, Vec<PortIdx>, Vec<u64>, Vec<u8>),
    pub rates: RateSampler,
    pub(crate) routes: pisanet_net::topology::Routes,
    /// The wake-up pending for each switch, if any.
    pub(crate) switch_timer: Vec<Option<SimTime>>,
    /// Whether each switch's program has an egress control (kept here, in
    /// one small array, so a dequeue does not touch the switch's state).
    pub(crate) emits: Vec<Emit>,
    /// Per-packet loss probability of every link, and its random stream.
    pub(crate) loss: Option<(f64, SimRng)>,
    /// `topology.link_loss_per_link`: one loss stream per port (its
    /// direction of the link), used instead of `loss`'s; empty when off.
    pub(crate) loss_per_link: Vec<SimRng>,
    /// TSQ limit: wire bytes a TCP flow may have in its host's NIC queue
    /// (`transport.tsq_kb`); `None` leaves senders unlimited.
    pub(crate) tsq_bytes: Option<u64>,
    /// `WorldParams::sport_salt`.
    pub(crate) sport_salt: Option<u64>,
    /// Packets are being queued at a host NIC (`queue_at_host`): a TSQ
    /// wake-up then waits until they all are, so a flow's packets keep
    /// their order.
    pub(crate) host_queueing: bool,
    /// Reused buffer of TSQ wake-ups (`tsq_offer`).
    pub(crate) tsq_out: Vec<Packet>,
    /// pcap capture and per-packet trace (capture.rs); `None` when off.
    pub tap: Option<Box<crate::capture::Tap>>,
    /// Priority flow control (sim/pfc.rs); `None` when off.
    pub pfc: Option<Box<Pfc>>,
    /// PFC: the switch ingress port of the arrival being processed, which
    /// what it queues is charged to (`NO_PFC` for packets a switch makes
    /// on its own); read only with PFC on (sim/pfc.rs).
    pub(crate) pfc_in: u32,
    /// Parallel mode: this world is one partition (sim/parallel.rs);
    /// `None` in a single-thread run.
    pub(crate) part: Option<Box<parallel::Part>>,
    /// The lookahead of the topology's partitioning (sim/parallel.rs:
    /// the smallest delay of a link between partitions; zero for a
    /// topology that has none), whether or not the run is parallel. A TCP
    /// flow's receiver is released this long after its sender completes,
    /// and the run checks whether every flow is done only at the ends of
    /// windows this long, so that a single-thread run and a parallel one
    /// do the same (docs/architecture.md, "Parallel mode").
    pub lookahead: SimTime,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    AllFlowsDone,
    TimeLimit,
    Interrupted,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::AllFlowsDone => "all_flows_done",
            StopReason::TimeLimit => "time_limit",
            StopReason::Interrupted => "interrupted",
        }
    }
}

pub struct WorldParams {
    pub switch_queue: QueueConfig,
    pub shared_buffer: Option<(u64, f64)>,
    pub tcp: TcpConfig,
    /// Per-flow defaults (transport, congestion control, UDP rate and drain).
    pub hosts: HostParams,
    pub total_flows: u64,
    pub link_loss_rate: f64,
    /// TSQ limit per TCP flow in wire bytes; `None` disables it.
    pub tsq_bytes: Option<u64>,
    /// `workload.source_ports = "random"`: the salt of the per-connection
    /// port hash; `None` gives sequential ports.
    pub sport_salt: Option<u64>,
}

impl World {
    pub fn new(
        topo: Topology,
        fwd: Forwarding,
        gen: FlowSource,
        params: WorldParams,
        streams: &RngStreams,
    ) -> World {
        let n_nodes = topo.nodes.len();
        let mut ports = Vec::new();
        let mut port_base = Vec::with_capacity(topo.nodes.len());
        let mut shared = Vec::new();
        for (n, node) in topo.nodes.iter().enumerate() {
            port_base.push(ports.len() as PortIdx);
            let is_host = topo.is_host(n as NodeId);
            let sb = if !is_host {
                params.shared_buffer.map(|(bytes, alpha)| {
                    shared.push(SharedBuffer::new(bytes, alpha));
                    shared.len() as u32 - 1
                })
            } else {
                None
            };
            for (i, p) in node.ports.iter().enumerate() {
                let qcfg = if is_host {
                    // A host NIC: one unbounded queue at line rate.
                    QueueConfig {
                        buffer_bytes: u64::MAX,
                        buffer_packets: u32::MAX,
                        ecn_threshold_bytes: None,
                        ecn_threshold_packets: u32::MAX,
                        // Strict priority as the switches (issue 13): a
                        // paused or low priority does not block another.
                        priorities: params.switch_queue.priorities,
                    }
                } else {
                    params.switch_queue
                };
                ports.push(Port {
                    node: n as NodeId,
                    port_no: i as PortNo,
                    peer: 0,
                    peer_node: 0,
                    peer_port_no: 0,
                    rate: p.rate,
                    ps_per_byte: p.rate.ps_per_byte(),
                    delay: p.delay,
                    queue: EgressQueue::new(qcfg),
                    busy_until: SimTime::ZERO,
                    tx_event: false,
                    up: true,
                    wire: Wire::default(),
                    carried_bytes: 0,
                    made_tx_bytes: 0,
                    shared: sb,
                    is_host_port: is_host,
                    egress_pass: false,
                    pass_limit: 0,
                });
            }
        }
        for (n, node) in topo.nodes.iter().enumerate() {
            for (i, p) in node.ports.iter().enumerate() {
                let me = port_base[n] + i as PortIdx;
                let port = &mut ports[me as usize];
                port.peer = port_base[p.peer_node as usize] + p.peer_port as PortIdx;
                port.peer_node = p.peer_node;
                port.peer_port_no = p.peer_port as PortNo;
            }
        }
        let routes = topo.routes();
        let loss = (params.link_loss_rate > 0.0)
            .then(|| (params.link_loss_rate, streams.stream(StreamKind::Link, 0)));
        if let Forwarding::Pisa(switches) = &fwd {
            for port in ports.iter_mut().filter(|p| !p.is_host_port) {
                port.egress_pass = switches[(port.node - topo.n_hosts) as usize].has_egress();
            }
            // What `switch_receive` relies on to queue a unicast decision
            // without checking its port again.
            for (sw, s) in switches.iter().enumerate() {
                let node = &topo.nodes[topo.n_hosts as usize + sw];
                assert_eq!(
                    usize::from(s.n_ports()),
                    node.ports.len(),
                    "switch {sw}'s ports"
                );
            }
        }
        for port in ports.iter_mut() {
            port.pass_limit = port.pass_limit_of();
        }
        World {
            topo,
            q: Events::new(),
            ports,
            arena: PacketArena::new(),
            port_base,
            shared,
            fwd,
            records: FlowRecords::default(),
            active: Vec::new(),
            active_count: 0,
            completed: 0,
            gen,
            pending_flow: None,
            total_flows: params.total_flows,
            tcp: params.tcp,
            hosts: params.hosts,
            meter: None,
            counts: Counts::default(),
            next_uid: vec![0; n_nodes],
            out: Vec::with_capacity(64),
            violations: Vec::new(),
            link_events: Vec::new(),
            sample_interval: None,
            sample_ports: Vec::new(),
            samples: (Vec::new(), Vec::new(), Vec::new(), Vec::new()),
            rates: RateSampler::default(),
            routes,
            switch_timer: Vec::new(),
            emits: Vec::with_capacity(16),
            loss,
            loss_per_link: Vec::new(),
            tsq_bytes: params.tsq_bytes,
            sport_salt: params.sport_salt,
            host_queueing: false,
            tsq_out: Vec::with_capacity(64),
            tap: None,
            pfc: None,
            pfc_in: pisanet_net::queue::NO_PFC,
            part: None,
            lookahead: SimTime::ZERO,
        }
    }

    /// The id of a new packet made by `node` (a host's packet, a PAUSE
    /// frame): the node in bits 40 and up, its count of packets made in
    /// the bits below (from 1). Ids are unique in the run and depend on
    /// the node's own events only, so a parallel run (sim/parallel.rs)
    /// gives every packet the single-thread run's id (the capture's IPv4
    /// id and the trace's `packet`). Switch-made copies have ids of their
    /// own, per switch, with bit 63 set (pisanet-pisa).
    #[inline(always)]
    pub(crate) fn new_uid(&mut self, node: NodeId) -> u64 {
        let n = &mut self.next_uid[node as usize];
        *n += 1;
        (u64::from(node) << 40) | *n
    }

    pub fn port_name(&self, p: PortIdx) -> String {
        let port = &self.ports[p as usize];
        let peer = &self.ports[port.peer as usize];
        format!(
            "{}->{}",
            self.topo.nodes[port.node as usize].name, self.topo.nodes[peer.node as usize].name
        )
    }

    /// Runs until every flow is done, `max_time` passes, or `progress` says stop.
    pub fn run(
        &mut self,
        max_time: SimTime,
        progress: &mut dyn FnMut(Progress) -> bool,
    ) -> StopReason {
        self.pending_flow = self.gen.next();
        if let Some(f) = &self.pending_flow {
            self.q.schedule(f.start, Ev::NextFlow);
        }
        for (i, e) in self.link_events.iter().enumerate() {
            self.q.schedule(e.at, Ev::LinkEvent(i as u32));
        }
        if let Some(iv) = self.sample_interval {
            self.q.schedule(iv, Ev::Sample);
        }
        if let Some(iv) = self.rates.interval {
            self.rates.last = vec![(0, 0); self.rates.ports.len()];
            self.q.schedule(iv, Ev::RateSample);
        }
        if let Forwarding::Pisa(switches) = &self.fwd {
            for sw in 0..switches.len() as u32 {
                self.arm_switch(sw);
            }
        }
        // Every 2^16 events handled (each event popped is handled at once,
        // so the queue's count of pops since here counts them).
        let popped_before = self.q.popped();
        // The run stops between windows `[s, s + lookahead)` (s: the first
        // pending event), as the parallel mode does (sim/parallel.rs
        // `windows`); with no lookahead, before every event.
        //
        // Events strictly before `end` pop in one step: `end` is the
        // window's end or the picosecond after the time limit, whichever
        // is first (the same events as "before the window's end and not
        // past the limit", one comparison an event); at `end` the run
        // checks whether it is over and opens the next window.
        let after_limit = SimTime(max_time.ps().saturating_add(1));
        let mut end = SimTime::ZERO;
        loop {
            let (now, ev) = match self.q.next_below(end) {
                Some(x) => x,
                None => {
                    if self.pending_flow.is_none() && self.active_count == 0 {
                        return StopReason::AllFlowsDone;
                    }
                    let Some(t) = self.q.peek_time() else {
                        // Nothing left to happen but flows remain: they can never finish.
                        return StopReason::TimeLimit;
                    };
                    if t > max_time {
                        return StopReason::TimeLimit;
                    }
                    let window_end = SimTime(t.ps().saturating_add(self.lookahead.ps()));
                    // (With `max_time` the largest time, `after_limit`
                    // saturates to it, and `end` is the window's end: the
                    // same events again.)
                    end = window_end.min(after_limit);
                    self.q.next().expect("peeked")
                }
            };
            self.handle(now, ev);
            if self.q.popped().wrapping_sub(popped_before) & 0xFFFF == 0 {
                if self.pfc.as_ref().is_some_and(|p| p.fatal.is_some()) {
                    // The deadlock detector fired: run_config reports it.
                    return StopReason::TimeLimit;
                }
                let p = Progress {
                    sim_time_s: now.as_secs_f64(),
                    flows_completed: self.completed,
                    flows_total: self.total_flows,
                };
                if !progress(p) {
                    return StopReason::Interrupted;
                }
            }
        }
    }

    #[inline(always)]
    pub(crate) fn handle(&mut self, now: SimTime, ev: Ev) {
        match ev {
            Ev::TxDone(p) => self.on_tx_done(now, p),
            Ev::Arrive(p) => self.on_arrive(now, p),
            Ev::SenderTimer(f) => self.on_flow_timer(now, f, true),
            Ev::ReceiverTimer(f) => self.on_flow_timer(now, f, false),
            Ev::NextFlow => self.on_next_flow(now),
            Ev::LinkEvent(i) => self.on_link_event(now, i),
            Ev::Sample => self.on_sample(now),
            Ev::RateSample => self.on_rate_sample(now),
            Ev::SwitchTimer(sw) => self.on_switch_timer(now, sw),
            Ev::PfcExpire(_) | Ev::PfcRefresh(_) | Ev::PfcCheck => self.on_pfc_event(now, ev),
            Ev::Release(f) => self.release(f),
        }
    }

    /// Whether the packet arena holds exactly the packets in queues and on
    /// wires (a slot not freed on delivery, drop or consumption, or freed
    /// twice, breaks it); the run reports a violation otherwise.
    pub fn arena_check(&self) -> Result<(), String> {
        let held: u64 = self
            .ports
            .iter()
            .map(|p| p.queue.packets() as u64 + p.wire.len() as u64)
            .sum();
        let live = self.arena.live() as u64;
        if live == held {
            Ok(())
        } else {
            Err(format!(
                "packet arena holds {live} packets but queues and wires hold {held}"
            ))
        }
    }

    /// Packets in queues, on wires, or held inside switches.
    pub fn in_flight(&self) -> u64 {
        let mut n: u64 = 0;
        for p in &self.ports {
            n += p.queue.packets() as u64 + p.wire.len() as u64;
        }
        if let Forwarding::Pisa(switches) = &self.fwd {
            n += switches.iter().map(|s| s.held_packets()).sum::<u64>();
        }
        if let Some(pfc) = &self.pfc {
            n += pfc.queued_frames();
        }
        n
    }
}
