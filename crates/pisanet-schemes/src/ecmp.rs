//! `ecmp`: LPM routing on the destination; where a route has several next
//! hops, an action selector hashes the 5-tuple over them (RFC 2992), so each
//! flow keeps one path and nothing is reordered. Each tier picks from its
//! own bits of the hash unless `ecmp_hash_per_tier` is off (polarized ECMP;
//! see [`l3::member_hash`]).
//!
//! ```text
//! ingress:  ipv4_lpm ──set_nhop──────────────────────────► egress_spec
//!                    └─set_ecmp_group(g) ─► ecmp_group[g] (crc32 of the 5-tuple) ─► set_nhop
//! ```

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use crate::l3::{self, RouteAgent, FIVE_TUPLE_FIELDS, L3};
use crate::SchemeParams;
use pisanet_net::Packet;
use pisanet_pisa::{
    Ctx, DataPlane, HashAlgo, HashId, HashSpec, IngressForm, LpmSelect, Pipeline, StandardMetadata,
    SwitchInfo, UserMeta,
};

/// The program's handles and per-switch constants.
pub struct Ecmp {
    pub l3: L3,
    /// crc32 over the 5-tuple, feeding `ecmp_group`.
    pub ecmp_hash: HashId,
    /// The tier passed to [`l3::member_hash`] (0 everywhere when
    /// `ecmp_hash_per_tier` is off).
    hash_tier: u8,
}

impl Ecmp {
    /// Declares the program's objects in `pipe`.
    pub fn new(pipe: &mut Pipeline, params: &SchemeParams, info: &SwitchInfo) -> Self {
        let l3 = L3::declare(pipe, HashAlgo::Crc32);
        let ecmp_hash = pipe.hash(HashSpec {
            name: "ecmp_hash",
            algo: HashAlgo::Crc32,
            fields: FIVE_TUPLE_FIELDS.to_vec(),
        });
        // ipv4_lpm, then the selector.
        pipe.stages(2, 0);
        Ecmp {
            l3,
            ecmp_hash,
            hash_tier: l3::hash_tier(info.tier, params.ecmp_hash_per_tier),
        }
    }

    /// The control agent that installs this program's routes.
    pub fn agent(&self) -> RouteAgent {
        RouteAgent::new(self.l3)
    }
}

impl DataPlane for Ecmp {
    /// This program's parser accepts every packet.
    fn has_parser(&self) -> bool {
        false
    }

    /// This program's egress control is empty.
    fn has_egress(&self) -> bool {
        false
    }

    /// The ingress below as an [`IngressForm`]: `ipv4_lpm`, then for a group
    /// `ecmp_group` fed `ecmp_hash` rotated as [`l3::member_hash`] rotates
    /// it (`rotate_right` takes the count modulo 32).
    fn ingress_form(&self) -> Option<IngressForm> {
        Some(IngressForm::LpmSelect(LpmSelect {
            table: self.l3.ipv4_lpm,
            set_port: l3::SET_NHOP,
            set_group: l3::SET_ECMP_GROUP,
            selector: self.l3.ecmp_group,
            hash: self.ecmp_hash,
            rotate: (l3::TIER_ROTATE * self.hash_tier as u32) % 32,
        }))
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
}

/// The registry's constructor (lib.rs, `REGISTRY`).
pub fn declare(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    _: pisanet_pisa::ControlPlaneConfig,
) -> Result<crate::Program, String> {
    let p = Ecmp::new(pipe, params, info);
    let a = p.agent();
    Ok((Box::new(p), Box::new(a)))
}
