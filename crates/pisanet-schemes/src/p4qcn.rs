//! `p4qcn`: P4QCN's congestion point (Geng, Yan and Zhang, "P4QCN:
//! Congestion Control Using P4-Capable Device in Data Center Networks",
//! Applied Sciences 2019, section 3.1.1), on shortest-path L3 forwarding
//! with ECMP. The reaction point runs at the hosts
//! (pisanet_transport::rate::qcn).
//!
//! ```text
//! header:  Eth (0x22e9, QCN) | p4qcn_fb { qdepth: 16, cpid: 16 } | IPv4 (ECN 11) | UDP      (64 B frame)
//!
//! ingress, data:      ipv4_lpm ─► set_nhop | ecmp_group (crc32 of the 5-tuple)        (stages 1-2)
//! ingress, feedback:  a recirculated egress clone: ECN := 11, dst := the flow's source
//!                     (src := its destination, ports swapped), payload cut, p4qcn_fb
//!                     header; then routed as any packet
//! egress, UDP data:   feedback_prob[enq_qdepth] ─► threshold; random(0, 2^16-1) < threshold ─►  (stage 1)
//!                     last_feedback[crc32(src, dst)]: none in the last N us ─► clone E2E    (stage 2)
//!                     to session 1 (the recirculation port)
//! ```
//!
//! Eq. 1 with the bounds made explicit (the paper's are all strict, which
//! leaves q = Qmin and q = Qmax undefined): no feedback for q <= Qmin;
//! probability pmax x (q - Qmin) / (Qmax - Qmin) for Qmin < q < Qmax
//! (eq. 1's alpha = pmax / (Qmax - Qmin)); always for q >= Qmax. With
//! Qmin = Qmax = 11 (section 4) a packet that finds 12 or more packets ahead
//! of it triggers feedback. Q_PFC, eq. 1's upper bound, belongs to PFC (the
//! traffic manager): above it P4QCN keeps sending feedback. Choices the
//! paper leaves open are in docs/schemes/p4qcn.md.

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use crate::blocks::{DepthProbability, FLOWLET_TIME_MASK};
use crate::l3::{self, RouteAgent, FIVE_TUPLE_FIELDS, L3};
use crate::SchemeParams;
use pisanet_engine::{units, SimTime};
use pisanet_net::packet::Ecn;
use pisanet_net::wire::{FieldDef, HeaderDef, Placement};
use pisanet_net::{
    ExtHeader, Packet, ETH_BYTES, IPV4_BYTES, L4, MIN_FRAME_BYTES, PROTO_UDP, UDP_BYTES,
};
use pisanet_pisa::{
    CloneType, CounterId, CounterKind, CounterSpec, Ctx, DataPlane, HashAlgo, HashId, HashInput,
    HashSpec, InstanceType, Pipeline, RegisterId, RegisterSpec, StandardMetadata, SwitchInfo,
    UserMeta, Write, RECIRC_PORT,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// EtherType of IEEE 802.1Qau congestion notification (the CN-TAG and the
/// CNM), which P4QCN extends to IP (section 2.3).
pub const ETHERTYPE_QCN: u16 = 0x22e9;
/// `ExtHeader::kind` of the feedback header.
pub const P4QCN_FB_KIND: u16 = 0x5146;
/// Bytes of the feedback header.
pub const P4QCN_FB_BYTES: u16 = 4;
pub const FB_QDEPTH: FieldDef = FieldDef::ext(
    "qdepth",
    16,
    0,
    0,
    "q of eq. 1: packets ahead in the egress queue of the packet that triggered the feedback (enq_qdepth, saturating)",
);
pub const FB_CPID: FieldDef = FieldDef::ext(
    "cpid",
    16,
    0,
    16,
    "the congestion point: low 16 bits of the switch's id (QCN's CPID)",
);
/// The feedback packet's header (docs/headers.md).
pub static P4QCN_WIRE: HeaderDef = HeaderDef {
    name: "p4qcn_fb",
    title: "P4QCN feedback",
    schemes: "p4qcn",
    kind: P4QCN_FB_KIND,
    bytes: P4QCN_FB_BYTES,
    placement: Placement::EtherType(ETHERTYPE_QCN),
    doc: "The feedback packet (FBP) a congestion point sends to a flow's source (P4QCN \
          section 3.1.1): an egress clone of the congesting UDP packet, rewritten in ingress \
          with ECN 11, the flow's source as destination (and its destination as source, ports \
          swapped) and no payload. The paper's FBP is marked by ECN 11 alone; this header \
          records what triggered it, for captures and tests.",
    fields: &[FB_QDEPTH, FB_CPID],
};

/// The clone session of feedback copies (to the recirculation port).
pub const SESSION_FEEDBACK: u16 = 1;
/// User metadata word 0 of a feedback clone: this flag and q (low 16 bits).
const FB_META: u64 = 1 << 63;
/// `last_feedback` cells: a valid bit above a 48-bit time (ps mod 2^48).
const VALID: u64 = 1 << 48;

/// The header of a P4QCN feedback packet, if `pkt` is one: (qdepth, cpid).
pub fn feedback_header(pkt: &Packet) -> Option<(u64, u64)> {
    match pkt.ext() {
        Some(h) if h.kind == P4QCN_FB_KIND => {
            Some((FB_QDEPTH.get(&h.fields), FB_CPID.get(&h.fields)))
        }
        _ => None,
    }
}

/// Parameters of `p4qcn` (`[scheme.p4qcn]`; P4QCN sections 3.1.1 and 4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct P4qcnParams {
    /// Qmin of eq. 1: no feedback while a packet finds at most this many
    /// packets ahead of it in the egress queue (packets; section 4: 11).
    #[schemars(range(min = 0, max = 1000000), extend("x-unit" = "packets"))]
    pub qmin_pkts: u32,
    /// Qmax of eq. 1: feedback always from this depth on (packets; section
    /// 4: 11, equal to Qmin). At least qmin_pkts, at most qmin_pkts + 4095.
    #[schemars(range(min = 0, max = 1000000), extend("x-unit" = "packets"))]
    pub qmax_pkts: u32,
    /// The feedback probability just below Qmax (%): eq. 1's alpha is
    /// pmax_pct / 100 / (Qmax - Qmin). Default 100: the probability rises
    /// linearly from 0 at Qmin to 1 at Qmax (Fig. 3). Unused when
    /// qmin_pkts = qmax_pkts.
    #[schemars(range(min = 0, max = 100), extend("x-unit" = "%"))]
    pub pmax_pct: u32,
    /// N of section 3.1.1: at most one feedback per flow (source and
    /// destination IP) per this interval (us). Default 50, DCQCN's CNP
    /// interval (the 3-point baseline's NP), so that both architectures
    /// rate-limit feedback alike.
    #[serde(rename = "feedback_interval_us", with = "units::us")]
    #[schemars(with = "f64", range(min = 0, max = 2.8e8), extend("x-unit" = "us"))]
    pub feedback_interval: SimTime,
    /// Cells of the last-feedback register (a power of two); flows whose
    /// (src, dst) hash to the same cell share the N-us budget.
    #[schemars(range(min = 1, max = 16777216))]
    pub flow_slots: u32,
}

impl Default for P4qcnParams {
    fn default() -> Self {
        P4qcnParams {
            qmin_pkts: 11,
            qmax_pkts: 11,
            pmax_pct: 100,
            feedback_interval: SimTime::from_us(50),
            flow_slots: 4096,
        }
    }
}

impl P4qcnParams {
    /// The checks between keys (ranges are in the schema).
    pub fn validate(&self) -> Result<(), String> {
        if self.qmax_pkts < self.qmin_pkts {
            return Err(format!(
                "scheme.p4qcn.qmax_pkts: must be at least scheme.p4qcn.qmin_pkts ({}), got {}",
                self.qmin_pkts, self.qmax_pkts
            ));
        }
        if self.qmax_pkts - self.qmin_pkts >= crate::blocks::DEPTH_PROB_SIZE {
            return Err(format!(
                "scheme.p4qcn.qmax_pkts: at most scheme.p4qcn.qmin_pkts + {} (one table entry per depth), got {}",
                crate::blocks::DEPTH_PROB_SIZE - 1,
                self.qmax_pkts
            ));
        }
        if !self.flow_slots.is_power_of_two() {
            return Err(format!(
                "scheme.p4qcn.flow_slots: must be a power of two, got {}",
                self.flow_slots
            ));
        }
        Ok(())
    }

    /// The depth from which feedback is certain: Qmax, or Qmin + 1 when
    /// they are equal (q <= Qmin never triggers).
    pub fn always_from(&self) -> u32 {
        self.qmax_pkts.max(self.qmin_pkts + 1)
    }
}

/// The program's handles and per-switch constants.
pub struct P4qcn {
    pub l3: L3,
    /// crc32 over the 5-tuple, feeding `ecmp_group`.
    pub ecmp_hash: HashId,
    /// Eq. 1: the feedback probability by queue depth.
    pub feedback_prob: DepthProbability,
    /// crc32 over (src, dst): the flow's `last_feedback` cell.
    pub flow_hash: HashId,
    /// Per flow slot: when the last feedback left (valid bit | ps mod 2^48).
    pub last_feedback: RegisterId,
    /// Feedback packets generated (diagnostics; the run sums it over switches).
    pub feedbacks: CounterId,
    hash_tier: u8,
    slot_mask: u32,
    interval_ps: u64,
    cpid: u64,
}

impl P4qcn {
    /// Declares the program's objects in `pipe`.
    pub fn new(
        pipe: &mut Pipeline,
        params: &SchemeParams,
        info: &SwitchInfo,
    ) -> Result<Self, String> {
        let p = &params.p4qcn;
        p.validate()?;
        let l3 = L3::declare(pipe, HashAlgo::Crc32);
        let ecmp_hash = pipe.hash(HashSpec {
            name: "ecmp_hash",
            algo: HashAlgo::Crc32,
            fields: FIVE_TUPLE_FIELDS.to_vec(),
        });
        let feedback_prob = DepthProbability::declare(pipe, "feedback_prob");
        let flow_hash = pipe.hash(HashSpec {
            name: "flow_hash",
            algo: HashAlgo::Crc32,
            fields: vec![("hdr.ipv4.src", 32), ("hdr.ipv4.dst", 32)],
        });
        let last_feedback = pipe.register(RegisterSpec {
            name: "last_feedback",
            width: 49,
            size: p.flow_slots,
            holds: "per (src, dst) slot: valid (1) | time of the last feedback, ps mod 2^48",
        });
        let feedbacks = pipe.counter(CounterSpec {
            name: "p4qcn_feedbacks",
            kind: CounterKind::PacketsAndBytes,
            size: 1,
        });
        // Ingress: ipv4_lpm, then the selector; egress: feedback_prob, then
        // last_feedback.
        pipe.stages(2, 2);
        Ok(P4qcn {
            l3,
            ecmp_hash,
            feedback_prob,
            flow_hash,
            last_feedback,
            feedbacks,
            hash_tier: l3::hash_tier(info.tier, params.ecmp_hash_per_tier),
            slot_mask: p.flow_slots - 1,
            interval_ps: p.feedback_interval.ps(),
            cpid: (info.id & 0xffff) as u64,
        })
    }

    /// The control agent: routes, the clone session, eq. 1's table.
    /// P4QCN's control agent: the shortest-path routes, the feedback clone
    /// session (to the recirculation port) and eq. 1's thresholds.
    pub fn agent(&self, params: &SchemeParams) -> RouteAgent {
        let p = &params.p4qcn;
        let mut writes = vec![Write::CloneSessionReplicas {
            session: SESSION_FEEDBACK,
            ports: vec![RECIRC_PORT],
        }];
        writes.extend(self.feedback_prob.entries(
            p.qmin_pkts,
            p.qmax_pkts,
            p.always_from(),
            p.pmax_pct,
        ));
        RouteAgent::with_writes(self.l3, writes)
    }

    /// Section 3.1.1: "In ingress, the ECN field of the packet is set to 11
    /// and then the packet is sent to the source of the packet by modifying
    /// the destination IP address."
    fn build_feedback(&self, now: SimTime, pkt: &mut Packet, meta: &mut UserMeta) {
        let q = meta[0] & 0xffff;
        // NOTE: the source becomes the flow's destination (a switch has no
        // address of its own in the model, and a packet whose source is its
        // own destination is a martian a host drops), ports swapped: the
        // FBP reads as a reply of the flow.
        std::mem::swap(&mut pkt.ip.src, &mut pkt.ip.dst);
        pkt.ip.ecn = Ecn::Ce;
        if let L4::Udp(u) = &mut pkt.l4 {
            std::mem::swap(&mut u.sport, &mut u.dport);
            u.payload = 0;
        }
        let mut fields = [0; 4];
        FB_QDEPTH.set(&mut fields, q);
        FB_CPID.set(&mut fields, self.cpid);
        pkt.set_ext(Some(ExtHeader {
            kind: P4QCN_FB_KIND,
            bytes: P4QCN_FB_BYTES,
            fields,
        }));
        // The payload is cut (v1model `truncate`): a minimum-size frame.
        pkt.size =
            (ETH_BYTES + IPV4_BYTES + UDP_BYTES + P4QCN_FB_BYTES as u32).max(MIN_FRAME_BYTES);
        // NOTE: in the highest-priority queue, as QCN's CNMs and DCQCN's
        // CNPs: feedback must not wait behind the congestion it reports.
        pkt.prio = 0;
        pkt.sent_at = now;
        *meta = [0; 2];
    }
}

impl DataPlane for P4qcn {
    /// This program's parser accepts every packet.
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
        if sm.instance_type == InstanceType::Recirculated {
            if meta[0] & FB_META == 0 {
                // Nothing else recirculates in this program.
                sm.mark_to_drop();
                return;
            }
            self.build_feedback(ctx.now(), pkt, meta);
        }
        // Data and feedback alike: routed to their destination.
        let (hash, tier) = (self.ecmp_hash, self.hash_tier);
        self.l3.route(ctx, pkt, sm, |ctx| {
            l3::member_hash(ctx.hash(hash, &l3::five_tuple(pkt)), tier)
        });
    }

    fn egress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        meta: &mut UserMeta,
    ) {
        // NOTE: feedback only for UDP data (RoCEv2 runs over UDP; a TCP
        // sender has no reaction point and would read an FBP as a segment),
        // never for feedback itself.
        if pkt.ip.proto != PROTO_UDP || pkt.ext().is_some() {
            return;
        }
        // Eq. 1 on queueing_metadata.enq_qdepth (Table 1).
        let q = sm.enq_qdepth;
        if !self.feedback_prob.decide(ctx, q) {
            return;
        }
        // Section 3.1.1: "at most one feedback packet every N micro-second
        // for a same congestion flow", flows by source and destination IP.
        let input = HashInput::new().u32(pkt.ip.src).u32(pkt.ip.dst);
        let slot = ctx.hash(self.flow_hash, &input) & self.slot_mask;
        let now = ctx.now().ps() & FLOWLET_TIME_MASK;
        let interval = self.interval_ps;
        let send = ctx.register(self.last_feedback, slot, |cell| {
            let since = now.wrapping_sub(cell & FLOWLET_TIME_MASK) & FLOWLET_TIME_MASK;
            if cell & VALID == 0 || since >= interval {
                (VALID | now, true)
            } else {
                (cell, false)
            }
        });
        if !send {
            return;
        }
        // Section 3.1.1: "the packet entering the egress queue is cloned to
        // ingress" (E2E clone to the recirculation port).
        meta[0] = FB_META | (q as u64).min(0xffff);
        sm.clone_to(CloneType::E2E, SESSION_FEEDBACK);
        ctx.count(self.feedbacks, 0, sm.packet_length);
    }
}

/// The registry's constructor (lib.rs, `REGISTRY`).
pub fn declare(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    _: pisanet_pisa::ControlPlaneConfig,
) -> Result<crate::Program, String> {
    let p = P4qcn::new(pipe, params, info)?;
    let a = p.agent(params);
    Ok((Box::new(p), Box::new(a)))
}
