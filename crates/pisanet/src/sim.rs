//! The event loop: hosts, switches, ports and links driven by one event queue.
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

use pisanet_engine::{BitRate, EventQueue, RngStreams, SimRng, SimTime, StreamKind};
use pisanet_net::packet::{FlowId, HostId, NodeId, Packet, PortNo};
use pisanet_net::queue::{EgressQueue, QueueConfig, Queued, SharedBuffer};
use pisanet_net::topology::Topology;
use pisanet_transport::{TcpConfig, TcpReceiver, TcpSender, UdpCbrSource, UdpSink};
use pisanet_workload::{FlowGenerator, FlowSpec};
use rand::Rng;

use crate::api::Progress;
use crate::forward::Forwarding;
use pisanet_pisa::{DeqInfo, Emit, InstanceType, QueueMeta};

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
}

pub struct Port {
    pub node: NodeId,
    pub port_no: PortNo,
    pub peer: PortIdx,
    pub rate: BitRate,
    pub delay: SimTime,
    pub queue: EgressQueue,
    /// The transmitter is busy until then.
    pub busy_until: SimTime,
    /// A `TxDone` is pending (always, while the queue is not empty).
    pub tx_event: bool,
    pub up: bool,
    pub wire: VecDeque<(SimTime, Packet)>,
    /// The first `wire_lost` packets of `wire` were on the link when it failed:
    /// they are dropped when they would have arrived.
    pub wire_lost: usize,
    /// Index into `World::shared` of the switch's shared buffer, if any.
    pub shared: Option<u32>,
    pub is_host_port: bool,
    /// Packets leaving this port's queue pass the switch's egress control
    /// (a PISA switch whose program has one).
    pub egress_pass: bool,
    /// Bytes put on the wire while the link was up (reached the peer or are on their way).
    pub carried_bytes: u64,
    /// Bytes of switch-made packets (probes, clones) transmitted.
    pub made_tx_bytes: u64,
}

/// Per-port rate samples (`metrics.port_rate_interval_us`): at each interval,
/// the rate each selected port transmitted at since the previous sample.
#[derive(Default)]
pub struct RateSampler {
    pub interval: Option<SimTime>,
    pub ports: Vec<PortIdx>,
    /// (tx_bytes, carried_bytes) of each selected port at the previous sample.
    last: Vec<(u64, u64)>,
    last_time: SimTime,
    pub time: Vec<SimTime>,
    pub port: Vec<PortIdx>,
    pub tx_gbps: Vec<f64>,
    pub carried_gbps: Vec<f64>,
}

/// What every flow leaves behind, kept for the results (small and fixed-size).
#[derive(Clone, Copy, Debug)]
pub struct FlowRecord {
    pub src: HostId,
    pub dst: HostId,
    pub bytes: u64,
    pub class: u8,
    pub arrival: SimTime,
    pub first_sent: Option<SimTime>,
    pub finish: Option<SimTime>,
    pub retransmissions: u32,
    pub reordered: u32,
    pub ideal: SimTime,
}

// NOTE: the TCP variant is the large one and by far the common one; the
// whole flow state is boxed (ActiveFlow), so the UDP variant wastes nothing.
#[allow(clippy::large_enum_variant)]
enum Endpoints {
    Tcp { tx: TcpSender, rx: TcpReceiver },
    Udp { tx: UdpCbrSource, rx: UdpSink },
}

/// The transport state of a flow still running (freed when it completes).
struct ActiveFlow {
    ends: Endpoints,
    src_addr: u32,
    tx_timer: Option<SimTime>,
    rx_timer: Option<SimTime>,
    /// TSQ: wire bytes of the sender's packets waiting in its host's NIC
    /// queue (counted only when `World::tsq_bytes` is set).
    nic_bytes: u64,
    /// TSQ: the send budget, not a window, stopped the sender's last send;
    /// it is offered budget again when one of its packets leaves the NIC.
    tsq_blocked: bool,
    /// Latest send time among the data packets that reached the receiver.
    max_sent_seen: SimTime,
    /// Data packets that reached the receiver after a packet of the same flow
    /// sent later than them (network reordering, RFC 4737 section 3 in send
    /// order; a retransmission is sent later, so it does not count).
    reordered: u32,
}

/// Packet accounting for the conservation check.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub injected: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub consumed: u64,
    pub ecn_marked: u64,
    pub packet_hops: u64,
    pub late_packets: u64,
}

pub struct LinkEventSpec {
    pub at: SimTime,
    pub up: bool,
    pub ports: [PortIdx; 2],
}

pub struct World {
    pub topo: Topology,
    pub q: EventQueue<Ev>,
    pub ports: Vec<Port>,
    /// First global port of each node.
    pub port_base: Vec<PortIdx>,
    pub shared: Vec<SharedBuffer>,
    pub fwd: Forwarding,
    pub flows: Vec<FlowRecord>,
    active: Vec<Option<Box<ActiveFlow>>>,
    pub active_count: u64,
    pub completed: u64,
    gen: FlowGenerator,
    pending_flow: Option<FlowSpec>,
    pub total_flows: u64,
    tcp: TcpConfig,
    udp_rate: Option<BitRate>,
    pub counts: Counts,
    next_uid: u64,
    out: Vec<Packet>,
    pub violations: Vec<String>,
    pub link_events: Vec<LinkEventSpec>,
    pub sample_interval: Option<SimTime>,
    pub sample_ports: Vec<PortIdx>,
    pub samples: (Vec<SimTime>, Vec<PortIdx>, Vec<u64>),
    pub rates: RateSampler,
    routes: Vec<Vec<Vec<PortNo>>>,
    /// The wake-up pending for each switch, if any.
    switch_timer: Vec<Option<SimTime>>,
    /// Whether each switch's program has an egress control (kept here, in
    /// one small array, so a dequeue does not touch the switch's state).
    emits: Vec<Emit>,
    /// Per-packet loss probability of every link, and its random stream.
    loss: Option<(f64, SimRng)>,
    /// TSQ limit: wire bytes a TCP flow may have in its host's NIC queue
    /// (`transport.tsq_kb`); `None` leaves senders unlimited.
    tsq_bytes: Option<u64>,
    /// `WorldParams::sport_salt`.
    sport_salt: Option<u64>,
    /// Packets are being queued at a host NIC (`queue_at_host`): a TSQ
    /// wake-up then waits until they all are, so a flow's packets keep
    /// their order.
    host_queueing: bool,
    /// Reused buffer of TSQ wake-ups (`tsq_offer`).
    tsq_out: Vec<Packet>,
    /// pcap capture and per-packet trace (capture.rs); `None` when off.
    pub tap: Option<Box<crate::capture::Tap>>,
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
    pub udp_rate: Option<BitRate>,
    pub total_flows: u64,
    pub link_loss_rate: f64,
    /// TSQ limit per TCP flow in wire bytes; `None` disables it.
    pub tsq_bytes: Option<u64>,
    /// `workload.source_ports = "random"`: the salt of the per-connection
    /// port hash; `None` gives sequential ports.
    pub sport_salt: Option<u64>,
}

/// The source port of connection `conn`: 10000 + its number (mod 50000),
/// or, with a salt (`workload.source_ports = "random"`), a port in
/// 10000..=59999 from a splitmix64 hash of the number and the salt. Two
/// connections may then share a port; flows are told apart by their ids, so
/// that only makes their 5-tuples hash alike, as a port collision would.
pub fn source_port(conn: u64, salt: Option<u64>) -> u16 {
    let n = match salt {
        None => conn,
        Some(salt) => pisanet_engine::splitmix64(conn ^ salt),
    };
    10_000 + (n % 50_000) as u16
}

impl World {
    pub fn new(
        topo: Topology,
        fwd: Forwarding,
        gen: FlowGenerator,
        params: WorldParams,
        streams: &RngStreams,
    ) -> World {
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
                        ecn_threshold_bytes: None,
                        priorities: 1,
                    }
                } else {
                    params.switch_queue
                };
                ports.push(Port {
                    node: n as NodeId,
                    port_no: i as PortNo,
                    peer: 0,
                    rate: p.rate,
                    delay: p.delay,
                    queue: EgressQueue::new(qcfg),
                    busy_until: SimTime::ZERO,
                    tx_event: false,
                    up: true,
                    wire: VecDeque::new(),
                    wire_lost: 0,
                    carried_bytes: 0,
                    made_tx_bytes: 0,
                    shared: sb,
                    is_host_port: is_host,
                    egress_pass: false,
                });
            }
        }
        for (n, node) in topo.nodes.iter().enumerate() {
            for (i, p) in node.ports.iter().enumerate() {
                let me = port_base[n] + i as PortIdx;
                ports[me as usize].peer = port_base[p.peer_node as usize] + p.peer_port as PortIdx;
            }
        }
        let routes = topo.compute_routes();
        let loss = (params.link_loss_rate > 0.0)
            .then(|| (params.link_loss_rate, streams.stream(StreamKind::Link, 0)));
        if let Forwarding::Pisa(switches) = &fwd {
            for port in ports.iter_mut().filter(|p| !p.is_host_port) {
                port.egress_pass = switches[(port.node - topo.n_hosts) as usize].has_egress();
            }
        }
        World {
            topo,
            q: EventQueue::new(),
            ports,
            port_base,
            shared,
            fwd,
            flows: Vec::new(),
            active: Vec::new(),
            active_count: 0,
            completed: 0,
            gen,
            pending_flow: None,
            total_flows: params.total_flows,
            tcp: params.tcp,
            udp_rate: params.udp_rate,
            counts: Counts::default(),
            next_uid: 1,
            out: Vec::with_capacity(64),
            violations: Vec::new(),
            link_events: Vec::new(),
            sample_interval: None,
            sample_ports: Vec::new(),
            samples: (Vec::new(), Vec::new(), Vec::new()),
            rates: RateSampler::default(),
            routes,
            switch_timer: Vec::new(),
            emits: Vec::with_capacity(16),
            loss,
            tsq_bytes: params.tsq_bytes,
            sport_salt: params.sport_salt,
            host_queueing: false,
            tsq_out: Vec::with_capacity(64),
            tap: None,
        }
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
        let mut since_progress: u32 = 0;
        loop {
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
            let (now, ev) = self.q.next().expect("peeked");
            self.handle(now, ev);
            since_progress += 1;
            if since_progress >= 1 << 16 {
                since_progress = 0;
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

    fn handle(&mut self, now: SimTime, ev: Ev) {
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
        }
    }

    // ---- ports and links -------------------------------------------------

    /// Queues `pkt` at egress port `p` and starts the transmitter if idle.
    fn enqueue(&mut self, now: SimTime, p: PortIdx, pkt: Packet) {
        let q = Queued {
            pkt,
            enq_time: now,
            enq_qdepth: 0,
            user_meta: [0; 2],
            instance_type: 0,
            ingress_port: 0,
            egress_rid: 0,
        };
        self.enqueue_queued(now, p, q);
    }

    #[inline]
    fn enqueue_queued(&mut self, now: SimTime, p: PortIdx, q: Queued) {
        let tapped = self
            .tap
            .as_deref_mut()
            .and_then(|t| t.before_enqueue(now, &self.ports[p as usize], p, &q));
        let port = &mut self.ports[p as usize];
        let shared = port.shared.map(|i| &mut self.shared[i as usize]);
        let marks_before = port.queue.counters.ecn_marks;
        match port.queue.enqueue(q, shared) {
            Ok(()) => {
                self.counts.ecn_marked += port.queue.counters.ecn_marks - marks_before;
                if port.tx_event {
                    // The pending TxDone will serve it.
                } else if port.busy_until <= now {
                    self.start_tx(now, p);
                } else {
                    port.tx_event = true;
                    self.q.schedule(port.busy_until, Ev::TxDone(p));
                }
            }
            Err(_) => self.counts.dropped += 1,
        }
        if let (Some(t), Some(k)) = (self.tap.as_deref_mut(), tapped) {
            t.after_enqueue(&self.ports[p as usize], k)
        }
    }

    /// Starts transmitting the next packet of port `p`, after the switch's
    /// egress pipeline (v1model: egress runs when the packet leaves the queue).
    fn start_tx(&mut self, now: SimTime, p: PortIdx) {
        loop {
            let port = &mut self.ports[p as usize];
            if port.busy_until > now {
                // Already transmitting (a copy an egress pass queued here was
                // sent first): the rest waits for its TxDone.
                if !port.queue.is_empty() && !port.tx_event {
                    port.tx_event = true;
                    self.q.schedule(port.busy_until, Ev::TxDone(p));
                }
                return;
            }
            let shared = port.shared.map(|i| &mut self.shared[i as usize]);
            let Some(q) = port.queue.dequeue(shared) else {
                return;
            };
            let pkt = if !port.egress_pass {
                q.pkt
            } else {
                let Forwarding::Pisa(switches) = &mut self.fwd else {
                    unreachable!("only PISA switches have egress passes");
                };
                let sw = port.node - self.topo.n_hosts;
                let deq = DeqInfo {
                    enq_timestamp: q.enq_time,
                    enq_qdepth: q.enq_qdepth,
                    deq_qdepth: port.queue.packets(),
                    deq_timedelta: now.saturating_sub(q.enq_time),
                    meta: QueueMeta {
                        user: q.user_meta,
                        ingress_port: q.ingress_port,
                        instance_type: InstanceType::from_u8(q.instance_type),
                        egress_rid: q.egress_rid,
                    },
                };
                let port_no = port.port_no;
                let mut emits = std::mem::take(&mut self.emits);
                emits.clear();
                switches[sw as usize].egress(now, port_no, q.pkt, deq, &mut emits);
                // The packet to send (if egress kept it) goes first, so that
                // copies queued at this same port wait behind it.
                let sent = emits
                    .iter()
                    .position(|e| matches!(e, Emit::Transmit(_)))
                    .map(|i| match emits.remove(i) {
                        Emit::Transmit(pkt) => pkt,
                        _ => unreachable!("position matched a Transmit"),
                    });
                match sent {
                    Some(pkt) => {
                        self.transmit(now, p, pkt);
                        self.apply_emits(now, sw, &mut emits);
                        self.emits = emits;
                        self.arm_switch(sw);
                        return;
                    }
                    None => {
                        // Egress dropped or consumed it: emit the rest, try the next packet.
                        self.apply_emits(now, sw, &mut emits);
                        self.emits = emits;
                        self.arm_switch(sw);
                        continue;
                    }
                }
            };
            // TSQ: a host's packet leaves its NIC queue (flow, source, size).
            let from_host = self.ports[p as usize]
                .is_host_port
                .then_some((pkt.flow, pkt.ip.src, pkt.size));
            self.transmit(now, p, pkt);
            if let Some((flow, src, size)) = from_host {
                self.host_nic_dequeued(now, flow, src, size);
            }
            return;
        }
    }

    /// Puts `pkt` on port `p`'s wire: busy for its serialization time.
    fn transmit(&mut self, now: SimTime, p: PortIdx, pkt: Packet) {
        if let Some(t) = self.tap.as_deref_mut() {
            t.on_transmit(now, &self.ports[p as usize], p, &pkt)
        }
        let port = &mut self.ports[p as usize];
        port.queue.count_tx(pkt.size);
        let done = now + port.rate.tx_time(pkt.size as u64);
        port.busy_until = done;
        if !port.queue.is_empty() && !port.tx_event {
            port.tx_event = true;
            self.q.schedule(done, Ev::TxDone(p));
        }
        if pkt.switch_made {
            port.made_tx_bytes += pkt.size as u64;
        }
        if port.up {
            port.carried_bytes += pkt.size as u64;
            let arrive = done + port.delay;
            if port.wire.is_empty() {
                self.q.schedule(arrive, Ev::Arrive(p));
            }
            port.wire.push_back((arrive, pkt));
        } else {
            // A failed link drops what it carries.
            self.counts.dropped += 1;
        }
    }

    /// Queues a packet a switch's ingress sent to its `port`.
    #[inline]
    fn enqueue_from_switch(
        &mut self,
        now: SimTime,
        node: NodeId,
        port: PortNo,
        pkt: Packet,
        meta: QueueMeta,
    ) {
        // Port count from the compact port index (not the topology's node
        // records, which the hot path should not touch).
        let base = self.port_base[node as usize];
        let end = self
            .port_base
            .get(node as usize + 1)
            .copied()
            .unwrap_or(self.ports.len() as PortIdx);
        if base + port as PortIdx >= end {
            self.counts.dropped += 1;
            return;
        }
        let q = Queued {
            pkt,
            enq_time: now,
            enq_qdepth: 0,
            user_meta: meta.user,
            instance_type: meta.instance_type as u8,
            ingress_port: meta.ingress_port,
            egress_rid: meta.egress_rid,
        };
        self.enqueue_queued(now, base + port as PortIdx, q);
    }

    /// Carries out what a switch emitted (queueing, drops, consumption).
    fn apply_emits(&mut self, now: SimTime, sw: u32, emits: &mut Vec<Emit>) {
        let node = sw + self.topo.n_hosts;
        for e in emits.drain(..) {
            if let Some(t) = self.tap.as_deref_mut() {
                t.on_emit(now, node, &e)
            }
            match e {
                Emit::Enqueue { port, pkt, meta } => {
                    self.enqueue_from_switch(now, node, port, pkt, meta)
                }
                Emit::Drop { .. } => self.counts.dropped += 1,
                Emit::Consumed(_) => self.counts.consumed += 1,
                Emit::Transmit(pkt) => {
                    // Only egress may transmit, and start_tx took that one; a
                    // second transmit from one pass is a program error.
                    self.violations.push(format!("switch {sw}: more than one packet transmitted from one egress pass (uid {})", pkt.uid));
                    self.counts.dropped += 1;
                }
            }
        }
    }

    /// Schedules the switch's wake-up if its pending work moved earlier.
    fn arm_switch(&mut self, sw: u32) {
        let Forwarding::Pisa(switches) = &self.fwd else {
            return;
        };
        if let Some(d) = switches[sw as usize].next_deadline() {
            if self.switch_timer.len() <= sw as usize {
                self.switch_timer.resize(switches.len(), None);
            }
            let slot = &mut self.switch_timer[sw as usize];
            if slot.is_none_or(|t| d < t) {
                *slot = Some(d);
                self.q.schedule(d.max(self.q.now()), Ev::SwitchTimer(sw));
            }
        }
    }

    fn on_switch_timer(&mut self, now: SimTime, sw: u32) {
        if self.switch_timer.get(sw as usize).copied().flatten() == Some(now) {
            self.switch_timer[sw as usize] = None;
        }
        let Forwarding::Pisa(switches) = &mut self.fwd else {
            return;
        };
        let mut emits = std::mem::take(&mut self.emits);
        emits.clear();
        switches[sw as usize].on_timer(now, &mut emits);
        self.apply_emits(now, sw, &mut emits);
        self.emits = emits;
        self.arm_switch(sw);
    }

    fn on_tx_done(&mut self, now: SimTime, p: PortIdx) {
        self.ports[p as usize].tx_event = false;
        self.start_tx(now, p);
    }

    fn on_arrive(&mut self, now: SimTime, p: PortIdx) {
        let port = &mut self.ports[p as usize];
        let Some((t, pkt)) = port.wire.pop_front() else {
            return;
        };
        debug_assert_eq!(t, now);
        let next = port.wire.front().map(|w| w.0);
        let peer = port.peer;
        if let Some(next) = next {
            self.q.schedule(next, Ev::Arrive(p));
        }
        if port.wire_lost > 0 {
            // A failed link drops what it carries.
            port.wire_lost -= 1;
            self.counts.dropped += 1;
            return;
        }
        self.counts.packet_hops += 1;
        if let Some((p_loss, rng)) = &mut self.loss {
            if rng.gen::<f64>() < *p_loss {
                self.counts.dropped += 1;
                return;
            }
        }
        let peer_port = &self.ports[peer as usize];
        let node = peer_port.node;
        if peer_port.is_host_port {
            self.counts.delivered += 1;
            self.host_receive(now, node, pkt);
        } else {
            let in_port = peer_port.port_no;
            self.switch_receive(now, node, in_port, pkt);
        }
    }

    fn switch_receive(&mut self, now: SimTime, node: NodeId, in_port: PortNo, mut pkt: Packet) {
        let sw = node - self.topo.n_hosts;
        match &mut self.fwd {
            Forwarding::Native(e) => match e.route(sw, &pkt) {
                Some(port) => {
                    let p = self.port_base[node as usize] + port as PortIdx;
                    self.enqueue(now, p, pkt);
                }
                None => self.counts.dropped += 1,
            },
            Forwarding::Pisa(switches) => {
                // `emits` is empty between uses (apply_emits drains it).
                debug_assert!(self.emits.is_empty());
                let switch = &mut switches[sw as usize];
                let scheduled = switch.scheduled();
                let unicast = switch.ingress_unicast(now, in_port, &mut pkt, &mut self.emits);
                let rearm = switch.scheduled() != scheduled;
                if !self.emits.is_empty() {
                    let mut emits = std::mem::take(&mut self.emits);
                    self.apply_emits(now, sw, &mut emits);
                    self.emits = emits;
                }
                if let Some((port, meta)) = unicast {
                    self.enqueue_from_switch(now, node, port, pkt, meta);
                }
                if rearm {
                    self.arm_switch(sw);
                }
            }
        }
    }

    fn on_link_event(&mut self, now: SimTime, i: u32) {
        let (up, ends) = {
            let e = &self.link_events[i as usize];
            (e.up, e.ports)
        };
        for p in ends {
            let port = &mut self.ports[p as usize];
            port.up = up;
            if !up {
                port.wire_lost = port.wire.len();
            }
            let node = port.node;
            let port_no = port.port_no;
            if !self.topo.is_host(node) {
                let sw = node - self.topo.n_hosts;
                if let Forwarding::Pisa(switches) = &mut self.fwd {
                    switches[sw as usize].port_status(now, port_no, up);
                    self.arm_switch(sw);
                }
            }
        }
    }

    fn on_sample(&mut self, now: SimTime) {
        for &p in &self.sample_ports {
            self.samples.0.push(now);
            self.samples.1.push(p);
            self.samples.2.push(self.ports[p as usize].queue.bytes());
        }
        if let Some(iv) = self.sample_interval {
            self.q.schedule(now + iv, Ev::Sample);
        }
    }

    fn on_rate_sample(&mut self, now: SimTime) {
        let r = &mut self.rates;
        let dt_s = now.saturating_sub(r.last_time).as_secs_f64().max(1e-12);
        for (i, &p) in r.ports.iter().enumerate() {
            let port = &self.ports[p as usize];
            let (tx, carried) = (port.queue.counters.tx_bytes, port.carried_bytes);
            let (tx0, carried0) = r.last[i];
            r.time.push(now);
            r.port.push(p);
            r.tx_gbps.push((tx - tx0) as f64 * 8.0 / dt_s / 1e9);
            r.carried_gbps
                .push((carried - carried0) as f64 * 8.0 / dt_s / 1e9);
            r.last[i] = (tx, carried);
        }
        r.last_time = now;
        if let Some(iv) = r.interval {
            self.q.schedule(now + iv, Ev::RateSample);
        }
    }

    // ---- hosts and flows --------------------------------------------------

    fn on_next_flow(&mut self, now: SimTime) {
        while let Some(f) = self.pending_flow.take() {
            if f.start > now {
                self.q.schedule(f.start, Ev::NextFlow);
                self.pending_flow = Some(f);
                return;
            }
            self.start_flow(now, f);
            self.pending_flow = self.gen.next();
        }
    }

    fn ideal_fct(&self, f: &FlowSpec) -> SimTime {
        // A lower bound on the FCT alone on an idle network (docs/metrics.md):
        // the first packet store-and-forwarded over every link, the rest of
        // the flow at the bottleneck rate, then one ACK back.
        let links = self.topo.path_links(&self.routes, f.src, f.dst);
        let (mss, first, total) = match self.udp_rate {
            None => {
                let mss = self.tcp.mss as u64;
                let n = f.bytes.div_ceil(mss);
                let last = f.bytes - (n - 1) * mss;
                let full = Packet::tcp_wire_size(mss as u32) as u64;
                let total = (n - 1) * full + Packet::tcp_wire_size(last as u32) as u64;
                (mss, full.min(total), total)
            }
            Some(_) => {
                let mss = self.tcp.mss as u64;
                let n = f.bytes.div_ceil(mss);
                let last = f.bytes - (n - 1) * mss;
                let full = Packet::udp_wire_size(mss as u32) as u64;
                let total = (n - 1) * full + Packet::udp_wire_size(last as u32) as u64;
                (mss, full.min(total), total)
            }
        };
        let _ = mss;
        let bottleneck = links.iter().map(|l| l.0).min().unwrap_or(BitRate(1));
        let mut t = SimTime::ZERO;
        for (rate, delay) in &links {
            t += *delay + rate.tx_time(first);
        }
        t += bottleneck.tx_time(total - first);
        if self.udp_rate.is_none() {
            let ack = Packet::tcp_wire_size(0) as u64;
            for (rate, delay) in &links {
                t += *delay + rate.tx_time(ack);
            }
        }
        t
    }

    fn start_flow(&mut self, now: SimTime, f: FlowSpec) {
        let id = f.id;
        debug_assert_eq!(id as usize, self.flows.len());
        let ideal = self.ideal_fct(&f);
        self.flows.push(FlowRecord {
            src: f.src,
            dst: f.dst,
            bytes: f.bytes,
            class: f.class,
            arrival: now,
            first_sent: None,
            finish: None,
            retransmissions: 0,
            reordered: 0,
            ideal,
        });
        let src_addr = self.topo.host_addr[f.src as usize];
        let dst_addr = self.topo.host_addr[f.dst as usize];
        // A persistent connection (client-server) reuses its 5-tuple.
        let sport = source_port(u64::from(f.conn.unwrap_or(id)), self.sport_salt);
        let ends = pisanet_transport::FlowEnds {
            flow: id,
            src_addr,
            dst_addr,
            sport,
            dport: 80,
            dscp: f.class,
            prio: 0,
        };
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let ends_state = match self.udp_rate {
            None => {
                let mut tx = TcpSender::new(&self.tcp, ends, f.bytes);
                let rx = TcpReceiver::new(&self.tcp, ends.reversed(), f.bytes);
                if let Some(limit) = self.tsq_bytes {
                    // Nothing of this flow is in the NIC yet.
                    tx.set_send_budget(limit);
                }
                tx.on_start(now, &mut out);
                Endpoints::Tcp { tx, rx }
            }
            Some(rate) => {
                let mut tx = UdpCbrSource::new(ends, rate, self.tcp.mss, f.bytes);
                let rx = UdpSink::new();
                tx.on_start(now, &mut out);
                Endpoints::Udp { tx, rx }
            }
        };
        if self.active.len() <= id as usize {
            self.active.resize_with(id as usize + 1, || None);
        }
        let tsq_blocked =
            matches!(&ends_state, Endpoints::Tcp { tx, .. } if tx.is_budget_blocked());
        self.active[id as usize] = Some(Box::new(ActiveFlow {
            ends: ends_state,
            src_addr,
            tx_timer: None,
            rx_timer: None,
            nic_bytes: 0,
            tsq_blocked,
            max_sent_seen: SimTime::ZERO,
            reordered: 0,
        }));
        self.active_count += 1;
        if !out.is_empty() {
            self.flows[id as usize].first_sent = Some(now);
        }
        self.send_from_host(now, f.src, &mut out);
        self.out = out;
        self.arm_timers(id);
    }

    /// Queues what an endpoint of `host` emitted at the host's NIC, then
    /// offers a TSQ-blocked sender the budget freed meanwhile.
    fn send_from_host(&mut self, now: SimTime, host: HostId, out: &mut Vec<Packet>) {
        if let Some(flow) = self.queue_at_host(now, host, out) {
            self.tsq_offer(now, flow);
        }
    }

    /// Charges a TCP sender's packets to its flow's NIC bytes (TSQ) and
    /// queues them at the host's NIC. Returns the flow charged, if any.
    fn queue_at_host(
        &mut self,
        now: SimTime,
        host: HostId,
        out: &mut Vec<Packet>,
    ) -> Option<FlowId> {
        let mut charged = None;
        if self.tsq_bytes.is_some() {
            // Charge all first: the first packet may leave at once (idle NIC).
            for pkt in out.iter() {
                if let Some(af) = self.tsq_flow(pkt.flow, pkt.ip.src) {
                    af.nic_bytes += pkt.size as u64;
                    charged = Some(pkt.flow);
                }
            }
        }
        let p = self.port_base[host as usize];
        self.host_queueing = true;
        for mut pkt in out.drain(..) {
            pkt.uid = self.next_uid;
            self.next_uid += 1;
            self.counts.injected += 1;
            self.enqueue(now, p, pkt);
        }
        self.host_queueing = false;
        charged
    }

    /// The active TCP flow whose sender emitted a packet of `flow` from
    /// address `src`, if TSQ counts it (receivers' ACKs and UDP are not).
    #[inline]
    fn tsq_flow(&mut self, flow: FlowId, src: u32) -> Option<&mut ActiveFlow> {
        let af = self.active.get_mut(flow as usize)?.as_deref_mut()?;
        (matches!(af.ends, Endpoints::Tcp { .. }) && src == af.src_addr).then_some(af)
    }

    /// A host port started transmitting a packet: it has left the NIC queue.
    /// Linux `tcp_wfree` -> `tcp_tsq_handler`: the flow's bytes below TCP
    /// shrink, and a throttled flow may send again.
    #[inline]
    fn host_nic_dequeued(&mut self, now: SimTime, flow: FlowId, src: u32, size: u32) {
        if self.tsq_bytes.is_none() {
            return;
        }
        let Some(af) = self.tsq_flow(flow, src) else {
            return;
        };
        debug_assert!(
            af.nic_bytes >= size as u64,
            "flow {flow}: NIC bytes below zero"
        );
        af.nic_bytes = af.nic_bytes.saturating_sub(size as u64);
        if af.tsq_blocked && !self.host_queueing {
            self.tsq_offer(now, flow);
        }
    }

    /// Gives a TSQ-blocked sender the budget its host's NIC has room for,
    /// queues what it sends, and repeats while packets left the NIC at once
    /// and the sender is still blocked. Does nothing for a flow not blocked.
    fn tsq_offer(&mut self, now: SimTime, id: FlowId) {
        let Some(limit) = self.tsq_bytes else { return };
        let mut out = std::mem::take(&mut self.tsq_out);
        let mut sent = false;
        while let Some(Some(af)) = self.active.get_mut(id as usize) {
            if !af.tsq_blocked || af.nic_bytes >= limit {
                break;
            }
            let Endpoints::Tcp { tx, .. } = &mut af.ends else {
                break;
            };
            tx.set_send_budget(limit - af.nic_bytes);
            out.clear();
            tx.on_send_ready(now, &mut out);
            af.tsq_blocked = tx.is_budget_blocked();
            if out.is_empty() {
                break;
            }
            sent = true;
            let host = self.flows[id as usize].src;
            self.queue_at_host(now, host, &mut out);
        }
        self.tsq_out = out;
        if sent {
            // New data may have started the retransmission timer.
            self.arm_timers(id);
        }
    }

    fn host_receive(&mut self, now: SimTime, host: HostId, pkt: Packet) {
        let id = pkt.flow;
        let Some(Some(af)) = self.active.get_mut(id as usize) else {
            // A straggler for a finished flow (e.g. a late duplicate): delivered, ignored.
            self.counts.late_packets += 1;
            return;
        };
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let to_sender = pkt.ip.dst == af.src_addr;
        if !to_sender {
            if pkt.sent_at < af.max_sent_seen {
                af.reordered += 1;
            } else {
                af.max_sent_seen = pkt.sent_at;
            }
        }
        let budget = self
            .tsq_bytes
            .map(|limit| limit.saturating_sub(af.nic_bytes));
        match &mut af.ends {
            Endpoints::Tcp { tx, rx } => {
                if to_sender {
                    if let Some(b) = budget {
                        tx.set_send_budget(b);
                    }
                    tx.on_packet(now, &pkt, &mut out);
                    af.tsq_blocked = tx.is_budget_blocked();
                } else {
                    rx.on_packet(now, &pkt, &mut out);
                }
            }
            Endpoints::Udp { rx, .. } => {
                if !to_sender {
                    rx.on_packet(now, &pkt);
                }
            }
        }
        self.send_from_host(now, host, &mut out);
        self.out = out;
        self.after_flow_event(now, id);
    }

    fn on_flow_timer(&mut self, now: SimTime, id: FlowId, sender: bool) {
        let Some(Some(af)) = self.active.get_mut(id as usize) else {
            return;
        };
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let host;
        if sender {
            if af.tx_timer == Some(now) {
                af.tx_timer = None;
            }
            host = self.flows[id as usize].src;
            let budget = self
                .tsq_bytes
                .map(|limit| limit.saturating_sub(af.nic_bytes));
            match &mut af.ends {
                Endpoints::Tcp { tx, .. } => {
                    if let Some(b) = budget {
                        tx.set_send_budget(b);
                    }
                    tx.on_timer(now, &mut out);
                    af.tsq_blocked = tx.is_budget_blocked();
                }
                Endpoints::Udp { tx, .. } => tx.on_timer(now, &mut out),
            }
        } else {
            if af.rx_timer == Some(now) {
                af.rx_timer = None;
            }
            host = self.flows[id as usize].dst;
            if let Endpoints::Tcp { rx, .. } = &mut af.ends {
                rx.on_timer(now, &mut out);
            }
        }
        self.send_from_host(now, host, &mut out);
        self.out = out;
        self.after_flow_event(now, id);
    }

    /// Completes the flow if it is done, else makes sure its timers are armed.
    fn after_flow_event(&mut self, now: SimTime, id: FlowId) {
        let Some(Some(af)) = self.active.get(id as usize) else {
            return;
        };
        let done = match &af.ends {
            Endpoints::Tcp { tx, .. } => tx.is_complete(),
            Endpoints::Udp { rx, .. } => rx.received_bytes() >= self.flows[id as usize].bytes,
        };
        if done {
            self.complete_flow(now, id);
        } else {
            self.arm_timers(id);
        }
    }

    fn arm_timers(&mut self, id: FlowId) {
        let Some(Some(af)) = self.active.get_mut(id as usize) else {
            return;
        };
        let (tx_deadline, rx_deadline) = match &af.ends {
            Endpoints::Tcp { tx, rx } => (tx.timer_deadline(), rx.timer_deadline()),
            Endpoints::Udp { tx, .. } => (tx.timer_deadline(), None),
        };
        if let Some(d) = tx_deadline {
            if af.tx_timer.is_none_or(|t| d < t) {
                af.tx_timer = Some(d);
                self.q.schedule(d.max(self.q.now()), Ev::SenderTimer(id));
            }
        }
        if let Some(d) = rx_deadline {
            if af.rx_timer.is_none_or(|t| d < t) {
                af.rx_timer = Some(d);
                self.q.schedule(d.max(self.q.now()), Ev::ReceiverTimer(id));
            }
        }
    }

    fn complete_flow(&mut self, now: SimTime, id: FlowId) {
        let af = self.active[id as usize].take().expect("active flow");
        self.active_count -= 1;
        self.completed += 1;
        let rec = &mut self.flows[id as usize];
        rec.finish = Some(now);
        match af.ends {
            Endpoints::Tcp { tx, rx } => {
                rec.first_sent = tx.first_sent_at().or(rec.first_sent);
                rec.retransmissions = tx.retransmissions();
                rec.reordered = af.reordered;
                if let Some(e) = rx.delivery_error() {
                    self.violations.push(format!("flow {id}: {e}"));
                }
                if rx.delivered_bytes() != rec.bytes {
                    self.violations.push(format!(
                        "flow {id}: completed with {} of {} bytes delivered to the receiving application",
                        rx.delivered_bytes(),
                        rec.bytes
                    ));
                }
            }
            Endpoints::Udp { tx, rx } => {
                rec.first_sent = tx.first_sent_at().or(rec.first_sent);
                rec.reordered = af.reordered;
                if rx.received_bytes() != rec.bytes {
                    self.violations.push(format!(
                        "flow {id}: completed with {} of {} bytes received",
                        rx.received_bytes(),
                        rec.bytes
                    ));
                }
            }
        }
    }

    /// Final accounting of flows still running at the end: their receivers
    /// must not have seen a delivery error either.
    pub fn check_unfinished(&mut self) {
        for (id, af) in self.active.iter().enumerate() {
            let Some(af) = af else { continue };
            if let Endpoints::Tcp { tx, rx } = &af.ends {
                if let Some(e) = rx.delivery_error() {
                    self.violations.push(format!("flow {id}: {e}"));
                }
                let rec = &mut self.flows[id];
                rec.retransmissions = tx.retransmissions();
                rec.reordered = af.reordered;
                rec.first_sent = tx.first_sent_at().or(rec.first_sent);
            }
        }
    }

    /// Packets made by switches (clones, multicast copies, generated probes).
    pub fn switch_injected(&self) -> u64 {
        match &self.fwd {
            Forwarding::Pisa(switches) => switches.iter().map(|s| s.stats().injected).sum(),
            Forwarding::Native(_) => 0,
        }
    }

    /// Totals over every switch: its pipeline's events (clones, recirculations,
    /// packets to the CPU, control-plane writes) and each program counter
    /// array summed over its cells, by name.
    pub fn switch_totals(&self) -> serde_json::Value {
        let Forwarding::Pisa(switches) = &self.fwd else {
            return serde_json::Value::Null;
        };
        let mut counters = serde_json::Map::new();
        let (mut cloned, mut recirc, mut resub, mut to_cpu, mut writes, mut write_errors) =
            (0, 0, 0, 0, 0, 0);
        let (mut issued, mut wait_sum, mut wait_max) = (0u64, 0u64, 0u64);
        for s in switches {
            let st = s.stats();
            cloned += st.cloned;
            recirc += st.recirculated;
            resub += st.resubmitted;
            to_cpu += st.to_cpu;
            writes += st.writes_applied;
            write_errors += st.write_errors;
            issued += st.writes_issued;
            wait_sum = wait_sum.saturating_add(st.write_wait_ps_sum);
            wait_max = wait_max.max(st.write_wait_ps_max);
            for (name, c) in s.pipeline().counter_totals() {
                let e = counters
                    .entry(name.to_string())
                    .or_insert(serde_json::json!({"packets": 0u64, "bytes": 0u64}));
                e["packets"] = (e["packets"].as_u64().unwrap_or(0) + c.packets).into();
                e["bytes"] = (e["bytes"].as_u64().unwrap_or(0) + c.bytes).into();
            }
        }
        serde_json::json!({
            "cloned": cloned, "recirculated": recirc, "resubmitted": resub, "to_cpu": to_cpu,
            "writes_applied": writes, "write_errors": write_errors, "counters": counters,
            // Writes issued after start-up and how long they queued behind
            // earlier ones beyond the write latency (the CPU's backlog).
            "writes_issued": issued,
            "write_wait_us": {
                "mean": if issued == 0 { 0.0 } else { wait_sum as f64 / issued as f64 / 1e6 },
                "max": wait_max as f64 / 1e6,
            },
        })
    }

    /// PISA rule violations by any switch program.
    pub fn program_violations(&self) -> Vec<String> {
        let Forwarding::Pisa(switches) = &self.fwd else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for s in switches {
            let (list, total) = s.violations();
            if total > 0 {
                let first = list.first().map(|v| format!("{v:?}")).unwrap_or_default();
                out.push(format!(
                    "switch {}: {total} PISA rule violation(s), first: {first}",
                    s.id()
                ));
            }
        }
        out
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
        n
    }
}
