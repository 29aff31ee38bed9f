//! The forwarding seam between the event loop and the switches.
//!
//! `Pisa` runs every switch as a program on the PISA model (pisanet-pisa,
//! pisanet-schemes). `Native` is a hand-written ECMP kept as the reference
//! the model is measured against (`scheme.kind = "ecmp_native"`): same
//! routes, same CRC-32 hash family, no pipeline.

use pisanet_engine::{RngStreams, SimTime, StreamKind};
use pisanet_net::packet::{Packet, PortNo};
use pisanet_net::topology::{NodeKind, Routes, Topology};
use pisanet_pisa::{Clock, ControlPlaneConfig, Route, Switch, SwitchInfo};
use std::sync::Arc;

use crate::api::Error;
use crate::config::Config;

/// The CRC-32 of a packet's 5-tuple, as a switch's hash unit computes it.
pub fn hash_five_tuple(pkt: &Packet) -> u32 {
    let (src, dst, proto, sport, dport) = pkt.five_tuple();
    let mut b = [0u8; 13];
    b[0..4].copy_from_slice(&src.to_be_bytes());
    b[4..8].copy_from_slice(&dst.to_be_bytes());
    b[8] = proto;
    b[9..11].copy_from_slice(&sport.to_be_bytes());
    b[11..13].copy_from_slice(&dport.to_be_bytes());
    pisanet_pisa::crc32(&b)
}

/// Hand-written ECMP: per switch, a next-hop group per class of racks
/// (`pisanet_net::routes`) or, toward a rack it links to, per rack, and a
/// host port per local host. It picks exactly what the `ecmp` program does
/// (the same CRC-32 of the 5-tuple, rotated by the switch's tier unless
/// `scheme.ecmp_hash_per_tier` is off, modulo the group), so the two give the
/// same digest and differ only in cost.
pub struct NativeEcmp {
    /// `entry[sw * classes + class]`: an index into `groups`, or
    /// `ADJ | base` (the switch links to every ToR of the class: the group
    /// of rack r is `adj[base + rack_pos[r]]`), or `NONE`.
    entry: Vec<u32>,
    classes: u32,
    rack_class: Vec<u32>,
    rack_pos: Vec<u32>,
    /// Distinct next-hop groups.
    groups: Vec<Vec<PortNo>>,
    adj: Vec<u32>,
    /// The tier each switch passes to `member_hash` (0 everywhere when
    /// `ecmp_hash_per_tier` is off).
    tier: Vec<u8>,
    host_port: Vec<PortNo>,
    topo: Topology,
}

const ADJ: u32 = 1 << 31;
const NONE: u32 = u32::MAX;

impl NativeEcmp {
    /// `hash_per_tier`: `SchemeParams::ecmp_hash_per_tier`.
    pub fn new(topo: &Topology, routes: &Routes, hash_per_tier: bool) -> Self {
        let classes = routes.n_classes();
        let mut groups: Vec<Vec<PortNo>> = Vec::new();
        let mut group_of: std::collections::HashMap<Vec<PortNo>, u32> = Default::default();
        let mut intern = |ports: Vec<PortNo>| {
            *group_of.entry(ports).or_insert_with_key(|k| {
                groups.push(k.clone());
                groups.len() as u32 - 1
            })
        };
        let mut entry = Vec::with_capacity((topo.n_switches() * classes) as usize);
        let mut adj = Vec::new();
        for sw in 0..topo.n_switches() {
            let own = topo.racks.binary_search(&(sw + topo.n_hosts)).ok();
            for c in 0..classes {
                let racks = routes.class_racks(c);
                if routes.adjacent(sw, c) {
                    entry.push(ADJ | adj.len() as u32);
                    for &r in racks {
                        adj.push(intern(routes.next_hops(topo, sw, r)));
                    }
                    continue;
                }
                // Every rack of the class but the own one has the same next hops.
                entry.push(match racks.iter().find(|&&r| Some(r as usize) != own) {
                    Some(&r) => intern(routes.next_hops(topo, sw, r)),
                    None => NONE,
                });
            }
        }
        let host_port = (0..topo.n_hosts)
            .map(|h| topo.nodes[h as usize].ports[0].peer_port)
            .collect();
        let tier = (topo.n_hosts..topo.nodes.len() as u32)
            .map(|n| match topo.nodes[n as usize].kind {
                NodeKind::Switch { tier } => pisanet_schemes::l3::hash_tier(tier, hash_per_tier),
                NodeKind::Host => 0,
            })
            .collect();
        NativeEcmp {
            entry,
            classes,
            rack_class: (0..topo.racks.len() as u32)
                .map(|r| routes.rack_class(r))
                .collect(),
            rack_pos: (0..topo.racks.len() as u32)
                .map(|r| routes.rack_pos(r))
                .collect(),
            groups,
            adj,
            tier,
            host_port,
            topo: topo.clone(),
        }
    }

    /// The egress port for `pkt` at switch `sw`, or None to drop.
    pub fn route(&self, sw: u32, pkt: &Packet) -> Option<PortNo> {
        let host = self.topo.host_of_addr(pkt.ip.dst)?;
        let rack = self.topo.host_rack[host as usize];
        if self.topo.racks[rack as usize] == sw + self.topo.n_hosts {
            return Some(self.host_port[host as usize]);
        }
        let class = self.rack_class[rack as usize];
        let e = self.entry[(sw * self.classes + class) as usize];
        let g = match e {
            NONE => return None,
            e if e & ADJ != 0 => self.adj[((e & !ADJ) + self.rack_pos[rack as usize]) as usize],
            e => e,
        };
        let g = &self.groups[g as usize];
        match g.len() {
            0 => None,
            1 => Some(g[0]),
            n => {
                let h =
                    pisanet_schemes::l3::member_hash(hash_five_tuple(pkt), self.tier[sw as usize]);
                Some(g[h as usize % n])
            }
        }
    }
}

/// The forwarding of every switch in a run.
pub enum Forwarding {
    Native(Box<NativeEcmp>),
    Pisa(Vec<Switch>),
}

/// What a run's switches share: the routes by class of racks, the pods,
/// and the per-rack tables every switch sees (computed once).
pub struct Shared {
    pub routes: Routes,
    pub pods: Vec<u32>,
    pub rack_pods: Arc<[u32]>,
    pub rack_prefixes: Arc<[u32]>,
}

impl Shared {
    pub fn new(topo: &Topology) -> Shared {
        let pods = pods(topo);
        let rack_pods: Arc<[u32]> = if three_tier(topo) {
            topo.racks.iter().map(|&t| pods[t as usize]).collect()
        } else {
            Arc::from([])
        };
        Shared {
            routes: topo.routes(),
            rack_pods,
            rack_prefixes: Routes::rack_prefixes(topo).into(),
            pods,
        }
    }
}

fn three_tier(topo: &Topology) -> bool {
    matches!(topo.kind.as_str(), "fat_tree" | "hula3tier")
}

/// What the loop knows of a switch, for the programs: ports, prefix routes
/// (`pisanet_net::routes`), tiers.
pub fn switch_info(topo: &Topology, shared: &Shared, sw: u32) -> SwitchInfo {
    let node = sw + topo.n_hosts;
    let n = &topo.nodes[node as usize];
    let tier = match n.kind {
        NodeKind::Switch { tier } => tier,
        NodeKind::Host => 0,
    };
    let peer_tier: Vec<i8> = n
        .ports
        .iter()
        .map(|p| match topo.nodes[p.peer_node as usize].kind {
            NodeKind::Host => -1,
            NodeKind::Switch { tier } => tier as i8,
        })
        .collect();
    let host_ports: Vec<PortNo> = (0..n.ports.len() as PortNo)
        .filter(|&i| peer_tier[i as usize] < 0)
        .collect();
    let rack = topo.racks.binary_search(&node).ok().map(|r| r as u32);
    let routes = shared
        .routes
        .prefix_routes(topo, sw)
        .into_iter()
        .map(|r| Route {
            prefix: r.prefix,
            len: r.len,
            ports: r.ports,
            rack: r.rack,
        })
        .collect();
    // A pod is what a switch reaches without going through the top tier.
    let pod = (three_tier(topo) && tier < 2).then(|| shared.pods[node as usize]);
    SwitchInfo {
        id: sw,
        n_ports: n.ports.len() as u16,
        port_rates: n.ports.iter().map(|p| p.rate).collect(),
        routes,
        uplinks: topo.uplinks(node),
        tier,
        name: n.name.clone(),
        rack,
        host_ports,
        n_racks: topo.racks.len() as u32,
        pod,
        peer_tier,
        rack_pods: shared.rack_pods.clone(),
        rack_prefixes: shared.rack_prefixes.clone(),
    }
}

/// The pod of every node of a 3-tier topology, for tier-0/1 switches: the
/// index of the smallest rack in its connected component below the top
/// tier, divided by the racks per pod (`u32::MAX` elsewhere). One pass over
/// the topology.
pub fn pods(topo: &Topology) -> Vec<u32> {
    let below_top =
        |n: u32| matches!(topo.nodes[n as usize].kind, NodeKind::Switch { tier } if tier < 2);
    let mut rack_of = vec![u32::MAX; topo.nodes.len()];
    for (r, &t) in topo.racks.iter().enumerate() {
        rack_of[t as usize] = rack_of[t as usize].min(r as u32);
    }
    // Racks are numbered pod by pod, so rack / racks-per-pod is the pod.
    let racks_per_pod = match topo.plan {
        pisanet_net::topology::AddrPlan::FatTree { half_k } => half_k,
        _ => 2,
    }
    .max(1);
    let mut pod = vec![u32::MAX; topo.nodes.len()];
    let mut seen = vec![false; topo.nodes.len()];
    for start in 0..topo.nodes.len() as u32 {
        if seen[start as usize] || !below_top(start) {
            continue;
        }
        let mut component = vec![start];
        seen[start as usize] = true;
        let mut min_rack = u32::MAX;
        let mut i = 0;
        while i < component.len() {
            let u = component[i];
            i += 1;
            min_rack = min_rack.min(rack_of[u as usize]);
            for p in &topo.nodes[u as usize].ports {
                let v = p.peer_node;
                if !seen[v as usize] && below_top(v) {
                    seen[v as usize] = true;
                    component.push(v);
                }
            }
        }
        for u in component {
            pod[u as usize] = min_rack / racks_per_pod;
        }
    }
    pod
}

pub fn control_plane(cfg: &Config) -> ControlPlaneConfig {
    ControlPlaneConfig {
        to_cpu_latency: SimTime::from_us_f64(cfg.control_plane.to_cpu_latency_us),
        write_latency: SimTime::from_us_f64(cfg.control_plane.write_latency_us),
        write_interval: SimTime::from_us_f64(cfg.control_plane.write_interval_us),
    }
}

/// Switch `sw`'s clock as `[clock]` draws it (ideal by default, without a draw).
pub fn switch_clock(cfg: &Config, streams: &RngStreams, sw: u32) -> Clock {
    use rand::Rng;
    let c = &cfg.clock;
    if c.offset_max_us == 0.0 && c.drift_max_ppm == 0.0 && c.resolution_ns == 0 {
        return Clock::IDEAL;
    }
    let mut rng = streams.stream(StreamKind::Clock, sw as u64);
    let offset_max_ps = (c.offset_max_us * 1e6).round() as u64;
    let offset_ps = if offset_max_ps == 0 {
        0
    } else {
        rng.gen_range(0..=offset_max_ps)
    };
    let drift_max_ppb = (c.drift_max_ppm * 1e3).round() as i64;
    let drift_ppb = if drift_max_ppb == 0 {
        0
    } else {
        rng.gen_range(-drift_max_ppb..=drift_max_ppb)
    };
    Clock {
        offset_ps,
        drift_ppb,
        resolution_ps: (c.resolution_ns * 1000).max(1),
    }
}

/// Builds every switch of `topo` for the configured scheme.
pub fn build(cfg: &Config, topo: &Topology, streams: &RngStreams) -> Result<Forwarding, Error> {
    if cfg.scheme.kind.row().declare.is_none() {
        // ecmp_native: the one registry row without a switch program.
        return Ok(Forwarding::Native(Box::new(NativeEcmp::new(
            topo,
            &topo.routes(),
            cfg.scheme.ecmp_hash_per_tier,
        ))));
    }
    let shared = Shared::new(topo);
    let mut params = cfg.scheme.clone();
    if cfg.scheme.kind.name() == "dbb" {
        // DBB plans network-wide (section III): every switch's rules first.
        let rules = pisanet_schemes::dbb::switch_rules(topo, &params.dbb).map_err(Error::input)?;
        params.dbb.rules = Some(std::sync::Arc::new(rules));
    }
    let params = &params;
    let cp = control_plane(cfg);
    let mut switches = Vec::with_capacity(topo.n_switches() as usize);
    for sw in 0..topo.n_switches() {
        let info = switch_info(topo, &shared, sw);
        let rng = streams.stream(StreamKind::Switch, sw as u64);
        let mut s = pisanet_schemes::build(params, &info, rng, cp).map_err(|e| {
            Error::input(format!(
                "scheme.kind ({}): switch {}: {e}",
                cfg.scheme.kind, info.name
            ))
        })?;
        s.set_clock(switch_clock(cfg, streams, sw));
        switches.push(s);
    }
    Ok(Forwarding::Pisa(switches))
}
