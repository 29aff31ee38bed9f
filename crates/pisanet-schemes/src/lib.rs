//! Switch programs for the pisanet PISA model, one module per scheme, each
//! written like its P4 program: headers and parser (the typed [`Packet`]
//! headers), ingress, egress, and a control agent for the switch CPU.
//!
//! Owns: the programs and their control agents, [`SchemeParams`], and the
//! factory ([`build`], [`resources`]) the facade calls by scheme name.
//! Leaves to others: the pipeline model (pisanet-pisa), topology and routes
//! (the simulator hands them in as [`SwitchInfo`]).
//!
//! Data-plane modules deny `clippy::float_arithmetic` and
//! `clippy::integer_division`: a switch pipeline has neither (P4TE section 3.1).
//!
//! [`Packet`]: pisanet_net::Packet

pub mod ecmp;
pub mod flowlet_ecmp;
pub mod l3;
pub mod rps;

use pisanet_engine::{SimRng, SimTime};
use pisanet_pisa::{
    ControlAgent, ControlPlaneConfig, DataPlane, Pipeline, ResourceReport, Switch, SwitchInfo,
    TargetConfig,
};

/// The schemes [`build`] knows.
pub const KINDS: &[&str] = &["ecmp", "flowlet_ecmp", "rps"];

/// Parameters of the schemes (the facade maps the `[scheme]` TOML table here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemeParams {
    /// Idle gap after which `flowlet_ecmp` starts a new flowlet
    /// (`scheme.flowlet_timeout_us`; HULA section 6 uses 100 us).
    pub flowlet_timeout: SimTime,
    /// Slots of the flowlet registers (a power of two).
    pub flowlet_slots: u32,
    /// Fixed costs of the hardware target.
    pub target: TargetConfig,
}

impl Default for SchemeParams {
    fn default() -> Self {
        SchemeParams {
            flowlet_timeout: SimTime::from_us(100),
            flowlet_slots: 8192,
            target: TargetConfig::default(),
        }
    }
}

type Program = (Pipeline, Box<dyn DataPlane>, Box<dyn ControlAgent>);

fn declare(kind: &str, params: &SchemeParams, info: &SwitchInfo) -> Result<Program, String> {
    let mut pipe = Pipeline::new(match kind {
        "ecmp" => "ecmp",
        "flowlet_ecmp" => "flowlet_ecmp",
        "rps" => "rps",
        _ => {
            return Err(format!(
                "unknown scheme {kind:?}; known: {}",
                KINDS.join(", ")
            ))
        }
    });
    let (dp, agent): (Box<dyn DataPlane>, Box<dyn ControlAgent>) = match kind {
        "ecmp" => {
            let p = ecmp::Ecmp::new(&mut pipe, info);
            let a = p.agent();
            (Box::new(p), Box::new(a))
        }
        "flowlet_ecmp" => {
            let p = flowlet_ecmp::FlowletEcmp::new(&mut pipe, params, info)?;
            let a = p.agent();
            (Box::new(p), Box::new(a))
        }
        "rps" => {
            let p = rps::Rps::new(&mut pipe);
            let a = p.agent();
            (Box::new(p), Box::new(a))
        }
        _ => unreachable!("checked above"),
    };
    Ok((pipe, dp, agent))
}

/// Builds the switch `info.id` running scheme `kind`, with its routes installed.
pub fn build(
    kind: &str,
    params: &SchemeParams,
    info: &SwitchInfo,
    rng: SimRng,
    cp: ControlPlaneConfig,
) -> Result<Switch, String> {
    let (pipe, dp, agent) = declare(kind, params, info)?;
    Switch::new(info, pipe, dp, agent, rng, cp, params.target)
}

/// The resource report of scheme `kind` with default parameters.
pub fn resources(kind: &str) -> Result<ResourceReport, String> {
    let (pipe, _, _) = declare(kind, &SchemeParams::default(), &SwitchInfo::default())?;
    Ok(pipe.resources())
}

#[cfg(test)]
mod tests;
