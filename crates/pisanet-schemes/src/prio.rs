//! `prio`: P4QoS's priority-queueing baseline (section III baseline 3):
//! "assigns packets with lower deadlines to higher priority queues". The
//! first switch puts a flow's packets in the strict-priority queue of its
//! deadline's rank among the configured deadlines (`[scheme.qos]
//! deadlines`; the lowest deadline gets queue 0, the highest priority);
//! the packet keeps that queue along its path. Set `topology.priorities`
//! to at least the number of distinct deadlines (packets with a queue index
//! beyond the last go to the last). Packets without a deadline keep the
//! queue their sender chose. No marking; deadlines accounted as in qos.rs.

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use crate::qos::{QosAgent, QosCore};
use crate::SchemeParams;
use pisanet_net::Packet;
use pisanet_pisa::{
    ControlPlaneConfig, Ctx, DataPlane, Pipeline, StandardMetadata, SwitchInfo, UserMeta,
};

/// The program.
pub struct Prio {
    pub core: QosCore,
}

impl DataPlane for Prio {
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
    let mut core = QosCore::declare(pipe, &params.qos, info, params.ecmp_hash_per_tier);
    core.set_prio = true;
    pipe.stages(3, 2);
    let a = QosAgent::new(core, &params.qos, Vec::new());
    Ok((Box::new(Prio { core }), Box::new(a)))
}
