//! Switch programs for the pisanet PISA model, one module per scheme, each
//! written like its P4 program: headers and parser (the typed [`Packet`]
//! headers), ingress, egress, and a control agent for the switch CPU.
//!
//! Owns: the programs and their control agents, each scheme's parameters
//! (declared once, in the scheme's file, with serde and JSON Schema), the
//! scheme registry ([`REGISTRY`], [`SchemeKind`]) and the factory
//! ([`build`], [`resources`]) the facade calls.
//! Leaves to others: the pipeline model (pisanet-pisa), topology and routes
//! (the simulator hands them in as [`SwitchInfo`]).
//!
//! Data-plane modules deny `clippy::float_arithmetic` and
//! `clippy::integer_division`: a switch pipeline has neither (P4TE section 3.1).
//!
//! [`Packet`]: pisanet_net::Packet

pub mod blocks;
pub mod codel;
pub mod conga;
pub mod dbb;
pub mod dcqcn_cp;
pub mod ecmp;
pub mod flowlet_ecmp;
pub mod hula;
pub mod l3;
pub mod noaqm;
pub mod p4qcn;
pub mod p4qos;
pub mod p4te;
pub mod prio;
pub mod qos;
pub mod rps;
pub mod wire;

pub use flowlet_ecmp::FlowletId;

use pisanet_engine::units;
use pisanet_engine::{SimRng, SimTime};
use pisanet_pisa::{
    ControlAgent, ControlPlaneConfig, DataPlane, Pipeline, ResourceReport, Switch, SwitchInfo,
    TargetConfig,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A program and its control agent, declared on a pipeline.
pub type Program = (Box<dyn DataPlane>, Box<dyn ControlAgent>);

/// Declares a scheme's program on `pipe` for one switch.
pub type DeclareFn =
    fn(&mut Pipeline, &SchemeParams, &SwitchInfo, ControlPlaneConfig) -> Result<Program, String>;

/// One row of the scheme registry: everything the facade, the CLI, the
/// schema and the docs know about a scheme.
pub struct SchemeRow {
    /// The `scheme.kind` value.
    pub name: &'static str,
    /// One line: what it is (README table, `pisanet schema`).
    pub about: &'static str,
    /// Where it is documented.
    pub docs: &'static str,
    /// The `[scheme]` keys it reads besides `kind` (a sub-table by its name):
    /// any other key given with this kind is refused.
    pub reads: &'static [&'static str],
    /// Declares its program; `None` for `ecmp_native`, the facade's
    /// hand-written reference without the pipeline model.
    pub declare: Option<DeclareFn>,
}

/// The scheme registry. A new scheme is one file (its program, its params
/// struct, its `declare`) and one row here (plus, if it has a sub-table of
/// its own, that field in [`SchemeParams`]).
pub const REGISTRY: &[SchemeRow] = &[
    SchemeRow {
        name: "ecmp",
        about: "LPM routing, action selector over a CRC-32 of the 5-tuple",
        docs: "docs/model.md",
        reads: &["ecmp_hash_per_tier"],
        declare: Some(ecmp::declare),
    },
    SchemeRow {
        name: "flowlet_ecmp",
        about: "ECMP whose hash includes a flowlet id (CONGA'-style)",
        docs: "crates/pisanet-schemes/src/flowlet_ecmp.rs",
        reads: &["flowlet_timeout_us", "ecmp_hash_per_tier", "flowlet_id"],
        declare: Some(flowlet_ecmp::declare),
    },
    SchemeRow {
        name: "rps",
        about: "random packet spraying",
        docs: "crates/pisanet-schemes/src/rps.rs",
        reads: &[],
        declare: Some(rps::declare),
    },
    SchemeRow {
        name: "hula",
        about: "HULA (seed 004): probes, best hop per ToR, flowlets, aging, suppression",
        docs: "docs/schemes/hula.md, docs/results/hula.md",
        reads: &["flowlet_timeout_us", "hula"],
        declare: Some(hula::declare),
    },
    SchemeRow {
        name: "conga",
        about: "CONGA (2-tier leaf-spine)",
        docs: "docs/schemes/hula.md",
        reads: &["flowlet_timeout_us", "ecmp_hash_per_tier", "conga"],
        declare: Some(conga::declare),
    },
    SchemeRow {
        name: "conga_prime",
        about: "CONGA' (the HULA paper's 3-tier variant: CONGA in a pod, flowlet ECMP across pods)",
        docs: "docs/schemes/hula.md",
        reads: &["flowlet_timeout_us", "ecmp_hash_per_tier", "flowlet_id", "conga"],
        declare: Some(conga::declare_prime),
    },
    SchemeRow {
        name: "p4te",
        about: "P4TE (seed 000): in-band monitoring, routing groups, class-aware flowlets, fake-ACK rate adaptation",
        docs: "docs/schemes/p4te.md, docs/results/p4te.md",
        reads: &["p4te"],
        declare: Some(p4te::declare),
    },
    SchemeRow {
        name: "dbb",
        about: "DBB (seed 001): deterministic bandwidth-based packet splitting by a max-flow plan and circular counters",
        docs: "docs/schemes/dbb.md",
        reads: &["ecmp_hash_per_tier", "dbb"],
        declare: Some(dbb::declare),
    },
    SchemeRow {
        name: "p4qcn",
        about: "P4QCN (seed 002): QCN congestion point on egress, feedback (ECN 11) cloned back to the flow's source; ECMP forwarding",
        docs: "docs/schemes/p4qcn.md",
        reads: &["ecmp_hash_per_tier", "p4qcn"],
        declare: Some(p4qcn::declare),
    },
    SchemeRow {
        name: "dcqcn_cp",
        about: "DCQCN's congestion point (P4QCN's 3-point baseline): RED-like ECN marking on egress; ECMP forwarding",
        docs: "docs/schemes/p4qcn.md",
        reads: &["ecmp_hash_per_tier", "dcqcn_cp"],
        declare: Some(dcqcn_cp::declare),
    },
    SchemeRow {
        name: "p4qos",
        about: "P4QoS (seed 003): per-packet deadlines, LLEP, cooperative AQM marking every packet above the target",
        docs: "docs/schemes/p4qos.md",
        reads: &["ecmp_hash_per_tier", "qos", "p4qos"],
        declare: Some(p4qos::declare),
    },
    SchemeRow {
        name: "p4qos_codel",
        about: "P4QoS+CoDel: P4-CoDel with P4QoS's marking target",
        docs: "docs/schemes/p4qos.md",
        reads: &["ecmp_hash_per_tier", "qos", "p4qos", "codel"],
        declare: Some(p4qos::declare_codel),
    },
    SchemeRow {
        name: "p4qos_interval",
        about: "Interval P4QoS: one mark above P4QoS's target per interval, auto-tuned as CoDel's",
        docs: "docs/schemes/p4qos.md",
        reads: &["ecmp_hash_per_tier", "qos", "p4qos", "codel"],
        declare: Some(p4qos::declare_interval),
    },
    SchemeRow {
        name: "noaqm",
        about: "P4QoS's baseline without AQM (deadline accounting and LLEP only)",
        docs: "docs/schemes/p4qos.md",
        reads: &["ecmp_hash_per_tier", "qos"],
        declare: Some(noaqm::declare),
    },
    SchemeRow {
        name: "codel",
        about: "P4-CoDel (RFC 8289 in egress, control law by table), P4QoS's AQM baseline",
        docs: "docs/schemes/p4qos.md",
        reads: &["ecmp_hash_per_tier", "qos", "codel"],
        declare: Some(codel::declare),
    },
    SchemeRow {
        name: "prio",
        about: "strict priority by deadline (lower deadline, higher priority queue), P4QoS's baseline",
        docs: "docs/schemes/p4qos.md",
        reads: &["ecmp_hash_per_tier", "qos"],
        declare: Some(prio::declare),
    },
    SchemeRow {
        name: "ecmp_native",
        about: "hand-written reference ECMP without the pipeline model (same choices as `ecmp`, for speed comparison)",
        docs: "crates/pisanet/src/forward.rs",
        reads: &["ecmp_hash_per_tier"],
        declare: None,
    },
];

/// `scheme.kind`: a row of [`REGISTRY`], read and written by its name
/// (default: the first row, `ecmp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SchemeKind(u8);

impl SchemeKind {
    /// The kind named `name`, if the registry has it.
    pub fn by_name(name: &str) -> Option<SchemeKind> {
        REGISTRY
            .iter()
            .position(|r| r.name == name)
            .map(|i| SchemeKind(i as u8))
    }
    /// Every kind, in registry order.
    pub fn all() -> impl Iterator<Item = SchemeKind> {
        (0..REGISTRY.len()).map(|i| SchemeKind(i as u8))
    }
    pub fn row(self) -> &'static SchemeRow {
        &REGISTRY[self.0 as usize]
    }
    pub fn name(self) -> &'static str {
        self.row().name
    }
    /// Whether this kind reads the `[scheme]` key `key` (a top-level key of the table).
    pub fn reads(self, key: &str) -> bool {
        key == "kind" || self.row().reads.contains(&key)
    }
    /// The kinds that read `key`, by name.
    pub fn readers(key: &str) -> Vec<&'static str> {
        REGISTRY
            .iter()
            .filter(|r| r.reads.contains(&key))
            .map(|r| r.name)
            .collect()
    }
}

impl std::fmt::Display for SchemeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for SchemeKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for SchemeKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        SchemeKind::by_name(&name).ok_or_else(|| {
            let known: Vec<String> = REGISTRY.iter().map(|r| format!("{:?}", r.name)).collect();
            serde::de::Error::custom(format!("must be one of {}, got {name:?}", known.join(", ")))
        })
    }
}

impl JsonSchema for SchemeKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SchemeKind".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let one_of: Vec<serde_json::Value> = REGISTRY
            .iter()
            .map(|r| {
                serde_json::json!({
                    "type": "string", "const": r.name, "enum": [r.name],
                    "description": format!("{} ({})", r.about, r.docs),
                })
            })
            .collect();
        schemars::json_schema!({
            "description": "The forwarding scheme: a switch program on the PISA model, or ecmp_native.",
            "oneOf": one_of,
        })
    }
}

/// The `[scheme]` table: the kind, the keys several schemes share, and one
/// sub-table per scheme that has parameters of its own (declared in the
/// scheme's file). Which keys each kind reads is in its [`REGISTRY`] row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SchemeParams {
    /// Forwarding scheme (the registry's names).
    pub kind: SchemeKind,
    /// Idle gap that starts a new flowlet (us; HULA section 6: 100).
    #[serde(rename = "flowlet_timeout_us", with = "units::us")]
    #[schemars(with = "f64", range(min = 0.001, max = 2.8e8), extend("x-unit" = "us"))]
    pub flowlet_timeout: SimTime,
    /// Slots of the flowlet registers (a power of two; not a config key).
    #[serde(skip)]
    pub flowlet_slots: u32,
    /// Each tier picks ECMP next hops from its own bits of the 5-tuple hash
    /// (default true), as switches with per-switch hash seeds do. False:
    /// every tier uses the same bits (identical seeds), so a flow's choices
    /// at successive tiers are correlated (hash polarization;
    /// [`l3::member_hash`]).
    pub ecmp_hash_per_tier: bool,
    /// The id a new flowlet hashes with: "random" (default) or "increment"
    /// (HULA section 6 as written); flowlet_ecmp and conga_prime across pods.
    pub flowlet_id: FlowletId,
    /// Fixed costs of the hardware target (not a config key).
    #[serde(skip)]
    pub target: TargetConfig,
    /// hula: probes and best-hop tables (HULA sections 4 and 6).
    pub hula: hula::HulaParams,
    /// conga, conga_prime: congestion feedback (CONGA; HULA section 6).
    pub conga: conga::CongaParams,
    /// p4te: monitoring, routing groups and rate adaptation (P4TE section 6.1).
    pub p4te: p4te::P4teParams,
    /// dbb: planned pairs and counters (DBB section III).
    pub dbb: dbb::DbbParams,
    /// p4qcn: the congestion point's thresholds and feedback rate limit (P4QCN section 3.1.1).
    pub p4qcn: p4qcn::P4qcnParams,
    /// dcqcn_cp: RED-like marking thresholds (DCQCN section 3.1).
    pub dcqcn_cp: dcqcn_cp::DcqcnCpParams,
    /// p4qos, its variants, noaqm, codel, prio: deadlines, LLEP (P4QoS section II).
    pub qos: qos::QosParams,
    /// p4qos, p4qos_codel, p4qos_interval: cooperative AQM (P4QoS section II.B).
    pub p4qos: p4qos::P4qosParams,
    /// codel (target and interval), p4qos_codel and p4qos_interval (interval): RFC 8289.
    pub codel: blocks::CodelParams,
}

impl Default for SchemeParams {
    fn default() -> Self {
        SchemeParams {
            kind: SchemeKind::default(),
            flowlet_timeout: SimTime::from_us(100),
            flowlet_slots: 8192,
            ecmp_hash_per_tier: true,
            flowlet_id: FlowletId::default(),
            target: TargetConfig::default(),
            hula: hula::HulaParams::default(),
            conga: conga::CongaParams::default(),
            p4te: p4te::P4teParams::default(),
            dbb: dbb::DbbParams::default(),
            p4qcn: p4qcn::P4qcnParams::default(),
            dcqcn_cp: dcqcn_cp::DcqcnCpParams::default(),
            qos: qos::QosParams::default(),
            p4qos: p4qos::P4qosParams::default(),
            codel: blocks::CodelParams::default(),
        }
    }
}

impl SchemeParams {
    /// The checks that relate keys to each other (single-key ranges are in
    /// the schema and checked before this). Errors name the key.
    pub fn validate(&self) -> Result<(), String> {
        self.hula.validate()?;
        self.conga.validate()?;
        self.p4te.validate()?;
        self.dbb.validate()?;
        self.p4qcn.validate()?;
        self.dcqcn_cp.validate()?;
        self.qos.validate()
    }
}

/// Declares `params.kind`'s program on a new pipeline.
fn declare(
    params: &SchemeParams,
    info: &SwitchInfo,
    cp: ControlPlaneConfig,
) -> Result<(Pipeline, Program), String> {
    let row = params.kind.row();
    let declare = row.declare.ok_or_else(|| {
        format!(
            "{} is not a switch program (the facade builds it)",
            row.name
        )
    })?;
    let mut pipe = Pipeline::new(row.name);
    let program = declare(&mut pipe, params, info, cp)?;
    Ok((pipe, program))
}

/// Builds the switch `info.id` running `params.kind`, with its routes installed.
pub fn build(
    params: &SchemeParams,
    info: &SwitchInfo,
    rng: SimRng,
    cp: ControlPlaneConfig,
) -> Result<Switch, String> {
    let (pipe, (dp, agent)) = declare(params, info, cp)?;
    Switch::new(info, pipe, dp, agent, rng, cp, params.target)
}

/// The resource report of scheme `kind` with default parameters.
pub fn resources(kind: &str) -> Result<ResourceReport, String> {
    let kind = SchemeKind::by_name(kind).ok_or_else(|| {
        let known: Vec<&str> = REGISTRY.iter().map(|r| r.name).collect();
        format!("unknown scheme {kind:?}; known: {}", known.join(", "))
    })?;
    let params = SchemeParams {
        kind,
        ..SchemeParams::default()
    };
    let (pipe, _) = declare(
        &params,
        &SwitchInfo::default(),
        ControlPlaneConfig::default(),
    )?;
    Ok(pipe.resources())
}

/// Tests: builds the switch running the scheme named `kind`.
#[cfg(test)]
pub(crate) fn build_kind(
    kind: &str,
    params: &SchemeParams,
    info: &SwitchInfo,
    rng: SimRng,
    cp: ControlPlaneConfig,
) -> Result<Switch, String> {
    let kind = SchemeKind::by_name(kind).ok_or_else(|| format!("unknown scheme {kind:?}"))?;
    let params = SchemeParams {
        kind,
        ..params.clone()
    };
    build(&params, info, rng, cp)
}

#[cfg(test)]
mod hula_tests;
#[cfg(test)]
mod p4qcn_tests;
#[cfg(test)]
mod p4qos_tests;
#[cfg(test)]
mod tests;
