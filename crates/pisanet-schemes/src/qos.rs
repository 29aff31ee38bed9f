//! The per-packet QoS machinery that P4QoS (seed 003) and its baselines
//! (`noaqm`, `codel`, `prio`) share, written once like `l3.rs`: the QoS
//! header and where it comes from, the link latency estimation protocol
//! (LLEP, P4QoS section II.A), the deadline accounting of section II, and
//! the control agent that installs all of it. Each scheme adds its queue
//! management on top (p4qos.rs, codel.rs, prio.rs, noaqm.rs); the baselines
//! carry the same header and account deadlines the same way, so the
//! in-network late counts and the header overhead are comparable.
//!
//! ```text
//! first switch (packet from a host port):  qos_deadline (ternary src, dst, dport, dscp) ─hit─► push QoS header, d = t_t = deadline
//! every switch, ingress:  LLEP-stamped data ─► I2E clone to the port it came in on (the LLEP reply, step 2)
//!                         LLEP reply        ─► LL_est = (t_ingress - (t_send + t_q + t_p)) >> 1 ─► egress of that port: ll_est[port], consumed
//! every switch, egress (data with a QoS header):
//!     d -= (t_q + t_p) + ll_est[egress_port]        late: counted, flagged (or dropped)
//!     [the scheme's AQM]
//!     egress port towards a switch: LLEP stamp t_send now and then (llep_last[port])
//!     egress port towards a host (last switch): pop the QoS header
//! ```
//!
//! Registers live in egress (a register belongs to one half of the
//! pipeline): an LLEP reply reaches the egress of the port it measures
//! through the traffic manager and writes `ll_est` there.

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use crate::blocks::ns32;
use crate::l3::{self, RouteAgent, FIVE_TUPLE_FIELDS, L3};
use pisanet_engine::{units, SimTime};
use pisanet_net::wire::{FieldDef, HeaderDef, Placement};
use pisanet_net::{ExtHeader, Packet, PortNo, L4, MIN_FRAME_BYTES};
use pisanet_pisa::{
    matches, ActionCall, ActionId, CloneType, ControlAgent, CounterId, CounterKind, CounterSpec,
    CpuApi, Ctx, HashAlgo, HashId, HashSpec, InstanceType, KeyField, MatchKind, Pipeline,
    RegisterId, RegisterSpec, StandardMetadata, SwitchInfo, TableEntry, TableId, TableSpec,
    UpdateType, UserMeta, Write,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------- headers

/// Local Experimental EtherType 2 (IEEE Std 802, clause 9.2.2): the QoS
/// header sits between Ethernet and IPv4 (CONGA uses type 1).
pub const ETHERTYPE_QOS: u16 = 0x88b6;
/// IPv4 protocol of P4QoS control packets (LLEP replies, target updates):
/// an unassigned number (253 and 254, RFC 3692's, are HULA's and P4TE's).
pub const PROTO_QOS_CTL: u8 = 252;
/// `ExtHeader::kind` of the QoS header and of control packets.
pub const QOS_HEADER: u16 = 0x5134;
pub const QOS_CTL: u16 = 0x5143;
/// Bytes of the QoS header: deadline (2), target (2), bottleneck count and
/// flags (1): the paper's "about 5 bytes" (section II.C: 4 us at 10 Mb/s),
/// plus the LLEP stamp (4).
pub const QOS_BYTES: u16 = 9;
/// Bytes of a control packet's header: type (1), two 32-bit values.
pub const CTL_BYTES: u16 = 9;

pub const QOS_DEADLINE: FieldDef = FieldDef::ext(
    "deadline",
    16,
    0,
    0,
    "remaining deadline d, in units of 2^time_shift ns (P4QoS section II)",
);
pub const QOS_TARGET: FieldDef = FieldDef::ext(
    "target",
    16,
    0,
    16,
    "t_t: the latency left for queueing and processing, same unit (Alg. 1 line 2)",
);
pub const QOS_NBTL: FieldDef = FieldDef::ext(
    "n_btl",
    4,
    0,
    32,
    "bottlenecks the packet met so far, saturating at 15 (Alg. 1 line 4)",
);
pub const QOS_FLAGS: FieldDef = FieldDef::ext(
    "flags",
    4,
    0,
    36,
    "1: t_send is an LLEP stamp (section II.A); 2: the packet is past its deadline",
);
pub const QOS_T_SEND: FieldDef = FieldDef::ext(
    "t_send",
    32,
    1,
    0,
    "LLEP: the upstream switch's egress timestamp, ns mod 2^32 (section II.A, step 1)",
);
pub static QOS_WIRE: HeaderDef = HeaderDef {
    name: "p4qos",
    title: "P4QoS QoS header",
    schemes: "p4qos, p4qos_codel, p4qos_interval, noaqm, codel, prio",
    kind: QOS_HEADER,
    bytes: QOS_BYTES,
    placement: Placement::EtherType(ETHERTYPE_QOS),
    doc: "Pushed by the first switch on data packets of flows with a deadline (its \
          `qos_deadline` table), popped by the last switch before the receiving host \
          (P4QoS section II). The LLEP stamp rides in the same header (the model carries \
          one scheme header per packet).",
    fields: &[QOS_DEADLINE, QOS_TARGET, QOS_NBTL, QOS_FLAGS, QOS_T_SEND],
};

pub const CTL_TYPE: FieldDef = FieldDef::ext(
    "type",
    8,
    0,
    0,
    "1: LLEP reply (section II.A, step 3); 2: target update (Alg. 1 line 16)",
);
pub const CTL_A: FieldDef = FieldDef::ext(
    "a",
    32,
    1,
    0,
    "reply: t_send as stamped (ns mod 2^32); update: trgt_new (ns)",
);
pub const CTL_B: FieldDef = FieldDef::ext(
    "b",
    32,
    2,
    0,
    "reply: t_q + t_p at the downstream switch (ns); update: id, the flow's CRC-32",
);
pub static CTL_WIRE: HeaderDef = HeaderDef {
    name: "p4qos_ctl",
    title: "P4QoS control packet",
    schemes: "p4qos, p4qos_codel, p4qos_interval (target updates); all QoS schemes (LLEP replies)",
    kind: QOS_CTL,
    bytes: CTL_BYTES,
    placement: Placement::IpProto(PROTO_QOS_CTL),
    doc: "Switch-made minimum-sized frames: an LLEP reply goes back over one link to the \
          switch that stamped (section II.A); a target update goes back along the reverse \
          path, addresses swapped (section II.C), from the last switch to the first.",
    fields: &[CTL_TYPE, CTL_A, CTL_B],
};

pub const FLAG_LLEP: u64 = 1;
pub const FLAG_LATE: u64 = 2;
pub const CTL_LLEP_REPLY: u64 = 1;
pub const CTL_TARGET_UPDATE: u64 = 2;

/// The QoS header's fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QosHdr {
    pub deadline: u64,
    pub target: u64,
    pub n_btl: u64,
    pub flags: u64,
    pub t_send: u64,
}

impl QosHdr {
    /// The packet's QoS header, if it has one.
    #[inline]
    pub fn of(pkt: &Packet) -> Option<QosHdr> {
        let e = pkt.ext().filter(|e| e.kind == QOS_HEADER)?;
        let f = &e.fields;
        Some(QosHdr {
            deadline: QOS_DEADLINE.get(f),
            target: QOS_TARGET.get(f),
            n_btl: QOS_NBTL.get(f),
            flags: QOS_FLAGS.get(f),
            t_send: QOS_T_SEND.get(f),
        })
    }

    /// Writes the fields into the packet's QoS header (each cut to its width).
    pub fn put(&self, pkt: &mut Packet) {
        let e = pkt.ext_or_insert_with(|| ExtHeader {
            kind: QOS_HEADER,
            bytes: QOS_BYTES,
            fields: [0; 4],
        });
        e.kind = QOS_HEADER;
        e.bytes = QOS_BYTES;
        let f = &mut e.fields;
        QOS_DEADLINE.set(f, self.deadline);
        QOS_TARGET.set(f, self.target);
        QOS_NBTL.set(f, self.n_btl);
        QOS_FLAGS.set(f, self.flags);
        QOS_T_SEND.set(f, self.t_send);
    }

    /// `hdr.qos.setValid()`: the header grows the packet.
    pub fn push(&self, pkt: &mut Packet) {
        self.put(pkt);
        pkt.size += QOS_BYTES as u32;
    }

    /// `hdr.qos.setInvalid()` (the last switch, before the host).
    pub fn pop(pkt: &mut Packet) {
        if pkt.ext().is_some_and(|e| e.kind == QOS_HEADER) {
            pkt.set_ext(None);
            pkt.size -= QOS_BYTES as u32;
        }
    }
}

/// A control packet's (type, a, b), if `pkt` is one.
#[inline]
pub fn ctl_of(pkt: &Packet) -> Option<(u64, u64, u64)> {
    let e = pkt.ext().filter(|e| e.kind == QOS_CTL)?;
    Some((
        CTL_TYPE.get(&e.fields),
        CTL_A.get(&e.fields),
        CTL_B.get(&e.fields),
    ))
}

/// Turns a (cloned) packet into a control packet: the deparser emits only
/// Ethernet, IPv4 and this header, padded to the minimum frame (the clone is
/// truncated, as a mirror session's truncation does).
pub fn make_ctl(pkt: &mut Packet, ty: u64, a: u64, b: u64) {
    let mut fields = [0; 4];
    CTL_TYPE.set(&mut fields, ty);
    CTL_A.set(&mut fields, a);
    CTL_B.set(&mut fields, b);
    pkt.set_ext(Some(ExtHeader {
        kind: QOS_CTL,
        bytes: CTL_BYTES,
        fields,
    }));
    pkt.ip.proto = PROTO_QOS_CTL;
    pkt.ip.ecn = pisanet_net::Ecn::NotEct;
    pkt.l4 = L4::None;
    pkt.flow = Packet::NO_FLOW;
    pkt.prio = 0;
    pkt.size = MIN_FRAME_BYTES;
}

// ---------------------------------------------------------------- parameters

/// What a switch does with a packet past its deadline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LateAction {
    /// Count it, set the header's late flag, forward it (default: the
    /// receiver still gets it and the experiment measures it).
    #[default]
    Mark,
    /// Count it and drop it.
    Drop,
}

/// One entry of the first switch's `qos_deadline` table: the flows it
/// matches (absent keys match anything) and their deadline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeadlineEntry {
    /// Source IPv4 address ("10.0.0.2"); absent = any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    /// Destination IPv4 address; absent = any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<String>,
    /// Source port; absent = any. (The entries made from the flows'
    /// `deadline_us` name it: docs/schemes/p4qos.md.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 65535))]
    pub sport: Option<u16>,
    /// Destination port; absent = any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 65535))]
    pub dport: Option<u16>,
    /// IPv4 DSCP; absent = any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 63))]
    pub dscp: Option<u8>,
    /// The end-to-end deadline of the flow's packets (us).
    #[schemars(range(min = 1, max = 1e8), extend("x-unit" = "us"))]
    pub deadline_us: u64,
}

/// The shared QoS parameters (`[scheme.qos]`; P4QoS section II).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct QosParams {
    /// Deadlines by flow, installed in the first switch's `qos_deadline`
    /// table (first match in list order wins), after one exact entry per
    /// flow with its own `deadline_us` (flow list or group). A flow no
    /// entry matches carries no QoS header. Empty (default): only the
    /// flows' own deadlines.
    pub deadlines: Vec<DeadlineEntry>,
    /// The header's time unit is 2^time_shift ns (default 10: 1.024 us, so a
    /// 16-bit deadline reaches 67 ms; 12 reaches 268 ms). Nanosecond
    /// timestamps convert to it by a shift.
    #[schemars(range(min = 0, max = 20))]
    pub time_shift: u8,
    /// An upstream switch stamps an LLEP timestamp on a data packet leaving
    /// a port at most this often (us; section II.A: "periodically"; at
    /// most 4 s, as the stamps are 32-bit nanoseconds).
    #[serde(rename = "llep_interval_us", with = "units::us")]
    #[schemars(with = "f64", range(min = 0.001, max = 4e6), extend("x-unit" = "us"))]
    pub llep_interval: SimTime,
    /// A packet past its deadline: "mark" (count, flag and forward) or "drop".
    pub late: LateAction,
}

impl Default for QosParams {
    fn default() -> Self {
        QosParams {
            deadlines: Vec::new(),
            time_shift: 10,
            llep_interval: SimTime::from_ms(100),
            late: LateAction::Mark,
        }
    }
}

/// Parses a dotted IPv4 address.
pub fn parse_ipv4(s: &str) -> Option<u32> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut a = 0u32;
    for p in parts {
        a = (a << 8) | p.parse::<u8>().ok()? as u32;
    }
    Some(a)
}

impl QosParams {
    pub fn validate(&self) -> Result<(), String> {
        let max = self.max_deadline_us();
        for (i, e) in self.deadlines.iter().enumerate() {
            for (key, v) in [("src", &e.src), ("dst", &e.dst)] {
                if let Some(a) = v {
                    if parse_ipv4(a).is_none() {
                        return Err(format!(
                            "scheme.qos.deadlines[{i}].{key}: must be a dotted IPv4 address, got {a:?}"
                        ));
                    }
                }
            }
            if e.deadline_us > max {
                return Err(format!(
                    "scheme.qos.deadlines[{i}].deadline_us: the 16-bit header field holds at most {max} us with scheme.qos.time_shift = {}; got {} (raise time_shift)",
                    self.time_shift, e.deadline_us
                ));
            }
        }
        Ok(())
    }

    /// The largest deadline the header holds (us; control plane).
    #[allow(clippy::integer_division)]
    pub fn max_deadline_us(&self) -> u64 {
        (QOS_DEADLINE.mask() << self.time_shift) / 1000
    }

    /// A deadline in header units (control plane).
    #[allow(clippy::integer_division)]
    pub fn units(&self, us: u64) -> u64 {
        ((us * 1000) >> self.time_shift).min(QOS_DEADLINE.mask())
    }
}

// ---------------------------------------------------------------- the program's shared part

/// Actions of `qos_deadline` and `port_kind`.
pub const SET_DEADLINE: ActionId = ActionId(0);
pub const NO_DEADLINE: ActionId = ActionId(1);
pub const SET_PORT_KIND: ActionId = ActionId(0);

/// User metadata, word 0: flags set in ingress or egress.
pub const M_FROM_HOST: u64 = 1;
/// An LLEP reply on its way to the egress of the port it measured; word 1
/// holds LL_est (ns).
pub const M_LLEP_APPLY: u64 = 2;
/// A scheme's own flags start here.
pub const M_SCHEME: u64 = 1 << 8;

/// Clone session that sends a copy out of port `p` (the agent maps each).
#[inline]
pub fn session_of(port: PortNo) -> u16 {
    port + 1
}

/// What ingress made of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// A data packet (with or without a QoS header), routed.
    Data,
    /// An LLEP reply: handled (sent to its port's egress).
    LlepReply,
    /// A target update (type, a, b): the scheme decides.
    Ctl(u64, u64, u64),
}

/// A data packet with a QoS header in egress, after the deadline accounting.
#[derive(Clone, Copy, Debug)]
pub struct QosView {
    pub hdr: QosHdr,
    /// LL_est of the egress port's link (ns; 0 towards a host).
    pub ll_est_ns: u64,
    /// This switch's queueing delay (ns; `deq_timedelta`).
    pub qdelay_ns: u64,
    /// The egress port faces a host: this is the last switch.
    pub last_switch: bool,
    /// The ingress port faces a host: this is the first switch.
    pub first_switch: bool,
}

/// The shared program objects.
#[derive(Clone, Copy, Debug)]
pub struct QosCore {
    pub l3: L3,
    pub ecmp_hash: HashId,
    hash_tier: u8,
    /// `qos_deadline`: the first switch's deadline per flow.
    pub qos_deadline: TableId,
    /// `port_kind`: 1 for a port towards a host, 0 towards a switch.
    pub port_kind: TableId,
    /// LL_est per port (ns; section II.A "latency register").
    pub ll_est: RegisterId,
    /// When this switch last stamped LLEP on a port (ns mod 2^32).
    pub llep_last: RegisterId,
    pub deadline_missed: CounterId,
    pub llep_replies: CounterId,
    /// Each ll_est written (instrumentation: the estimate in ns as bytes).
    pub llep_estimates: CounterId,
    pub time_shift: u8,
    llep_interval_ns: u64,
    late: LateAction,
    /// `prio`: the first switch sets the packet's strict-priority queue to
    /// its deadline's rank (`set_deadline`'s second parameter).
    pub set_prio: bool,
}

/// Ports of a switch, for per-port register sizes (at least one).
pub fn port_slots(info: &SwitchInfo) -> u32 {
    (info.n_ports as u32).max(24)
}

impl QosCore {
    /// Declares the shared objects.
    pub fn declare(
        pipe: &mut Pipeline,
        qos: &QosParams,
        info: &SwitchInfo,
        ecmp_hash_per_tier: bool,
    ) -> QosCore {
        let l3 = L3::declare(pipe, HashAlgo::Crc32);
        let ecmp_hash = pipe.hash(HashSpec {
            name: "ecmp_hash",
            algo: HashAlgo::Crc32,
            fields: FIVE_TUPLE_FIELDS.to_vec(),
        });
        let qos_deadline = pipe.table(TableSpec {
            name: "qos_deadline",
            keys: vec![
                KeyField {
                    name: "hdr.ipv4.src",
                    kind: MatchKind::Ternary,
                    width: 32,
                },
                KeyField {
                    name: "hdr.ipv4.dst",
                    kind: MatchKind::Ternary,
                    width: 32,
                },
                // The two ports as one 32-bit field (sport ++ dport; the
                // model's keys have at most four fields).
                KeyField {
                    name: "l4.sport ++ l4.dport",
                    kind: MatchKind::Ternary,
                    width: 32,
                },
                KeyField {
                    name: "hdr.ipv4.dscp",
                    kind: MatchKind::Ternary,
                    width: 6,
                },
            ],
            actions: vec!["set_deadline", "no_deadline"],
            // One entry per flow with a deadline (crates/pisanet/src/qos_deadlines.rs).
            size: (qos.deadlines.len() as u32).max(1024),
            default_action: ActionCall::bare(NO_DEADLINE),
            direct_counter: false,
            direct_meter: None,
        });
        let port_kind = pipe.table(TableSpec {
            name: "port_kind",
            keys: vec![KeyField {
                name: "port",
                kind: MatchKind::Exact,
                width: 9,
            }],
            actions: vec!["set_port_kind"],
            size: 512,
            default_action: ActionCall::bare(SET_PORT_KIND),
            direct_counter: false,
            direct_meter: None,
        });
        let slots = port_slots(info);
        let ll_est = pipe.register(RegisterSpec {
            name: "ll_est",
            width: 32,
            size: slots,
            holds: "LL_est of the port's link, ns (P4QoS section II.A, eq. 1)",
        });
        let llep_last = pipe.register(RegisterSpec {
            name: "llep_last",
            width: 32,
            size: slots,
            holds: "when this switch last stamped LLEP on the port, ns mod 2^32",
        });
        let deadline_missed = pipe.counter(CounterSpec {
            name: "qos_deadline_missed",
            kind: CounterKind::Packets,
            size: 1,
        });
        let llep_replies = pipe.counter(CounterSpec {
            name: "qos_llep_replies",
            kind: CounterKind::Packets,
            size: 1,
        });
        // Instrumentation, not part of the paper's program: each ll_est
        // written, its nanoseconds summed in the bytes field (mean estimate
        // = bytes / packets; docs/schemes/p4qos.md "Counters").
        let llep_estimates = pipe.counter(CounterSpec {
            name: "qos_llep_estimate_ns",
            kind: CounterKind::PacketsAndBytes,
            size: 1,
        });
        pipe.keep_original();
        QosCore {
            l3,
            ecmp_hash,
            hash_tier: l3::hash_tier(info.tier, ecmp_hash_per_tier),
            qos_deadline,
            port_kind,
            ll_est,
            llep_last,
            deadline_missed,
            llep_replies,
            llep_estimates,
            time_shift: qos.time_shift,
            llep_interval_ns: ns32(qos.llep_interval),
            late: qos.late,
            set_prio: false,
        }
    }

    /// Whether `port` faces a host (`port_kind`).
    #[inline]
    pub fn host_port(&self, ctx: &mut Ctx<'_>, port: PortNo) -> bool {
        ctx.apply(self.port_kind, [port as u64, 0, 0, 0])
            .action
            .params[0]
            == 1
    }

    /// Routes `pkt` (LPM, ECMP by the 5-tuple).
    #[inline]
    pub fn route(&self, ctx: &mut Ctx<'_>, pkt: &Packet, sm: &mut StandardMetadata) {
        let (hash, tier) = (self.ecmp_hash, self.hash_tier);
        self.l3.route(ctx, pkt, sm, |ctx| {
            l3::member_hash(ctx.hash(hash, &l3::five_tuple(pkt)), tier)
        });
    }

    /// The shared ingress: the first switch's QoS header, LLEP (section
    /// II.A steps 2 and 4), routing.
    pub fn ingress(
        &self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        meta: &mut UserMeta,
    ) -> Arrival {
        if let Some((ty, a, b)) = ctl_of(pkt) {
            if ty == CTL_LLEP_REPLY {
                // Step 4: LL_est = (t_ingress - (t_send + t_q + t_p)) / 2,
                // in 32-bit nanosecond arithmetic (wrapping), the /2 a shift.
                let t_ingress = ns32(sm.ingress_global_timestamp);
                let rtt = t_ingress.wrapping_sub(a).wrapping_sub(b) & 0xffff_ffff;
                meta[0] |= M_LLEP_APPLY;
                meta[1] = rtt >> 1;
                // The register is egress's: the reply goes to the egress
                // of the port it measured, where it is consumed.
                sm.egress_spec = sm.ingress_port;
                ctx.count(self.llep_replies, 0, 0);
                return Arrival::LlepReply;
            }
            return Arrival::Ctl(ty, a, b);
        }
        let from_host = self.host_port(ctx, sm.ingress_port);
        if from_host {
            meta[0] |= M_FROM_HOST;
            // Section II: the QoS header with the flow's deadline d, and
            // t_t initialized to d (section II.B).
            if pkt.ext().is_none() {
                let (src, dst, _, sport, dport) = pkt.five_tuple();
                let ports = ((sport as u64) << 16) | dport as u64;
                let key = [src as u64, dst as u64, ports, pkt.ip.dscp as u64];
                let hit = ctx.apply(self.qos_deadline, key);
                if hit.action.action == SET_DEADLINE {
                    let d = hit.action.params[0];
                    if self.set_prio {
                        pkt.prio = hit.action.params[1] as u8;
                    }
                    QosHdr {
                        deadline: d,
                        target: d,
                        ..Default::default()
                    }
                    .push(pkt);
                }
            }
        } else if let Some(h) = QosHdr::of(pkt) {
            if h.flags & FLAG_LLEP != 0 {
                // Step 2: keep the ingress timestamp (the clone's enqueue
                // time) and clone the packet back out of the port it came
                // in on; egress turns the clone into the reply.
                sm.clone_to(CloneType::I2E, session_of(sm.ingress_port));
                QosHdr {
                    flags: h.flags & !FLAG_LLEP,
                    t_send: 0,
                    ..h
                }
                .put(pkt);
            }
        }
        self.route(ctx, pkt, sm);
        Arrival::Data
    }

    /// The shared egress of what is not a data packet: an LLEP reply at
    /// the port it measured (writes `ll_est`, consumed) and the LLEP clone
    /// (becomes the reply, step 3). True if it handled the packet.
    pub fn egress_llep(
        &self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        meta: &UserMeta,
    ) -> bool {
        if meta[0] & M_LLEP_APPLY != 0 {
            ctx.register_write(self.ll_est, sm.egress_port as u32, meta[1]);
            ctx.count(self.llep_estimates, 0, meta[1].min(u32::MAX as u64) as u32);
            sm.terminate();
            return true;
        }
        if sm.instance_type == InstanceType::IngressClone {
            if let Some(h) = QosHdr::of(pkt) {
                // Step 2 (end): t_p + t_q = egress timestamp - ingress timestamp.
                let t_qp = sm
                    .egress_global_timestamp
                    .saturating_sub(sm.ingress_global_timestamp);
                make_ctl(pkt, CTL_LLEP_REPLY, h.t_send, ns32(t_qp));
                return true;
            }
        }
        false
    }

    /// Section II's deadline accounting on a data packet with a QoS header:
    /// d -= t_q + t_p + LL_est of the next link (one read of `ll_est`).
    /// A packet whose deadline runs out here is counted once, flagged late,
    /// and dropped if `late = "drop"`.
    pub fn egress_account(
        &self,
        ctx: &mut Ctx<'_>,
        pkt: &Packet,
        sm: &mut StandardMetadata,
        meta: &UserMeta,
    ) -> Option<QosView> {
        let mut hdr = QosHdr::of(pkt)?;
        if sm.instance_type != InstanceType::Normal {
            return None;
        }
        let last_switch = self.host_port(ctx, sm.egress_port);
        // LLEP does not cover links to hosts (section II.C): 0 there.
        let ll_est_ns = if last_switch {
            0
        } else {
            ctx.register_read(self.ll_est, sm.egress_port as u32)
        };
        let t_qp = sm
            .egress_global_timestamp
            .saturating_sub(sm.ingress_global_timestamp);
        let used = (ns32(t_qp) + ll_est_ns) >> self.time_shift;
        if hdr.deadline > used {
            hdr.deadline -= used;
        } else {
            hdr.deadline = 0;
            if hdr.flags & FLAG_LATE == 0 {
                hdr.flags |= FLAG_LATE;
                ctx.count(self.deadline_missed, 0, pkt.size);
                if self.late == LateAction::Drop {
                    sm.mark_to_drop();
                }
            }
        }
        Some(QosView {
            hdr,
            ll_est_ns,
            qdelay_ns: ns32(sm.deq_timedelta),
            last_switch,
            first_switch: meta[0] & M_FROM_HOST != 0,
        })
    }

    /// Writes the header back; towards a switch, stamps LLEP now and then
    /// (section II.A step 1, one access to `llep_last`); towards a host,
    /// pops the header.
    pub fn egress_finish(
        &self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &StandardMetadata,
        view: &QosView,
    ) {
        if view.last_switch {
            QosHdr::pop(pkt);
            return;
        }
        let mut hdr = view.hdr;
        let now = ns32(sm.egress_global_timestamp);
        let every = self.llep_interval_ns;
        let stamp = ctx.register(self.llep_last, sm.egress_port as u32, |last| {
            if last == 0 || now.wrapping_sub(last) & 0xffff_ffff >= every {
                (now.max(1), true)
            } else {
                (last, false)
            }
        });
        if stamp {
            hdr.flags |= FLAG_LLEP;
            hdr.t_send = now;
        }
        hdr.put(pkt);
    }
}

// ---------------------------------------------------------------- control agent

/// Installs routes, `port_kind`, `qos_deadline`, the clone session per
/// port, and a scheme's own start-up writes.
pub struct QosAgent {
    route: RouteAgent,
    core: QosCore,
    deadlines: Vec<Write>,
    extra: Vec<Write>,
}

impl QosAgent {
    pub fn new(core: QosCore, qos: &QosParams, extra: Vec<Write>) -> QosAgent {
        let n = qos.deadlines.len() as i32;
        // Rank of each deadline among the distinct ones (0 = the lowest):
        // `prio`'s queue.
        let mut distinct: Vec<u64> = qos.deadlines.iter().map(|e| e.deadline_us).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let deadlines = qos
            .deadlines
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let addr = |a: &Option<String>| match a.as_deref().and_then(parse_ipv4) {
                    Some(v) => matches::ternary(v as u64, 0xffff_ffff),
                    None => matches::ternary(0, 0),
                };
                // sport ++ dport, each half a wildcard when absent.
                let (sp, sm) = e.sport.map_or((0, 0), |p| ((p as u64) << 16, 0xffff_0000));
                let (dp, dm) = e.dport.map_or((0, 0), |p| (p as u64, 0xffff));
                let key = vec![
                    addr(&e.src),
                    addr(&e.dst),
                    matches::ternary(sp | dp, sm | dm),
                    e.dscp
                        .map_or(matches::ternary(0, 0), |d| matches::ternary(d as u64, 0x3f)),
                ];
                let rank = distinct.partition_point(|&d| d < e.deadline_us) as u64;
                let action =
                    ActionCall::new(SET_DEADLINE, [qos.units(e.deadline_us).max(1), rank, 0]);
                Write::TableEntry {
                    table: core.qos_deadline,
                    update: UpdateType::Insert,
                    // First in the list wins.
                    entry: TableEntry::new(key, action).with_priority(n - i as i32),
                }
            })
            .collect();
        QosAgent {
            route: RouteAgent::new(core.l3),
            core,
            deadlines,
            extra,
        }
    }
}

impl ControlAgent for QosAgent {
    fn on_start(&mut self, info: &SwitchInfo, cpu: &mut CpuApi<'_>) {
        self.route.on_start(info, cpu);
        for p in 0..info.n_ports {
            let host = info.host_ports.contains(&p) as u64;
            cpu.write(Write::TableEntry {
                table: self.core.port_kind,
                update: UpdateType::Insert,
                entry: TableEntry::new(
                    vec![matches::exact(p as u64)],
                    ActionCall::new(SET_PORT_KIND, [host, 0, 0]),
                ),
            });
            cpu.write(Write::CloneSession {
                session: session_of(p),
                port: Some(p),
            });
        }
        for w in self.deadlines.drain(..).chain(self.extra.drain(..)) {
            cpu.write(w);
        }
    }

    fn on_port_status(&mut self, port: PortNo, up: bool, cpu: &mut CpuApi<'_>) {
        self.route.on_port_status(port, up, cpu);
    }
}

/// The AQM's signal (section II: "dropping or marking"): CE on an
/// ECN-capable packet (RFC 3168 section 5), a drop otherwise. True if marked.
#[inline]
pub fn mark_or_drop(pkt: &mut Packet, sm: &mut StandardMetadata) -> bool {
    if pkt.ip.ecn.is_ect() || pkt.ip.ecn == pisanet_net::Ecn::Ce {
        pkt.ip.ecn = pisanet_net::Ecn::Ce;
        true
    } else {
        sm.mark_to_drop();
        false
    }
}

/// The QoS program without AQM: carries the QoS header, runs LLEP and
/// accounts deadlines, never marks or drops. `noaqm` runs it as it is;
/// `prio` with [`QosCore::set_prio`] (the first switch picks the packet's
/// queue by its deadline's rank).
pub struct PlainQos {
    pub core: QosCore,
}

impl pisanet_pisa::DataPlane for PlainQos {
    fn has_parser(&self) -> bool {
        false
    }

    fn ingress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        meta: &mut UserMeta,
    ) {
        if let Arrival::Ctl(..) = self.core.ingress(ctx, pkt, sm, meta) {
            sm.mark_to_drop();
        }
    }

    fn egress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        meta: &mut UserMeta,
    ) {
        if self.core.egress_llep(ctx, pkt, sm, meta) {
            return;
        }
        if let Some(v) = self.core.egress_account(ctx, pkt, sm, meta) {
            self.core.egress_finish(ctx, pkt, sm, &v);
        }
    }
}

/// Declares [`PlainQos`] (`set_prio`: queue by deadline rank, as `prio`).
pub fn declare_plain(
    pipe: &mut Pipeline,
    params: &crate::SchemeParams,
    info: &SwitchInfo,
    set_prio: bool,
) -> Result<crate::Program, String> {
    let mut core = QosCore::declare(pipe, &params.qos, info, params.ecmp_hash_per_tier);
    core.set_prio = set_prio;
    pipe.stages(3, 2);
    let a = QosAgent::new(core, &params.qos, Vec::new());
    Ok((Box::new(PlainQos { core }), Box::new(a)))
}
