//! Go-back-N for rate-based hosts, as RoCEv2's reliable connection does it
//! (IBTA spec vol. 1, section 9.7: the requester's PSN, the responder's
//! expected PSN, ACK / NAK "PSN sequence error", and the local ACK timeout).
//!
//! ```text
//!   sender:   data PSN p (AckReq on the flow's last) ─────────────▶ receiver (expects e)
//!   receiver: p == e: accept, e += 1; ACK(e) every `ack_every` accepted or on AckReq
//!             p >  e: discard; NAK(e) once per gap (PSN sequence error)
//!             p <  e: duplicate, discard; ACK(e) if AckReq
//!   sender:   ACK(a) / NAK(a): everything below a arrived; NAK: next = a (go back)
//!             no progress for `timeout` (local ACK timeout): next = oldest unacked
//! ```
//!
//! Owns: the ACK/NAK packet and its header ([`GBN_ACK_WIRE`]), the
//! parameters ([`GbnParams`]) and the receiver's state ([`GbnReceiver`]).
//! The sender's side lives in [`super::RateSender`] (pacing decides when a
//! rewound packet leaves, at the reaction point's rate).
//!
//! NOTE: choices where RoCEv2 leaves room, documented in docs/model.md:
//! ACKs are coalesced (one per `ack_every` packets accepted, and one on
//! the flow's last packet, which carries AckReq, like a message's last
//! packet); retries are unlimited (RoCE's retry_cnt would fail the QP); a
//! PSN is 32 bits, compared mod 2^32 (BTH: 24 bits).

use pisanet_engine::SimTime;
use pisanet_net::packet::{Ecn, ExtHeader, Packet, PacketExtra, Udp, L4, PROTO_UDP};
use pisanet_net::wire::{FieldDef, HeaderDef, Placement};
use pisanet_net::{ETH_BYTES, IPV4_BYTES, MIN_FRAME_BYTES, UDP_BYTES};

/// `ExtHeader::kind` of a go-back-N ACK or NAK.
pub const GBN_ACK_KIND: u16 = 0x4741;
/// Bytes of the ACK/NAK header (BTH opcode and AETH syndrome, PSN).
pub const GBN_ACK_BYTES: u16 = 8;
/// The InfiniBand opcode of an RC Acknowledge (BTH opcode 0001_0001b).
pub const ACK_OPCODE: u64 = 0x11;
/// AETH syndrome of an ACK (IBTA vol. 1, 9.7: 0b000xxxxx, the credit
/// count; 0 here).
pub const SYNDROME_ACK: u64 = 0x00;
/// AETH syndrome of a NAK "PSN sequence error" (IBTA vol. 1, 9.7: NAK 0b011, code 0).
pub const SYNDROME_NAK_SEQ: u64 = 0x60;

pub const GBN_OPCODE_FIELD: FieldDef = FieldDef::ext(
    "opcode",
    8,
    0,
    0,
    "0x11: the InfiniBand BTH opcode of an RC Acknowledge (IBTA vol. 1, 9.7)",
);
pub const GBN_SYNDROME_FIELD: FieldDef = FieldDef::ext(
    "syndrome",
    8,
    0,
    8,
    "AETH syndrome: 0x00 ACK, 0x60 NAK PSN sequence error (IBTA vol. 1, 9.7)",
);
pub const GBN_PSN_FIELD: FieldDef = FieldDef::ext(
    "psn",
    32,
    1,
    0,
    "the receiver's expected PSN: every packet below it arrived (ACK); go back to it (NAK)",
);

/// The EtherType the model gives the ACK/NAK header: one past RoCE's
/// 0x8915 (which the CNP holds), because each header needs a placement of
/// its own for captures and the dissector. NOTE: not an assigned type.
pub const ETHERTYPE_GBN_ACK: u16 = 0x8916;

/// The ACK/NAK header (docs/headers.md).
pub static GBN_ACK_WIRE: HeaderDef = HeaderDef {
    name: "gbn_ack",
    title: "Go-back-N ACK / NAK of a rate-based (RoCEv2-like) flow",
    schemes: "any (sent by the receiver of a flow when transport.go_back_n = true)",
    kind: GBN_ACK_KIND,
    bytes: GBN_ACK_BYTES,
    placement: Placement::EtherType(ETHERTYPE_GBN_ACK),
    doc: "Sent by the receiver of a go-back-N flow to its sender: an ACK every \
          transport.gbn_ack_every packets accepted and on the flow's last packet, a NAK \
          (PSN sequence error) once per gap; IPv4 and UDP follow with the flow's addresses \
          and ports swapped and no payload. NOTE: RoCEv2 carries the BTH and AETH after UDP \
          port 4791 with a 24-bit PSN; the model places scheme headers before IPv4 or after \
          it only, and its PSN has 32 bits; its EtherType 0x8916 is the model's (the CNP holds \
          RoCE's 0x8915).",
    fields: &[
        GBN_OPCODE_FIELD,
        GBN_SYNDROME_FIELD,
        FieldDef::reserved(16),
        GBN_PSN_FIELD,
    ],
};

/// Go-back-N's parameters (`transport.go_back_n`, `gbn_timeout_us`,
/// `gbn_ack_every`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GbnParams {
    /// The sender's local ACK timeout: without progress for this long, it
    /// goes back to the oldest unacknowledged packet.
    pub timeout: SimTime,
    /// The receiver ACKs every this many packets accepted (at least 1).
    pub ack_every: u32,
}

impl Default for GbnParams {
    fn default() -> Self {
        GbnParams {
            timeout: SimTime::from_us(4000),
            ack_every: 16,
        }
    }
}

/// An ACK or NAK: `Some((psn, is_nak))` if `pkt` is one.
pub fn parse_ack(pkt: &Packet) -> Option<(u32, bool)> {
    let h = pkt.ext().filter(|h| h.kind == GBN_ACK_KIND)?;
    let psn = GBN_PSN_FIELD.get(&h.fields) as u32;
    Some((psn, GBN_SYNDROME_FIELD.get(&h.fields) == SYNDROME_NAK_SEQ))
}

/// Whether `pkt` is a go-back-N ACK or NAK.
pub fn is_ack(pkt: &Packet) -> bool {
    pkt.ext().is_some_and(|h| h.kind == GBN_ACK_KIND)
}

/// The ACK (or NAK) answering data packet `data` at `now`, carrying the
/// expected PSN: to its source, ports swapped, no payload, not
/// ECN-capable, in the data's priority queue (RoCE sends an RC
/// connection's ACKs in its service level), a minimum-size frame.
pub fn ack_for(now: SimTime, data: &Packet, expected: u32, nak: bool) -> Packet {
    let (src, dst, _, sport, dport) = data.five_tuple();
    let mut fields = [0; 4];
    GBN_OPCODE_FIELD.set(&mut fields, ACK_OPCODE);
    GBN_SYNDROME_FIELD.set(
        &mut fields,
        if nak { SYNDROME_NAK_SEQ } else { SYNDROME_ACK },
    );
    GBN_PSN_FIELD.set(&mut fields, u64::from(expected));
    let mut p = Packet {
        flow: data.flow,
        size: (ETH_BYTES + IPV4_BYTES + UDP_BYTES + GBN_ACK_BYTES as u32).max(MIN_FRAME_BYTES),
        ip: data.ip,
        l4: L4::Udp(Udp {
            sport: dport,
            dport: sport,
            payload: 0,
            psn: 0,
            ack_req: false,
        }),
        extra: PacketExtra::of_ext(ExtHeader {
            kind: GBN_ACK_KIND,
            bytes: GBN_ACK_BYTES,
            fields,
        }),
        sent_at: now,
        prio: data.prio,
        ..Default::default()
    };
    p.ip.src = dst;
    p.ip.dst = src;
    p.ip.proto = PROTO_UDP;
    p.ip.ecn = Ecn::NotEct;
    p.ip.ttl = 64;
    p
}

/// The 64-bit PSN that the 32-bit `v` stands for, near `base` (mod 2^32
/// serial arithmetic, RFC 1982).
pub fn unwrap_psn(base: u64, v: u32) -> u64 {
    let d = v.wrapping_sub(base as u32) as i32;
    base.saturating_add_signed(i64::from(d))
}

/// The receiver's side: the expected PSN, in-order acceptance, ACKs, NAKs.
#[derive(Clone, Debug)]
pub struct GbnReceiver {
    ack_every: u32,
    expected: u32,
    since_ack: u32,
    /// A NAK was sent for the current gap (one per gap).
    nak_sent: bool,
    /// Data packets discarded (out of order or duplicate).
    pub discarded: u64,
    pub acks: u64,
    pub naks: u64,
}

impl GbnReceiver {
    pub fn new(p: &GbnParams) -> Self {
        GbnReceiver {
            ack_every: p.ack_every.max(1),
            expected: 0,
            since_ack: 0,
            nak_sent: false,
            discarded: 0,
            acks: 0,
            naks: 0,
        }
    }

    /// The next PSN the receiver accepts.
    pub fn expected(&self) -> u32 {
        self.expected
    }

    /// Data packet `pkt` with `psn` and `ack_req` arrived: whether it is
    /// accepted (in order); an ACK or NAK goes into `out`. A packet without
    /// payload is not data: ignored.
    pub fn on_data(&mut self, now: SimTime, pkt: &Packet, out: &mut Vec<Packet>) -> bool {
        let L4::Udp(u) = pkt.l4 else { return false };
        if u.payload == 0 {
            // Not data (every datagram carries at least one byte): e.g. a
            // switch's feedback (P4QCN's) about this flow's ACKs.
            return false;
        }
        let d = u.psn.wrapping_sub(self.expected) as i32;
        if d == 0 {
            self.expected = self.expected.wrapping_add(1);
            self.nak_sent = false;
            self.since_ack += 1;
            if u.ack_req || self.since_ack >= self.ack_every {
                self.since_ack = 0;
                self.acks += 1;
                out.push(ack_for(now, pkt, self.expected, false));
            }
            return true;
        }
        self.discarded += 1;
        if d > 0 {
            // IBTA vol. 1, 9.7 (NAK, PSN sequence error): a PSN beyond the
            // expected one is a sequence error, NAKed once; later packets of
            // the gap are dropped silently.
            if !self.nak_sent {
                self.nak_sent = true;
                self.since_ack = 0;
                self.naks += 1;
                out.push(ack_for(now, pkt, self.expected, true));
            }
        } else if u.ack_req {
            // A duplicate (the sender went back after a lost ACK): re-ACK.
            self.since_ack = 0;
            self.acks += 1;
            out.push(ack_for(now, pkt, self.expected, false));
        }
        false
    }
}

/// The sender's go-back-N state (kept by [`super::RateSender`]).
#[derive(Clone, Debug)]
pub(crate) struct GbnSender {
    pub(crate) timeout: SimTime,
    /// Next PSN to send.
    pub(crate) next: u64,
    /// One past the highest PSN sent.
    pub(crate) high: u64,
    /// Oldest PSN not acknowledged.
    pub(crate) una: u64,
    /// When the local ACK timer fires (armed while packets are unacked).
    pub(crate) rto_at: Option<SimTime>,
    pub(crate) retx_packets: u64,
    pub(crate) timeouts: u64,
    pub(crate) naks: u64,
}

impl GbnSender {
    pub(crate) fn new(p: &GbnParams) -> Self {
        GbnSender {
            timeout: p.timeout,
            next: 0,
            high: 0,
            una: 0,
            rto_at: None,
            retx_packets: 0,
            timeouts: 0,
            naks: 0,
        }
    }
}

#[cfg(test)]
#[path = "gbn_tests.rs"]
mod tests;
