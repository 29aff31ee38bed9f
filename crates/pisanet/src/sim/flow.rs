//! The flow lifecycle: arrival from the workload, transport endpoints,
//! timers, completion and the record each flow leaves for the results.
//!
//! Each flow's endpoints are built from its attributes (`FlowSpec::attrs`,
//! set per row of a flow list or per flow group), each unset one taking the
//! config's value ([`HostParams`]): TCP with its congestion control, or a
//! rate-based UDP sender with its reaction point. A UDP flow is done when
//! its receiver has every byte sent, or when its sender has sent everything
//! and the drain time has passed (docs/metrics.md, "UDP flows").

use super::meter::{FlowMeter, FlowStats};
use super::*;
use pisanet_transport::{CcKind, RateParams, RateReceiver, RateSender, ReactionKind};
use pisanet_workload::Transport;

/// A flow's record: kept in its `ActiveFlow` while it runs, then turned
/// into its row of the flow table (`sim::records`) when it ends.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct FlowRecord {
    // NOTE: `repr(C)`, `finish` first: `ActiveFlow::sender_done` reads it
    // at every packet, in the flow's second line (docs/performance.md,
    // "Session 10").
    pub finish: Option<SimTime>,
    pub first_sent: Option<SimTime>,
    pub arrival: SimTime,
    pub ideal: SimTime,
    /// Payload bytes of the flow (for a duration-limited flow: what it sent).
    pub bytes: u64,
    /// Payload bytes of the packets lost (`lost_packets`).
    pub lost_bytes: u64,
    /// Bytes the receiver had in order when the flow completed or the run
    /// stopped (reported per flow; not part of the digest).
    pub delivered: u64,
    pub src: HostId,
    pub dst: HostId,
    pub retransmissions: u32,
    pub reordered: u32,
    /// Data packets lost: TCP, dropped in the network (retransmissions
    /// included); UDP, sent but not received when the flow ended.
    pub lost_packets: u32,
    pub group: u16,
    pub class: u8,
    /// 0 = TCP, 1 = UDP.
    pub transport: u8,
    /// Strict-priority queue of its packets.
    pub prio: u8,
}

/// A flow's congestion control or reaction point, by the name `cc` gives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CcChoice {
    Tcp(CcKind),
    Rate(ReactionKind),
}

/// The config's per-flow defaults and host settings: what a flow whose
/// attributes leave something unset gets.
#[derive(Clone, Debug)]
pub struct HostParams {
    /// Transport of a flow that does not name one (`transport.kind`).
    pub transport: Transport,
    /// Congestion control of a TCP flow that does not name one.
    pub tcp_cc: CcKind,
    /// Reaction point of a UDP flow that does not name one.
    pub reaction: ReactionKind,
    /// Rate of a UDP flow that does not give one (`transport.udp_rate_gbps`).
    pub udp_rate: BitRate,
    /// `FlowAttrs::cc` indexes this list.
    pub cc: Vec<CcChoice>,
    /// Drain time of UDP flows; `None`: the worst-case path time (see
    /// `udp_drain_auto`).
    pub udp_drain: Option<SimTime>,
    /// Largest buffer a switch port may hold (bytes), for the automatic drain.
    pub port_buffer_bytes: u64,
    /// Parameters of the reaction and notification points (`[transport.qcn]`, ...).
    pub rate: RateParams,
}

impl Default for HostParams {
    fn default() -> Self {
        HostParams {
            transport: Transport::Tcp,
            tcp_cc: CcKind::NewReno,
            reaction: ReactionKind::Fixed,
            udp_rate: BitRate::from_gbps(1.0),
            cc: Vec::new(),
            udp_drain: None,
            port_buffer_bytes: 0,
            rate: RateParams::default(),
        }
    }
}

/// A flow's resolved transport.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Plan {
    Tcp(TcpConfig),
    Rate {
        reaction: ReactionKind,
        rate: BitRate,
        payload: u32,
    },
}

// NOTE: the TCP variant is the large one and by far the common one; the
// whole flow state is boxed (ActiveFlow), so the UDP variant wastes nothing.
#[allow(clippy::large_enum_variant)]
// NOTE: `repr(C)`: the sender's first line (read by every event of the
// flow) right after the tag, the receiver behind it.
#[repr(C)]
pub(crate) enum Endpoints {
    Tcp {
        tx: TcpSender,
        rx: TcpReceiver,
    },
    Udp {
        tx: RateSender,
        rx: RateReceiver,
        /// How long after the sender's last datagram left its NIC the flow
        /// waits for stragglers.
        drain: SimTime,
        /// When the flow ends if bytes are still missing (set once the
        /// sender is done).
        drain_at: Option<SimTime>,
    },
}

/// The transport state of a flow still running (freed when it completes).
#[repr(C, align(64))]
pub(crate) struct ActiveFlow {
    // NOTE: `repr(C)`, in the order a packet of the flow reads it at its
    // hosts: the first line (address, TSQ, `sender_done`, timers, the
    // measurement, the latest send time seen: all a packet reads of the
    // flow besides its endpoint), then the reordering and loss counts and
    // the record, then the endpoints,
    // whose tag ends 8 bytes into the fourth line: the sender's completion
    // and timer fields fill the rest of it. Aligned, so that the box's
    // lines are these (docs/performance.md, "Session 10" and "Session 11:
    // host side").
    pub(crate) src_addr: u32,
    /// TSQ: the send budget, not a window, stopped the sender's last send;
    /// it is offered budget again when one of its packets leaves the NIC.
    pub(crate) tsq_blocked: bool,
    /// TSQ counts the sender's packets: a TCP flow whose sender has not
    /// completed (`sender_done`). Kept in this line so that a packet
    /// leaving its host's NIC reads no other line of the flow
    /// (`World::tsq_flow`; docs/performance.md, "Session 11: host side").
    pub(crate) tsq_counts: bool,
    /// `rec.finish` is set (`sender_done`), in this line.
    finished: bool,
    /// The receiver may hold a timer (TCP with delayed ACKs, or UDP): the
    /// timer check after an event reads its deadline only then, not the
    /// receiver's line (docs/performance.md, "Session 12: host side").
    rx_timed: bool,
    /// TSQ: wire bytes of the sender's packets waiting in its host's NIC
    /// queue (counted only when `World::tsq_bytes` is set).
    pub(crate) nic_bytes: u64,
    /// When the sender's and the receiver's pending timer events are due.
    pub(crate) tx_timer: OptTime,
    pub(crate) rx_timer: OptTime,
    /// A duration-limited TCP flow: when its application closes it
    /// (`TcpSender::close`); none once closed or without a duration.
    pub(crate) close_at: OptTime,
    /// Measurement state, only when `metrics.flow_stats` or goodput is on.
    pub(crate) meter: Option<Box<FlowMeter>>,
    /// Latest send time among the data packets that reached the receiver.
    pub(crate) max_sent_seen: SimTime,
    /// Unused: the endpoints start at a line (byte 192).
    _pad: [u64; 2],
    /// Data packets that reached the receiver after a packet of the same flow
    /// sent later than them (network reordering, RFC 4737 section 3 in send
    /// order; a retransmission is sent later, so it does not count).
    pub(crate) reordered: u32,
    /// TCP data packets of the sender dropped in the network.
    pub(crate) lost_packets: u32,
    pub(crate) lost_bytes: u64,
    /// The flow's record, until it ends (`sim::records`); its `finish`
    /// is set by `finish_sender` only.
    pub(crate) rec: FlowRecord,
    pub(crate) ends: Endpoints,
    /// The measurement closed when the sender completed, kept for the
    /// row written when the receiver is released.
    pub(crate) stats: Option<Box<FlowStats>>,
}

impl ActiveFlow {
    /// The flow's sender completed: what is left is its receiver, lingering
    /// until `Ev::Release` (`World::complete_flow`).
    #[inline]
    pub(crate) fn sender_done(&self) -> bool {
        debug_assert_eq!(self.finished, self.rec.finish.is_some());
        self.finished
    }

    /// The sender completed at `at`: `sender_done` from now on, and TSQ
    /// counts its packets no more.
    #[inline]
    pub(crate) fn finish_sender(&mut self, at: SimTime) {
        self.rec.finish = Some(at);
        self.finished = true;
        self.tsq_counts = false;
    }

    /// The state of a flow starting now, not finished: TSQ counts its
    /// sender's packets if it is TCP.
    pub(crate) fn new(
        src_addr: u32,
        rec: FlowRecord,
        ends: Endpoints,
        tsq_blocked: bool,
        close_at: Option<SimTime>,
        meter: Option<Box<FlowMeter>>,
    ) -> ActiveFlow {
        debug_assert!(rec.finish.is_none());
        ActiveFlow {
            src_addr,
            tsq_blocked,
            tsq_counts: matches!(ends, Endpoints::Tcp { .. }),
            finished: false,
            rx_timed: match &ends {
                Endpoints::Tcp { rx, .. } => rx.uses_timer(),
                Endpoints::Udp { .. } => true,
            },
            nic_bytes: 0,
            tx_timer: OptTime::NONE,
            rx_timer: OptTime::NONE,
            close_at: close_at.into(),
            meter,
            max_sent_seen: SimTime::ZERO,
            _pad: [0; 2],
            reordered: 0,
            lost_packets: 0,
            lost_bytes: 0,
            rec,
            ends,
            stats: None,
        }
    }
}

/// An optional instant in 8 bytes (`Option<SimTime>` takes 16): the
/// largest time stands for none (a run never reaches it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OptTime(u64);

impl OptTime {
    pub(crate) const NONE: OptTime = OptTime(u64::MAX);

    #[inline]
    pub(crate) fn get(self) -> Option<SimTime> {
        (self.0 != u64::MAX).then_some(SimTime(self.0))
    }
}

impl From<Option<SimTime>> for OptTime {
    fn from(t: Option<SimTime>) -> OptTime {
        debug_assert!(t != Some(SimTime(u64::MAX)), "the largest time is none");
        OptTime(t.map_or(u64::MAX, |t| t.ps()))
    }
}

/// The sender's loss-recovery counters, for the per-flow measurement.
fn tcp_counters(tx: &TcpSender) -> super::meter::TcpCounters {
    let st = tx.stats();
    super::meter::TcpCounters {
        dup_acks: st.dup_acks,
        fast_retransmits: st.fast_retransmits,
        timeouts: st.timeouts,
    }
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
    /// Flow `id`'s 5-tuple and marks, as its sender stamps them (the
    /// receiver answers on the reversed tuple). A persistent connection
    /// (client-server) reuses its 5-tuple.
    pub(crate) fn flow_ends(
        &self,
        id: FlowId,
        f: &FlowSpec,
        prio: u8,
    ) -> pisanet_transport::FlowEnds {
        pisanet_transport::FlowEnds {
            flow: id,
            src_addr: self.topo.host_addr[f.src as usize],
            dst_addr: self.topo.host_addr[f.dst as usize],
            sport: source_port(u64::from(f.conn.unwrap_or(id)), self.sport_salt),
            dport: 80,
            dscp: f.class,
            prio,
        }
    }

    pub(crate) fn on_next_flow(&mut self, now: SimTime) {
        if self.part.as_ref().is_some_and(|p| p.me != 0) {
            // Every partition runs its copy (sim/parallel.rs): one counts.
            self.q.uncount();
        }
        while let Some(f) = self.pending_flow.take() {
            if f.start > now {
                self.q.schedule(f.start, Ev::NextFlow);
                self.pending_flow = Some(f);
                return;
            }
            if self.part.is_some() {
                self.start_flow_part(now, f);
            } else {
                self.start_flow(now, f);
            }
            self.pending_flow = self.gen.next();
        }
    }

    /// The flow's transport, each attribute it leaves unset taken from the config.
    pub(crate) fn plan(&self, f: &FlowSpec) -> Plan {
        let a = &f.attrs;
        let cc = a.cc.and_then(|k| self.hosts.cc.get(k as usize).copied());
        let transport = a.transport.unwrap_or(self.hosts.transport);
        match transport {
            Transport::Tcp => {
                let cc = match cc {
                    Some(CcChoice::Tcp(k)) => k,
                    _ => self.hosts.tcp_cc,
                };
                // Per-flow overrides are struct updates of the config's TcpConfig;
                // a flow's rate_gbps is its application rate cap (iperf3 -b).
                Plan::Tcp(TcpConfig {
                    mss: a.mss.unwrap_or(self.tcp.mss),
                    cc,
                    app_rate_bps: a.rate_bps.or(self.tcp.app_rate_bps),
                    ..self.tcp
                })
            }
            Transport::Udp => Plan::Rate {
                reaction: match cc {
                    Some(CcChoice::Rate(r)) => r,
                    _ => self.hosts.reaction,
                },
                rate: a.rate_bps.map_or(self.hosts.udp_rate, BitRate),
                payload: a.mss.unwrap_or(self.tcp.mss),
            },
        }
    }

    pub(crate) fn ideal_fct(&self, f: &FlowSpec, plan: &Plan) -> SimTime {
        if let Some(d) = f.attrs.duration {
            // A duration-limited flow: ideally it lasts its duration.
            if f.bytes == u64::MAX {
                return d;
            }
        }
        // A lower bound on the FCT alone on an idle network (docs/metrics.md):
        // the first packet store-and-forwarded over every link, the rest of
        // the flow at the bottleneck rate, then one ACK back.
        let links = self.topo.path_links(&self.routes, f.src, f.dst);
        let (mss, wire, tcp): (u64, fn(u32) -> u32, bool) = match plan {
            Plan::Tcp(c) => (c.mss as u64, Packet::tcp_wire_size, true),
            Plan::Rate { payload, .. } => (*payload as u64, Packet::udp_wire_size, false),
        };
        let n = f.bytes.div_ceil(mss);
        let last = f.bytes - (n - 1) * mss;
        let full = wire(mss as u32) as u64;
        let total = (n - 1) * full + wire(last as u32) as u64;
        let first = full.min(total);
        let bottleneck = links.iter().map(|l| l.0).min().unwrap_or(BitRate(1));
        let mut t = SimTime::ZERO;
        for (rate, delay) in &links {
            t += *delay + rate.tx_time(first);
        }
        t += bottleneck.tx_time(total - first);
        if tcp {
            let ack = Packet::tcp_wire_size(0) as u64;
            for (rate, delay) in &links {
                t += *delay + rate.tx_time(ack);
            }
        }
        t
    }

    /// The automatic drain time of a UDP flow: the longest a datagram can
    /// take from its sender's NIC to the receiver when every switch port on
    /// the path holds a full buffer: per link, propagation plus the
    /// serialization of a full buffer and one more frame (docs/metrics.md).
    pub(crate) fn udp_drain_auto(&self, f: &FlowSpec, payload: u32) -> SimTime {
        let frame = Packet::udp_wire_size(payload) as u64;
        let links = self.topo.path_links(&self.routes, f.src, f.dst);
        let mut t = SimTime::ZERO;
        for (i, (rate, delay)) in links.iter().enumerate() {
            // The first link's queue is the sender's own NIC (drained before
            // the clock starts); the others are switch ports.
            let queued = if i == 0 {
                0
            } else {
                self.hosts.port_buffer_bytes
            };
            t += *delay + rate.tx_time(queued + frame);
        }
        t
    }

    pub(crate) fn start_flow(&mut self, now: SimTime, f: FlowSpec) {
        let id = f.id;
        debug_assert!(self.part.is_some() || u64::from(id) == self.records.started);
        let plan = self.plan(&f);
        let ideal = self.ideal_fct(&f, &plan);
        let prio = f.attrs.priority.unwrap_or(0);
        let rec = FlowRecord {
            src: f.src,
            dst: f.dst,
            bytes: f.bytes,
            class: f.class,
            transport: matches!(plan, Plan::Rate { .. }) as u8,
            prio,
            group: f.group,
            arrival: now,
            first_sent: None,
            finish: None,
            retransmissions: 0,
            reordered: 0,
            lost_packets: 0,
            lost_bytes: 0,
            ideal,
            delivered: 0,
        };
        let ends = self.flow_ends(id, &f, prio);
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let ends_state = match plan {
            Plan::Tcp(cfg) => {
                let mut tx = TcpSender::new(&cfg, ends, f.bytes);
                let rx = TcpReceiver::new(&cfg, ends.reversed(), f.bytes);
                if let Some(limit) = self.tsq_bytes {
                    // Nothing of this flow is in the NIC yet.
                    tx.set_send_budget(limit);
                }
                // A duration (iperf3 -t) closes the sender at start + duration
                // (`on_flow_timer`).
                tx.on_start(now, &mut out);
                Endpoints::Tcp { tx, rx }
            }
            Plan::Rate {
                reaction,
                rate,
                payload,
            } => {
                let stop_at = f.attrs.duration.map(|d| now + d);
                // The reaction point's line rate is the sending host's link.
                let line = self.ports[self.port_base[f.src as usize] as usize].rate;
                let rp = reaction.build_for(&self.hosts.rate, line, rate);
                let mut tx = RateSender::new(ends, rp, payload, f.bytes, stop_at);
                // DCQCN's notification point at the receiver, for the
                // reaction points fed by CNPs (`ReactionKind::notifier`).
                let mut rx = RateReceiver::new(reaction.notifier(&self.hosts.rate));
                if let Some(g) = &self.hosts.rate.go_back_n {
                    // `transport.go_back_n`: every rate-based flow of the run.
                    tx = tx.with_go_back_n(g);
                    rx = rx.with_go_back_n(g);
                }
                tx.on_start(now, &mut out);
                let drain = self
                    .hosts
                    .udp_drain
                    .unwrap_or_else(|| self.udp_drain_auto(&f, payload));
                Endpoints::Udp {
                    tx,
                    rx,
                    drain,
                    drain_at: None,
                }
            }
        };
        if self.active.len() <= id as usize {
            self.active.resize_with(id as usize + 1, || None);
        }
        let tsq_blocked =
            matches!(&ends_state, Endpoints::Tcp { tx, .. } if tx.is_budget_blocked());
        let meter = self
            .meter
            .as_deref_mut()
            .map(|m| m.new_flow(f.attrs.deadline));
        let close_at = match &ends_state {
            Endpoints::Tcp { .. } => f.attrs.duration.map(|d| now + d),
            Endpoints::Udp { .. } => None,
        };
        if self.part.is_none() {
            // Parallel mode: the partition keeps the record (sim/parallel.rs).
            self.records.start(id);
        }
        let mut rec = rec;
        if !out.is_empty() {
            rec.first_sent = Some(now);
        }
        self.active[id as usize] = Some(Box::new(ActiveFlow::new(
            ends.src_addr,
            rec,
            ends_state,
            tsq_blocked,
            close_at,
            meter,
        )));
        self.active_count += 1;
        self.send_from_host(now, f.src, &mut out);
        self.out = out;
        self.after_flow_event(now, id);
    }

    /// A packet was dropped (queue, link, switch program): counted, and
    /// charged to its TCP flow's loss if it carried the sender's data.
    // NOTE: cold and out of line, so the drop paths do not grow the hot
    // enqueue and arrival code they sit in.
    #[cold]
    #[inline(never)]
    pub(crate) fn lose(&mut self, pkt: &Packet) {
        self.counts.dropped += 1;
        if self.part.is_some() && self.lose_elsewhere(pkt) {
            return;
        }
        let payload = match pkt.l4 {
            pisanet_net::packet::L4::Tcp(t) => t.payload,
            _ => return, // UDP loss: sent minus received, when the flow ends
        };
        let now = self.q.now();
        match self.active.get_mut(pkt.flow as usize) {
            // NOTE: a drop is charged if it happened no later than the
            // flow's completion (at its instant, before or after it): the
            // rule the parallel mode can apply to drops in other
            // partitions (sim/parallel.rs `merge`).
            Some(Some(af)) => {
                if payload > 0
                    && pkt.ip.src == af.src_addr
                    && af.rec.finish.is_none_or(|f| now <= f)
                {
                    af.lost_packets += 1;
                    af.lost_bytes += payload as u64;
                }
            }
            _ => {
                if self.part.is_some() && payload > 0 {
                    self.lose_after_completion(pkt, now, payload);
                }
            }
        }
    }

    /// [`Self::lose`] for packet `id` of the arena, which it frees.
    #[cold]
    #[inline(never)]
    pub(crate) fn lose_id(&mut self, id: PktId) {
        let pkt = self.arena.remove(id);
        self.lose(&pkt);
    }

    pub(crate) fn on_flow_timer(&mut self, now: SimTime, id: FlowId, sender: bool) {
        let Some(Some(af)) = self.active.get_mut(id as usize) else {
            return;
        };
        if sender && af.sender_done() {
            // The sender completed; its receiver lingers (`complete_flow`).
            return;
        }
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let host;
        if sender {
            if af.tx_timer.get() == Some(now) {
                af.tx_timer = OptTime::NONE;
            }
            host = af.rec.src;
            let budget = self
                .tsq_bytes
                .map(|limit| limit.saturating_sub(af.nic_bytes));
            match &mut af.ends {
                Endpoints::Tcp { tx, rx } => {
                    if let Some(b) = budget {
                        tx.set_send_budget(b);
                    }
                    if af.close_at.get().is_some_and(|c| c <= now) {
                        // The application's duration is over (iperf3 -t): no
                        // new data; the flow's size is what was sent.
                        af.close_at = OptTime::NONE;
                        tx.close(now, &mut out);
                        rx.set_size(now, tx.size_bytes());
                        af.rec.bytes = tx.size_bytes();
                        if let Some(part) = self.part.as_deref_mut() {
                            // Parallel mode: a receiver in another partition
                            // learns the size at the end of the window
                            // (sim/parallel.rs `Part::closed`).
                            part.closed(id, &af.rec, now);
                        }
                    }
                    tx.on_timer(now, &mut out);
                    af.tsq_blocked = tx.is_budget_blocked();
                }
                Endpoints::Udp { tx, .. } => tx.on_timer(now, &mut out),
            }
        } else {
            if af.rx_timer.get() == Some(now) {
                af.rx_timer = OptTime::NONE;
            }
            host = af.rec.dst;
            match &mut af.ends {
                Endpoints::Tcp { rx, .. } => rx.on_timer(now, &mut out),
                Endpoints::Udp { rx, .. } => {
                    rx.on_timer(now, &mut out);
                    // A deferred CNP of the notification point.
                    self.counts.cnps += out.len() as u64;
                }
            }
        }
        self.send_from_host(now, host, &mut out);
        self.out = out;
        self.after_flow_event(now, id);
    }

    /// Completes the flow if it is done, else makes sure its timers are armed.
    pub(crate) fn after_flow_event(&mut self, now: SimTime, id: FlowId) {
        let Some(Some(af)) = self.active.get_mut(id as usize) else {
            return;
        };
        // A lingering receiver (its sender done): only its own timer.
        if !af.sender_done() {
            let done = match &af.ends {
                Endpoints::Tcp { tx, .. } => tx.is_complete(),
                Endpoints::Udp { .. } => {
                    if self.udp_done(now, id) {
                        return self.complete_flow(now, id);
                    }
                    return self.arm_timers(id);
                }
            };
            if done {
                return self.complete_flow(now, id);
            }
        }
        Self::arm_flow_timers(&mut self.q, id, af);
    }

    /// A UDP flow is done when its receiver has every byte sent, or when its
    /// sender is done and the drain time has passed (the drain starts when
    /// the sender's last datagram has left its NIC: the NIC queue is
    /// unbounded, so its backlog is added).
    #[inline(never)]
    fn udp_done(&mut self, now: SimTime, id: FlowId) -> bool {
        let Some(Some(src)) = self
            .active
            .get(id as usize)
            .map(|a| a.as_ref().map(|a| a.rec.src))
        else {
            return false;
        };
        let p = &self.ports[self.port_base[src as usize] as usize];
        let nic = p.busy_until.saturating_sub(now) + p.rate.tx_time(p.queue.bytes());
        // A NIC still holding packets (its backlog, or a PFC pause holding
        // it) has not let the flow's last datagram go: the drain has not
        // started, so look again once the backlog could have left.
        let nic_holds = p.queue.bytes() > 0;
        let Some(Some(af)) = self.active.get_mut(id as usize) else {
            return false;
        };
        let Endpoints::Udp {
            tx,
            rx,
            drain,
            drain_at,
        } = &mut af.ends
        else {
            return false;
        };
        if !tx.is_complete() {
            return false;
        }
        if rx.received_bytes() >= tx.sent_bytes() {
            return true;
        }
        if nic_holds {
            *drain_at = Some(now + nic.max(SimTime::from_us(1)) + *drain);
            return false;
        }
        let at = *drain_at.get_or_insert(now + nic + *drain);
        now >= at
    }

    pub(crate) fn arm_timers(&mut self, id: FlowId) {
        if let Some(Some(af)) = self.active.get_mut(id as usize) {
            Self::arm_flow_timers(&mut self.q, id, af);
        }
    }

    /// `arm_timers` of flow `id`, whose state is `af`.
    // NOTE: after nearly every event of a flow both timers are already
    // armed early enough (a restarted RTO is later than the event pending
    // for it, which finds it early and re-arms): the scheduling is out of
    // line, so that this check saves no registers (docs/performance.md,
    // "Session 10").
    #[inline(always)]
    fn arm_flow_timers(q: &mut Events, id: FlowId, af: &mut ActiveFlow) {
        // NOTE: a timer records the time its event was scheduled for (a
        // deadline already past fires now): `on_flow_timer` clears it when
        // that event fires. Recording a past deadline instead left it set
        // forever, and no later, earlier-only deadline was ever scheduled (a
        // duration-limited flow held back by TSQ never closed).
        let now = q.now();
        let done = af.sender_done();
        match &af.ends {
            Endpoints::Tcp { tx, rx } => {
                if !done {
                    let d = match (tx.timer_deadline(), af.close_at.get()) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    if let Some(d) = d {
                        Self::arm(q, &mut af.tx_timer, d.max(now), Ev::SenderTimer(id));
                    }
                }
                // Without delayed ACKs the receiver's deadline is always
                // none: its line is not read.
                debug_assert!(af.rx_timed || rx.timer_deadline().is_none());
                if af.rx_timed {
                    if let Some(d) = rx.timer_deadline() {
                        Self::arm(q, &mut af.rx_timer, d.max(now), Ev::ReceiverTimer(id));
                    }
                }
            }
            Endpoints::Udp {
                tx, rx, drain_at, ..
            } => {
                let (txd, rxd) = (tx.timer_deadline().or(*drain_at), rx.timer_deadline());
                if let Some(d) = txd.filter(|_| !done) {
                    Self::arm(q, &mut af.tx_timer, d.max(now), Ev::SenderTimer(id));
                }
                if let Some(d) = rxd {
                    Self::arm(q, &mut af.rx_timer, d.max(now), Ev::ReceiverTimer(id));
                }
            }
        }
    }

    /// Schedules `ev` at `d` unless the timer `slot` records an event due
    /// no later.
    #[inline(always)]
    fn arm(q: &mut Events, slot: &mut OptTime, d: SimTime, ev: Ev) {
        if slot.get().is_none_or(|t| d < t) {
            *slot = Some(d).into();
            Self::schedule_timer(q, d, ev);
        }
    }

    #[inline(never)]
    fn schedule_timer(q: &mut Events, at: SimTime, ev: Ev) {
        q.schedule(at, ev);
    }

    /// The flow is done (its TCP sender has every byte acknowledged, or
    /// its UDP flow ended): its record is complete. A UDP flow's state
    /// goes at once. A TCP receiver lingers `World::lookahead` longer,
    /// answering copies that reach it meanwhile, and is released by an
    /// `Ev::Release` (`release`), so that the single-thread run and the
    /// parallel mode, whose receiver's partition learns of the completion
    /// at the end of a window (no later than that), release it at the same
    /// instant (docs/architecture.md, "Parallel mode").
    pub(crate) fn complete_flow(&mut self, now: SimTime, id: FlowId) {
        self.active_count -= 1;
        self.completed += 1;
        let lookahead = self.lookahead;
        let af = self.active[id as usize]
            .as_deref_mut()
            .expect("active flow");
        let mut stats = FlowStats::default();
        if let (Some(m), Some(fm)) = (self.meter.as_deref_mut(), af.meter.as_deref_mut()) {
            if let Endpoints::Tcp { tx, .. } = &af.ends {
                fm.tcp = tcp_counters(tx);
            }
            match self.part.as_deref_mut() {
                // Parallel mode: the collector closes it (sim/parallel.rs).
                Some(part) => part.meter_part(id, &af.rec, m.at, af.meter.take()),
                None => stats = m.close(fm, id).unwrap_or_default(),
            }
        }
        // Measured no further (a lingering receiver's copies included).
        af.meter = None;
        let at = self.meter.as_deref().map(|m| m.at);
        af.finish_sender(now);
        let rec = &mut af.rec;
        match &af.ends {
            Endpoints::Tcp { tx, .. } => {
                rec.first_sent = tx.first_sent_at().or(rec.first_sent);
                rec.retransmissions = tx.retransmissions();
                rec.lost_packets = af.lost_packets;
                rec.lost_bytes = af.lost_bytes;
                if let Some(part) = self.part.as_deref_mut() {
                    part.sender_completed(id, rec, at);
                    if !part.local_host(rec.dst) {
                        // Parallel mode: the receiver's partition releases
                        // it (sim/parallel.rs `exchange`).
                        self.active[id as usize] = None;
                        return;
                    }
                }
                if lookahead > SimTime::ZERO {
                    af.stats = Some(Box::new(stats));
                    self.q.schedule(now + lookahead, Ev::Release(id));
                    return;
                }
            }
            Endpoints::Udp { tx, rx, .. } => {
                rec.first_sent = tx.first_sent_at().or(rec.first_sent);
                Self::udp_account(rec, tx, rx);
                rec.reordered = af.reordered;
                rec.delivered = rx.received_bytes();
                if rx.received_bytes() > tx.sent_bytes() {
                    self.violations.push(format!(
                        "flow {id}: received {} bytes, more than the {} sent",
                        rx.received_bytes(),
                        tx.sent_bytes()
                    ));
                }
                // Go-back-N: a flow completes only with every byte acknowledged,
                // so its receiver must have accepted all of them, in order.
                if tx.go_back_n() && rx.received_bytes() != tx.sent_bytes() {
                    self.violations.push(format!(
                        "flow {id}: go-back-N flow completed with {} of {} bytes delivered in order",
                        rx.received_bytes(),
                        tx.sent_bytes()
                    ));
                }
                let rec = af.rec;
                self.active[id as usize] = None;
                match self.part.as_deref_mut() {
                    // NOTE: `refusal` keeps rate-based flows out of parallel runs.
                    Some(part) => part.end(id, &rec, None),
                    None => self.records.end(id, &rec, &stats),
                }
                return;
            }
        }
        af.stats = Some(Box::new(stats));
        self.release(id);
    }

    /// A completed TCP flow's receiver is released (`Ev::Release`, or at
    /// once without a lookahead): what it delivered is checked (exactly
    /// once, in order) and the flow's row is written. In parallel mode, a
    /// receiver whose sender is in another partition leaves what it
    /// measured (`reordered`, `delivered`) for `parallel::merge`.
    pub(crate) fn release(&mut self, id: FlowId) {
        let Some(af) = self.active.get_mut(id as usize).and_then(Option::take) else {
            return;
        };
        let mut af = *af;
        let stats = af.stats.take().map(|s| *s).unwrap_or_default();
        let rec = &mut af.rec;
        rec.reordered = af.reordered;
        // Drops charged after the completion, at its instant (`lose`).
        rec.lost_packets = af.lost_packets;
        rec.lost_bytes = af.lost_bytes;
        if let Endpoints::Tcp { rx, .. } = &af.ends {
            if let Some(e) = rx.delivery_error() {
                self.violations.push(format!("flow {id}: {e}"));
            }
            rec.delivered = rx.delivered_bytes();
            if rx.delivered_bytes() != rec.bytes {
                self.violations.push(format!(
                    "flow {id}: completed with {} of {} bytes delivered to the receiving application",
                    rx.delivered_bytes(),
                    rec.bytes
                ));
            }
        }
        let now = self.q.now();
        match self.part.as_deref_mut() {
            Some(part) => part.end(id, &af.rec, Some(now)),
            None => self.records.end(id, &af.rec, &stats),
        }
    }

    /// A UDP flow's record: bytes are what the sender sent; loss is what
    /// did not arrive.
    fn udp_account(rec: &mut FlowRecord, tx: &RateSender, rx: &RateReceiver) {
        rec.bytes = tx.sent_bytes();
        rec.retransmissions = tx.retransmissions() as u32;
        rec.lost_packets = tx.sent_packets().saturating_sub(rx.received_packets()) as u32;
        rec.lost_bytes = tx.sent_bytes().saturating_sub(rx.received_bytes());
    }

    /// Final accounting of flows still running at the end: their receivers
    /// must not have seen a delivery error either. Their rows go to the
    /// records, in id order.
    pub fn check_unfinished(&mut self) {
        // Receivers still lingering after their senders completed: released
        // now, as their `Ev::Release` would have.
        let lingering: Vec<FlowId> = (0..self.active.len())
            .filter(|&i| self.active[i].as_ref().is_some_and(|af| af.sender_done()))
            .map(|i| i as FlowId)
            .collect();
        for id in lingering {
            self.release(id);
        }
        for (id, af) in self.active.iter_mut().enumerate() {
            let Some(af) = af else { continue };
            let mut stats = FlowStats::default();
            if let (Some(m), Some(fm)) = (self.meter.as_deref_mut(), af.meter.as_deref_mut()) {
                if let Endpoints::Tcp { tx, .. } = &af.ends {
                    fm.tcp = tcp_counters(tx);
                }
                match self.part.as_deref_mut() {
                    // Parallel mode: what this partition measured goes to
                    // the collector, which closes it (sim/parallel.rs).
                    Some(part) => {
                        m.apply_pending(fm, id as FlowId, None);
                        let end = (SimTime(u64::MAX), id as u64);
                        part.meter_part(id as FlowId, &af.rec, end, af.meter.take());
                    }
                    None => stats = m.close(fm, id as FlowId).unwrap_or_default(),
                }
            }
            let rec = &mut af.rec;
            match &af.ends {
                Endpoints::Tcp { tx, rx } => {
                    if let Some(e) = rx.delivery_error() {
                        self.violations.push(format!("flow {id}: {e}"));
                    }
                    rec.reordered = af.reordered;
                    rec.retransmissions = tx.retransmissions();
                    rec.first_sent = tx.first_sent_at().or(rec.first_sent);
                    rec.lost_packets = af.lost_packets;
                    rec.lost_bytes = af.lost_bytes;
                    rec.delivered = rx.delivered_bytes();
                }
                Endpoints::Udp { tx, rx, .. } => {
                    // NOTE: as before these columns existed, a running UDP
                    // flow keeps reordered 0 (digests of existing configs).
                    if tx.is_complete() || rec.bytes == u64::MAX {
                        Self::udp_account(rec, tx, rx);
                    }
                    rec.delivered = rx.received_bytes();
                }
            }
            match self.part.as_deref_mut() {
                Some(part) => part.end(id as FlowId, &af.rec, None),
                None => self.records.end(id as FlowId, &af.rec, &stats),
            }
        }
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;
    use std::mem::{align_of, offset_of};

    /// The cache lines of a flow's state (see the note at `ActiveFlow`):
    /// what a packet reads of the flow beside its endpoint in the first
    /// line, `finish` in the second, and the endpoints at a line, so that
    /// the sender's completion and timer fields share it with the tag.
    #[test]
    fn a_flow_reads_by_cache_line() {
        assert_eq!(align_of::<ActiveFlow>(), 64);
        for off in [
            offset_of!(ActiveFlow, src_addr),
            offset_of!(ActiveFlow, tsq_counts),
            offset_of!(ActiveFlow, finished),
            offset_of!(ActiveFlow, rx_timed),
            offset_of!(ActiveFlow, nic_bytes) + 7,
            offset_of!(ActiveFlow, rx_timer) + 7,
            offset_of!(ActiveFlow, close_at) + 7,
            offset_of!(ActiveFlow, meter) + 7,
            offset_of!(ActiveFlow, max_sent_seen) + 7,
        ] {
            assert!(off < 64, "{off}");
        }
        let finish = offset_of!(ActiveFlow, rec) + offset_of!(FlowRecord, finish);
        assert_eq!(finish / 64, 1);
        assert_eq!(offset_of!(ActiveFlow, ends) % 64, 0);
    }

    /// The sender starts 8 bytes into the endpoints' line (after their
    /// tag), as its layout expects, and the receiver at a line
    /// (`the_sender_reads_by_cache_line`, `the_receiver_reads_by_cache_line`
    /// in the transport crate).
    #[test]
    fn the_endpoints_sit_where_their_layouts_expect() {
        let cfg = TcpConfig::default();
        let ends = pisanet_transport::FlowEnds {
            flow: 0,
            src_addr: 1,
            dst_addr: 2,
            sport: 10_000,
            dport: 80,
            dscp: 0,
            prio: 0,
        };
        let rec = FlowRecord {
            finish: None,
            first_sent: None,
            arrival: SimTime::ZERO,
            ideal: SimTime::ZERO,
            bytes: 1000,
            lost_bytes: 0,
            delivered: 0,
            src: 0,
            dst: 1,
            retransmissions: 0,
            reordered: 0,
            lost_packets: 0,
            group: 0,
            class: 0,
            transport: 0,
            prio: 0,
        };
        let tcp = Endpoints::Tcp {
            tx: TcpSender::new(&cfg, ends, 1000),
            rx: TcpReceiver::new(&cfg, ends.reversed(), 1000),
        };
        let af = Box::new(ActiveFlow::new(1, rec, tcp, false, None, None));
        let base = &*af as *const ActiveFlow as usize;
        let Endpoints::Tcp { tx, rx } = &af.ends else {
            unreachable!()
        };
        assert_eq!((tx as *const TcpSender as usize - base) % 64, 8);
        assert_eq!((rx as *const TcpReceiver as usize - base) % 64, 0);
        assert_eq!(base % 64, 0);
    }
}
