//! `noaqm`: P4QoS's "simple switch without any mechanism to either
//! differentiate between flows or address excessive queuing" (section III
//! baseline 1). It carries the QoS header, runs LLEP and accounts deadlines
//! as every QoS scheme does (qos.rs), so its late counts compare with
//! P4QoS's; it never marks or drops.

use crate::SchemeParams;
use pisanet_pisa::{ControlPlaneConfig, Pipeline, SwitchInfo};

/// The registry's constructor: the shared program without AQM
/// ([`crate::qos::PlainQos`]).
pub fn declare(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    _: ControlPlaneConfig,
) -> Result<crate::Program, String> {
    crate::qos::declare_plain(pipe, params, info, false)
}
