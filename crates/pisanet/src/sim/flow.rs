//! The flow lifecycle: arrival from the workload, transport endpoints,
//! timers, completion and the record each flow leaves for the results.

use super::*;

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
    /// Bytes the receiver had in order when the flow completed or the run
    /// stopped (reported per flow; not part of the digest).
    pub delivered: u64,
}

// NOTE: the TCP variant is the large one and by far the common one; the
// whole flow state is boxed (ActiveFlow), so the UDP variant wastes nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Endpoints {
    Tcp { tx: TcpSender, rx: TcpReceiver },
    Udp { tx: UdpCbrSource, rx: UdpSink },
}

/// The transport state of a flow still running (freed when it completes).
pub(crate) struct ActiveFlow {
    pub(crate) ends: Endpoints,
    pub(crate) src_addr: u32,
    pub(crate) tx_timer: Option<SimTime>,
    pub(crate) rx_timer: Option<SimTime>,
    /// TSQ: wire bytes of the sender's packets waiting in its host's NIC
    /// queue (counted only when `World::tsq_bytes` is set).
    pub(crate) nic_bytes: u64,
    /// TSQ: the send budget, not a window, stopped the sender's last send;
    /// it is offered budget again when one of its packets leaves the NIC.
    pub(crate) tsq_blocked: bool,
    /// Latest send time among the data packets that reached the receiver.
    pub(crate) max_sent_seen: SimTime,
    /// Data packets that reached the receiver after a packet of the same flow
    /// sent later than them (network reordering, RFC 4737 section 3 in send
    /// order; a retransmission is sent later, so it does not count).
    pub(crate) reordered: u32,
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
    pub(crate) fn on_next_flow(&mut self, now: SimTime) {
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

    pub(crate) fn ideal_fct(&self, f: &FlowSpec) -> SimTime {
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

    pub(crate) fn start_flow(&mut self, now: SimTime, f: FlowSpec) {
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
            delivered: 0,
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

    pub(crate) fn on_flow_timer(&mut self, now: SimTime, id: FlowId, sender: bool) {
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
    pub(crate) fn after_flow_event(&mut self, now: SimTime, id: FlowId) {
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

    pub(crate) fn arm_timers(&mut self, id: FlowId) {
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

    pub(crate) fn complete_flow(&mut self, now: SimTime, id: FlowId) {
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
                rec.delivered = rx.delivered_bytes();
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
                rec.delivered = rx.received_bytes();
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
            match &af.ends {
                Endpoints::Tcp { tx, rx } => {
                    if let Some(e) = rx.delivery_error() {
                        self.violations.push(format!("flow {id}: {e}"));
                    }
                    let rec = &mut self.flows[id];
                    rec.retransmissions = tx.retransmissions();
                    rec.reordered = af.reordered;
                    rec.first_sent = tx.first_sent_at().or(rec.first_sent);
                    rec.delivered = rx.delivered_bytes();
                }
                Endpoints::Udp { rx, .. } => self.flows[id].delivered = rx.received_bytes(),
            }
        }
    }
}
