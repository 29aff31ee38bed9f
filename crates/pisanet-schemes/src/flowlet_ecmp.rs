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
use crate::{FlowletId, SchemeParams};
use pisanet_net::Packet;
use pisanet_pisa::{
    Ctx, DataPlane, HashAlgo, HashId, HashInput, HashSpec, Pipeline, RegisterId, RegisterSpec,
    StandardMetadata, SwitchInfo, UserMeta,
};

/// Width of the flowlet timestamps (as v1model's 48-bit timestamps).
const TIME_BITS: u8 = 48;
const TIME_MASK: u64 = (1 << TIME_BITS) - 1;

pub struct FlowletEcmp {
    pub l3: L3,
    /// crc32 over the 5-tuple: the flowlet slot.
    pub flowlet_index: HashId,
    /// crc32 over the flowlet id and the 5-tuple, feeding `ecmp_group`.
    pub ecmp_hash: HashId,
    /// Last time a packet of the slot's flow was seen (ps mod 2^48).
    pub flowlet_time: RegisterId,
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
        let flowlet_time = pipe.register(RegisterSpec {
            name: "flowlet_time",
            width: TIME_BITS,
            size: slots,
            holds: "last packet time of the slot's flow, ps mod 2^48",
        });
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
        let now = sm.ingress_global_timestamp.ps() & TIME_MASK;
        // Stage 1: flowlet_time read-modify-write; the gap wraps at 2^48.
        let gap = ctx.register(self.flowlet_time, slot, |last| {
            (now, now.wrapping_sub(last) & TIME_MASK)
        });
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
