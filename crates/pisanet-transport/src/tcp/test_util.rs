//! Script helpers shared by the TCP state-machine tests: packet builders for
//! what the other end would send, and views of what an endpoint emitted.

use super::{build_packet, FlowEnds, SegmentSpec};
use pisanet_engine::SimTime;
use pisanet_net::packet::{tcp_flags, Ecn, Packet};

pub const MSS: u64 = 1000;

/// The data direction of the test flow (sender -> receiver).
pub fn ends() -> FlowEnds {
    FlowEnds {
        flow: 3,
        src_addr: 0x0a00_0001,
        dst_addr: 0x0a00_0002,
        sport: 4000,
        dport: 80,
        dscp: 1,
        prio: 2,
    }
}

pub fn us(x: u64) -> SimTime {
    SimTime::from_us(x)
}

/// An ACK from the receiver acknowledging `ack` with window `window`.
pub fn ack_pkt(ack: u64, window: u32, ece: bool) -> Packet {
    let mut flags = tcp_flags::ACK;
    if ece {
        flags |= tcp_flags::ECE;
    }
    build_packet(
        &ends().reversed(),
        SimTime::ZERO,
        SegmentSpec {
            seq: 0,
            ack,
            flags,
            window,
            payload: 0,
            ecn: Ecn::NotEct,
        },
    )
}

/// A data segment `[seq, seq + len)` from the sender.
pub fn data_pkt(seq: u64, len: u32, ecn: Ecn) -> Packet {
    build_packet(
        &ends(),
        SimTime::ZERO,
        SegmentSpec {
            seq,
            ack: 0,
            flags: 0,
            window: 0,
            payload: len,
            ecn,
        },
    )
}

/// (seq, payload) of every TCP packet in `pkts`.
pub fn segs(pkts: &[Packet]) -> Vec<(u64, u32)> {
    pkts.iter()
        .filter_map(|p| p.tcp().map(|t| (t.seq, t.payload)))
        .collect()
}

/// (ack, ECE set) of every TCP packet in `pkts`.
pub fn acks(pkts: &[Packet]) -> Vec<(u64, bool)> {
    pkts.iter()
        .filter_map(|p| p.tcp().map(|t| (t.ack, t.has(tcp_flags::ECE))))
        .collect()
}
