use super::*;
use crate::packet::{tcp_flags, Ecn, Ipv4, Tcp, Udp};

const ENDS: LinkEnds = LinkEnds {
    src_mac: [2, 0, 0, 0, 0, 1],
    dst_mac: [2, 0, 0, 0, 0, 9],
};

fn tcp_packet() -> Packet {
    Packet {
        uid: 0x1_2345,
        flow: 7,
        size: Packet::tcp_wire_size(100),
        ip: Ipv4 {
            src: 0x0a00_0001,
            dst: 0x0a00_0102,
            proto: PROTO_TCP,
            dscp: 1,
            ecn: Ecn::Ce,
            ttl: 63,
        },
        l4: L4::Tcp(Tcp {
            sport: 10_000,
            dport: 80,
            seq: (5 << 32) | 1000,
            ack: 77,
            flags: tcp_flags::ACK | tcp_flags::ECE | tcp_flags::CWR | tcp_flags::FIN,
            window: 1 << 20,
            payload: 100,
        }),
        ..Default::default()
    }
}

/// Verifies a whole header whose checksum field is filled: the sum is 0xffff.
fn verifies(sum_over: &[u8], pseudo: u32) -> bool {
    fold(sum16(pseudo, sum_over)) == 0
}

#[test]
fn ipv4_checksum_matches_a_known_header() {
    // The example header of Wikipedia's "Internet checksum" article.
    let h = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];
    assert_eq!(ipv4_checksum(&h), 0xb861);
    let mut zeroed = h;
    zeroed[10] = 0;
    zeroed[11] = 0;
    assert_eq!(ipv4_checksum(&zeroed), 0xb861);
}

#[test]
fn tcp_frame_layout() {
    let pkt = tcp_packet();
    let mut out = Vec::new();
    let orig = write_frame(&pkt, ENDS, &[], 65_535, &mut out);
    assert_eq!(orig, 14 + 20 + 20 + 100);
    assert_eq!(out.len(), orig);
    assert_eq!(&out[0..6], &ENDS.dst_mac);
    assert_eq!(&out[6..12], &ENDS.src_mac);
    assert_eq!(&out[12..14], &[0x08, 0x00]);
    let ip = &out[14..34];
    assert_eq!(ip[0], 0x45);
    assert_eq!(ip[1], 1 << 2 | 3, "DSCP 1, ECN CE");
    assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 140);
    assert_eq!(
        u16::from_be_bytes([ip[4], ip[5]]),
        0x2345,
        "id = uid mod 2^16"
    );
    assert_eq!(ip[8], 63);
    assert_eq!(ip[9], 6);
    assert_eq!(&ip[12..16], &[10, 0, 0, 1]);
    assert_eq!(&ip[16..20], &[10, 0, 1, 2]);
    assert!(verifies(ip, 0), "IPv4 header checksum");
    let tcp = &out[34..54];
    assert_eq!(u16::from_be_bytes([tcp[0], tcp[1]]), 10_000);
    assert_eq!(u16::from_be_bytes([tcp[2], tcp[3]]), 80);
    assert_eq!(
        u32::from_be_bytes(tcp[4..8].try_into().unwrap()),
        1000,
        "seq mod 2^32"
    );
    assert_eq!(u32::from_be_bytes(tcp[8..12].try_into().unwrap()), 77);
    assert_eq!(tcp[12], 0x50);
    assert_eq!(tcp[13], 0x80 | 0x40 | 0x10 | 0x01, "CWR ECE ACK FIN");
    assert_eq!(
        u16::from_be_bytes([tcp[14], tcp[15]]),
        0xffff,
        "window capped"
    );
    let pseudo = sum16(sum16(0, &[10, 0, 0, 1]), &[10, 0, 1, 2]) + 6 + 120;
    assert!(verifies(&out[34..], pseudo), "TCP checksum");
    assert!(out[54..].iter().all(|&b| b == 0));
}

#[test]
fn snaplen_cuts_the_payload_not_the_length() {
    let pkt = tcp_packet();
    let mut out = Vec::new();
    let orig = write_frame(&pkt, ENDS, &[], 60, &mut out);
    assert_eq!((orig, out.len()), (154, 60));
}

#[test]
fn udp_frame_and_min_frame_padding() {
    let pkt = Packet {
        size: Packet::udp_wire_size(2),
        ip: Ipv4 {
            src: 1,
            dst: 2,
            proto: PROTO_UDP,
            ttl: 64,
            ..Default::default()
        },
        l4: L4::Udp(Udp {
            sport: 5,
            dport: 6,
            payload: 2,
            psn: 0,
            ack_req: false,
        }),
        ..Default::default()
    };
    let mut out = Vec::new();
    let orig = write_frame(&pkt, ENDS, &[], 65_535, &mut out);
    assert_eq!(orig, 60, "a 64-byte frame without its FCS");
    assert_eq!(out.len(), 60);
    assert_eq!(
        u16::from_be_bytes([out[16], out[17]]),
        30,
        "IPv4 length excludes padding"
    );
    assert_eq!(u16::from_be_bytes([out[38], out[39]]), 10, "UDP length");
    let pseudo = sum16(sum16(0, &1u32.to_be_bytes()), &2u32.to_be_bytes()) + 17 + 10;
    assert!(verifies(&out[34..44], pseudo), "UDP checksum");
}

static TEST_FIELDS: [FieldDef; 5] = [
    FieldDef::ext("a", 4, 0, 0, "four bits"),
    FieldDef::ext("b", 12, 0, 8, "twelve bits"),
    FieldDef::next_proto(),
    FieldDef::reserved(3),
    FieldDef::ext("c", 5, 1, 0, "five bits"),
];
static TEST_HEADER: HeaderDef = HeaderDef {
    name: "test",
    title: "test",
    schemes: "none",
    kind: 0x7777,
    bytes: 4,
    placement: Placement::IpProto(254),
    doc: "",
    fields: &TEST_FIELDS,
};

#[test]
fn header_fields_pack_msb_first() {
    assert_eq!(TEST_HEADER.bits(), 32);
    let mut f = [0u64; 4];
    let a = TEST_HEADER.field("a").unwrap();
    a.set(&mut f, 0x1f);
    assert_eq!(a.get(&f), 0xf, "a set cuts the value to the width");
    TEST_HEADER.field("b").unwrap().set(&mut f, 0xabc);
    TEST_HEADER.field("c").unwrap().set(&mut f, 0x15);
    assert_eq!(f, [0x000a_bc0f, 0x15, 0, 0]);
    let h = ExtHeader {
        kind: 0x7777,
        bytes: 4,
        fields: f,
    };
    let mut out = Vec::new();
    TEST_HEADER.emit(&h, 6, &mut out);
    // a=1111 b=1010_1011_1100 next=0000_0110 reserved=000 c=10101
    assert_eq!(out, [0xfa, 0xbc, 0x06, 0x15]);
}

#[test]
fn header_after_ipv4_names_itself_in_the_protocol_field() {
    let mut pkt = tcp_packet();
    pkt.set_ext(Some(ExtHeader {
        kind: 0x7777,
        bytes: 4,
        fields: [0x000a_bc0f, 0x15, 0, 0],
    }));
    pkt.size += 4;
    let mut out = Vec::new();
    let orig = write_frame(&pkt, ENDS, &[&TEST_HEADER], 65_535, &mut out);
    assert_eq!(orig, 158);
    assert_eq!(out[23], 254, "IPv4 protocol names the header");
    assert_eq!(u16::from_be_bytes([out[16], out[17]]), 144);
    assert_eq!(&out[34..38], &[0xfa, 0xbc, 0x06, 0x15]);
    assert_eq!(
        u16::from_be_bytes([out[38], out[39]]),
        10_000,
        "TCP follows"
    );
    assert!(verifies(&out[14..34], 0));
}

#[test]
fn header_before_ipv4_takes_the_ethertype() {
    let mut def = TEST_HEADER;
    def.placement = Placement::EtherType(ETHERTYPE_EXPERIMENTAL_1);
    let mut pkt = tcp_packet();
    pkt.set_ext(Some(ExtHeader {
        kind: 0x7777,
        bytes: 4,
        fields: [0, 0, 0, 0],
    }));
    pkt.size += 4;
    let mut out = Vec::new();
    write_frame(&pkt, ENDS, &[&def], 65_535, &mut out);
    assert_eq!(&out[12..14], &[0x88, 0xb5]);
    assert_eq!(&out[14..18], &[0, 0, 0x06, 0], "next_proto = TCP");
    assert_eq!(out[18], 0x45);
    assert_eq!(out[27], 6, "IPv4 protocol stays TCP");
}

#[test]
fn sack_option_follows_the_tcp_header_and_counts_in_its_length() {
    use crate::packet::{SackBlock, SackOption};
    let mut pkt = tcp_packet();
    if let L4::Tcp(t) = &mut pkt.l4 {
        t.payload = 0;
    }
    let blocks = [
        SackBlock {
            start: 3000,
            end: 4000,
        },
        SackBlock {
            start: (1 << 32) + 5000,
            end: (1 << 32) + 7000,
        },
    ];
    pkt.set_sack(Some(SackOption::new(&blocks)));
    pkt.size = Packet::tcp_wire_size_with_options(0, 20);
    let mut out = Vec::new();
    let orig = write_frame(&pkt, ENDS, &[], 65_535, &mut out);
    assert_eq!(orig, 14 + 20 + 20 + 20);
    let tcp = &out[34..];
    // Data offset: 10 words (20 B header + 20 B options).
    assert_eq!(tcp[12] >> 4, 10);
    assert_eq!(&tcp[20..24], &[1, 1, 5, 18]);
    assert_eq!(&tcp[24..28], &3000u32.to_be_bytes());
    assert_eq!(&tcp[28..32], &4000u32.to_be_bytes());
    assert_eq!(&tcp[32..36], &5000u32.to_be_bytes());
    assert_eq!(&tcp[36..40], &7000u32.to_be_bytes());
    // IPv4 total length covers the options; the TCP checksum verifies.
    assert_eq!(u16::from_be_bytes([out[16], out[17]]), 60);
    let mut pseudo = sum16(0, &out[26..34]);
    pseudo += u32::from(PROTO_TCP) + 40;
    assert!(verifies(&out[34..74], pseudo));
}
