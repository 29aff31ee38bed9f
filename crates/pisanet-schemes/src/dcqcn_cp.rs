//! `dcqcn_cp`: the congestion point of DCQCN (Zhu et al., SIGCOMM 2015,
//! section 3.1, Fig. 4), the 3-point baseline of P4QCN section 4.2.4: RED-like
//! ECN marking on egress, on shortest-path L3 forwarding with ECMP. The
//! notification and reaction points run at the hosts
//! (pisanet_transport::rate::dcqcn).
//!
//! ```text
//! ingress:  ipv4_lpm ─► set_nhop | ecmp_group (crc32 of the 5-tuple)            (stages 1-2)
//! egress:   ECT packets: mark_prob[enq_qdepth] ─► threshold;
//!           random(0, 2^16-1) < threshold ─► ECN := 11 (CE)                       (stage 1)
//! ```
//!
//! Fig. 4 with its bounds: no mark for q <= Kmin; probability
//! Pmax x (q - Kmin) / (Kmax - Kmin) for Kmin < q <= Kmax; always for
//! q > Kmax. NOTE: q is in packets (v1model's `enq_qdepth`, as bmv2, on
//! which the paper built its 3-point variant, counts them); DCQCN's 5 KB and
//! 200 KB become 4 and 132 full-size (1518 B) frames, rounded up (see
//! docs/schemes/p4qcn.md). Only ECN-capable packets are marked (RFC 3168
//! section 5); others pass unmarked.

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use crate::blocks::DepthProbability;
use crate::l3::{self, RouteAgent, FIVE_TUPLE_FIELDS, L3};
use crate::SchemeParams;
use pisanet_net::packet::Ecn;
use pisanet_net::Packet;
use pisanet_pisa::{
    CounterId, CounterKind, CounterSpec, Ctx, DataPlane, HashAlgo, HashId, HashSpec, Pipeline,
    StandardMetadata, SwitchInfo, UserMeta,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of `dcqcn_cp` (`[scheme.dcqcn_cp]`; DCQCN section 3.1, Fig. 4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DcqcnCpParams {
    /// K_min: no marking while a packet finds at most this many packets
    /// ahead of it (packets; DCQCN's 5 KB in 1518 B frames, rounded up: 4).
    #[schemars(range(min = 0, max = 1000000), extend("x-unit" = "packets"))]
    pub kmin_pkts: u32,
    /// K_max: marking always above this depth (packets; DCQCN's 200 KB in
    /// 1518 B frames, rounded up: 132). At least kmin_pkts, at most
    /// kmin_pkts + 4094.
    #[schemars(range(min = 0, max = 1000000), extend("x-unit" = "packets"))]
    pub kmax_pkts: u32,
    /// P_max: the marking probability at K_max (%; DCQCN: 1).
    #[schemars(range(min = 0, max = 100), extend("x-unit" = "%"))]
    pub pmax_pct: u32,
}

impl Default for DcqcnCpParams {
    fn default() -> Self {
        DcqcnCpParams {
            kmin_pkts: 4,
            kmax_pkts: 132,
            pmax_pct: 1,
        }
    }
}

impl DcqcnCpParams {
    /// The checks between keys (ranges are in the schema).
    pub fn validate(&self) -> Result<(), String> {
        if self.kmax_pkts < self.kmin_pkts {
            return Err(format!(
                "scheme.dcqcn_cp.kmax_pkts: must be at least scheme.dcqcn_cp.kmin_pkts ({}), got {}",
                self.kmin_pkts, self.kmax_pkts
            ));
        }
        if self.kmax_pkts - self.kmin_pkts >= crate::blocks::DEPTH_PROB_SIZE - 1 {
            return Err(format!(
                "scheme.dcqcn_cp.kmax_pkts: at most scheme.dcqcn_cp.kmin_pkts + {} (one table entry per depth), got {}",
                crate::blocks::DEPTH_PROB_SIZE - 2,
                self.kmax_pkts
            ));
        }
        Ok(())
    }
}

/// The program's handles and per-switch constants.
pub struct DcqcnCp {
    pub l3: L3,
    /// crc32 over the 5-tuple, feeding `ecmp_group`.
    pub ecmp_hash: HashId,
    /// Fig. 4: the marking probability by queue depth.
    pub mark_prob: DepthProbability,
    /// Packets marked CE (diagnostics; the run sums it over switches).
    pub marks: CounterId,
    hash_tier: u8,
}

impl DcqcnCp {
    pub fn new(
        pipe: &mut Pipeline,
        params: &SchemeParams,
        info: &SwitchInfo,
    ) -> Result<Self, String> {
        params.dcqcn_cp.validate()?;
        let l3 = L3::declare(pipe, HashAlgo::Crc32);
        let ecmp_hash = pipe.hash(HashSpec {
            name: "ecmp_hash",
            algo: HashAlgo::Crc32,
            fields: FIVE_TUPLE_FIELDS.to_vec(),
        });
        let mark_prob = DepthProbability::declare(pipe, "mark_prob");
        let marks = pipe.counter(CounterSpec {
            name: "dcqcn_cp_marks",
            kind: CounterKind::PacketsAndBytes,
            size: 1,
        });
        pipe.stages(2, 1);
        Ok(DcqcnCp {
            l3,
            ecmp_hash,
            mark_prob,
            marks,
            hash_tier: l3::hash_tier(info.tier, params.ecmp_hash_per_tier),
        })
    }

    /// The control agent: routes and the marking thresholds.
    pub fn agent(&self, params: &SchemeParams) -> RouteAgent {
        let p = &params.dcqcn_cp;
        RouteAgent::with_writes(
            self.l3,
            self.mark_prob.entries(
                p.kmin_pkts,
                p.kmax_pkts,
                p.kmax_pkts.max(p.kmin_pkts) + 1,
                p.pmax_pct,
            ),
        )
    }
}

impl DataPlane for DcqcnCp {
    fn has_parser(&self) -> bool {
        false
    }

    fn ingress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        _meta: &mut UserMeta,
    ) {
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
        _meta: &mut UserMeta,
    ) {
        // RFC 3168 section 5: only ECN-capable packets are marked.
        if !pkt.ip.ecn.is_ect() {
            return;
        }
        // DCQCN Fig. 4 on the egress queue.
        if self.mark_prob.decide(ctx, sm.enq_qdepth) {
            pkt.ip.ecn = Ecn::Ce;
            ctx.count(self.marks, 0, sm.packet_length);
        }
    }
}

/// The registry's constructor (lib.rs, `REGISTRY`).
pub fn declare(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    _: pisanet_pisa::ControlPlaneConfig,
) -> Result<crate::Program, String> {
    let p = DcqcnCp::new(pipe, params, info)?;
    let a = p.agent(params);
    Ok((Box::new(p), Box::new(a)))
}
