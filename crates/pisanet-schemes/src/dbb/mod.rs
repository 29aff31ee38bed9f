//! `dbb`: deterministic bandwidth-based packet-level traffic splitting
//! (seed 001, Wu, Yen, Hsieh, Tseng). The control plane plans each planned
//! source-sink switch pair offline ([`plan`], section III); each switch then
//! dispatches the pair's data packets cyclically by a local circular counter
//! (section III.E) through a table from counter value to egress port.
//!
//! ```text
//! ingress:  dbb_pair (src /24, dst /24, has payload) ─set_pair(pair, cycle)─►
//!             dbb_counter[pair (, flow slot)]: c = counter; counter = c+1 == cycle ? 0 : c+1
//!             dbb_dispatch (pair, c) ─set_nhop─► egress_spec
//!           miss (ACKs, other traffic) ─► ipv4_lpm / ecmp_group (crc32 of the 5-tuple)
//! ```
//!
//! docs/schemes/dbb.md records the choices (local counters, ACKs on ECMP,
//! several pairs on shared links, the reading of algorithm 1).

#![deny(clippy::float_arithmetic, clippy::integer_division)]

pub mod plan;

use crate::l3::{self, RouteAgent, FIVE_TUPLE_FIELDS, L3};
use crate::SchemeParams;
use pisanet_net::packet::{NodeId, PortNo};
use pisanet_net::topology::{NodeKind, Topology};
use pisanet_net::{Packet, L4};
use pisanet_pisa::{
    matches, ActionCall, ActionId, ControlAgent, CpuApi, Ctx, DataPlane, HashAlgo, HashId,
    HashSpec, KeyField, MatchKind, Pipeline, RegisterId, RegisterSpec, StandardMetadata,
    SwitchInfo, TableEntry, TableId, TableSpec, UpdateType, UserMeta, Write,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Which packets share a circular counter (section III.E).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CounterKind {
    /// One counter per source-sink switch pair (the paper's "shared counter").
    #[default]
    Shared,
    /// One counter per flow of the pair (the paper's "independent counter"):
    /// the flow's slot is a CRC-32 of its 5-tuple over `flow_slots` slots,
    /// so flows that collide share one.
    PerFlow,
}

/// The `[scheme.dbb]` table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DbbParams {
    /// Source-sink switch pairs to plan, by switch name (`[["S1", "S8"]]`);
    /// both must have hosts. Empty (default): every ordered pair of
    /// switches with hosts. Each pair is planned on its own over the full
    /// link rates; pairs that share links split each link's rate by the
    /// same proportions (docs/schemes/dbb.md).
    pub pairs: Vec<[String; 2]>,
    /// "shared" (default): one counter per pair; "per_flow": one per flow
    /// slot of the pair.
    pub counter: CounterKind,
    /// per_flow: counter slots per pair (a power of two; a flow takes the
    /// slot its 5-tuple hashes to).
    #[schemars(range(min = 1, max = 65536), extend("x-applies-when" = {"key": "scheme.dbb.counter", "in": ["per_flow"]}))]
    pub flow_slots: u32,
    /// Pairs a switch can hold: rows of `dbb_pair`, and counters (times
    /// `flow_slots` with per_flow).
    #[schemars(range(min = 1, max = 65536))]
    pub pair_slots: u32,
    /// Largest PDC length N (packets) accepted from the planner: a pair's
    /// dispatch table at the source has N entries (eq. 1).
    #[schemars(range(min = 1, max = 65536))]
    pub max_pdc: u32,
    /// Rows of `dbb_dispatch` (sum over the switch's pairs of its quota).
    #[schemars(range(min = 1, max = 1048576))]
    pub dispatch_entries: u32,
    /// Every switch's rules, computed by the facade with [`switch_rules`]
    /// before the switches are built (not a config key).
    #[serde(skip)]
    #[schemars(skip)]
    pub rules: Option<Arc<Vec<SwitchRules>>>,
}

impl Default for DbbParams {
    fn default() -> Self {
        DbbParams {
            pairs: Vec::new(),
            counter: CounterKind::Shared,
            flow_slots: 64,
            pair_slots: 1024,
            max_pdc: 1024,
            dispatch_entries: 65536,
            rules: None,
        }
    }
}

impl DbbParams {
    /// Checks between keys.
    pub fn validate(&self) -> Result<(), String> {
        if !self.flow_slots.is_power_of_two() {
            return Err(format!(
                "scheme.dbb.flow_slots: must be a power of two, got {}",
                self.flow_slots
            ));
        }
        Ok(())
    }
}

/// One planned pair as one switch sees it: the addresses that select its
/// packets and the switch's dispatch sequence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PairRule {
    /// Source and sink switch names.
    pub src: String,
    pub sink: String,
    /// The source's and sink's rack /24 (`dbb_pair`'s keys).
    pub src_prefix: u32,
    pub dst_prefix: u32,
    /// Egress port for local counter value 0, 1, ... (length Q_s(k), or N
    /// at the source; section III.E).
    pub ports: Vec<PortNo>,
}

/// What one switch installs: a rule per planned pair it forwards.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SwitchRules {
    pub pairs: Vec<PairRule>,
}

fn switch_id(topo: &Topology, name: &str, key: &str) -> Result<NodeId, String> {
    let n = topo
        .node_by_name(name)
        .ok_or_else(|| format!("{key}: unknown switch {name:?}"))?;
    if !matches!(topo.nodes[n as usize].kind, NodeKind::Switch { .. }) {
        return Err(format!("{key}: {name:?} is a host, not a switch"));
    }
    Ok(n)
}

/// Looks up a source-sink pair by switch names and plans it.
pub fn plan_pair(
    topo: &Topology,
    src: &str,
    sink: &str,
    max_pdc: u32,
) -> Result<plan::Plan, String> {
    let s = switch_id(topo, src, "source")?;
    let t = switch_id(topo, sink, "sink")?;
    plan::plan(topo, s, t, max_pdc as u64, plan::Dispatch::Corrected)
}

/// Plans every pair of `params.pairs` (or every ordered pair of ToRs) and
/// returns each switch's rules, indexed by switch (node id - hosts).
pub fn switch_rules(topo: &Topology, params: &DbbParams) -> Result<Vec<SwitchRules>, String> {
    let rack_of = |n: NodeId| topo.racks.iter().position(|&t| t == n);
    let prefix = |r: usize| topo.host_addr[topo.rack_hosts[r][0] as usize] & 0xffff_ff00;
    let mut pairs: Vec<(NodeId, NodeId)> = Vec::new();
    if params.pairs.is_empty() {
        for &a in &topo.racks {
            for &b in &topo.racks {
                if a != b {
                    pairs.push((a, b));
                }
            }
        }
    } else {
        for (i, [a, b]) in params.pairs.iter().enumerate() {
            let key = format!("scheme.dbb.pairs[{i}]");
            let (s, t) = (switch_id(topo, a, &key)?, switch_id(topo, b, &key)?);
            for n in [s, t] {
                if rack_of(n).is_none() {
                    return Err(format!(
                        "{key}: switch {:?} has no hosts, so no traffic starts or ends there",
                        topo.nodes[n as usize].name
                    ));
                }
            }
            if pairs.contains(&(s, t)) {
                return Err(format!("{key}: pair {a:?}, {b:?} is listed twice"));
            }
            pairs.push((s, t));
        }
    }
    let mut rules = vec![SwitchRules::default(); topo.n_switches() as usize];
    for (s, t) in pairs {
        let (sn, tn) = (&topo.nodes[s as usize].name, &topo.nodes[t as usize].name);
        let p = plan::plan(topo, s, t, params.max_pdc as u64, plan::Dispatch::Corrected)
            .map_err(|e| format!("scheme.dbb: pair {sn} -> {tn}: {e}"))?;
        for (k, r) in rules.iter_mut().enumerate() {
            let node = k as NodeId + topo.n_hosts;
            let ports = p.dispatch_of(node);
            if ports.is_empty() {
                continue;
            }
            if r.pairs.len() as u32 >= params.pair_slots {
                return Err(format!(
                    "scheme.dbb.pair_slots: switch {} forwards more than {} planned pairs",
                    topo.nodes[node as usize].name, params.pair_slots
                ));
            }
            r.pairs.push(PairRule {
                src: sn.clone(),
                sink: tn.clone(),
                src_prefix: prefix(rack_of(s).expect("checked")),
                dst_prefix: prefix(rack_of(t).expect("checked")),
                ports,
            });
        }
    }
    for (k, r) in rules.iter().enumerate() {
        let entries: usize = r.pairs.iter().map(|p| p.ports.len()).sum();
        if entries > params.dispatch_entries as usize {
            return Err(format!(
                "scheme.dbb.dispatch_entries: switch {} needs {entries} dispatch entries, more than {}",
                topo.nodes[k + topo.n_hosts as usize].name,
                params.dispatch_entries
            ));
        }
    }
    Ok(rules)
}

/// Actions of `dbb_pair`.
pub const SET_PAIR: ActionId = ActionId(0);
pub const NO_PAIR: ActionId = ActionId(1);
/// Action of `dbb_dispatch` (same layout as `set_nhop`).
pub const SET_NHOP: ActionId = ActionId(0);
pub const NO_DISPATCH: ActionId = ActionId(1);

/// The program's handles.
pub struct Dbb {
    pub l3: L3,
    /// (src /24, dst /24, has payload) -> set_pair(pair, cycle length).
    pub dbb_pair: TableId,
    /// (pair, counter value) -> set_nhop(port).
    pub dbb_dispatch: TableId,
    /// dbb_counter[pair] (shared) or [pair x flow_slots + slot] (per_flow):
    /// the next counter value, 0..cycle.
    pub dbb_counter: RegisterId,
    /// crc32 of the 5-tuple (ECMP for unplanned traffic; per_flow slot).
    pub ecmp_hash: HashId,
    hash_tier: u8,
    per_flow: bool,
    /// log2(flow_slots).
    slot_bits: u32,
}

impl Dbb {
    pub fn new(pipe: &mut Pipeline, params: &SchemeParams, info: &SwitchInfo) -> Self {
        let d = &params.dbb;
        let l3 = L3::declare(pipe, HashAlgo::Crc32);
        let ecmp_hash = pipe.hash(HashSpec {
            name: "ecmp_hash",
            algo: HashAlgo::Crc32,
            fields: FIVE_TUPLE_FIELDS.to_vec(),
        });
        let key = |name, kind, width| KeyField { name, kind, width };
        let dbb_pair = pipe.table(TableSpec {
            name: "dbb_pair",
            keys: vec![
                key("hdr.ipv4.src", MatchKind::Ternary, 32),
                key("hdr.ipv4.dst", MatchKind::Ternary, 32),
                key("meta.has_payload", MatchKind::Exact, 1),
            ],
            actions: vec!["set_pair", "NoAction"],
            size: d.pair_slots,
            default_action: ActionCall::bare(NO_PAIR),
            direct_counter: false,
            direct_meter: None,
        });
        let dbb_dispatch = pipe.table(TableSpec {
            name: "dbb_dispatch",
            keys: vec![
                key("meta.dbb_pair", MatchKind::Exact, 16),
                key("meta.dbb_seq", MatchKind::Exact, 16),
            ],
            actions: vec!["set_nhop", "NoAction"],
            size: d.dispatch_entries,
            default_action: ActionCall::bare(NO_DISPATCH),
            direct_counter: false,
            direct_meter: None,
        });
        let per_flow = d.counter == CounterKind::PerFlow;
        let cells = if per_flow {
            d.pair_slots.saturating_mul(d.flow_slots)
        } else {
            d.pair_slots
        };
        let dbb_counter = pipe.register(RegisterSpec {
            name: "dbb_counter",
            width: 16,
            size: cells,
            holds: "the next value of the pair's (or flow slot's) circular counter (DBB section III.E)",
        });
        // dbb_pair, dbb_counter, dbb_dispatch / ipv4_lpm, ecmp_group.
        pipe.stages(3, 0);
        Dbb {
            l3,
            dbb_pair,
            dbb_dispatch,
            dbb_counter,
            ecmp_hash,
            hash_tier: l3::hash_tier(info.tier, params.ecmp_hash_per_tier),
            per_flow,
            slot_bits: d.flow_slots.trailing_zeros(),
        }
    }
}

impl DataPlane for Dbb {
    fn has_parser(&self) -> bool {
        false
    }

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
        // Data packets only: a pure ACK (TCP without payload) takes ECMP.
        let has_payload = match pkt.l4 {
            L4::Tcp(t) => t.payload > 0,
            L4::Udp(_) => true,
            L4::None => false,
        };
        let key = [pkt.ip.src as u64, pkt.ip.dst as u64, has_payload as u64, 0];
        let hit = ctx.apply(self.dbb_pair, key);
        if hit.action.action == SET_PAIR {
            let (pair, cycle) = (hit.action.params[0], hit.action.params[1]);
            let index = if self.per_flow {
                let h = ctx.hash(self.ecmp_hash, &l3::five_tuple(pkt)) as u64;
                (pair << self.slot_bits) | (h & ((1 << self.slot_bits) - 1))
            } else {
                pair
            };
            // Section III.E: a circular counter (register action: read,
            // then write the successor modulo the cycle by a compare).
            let seq = ctx.register(self.dbb_counter, index as u32, |c| {
                let next = if c + 1 >= cycle { 0 } else { c + 1 };
                (next, c)
            });
            let nhop = ctx.apply(self.dbb_dispatch, [pair, seq, 0, 0]);
            if nhop.action.action == SET_NHOP {
                l3::set_nhop(sm, &nhop.action);
                return;
            }
        }
        let (hash, tier) = (self.ecmp_hash, self.hash_tier);
        self.l3.route(ctx, pkt, sm, |ctx| {
            l3::member_hash(ctx.hash(hash, &l3::five_tuple(pkt)), tier)
        });
    }
}

/// Installs the routes and the switch's DBB rules at start.
pub struct DbbAgent {
    routes: RouteAgent,
    dbb_pair: TableId,
    dbb_dispatch: TableId,
    rules: SwitchRules,
}

impl ControlAgent for DbbAgent {
    fn on_start(&mut self, info: &SwitchInfo, cpu: &mut CpuApi<'_>) {
        self.routes.on_start(info, cpu);
        for (i, p) in self.rules.pairs.iter().enumerate() {
            let entry = TableEntry::new(
                vec![
                    matches::ternary(p.src_prefix as u64, 0xffff_ff00),
                    matches::ternary(p.dst_prefix as u64, 0xffff_ff00),
                    matches::exact(1),
                ],
                ActionCall::new(SET_PAIR, [i as u64, p.ports.len() as u64, 0]),
            );
            cpu.write(Write::TableEntry {
                table: self.dbb_pair,
                update: UpdateType::Insert,
                entry,
            });
            for (c, &port) in p.ports.iter().enumerate() {
                let entry = TableEntry::new(
                    vec![matches::exact(i as u64), matches::exact(c as u64)],
                    ActionCall::new(SET_NHOP, [port as u64, 0, 0]),
                );
                cpu.write(Write::TableEntry {
                    table: self.dbb_dispatch,
                    update: UpdateType::Insert,
                    entry,
                });
            }
        }
    }

    fn on_port_status(&mut self, port: PortNo, up: bool, cpu: &mut CpuApi<'_>) {
        // NOTE: the plan is static (the paper plans offline); a failed port
        // only leaves the ECMP groups. Re-planning is not modelled.
        self.routes.on_port_status(port, up, cpu);
    }
}

/// The registry's constructor (lib.rs, `REGISTRY`): `params.dbb.rules`
/// must hold the plan (the facade computes it with [`switch_rules`]); the
/// resource report declares the program without one.
pub fn declare(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    _: pisanet_pisa::ControlPlaneConfig,
) -> Result<crate::Program, String> {
    params.dbb.validate()?;
    let rules = match &params.dbb.rules {
        Some(all) => all
            .get(info.id as usize)
            .cloned()
            .ok_or_else(|| format!("dbb: no rules for switch {}", info.id))?,
        None if info.n_ports == 0 => SwitchRules::default(),
        None => {
            return Err(
                "dbb: no plan (the facade computes it with pisanet_schemes::dbb::switch_rules)"
                    .into(),
            )
        }
    };
    let p = Dbb::new(pipe, params, info);
    let agent = DbbAgent {
        routes: RouteAgent::new(p.l3),
        dbb_pair: p.dbb_pair,
        dbb_dispatch: p.dbb_dispatch,
        rules,
    };
    Ok((Box::new(p), Box::new(agent)))
}

#[cfg(test)]
mod tests;
