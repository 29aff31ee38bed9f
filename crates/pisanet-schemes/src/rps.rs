//! `rps`: random packet spraying (DBB's baseline): each packet takes a
//! uniformly random member of its route's ECMP group, so load spreads evenly
//! and packets of a flow may arrive out of order.
//!
//! ```text
//! ingress:  ipv4_lpm ─set_ecmp_group(g)─► ecmp_group[g] picked by random() ─► set_nhop
//! ```

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use crate::l3::{self, RouteAgent, L3, SET_ECMP_GROUP, SET_NHOP};
use pisanet_net::Packet;
use pisanet_pisa::{Ctx, DataPlane, HashAlgo, Pipeline, StandardMetadata, UserMeta};

pub struct Rps {
    pub l3: L3,
}

impl Rps {
    pub fn new(pipe: &mut Pipeline) -> Self {
        // The selector's input is v1model random(), taken as is.
        let l3 = L3::declare(pipe, HashAlgo::Identity);
        pipe.stages(2, 0);
        Rps { l3 }
    }

    pub fn agent(&self) -> RouteAgent {
        RouteAgent::new(self.l3)
    }
}

impl DataPlane for Rps {
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
        let hit = ctx.apply(self.l3.ipv4_lpm, [pkt.ip.dst as u64, 0, 0, 0]);
        match hit.action.action {
            SET_NHOP => l3::set_nhop(sm, &hit.action),
            SET_ECMP_GROUP => {
                let r = ctx.random(0, u32::MAX);
                match ctx.select(self.l3.ecmp_group, hit.action.params[0] as u32, r) {
                    Some(member) => l3::set_nhop(sm, &member),
                    None => sm.mark_to_drop(),
                }
            }
            _ => sm.mark_to_drop(),
        }
    }
}
