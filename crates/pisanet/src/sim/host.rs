//! Hosts: the NIC queue, TCP small queues (TSQ) and delivery to the
//! transport endpoints.

use super::flow::Endpoints;
use super::*;

impl World {
    /// Queues what an endpoint of `host` emitted at the host's NIC, then
    /// offers a TSQ-blocked sender the budget freed meanwhile.
    pub(crate) fn send_from_host(&mut self, now: SimTime, host: HostId, out: &mut Vec<Packet>) {
        if let Some(flow) = self.queue_at_host(now, host, out) {
            self.tsq_offer(now, flow);
        }
    }

    /// Charges a TCP sender's packets to its flow's NIC bytes (TSQ) and
    /// queues them at the host's NIC. Returns the flow charged, if any.
    pub(crate) fn queue_at_host(
        &mut self,
        now: SimTime,
        host: HostId,
        out: &mut Vec<Packet>,
    ) -> Option<FlowId> {
        if out.is_empty() {
            return None;
        }
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
        if let [_] = out.as_slice() {
            // One packet (most events): no drain.
            let pkt = out.pop().expect("one packet");
            self.inject(now, p, pkt);
        } else {
            self.inject_all(now, p, out);
        }
        self.host_queueing = false;
        charged
    }

    /// `inject` of every packet in `out`, in order.
    // NOTE: out of line: a second inlined copy of `inject` made every
    // call of `queue_at_host` save more registers (docs/performance.md,
    // "Session 12: host side").
    #[inline(never)]
    fn inject_all(&mut self, now: SimTime, p: PortIdx, out: &mut Vec<Packet>) {
        for pkt in out.drain(..) {
            self.inject(now, p, pkt);
        }
    }

    /// A host's packet enters the network at its NIC, port `p`.
    #[inline(always)]
    fn inject(&mut self, now: SimTime, p: PortIdx, mut pkt: Packet) {
        pkt.uid = self.new_uid(self.ports[p as usize].node);
        self.counts.injected += 1;
        self.enqueue(now, p, pkt);
    }

    /// The active TCP flow whose sender emitted a packet of `flow` from
    /// address `src`, if TSQ counts it (receivers' ACKs and UDP are not).
    #[inline]
    pub(crate) fn tsq_flow(&mut self, flow: FlowId, src: u32) -> Option<&mut ActiveFlow> {
        let af = self.active.get_mut(flow as usize)?.as_deref_mut()?;
        // NOTE: the flow's first line only (a packet leaving the NIC
        // long after its sender ran finds the flow's lines cold): the
        // source, then `tsq_counts` for the endpoints' tag and
        // `sender_done` (docs/performance.md, "Session 11: host side").
        debug_assert_eq!(
            af.tsq_counts,
            matches!(af.ends, Endpoints::Tcp { .. }) && !af.sender_done()
        );
        (src == af.src_addr && af.tsq_counts).then_some(af)
    }

    /// A host port started transmitting a packet: it has left the NIC queue.
    /// Linux `tcp_wfree` -> `tcp_tsq_handler`: the flow's bytes below TCP
    /// shrink, and a throttled flow may send again.
    #[inline]
    pub(crate) fn host_nic_dequeued(&mut self, now: SimTime, flow: FlowId, src: u32, size: u32) {
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
    pub(crate) fn tsq_offer(&mut self, now: SimTime, id: FlowId) {
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
            let host = af.rec.src;
            self.queue_at_host(now, host, &mut out);
        }
        self.tsq_out = out;
        if sent {
            // New data may have started the retransmission timer.
            self.arm_timers(id);
        }
    }

    pub(crate) fn host_receive(&mut self, now: SimTime, host: HostId, pkt_id: PktId) {
        // NOTE: the packet is read where it is, in the arena (not copied
        // out), and its slot freed once the endpoint has read it, before
        // what it sends is queued: that takes the same slot, as it did when
        // the packet was removed first (docs/performance.md, "Session 10").
        let pkt = self.arena.get(pkt_id);
        let id = pkt.flow;
        let Some(Some(af)) = self.active.get_mut(id as usize) else {
            // A straggler for a finished flow (e.g. a late duplicate): delivered, ignored.
            self.arena.free(pkt_id);
            self.counts.late_packets += 1;
            return;
        };
        let to_sender = pkt.ip.dst == af.src_addr;
        if to_sender && af.sender_done() {
            // The sender completed (its receiver lingers): as for a finished flow.
            self.arena.free(pkt_id);
            self.counts.late_packets += 1;
            return;
        }
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
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        // NOTE: TCP without measurement, the common case, stays this lean;
        // measured and UDP flows take the out-of-line path.
        let blocked = match (&mut af.ends, &af.meter) {
            (Endpoints::Tcp { tx, rx }, None) => {
                if to_sender {
                    if let Some(b) = budget {
                        tx.set_send_budget(b);
                    }
                    tx.on_packet(now, pkt, &mut out);
                    af.tsq_blocked = tx.is_budget_blocked();
                } else {
                    rx.on_packet(now, pkt, &mut out);
                }
                self.arena.free(pkt_id);
                af.tsq_blocked
            }
            _ => {
                let pkt = self.arena.remove(pkt_id);
                self.receive_measured_or_udp(now, &pkt, to_sender, budget, &mut out);
                true
            }
        };
        // Queueing at the NIC changes no flow's `tsq_blocked` (a TSQ
        // wake-up waits until it is done): a flow not blocked now would
        // not be offered budget (`tsq_offer` does nothing for it).
        if let Some(flow) = self.queue_at_host(now, host, &mut out) {
            if blocked || flow != id {
                self.tsq_offer(now, flow);
            }
        }
        self.out = out;
        self.after_flow_event(now, id);
    }

    /// `host_receive` for a UDP flow or a flow under measurement.
    #[inline(never)]
    fn receive_measured_or_udp(
        &mut self,
        now: SimTime,
        pkt: &Packet,
        to_sender: bool,
        budget: Option<u64>,
        out: &mut Vec<Packet>,
    ) {
        let id = pkt.flow;
        let Some(Some(af)) = self.active.get_mut(id as usize) else {
            return;
        };
        let meter = self.meter.as_deref_mut();
        match &mut af.ends {
            Endpoints::Tcp { tx, rx } => {
                if to_sender {
                    if let Some(b) = budget {
                        tx.set_send_budget(b);
                    }
                    tx.on_packet(now, pkt, out);
                    af.tsq_blocked = tx.is_budget_blocked();
                    if let (Some(m), Some(fm)) = (meter, af.meter.as_deref_mut()) {
                        let (n, last) = tx.rtt_samples();
                        if m.flow_stats && n != fm.rtt_seen {
                            fm.rtt_seen = n;
                            fm.rtt.record(last.ps());
                        }
                    }
                } else {
                    let before = rx.delivered_bytes();
                    rx.on_packet(now, pkt, out);
                    if let (Some(m), Some(fm)) = (meter, af.meter.as_deref_mut()) {
                        if pkt.tcp().is_some_and(|t| t.payload > 0) {
                            m.on_data(fm, now, pkt.sent_at);
                        }
                        m.on_goodput(fm, id, now, rx.delivered_bytes() - before);
                    }
                }
            }
            Endpoints::Udp { tx, rx, .. } => {
                if to_sender {
                    // Feedback (a switch's, the receiver's) for the reaction
                    // point; a go-back-N ACK / NAK is for the sender only.
                    let before = tx.rate();
                    tx.on_packet(now, pkt);
                    if tx.go_back_n() && pisanet_transport::rate::gbn::is_ack(pkt) {
                        return;
                    }
                    let c = &mut self.counts;
                    c.rate_feedback += 1;
                    if tx.rate() < before {
                        c.rate_cuts += 1;
                        c.first_rate_cut.get_or_insert(now);
                    }
                } else {
                    let before = rx.received_bytes();
                    let sent = out.len();
                    rx.on_packet(now, pkt, out);
                    // The notification point's CNPs (and go-back-N's ACKs /
                    // NAKs, which are not CNPs).
                    self.counts.cnps += if rx.go_back_n().is_some() {
                        out[sent..]
                            .iter()
                            .filter(|p| pisanet_transport::rate::dcqcn::is_cnp(p))
                            .count() as u64
                    } else {
                        (out.len() - sent) as u64
                    };
                    if let (Some(m), Some(fm)) = (meter, af.meter.as_deref_mut()) {
                        let got = rx.received_bytes() - before;
                        if got > 0 {
                            m.on_data(fm, now, pkt.sent_at);
                        }
                        m.on_goodput(fm, id, now, got);
                    }
                }
            }
        }
    }
}
