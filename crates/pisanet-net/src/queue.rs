//! An egress port's queues: drop-tail limited in bytes (and optionally in
//! packets, as ns-3's queue discs and many NICs count), ECN marking at a
//! threshold (DCTCP's K), up to 8 strict-priority queues, and an optional
//! switch-wide shared buffer with a dynamic threshold.
//!
//! Guarantees: a packet is either admitted (and later dequeued exactly once)
//! or handed back as dropped; byte and packet counts always equal the sum of
//! what is queued. The queue never looks at time, and holds packets by id
//! (the simulator's arena keeps the packets themselves, crate::arena).

use crate::arena::PktId;
use crate::packet::{Ecn, Packet};
use std::collections::VecDeque;

/// Maximum number of strict-priority queues per port.
pub const MAX_PRIORITIES: usize = 8;

/// A queued packet: its id in the [`PacketArena`](crate::arena::PacketArena)
/// and its wire size (what the queue's byte count needs when it leaves).
/// What the traffic manager keeps of its stay (`enq_timestamp`, ...) is
/// with the packet in the arena ([`TmMeta`](crate::arena::TmMeta)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    pub id: PktId,
    pub size: u32,
    /// The packet's `switch_made` (a transmission counts its bytes apart):
    /// with `size`, what the transmitter needs of a packet, so that a
    /// dequeue need not read the packet itself.
    pub made: bool,
}

pub use crate::arena::NO_PFC;

/// Static parameters of one egress port's queues.
#[derive(Clone, Copy, Debug)]
pub struct QueueConfig {
    /// Drop-tail limit of this port in bytes (u64::MAX for unbounded, as on a host NIC).
    pub buffer_bytes: u64,
    /// Drop-tail limit of this port in packets, all priorities together
    /// (`u32::MAX` for no packet limit, the default: Linux's switch-like
    /// qdiscs count bytes or packets, ns-3's queue discs count packets,
    /// ACKs included; `topology.buffer_pkts`, docs/model.md "Links and queues").
    pub buffer_packets: u32,
    /// Mark CE on ECT packets arriving to a queue holding more than this many bytes.
    pub ecn_threshold_bytes: Option<u64>,
    /// Mark CE on ECT packets arriving to a queue holding at least this
    /// many packets, all priorities together (`u32::MAX`: no packet
    /// threshold, the default; `topology.ecn_threshold_pkts`, docs/model.md
    /// "Links and queues").
    pub ecn_threshold_packets: u32,
    /// Number of strict-priority queues (1..=8). Packets with prio >= n go to the last.
    pub priorities: u8,
}

/// Per-port counters.
// NOTE: `repr(C)`, the counters only a mark or a drop updates first, then
// those every packet updates: in a `Port` (crates/pisanet/src/sim/port.rs)
// the first three share a cache line that a packet neither marked nor
// dropped does not touch, and the last three the line of the ECN byte
// threshold, the rate and the delay, which every enqueue and transmission
// reads (docs/performance.md, "Session 11: switch side").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct PortCounters {
    pub ecn_marks: u64,
    pub drops: u64,
    pub drop_bytes: u64,
    pub max_depth_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
}

/// A switch-wide shared buffer with the dynamic threshold of Choudhury and
/// Hahne: a port may queue up to `alpha * (total - used)` bytes.
#[derive(Clone, Copy, Debug)]
pub struct SharedBuffer {
    pub total_bytes: u64,
    pub used_bytes: u64,
    /// alpha as a ratio num/den (alpha = 1 is the common choice).
    pub alpha_num: u64,
    pub alpha_den: u64,
}

impl SharedBuffer {
    pub fn new(total_bytes: u64, alpha: f64) -> Self {
        let den = 1024;
        SharedBuffer {
            total_bytes,
            used_bytes: 0,
            alpha_num: (alpha * den as f64).round().max(1.0) as u64,
            alpha_den: den,
        }
    }

    fn admits(&self, queue_bytes: u64, size: u64) -> bool {
        let free = self.total_bytes.saturating_sub(self.used_bytes);
        size <= free && (queue_bytes + size) * self.alpha_den <= self.alpha_num * free
    }
}

/// Why an enqueue was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    PortBufferFull,
    SharedBufferFull,
}

/// The queues of one egress port.
// NOTE: `repr(C)` and the first priority's queue inline: an enqueue or a
// dequeue reads the first 64 bytes (the queue's ring header, the counts
// and the drop-tail limits), where the queues were a `Vec` of `VecDeque`s
// behind one more pointer (one more cache line per hop) and the limits an
// `Option` apart from the counts (docs/performance.md, "Session 9: per-hop
// path"). The next 64 bytes hold what only more priorities, a mark or a
// drop read (`rest`, the mark and drop counters: `_pad` puts the largest
// depth after them), and the last 32 what every enqueue or transmission
// updates (largest depth, transmit counters) and the ECN byte threshold,
// in the port's line of the rate and delay: an enqueue reads two lines of
// the queue, and a packet neither marked nor dropped never the second
// (docs/performance.md, "Session 11: switch side").
#[derive(Debug)]
#[repr(C)]
pub struct EgressQueue {
    /// Queue 0 (the only one with one priority).
    first: VecDeque<Queued>,
    bytes: u64,
    packets: u32,
    /// `QueueConfig::buffer_packets`.
    buffer_packets: u32,
    /// `QueueConfig::buffer_bytes`.
    buffer_bytes: u64,
    /// `QueueConfig::ecn_threshold_packets`.
    ecn_packets: u32,
    /// Priorities paused by PFC (bit i: queue i); dequeue skips them.
    paused: u8,
    /// Number of priority queues (1..=8).
    n: u8,
    /// Queues 1..n.
    rest: Box<[VecDeque<Queued>]>,
    _pad: [u64; 3],
    pub counters: PortCounters,
    /// `QueueConfig::ecn_threshold_bytes`, `u64::MAX` for none (no queue
    /// holds more than `u64::MAX` bytes, so `bytes > ecn_bytes` is then
    /// never true, as `None` never marks).
    ecn_bytes: u64,
}

impl EgressQueue {
    pub fn new(cfg: QueueConfig) -> Self {
        let n = (cfg.priorities as usize).clamp(1, MAX_PRIORITIES);
        EgressQueue {
            first: VecDeque::new(),
            bytes: 0,
            packets: 0,
            buffer_packets: cfg.buffer_packets,
            buffer_bytes: cfg.buffer_bytes,
            ecn_packets: cfg.ecn_threshold_packets,
            paused: 0,
            n: n as u8,
            rest: (1..n).map(|_| VecDeque::new()).collect(),
            _pad: [0; 3],
            counters: PortCounters::default(),
            ecn_bytes: cfg.ecn_threshold_bytes.unwrap_or(u64::MAX),
        }
    }

    /// The configuration this queue was built with (priorities clamped to
    /// 1..=8).
    pub fn config(&self) -> QueueConfig {
        QueueConfig {
            buffer_bytes: self.buffer_bytes,
            buffer_packets: self.buffer_packets,
            ecn_threshold_bytes: (self.ecn_bytes != u64::MAX).then_some(self.ecn_bytes),
            ecn_threshold_packets: self.ecn_packets,
            priorities: self.n,
        }
    }

    /// Queue `i` (`i < n`).
    #[inline(always)]
    fn q(&self, i: usize) -> Option<&VecDeque<Queued>> {
        if i == 0 {
            Some(&self.first)
        } else {
            self.rest.get(i - 1)
        }
    }

    #[inline(always)]
    fn q_mut(&mut self, i: usize) -> &mut VecDeque<Queued> {
        if i == 0 {
            &mut self.first
        } else {
            &mut self.rest[i - 1]
        }
    }

    /// Bytes queued (all priorities).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Packets queued (all priorities).
    pub fn packets(&self) -> u32 {
        self.packets
    }

    pub fn is_empty(&self) -> bool {
        self.packets == 0
    }

    /// Admits packet `id` (`pkt`, kept by the caller) or refuses it with
    /// the cause. On admission, marks `pkt` CE if the queue already holds
    /// more than the ECN threshold (DCTCP, RFC 8257 section 3.1: mark on the
    /// instantaneous queue at arrival) and returns its `enq_qdepth` (packets
    /// ahead of it in its priority queue). O(1).
    #[inline]
    pub fn enqueue(
        &mut self,
        id: PktId,
        pkt: &mut Packet,
        shared: Option<&mut SharedBuffer>,
    ) -> Result<u32, DropCause> {
        let size = pkt.size as u64;
        if self.bytes + size > self.buffer_bytes || self.packets >= self.buffer_packets {
            self.count_drop(size);
            return Err(DropCause::PortBufferFull);
        }
        if let Some(sb) = shared {
            if !sb.admits(self.bytes, size) {
                self.count_drop(size);
                return Err(DropCause::SharedBufferFull);
            }
            sb.used_bytes += size;
        }
        Ok(self.admit(id, pkt))
    }

    /// Marks (ECN) and queues an admitted packet; returns its `enq_qdepth`.
    #[inline]
    fn admit(&mut self, id: PktId, pkt: &mut Packet) -> u32 {
        let size = pkt.size;
        if (self.bytes > self.ecn_bytes || self.packets >= self.ecn_packets) && pkt.ip.ecn.is_ect()
        {
            pkt.ip.ecn = Ecn::Ce;
            self.counters.ecn_marks += 1;
        }
        let prio = self.queue_of(pkt.prio);
        let q = self.q_mut(prio);
        let depth = q.len() as u32;
        q.push_back(Queued {
            id,
            size,
            made: pkt.switch_made,
        });
        self.bytes += size as u64;
        self.packets += 1;
        self.counters.max_depth_bytes = self.counters.max_depth_bytes.max(self.bytes);
        depth
    }

    /// An empty queue's enqueue of `pkt` followed at once by its dequeue
    /// (an idle transmitter takes it): the same admission, ECN marking and
    /// counters as [`Self::enqueue`] then [`Self::dequeue`], without the
    /// ring. Its `enq_qdepth` is 0. The queue must be empty.
    #[inline]
    pub fn pass_through(
        &mut self,
        pkt: &mut Packet,
        shared: Option<&mut SharedBuffer>,
    ) -> Result<(), DropCause> {
        debug_assert!(self.is_empty() && self.bytes == 0);
        let size = pkt.size as u64;
        if size > self.buffer_bytes || self.buffer_packets == 0 {
            self.count_drop(size);
            return Err(DropCause::PortBufferFull);
        }
        // The shared buffer's bytes would go up and down again: only its
        // admission counts.
        if let Some(sb) = shared {
            if !sb.admits(0, size) {
                self.count_drop(size);
                return Err(DropCause::SharedBufferFull);
            }
        }
        // `admit` on an empty queue: 0 bytes (never above a byte
        // threshold) and 0 packets ahead.
        if self.ecn_packets == 0 && pkt.ip.ecn.is_ect() {
            pkt.ip.ecn = Ecn::Ce;
            self.counters.ecn_marks += 1;
        }
        self.counters.max_depth_bytes = self.counters.max_depth_bytes.max(size);
        Ok(())
    }

    /// What [`Self::pass_through`] counts of a packet of `size` bytes that
    /// it admits and does not mark (the caller knows: an empty queue, no
    /// shared buffer, `size` within the byte limit, packet limit and packet
    /// ECN threshold above 0): its largest depth. Reads and writes only the
    /// queue's last 32 bytes (see the note at [`EgressQueue`]).
    #[inline]
    pub fn count_passed(&mut self, size: u32) {
        self.counters.max_depth_bytes = self.counters.max_depth_bytes.max(size as u64);
    }

    /// Admits a packet of a lossless priority under PFC: the port's own
    /// limits and the shared buffer's dynamic threshold do not apply (the
    /// switch admits it by its ingress account, sim/pfc.rs); only the
    /// shared buffer's capacity does. ECN marking is as in [`Self::enqueue`].
    pub fn enqueue_lossless(
        &mut self,
        id: PktId,
        pkt: &mut Packet,
        shared: Option<&mut SharedBuffer>,
    ) -> Result<u32, DropCause> {
        let size = pkt.size as u64;
        if let Some(sb) = shared {
            if sb.used_bytes + size > sb.total_bytes {
                self.count_drop(size);
                return Err(DropCause::SharedBufferFull);
            }
            sb.used_bytes += size;
        }
        Ok(self.admit(id, pkt))
    }

    /// The queue index a packet of priority `prio` goes to.
    #[inline]
    pub fn queue_of(&self, prio: u8) -> usize {
        (prio as usize).min(self.n as usize - 1)
    }

    /// Number of priority queues.
    pub fn priorities(&self) -> usize {
        self.n as usize
    }

    /// The PFC pause mask (bit i: queue i does not send).
    pub fn paused(&self) -> u8 {
        self.paused
    }

    /// Sets the PFC pause mask.
    pub fn set_paused(&mut self, mask: u8) {
        self.paused = mask;
    }

    /// Gives every queued packet a new arena id (`f(old)`), in queue order
    /// (the parallel mode's merge moves packets between arenas).
    pub fn remap_ids(&mut self, mut f: impl FnMut(PktId) -> PktId) {
        for q in std::iter::once(&mut self.first).chain(self.rest.iter_mut()) {
            for x in q.iter_mut() {
                x.id = f(x.id);
            }
        }
    }

    /// Packets of queue `i`, head first.
    pub fn iter_queue(&self, i: usize) -> impl Iterator<Item = &Queued> {
        self.q(i).into_iter().flatten()
    }

    /// Packets in queue `i` (v1model `deq_qdepth` of a packet just dequeued from it).
    #[inline]
    pub fn queue_packets(&self, i: usize) -> u32 {
        self.q(i).map_or(0, |q| q.len() as u32)
    }

    /// Bytes in queue `i` (O(packets of it): for samples, not the hot path).
    pub fn queue_bytes(&self, i: usize) -> u64 {
        self.iter_queue(i).map(|q| q.size as u64).sum()
    }

    /// Whether a dequeue would find a packet (some unpaused queue holds one).
    pub fn has_sendable(&self) -> bool {
        (0..self.n as usize)
            .any(|i| self.paused & (1 << i) == 0 && self.q(i).is_some_and(|q| !q.is_empty()))
    }

    /// Counts a refused packet of `size` bytes.
    pub fn count_drop(&mut self, size: u64) {
        self.counters.drops += 1;
        self.counters.drop_bytes += size;
    }

    /// Removes the head of the highest-priority non-empty queue (strict
    /// priority). O(priorities).
    // NOTE: inline: with it out of line (it grew past what rustc inlines
    // across crates by itself) the demo ran 14% more instructions.
    #[inline]
    pub fn dequeue(&mut self, shared: Option<&mut SharedBuffer>) -> Option<Queued> {
        let q = if self.paused == 0 {
            match self.first.pop_front() {
                Some(q) => q,
                None => self.rest.iter_mut().find_map(|q| q.pop_front())?,
            }
        } else {
            self.pop_unpaused()?
        };
        let size = q.size as u64;
        self.bytes -= size;
        self.packets -= 1;
        if let Some(sb) = shared {
            sb.used_bytes -= size;
        }
        Some(q)
    }

    /// PFC: the head of the highest-priority queue not paused.
    #[cold]
    #[inline(never)]
    fn pop_unpaused(&mut self) -> Option<Queued> {
        let paused = self.paused;
        (0..self.n as usize)
            .find(|&i| paused & (1 << i) == 0 && self.q(i).is_some_and(|q| !q.is_empty()))
            .and_then(|i| self.q_mut(i).pop_front())
    }

    /// Empties the queues (link failure), returning what they held.
    pub fn drain(&mut self, mut shared: Option<&mut SharedBuffer>) -> Vec<Queued> {
        let mut out = Vec::with_capacity(self.packets as usize);
        self.paused = 0;
        while let Some(q) = self.dequeue(shared.as_deref_mut()) {
            out.push(q);
        }
        out
    }

    /// Counts a packet handed to the transmitter.
    pub fn count_tx(&mut self, size: u32) {
        self.counters.tx_packets += 1;
        self.counters.tx_bytes += size as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(size: u32, prio: u8, ecn: Ecn) -> Packet {
        let mut p = Packet {
            size,
            prio,
            ..Default::default()
        };
        p.ip.ecn = ecn;
        p
    }

    /// A queue with its own packet store (the arena's role in the
    /// simulator): ids index `pkts`; `depth[id]` is the `enq_qdepth` given.
    struct Tq {
        q: EgressQueue,
        pkts: Vec<Packet>,
        depth: Vec<u32>,
    }

    /// A dequeued packet with its `enq_qdepth`.
    struct Out {
        pkt: Packet,
        enq_qdepth: u32,
    }

    impl Tq {
        fn store(&mut self, p: Packet) -> PktId {
            self.pkts.push(p);
            self.depth.push(u32::MAX);
            self.pkts.len() as PktId - 1
        }

        fn enqueue(
            &mut self,
            p: Packet,
            shared: Option<&mut SharedBuffer>,
        ) -> Result<(), (Packet, DropCause)> {
            let id = self.store(p);
            match self.q.enqueue(id, &mut self.pkts[id as usize], shared) {
                Ok(d) => {
                    self.depth[id as usize] = d;
                    Ok(())
                }
                Err(e) => Err((self.pkts[id as usize].clone(), e)),
            }
        }

        fn enqueue_lossless(
            &mut self,
            p: Packet,
            shared: Option<&mut SharedBuffer>,
        ) -> Result<(), (Packet, DropCause)> {
            let id = self.store(p);
            match self
                .q
                .enqueue_lossless(id, &mut self.pkts[id as usize], shared)
            {
                Ok(d) => {
                    self.depth[id as usize] = d;
                    Ok(())
                }
                Err(e) => Err((self.pkts[id as usize].clone(), e)),
            }
        }

        fn dequeue(&mut self, shared: Option<&mut SharedBuffer>) -> Option<Out> {
            let e = self.q.dequeue(shared)?;
            let pkt = self.pkts[e.id as usize].clone();
            assert_eq!(e.size, pkt.size);
            Some(Out {
                pkt,
                enq_qdepth: self.depth[e.id as usize],
            })
        }
    }

    impl std::ops::Deref for Tq {
        type Target = EgressQueue;
        fn deref(&self) -> &EgressQueue {
            &self.q
        }
    }

    impl std::ops::DerefMut for Tq {
        fn deref_mut(&mut self) -> &mut EgressQueue {
            &mut self.q
        }
    }

    fn queue(cfg: QueueConfig) -> Tq {
        Tq {
            q: EgressQueue::new(cfg),
            pkts: Vec::new(),
            depth: Vec::new(),
        }
    }

    fn cfg(buffer: u64, k: Option<u64>, prios: u8) -> QueueConfig {
        QueueConfig {
            buffer_bytes: buffer,
            buffer_packets: u32::MAX,
            ecn_threshold_bytes: k,
            ecn_threshold_packets: u32::MAX,
            priorities: prios,
        }
    }

    #[test]
    fn drop_tail_counts_bytes() {
        let mut q = queue(cfg(3000, None, 1));
        assert!(q.enqueue(pkt(1500, 0, Ecn::NotEct), None).is_ok());
        assert!(q.enqueue(pkt(1500, 0, Ecn::NotEct), None).is_ok());
        let err = q.enqueue(pkt(64, 0, Ecn::NotEct), None).unwrap_err();
        assert_eq!(err.1, DropCause::PortBufferFull);
        assert_eq!(q.counters.drops, 1);
        assert_eq!(q.bytes(), 3000);
        assert_eq!(q.packets(), 2);
    }

    #[test]
    fn drop_tail_counts_packets_when_limited() {
        // 3 packets, whatever their size (64 B ACKs count as much as 1500 B data).
        let mut q = queue(QueueConfig {
            buffer_packets: 3,
            ..cfg(1_000_000, None, 2)
        });
        q.enqueue(pkt(64, 0, Ecn::NotEct), None).unwrap();
        q.enqueue(pkt(1500, 1, Ecn::NotEct), None).unwrap();
        q.enqueue(pkt(64, 1, Ecn::NotEct), None).unwrap();
        let err = q.enqueue(pkt(64, 0, Ecn::NotEct), None).unwrap_err();
        assert_eq!(err.1, DropCause::PortBufferFull);
        assert_eq!((q.packets(), q.bytes(), q.counters.drops), (3, 1628, 1));
        // One leaves, one more fits; the byte limit still applies as well.
        q.dequeue(None).unwrap();
        q.enqueue(pkt(64, 0, Ecn::NotEct), None).unwrap();
        let mut small = queue(QueueConfig {
            buffer_packets: 10,
            ..cfg(3000, None, 1)
        });
        small.enqueue(pkt(1500, 0, Ecn::NotEct), None).unwrap();
        small.enqueue(pkt(1500, 0, Ecn::NotEct), None).unwrap();
        assert!(small.enqueue(pkt(64, 0, Ecn::NotEct), None).is_err());
    }

    #[test]
    fn ecn_marks_only_ect_above_threshold() {
        let mut q = queue(cfg(100_000, Some(3000), 1));
        for _ in 0..2 {
            q.enqueue(pkt(1500, 0, Ecn::Ect0), None).unwrap();
        }
        // Queue holds exactly K: no mark yet.
        q.enqueue(pkt(1500, 0, Ecn::Ect0), None).unwrap();
        q.enqueue(pkt(1500, 0, Ecn::Ect0), None).unwrap();
        q.enqueue(pkt(1500, 0, Ecn::NotEct), None).unwrap();
        let ecns: Vec<Ecn> = std::iter::from_fn(|| q.dequeue(None))
            .map(|q| q.pkt.ip.ecn)
            .collect();
        assert_eq!(
            ecns,
            vec![Ecn::Ect0, Ecn::Ect0, Ecn::Ect0, Ecn::Ce, Ecn::NotEct]
        );
        assert_eq!(q.counters.ecn_marks, 1);
    }

    #[test]
    fn ecn_packet_threshold_counts_acks_as_packets() {
        // K = 3 packets: the fourth arrival (after two 64 B ACKs and a
        // segment, 1628 B) is marked although the bytes are far below any
        // byte threshold; with no packet threshold it is not.
        for (k, marked) in [(3, 1), (u32::MAX, 0)] {
            let mut q = queue(QueueConfig {
                ecn_threshold_packets: k,
                ..cfg(1_000_000, Some(100_000), 1)
            });
            q.enqueue(pkt(64, 0, Ecn::Ect0), None).unwrap();
            q.enqueue(pkt(64, 0, Ecn::Ect0), None).unwrap();
            q.enqueue(pkt(1500, 0, Ecn::Ect0), None).unwrap();
            q.enqueue(pkt(1500, 0, Ecn::Ect0), None).unwrap();
            q.enqueue(pkt(1500, 0, Ecn::NotEct), None).unwrap();
            assert_eq!(q.counters.ecn_marks, marked, "K = {k}");
        }
        // Without a byte threshold the packet threshold alone marks.
        let mut q = queue(QueueConfig {
            ecn_threshold_packets: 1,
            ..cfg(1_000_000, None, 1)
        });
        q.enqueue(pkt(64, 0, Ecn::Ect0), None).unwrap();
        q.enqueue(pkt(64, 0, Ecn::Ect0), None).unwrap();
        assert_eq!(q.counters.ecn_marks, 1);
    }

    #[test]
    fn strict_priority_serves_lower_index_first() {
        let mut q = queue(cfg(100_000, None, 3));
        q.enqueue(pkt(100, 2, Ecn::NotEct), None).unwrap();
        q.enqueue(pkt(200, 1, Ecn::NotEct), None).unwrap();
        q.enqueue(pkt(300, 0, Ecn::NotEct), None).unwrap();
        q.enqueue(pkt(400, 7, Ecn::NotEct), None).unwrap(); // clamps to the last queue
        let sizes: Vec<u32> = std::iter::from_fn(|| q.dequeue(None))
            .map(|q| q.pkt.size)
            .collect();
        assert_eq!(sizes, vec![300, 200, 100, 400]);
    }

    #[test]
    fn enq_qdepth_is_packets_ahead() {
        let mut q = queue(cfg(100_000, None, 1));
        for _ in 0..3 {
            q.enqueue(pkt(100, 0, Ecn::NotEct), None).unwrap();
        }
        let depths: Vec<u32> = std::iter::from_fn(|| q.dequeue(None))
            .map(|q| q.enq_qdepth)
            .collect();
        assert_eq!(depths, vec![0, 1, 2]);
    }

    #[test]
    fn enq_qdepth_counts_the_packets_own_priority_queue() {
        // Two priority queues: a priority-1 packet behind three priority-0
        // packets sees an empty queue of its own (Tofino's per-queue depth).
        let mut q = queue(cfg(100_000, None, 2));
        for _ in 0..3 {
            q.enqueue(pkt(100, 0, Ecn::NotEct), None).unwrap();
        }
        q.enqueue(pkt(100, 1, Ecn::NotEct), None).unwrap();
        q.enqueue(pkt(100, 1, Ecn::NotEct), None).unwrap();
        assert_eq!(q.queue_packets(0), 3);
        assert_eq!(q.queue_packets(1), 2);
        assert_eq!(q.queue_packets(7), 0);
        let depths: Vec<(u8, u32)> = std::iter::from_fn(|| q.dequeue(None))
            .map(|q| (q.pkt.prio, q.enq_qdepth))
            .collect();
        assert_eq!(depths, vec![(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]);
    }

    #[test]
    fn shared_buffer_dynamic_threshold() {
        // 10 000 B shared, alpha 1: one port may hold at most half when alone.
        let mut sb = SharedBuffer::new(10_000, 1.0);
        let mut a = queue(cfg(u64::MAX, None, 1));
        let mut b = queue(cfg(u64::MAX, None, 1));
        let mut admitted = 0;
        while a.enqueue(pkt(500, 0, Ecn::NotEct), Some(&mut sb)).is_ok() {
            admitted += 1;
        }
        // q + s <= free = 10000 - q  =>  q <= 5000 - 250 .. the 10th packet (q=4500+500=5000 <= 5500) fits.
        assert_eq!(a.bytes(), admitted * 500);
        assert!(a.bytes() >= 4_500 && a.bytes() <= 5_500, "{}", a.bytes());
        // Another port now gets less than the first did.
        let mut admitted_b = 0;
        while b.enqueue(pkt(500, 0, Ecn::NotEct), Some(&mut sb)).is_ok() {
            admitted_b += 1;
        }
        assert!(admitted_b < admitted);
        assert_eq!(sb.used_bytes, a.bytes() + b.bytes());
        a.drain(Some(&mut sb));
        assert_eq!(sb.used_bytes, b.bytes());
    }

    #[test]
    fn paused_priority_is_skipped_and_others_send() {
        let mut q = queue(cfg(100_000, None, 3));
        q.enqueue(pkt(100, 0, Ecn::NotEct), None).unwrap();
        q.enqueue(pkt(200, 1, Ecn::NotEct), None).unwrap();
        q.enqueue(pkt(300, 0, Ecn::NotEct), None).unwrap();
        q.set_paused(0b001);
        assert!(q.has_sendable());
        assert_eq!(q.dequeue(None).unwrap().pkt.size, 200);
        assert!(!q.has_sendable() && !q.is_empty());
        assert!(q.dequeue(None).is_none());
        assert_eq!(q.queue_bytes(0), 400);
        q.set_paused(0);
        let sizes: Vec<u32> = std::iter::from_fn(|| q.dequeue(None))
            .map(|q| q.pkt.size)
            .collect();
        assert_eq!(sizes, vec![100, 300]);
    }

    #[test]
    fn lossless_admission_ignores_port_limits_not_the_shared_capacity() {
        let mut sb = SharedBuffer::new(3_000, 1.0);
        let mut q = queue(cfg(1_000, None, 1));
        q.enqueue_lossless(pkt(1500, 0, Ecn::NotEct), Some(&mut sb))
            .unwrap();
        q.enqueue_lossless(pkt(1500, 0, Ecn::NotEct), Some(&mut sb))
            .unwrap();
        let e = q
            .enqueue_lossless(pkt(64, 0, Ecn::NotEct), Some(&mut sb))
            .unwrap_err();
        assert_eq!(e.1, DropCause::SharedBufferFull);
        assert_eq!(
            (q.bytes(), sb.used_bytes, q.counters.drops),
            (3000, 3000, 1)
        );
    }

    proptest::proptest! {
        /// `pass_through` on an empty queue is an enqueue followed at once
        /// by a dequeue: the same result, the same packet (ECN), the same
        /// counters, an empty queue after, the same shared-buffer bytes.
        #[test]
        fn pass_through_is_enqueue_then_dequeue(
            size in 64u32..3000,
            buffer in 0u64..4000,
            buffer_packets in 0u32..3,
            k_bytes in proptest::option::of(0u64..4000),
            k_packets in proptest::prop_oneof![proptest::strategy::Just(u32::MAX), 0u32..3],
            ecn in 0u8..4,
            prios in 1u8..4,
            prio in 0u8..4,
            shared in proptest::option::of((0u64..6000, 0u64..6000)),
            history in 0u64..5000,
        ) {
            let ecn = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce][ecn as usize];
            let c = QueueConfig {
                buffer_bytes: buffer,
                buffer_packets,
                ecn_threshold_bytes: k_bytes,
                ecn_threshold_packets: k_packets,
                priorities: prios,
            };
            let sb = shared.map(|(total, used)| SharedBuffer {
                used_bytes: used.min(total),
                ..SharedBuffer::new(total, 1.0)
            });
            let (mut a, mut b) = (EgressQueue::new(c), EgressQueue::new(c));
            // Earlier traffic left counters behind.
            for q in [&mut a, &mut b] {
                q.counters.max_depth_bytes = history;
                q.counters.tx_bytes = history;
            }
            let (mut sa, mut sb2) = (sb, sb);
            let mut pa = pkt(size, prio, ecn);
            let mut pb = pa.clone();
            let ra = a.enqueue(7, &mut pa, sa.as_mut()).map(|depth| {
                let q = a.dequeue(sa.as_mut()).expect("just queued");
                (depth, q.id, q.size, q.made)
            });
            let rb = b.pass_through(&mut pb, sb2.as_mut()).map(|()| (0, 7, size, pb.switch_made));
            proptest::prop_assert_eq!(ra, rb);
            proptest::prop_assert_eq!(pa, pb);
            proptest::prop_assert_eq!(a.counters, b.counters);
            proptest::prop_assert_eq!((a.bytes(), a.packets()), (b.bytes(), b.packets()));
            proptest::prop_assert!(b.is_empty());
            proptest::prop_assert_eq!(sa.map(|s| s.used_bytes), sb2.map(|s| s.used_bytes));
        }
    }
}
