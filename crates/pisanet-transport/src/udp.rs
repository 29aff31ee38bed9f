//! Constant-bit-rate UDP: a paced source and a counting sink.
//!
//! Owns: pacing (one datagram per interval, the interval being the time the
//! datagram's wire bytes take at the configured rate) and receive counters.
//! Guarantees: the source's long-run wire rate equals `rate` however late
//! the caller's wake-ups are (deadlines advance from the previous deadline,
//! not from the wake-up), and the total payload equals `total_bytes`.
//! Leaves to others: loss recovery (there is none) and flow control.
//!
//! NOTE: UDP headers have no sequence number, so the sink detects reordering
//! by the source's `sent_at` stamps, which increase from one datagram to the
//! next as long as the caller wakes the source at distinct times.

use crate::tcp::FlowEnds;
use pisanet_engine::{BitRate, SimTime};
use pisanet_net::packet::{Ecn, Ipv4, Packet, Udp, L4, PROTO_UDP};

/// A UDP source sending `total_bytes` of payload at a constant wire rate.
#[derive(Clone, Debug)]
pub struct UdpCbrSource {
    ends: FlowEnds,
    rate: BitRate,
    payload: u32,
    total: u64,
    sent_bytes: u64,
    sent_packets: u64,
    next_at: Option<SimTime>,
    first_sent_at: Option<SimTime>,
    last_sent_at: Option<SimTime>,
}

impl UdpCbrSource {
    /// A source of `total_bytes` payload bytes in datagrams of
    /// `payload_bytes` (the last may be shorter), paced so that the wire
    /// bytes (headers included) flow at `rate`. A zero rate sends nothing;
    /// a zero payload size is raised to 1.
    pub fn new(ends: FlowEnds, rate: BitRate, payload_bytes: u32, total_bytes: u64) -> Self {
        UdpCbrSource {
            ends,
            rate,
            payload: payload_bytes.max(1),
            total: total_bytes,
            sent_bytes: 0,
            sent_packets: 0,
            next_at: None,
            first_sent_at: None,
            last_sent_at: None,
        }
    }

    /// Sends the first datagram now. Calling it twice does nothing new.
    pub fn on_start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.first_sent_at.is_some() || self.rate.bps() == 0 || self.total == 0 {
            return;
        }
        self.first_sent_at = Some(now);
        self.send(now, now, out);
    }

    /// Sends the datagram that is due. Early or stale calls do nothing.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        match self.next_at {
            Some(due) if now >= due => self.send(now, due, out),
            _ => {}
        }
    }

    /// When the next datagram is due; `None` once everything is sent.
    pub fn timer_deadline(&self) -> Option<SimTime> {
        self.next_at
    }

    /// Every byte has been sent.
    pub fn is_complete(&self) -> bool {
        self.sent_bytes >= self.total
    }

    pub fn sent_bytes(&self) -> u64 {
        self.sent_bytes
    }

    pub fn sent_packets(&self) -> u64 {
        self.sent_packets
    }

    pub fn first_sent_at(&self) -> Option<SimTime> {
        self.first_sent_at
    }

    pub fn last_sent_at(&self) -> Option<SimTime> {
        self.last_sent_at
    }

    /// Sends one datagram at `now` that was due at `due`.
    fn send(&mut self, now: SimTime, due: SimTime, out: &mut Vec<Packet>) {
        let remaining = self.total - self.sent_bytes;
        let payload = u64::from(self.payload).min(remaining) as u32;
        let size = Packet::udp_wire_size(payload);
        out.push(datagram(&self.ends, now, payload, Ecn::NotEct));
        self.sent_bytes += u64::from(payload);
        self.sent_packets += 1;
        self.last_sent_at = Some(now);
        self.next_at = if self.is_complete() {
            None
        } else {
            Some(due + self.rate.tx_time(u64::from(size)))
        };
    }
}

/// A datagram of the flow `ends` carrying `payload` bytes, sent at `now`
/// (every header built; `uid` 0, the host assigns it).
pub fn datagram(ends: &FlowEnds, now: SimTime, payload: u32, ecn: Ecn) -> Packet {
    Packet {
        uid: 0,
        flow: ends.flow,
        size: Packet::udp_wire_size(payload),
        ip: Ipv4 {
            src: ends.src_addr,
            dst: ends.dst_addr,
            proto: PROTO_UDP,
            dscp: ends.dscp,
            ecn,
            ttl: 64,
        },
        l4: L4::Udp(Udp {
            sport: ends.sport,
            dport: ends.dport,
            payload,
            psn: 0,
            ack_req: false,
        }),
        extra: None,
        sent_at: now,
        prio: ends.prio,
        switch_made: false,
    }
}

/// Counts what arrives for one UDP flow.
#[derive(Clone, Debug, Default)]
pub struct UdpSink {
    bytes: u64,
    packets: u64,
    reordered: u64,
    latest_sent_at: Option<SimTime>,
    first_arrival: Option<SimTime>,
    last_arrival: Option<SimTime>,
    latency_sum_ps: u128,
}

impl UdpSink {
    pub fn new() -> Self {
        UdpSink::default()
    }

    /// Counts one datagram; non-UDP packets are ignored.
    pub fn on_packet(&mut self, now: SimTime, pkt: &Packet) {
        let L4::Udp(udp) = pkt.l4 else { return };
        self.bytes += u64::from(udp.payload);
        self.packets += 1;
        match self.latest_sent_at {
            Some(latest) if pkt.sent_at < latest => self.reordered += 1,
            _ => self.latest_sent_at = Some(pkt.sent_at),
        }
        self.first_arrival.get_or_insert(now);
        self.last_arrival = Some(now);
        self.latency_sum_ps += u128::from(now.saturating_sub(pkt.sent_at).ps());
    }

    /// Payload bytes received.
    pub fn received_bytes(&self) -> u64 {
        self.bytes
    }

    pub fn received_packets(&self) -> u64 {
        self.packets
    }

    /// Datagrams sent before one that had already arrived.
    pub fn reordered_packets(&self) -> u64 {
        self.reordered
    }

    pub fn first_arrival(&self) -> Option<SimTime> {
        self.first_arrival
    }

    pub fn last_arrival(&self) -> Option<SimTime> {
        self.last_arrival
    }

    /// Mean one-way latency (arrival minus `sent_at`).
    pub fn mean_latency(&self) -> Option<SimTime> {
        if self.packets == 0 {
            return None;
        }
        Some(SimTime(
            (self.latency_sum_ps / u128::from(self.packets)) as u64,
        ))
    }
}

#[cfg(test)]
#[path = "udp_tests.rs"]
mod tests;
