//! `codel`: P4-CoDel (Kundel et al., NFV-SDN 2018; P4QoS section III
//! baseline 2): RFC 8289's CoDel in egress, target 5 ms and interval
//! 100 ms by default (`[scheme.codel]`), the control law interval /
//! sqrt(count) as a lookup table on the drop count (blocks.rs `Codel`).
//! A packet CoDel picks is ECN-marked if ECN-capable, dropped otherwise.
//! It carries the QoS header and accounts deadlines like every QoS scheme
//! (qos.rs).

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use crate::blocks::{ns_u64, Codel};
use crate::qos::{mark_or_drop, QosAgent, QosCore};
use crate::SchemeParams;
use pisanet_net::Packet;
use pisanet_pisa::{
    ControlPlaneConfig, CounterId, CounterKind, CounterSpec, Ctx, DataPlane, Pipeline,
    StandardMetadata, SwitchInfo, UserMeta,
};

/// The program.
pub struct CodelProgram {
    pub core: QosCore,
    pub codel: Codel,
    target_ns: u64,
    pub marks: CounterId,
    pub drops: CounterId,
}

impl DataPlane for CodelProgram {
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
        // CoDel runs on every data packet leaving a port, QoS header or not.
        let view = self.core.egress_account(ctx, pkt, sm, meta);
        let now_ns = ns_u64(sm.egress_global_timestamp);
        let sojourn = ns_u64(sm.deq_timedelta);
        let port = sm.egress_port as u32;
        // The AQM signals data packets (pure ACKs pass).
        if pkt.payload() > 0
            && self.codel.dequeue(
                ctx,
                port,
                now_ns,
                sojourn,
                self.target_ns,
                sm.deq_qdepth == 0,
            )
        {
            if mark_or_drop(pkt, sm) {
                ctx.count(self.marks, 0, pkt.size);
            } else {
                ctx.count(self.drops, 0, pkt.size);
            }
        }
        if let Some(v) = view {
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
    let codel = Codel::declare(pipe, crate::qos::port_slots(info), params.codel.interval);
    let counter = |pipe: &mut Pipeline, name| {
        pipe.counter(CounterSpec {
            name,
            kind: CounterKind::Packets,
            size: 1,
        })
    };
    let marks = counter(pipe, "aqm_marks");
    let drops = counter(pipe, "aqm_drops");
    pipe.stages(3, 4);
    let p = CodelProgram {
        core,
        codel,
        target_ns: ns_u64(params.codel.target),
        marks,
        drops,
    };
    let a = QosAgent::new(core, &params.qos, Vec::new());
    Ok((Box::new(p), Box::new(a)))
}
