//! Every scheme header's wire layout in one list ([`HEADERS`]), and what is
//! generated from it: docs/headers.md ([`headers_markdown`]) and the
//! Wireshark dissector tools/wireshark/pisanet.lua ([`wireshark_lua`]).
//!
//! Each table lives next to the program that reads and writes the header
//! (`hula::HULA_WIRE`, `conga::CONGA_WIRE`, `p4te::SHIM_WIRE`,
//! `p4qcn::P4QCN_WIRE`; DCQCN's CNP, which the receiving host builds, in
//! pisanet-transport's `rate::dcqcn::CNP_WIRE`, and go-back-N's ACK / NAK
//! in `rate::gbn::GBN_ACK_WIRE`); the
//! program's accessors are those tables' fields, so the serializer
//! (`pisanet_net::wire`), the docs and the dissector follow the program.
//! A test here fails when either generated file is stale; `make headers`
//! rewrites them.

use std::fmt::Write as _;

use pisanet_net::wire::{HeaderDef, Placement, Src};

/// Every header a scheme's deparser emits.
pub static HEADERS: [&HeaderDef; 8] = [
    &crate::hula::HULA_WIRE,
    &crate::conga::CONGA_WIRE,
    &crate::p4te::SHIM_WIRE,
    &crate::p4qcn::P4QCN_WIRE,
    &pisanet_transport::rate::dcqcn::CNP_WIRE,
    &pisanet_transport::rate::gbn::GBN_ACK_WIRE,
    &crate::qos::QOS_WIRE,
    &crate::qos::CTL_WIRE,
];

fn placement_text(p: Placement) -> String {
    match p {
        Placement::EtherType(t) => {
            format!("between Ethernet and IPv4; Ethernet type 0x{t:04x}, IPv4 follows")
        }
        Placement::IpProto(p) => format!("after IPv4, whose protocol field is {p}"),
    }
}

/// docs/headers.md.
pub fn headers_markdown() -> String {
    let mut s = String::new();
    s.push_str(
        "# Packets on the wire\n\n\
         <!-- Generated from the header tables of the switch programs \
         (crates/pisanet-schemes/src/wire.rs); `make headers` rewrites it, a test \
         fails when it is stale. Do not edit. -->\n\n\
         A captured packet (`[metrics.pcap]`, docs/results-format.md) is written as \
         the bytes it would have on the wire, in the order a switch program's \
         deparser emits its headers (the model carries at most one scheme header \
         per packet):\n\n\
         ```text\n\
         Ethernet II | [scheme header placed by EtherType] | IPv4 | [scheme header placed by IP protocol] | TCP or UDP | payload (zeros) | padding\n\
         ```\n\n\
         - Ethernet II: locally administered MAC addresses `02:00:` and the node id \
         (32 bits, big-endian) of the transmitting node (source) and of the node at \
         the other end of the link (destination). No FCS (pcap link type 1).\n\
         - IPv4 (RFC 791): IHL 5, DSCP = the flow's traffic class (0 short, 1 large), \
         the two ECN bits the model carries (CE after a switch marked it), identification \
         = low 16 bits of the packet's id, DF, TTL, protocol, a correct header checksum, \
         the model's addresses.\n\
         - TCP (RFC 9293): ports, the model's 64-bit byte offsets mod 2^32 as sequence \
         and acknowledgement numbers (a flow starts at 0), data offset 5 (the model has \
         no options: no SACK, timestamps or window scaling), the flags it has (FIN, SYN, \
         ACK, ECE, CWR), the window in bytes capped at 65535, a correct checksum. \
         UDP (RFC 768): ports, length, checksum.\n\
         - Payload: zeros, and zero padding up to the 64-byte minimum frame; a capture \
         cuts each frame at its snap length but records the full length.\n\
         - The model's strict-priority queue index (`prio`) is not a header field; the \
         per-packet trace (`[metrics.trace]`) records it.\n\n\
         Bits are numbered from the most significant bit of the header's first byte. \
         Wireshark shows every header with tools/wireshark/pisanet.lua \
         (`wireshark -X lua_script:tools/wireshark/pisanet.lua FILE.pcap`, or copy it \
         to `~/.local/lib/wireshark/plugins/`); display filters are \
         `pisanet_<header>.<field>`, e.g. `pisanet_hula.tor_id == 3`.\n",
    );
    for h in HEADERS {
        let _ = write!(
            s,
            "\n## {} (`pisanet_{}`)\n\n{}\n\n\
             - schemes: `{}`\n- placement: {}\n- size: {} bytes\n\n\
             | field | bits | offset | meaning |\n|---|---|---|---|\n",
            h.title,
            h.name,
            h.doc,
            h.schemes,
            placement_text(h.placement),
            h.bytes,
        );
        let mut off = 0u32;
        for f in h.fields {
            let _ = writeln!(s, "| `{}` | {} | {} | {} |", f.name, f.bits, off, f.doc);
            off += f.bits as u32;
        }
    }
    s
}

fn lua_str(s: &str) -> String {
    format!("{s:?}")
}

/// tools/wireshark/pisanet.lua.
pub fn wireshark_lua() -> String {
    let mut s = String::new();
    s.push_str(
        "-- Wireshark dissector for the headers pisanet's switch programs add.\n\
         -- Generated from the header tables of the switch programs\n\
         -- (crates/pisanet-schemes/src/wire.rs); `make headers` rewrites it, a test\n\
         -- fails when it is stale. Do not edit. Layouts: docs/headers.md.\n\
         --\n\
         -- Use: wireshark -X lua_script:tools/wireshark/pisanet.lua FILE.pcap\n\
         --      tshark -X lua_script:tools/wireshark/pisanet.lua -r FILE.pcap -V\n\
         -- or copy this file to ~/.local/lib/wireshark/plugins/.\n\n\
         -- Adds each field {proto field, bit offset, bits} of a header to `tree`;\n\
         -- returns the values by name.\n\
         local function add_fields(tree, tvb, fields)\n\
         \x20   local values = {}\n\
         \x20   for _, f in ipairs(fields) do\n\
         \x20       local field, off, bits, name = f[1], f[2], f[3], f[4]\n\
         \x20       local first = math.floor(off / 8)\n\
         \x20       local last = math.floor((off + bits - 1) / 8)\n\
         \x20       local range = tvb(first, last - first + 1)\n\
         \x20       local v = range:bitfield(off % 8, bits)\n\
         \x20       values[name] = v\n\
         \x20       if field then\n\
         \x20           tree:add(field, range, v)\n\
         \x20       end\n\
         \x20   end\n\
         \x20   return values\n\
         end\n",
    );
    for h in HEADERS {
        let n = h.name;
        let _ = write!(
            s,
            "\n-- {title}: {placement}.\n\
             local p_{n} = Proto(\"pisanet_{n}\", {ptitle})\n\
             local f_{n} = {{\n",
            title = h.title,
            placement = placement_text(h.placement),
            ptitle = lua_str(&format!("pisanet {}", h.title)),
        );
        for f in h.fields.iter().filter(|f| f.src != Src::Zero) {
            let ty = match f.bits {
                0..=8 => "uint8",
                9..=16 => "uint16",
                17..=24 => "uint24",
                _ => "uint32",
            };
            let _ = writeln!(
                s,
                "    {name} = ProtoField.{ty}(\"pisanet_{n}.{name}\", \"{name}\", base.DEC, nil, nil, {doc}),",
                name = f.name,
                doc = lua_str(f.doc),
            );
        }
        s.push_str("}\n");
        let _ = writeln!(
            s,
            "p_{n}.fields = {{ {} }}",
            h.fields
                .iter()
                .filter(|f| f.src != Src::Zero)
                .map(|f| format!("f_{n}.{}", f.name))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(s, "local l_{n} = {{");
        let mut off = 0u32;
        for f in h.fields {
            let field = if f.src == Src::Zero {
                "nil".to_string()
            } else {
                format!("f_{n}.{}", f.name)
            };
            let _ = writeln!(s, "    {{ {field}, {off}, {}, \"{}\" }},", f.bits, f.name);
            off += f.bits as u32;
        }
        s.push_str("}\n");
        let bytes = h.bytes;
        let next = match h.placement {
            Placement::EtherType(_) => format!(
                "    Dissector.get(\"ip\"):call(tvb({bytes}):tvb(), pinfo, tree)\n    return tvb:len()\n"
            ),
            Placement::IpProto(_) if h.fields.iter().any(|f| f.src == Src::NextProto) => format!(
                "    if tvb:len() > {bytes} then\n\
                 \x20       DissectorTable.get(\"ip.proto\"):try(v.next_proto, tvb({bytes}):tvb(), pinfo, tree)\n\
                 \x20   end\n    return tvb:len()\n"
            ),
            Placement::IpProto(_) => format!("    return {bytes}\n"),
        };
        let table = match h.placement {
            Placement::EtherType(t) => {
                format!("DissectorTable.get(\"ethertype\"):add(0x{t:04x}, p_{n})")
            }
            Placement::IpProto(p) => format!("DissectorTable.get(\"ip.proto\"):add({p}, p_{n})"),
        };
        let _ = write!(
            s,
            "function p_{n}.dissector(tvb, pinfo, tree)\n\
             \x20   if tvb:len() < {bytes} then\n        return 0\n    end\n\
             \x20   pinfo.cols.protocol:set({proto})\n\
             \x20   local t = tree:add(p_{n}, tvb(0, {bytes}))\n\
             \x20   local {v}= add_fields(t, tvb, l_{n})\n\
             {next}end\n{table}\n",
            proto = lua_str(&h.name.to_uppercase()),
            v = if matches!(h.placement, Placement::IpProto(_))
                && h.fields.iter().any(|f| f.src == Src::NextProto)
            {
                "v "
            } else {
                "_ "
            },
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use pisanet_engine::SimTime;
    use std::path::PathBuf;

    fn repo_file(rel: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(rel)
    }

    /// Compares `rel` with `want`; rewrites it when PISANET_BLESS=1.
    fn check_generated(rel: &str, want: &str) {
        let path = repo_file(rel);
        if std::env::var("PISANET_BLESS").as_deref() == Ok("1") {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, want).unwrap();
            return;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{rel} is stale: run `make headers` (PISANET_BLESS=1 cargo test -p pisanet-schemes generated)"
        );
    }

    #[test]
    fn generated_headers_md_is_current() {
        check_generated("docs/headers.md", &headers_markdown());
    }

    #[test]
    fn generated_dissector_is_current() {
        check_generated("tools/wireshark/pisanet.lua", &wireshark_lua());
    }

    fn emitted(pkt: &pisanet_net::Packet) -> Vec<u8> {
        let e = pkt.ext().expect("a scheme header");
        let def = HEADERS
            .iter()
            .find(|d| d.kind == e.kind)
            .expect("registered");
        assert_eq!(def.bytes, e.bytes, "{}", def.name);
        let mut out = Vec::new();
        def.emit(e, pkt.ip.proto, &mut out);
        out
    }

    #[test]
    fn hula_probe_bytes() {
        // HULA section 4.2: torID (24 bits) then minUtil (8 bits).
        let p = crate::hula::probe(0x01_0203, 0x9a);
        assert_eq!(emitted(&p), [0x01, 0x02, 0x03, 0x9a]);
        assert_eq!(crate::hula::probe_header(&p), Some((0x01_0203, 0x9a)));
    }

    #[test]
    fn conga_overlay_bytes() {
        let mut p = pisanet_net::Packet {
            size: 100,
            ..Default::default()
        };
        p.ip.proto = pisanet_net::PROTO_TCP;
        let h = crate::conga::CongaHeader {
            src_leaf: 0x1234,
            lbtag: 5,
            ce: 6,
            fb: Some((3, 7)),
            hash: 0xdead_beef,
        };
        h.push(&mut p);
        // src_leaf 0x1234 | lbtag 0101 ce 110 fb_lbtag 0011 fb_metric 111 valid 1 reserved 0 | hash
        // = 0101_1100 0111_1110 = 0x5c 0x7e
        assert_eq!(
            emitted(&p),
            [0x12, 0x34, 0x5c, 0x7e, 0xde, 0xad, 0xbe, 0xef]
        );
        assert_eq!(crate::conga::CongaHeader::of(&p), Some(h));
        // The ECMP tag survives the 4-bit field.
        let ecmp = crate::conga::CongaHeader {
            lbtag: crate::conga::LBTAG_ECMP,
            fb: None,
            ..h
        };
        ecmp.push(&mut p);
        assert_eq!(crate::conga::CongaHeader::of(&p), Some(ecmp));
        assert_eq!(emitted(&p)[2] >> 4, 0xf);
    }

    #[test]
    fn p4te_shim_bytes() {
        use crate::p4te::Shim;
        let mut p = pisanet_net::Packet::default();
        p.ip.proto = pisanet_net::PROTO_TCP;
        let data = Shim {
            flags: Shim::ACK_VALID | Shim::HOLD,
            ack: (1 << 40) | 0x0102_0304,
            inflight: 0x0a0b_0c0d,
            trigger: 0,
        };
        data.put(&mut p);
        assert_eq!(
            emitted(&p),
            [9, 6, 0, 0, 1, 2, 3, 4, 0x0a, 0x0b, 0x0c, 0x0d],
            "flags, next_proto TCP, reserved, ack mod 2^32, in-flight"
        );
        assert_eq!(Shim::of(&p), Some(data), "the model keeps the whole ack");
        let fack = Shim {
            flags: Shim::FACK,
            ack: 7,
            inflight: 0,
            trigger: 0x1111_2222,
        };
        fack.put(&mut p);
        assert_eq!(
            &emitted(&p)[8..],
            &[0x11, 0x11, 0x22, 0x22],
            "a FACK's trigger"
        );
        assert_eq!(Shim::of(&p), Some(fack));
        Shim::mark_acted(&mut p);
        assert_eq!(emitted(&p)[0], (Shim::FACK | Shim::ACTED) as u8);
    }

    #[test]
    fn p4qcn_feedback_and_cnp_bytes() {
        use crate::p4qcn::{FB_CPID, FB_QDEPTH, P4QCN_FB_BYTES, P4QCN_FB_KIND};
        let mut fields = [0; 4];
        FB_QDEPTH.set(&mut fields, 0x0102);
        FB_CPID.set(&mut fields, 0xa0b0);
        let p = pisanet_net::Packet {
            extra: pisanet_net::PacketExtra::of_ext(pisanet_net::ExtHeader {
                kind: P4QCN_FB_KIND,
                bytes: P4QCN_FB_BYTES,
                fields,
            }),
            ..Default::default()
        };
        // qdepth then cpid, big-endian.
        assert_eq!(emitted(&p), [0x01, 0x02, 0xa0, 0xb0]);
        let mut data = pisanet_net::Packet::default();
        data.ip.proto = pisanet_net::PROTO_UDP;
        let cnp = pisanet_transport::rate::dcqcn::cnp_for(SimTime::ZERO, &data);
        // The CNP opcode, then 24 reserved bits.
        assert_eq!(emitted(&cnp), [0x81, 0, 0, 0]);
    }

    #[test]
    fn p4qos_header_and_control_bytes() {
        use crate::qos::{make_ctl, QosHdr, CTL_TARGET_UPDATE, FLAG_LLEP};
        let mut p = pisanet_net::Packet::default();
        p.ip.proto = pisanet_net::PROTO_TCP;
        let h = QosHdr {
            deadline: 0x1234,
            target: 0x0567,
            n_btl: 3,
            flags: FLAG_LLEP,
            t_send: 0xdead_beef,
        };
        h.push(&mut p);
        // deadline | target | n_btl 0011 flags 0001 | t_send
        assert_eq!(
            emitted(&p),
            [0x12, 0x34, 0x05, 0x67, 0x31, 0xde, 0xad, 0xbe, 0xef]
        );
        assert_eq!(QosHdr::of(&p), Some(h));
        make_ctl(&mut p, CTL_TARGET_UPDATE, 768_000, 0x0102_0304);
        assert_eq!(
            emitted(&p),
            [2, 0x00, 0x0b, 0xb8, 0x00, 1, 2, 3, 4],
            "type, trgt_new = 768000 ns, id"
        );
    }

    #[test]
    fn every_header_is_whole_bytes_and_fits_the_model() {
        let mut kinds = Vec::new();
        let mut placements = Vec::new();
        for h in HEADERS {
            assert_eq!(h.bits(), h.bytes as u32 * 8, "{}", h.name);
            assert!(!kinds.contains(&h.kind), "{}: kind used twice", h.name);
            kinds.push(h.kind);
            // The dissector registers one protocol per EtherType or IP protocol.
            assert!(
                !placements.contains(&h.placement),
                "{}: placement used twice",
                h.name
            );
            placements.push(h.placement);
            let mut names: Vec<&str> = Vec::new();
            for f in h.fields {
                assert!((1..=32).contains(&f.bits), "{}.{}", h.name, f.name);
                if f.src != Src::Zero {
                    assert!(!names.contains(&f.name), "{}.{} twice", h.name, f.name);
                    names.push(f.name);
                }
                if let Src::Ext { word, shift } = f.src {
                    assert!(
                        word < 4 && shift as u32 + f.bits as u32 <= 64,
                        "{}.{}",
                        h.name,
                        f.name
                    );
                }
            }
            // No two fields share model bits.
            for (i, a) in h.fields.iter().enumerate() {
                for b in &h.fields[i + 1..] {
                    if let (
                        Src::Ext {
                            word: wa,
                            shift: sa,
                        },
                        Src::Ext {
                            word: wb,
                            shift: sb,
                        },
                    ) = (a.src, b.src)
                    {
                        let overlap = wa == wb && sa < sb + b.bits && sb < sa + a.bits;
                        assert!(!overlap, "{}: {} and {} overlap", h.name, a.name, b.name);
                    }
                }
            }
        }
    }
}
