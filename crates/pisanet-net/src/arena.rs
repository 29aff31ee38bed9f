//! Packets in flight, in one arena indexed by `u32` ([`PktId`]).
//!
//! Owns: every packet between its injection (a host's NIC queue, a switch's
//! emit) and its end (delivery, drop, consumption), with what the traffic
//! manager keeps of its stay in a queue ([`TmMeta`]). Egress queues and
//! wires hold 4-byte ids instead of moving 88-byte packets (and 128-byte
//! queue records) by value at every hop; a packet is written once when it
//! enters and read where it is used.
//!
//! Guarantees: an id names one live packet from [`PacketArena::insert`] to
//! [`PacketArena::remove`] or [`PacketArena::free`]; freed slots are reused
//! last-in first-out (the most recently touched memory first), so the arena
//! grows to the largest number of packets in flight at once and no further,
//! and nothing is allocated per packet once it has. Ids carry no meaning:
//! results never depend on which slot a packet got.

use crate::packet::Packet;
use pisanet_engine::SimTime;

/// Index of a packet in a [`PacketArena`].
pub type PktId = u32;

/// `TmMeta::pfc_in` of a packet no PFC account holds.
pub const NO_PFC: u32 = u32::MAX;

/// What the traffic manager keeps of a packet's stay in an egress queue:
/// what v1model's egress sees (`enq_timestamp`, `enq_qdepth`, the metadata
/// carried from ingress) and the PFC ingress account holding its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmMeta {
    /// v1model `enq_timestamp`.
    pub enq_time: SimTime,
    /// v1model `enq_qdepth`: packets ahead of this one in its priority
    /// queue on arrival (the port's depth when the port has one queue).
    pub enq_qdepth: u32,
    /// Priority flow control: the global ingress port whose (port,
    /// priority) account holds this packet's bytes, or [`NO_PFC`] (PFC off,
    /// a lossy priority, or a packet made inside the switch).
    pub pfc_in: u32,
    /// User metadata carried from ingress to egress.
    pub user_meta: [u64; 2],
    /// v1model `ingress_port` the packet came in on.
    pub ingress_port: u16,
    /// v1model `egress_rid` (replication id of a multicast copy).
    pub egress_rid: u16,
    /// v1model `instance_type` of this copy.
    pub instance_type: u8,
}

impl TmMeta {
    /// A packet queued at `now` with no metadata (a host's, a native
    /// switch's).
    #[inline]
    pub const fn plain(now: SimTime) -> TmMeta {
        TmMeta {
            enq_time: now,
            enq_qdepth: 0,
            pfc_in: NO_PFC,
            user_meta: [0; 2],
            ingress_port: 0,
            egress_rid: 0,
            instance_type: 0,
        }
    }
}

/// One packet and its queueing metadata (88 + 40 bytes: two cache lines).
// NOTE: aligned to a cache line, so that the packet's first 64 bytes (what
// a switch hop reads: `Packet` is `repr(C)` for it) are one line and the
// rest with `tm` the other. Session 7 measured the alignment alone (the
// packet's fields then in rustc's order, the route's key and the ports on
// different lines): 11% fewer simulated D1 misses, no change in CPU time
// (docs/performance.md, sessions 7 and 9).
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Slot {
    pub pkt: Packet,
    pub tm: TmMeta,
}

/// The packets in flight.
#[derive(Debug, Default)]
pub struct PacketArena {
    slots: Vec<Slot>,
    free: Vec<PktId>,
}

impl PacketArena {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `pkt` (its `tm` zeroed, queued at time zero) and returns its id.
    #[inline]
    pub fn insert(&mut self, pkt: Packet) -> PktId {
        self.insert_with(pkt, TmMeta::plain(SimTime::ZERO))
    }

    /// Stores `pkt` with its queueing metadata and returns its id.
    #[inline]
    pub fn insert_with(&mut self, pkt: Packet, tm: TmMeta) -> PktId {
        // NOTE: `pkt` and `tm` are stored on one path only (a new slot is
        // made empty first): when `grow` took them too, the caller's `tm`
        // was built on the stack with narrow stores and read back with
        // wide loads to be copied, a store-forwarding stall on every
        // packet a host sends (docs/performance.md, "Session 12: host
        // side").
        let id = match self.free.pop() {
            Some(id) => id,
            None => self.grow(),
        };
        let s = &mut self.slots[id as usize];
        // The slot's old packet was moved out or freed: its box is
        // already gone (`remove` and `free` leave `None`; a new slot holds
        // none), so there is nothing to drop. Forgetting it instead of
        // assigning over it spares the hot path a read of the slot's cold
        // line (the drop's test of the box) before the stores.
        debug_assert!(s.pkt.extra.is_none());
        std::mem::forget(std::mem::replace(&mut s.pkt, pkt));
        s.tm = tm;
        id
    }

    /// A new, empty slot (no box in it), counted as used.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) -> PktId {
        let id = PktId::try_from(self.slots.len()).expect("more than 2^32 packets in flight");
        self.slots.push(Slot {
            pkt: Packet::default(),
            tm: TmMeta::plain(SimTime::ZERO),
        });
        id
    }

    #[inline]
    pub fn get(&self, id: PktId) -> &Packet {
        &self.slots[id as usize].pkt
    }

    #[inline]
    pub fn get_mut(&mut self, id: PktId) -> &mut Packet {
        &mut self.slots[id as usize].pkt
    }

    #[inline]
    pub fn slot(&self, id: PktId) -> &Slot {
        &self.slots[id as usize]
    }

    #[inline]
    pub fn slot_mut(&mut self, id: PktId) -> &mut Slot {
        &mut self.slots[id as usize]
    }

    /// Takes the packet out (its slot becomes free).
    #[inline]
    pub fn remove(&mut self, id: PktId) -> Packet {
        let s = &mut self.slots[id as usize].pkt;
        // Every field but the box is `Copy`: move the box out, copy the rest.
        let extra = s.extra.take();
        let pkt = Packet { extra, ..*s };
        self.free.push(id);
        pkt
    }

    /// Ends the packet (its slot becomes free).
    #[inline]
    pub fn free(&mut self, id: PktId) {
        self.slots[id as usize].pkt.extra = None;
        self.free.push(id);
    }

    /// Packets stored now.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Slots allocated (the most packets stored at once so far).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{ExtHeader, PacketExtra};
    use proptest::prelude::*;

    fn pkt(uid: u64) -> Packet {
        Packet {
            uid,
            size: 64 + uid as u32,
            ..Default::default()
        }
    }

    #[test]
    fn ids_are_reused_last_in_first_out() {
        let mut a = PacketArena::new();
        let x = a.insert(pkt(1));
        let y = a.insert(pkt(2));
        assert_eq!(a.live(), 2);
        assert_eq!(a.remove(x).uid, 1);
        a.free(y);
        assert_eq!(a.live(), 0);
        // y was freed last: it is handed out first.
        assert_eq!(a.insert(pkt(3)), y);
        assert_eq!(a.insert(pkt(4)), x);
        assert_eq!(a.capacity(), 2);
        assert_eq!((a.get(y).uid, a.get(x).uid), (3, 4));
    }

    #[test]
    fn remove_keeps_the_custom_header_and_free_drops_it() {
        let mut a = PacketArena::new();
        let ext = ExtHeader {
            kind: 7,
            bytes: 4,
            fields: [1, 2, 3, 4],
        };
        let id = a.insert(Packet {
            extra: PacketExtra::of_ext(ext),
            ..pkt(9)
        });
        let back = a.remove(id);
        assert_eq!(back.ext(), Some(&ext));
        assert_eq!(back.uid, 9);
        let id = a.insert(back);
        a.slot_mut(id).tm.enq_qdepth = 5;
        assert_eq!(a.slot(id).tm.enq_qdepth, 5);
        a.free(id);
        let id2 = a.insert(pkt(10));
        assert_eq!(id2, id);
        assert!(a.get(id2).ext().is_none());
    }

    #[test]
    fn a_slot_is_two_cache_lines() {
        assert_eq!(std::mem::size_of::<Slot>(), 128);
        assert_eq!(std::mem::align_of::<Slot>(), 64);
    }

    proptest! {
        /// Any sequence of inserts and removals: every live id reads back
        /// the packet stored under it, and the arena never holds more
        /// slots than the most packets live at once.
        #[test]
        fn live_ids_read_back_their_packets(ops in prop::collection::vec(any::<(bool, u8)>(), 0..300)) {
            let mut a = PacketArena::new();
            let mut live: Vec<(PktId, u64)> = Vec::new();
            let mut peak = 0;
            for (i, (add, pick)) in ops.into_iter().enumerate() {
                if add || live.is_empty() {
                    let id = a.insert(pkt(i as u64));
                    prop_assert!(live.iter().all(|&(l, _)| l != id));
                    live.push((id, i as u64));
                } else {
                    let (id, uid) = live.swap_remove(pick as usize % live.len());
                    prop_assert_eq!(a.remove(id).uid, uid);
                }
                peak = peak.max(live.len());
                prop_assert_eq!(a.live(), live.len());
                prop_assert!(a.capacity() <= peak);
                for &(id, uid) in &live {
                    prop_assert_eq!(a.get(id).uid, uid);
                }
            }
        }
    }
}
