//! Script helpers shared by the TCP state-machine tests: packet builders for
//! what the other end would send, and views of what an endpoint emitted.

use super::{build_packet, FlowEnds, SegmentSpec, TcpConfig, TcpSender};
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

/// A sender of `bytes` under `c`, started at time zero, and what it sent.
pub fn started(c: &TcpConfig, bytes: u64) -> (TcpSender, Vec<Packet>) {
    let mut tx = TcpSender::new(c, ends(), bytes);
    let mut out = Vec::new();
    tx.on_start(SimTime::ZERO, &mut out);
    (tx, out)
}

/// `n` ACKs of `ack` (window `window`, ECE as `ece`) at `at`, `at` + 1 us,
/// ...: the duplicate ACKs of a loss. Returns what the sender sent.
pub fn dupacks(
    tx: &mut TcpSender,
    at: SimTime,
    n: u64,
    ack: u64,
    window: u32,
    ece: bool,
) -> Vec<Packet> {
    let mut out = Vec::new();
    for i in 0..n {
        tx.on_packet(at + us(i), &ack_pkt(ack, window, ece), &mut out);
    }
    out
}
