//! Packets as bytes on the wire: the layout of every header a scheme adds
//! (one table per header, [`HeaderDef`]) and the serializer that writes a
//! [`Packet`] as an Ethernet frame (for pcap capture).
//!
//! Owns: the description language of scheme headers (fields with a bit
//! width, where the model keeps each one, what it means) and the byte
//! layout of Ethernet II, IPv4, TCP and UDP. Guarantees: a header's fields
//! are read through the same [`FieldDef`] the switch program uses to write
//! them, so the bytes, the docs (docs/headers.md) and the Wireshark
//! dissector (tools/wireshark/pisanet.lua) cannot drift from the program;
//! the IPv4 header checksum and the TCP/UDP checksums are correct.
//! Leaves to others: which headers exist (the scheme crate registers its
//! tables) and which packets are captured (the facade's capture module).
//!
//! ```text
//! frame:  Ethernet | [header placed by EtherType] | IPv4 | [header placed by IP protocol] | TCP/UDP | payload (zeros)
//! ```
//!
//! The model carries at most one scheme header per packet
//! ([`Packet::ext`]), so the deparser order is the one above.

use crate::packet::{ExtHeader, Packet, L4, PROTO_TCP, PROTO_UDP};

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// IEEE 802 Local Experimental EtherType 1 (IEEE Std 802, clause 9.2.2).
pub const ETHERTYPE_EXPERIMENTAL_1: u16 = 0x88b5;
/// Ethernet II header without FCS (the pcap link type 1 leaves the FCS out).
pub const ETH_HEADER_BYTES: usize = 14;
/// Frame check sequence: counted in `Packet::size`, not captured.
pub const FCS_BYTES: usize = 4;

/// Where the model keeps a header field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// Bits `shift..shift + bits` of `ExtHeader::fields[word]`.
    Ext { word: u8, shift: u8 },
    /// The model's IPv4 protocol: the header takes the place of the
    /// transport in the IPv4 protocol field and says here what follows it.
    NextProto,
    /// Reserved: zero on the wire.
    Zero,
}

/// One field of a scheme header: `bits` wide, most significant bit first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldDef {
    pub name: &'static str,
    pub bits: u8,
    pub src: Src,
    /// What the field holds (one line, with the paper section).
    pub doc: &'static str,
}

impl FieldDef {
    /// A field the program keeps in bits `shift..shift + bits` of `fields[word]`.
    pub const fn ext(name: &'static str, bits: u8, word: u8, shift: u8, doc: &'static str) -> Self {
        FieldDef {
            name,
            bits,
            src: Src::Ext { word, shift },
            doc,
        }
    }

    /// A reserved field (zero).
    pub const fn reserved(bits: u8) -> Self {
        FieldDef {
            name: "reserved",
            bits,
            src: Src::Zero,
            doc: "zero",
        }
    }

    /// The field that carries the model's IPv4 protocol.
    pub const fn next_proto() -> Self {
        FieldDef {
            name: "next_proto",
            bits: 8,
            src: Src::NextProto,
            doc: "IPv4 protocol of what follows (the IPv4 header names this header instead)",
        }
    }

    pub const fn mask(&self) -> u64 {
        if self.bits >= 64 {
            u64::MAX
        } else {
            (1u64 << self.bits) - 1
        }
    }

    /// The field's value in a header (reserved fields and the next protocol read 0).
    #[inline]
    pub const fn get(&self, fields: &[u64; 4]) -> u64 {
        match self.src {
            Src::Ext { word, shift } => (fields[word as usize] >> shift) & self.mask(),
            _ => 0,
        }
    }

    /// Sets the field in a header; `v` is cut to the field's width, as a
    /// P4 assignment to a `bit<W>` field would.
    #[inline]
    pub fn set(&self, fields: &mut [u64; 4], v: u64) {
        if let Src::Ext { word, shift } = self.src {
            let m = self.mask() << shift;
            let w = &mut fields[word as usize];
            *w = (*w & !m) | ((v << shift) & m);
        }
    }
}

/// How a scheme header is placed in the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Between Ethernet and IPv4: the Ethernet type is this value and the
    /// header is always followed by IPv4.
    EtherType(u16),
    /// Right after IPv4, whose protocol field is this value; what follows
    /// is what the header's `next_proto` field names (nothing without one).
    IpProto(u8),
}

/// The layout of one scheme header, as its switch program's parser and
/// deparser see it.
#[derive(Clone, Copy, Debug)]
pub struct HeaderDef {
    /// Short name, used for the dissector's protocol (`pisanet_<name>`).
    pub name: &'static str,
    pub title: &'static str,
    /// Schemes whose programs emit it.
    pub schemes: &'static str,
    /// `ExtHeader::kind` of the header.
    pub kind: u16,
    /// Bytes on the wire (the sum of the fields' widths).
    pub bytes: u16,
    pub placement: Placement,
    /// A paragraph on the header: what carries it, where it comes from.
    pub doc: &'static str,
    /// Fields in wire order.
    pub fields: &'static [FieldDef],
}

impl HeaderDef {
    /// Sum of the fields' widths.
    pub const fn bits(&self) -> u32 {
        let mut i = 0;
        let mut n = 0;
        while i < self.fields.len() {
            n += self.fields[i].bits as u32;
            i += 1;
        }
        n
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&FieldDef> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Writes the header's bytes, most significant bit first; `next_proto`
    /// goes into a [`Src::NextProto`] field.
    pub fn emit(&self, h: &ExtHeader, next_proto: u8, out: &mut Vec<u8>) {
        let mut acc: u128 = 0;
        let mut n: u32 = 0;
        for f in self.fields {
            let v = match f.src {
                Src::NextProto => next_proto as u64,
                _ => f.get(&h.fields),
            };
            acc = (acc << f.bits) | (v & f.mask()) as u128;
            n += f.bits as u32;
            while n >= 8 {
                n -= 8;
                out.push((acc >> n) as u8);
            }
            acc &= (1u128 << n) - 1;
        }
        debug_assert_eq!(n, 0, "{}: not a whole number of bytes", self.name);
    }
}

/// Addresses of the two ends of the link a frame crosses.
#[derive(Clone, Copy, Debug)]
pub struct LinkEnds {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
}

/// A locally administered unicast MAC address for node `node`: 02:00 and
/// the node id (big-endian).
pub fn node_mac(node: u32) -> [u8; 6] {
    let b = node.to_be_bytes();
    [0x02, 0x00, b[0], b[1], b[2], b[3]]
}

/// The Internet checksum (RFC 1071) of `data` added to `sum`, not folded.
fn sum16(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    sum
}

/// Folds and complements a sum of 16-bit words (RFC 1071).
fn fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The IPv4 header checksum of `header` (its checksum field zero or not:
/// bytes 10-11 are skipped). RFC 791 section 3.1.
pub fn ipv4_checksum(header: &[u8]) -> u16 {
    let sum = sum16(0, &header[..10]);
    fold(sum16(sum, &header[12..]))
}

/// Looks up the layout of a scheme header by its `ExtHeader::kind`.
pub trait HeaderRegistry {
    fn header(&self, kind: u16) -> Option<&HeaderDef>;
}

impl HeaderRegistry for [&HeaderDef] {
    fn header(&self, kind: u16) -> Option<&HeaderDef> {
        self.iter().copied().find(|d| d.kind == kind)
    }
}

/// Writes `pkt` as the Ethernet frame it is on the wire (without FCS),
/// cut at `snaplen` bytes, into `out` (cleared first). Returns the frame's
/// full length (pcap's `orig_len`): `pkt.size` minus the FCS.
///
/// Layout: Ethernet II; a header placed by EtherType; IPv4 (IHL 5, DF,
/// id = low 16 bits of the packet's uid, DSCP and ECN, TTL, checksum); a
/// header placed by IP protocol; TCP (20 bytes, plus the SACK option when
/// the packet carries one, RFC 2018 section 3, after two NOPs; the model's
/// 64-bit sequence numbers mod 2^32, the window in bytes capped at 65535 as
/// there is no window scaling) or UDP, both with their checksums; payload
/// zeros and zero padding up to the frame size. A header kind the registry
/// does not know is written as zeros of its size after IPv4.
pub fn write_frame(
    pkt: &Packet,
    ends: LinkEnds,
    headers: &[&HeaderDef],
    snaplen: usize,
    out: &mut Vec<u8>,
) -> usize {
    out.clear();
    let ext = pkt.ext();
    let def = ext.and_then(|e| headers.header(e.kind));
    let (l4_bytes, payload) = match pkt.l4 {
        L4::Tcp(t) => (
            20 + pkt.sack().map_or(0, |o| o.wire_bytes() as usize),
            t.payload as usize,
        ),
        L4::Udp(u) => (8, u.payload as usize),
        L4::None => (0, 0),
    };
    let ext_bytes = ext.map_or(0, |e| e.bytes as usize);
    let before_ip = matches!(def, Some(d) if matches!(d.placement, Placement::EtherType(_)));
    let after_ip_bytes = if before_ip { 0 } else { ext_bytes };

    // Ethernet II.
    out.extend_from_slice(&ends.dst_mac);
    out.extend_from_slice(&ends.src_mac);
    let ethertype = match def.map(|d| d.placement) {
        Some(Placement::EtherType(t)) => t,
        _ => ETHERTYPE_IPV4,
    };
    out.extend_from_slice(&ethertype.to_be_bytes());
    if let (true, Some(d), Some(e)) = (before_ip, def, ext) {
        d.emit(e, pkt.ip.proto, out);
    }

    // IPv4, RFC 791.
    let ip_start = out.len();
    let total = 20 + after_ip_bytes + l4_bytes + payload;
    let proto = match def.map(|d| d.placement) {
        Some(Placement::IpProto(p)) => p,
        _ => pkt.ip.proto,
    };
    out.push(0x45);
    out.push((pkt.ip.dscp & 0x3f) << 2 | pkt.ip.ecn as u8);
    out.extend_from_slice(&(total.min(0xffff) as u16).to_be_bytes());
    out.extend_from_slice(&(pkt.uid as u16).to_be_bytes());
    out.extend_from_slice(&0x4000u16.to_be_bytes()); // DF, no fragments
    out.push(pkt.ip.ttl);
    out.push(proto);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&pkt.ip.src.to_be_bytes());
    out.extend_from_slice(&pkt.ip.dst.to_be_bytes());
    let c = ipv4_checksum(&out[ip_start..ip_start + 20]);
    out[ip_start + 10..ip_start + 12].copy_from_slice(&c.to_be_bytes());

    if !before_ip {
        match (def, ext) {
            (Some(d), Some(e)) => d.emit(e, pkt.ip.proto, out),
            (None, Some(e)) => out.resize(out.len() + e.bytes as usize, 0),
            _ => {}
        }
    }

    // TCP (RFC 9293 section 3.1) or UDP (RFC 768); the payload is zeros, so
    // it adds nothing to the checksum but its length.
    let l4_start = out.len();
    let pseudo = |proto: u8, len: usize| {
        let mut s = sum16(0, &pkt.ip.src.to_be_bytes());
        s = sum16(s, &pkt.ip.dst.to_be_bytes());
        s + proto as u32 + len as u32
    };
    match pkt.l4 {
        L4::Tcp(t) => {
            out.extend_from_slice(&t.sport.to_be_bytes());
            out.extend_from_slice(&t.dport.to_be_bytes());
            out.extend_from_slice(&(t.seq as u32).to_be_bytes());
            out.extend_from_slice(&(t.ack as u32).to_be_bytes());
            // Data offset in 32-bit words: 5 plus the options.
            out.push(((l4_bytes / 4) as u8) << 4);
            out.push(t.flags);
            out.extend_from_slice(&(t.window.min(0xffff) as u16).to_be_bytes());
            out.extend_from_slice(&[0, 0, 0, 0]);
            if let Some(o) = pkt.sack() {
                // RFC 2018 section 3: kind 5, length 2 + 8n, then each
                // block's left and right edges (mod 2^32, like seq), after
                // two NOPs (kind 1) that align it as Linux does.
                let blocks = o.blocks();
                out.extend_from_slice(&[1, 1, 5, (2 + 8 * blocks.len()) as u8]);
                for b in blocks {
                    out.extend_from_slice(&(b.start as u32).to_be_bytes());
                    out.extend_from_slice(&(b.end as u32).to_be_bytes());
                }
            }
            let s = sum16(pseudo(PROTO_TCP, l4_bytes + payload), &out[l4_start..]);
            out[l4_start + 16..l4_start + 18].copy_from_slice(&fold(s).to_be_bytes());
        }
        L4::Udp(u) => {
            let len = (8 + payload).min(0xffff) as u16;
            out.extend_from_slice(&u.sport.to_be_bytes());
            out.extend_from_slice(&u.dport.to_be_bytes());
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(&[0, 0]);
            let s = sum16(pseudo(PROTO_UDP, len as usize), &out[l4_start..]);
            // RFC 768: a computed zero is sent as all ones.
            let c = match fold(s) {
                0 => 0xffff,
                c => c,
            };
            out[l4_start + 6..l4_start + 8].copy_from_slice(&c.to_be_bytes());
        }
        L4::None => {}
    }

    // Payload and padding: zeros up to the frame size, cut at the snap length.
    let frame = (pkt.size as usize)
        .saturating_sub(FCS_BYTES)
        .max(out.len() + payload);
    out.truncate(snaplen);
    let want = frame.min(snaplen);
    if out.len() < want {
        out.resize(want, 0);
    }
    frame
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
