//! `flowlet_ecmp`: ECMP over flowlets, CONGA'-style (HULA section 6): the
//! selector hash covers the 5-tuple and a flowlet id, and a flow's flowlet id
//! changes after an idle gap longer than `flowlet_timeout`, so a flow may move
//! to another path only where the gap absorbs the difference in delay. The
//! new id is drawn at random by default, or is the old one + 1 as HULA
//! section 6 writes ([`FlowletId`]).
//!
//! ```text
//! ingress:  flowlet_index (crc32 of the 5-tuple)
//!           ─► flowlet_time[i]   read last-seen time, write now      (stage 1)
//!           ─► flowlet_id[i]     new id if the gap exceeds the timeout (stage 2)
//!           ─► ipv4_lpm ─► ecmp_group (crc32 of flowlet id + 5-tuple) (stages 3-4)
//! ```

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use crate::l3::{self, RouteAgent, FIVE_TUPLE_FIELDS, L3};
use crate::SchemeParams;
use pisanet_net::Packet;
use pisanet_pisa::{
    Ctx, DataPlane, HashAlgo, HashId, HashInput, HashSpec, Pipeline, RegisterId, RegisterSpec,
    StandardMetadata, SwitchInfo, UserMeta,
};

/// Width of the flowlet timestamps (as v1model's 48-bit timestamps).
use crate::blocks::{FlowletTimer, FLOWLET_TIME_MASK as TIME_MASK};

/// How flowlet ECMP (`flowlet_ecmp`, and `conga_prime` across pods) gives a
/// new flowlet the id that goes into its path hash.
///
/// HULA section 6 increments the id. With a CRC, the only hash PISA targets
/// offer, the hash is affine in the id: a step from an even id to the next
/// flips one input bit and so changes the hash by a constant that does not
/// depend on the flow. On a 2-way group that constant either always or never
/// moves the flow, so with `Increment` only every other new flowlet can move
/// (tests `with_a_crc_an_even_to_odd_flowlet_id_step_keeps_the_path_at_every_tier`
/// and `random_flowlet_ids_let_every_new_flowlet_move`).
/// `Random` draws the id from the switch's `random` extern, as P4 flowlet
/// switching programs do, so every new flowlet gets an independent path:
/// what the paper's "hash of the six tuple" intends (docs/schemes/hula.md).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FlowletId {
    /// A fresh uniform 16-bit id per new flowlet (default).
    #[default]
    Random,
    /// The previous id + 1 (HULA section 6 as written).
    Increment,
}

impl FlowletId {
    /// The flowlet-id register's read-modify-write for one packet: the
    /// slot's id, replaced by the next one when `new_flowlet`. One access to
    /// `register` (16 bits wide, so increments wrap) and, for `Random`, one
    /// draw from the `random` extern per new flowlet.
    #[inline]
    pub fn update(
        self,
        ctx: &mut Ctx<'_>,
        register: RegisterId,
        slot: u32,
        new_flowlet: bool,
    ) -> u16 {
        let drawn = (new_flowlet && self == FlowletId::Random)
            .then(|| u64::from(ctx.random(0, u32::from(u16::MAX))));
        let id = ctx.register(register, slot, |id| {
            let id = match (new_flowlet, drawn) {
                (false, _) => id,
                (true, Some(r)) => r,
                (true, None) => id + 1,
            };
            (id, id)
        });
        id as u16
    }
}

pub struct FlowletEcmp {
    pub l3: L3,
    /// crc32 over the 5-tuple: the flowlet slot.
    pub flowlet_index: HashId,
    /// crc32 over the flowlet id and the 5-tuple, feeding `ecmp_group`.
    pub ecmp_hash: HashId,
    /// Last time a packet of the slot's flow was seen (ps mod 2^48).
    pub flowlet_time: FlowletTimer,
    /// The slot's flowlet id, renewed after each idle gap ([`FlowletId`]).
    pub flowlet_id: RegisterId,
    /// Slots - 1 (slots are a power of two).
    slot_mask: u32,
    timeout_ps: u64,
    /// The tier passed to [`l3::member_hash`] (0 everywhere when
    /// `ecmp_hash_per_tier` is off).
    hash_tier: u8,
    /// How a new flowlet gets its id (`scheme.flowlet_id`).
    id_mode: FlowletId,
}

impl FlowletEcmp {
    pub fn new(
        pipe: &mut Pipeline,
        params: &SchemeParams,
        info: &SwitchInfo,
    ) -> Result<Self, String> {
        let slots = params.flowlet_slots;
        if !slots.is_power_of_two() {
            return Err(format!("flowlet_slots must be a power of two, got {slots}"));
        }
        if params.flowlet_timeout.ps() >= TIME_MASK {
            return Err("flowlet_timeout exceeds the 48-bit timestamp".into());
        }
        let flowlet_index = pipe.hash(HashSpec {
            name: "flowlet_index",
            algo: HashAlgo::Crc32,
            fields: FIVE_TUPLE_FIELDS.to_vec(),
        });
        let flowlet_time = FlowletTimer::declare(
            pipe,
            slots,
            "last packet time of the slot's flow, ps mod 2^48",
        );
        let flowlet_id = pipe.register(RegisterSpec {
            name: "flowlet_id",
            width: 16,
            size: slots,
            holds: "flowlet id of the slot's flow, renewed after each idle gap",
        });
        let l3 = L3::declare(pipe, HashAlgo::Crc32);
        // NOTE: the flowlet id goes first. A CRC is linear: with the id as the
        // last field, consecutive ids flip the same few low output bits, and
        // a flow's flowlets visit only two of four uplinks (see the test
        // `flowlet_ecmp_moves_a_flow_only_between_flowlets`).
        let mut fields = vec![("meta.flowlet_id", 16)];
        fields.extend(FIVE_TUPLE_FIELDS);
        let ecmp_hash = pipe.hash(HashSpec {
            name: "ecmp_hash",
            algo: HashAlgo::Crc32,
            fields,
        });
        pipe.stages(4, 0);
        Ok(FlowletEcmp {
            l3,
            flowlet_index,
            ecmp_hash,
            flowlet_time,
            flowlet_id,
            slot_mask: slots - 1,
            timeout_ps: params.flowlet_timeout.ps(),
            hash_tier: l3::hash_tier(info.tier, params.ecmp_hash_per_tier),
            id_mode: params.flowlet_id,
        })
    }

    pub fn agent(&self) -> RouteAgent {
        RouteAgent::new(self.l3)
    }

    /// The flowlet slot of a packet (for tests and traces).
    pub fn slot(&self, h: u32) -> u32 {
        h & self.slot_mask
    }
}

impl DataPlane for FlowletEcmp {
    /// This program's parser accepts every packet.
    fn has_parser(&self) -> bool {
        false
    }

    /// This program's egress control is empty.
    fn has_egress(&self) -> bool {
        false
    }

    fn ingress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        _meta: &mut UserMeta,
    ) {
        let slot = ctx.hash(self.flowlet_index, &l3::five_tuple(pkt)) & self.slot_mask;
        // Stage 1: flowlet_time read-modify-write; the gap wraps at 2^48.
        let gap = self.flowlet_time.gap(ctx, slot, sm);
        let new_flowlet = gap > self.timeout_ps;
        // Stage 2: flowlet_id read-modify-write (a new id per new flowlet).
        let id = self.id_mode.update(ctx, self.flowlet_id, slot, new_flowlet);
        // Stages 3-4: route, then pick a member by 5-tuple and flowlet id.
        let (hash, tier) = (self.ecmp_hash, self.hash_tier);
        self.l3.route(ctx, pkt, sm, |ctx| {
            let input = l3::push_five_tuple(HashInput::new().u16(id), pkt);
            l3::member_hash(ctx.hash(hash, &input), tier)
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
    let p = FlowletEcmp::new(pipe, params, info)?;
    let a = p.agent();
    Ok((Box::new(p), Box::new(a)))
}
