//! The forwarding seam between the event loop and the switches.
//!
//! `Pisa` runs every switch as a program on the PISA model (pisanet-pisa,
//! pisanet-schemes). `Native` is a hand-written ECMP kept as the reference
//! the model is measured against (`scheme.kind = "ecmp_native"`): same
//! routes, same CRC-32 hash family, no pipeline.

use pisanet_engine::{RngStreams, SimTime, StreamKind};
use pisanet_net::packet::{Packet, PortNo};
use pisanet_net::topology::{NodeKind, Topology};
use pisanet_pisa::{Clock, ControlPlaneConfig, Route, Switch, SwitchInfo};

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

/// Hand-written ECMP: per switch, a next-hop group per destination rack and
/// a host port per local host. It picks exactly what the `ecmp` program does
/// (the same CRC-32 of the 5-tuple, rotated by the switch's tier unless
/// `scheme.ecmp_hash_per_tier` is off, modulo the group), so the two give the
/// same digest and differ only in cost.
pub struct NativeEcmp {
    /// groups[sw][rack] = ports on shortest paths toward that rack.
    groups: Vec<Vec<Vec<PortNo>>>,
    /// The tier each switch passes to `member_hash` (0 everywhere when
    /// `ecmp_hash_per_tier` is off).
    tier: Vec<u8>,
    host_port: Vec<PortNo>,
    topo: Topology,
}

impl NativeEcmp {
    /// `hash_per_tier`: `SchemeParams::ecmp_hash_per_tier`.
    pub fn new(topo: &Topology, hash_per_tier: bool) -> Self {
        let groups = topo.compute_routes();
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
            groups,
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
        let g = &self.groups[sw as usize][rack as usize];
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

/// What the loop knows of a switch, for the programs: ports, routes, tiers.
/// `pods`: [`pods`] of the topology (computed once for all switches).
pub fn switch_info(
    topo: &Topology,
    routes: &[Vec<Vec<PortNo>>],
    pods: &[u32],
    sw: u32,
) -> SwitchInfo {
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
    let rack = topo.racks.iter().position(|&t| t == node).map(|r| r as u32);
    let mut out_routes = Vec::new();
    for (r, ports) in routes[sw as usize].iter().enumerate() {
        let prefix = topo.host_addr[topo.rack_hosts[r][0] as usize] & 0xffff_ff00;
        if Some(r as u32) == rack {
            for &h in &topo.rack_hosts[r] {
                let port = topo.nodes[h as usize].ports[0].peer_port;
                out_routes.push(Route {
                    prefix: topo.host_addr[h as usize],
                    len: 32,
                    ports: vec![port],
                    rack: Some(r as u32),
                });
            }
        } else if !ports.is_empty() {
            out_routes.push(Route {
                prefix,
                len: 24,
                ports: ports.clone(),
                rack: Some(r as u32),
            });
        }
    }
    let three_tier = matches!(topo.kind.as_str(), "fat_tree" | "hula3tier");
    // A pod is what a switch reaches without going through the top tier.
    let pod = (three_tier && tier < 2).then(|| pods[node as usize]);
    let rack_pods: Vec<u32> = if three_tier {
        topo.racks.iter().map(|&t| pods[t as usize]).collect()
    } else {
        Vec::new()
    };
    SwitchInfo {
        id: sw,
        n_ports: n.ports.len() as u16,
        port_rates: n.ports.iter().map(|p| p.rate).collect(),
        routes: out_routes,
        uplinks: topo.uplinks(node),
        tier,
        name: n.name.clone(),
        rack,
        host_ports,
        n_racks: topo.racks.len() as u32,
        pod,
        peer_tier,
        rack_pods,
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
            cfg.scheme.ecmp_hash_per_tier,
        ))));
    }
    let routes = topo.compute_routes();
    let pods = pods(topo);
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
        let info = switch_info(topo, &routes, &pods, sw);
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
