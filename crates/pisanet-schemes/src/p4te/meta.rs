//! The program's user metadata and the P4TE shim header, as bit fields.
//!
//! ```text
//! word 0: [1:0] incoming colour (T1)   [5:2] rate-control flags (shim)
//!         [7:6] FACK kind              [9:8] queue-depth event   [11:10] utilization event
//!         [13:12] new colour           [24:16] event port        [63:32] event queue depth
//! word 1: [31:0] in-flight bytes from the shim, then the FACK's window
//! ```

use pisanet_net::wire::{FieldDef, HeaderDef, Placement};
use pisanet_pisa::UserMeta;

/// A view of the user metadata words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meta(pub UserMeta);

fn get(w: u64, lo: u32, bits: u32) -> u64 {
    (w >> lo) & ((1 << bits) - 1)
}

fn set(w: &mut u64, lo: u32, bits: u32, v: u64) {
    let mask = ((1u64 << bits) - 1) << lo;
    *w = (*w & !mask) | ((v << lo) & mask);
}

impl Meta {
    pub fn incoming(&self) -> u64 {
        get(self.0[0], 0, 2)
    }
    pub fn set_incoming(&mut self, c: pisanet_pisa::Color) {
        set(&mut self.0[0], 0, 2, c as u64)
    }
    pub fn rc_flags(&self) -> u64 {
        get(self.0[0], 2, 4)
    }
    pub fn set_rc_flags(&mut self, f: u64) {
        set(&mut self.0[0], 2, 4, f)
    }
    pub fn fack(&self) -> u64 {
        get(self.0[0], 6, 2)
    }
    pub fn set_fack(&mut self, k: u64) {
        set(&mut self.0[0], 6, 2, k)
    }
    pub fn queue_event(&self) -> u64 {
        get(self.0[0], 8, 2)
    }
    pub fn util_event(&self) -> u64 {
        get(self.0[0], 10, 2)
    }
    pub fn clear_util_event(&mut self) {
        set(&mut self.0[0], 10, 2, 0)
    }
    pub fn new_color(&self) -> u64 {
        get(self.0[0], 12, 2)
    }
    pub fn event_port(&self) -> u64 {
        get(self.0[0], 16, 9)
    }
    pub fn event_depth(&self) -> u64 {
        get(self.0[0], 32, 32)
    }
    /// Alg. 1, line 23: queueDepthEvent, eventData, linkUtilizationRateEvent
    /// (with the new colour) and the egress port.
    pub fn set_events(&mut self, queue: u64, depth: u64, util: u64, color: u64, port: u16) {
        let w = &mut self.0[0];
        set(w, 8, 2, queue);
        set(w, 10, 2, util);
        set(w, 12, 2, color);
        set(w, 16, 9, port as u64);
        set(w, 32, 32, depth.min(u32::MAX as u64));
    }
    pub fn window(&self) -> u32 {
        get(self.0[1], 0, 32) as u32
    }
    pub fn set_window(&mut self, w: u32) {
        set(&mut self.0[1], 0, 32, w as u64)
    }
}

/// IPv4 protocol that announces the shim on the wire (RFC 3692 experimental;
/// HULA's probes use the other one, 253). The shim's `next_proto` says TCP.
pub const PROTO_P4TE: u8 = 254;

/// The shim's fields, as the program reads and writes them and as they go
/// on the wire (docs/headers.md).
pub const SHIM_FLAGS: FieldDef = FieldDef::ext(
    "flags",
    8,
    0,
    0,
    "1 HOLD (within B bytes of the last rate control), 2 ACTED, 4 FACK, 8 ACK_VALID (section 4.3.1)",
);
/// NOTE: the model keeps the 64-bit ack of its TCP; the wire has its low
/// 32 bits, as the TCP header does.
pub const SHIM_ACK: FieldDef = FieldDef::ext(
    "ack",
    32,
    1,
    0,
    "last ACK the sender's leaf sent down to the sender (mod 2^32)",
);
/// Data packets carry the in-flight estimate, FACKs the trigger (never both).
pub const SHIM_INFLIGHT: FieldDef = FieldDef::ext(
    "inflight",
    32,
    2,
    0,
    "data: bytes in flight as the sender's leaf estimates them; FACK: low 32 bits of the \
     sequence number of the data packet acted on",
);
pub static SHIM_WIRE: HeaderDef = HeaderDef {
    name: "p4te",
    title: "P4TE shim",
    schemes: "p4te",
    kind: super::SHIM_KIND,
    bytes: super::SHIM_BYTES as u16,
    placement: Placement::IpProto(PROTO_P4TE),
    doc: "Between IPv4 and TCP on data packets in the fabric (pushed by the sender's leaf, \
          popped by the receiver's) and on fake ACKs (section 4.3.1).",
    fields: &[
        SHIM_FLAGS,
        FieldDef::next_proto(),
        FieldDef::reserved(16),
        SHIM_ACK,
        SHIM_INFLIGHT,
    ],
};

/// The P4TE shim between the IP and TCP headers of data packets in the
/// fabric and of FACKs (section 4.3.1's header flags, plus what the
/// sender's leaf knows of the flow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shim {
    pub flags: u64,
    /// Last ACK the sender's leaf sent down to the sender.
    pub ack: u64,
    /// Bytes in flight as the sender's leaf estimates them.
    pub inflight: u64,
    /// FACKs: low 32 bits of the sequence number of the data packet acted on.
    pub trigger: u64,
}

impl Shim {
    /// Within B bytes of the last rate control: no switch acts.
    pub const HOLD: u64 = 1;
    /// A switch on the path already acted on this packet.
    pub const ACTED: u64 = 2;
    /// This packet is a FACK.
    pub const FACK: u64 = 4;
    /// `ack` and `inflight` are known.
    pub const ACK_VALID: u64 = 8;
}
