//! Typed packet headers: Ethernet / IPv4 / TCP or UDP, plus room for the
//! custom headers later schemes add (probes, QoS deadlines, feedback).
//!
//! A packet's wire size counts every header byte: Ethernet header and FCS
//! (18 B), IPv4 (20 B), TCP (20 B) or UDP (8 B), any custom header, and the
//! payload. Preamble and inter-frame gap are not modelled (see docs/model.md).

use pisanet_engine::SimTime;

/// Ethernet header (14 B) plus frame check sequence (4 B).
pub const ETH_BYTES: u32 = 18;
pub const IPV4_BYTES: u32 = 20;
pub const TCP_BYTES: u32 = 20;
pub const UDP_BYTES: u32 = 8;
/// Smallest Ethernet frame on the wire (64 B including FCS).
pub const MIN_FRAME_BYTES: u32 = 64;

/// IP protocol numbers.
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

/// Traffic classes written into the IPv4 DSCP field by the workload
/// (P4TE section 4.1.3: short and large flows).
pub const TC_SHORT: u8 = 0;
pub const TC_LARGE: u8 = 1;

/// Index of a host (0..n_hosts).
pub type HostId = u32;
/// Index of a node (hosts first, then switches) in the topology.
pub type NodeId = u32;
/// Index of a port within its node.
pub type PortNo = u16;
/// Simulator bookkeeping id of a flow (not a header field).
pub type FlowId = u32;

/// The two-bit ECN field of IPv4 (RFC 3168).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Ecn {
    #[default]
    NotEct = 0,
    Ect1 = 1,
    Ect0 = 2,
    Ce = 3,
}

impl Ecn {
    pub fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
}

/// IPv4 header fields the model uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Ipv4 {
    pub src: u32,
    pub dst: u32,
    pub proto: u8,
    /// Six-bit DSCP; pisanet writes the flow's traffic class here.
    pub dscp: u8,
    pub ecn: Ecn,
    pub ttl: u8,
}

/// TCP flag bits.
pub mod tcp_flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const ACK: u8 = 0x10;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// TCP header. Sequence numbers are 64-bit byte offsets from the start of
/// the flow (no wrap-around); the window is in bytes (no scaling option).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Tcp {
    pub sport: u16,
    pub dport: u16,
    pub seq: u64,
    pub ack: u64,
    pub flags: u8,
    /// Receiver's advertised window in bytes (P4TE's FACKs rewrite it).
    pub window: u32,
    /// Payload bytes carried.
    pub payload: u32,
}

impl Tcp {
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// Most SACK blocks one ACK carries. RFC 2018 section 3 allows four in
/// the 40 option bytes, three when the timestamp option is also present;
/// Linux and ns-3 send timestamps and so at most three, as pisanet does.
pub const MAX_SACK_BLOCKS: usize = 3;

/// One SACK block (RFC 2018 section 3): received bytes `[start, end)`
/// beyond the cumulative ACK, as 64-bit byte offsets like `Tcp::seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// The SACK option of a TCP ACK (RFC 2018): up to [`MAX_SACK_BLOCKS`]
/// blocks, the most recent first (RFC 2018 section 4). It lives in the
/// packet's boxed [`PacketExtra`] (see [`Packet::sack`]), so that packets
/// without it (every packet unless `transport.sack` is on and a hole
/// exists) pay nothing more.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SackOption {
    len: u8,
    blocks: [SackBlock; MAX_SACK_BLOCKS],
}

impl SackOption {
    /// The option holding the first [`MAX_SACK_BLOCKS`] of `blocks`.
    pub fn new(blocks: &[SackBlock]) -> Self {
        let mut o = SackOption::default();
        for b in blocks.iter().take(MAX_SACK_BLOCKS) {
            o.blocks[o.len as usize] = *b;
            o.len += 1;
        }
        o
    }

    pub fn blocks(&self) -> &[SackBlock] {
        &self.blocks[..self.len as usize]
    }

    /// Bytes the option adds to the TCP header: kind and length (2 B) plus
    /// 8 B per block (RFC 2018 section 3), padded with NOPs to a multiple
    /// of 4 B as the data offset counts 32-bit words (Linux pads with two
    /// leading NOPs: 12, 20 or 28 B for 1, 2 or 3 blocks).
    pub fn wire_bytes(&self) -> u32 {
        (2 + 8 * u32::from(self.len)).next_multiple_of(4)
    }
}

/// UDP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Udp {
    pub sport: u16,
    pub dport: u16,
    /// Payload bytes carried.
    pub payload: u32,
    /// Packet sequence number of a go-back-N rate-based flow (the 24-bit
    /// PSN of RoCEv2's BTH, widened to 32 bits and compared mod 2^32); 0
    /// otherwise. Model state, not written to captures (docs/model.md,
    /// "UDP and rate-based hosts").
    pub psn: u32,
    /// The BTH's AckReq bit: the receiver of a go-back-N flow acknowledges
    /// this packet at once (set on a flow's last packet).
    pub ack_req: bool,
}

/// The transport header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum L4 {
    #[default]
    None,
    Tcp(Tcp),
    Udp(Udp),
}

/// A custom header a scheme adds (HULA probe, QoS deadline, QCN feedback,
/// P4TE flags). Its meaning belongs to the scheme, as a P4 header's does:
/// `kind` names the layout and `fields` hold its bit fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ExtHeader {
    pub kind: u16,
    /// Bytes this header adds on the wire.
    pub bytes: u16,
    pub fields: [u64; 4],
}

/// What a packet carries beyond its fixed headers: a scheme's custom
/// header and the SACK option of a TCP ACK (RFC 2018; part of the TCP
/// header on the wire and counted in `size`, kept out of [`Tcp`] so that
/// `Tcp` stays `Copy` and no larger).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PacketExtra {
    pub ext: Option<ExtHeader>,
    pub sack: Option<SackOption>,
}

impl PacketExtra {
    /// The `Packet::extra` of a packet with the custom header `ext`.
    pub fn of_ext(ext: ExtHeader) -> Option<Box<PacketExtra>> {
        Some(Box::new(PacketExtra {
            ext: Some(ext),
            sack: None,
        }))
    }
}

/// One packet. Stored once in the simulator's packet arena (crate::arena)
/// while in flight; queues and wires hold its id.
// NOTE: `repr(C)`, the fields a switch hop reads first (size, flow, the
// IPv4 fields, priority, the transport header with the ports: the 5-tuple,
// the route's key, the queue's size, priority and ECN) in the first 64
// bytes, which is one cache line of an arena slot (`arena::Slot` is
// aligned to one); uid, custom header and send time after
// (docs/performance.md, "Session 9: per-hop path").
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[repr(C)]
pub struct Packet {
    /// Bytes on the wire, every header included.
    pub size: u32,
    /// Flow the packet belongs to (bookkeeping; u32::MAX for none).
    pub flow: FlowId,
    pub ip: Ipv4,
    /// Strict-priority queue index at egress (0 = highest), set by the
    /// sender from the traffic class or by a switch program.
    pub prio: u8,
    /// Simulator-internal mark: the packet is a copy made by a switch
    /// (clone, multicast, generated), counted as injected by that switch.
    pub switch_made: bool,
    pub l4: L4,
    /// Unique id, for conservation checks and tracing.
    pub uid: u64,
    /// The custom header and the SACK option, if the packet has either
    /// (most have neither): one pointer for both keeps `Packet` at 88 B,
    /// fewer bytes to move at every hop. Read and written through
    /// [`Packet::ext`] and [`Packet::sack`] and their setters.
    pub extra: Option<Box<PacketExtra>>,
    /// When the packet was injected by its source.
    pub sent_at: SimTime,
}

impl Packet {
    pub const NO_FLOW: FlowId = u32::MAX;

    /// The 5-tuple (src, dst, proto, sport, dport), for hashing.
    pub fn five_tuple(&self) -> (u32, u32, u8, u16, u16) {
        let (sport, dport) = match self.l4 {
            L4::Tcp(t) => (t.sport, t.dport),
            L4::Udp(u) => (u.sport, u.dport),
            L4::None => (0, 0),
        };
        (self.ip.src, self.ip.dst, self.ip.proto, sport, dport)
    }

    pub fn tcp(&self) -> Option<&Tcp> {
        match &self.l4 {
            L4::Tcp(t) => Some(t),
            _ => None,
        }
    }

    pub fn tcp_mut(&mut self) -> Option<&mut Tcp> {
        match &mut self.l4 {
            L4::Tcp(t) => Some(t),
            _ => None,
        }
    }

    /// Payload bytes (TCP or UDP), zero for others.
    pub fn payload(&self) -> u32 {
        match self.l4 {
            L4::Tcp(t) => t.payload,
            L4::Udp(u) => u.payload,
            L4::None => 0,
        }
    }

    /// Wire size of a TCP segment with `payload` bytes.
    pub fn tcp_wire_size(payload: u32) -> u32 {
        (ETH_BYTES + IPV4_BYTES + TCP_BYTES + payload).max(MIN_FRAME_BYTES)
    }

    /// Wire size of a TCP segment with `payload` bytes and `options` bytes
    /// of TCP options (a multiple of 4).
    pub fn tcp_wire_size_with_options(payload: u32, options: u32) -> u32 {
        (ETH_BYTES + IPV4_BYTES + TCP_BYTES + options + payload).max(MIN_FRAME_BYTES)
    }

    /// The SACK blocks this packet carries (empty if none).
    pub fn sack_blocks(&self) -> &[SackBlock] {
        self.sack().map_or(&[], SackOption::blocks)
    }

    /// The custom header a scheme added, if any.
    #[inline]
    pub fn ext(&self) -> Option<&ExtHeader> {
        self.extra.as_deref().and_then(|x| x.ext.as_ref())
    }

    /// The custom header, mutable, if any.
    #[inline]
    pub fn ext_mut(&mut self) -> Option<&mut ExtHeader> {
        self.extra.as_deref_mut().and_then(|x| x.ext.as_mut())
    }

    /// Sets (or with `None` removes) the custom header.
    pub fn set_ext(&mut self, ext: Option<ExtHeader>) {
        match (&mut self.extra, ext) {
            (Some(x), e) => {
                x.ext = e;
                if x.sack.is_none() && x.ext.is_none() {
                    self.extra = None;
                }
            }
            (None, Some(e)) => {
                self.extra = Some(Box::new(PacketExtra {
                    ext: Some(e),
                    sack: None,
                }))
            }
            (None, None) => {}
        }
    }

    /// Removes and returns the custom header.
    pub fn take_ext(&mut self) -> Option<ExtHeader> {
        let e = self.extra.as_deref_mut().and_then(|x| x.ext.take());
        if self.extra.as_deref().is_some_and(|x| x.sack.is_none()) {
            self.extra = None;
        }
        e
    }

    /// The custom header, added with `make` if there is none.
    pub fn ext_or_insert_with(&mut self, make: impl FnOnce() -> ExtHeader) -> &mut ExtHeader {
        let x = self.extra.get_or_insert_with(Box::default);
        x.ext.get_or_insert_with(make)
    }

    /// The SACK option of a TCP ACK (RFC 2018), if any.
    #[inline]
    pub fn sack(&self) -> Option<&SackOption> {
        self.extra.as_deref().and_then(|x| x.sack.as_ref())
    }

    /// Sets (or with `None` removes) the SACK option.
    pub fn set_sack(&mut self, sack: Option<SackOption>) {
        match (&mut self.extra, sack) {
            (Some(x), s) => {
                x.sack = s;
                if x.sack.is_none() && x.ext.is_none() {
                    self.extra = None;
                }
            }
            (None, Some(s)) => {
                self.extra = Some(Box::new(PacketExtra {
                    ext: None,
                    sack: Some(s),
                }))
            }
            (None, None) => {}
        }
    }

    /// `self` with the custom header `ext` (for packet literals).
    pub fn with_ext(mut self, ext: ExtHeader) -> Self {
        self.set_ext(Some(ext));
        self
    }

    /// Wire size of a UDP datagram with `payload` bytes.
    pub fn udp_wire_size(payload: u32) -> u32 {
        (ETH_BYTES + IPV4_BYTES + UDP_BYTES + payload).max(MIN_FRAME_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_sizes_count_every_header() {
        assert_eq!(Packet::tcp_wire_size(1460), 1518);
        assert_eq!(Packet::tcp_wire_size(0), 64);
        assert_eq!(Packet::udp_wire_size(1472), 1518);
    }

    #[test]
    fn sack_option_bytes_are_padded_to_words() {
        let b = SackBlock { start: 1, end: 2 };
        let sizes: Vec<u32> = (0..=4)
            .map(|n| SackOption::new(&vec![b; n]).wire_bytes())
            .collect();
        // 0 blocks never goes on the wire; 4 are cut to MAX_SACK_BLOCKS.
        assert_eq!(sizes, vec![4, 12, 20, 28, 28]);
        assert_eq!(Packet::tcp_wire_size_with_options(0, 12), 70);
        assert_eq!(Packet::tcp_wire_size_with_options(0, 0), 64);
    }

    #[test]
    fn packet_stays_small() {
        // Packets are written into the arena at every injection and read
        // at every hop: keep them compact (88 B: the custom header and
        // SACK share one box).
        assert!(
            std::mem::size_of::<Packet>() <= 88,
            "{}",
            std::mem::size_of::<Packet>()
        );
        // What a switch hop reads (5-tuple, size, priority, ECN) is in the
        // first 64 bytes: one cache line of an arena slot.
        let hot_end = std::mem::offset_of!(Packet, l4) + std::mem::size_of::<L4>();
        assert!(hot_end <= 64, "{hot_end}");
    }
}
