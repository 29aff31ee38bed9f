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

pub mod conga;
pub mod ecmp;
pub mod flowlet_ecmp;
pub mod hula;
pub mod l3;
pub mod p4te;
pub mod rps;
pub mod wire;

pub use flowlet_ecmp::FlowletId;

use pisanet_engine::{SimRng, SimTime};
use pisanet_pisa::{
    ControlAgent, ControlPlaneConfig, DataPlane, Pipeline, ResourceReport, Switch, SwitchInfo,
    TargetConfig,
};

/// The schemes [`build`] knows.
pub const KINDS: &[&str] = &[
    "ecmp",
    "flowlet_ecmp",
    "rps",
    "hula",
    "conga",
    "conga_prime",
    "p4te",
];

/// Parameters of the schemes (the facade maps the `[scheme]` TOML table here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemeParams {
    /// Idle gap after which `flowlet_ecmp` starts a new flowlet
    /// (`scheme.flowlet_timeout_us`; HULA section 6 uses 100 us).
    pub flowlet_timeout: SimTime,
    /// Slots of the flowlet registers (a power of two).
    pub flowlet_slots: u32,
    /// Whether each tier picks ECMP members from its own bits of the hash
    /// (`scheme.ecmp_hash_per_tier`, default true; [`l3::member_hash`]).
    /// False: every tier uses the un-rotated hash, as switches with identical
    /// hash seeds do, and a flow's choices at successive tiers are correlated
    /// (hash polarization). Read by the programs that pick members of
    /// `ecmp_group` by a 5-tuple hash: `ecmp`, `flowlet_ecmp`, and `conga` /
    /// `conga_prime` (their flowlet ECMP); not by `hula` or `p4te`.
    pub ecmp_hash_per_tier: bool,
    /// How `flowlet_ecmp` and `conga_prime` give a new flowlet its id
    /// (`scheme.flowlet_id`).
    pub flowlet_id: FlowletId,
    /// Fixed costs of the hardware target.
    pub target: TargetConfig,
    /// `hula` (`[scheme.hula]`).
    pub hula: HulaParams,
    /// `conga`, `conga_prime` (`[scheme.conga]`).
    pub conga: CongaParams,
    /// `p4te` (`[scheme.p4te]`).
    pub p4te: p4te::P4teParams,
}

/// Parameters of `hula` (HULA sections 4 and 6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HulaParams {
    /// Each ToR sends a probe on every uplink this often (T_p; section 6: 200 us).
    pub probe_interval: SimTime,
    /// An entry not refreshed for this long is replaced by any probe (T_fail, section 4.4).
    pub keepalive: SimTime,
    /// Time constant of the TX utilization estimator (section 4.2: at least 2 T_p).
    pub tau: SimTime,
    /// Per ToR and link, at most one probe per this window (section 4.5).
    pub suppress_window: SimTime,
    /// Slots of the per-ToR registers (the ToRs the program supports).
    pub tor_slots: u32,
}

impl Default for HulaParams {
    fn default() -> Self {
        HulaParams {
            probe_interval: SimTime::from_us(200),
            keepalive: SimTime::from_us(600),
            tau: SimTime::from_us(400),
            suppress_window: SimTime::from_us(150),
            tor_slots: 1024,
        }
    }
}

/// Parameters of `conga` and `conga_prime`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CongaParams {
    /// Time constant of the DRE (CONGA: T_dre / alpha).
    pub tau: SimTime,
    /// Congestion-To-Leaf entries older than this count as uncongested.
    pub age: SimTime,
    /// Slots of the per-leaf registers.
    pub leaf_slots: u32,
}

impl Default for CongaParams {
    fn default() -> Self {
        CongaParams {
            tau: SimTime::from_us(200),
            age: SimTime::from_us(10_000),
            leaf_slots: 1024,
        }
    }
}

impl Default for SchemeParams {
    fn default() -> Self {
        SchemeParams {
            flowlet_timeout: SimTime::from_us(100),
            flowlet_slots: 8192,
            ecmp_hash_per_tier: true,
            flowlet_id: FlowletId::default(),
            target: TargetConfig::default(),
            hula: HulaParams::default(),
            conga: CongaParams::default(),
            p4te: p4te::P4teParams::default(),
        }
    }
}

type Program = (Pipeline, Box<dyn DataPlane>, Box<dyn ControlAgent>);

fn declare(
    kind: &str,
    params: &SchemeParams,
    info: &SwitchInfo,
    cp: ControlPlaneConfig,
) -> Result<Program, String> {
    let mut pipe = Pipeline::new(match kind {
        "ecmp" => "ecmp",
        "flowlet_ecmp" => "flowlet_ecmp",
        "rps" => "rps",
        "hula" => "hula",
        "conga" => "conga",
        "conga_prime" => "conga_prime",
        "p4te" => "p4te",
        _ => {
            return Err(format!(
                "unknown scheme {kind:?}; known: {}",
                KINDS.join(", ")
            ))
        }
    });
    let (dp, agent): (Box<dyn DataPlane>, Box<dyn ControlAgent>) = match kind {
        "ecmp" => {
            let p = ecmp::Ecmp::new(&mut pipe, params, info);
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
        "hula" => {
            let p = hula::Hula::new(&mut pipe, params, info)?;
            let a = p.agent(params);
            (Box::new(p), Box::new(a))
        }
        "conga" | "conga_prime" => {
            let p = conga::Conga::new(&mut pipe, params, info, kind == "conga_prime")?;
            let a = p.agent();
            (Box::new(p), Box::new(a))
        }
        "p4te" => {
            let p = p4te::P4te::new(&mut pipe, params, info)?;
            let a = p.agent(cp);
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
    let (pipe, dp, agent) = declare(kind, params, info, cp)?;
    Switch::new(info, pipe, dp, agent, rng, cp, params.target)
}

/// The resource report of scheme `kind` with default parameters.
pub fn resources(kind: &str) -> Result<ResourceReport, String> {
    let (pipe, _, _) = declare(
        kind,
        &SchemeParams::default(),
        &SwitchInfo::default(),
        ControlPlaneConfig::default(),
    )?;
    Ok(pipe.resources())
}

#[cfg(test)]
mod hula_tests;
#[cfg(test)]
mod tests;
