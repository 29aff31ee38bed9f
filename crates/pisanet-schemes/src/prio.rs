//! `prio`: P4QoS's priority-queueing baseline (section III baseline 3):
//! "assigns packets with lower deadlines to higher priority queues". The
//! first switch puts a flow's packets in the strict-priority queue of its
//! deadline's rank among the configured deadlines (`[scheme.qos]
//! deadlines`; the lowest deadline gets queue 0, the highest priority);
//! the packet keeps that queue along its path. Set `topology.priorities`
//! to at least the number of distinct deadlines (packets with a queue index
//! beyond the last go to the last). Packets without a deadline keep the
//! queue their sender chose. No marking; deadlines accounted as in qos.rs.

use crate::SchemeParams;
use pisanet_pisa::{ControlPlaneConfig, Pipeline, SwitchInfo};

/// The registry's constructor: the shared program without AQM
/// ([`crate::qos::PlainQos`]), queueing each packet by its deadline's rank.
pub fn declare(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    _: ControlPlaneConfig,
) -> Result<crate::Program, String> {
    crate::qos::declare_plain(pipe, params, info, true)
}
