//! Ports and links: the egress queue, the transmitter, the wire (a FIFO
//! with constant propagation delay) and link failures. A port keeps at most
//! a `TxDone` and an `Arrive` pending (docs/architecture.md).

use super::*;

// NOTE: `repr(C)`, aligned to a cache line, in the order a hop reads
// it: the first line holds what an arrival reads of both ends (the wire,
// the peer, node and port number) and what every enqueue, dequeue and
// transmission checks first (transmitter, flags); the queue follows (its
// own layout: pisanet_net::queue::EgressQueue: a line for enqueue and
// dequeue, a line for more priorities, marks and drops only, and its
// largest depth, transmit counters and ECN byte threshold), then rate,
// delay and carried bytes in the transmit counters' line: an enqueue, a
// dequeue and a transmission read lines 0, 1 and 3; line 2 only a mark, a
// drop or more priorities, line 4 (switch-made bytes, shared buffer) only
// those features (docs/performance.md, "Session 9: per-hop path" and
// "Session 11: switch side"; a test checks the offsets). Five lines: the
// ports' first lines do not all fall in a quarter of the cache's sets, as
// with a 256-byte stride.
#[repr(C, align(64))]
pub struct Port {
    /// The transmitter is busy until then.
    pub busy_until: SimTime,
    /// Packets on the link, in order (and those lost to a failure).
    pub wire: Wire,
    pub peer: PortIdx,
    pub node: NodeId,
    /// The peer port's node and port number (copies of `ports[peer]`'s,
    /// so that an arrival does not read the peer port; the peer is a host
    /// when `peer_node` is below the topology's `n_hosts`).
    pub peer_node: NodeId,
    /// An idle port passes a packet of at most this many bytes straight to
    /// its transmitter without reading its queue (`Port::pass_limit_of`;
    /// 0: never), in the first line, where the port number was.
    pub pass_limit: u16,
    pub peer_port_no: PortNo,
    /// A `TxDone` is pending (always, while the queue is not empty).
    pub tx_event: bool,
    pub up: bool,
    pub is_host_port: bool,
    /// Packets leaving this port's queue pass the switch's egress control
    /// (a PISA switch whose program has one).
    pub egress_pass: bool,
    pub queue: EgressQueue,
    pub rate: BitRate,
    pub delay: SimTime,
    /// Bytes put on the wire while the link was up (reached the peer or are on their way).
    pub carried_bytes: u64,
    /// `rate.ps_per_byte()`: a packet's serialization time without a
    /// division (0 if the rate does not divide 8e12 ps exactly).
    pub ps_per_byte: u64,
    /// Bytes of switch-made packets (probes, clones) transmitted.
    pub made_tx_bytes: u64,
    /// Index into `World::shared` of the switch's shared buffer, if any.
    pub shared: Option<u32>,
    pub port_no: PortNo,
}

impl Port {
    /// What `pass_limit` is for this port: the largest packet (at most
    /// 65535 bytes) that an empty queue of it admits and does not mark, and
    /// hands at once to an idle transmitter with nothing else to do: no
    /// egress pass, no shared buffer (whose admission depends on the
    /// switch), a packet limit and a packet ECN threshold above 0 (the byte
    /// threshold never marks at an empty queue: `bytes > threshold` is
    /// false for 0 bytes). 0 when any of these does not hold. Set once the
    /// port's queue, shared buffer and egress pass are (`World::new`).
    pub fn pass_limit_of(&self) -> u16 {
        let cfg = self.queue.config();
        if self.egress_pass
            || self.shared.is_some()
            || cfg.buffer_packets == 0
            || cfg.ecn_threshold_packets == 0
        {
            return 0;
        }
        cfg.buffer_bytes.min(u16::MAX as u64) as u16
    }
}

/// The packets on a link, in order of arrival: the first one's arena id
/// inline (in the port's first line, so that a wire with one packet, the
/// common case, is handled without reading any other memory), the others'
/// arrival times and ids in a ring. The first packet's arrival time is not
/// kept: its `Arrive` event carries it.
#[repr(C)]
#[derive(Default)]
pub struct Wire {
    /// Packets after the first (arrival time, arena id), from `start`;
    /// the capacity is zero or a power of two.
    ring: Box<[(SimTime, PktId)]>,
    start: u32,
    /// Packets on the wire, the first included.
    len: u32,
    /// The first packet's arena id (when `len > 0`).
    head: PktId,
    /// The first `lost` packets were on the link when it failed: they are
    /// dropped when they would have arrived.
    pub lost: u32,
}

impl Wire {
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds packet `id`, arriving at `at` (not before the last one).
    #[inline]
    pub fn push_back(&mut self, (at, id): (SimTime, PktId)) {
        if self.len == 0 {
            self.head = id;
        } else {
            let behind = self.len - 1;
            if behind as usize == self.ring.len() {
                self.grow();
            }
            let mask = self.ring.len() as u32 - 1;
            self.ring[((self.start + behind) & mask) as usize] = (at, id);
        }
        self.len += 1;
    }

    /// Takes the first packet: its id and the next one's arrival time.
    #[inline]
    pub fn pop_front(&mut self) -> Option<(PktId, Option<SimTime>)> {
        if self.len == 0 {
            return None;
        }
        let id = self.head;
        self.len -= 1;
        if self.len == 0 {
            return Some((id, None));
        }
        let (at, next) = self.ring[self.start as usize];
        // A ring left empty starts again at its first entry: the wires
        // that hold a few packets at a time (most) reuse one cache line of
        // their ring instead of walking all of it (docs/performance.md,
        // "Session 12: switch side"). So `start` is 0 whenever `len <= 1`.
        self.start = if self.len == 1 {
            0
        } else {
            (self.start + 1) & (self.ring.len() as u32 - 1)
        };
        self.head = next;
        Some((id, Some(at)))
    }

    #[cold]
    fn grow(&mut self) {
        let cap = self.ring.len();
        let mut ring = vec![(SimTime::ZERO, 0); (cap * 2).max(4)].into_boxed_slice();
        for (i, e) in ring.iter_mut().enumerate().take(cap) {
            *e = self.ring[(self.start as usize + i) & (cap - 1)];
        }
        self.ring = ring;
        self.start = 0;
    }

    /// Replaces every packet's id by `f(id)`.
    pub fn remap_ids(&mut self, mut f: impl FnMut(PktId) -> PktId) {
        if self.len == 0 {
            return;
        }
        self.head = f(self.head);
        let mask = self.ring.len() as u32 - 1;
        for i in 0..self.len - 1 {
            let e = &mut self.ring[((self.start + i) & mask) as usize];
            e.1 = f(e.1);
        }
    }

    /// Moves `other`'s packets here; this wire must be empty (the parallel
    /// merge: a port's wire is filled in one partition only).
    pub fn append(&mut self, other: &mut Wire) {
        assert!(self.is_empty(), "append to a wire with packets on it");
        std::mem::swap(self, other);
    }
}

impl World {
    /// Packets marked CE by the queues so far: the sum of the ports' own
    /// counts (each port's queue counts its marks; a run's total is not
    /// counted again per enqueue, docs/performance.md, "Session 12: switch
    /// side"). In parallel mode, after the merge, each port is its own
    /// partition's, the only one that queued at it.
    pub fn ecn_marked(&self) -> u64 {
        self.ports.iter().map(|p| p.queue.counters.ecn_marks).sum()
    }

    /// Queues `pkt` at egress port `p` and starts the transmitter if idle.
    pub(crate) fn enqueue(&mut self, now: SimTime, p: PortIdx, pkt: Packet) {
        let id = self.arena.insert_with(pkt, TmMeta::plain(now));
        self.enqueue_queued(now, p, id);
    }

    /// Queues packet `id` of the arena (its `TmMeta` set by the caller) at
    /// egress port `p`.
    #[inline]
    pub(crate) fn enqueue_queued(&mut self, now: SimTime, p: PortIdx, id: PktId) {
        if self.tap.is_some() {
            return crate::capture::enqueue_tapped(self, now, p, id);
        }
        self.enqueue_untapped(now, p, id)
    }

    #[inline]
    pub(crate) fn enqueue_untapped(&mut self, now: SimTime, p: PortIdx, id: PktId) {
        if self.pfc.is_some() && !self.ports[p as usize].is_host_port {
            return self.pfc_enqueue(now, p, id);
        }
        self.enqueue_plain(now, p, id)
    }

    /// Queues at port `p` by its own limits (drop-tail, shared buffer).
    #[inline]
    pub(crate) fn enqueue_plain(&mut self, now: SimTime, p: PortIdx, id: PktId) {
        let port = &mut self.ports[p as usize];
        if !port.tx_event && port.busy_until <= now && self.pfc.is_none() {
            // An idle transmitter. Without PFC its queue is empty (a queue
            // that holds a packet has its TxDone pending: `transmit_sized`,
            // `start_tx`), so a packet within `pass_limit` is admitted and
            // not marked: what `pass_through` below does for it, without
            // reading the queue's line (docs/performance.md, "Session 12:
            // switch side").
            let slot = self.arena.slot(id);
            let (size, made) = (slot.pkt.size, slot.pkt.switch_made);
            if size <= port.pass_limit as u32 {
                debug_assert!(port.queue.is_empty());
                port.queue.count_passed(size);
                return self.send_dequeued(now, p, id, size, made, true);
            }
        }
        // Without shared buffers (the default) the port's index is not read
        // (it is on a line of the port that a queued packet does not need).
        let shared = if self.shared.is_empty() {
            None
        } else {
            port.shared.map(|i| &mut self.shared[i as usize])
        };
        let slot = self.arena.slot_mut(id);
        // (A mark is counted by the queue alone: `World::ecn_marked`.)
        if port.queue.is_empty()
            && !port.tx_event
            && port.busy_until <= now
            && !port.egress_pass
            && self.pfc.is_none()
        {
            // An idle port with nothing queued (most hops): what enqueue
            // and `start_tx` would do (admission, ECN, counters; the same
            // packet dequeued at once, no egress pass, no PFC), without
            // the queue's ring.
            return match port.queue.pass_through(&mut slot.pkt, shared) {
                Ok(()) => {
                    // (`enq_qdepth` is read only by an egress pass, which
                    // this port has not: not written, see `tm_read`.)
                    let (size, made) = (slot.pkt.size, slot.pkt.switch_made);
                    self.send_dequeued(now, p, id, size, made, true);
                }
                Err(_) => self.lose_id(id),
            };
        }
        match port.queue.enqueue(id, &mut slot.pkt, shared) {
            Ok(depth) => {
                if port.egress_pass {
                    // Read only by the egress pass (see `tm_read`).
                    slot.tm.enq_qdepth = depth;
                }
                if port.tx_event {
                    // The pending TxDone will serve it.
                } else if port.busy_until <= now {
                    self.start_tx(now, p);
                } else {
                    port.tx_event = true;
                    self.q.schedule(port.busy_until, Ev::TxDone(p));
                }
            }
            Err(_) => self.lose_id(id),
        }
    }

    /// Starts transmitting the next packet of port `p`, after the switch's
    /// egress pipeline (v1model: egress runs when the packet leaves the queue).
    pub(crate) fn start_tx(&mut self, now: SimTime, p: PortIdx) {
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
            if self.pfc.is_some() && self.pfc_tx_ctrl(now, p) {
                // A PAUSE frame goes before any data (sim/pfc.rs).
                return;
            }
            let port = &mut self.ports[p as usize];
            let shared = if self.shared.is_empty() {
                None
            } else {
                port.shared.map(|i| &mut self.shared[i as usize])
            };
            let Some(q) = port.queue.dequeue(shared) else {
                return;
            };
            let id = q.id;
            // PFC: the ingress account is credited once the packet is
            // handled. Without PFC no account holds a packet (`pfc_in` is
            // `NO_PFC`), and a plain port's dequeue does not read the
            // packet at all: its size and `switch_made` are in `q`, and its
            // slot has gone cold while it waited (the next read, at the
            // peer, pays for it once).
            let credit = if self.pfc.is_some() {
                let slot = self.arena.slot(id);
                (slot.tm.pfc_in, slot.pkt.prio, q.size)
            } else {
                (pisanet_net::queue::NO_PFC, 0, q.size)
            };
            let id = if !port.egress_pass {
                id
            } else {
                let slot = self.arena.slot(id);
                let Forwarding::Pisa(switches) = &mut self.fwd else {
                    unreachable!("only PISA switches have egress passes");
                };
                let sw = port.node - self.topo.n_hosts;
                let tm = slot.tm;
                let deq = DeqInfo {
                    enq_timestamp: tm.enq_time,
                    enq_qdepth: tm.enq_qdepth,
                    deq_qdepth: port.queue.queue_packets(port.queue.queue_of(slot.pkt.prio)),
                    deq_timedelta: now.saturating_sub(tm.enq_time),
                    meta: QueueMeta {
                        user: tm.user_meta,
                        ingress_port: tm.ingress_port,
                        instance_type: InstanceType::from_u8(tm.instance_type),
                        egress_rid: tm.egress_rid,
                    },
                };
                let port_no = port.port_no;
                let mut emits = std::mem::take(&mut self.emits);
                emits.clear();
                let pkt = self.arena.remove(id);
                switches[sw as usize].egress(now, port_no, pkt, deq, &mut emits);
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
                        let id = self.arena.insert_with(pkt, tm);
                        self.transmit(now, p, id);
                        self.apply_egress_emits(now, sw, &mut emits);
                        self.emits = emits;
                        self.arm_switch(sw);
                        if credit.0 != pisanet_net::queue::NO_PFC {
                            self.pfc_dequeued(now, p, credit);
                        }
                        return;
                    }
                    None => {
                        // Egress dropped or consumed it: emit the rest, try the next packet.
                        self.apply_egress_emits(now, sw, &mut emits);
                        self.emits = emits;
                        self.arm_switch(sw);
                        if credit.0 != pisanet_net::queue::NO_PFC {
                            self.pfc_dequeued(now, p, credit);
                        }
                        continue;
                    }
                }
            };
            self.send_dequeued(now, p, id, q.size, q.made, false);
            if credit.0 != pisanet_net::queue::NO_PFC {
                self.pfc_dequeued(now, p, credit);
            }
            return;
        }
    }

    /// Transmits packet `id` (`size` bytes, `made` by a switch), just
    /// dequeued from port `p` with no egress pass, and tells TSQ if it
    /// left a host's NIC. `empty`: the caller knows that the queue is
    /// empty (a packet passed straight through it).
    #[inline(always)]
    fn send_dequeued(
        &mut self,
        now: SimTime,
        p: PortIdx,
        id: PktId,
        size: u32,
        made: bool,
        empty: bool,
    ) {
        // TSQ: a host's packet leaves its NIC queue (flow, source, size).
        let from_host =
            (self.tsq_bytes.is_some() && self.ports[p as usize].is_host_port).then(|| {
                let pkt = self.arena.get(id);
                (pkt.flow, pkt.ip.src, pkt.size)
            });
        if self.tap.is_some() {
            crate::capture::transmit_tapped(self, now, p, id);
        } else {
            self.transmit_after(now, p, id, size, made, empty);
        }
        if let Some((flow, src, size)) = from_host {
            self.host_nic_dequeued(now, flow, src, size);
        }
    }

    /// Puts packet `id` on port `p`'s wire: busy for its serialization time.
    #[inline]
    pub(crate) fn transmit(&mut self, now: SimTime, p: PortIdx, id: PktId) {
        if self.tap.is_some() {
            return crate::capture::transmit_tapped(self, now, p, id);
        }
        self.transmit_untapped(now, p, id)
    }

    #[inline]
    pub(crate) fn transmit_untapped(&mut self, now: SimTime, p: PortIdx, id: PktId) {
        let pkt = self.arena.get(id);
        let (size, switch_made) = (pkt.size, pkt.switch_made);
        self.transmit_sized(now, p, id, size, switch_made)
    }

    /// `transmit_untapped` of packet `id` of `size` bytes (`switch_made`:
    /// made by a switch), which the caller knows.
    // NOTE: inline(always): out of line its register saves cost 17
    // instructions a hop (docs/performance.md, session 9).
    #[inline(always)]
    pub(crate) fn transmit_sized(
        &mut self,
        now: SimTime,
        p: PortIdx,
        id: PktId,
        size: u32,
        switch_made: bool,
    ) {
        self.transmit_after(now, p, id, size, switch_made, false)
    }

    /// [`Self::transmit_sized`]; `empty`: the caller knows that the
    /// port's queue is empty (a packet passed straight through it), and
    /// its line is not read to find out (docs/performance.md, "Session
    /// 12: switch side").
    #[inline(always)]
    fn transmit_after(
        &mut self,
        now: SimTime,
        p: PortIdx,
        id: PktId,
        size: u32,
        switch_made: bool,
        empty: bool,
    ) {
        let port = &mut self.ports[p as usize];
        port.queue.count_tx(size);
        let done = now + port.rate.tx_time_by(size as u64, port.ps_per_byte);
        port.busy_until = done;
        debug_assert!(!empty || port.queue.is_empty());
        if !empty && !port.queue.is_empty() && !port.tx_event {
            port.tx_event = true;
            self.q.schedule(done, Ev::TxDone(p));
        }
        if switch_made {
            port.made_tx_bytes += size as u64;
        }
        if port.up {
            port.carried_bytes += size as u64;
            let arrive = done + port.delay;
            if let Some(part) = self.part.as_deref_mut() {
                if part.remote_port[p as usize] {
                    // Parallel mode: the peer is in another partition, which
                    // gets it at the end of the window (sim/parallel.rs).
                    // Its slot moves with it (sim/parallel.rs `exchange`).
                    let tm = self.arena.slot(id).tm;
                    let pkt = self.arena.remove(id);
                    part.send(arrive, p, pkt, tm);
                    return;
                }
            }
            if port.wire.is_empty() {
                self.q.schedule(arrive, Ev::Arrive(p));
            }
            port.wire.push_back((arrive, id));
        } else {
            // A failed link drops what it carries.
            self.lose_id(id);
        }
    }

    pub(crate) fn on_tx_done(&mut self, now: SimTime, p: PortIdx) {
        self.ports[p as usize].tx_event = false;
        self.start_tx(now, p);
    }

    pub(crate) fn on_arrive(&mut self, now: SimTime, p: PortIdx) {
        let port = &mut self.ports[p as usize];
        let Some((id, next)) = port.wire.pop_front() else {
            return;
        };
        // The peer's node and port number are copies in this port (its
        // first line): the peer port itself is not read.
        let (peer, node, in_port) = (port.peer, port.peer_node, port.peer_port_no);
        if let Some(next) = next {
            self.q.schedule(next, Ev::Arrive(p));
        }
        if port.wire.lost > 0 {
            // A failed link drops what it carries.
            port.wire.lost -= 1;
            self.lose_id(id);
            return;
        }
        self.counts.packet_hops += 1;
        if let Some((p_loss, rng)) = &mut self.loss {
            // `topology.link_loss_per_link`: the direction's own stream.
            let rng = self.loss_per_link.get_mut(p as usize).unwrap_or(rng);
            if rng.gen::<f64>() < *p_loss {
                self.lose_id(id);
                return;
            }
        }
        if self.pfc.is_some() && is_pause(self.arena.get(id)) {
            // A MAC control frame: consumed by the port it reaches.
            let pkt = self.arena.remove(id);
            return self.pfc_receive(now, peer, pkt);
        }
        if node < self.topo.n_hosts {
            self.counts.delivered += 1;
            self.host_receive(now, node, id);
        } else {
            // PFC: what this arrival queues is charged to (peer, priority)
            // (a plain store, so the loop does not branch on PFC here).
            self.pfc_in = peer;
            self.switch_receive(now, node, in_port, id);
        }
    }

    pub(crate) fn on_link_event(&mut self, now: SimTime, i: u32) {
        let (up, ends) = {
            let e = &self.link_events[i as usize];
            (e.up, e.ports)
        };
        for p in ends {
            if !up {
                let wire = &mut self.ports[p as usize].wire;
                wire.lost = wire.len() as u32;
            }
            self.set_port_up(now, p, up);
        }
    }

    /// A port goes up or down; a switch's program is told (its
    /// `port_status`) and its timers re-armed. What the wire carries is the
    /// caller's (single-thread and parallel modes count it differently).
    pub(crate) fn set_port_up(&mut self, now: SimTime, p: PortIdx, up: bool) {
        let port = &mut self.ports[p as usize];
        port.up = up;
        let (node, port_no) = (port.node, port.port_no);
        if !self.topo.is_host(node) {
            let sw = node - self.topo.n_hosts;
            if let Forwarding::Pisa(switches) = &mut self.fwd {
                switches[sw as usize].port_status(now, port_no, up);
                self.arm_switch(sw);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// A wire gives back what was put on it, in order, with the next
    /// packet's arrival time, across ring growth and wrap-around (against
    /// a `VecDeque`).
    #[test]
    fn a_wire_is_a_fifo() {
        let mut wire = Wire::default();
        let mut model: VecDeque<(SimTime, PktId)> = VecDeque::new();
        let mut t = 0u64;
        // Pushes and pops in bursts of 0..9 (a fixed pseudo-random pattern).
        let mut x = 12345u32;
        for _ in 0..2000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let (push, pop) = ((x >> 8) % 9, (x >> 16) % 9);
            for _ in 0..push {
                t += 1;
                let e = (SimTime(t), (t * 7) as PktId);
                wire.push_back(e);
                model.push_back(e);
            }
            for _ in 0..pop {
                let got = wire.pop_front();
                let want = model
                    .pop_front()
                    .map(|(_, id)| (id, model.front().map(|e| e.0)));
                assert_eq!(got, want);
            }
            assert_eq!(wire.len(), model.len());
        }
        wire.remap_ids(|id| id + 1);
        let mut other = Wire::default();
        other.append(&mut wire);
        assert!(wire.is_empty());
        for (_, id) in model.iter_mut() {
            *id += 1;
        }
        while let Some(got) = other.pop_front() {
            let want = model
                .pop_front()
                .map(|(_, id)| (id, model.front().map(|e| e.0)));
            assert_eq!(Some(got), want);
        }
        assert!(model.is_empty());
    }

    /// The cache lines of a port (see the note at `Port`).
    #[test]
    fn a_port_reads_by_cache_line() {
        let line = |off: usize| off / 64;
        assert_eq!(std::mem::size_of::<Port>(), 320);
        for off in [
            offset_of!(Port, busy_until),
            offset_of!(Port, wire) + std::mem::size_of::<Wire>() - 1,
            offset_of!(Port, peer),
            offset_of!(Port, node),
            offset_of!(Port, peer_node),
            offset_of!(Port, pass_limit),
            offset_of!(Port, peer_port_no),
            offset_of!(Port, egress_pass),
        ] {
            assert_eq!(line(off), 0, "{off}");
        }
        assert_eq!(offset_of!(Port, queue), 64);
        let q = std::mem::size_of::<EgressQueue>();
        // The queue's largest depth, transmit counters and ECN byte
        // threshold (its last 32 bytes), the rate, delay and carried bytes
        // share the fourth line, which starts with the largest depth.
        let max_depth = offset_of!(Port, queue) + q - 32;
        assert_eq!(max_depth, 192);
        for off in [
            offset_of!(Port, rate),
            offset_of!(Port, delay),
            offset_of!(Port, carried_bytes),
            offset_of!(Port, ps_per_byte) + 7,
        ] {
            assert_eq!(line(off), 3, "{off}");
        }
        assert_eq!(line(offset_of!(Port, made_tx_bytes)), 4);
        assert_eq!(line(offset_of!(Port, port_no)), 4);
    }
}
