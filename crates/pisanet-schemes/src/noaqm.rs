//! `noaqm`: P4QoS's "simple switch without any mechanism to either
//! differentiate between flows or address excessive queuing" (section III
//! baseline 1). It carries the QoS header, runs LLEP and accounts deadlines
//! as every QoS scheme does (qos.rs), so its late counts compare with
//! P4QoS's; it never marks or drops.

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use crate::qos::{QosAgent, QosCore};
use crate::SchemeParams;
use pisanet_net::Packet;
use pisanet_pisa::{
    ControlPlaneConfig, Ctx, DataPlane, Pipeline, StandardMetadata, SwitchInfo, UserMeta,
};

/// The program.
pub struct NoAqm {
    pub core: QosCore,
}

impl DataPlane for NoAqm {
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
        if let crate::qos::Arrival::Ctl(..) = self.core.ingress(ctx, pkt, sm, meta) {
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

/// The registry's constructor.
pub fn declare(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    _: ControlPlaneConfig,
) -> Result<crate::Program, String> {
    let core = QosCore::declare(pipe, &params.qos, info, params.ecmp_hash_per_tier);
    pipe.stages(3, 2);
    let a = QosAgent::new(core, &params.qos, Vec::new());
    Ok((Box::new(NoAqm { core }), Box::new(a)))
}
