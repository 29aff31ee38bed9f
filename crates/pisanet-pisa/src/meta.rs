//! Standard metadata as in v1model (p4c `p4include/v1model.p4`, `struct
//! standard_metadata_t`), plus the user metadata a program carries from
//! ingress to egress.
//!
//! Names are v1model's, literally. Two deliberate differences:
//! - timestamps are [`SimTime`] (picoseconds), not bmv2's 48-bit microseconds;
//!   a program that stores one in a register masks it to the register width;
//! - `egress_spec` starts as [`DROP_PORT`], not bmv2's 0: a program that forgets
//!   to forward drops the packet instead of sending it out of port 0.
//!
//! The v1model primitives that only *request* something of the traffic manager
//! (`mark_to_drop`, `clone`, `resubmit`, `recirculate`) are methods here; the
//! switch acts on them when the pass ends, in bmv2's order (see `switch`).

use pisanet_engine::SimTime;
use pisanet_net::PortNo;
use serde::{Deserialize, Serialize};

/// `egress_spec` value that drops the packet (bmv2's default drop port, 511).
pub const DROP_PORT: PortNo = 511;
/// `egress_spec` value that sends the packet to the switch CPU (packet-in).
pub const CPU_PORT: PortNo = 510;
/// `ingress_port` of a recirculated packet.
pub const RECIRC_PORT: PortNo = 509;
/// `ingress_port` of a packet made by the packet generator (Tofino: port 68).
pub const PKTGEN_PORT: PortNo = 508;

/// Words of user metadata carried from ingress to egress (and kept across
/// resubmission, recirculation and cloning, as v1model's preserved field lists).
pub const USER_META_WORDS: usize = 2;
/// The user metadata struct of a program, as bit fields packed into words.
pub type UserMeta = [u64; USER_META_WORDS];

/// v1model `instance_type` (bmv2 `PKT_INSTANCE_TYPE_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum InstanceType {
    #[default]
    Normal = 0,
    IngressClone = 1,
    EgressClone = 2,
    Coalesced = 3,
    Recirculated = 4,
    Replication = 5,
    Resubmit = 6,
}

impl InstanceType {
    /// The inverse of `as u8` (unknown values read as `Normal`), for the
    /// traffic manager, which stores the type as a byte.
    pub fn from_u8(v: u8) -> InstanceType {
        match v {
            1 => InstanceType::IngressClone,
            2 => InstanceType::EgressClone,
            3 => InstanceType::Coalesced,
            4 => InstanceType::Recirculated,
            5 => InstanceType::Replication,
            6 => InstanceType::Resubmit,
            _ => InstanceType::Normal,
        }
    }
}

/// v1model `CloneType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloneType {
    /// Ingress to egress: a copy of the packet as it entered ingress.
    I2E,
    /// Egress to egress: a copy of the packet as it leaves egress.
    E2E,
}

/// Which half of the pipeline a pass runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Gress {
    Ingress,
    Egress,
}

/// v1model `standard_metadata_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StandardMetadata {
    pub ingress_port: PortNo,
    /// Written by ingress: the port to queue at (or [`DROP_PORT`], [`CPU_PORT`]).
    pub egress_spec: PortNo,
    /// Read-only in egress: the port the packet leaves on.
    pub egress_port: PortNo,
    pub instance_type: InstanceType,
    /// Bytes on the wire.
    pub packet_length: u32,
    pub ingress_global_timestamp: SimTime,
    pub egress_global_timestamp: SimTime,
    pub enq_timestamp: SimTime,
    /// Queue depth in packets when the packet was enqueued (bmv2 counts packets).
    pub enq_qdepth: u32,
    pub deq_timedelta: SimTime,
    /// Queue depth in packets when the packet was dequeued.
    pub deq_qdepth: u32,
    /// Multicast group to replicate to (0: none).
    pub mcast_grp: u16,
    /// Replication id of this copy (set by the PRE).
    pub egress_rid: u16,
    /// What the pass asked for beyond a port: `REQ_*` bits (one byte, so
    /// that the common "nothing" is one compare).
    pub(crate) requests: u8,
    /// The clone asked for, if `REQ_CLONE` is set.
    pub(crate) clone_type: CloneType,
    pub(crate) clone_session: u16,
}

/// `StandardMetadata::requests` bits.
pub(crate) const REQ_CLONE: u8 = 1;
pub(crate) const REQ_RESUBMIT: u8 = 2;
pub(crate) const REQ_RECIRCULATE: u8 = 4;
pub(crate) const REQ_TERMINATE: u8 = 8;

impl StandardMetadata {
    /// Nothing asked of the packet but a port (which may still be a drop,
    /// the CPU or out of range): no clone, resubmission, recirculation,
    /// termination or multicast.
    #[inline(always)]
    pub(crate) fn is_plain_unicast(&self) -> bool {
        self.requests == 0 && self.mcast_grp == 0
    }

    /// The clone asked for in this pass, if any.
    #[inline]
    pub(crate) fn clone_request(&self) -> Option<(CloneType, u16)> {
        (self.requests & REQ_CLONE != 0).then_some((self.clone_type, self.clone_session))
    }

    /// Whether the pass called `resubmit`.
    #[inline]
    pub(crate) fn resubmit_requested(&self) -> bool {
        self.requests & REQ_RESUBMIT != 0
    }

    /// Whether the pass called `recirculate`.
    #[inline]
    pub(crate) fn recirculate_requested(&self) -> bool {
        self.requests & REQ_RECIRCULATE != 0
    }

    /// Whether the pass called `terminate`.
    #[inline]
    pub(crate) fn terminate_requested(&self) -> bool {
        self.requests & REQ_TERMINATE != 0
    }

    pub(crate) fn for_ingress(
        ingress_port: PortNo,
        packet_length: u32,
        now: SimTime,
        instance_type: InstanceType,
    ) -> Self {
        StandardMetadata {
            ingress_port,
            egress_spec: DROP_PORT,
            egress_port: DROP_PORT,
            instance_type,
            packet_length,
            ingress_global_timestamp: now,
            egress_global_timestamp: SimTime::ZERO,
            enq_timestamp: SimTime::ZERO,
            enq_qdepth: 0,
            deq_timedelta: SimTime::ZERO,
            deq_qdepth: 0,
            mcast_grp: 0,
            egress_rid: 0,
            requests: 0,
            clone_type: CloneType::I2E,
            clone_session: 0,
        }
    }

    /// v1model `mark_to_drop(standard_metadata)`: drop at the end of this pass.
    pub fn mark_to_drop(&mut self) {
        self.egress_spec = DROP_PORT;
        self.mcast_grp = 0;
    }

    /// Sends the packet to the switch CPU (ingress only): a packet-in that the
    /// control agent receives after the configured latency.
    pub fn send_to_cpu(&mut self) {
        self.egress_spec = CPU_PORT;
    }

    /// v1model `clone(type, session)`: at the end of this pass, a copy goes to
    /// the port of clone `session` (I2E from ingress, E2E from egress).
    pub fn clone_to(&mut self, kind: CloneType, session: u16) {
        self.requests |= REQ_CLONE;
        self.clone_type = kind;
        self.clone_session = session;
    }

    /// v1model `resubmit` (ingress only): the packet as it entered ingress
    /// passes ingress again, with this pass's user metadata.
    pub fn resubmit(&mut self) {
        self.requests |= REQ_RESUBMIT;
    }

    /// v1model `recirculate` (egress only): instead of leaving, the packet as
    /// it leaves egress enters ingress again through the recirculation port.
    pub fn recirculate(&mut self) {
        self.requests |= REQ_RECIRCULATE;
    }

    /// Ends a switch-made packet's journey here (a probe at its last hop, or
    /// one suppressed as redundant), in ingress or egress. In P4 terms this is
    /// `mark_to_drop`; the switch reports it as [`Emit::Consumed`] rather than
    /// a drop, so probe terminations do not count as losses.
    ///
    /// [`Emit::Consumed`]: crate::Emit::Consumed
    pub fn terminate(&mut self) {
        self.requests |= REQ_TERMINATE;
        self.mcast_grp = 0;
    }

    /// Whether the packet is marked to be dropped.
    pub fn is_dropped(&self) -> bool {
        self.egress_spec == DROP_PORT && self.mcast_grp == 0
    }
}
