//! `rps`: random packet spraying (DBB's baseline): each packet takes a
//! uniformly random member of its route's ECMP group, so load spreads evenly
//! and packets of a flow may arrive out of order.
//!
//! ```text
//! ingress:  ipv4_lpm ─set_ecmp_group(g)─► ecmp_group[g] picked by random() ─► set_nhop
//! ```

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use crate::l3::{RouteAgent, L3};
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
        self.l3.route(ctx, pkt, sm, |ctx| ctx.random(0, u32::MAX));
    }
}

/// The registry's constructor (lib.rs, `REGISTRY`).
pub fn declare(
    pipe: &mut pisanet_pisa::Pipeline,
    _: &crate::SchemeParams,
    _: &pisanet_pisa::SwitchInfo,
    _: pisanet_pisa::ControlPlaneConfig,
) -> Result<crate::Program, String> {
    let p = Rps::new(pipe);
    let a = p.agent();
    Ok((Box::new(p), Box::new(a)))
}
