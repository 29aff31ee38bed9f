//! The resource report of a program (`pisanet resources SCHEME`), modelled on
//! P4TE section 6.2: match-action tables with key widths and entry counts,
//! action selectors, register arrays as width x size bits, counters, meters,
//! hashes, estimators, and the dependent stages of ingress and egress as the
//! program declares them (6.2.2's critical path of the table dependency graph).

use crate::counter::CounterSpec;
use crate::estimator::EstimatorSpec;
use crate::hash::HashSpec;
use crate::meter::{MeterKind, MeterSpec, MeterUnit};
use crate::pipeline::{Pipeline, PktGenSpec};
use crate::register::RegisterSpec;
use crate::table::{KeyField, SelectorSpec, TableSpec};
use serde::Serialize;
use std::fmt;

#[derive(Clone, Debug, Serialize)]
pub struct TableReport {
    pub name: &'static str,
    pub key: Vec<KeyField>,
    pub key_bits: u32,
    pub entries: u32,
    pub actions: Vec<&'static str>,
    pub default_action: &'static str,
    pub direct_counter: bool,
    pub direct_meter: Option<(MeterKind, MeterUnit)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RegisterReport {
    #[serde(flatten)]
    pub spec: RegisterSpec,
    pub bits: u64,
}

/// What a program needs of the target.
#[derive(Clone, Debug, Serialize)]
pub struct ResourceReport {
    pub program: &'static str,
    pub ingress_stages: u8,
    pub egress_stages: u8,
    pub tables: Vec<TableReport>,
    pub selectors: Vec<SelectorSpec>,
    pub registers: Vec<RegisterReport>,
    pub register_bits: u64,
    pub counters: Vec<CounterSpec>,
    pub meters: Vec<MeterSpec>,
    pub hashes: Vec<HashSpec>,
    pub estimators: Vec<EstimatorSpec>,
    pub packet_generator: Vec<PktGenSpec>,
}

fn table_report(s: &TableSpec) -> TableReport {
    TableReport {
        name: s.name,
        key: s.keys.clone(),
        key_bits: s.keys.iter().map(|k| k.width as u32).sum(),
        entries: s.size,
        actions: s.actions.clone(),
        default_action: s.actions[s.default_action.action.0 as usize],
        direct_counter: s.direct_counter,
        direct_meter: s.direct_meter,
    }
}

impl Pipeline {
    /// The resource report of the program this pipeline declares.
    pub fn resources(&self) -> ResourceReport {
        let registers: Vec<RegisterReport> = self
            .registers
            .iter()
            .map(|r| RegisterReport {
                spec: r.spec.clone(),
                bits: r.spec.width as u64 * r.spec.size as u64,
            })
            .collect();
        ResourceReport {
            program: self.name,
            ingress_stages: self.stages.0,
            egress_stages: self.stages.1,
            tables: self.tables.iter().map(|t| table_report(&t.spec)).collect(),
            selectors: self.selectors.iter().map(|s| s.spec.clone()).collect(),
            register_bits: registers.iter().map(|r| r.bits).sum(),
            registers,
            counters: self.counters.iter().map(|c| c.spec.clone()).collect(),
            meters: self.meters.iter().map(|m| m.spec.clone()).collect(),
            hashes: self.hashes.iter().map(|h| h.spec.clone()).collect(),
            estimators: self.estimators.iter().map(|e| e.spec.clone()).collect(),
            packet_generator: self.pktgen.clone(),
        }
    }
}

impl fmt::Display for ResourceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "program {}", self.program)?;
        writeln!(
            f,
            "dependent stages: ingress {}, egress {}",
            self.ingress_stages, self.egress_stages
        )?;
        if !self.tables.is_empty() {
            writeln!(f, "\nmatch-action tables")?;
            writeln!(
                f,
                "  {:<20} {:<34} {:>8} {:>8}  {:<14} actions",
                "name", "key", "key bits", "entries", "default"
            )?;
            for t in &self.tables {
                let key: Vec<String> = t
                    .key
                    .iter()
                    .map(|k| format!("{} {:?}:{}", k.name, k.kind, k.width).to_lowercase())
                    .collect();
                let mut extras = String::new();
                if t.direct_counter {
                    extras.push_str(" +direct_counter");
                }
                if let Some((kind, unit)) = t.direct_meter {
                    extras.push_str(&format!(" +direct_meter({kind:?}, {unit:?})"));
                }
                writeln!(
                    f,
                    "  {:<20} {:<34} {:>8} {:>8}  {:<14} {}{}",
                    t.name,
                    key.join(", "),
                    t.key_bits,
                    t.entries,
                    t.default_action,
                    t.actions.join(", "),
                    extras
                )?;
            }
        }
        if !self.selectors.is_empty() {
            writeln!(f, "\naction selectors")?;
            writeln!(
                f,
                "  {:<20} {:<9} {:>7} {:>8}  members",
                "name", "hash", "groups", "members"
            )?;
            for s in &self.selectors {
                writeln!(
                    f,
                    "  {:<20} {:<9} {:>7} {:>8}  {}",
                    s.name,
                    format!("{:?}", s.algo).to_lowercase(),
                    s.max_groups,
                    s.max_members_per_group,
                    s.actions.join(", ")
                )?;
            }
        }
        if !self.registers.is_empty() {
            writeln!(f, "\nregister arrays")?;
            writeln!(
                f,
                "  {:<20} {:>6} x {:<8} = {:>10} bits  holds",
                "name", "width", "size", ""
            )?;
            for r in &self.registers {
                writeln!(
                    f,
                    "  {:<20} {:>6} x {:<8} = {:>10} bits  {}",
                    r.spec.name, r.spec.width, r.spec.size, r.bits, r.spec.holds
                )?;
            }
            writeln!(
                f,
                "  total {} bits ({} KiB)",
                self.register_bits,
                self.register_bits.div_ceil(8 * 1024)
            )?;
        }
        if !self.counters.is_empty() {
            writeln!(f, "\ncounters")?;
            for c in &self.counters {
                writeln!(f, "  {:<20} {:?} x {}", c.name, c.kind, c.size)?;
            }
        }
        if !self.meters.is_empty() {
            writeln!(f, "\nmeters")?;
            for m in &self.meters {
                writeln!(
                    f,
                    "  {:<20} {:?} in {:?} x {}",
                    m.name, m.kind, m.unit, m.size
                )?;
            }
        }
        if !self.hashes.is_empty() {
            writeln!(f, "\nhashes")?;
            for h in &self.hashes {
                let fields: Vec<String> =
                    h.fields.iter().map(|(n, w)| format!("{n}:{w}")).collect();
                writeln!(
                    f,
                    "  {:<20} {:?} over {}",
                    h.name,
                    h.algo,
                    fields.join(", ")
                )?;
            }
        }
        if !self.estimators.is_empty() {
            writeln!(f, "\nutilization estimators")?;
            for e in &self.estimators {
                writeln!(f, "  {:<20} {} ports, tau {} ps", e.name, e.ports, e.tau_ps)?;
            }
        }
        for g in &self.packet_generator {
            writeln!(
                f,
                "\npacket generator app {} every {} ps",
                g.app, g.period_ps
            )?;
        }
        Ok(())
    }
}
