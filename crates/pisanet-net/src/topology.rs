//! Topology builders and the address plan.
//!
//! Nodes are numbered hosts first (`0..n_hosts`), then switches. Every host
//! hangs off exactly one switch, its rack's top-of-rack (ToR) switch; racks
//! are numbered in ToR order. Addresses are hierarchical, as in the fat-tree
//! paper (Al-Fares et al., SIGCOMM 2008, section 3.2): host `j` of rack `r`
//! has `10.a.b.(j+2)` with `a.b` the rack's position (`pod.edge` in a fat
//! tree, `r >> 8 . r & 255` elsewhere), so every rack owns a /24 and a
//! fat-tree pod a /16: downward routing is a prefix match.
//!
//! Routes are computed once: for each switch and each rack, the ports on
//! shortest paths toward that rack (more than one = an ECMP group).

use pisanet_engine::{BitRate, SimTime};
use std::collections::{HashMap, VecDeque};

use crate::packet::{HostId, NodeId, PortNo};
pub use crate::routes::{PrefixRoute, Routes};

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    /// A switch; tier 0 is a ToR/leaf/edge, 1 an aggregation/spine, 2 a core.
    Switch {
        tier: u8,
    },
}

/// One end of a link, seen from the port that owns it.
#[derive(Clone, Copy, Debug)]
pub struct PortSpec {
    pub peer_node: NodeId,
    pub peer_port: PortNo,
    pub rate: BitRate,
    pub delay: SimTime,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    pub ports: Vec<PortSpec>,
}

/// How addresses map to racks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrPlan {
    /// `10.(r>>8).(r&255).(j+2)`.
    Flat,
    /// `10.pod.edge.(j+2)` with rack = pod * half_k + edge.
    FatTree { half_k: u32 },
}

/// A built network: nodes, ports, racks and addresses.
#[derive(Clone, Debug)]
pub struct Topology {
    pub kind: String,
    pub nodes: Vec<Node>,
    pub n_hosts: u32,
    /// ToR node of each rack.
    pub racks: Vec<NodeId>,
    /// Hosts of each rack, in port order.
    pub rack_hosts: Vec<Vec<HostId>>,
    /// Rack of each host.
    pub host_rack: Vec<u32>,
    /// Address of each host.
    pub host_addr: Vec<u32>,
    pub plan: AddrPlan,
}

/// A link as given to [`Topology::from_links`].
#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub a: NodeId,
    pub b: NodeId,
    pub rate: BitRate,
    pub delay: SimTime,
}

pub fn ipv4(a: u8, b: u8, c: u8, d: u8) -> u32 {
    u32::from_be_bytes([a, b, c, d])
}

pub fn ipv4_string(addr: u32) -> String {
    let [a, b, c, d] = addr.to_be_bytes();
    format!("{a}.{b}.{c}.{d}")
}

impl Topology {
    /// Builds a topology from named nodes and links. Hosts must come first in
    /// `nodes`. Checks: each host has exactly one link, to a switch; the
    /// network is connected; no self-loops. Errors name the offending node.
    pub fn from_links(
        kind: &str,
        nodes: Vec<(String, NodeKind)>,
        links: &[LinkSpec],
        plan: AddrPlan,
    ) -> Result<Topology, String> {
        let n_hosts = nodes
            .iter()
            .take_while(|(_, k)| *k == NodeKind::Host)
            .count();
        if nodes[n_hosts..].iter().any(|(_, k)| *k == NodeKind::Host) {
            return Err("hosts must be listed before switches".into());
        }
        let mut out: Vec<Node> = nodes
            .into_iter()
            .map(|(name, kind)| Node {
                name,
                kind,
                ports: Vec::new(),
            })
            .collect();
        for l in links {
            let n = out.len() as NodeId;
            if l.a >= n || l.b >= n {
                return Err(format!("link {}-{}: unknown node", l.a, l.b));
            }
            if l.a == l.b {
                return Err(format!(
                    "link {0}-{0}: a node cannot link to itself",
                    out[l.a as usize].name
                ));
            }
            let pa = out[l.a as usize].ports.len() as PortNo;
            let pb = out[l.b as usize].ports.len() as PortNo;
            out[l.a as usize].ports.push(PortSpec {
                peer_node: l.b,
                peer_port: pb,
                rate: l.rate,
                delay: l.delay,
            });
            out[l.b as usize].ports.push(PortSpec {
                peer_node: l.a,
                peer_port: pa,
                rate: l.rate,
                delay: l.delay,
            });
        }
        // Racks: each switch with hosts is a ToR; racks numbered by ToR node id.
        let mut racks: Vec<NodeId> = Vec::new();
        let mut rack_of_tor: HashMap<NodeId, u32> = HashMap::new();
        let mut host_rack = vec![0u32; n_hosts];
        for (h, rack) in host_rack.iter_mut().enumerate() {
            let node = &out[h];
            if node.ports.len() != 1 {
                return Err(format!(
                    "host {}: must have exactly one link, has {}",
                    node.name,
                    node.ports.len()
                ));
            }
            let tor = node.ports[0].peer_node;
            if out[tor as usize].kind == NodeKind::Host {
                return Err(format!(
                    "host {}: must link to a switch, not host {}",
                    node.name, out[tor as usize].name
                ));
            }
            *rack = *rack_of_tor.entry(tor).or_insert_with(|| {
                racks.push(tor);
                racks.len() as u32 - 1
            });
        }
        // Number racks by ToR node id, so rack order does not depend on host order.
        let mut order: Vec<u32> = (0..racks.len() as u32).collect();
        order.sort_by_key(|&r| racks[r as usize]);
        let mut renum = vec![0u32; racks.len()];
        for (new, &old) in order.iter().enumerate() {
            renum[old as usize] = new as u32;
        }
        racks.sort();
        for r in host_rack.iter_mut() {
            *r = renum[*r as usize];
        }
        if racks.len() > 1 << 16 {
            return Err(format!(
                "{} racks: at most 65536 (each rack is a /24 of 10.0.0.0/8)",
                racks.len()
            ));
        }
        let mut rack_hosts: Vec<Vec<HostId>> = vec![Vec::new(); racks.len()];
        for (h, &r) in host_rack.iter().enumerate() {
            rack_hosts[r as usize].push(h as HostId);
        }
        let mut host_addr = vec![0u32; n_hosts];
        for (r, hosts) in rack_hosts.iter().enumerate() {
            if hosts.len() > 250 {
                return Err(format!(
                    "rack of {}: at most 250 hosts per switch, has {}",
                    out[racks[r] as usize].name,
                    hosts.len()
                ));
            }
            for (j, &h) in hosts.iter().enumerate() {
                host_addr[h as usize] = rack_prefix(plan, r as u32) | (j as u32 + 2);
            }
        }
        let topo = Topology {
            kind: kind.to_string(),
            nodes: out,
            n_hosts: n_hosts as u32,
            racks,
            rack_hosts,
            host_rack,
            host_addr,
            plan,
        };
        topo.check_connected()?;
        Ok(topo)
    }

    fn check_connected(&self) -> Result<(), String> {
        if self.nodes.is_empty() {
            return Err("topology has no nodes".into());
        }
        let mut seen = vec![false; self.nodes.len()];
        let mut q = VecDeque::from([0u32]);
        seen[0] = true;
        while let Some(n) = q.pop_front() {
            for p in &self.nodes[n as usize].ports {
                if !seen[p.peer_node as usize] {
                    seen[p.peer_node as usize] = true;
                    q.push_back(p.peer_node);
                }
            }
        }
        match seen.iter().position(|s| !s) {
            Some(i) => Err(format!(
                "topology is disconnected: {} cannot be reached from {}",
                self.nodes[i].name, self.nodes[0].name
            )),
            None => Ok(()),
        }
    }

    pub fn n_switches(&self) -> u32 {
        self.nodes.len() as u32 - self.n_hosts
    }

    pub fn is_host(&self, n: NodeId) -> bool {
        n < self.n_hosts
    }

    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| i as NodeId)
    }

    /// The rack an address belongs to, or None for an address outside the plan.
    pub fn rack_of_addr(&self, addr: u32) -> Option<u32> {
        let [a, b, c, _] = addr.to_be_bytes();
        if a != 10 {
            return None;
        }
        let r = match self.plan {
            AddrPlan::Flat => ((b as u32) << 8) | c as u32,
            AddrPlan::FatTree { half_k } => b as u32 * half_k + c as u32,
        };
        ((r as usize) < self.racks.len()).then_some(r)
    }

    /// The host with `addr`, if any.
    pub fn host_of_addr(&self, addr: u32) -> Option<HostId> {
        let r = self.rack_of_addr(addr)?;
        let j = (addr & 0xff).checked_sub(2)? as usize;
        self.rack_hosts[r as usize].get(j).copied()
    }

    /// Uplinks of a switch: ports toward a higher tier.
    pub fn uplinks(&self, sw: NodeId) -> Vec<PortNo> {
        let tier = |n: NodeId| match self.nodes[n as usize].kind {
            NodeKind::Host => -1i32,
            NodeKind::Switch { tier } => tier as i32,
        };
        let t = tier(sw);
        self.nodes[sw as usize]
            .ports
            .iter()
            .enumerate()
            .filter(|(_, p)| tier(p.peer_node) > t)
            .map(|(i, _)| i as PortNo)
            .collect()
    }

    /// Shortest-path next hops of every switch toward every rack, by class
    /// of racks ([`Routes`]): one breadth-first search per class, not per
    /// rack, and no per-(switch, rack) table.
    pub fn routes(&self) -> Routes {
        Routes::new(self)
    }

    /// Shortest-path next hops as a full table: `result[s][r]` lists the
    /// ports of switch node `n_hosts + s` on shortest paths toward rack `r`
    /// (empty at the rack's own ToR, which delivers by host port). Hosts are
    /// not transit nodes. Switches x racks lists: for tests and small
    /// topologies only; runs use [`Topology::routes`].
    pub fn compute_routes(&self) -> Vec<Vec<Vec<PortNo>>> {
        let routes = self.routes();
        (0..self.n_switches())
            .map(|s| {
                (0..self.racks.len() as u32)
                    .map(|r| routes.next_hops(self, s, r))
                    .collect()
            })
            .collect()
    }

    /// The links (rate, delay) of one shortest path from host `src` to host
    /// `dst`, following the first next hop at each switch.
    pub fn path_links(&self, routes: &Routes, src: HostId, dst: HostId) -> Vec<(BitRate, SimTime)> {
        self.path_links_by(
            |sw, rack| routes.next_hops(self, sw, rack).first().copied(),
            src,
            dst,
        )
    }

    fn path_links_by(
        &self,
        first_hop: impl Fn(u32, u32) -> Option<PortNo>,
        src: HostId,
        dst: HostId,
    ) -> Vec<(BitRate, SimTime)> {
        let mut links = Vec::with_capacity(8);
        let up = self.nodes[src as usize].ports[0];
        links.push((up.rate, up.delay));
        let dst_rack = self.host_rack[dst as usize];
        let mut at = up.peer_node;
        let dst_tor = self.racks[dst_rack as usize];
        let mut guard = 0;
        while at != dst_tor && guard < 64 {
            let Some(p) = first_hop(at - self.n_hosts, dst_rack) else {
                break;
            };
            let spec = self.nodes[at as usize].ports[p as usize];
            links.push((spec.rate, spec.delay));
            at = spec.peer_node;
            guard += 1;
        }
        let down = self.nodes[dst as usize].ports[0];
        links.push((down.rate, down.delay));
        links
    }
}

/// The /24 of rack `r` under `plan`.
pub fn rack_prefix(plan: AddrPlan, r: u32) -> u32 {
    match plan {
        AddrPlan::Flat => ipv4(10, (r >> 8) as u8, (r & 255) as u8, 0),
        AddrPlan::FatTree { half_k } => ipv4(10, (r / half_k) as u8, (r % half_k) as u8, 0),
    }
}

/// A two-tier leaf-spine: every leaf links to every spine.
pub fn leaf_spine(
    leaves: u32,
    spines: u32,
    hosts_per_leaf: u32,
    host_rate: BitRate,
    fabric_rate: BitRate,
    delay: SimTime,
) -> Result<Topology, String> {
    let mut nodes = Vec::new();
    for h in 0..leaves * hosts_per_leaf {
        nodes.push((format!("h{h}"), NodeKind::Host));
    }
    let leaf0 = nodes.len() as NodeId;
    for l in 0..leaves {
        nodes.push((format!("leaf{l}"), NodeKind::Switch { tier: 0 }));
    }
    let spine0 = nodes.len() as NodeId;
    for s in 0..spines {
        nodes.push((format!("spine{s}"), NodeKind::Switch { tier: 1 }));
    }
    let mut links = Vec::new();
    for l in 0..leaves {
        for j in 0..hosts_per_leaf {
            links.push(LinkSpec {
                a: l * hosts_per_leaf + j,
                b: leaf0 + l,
                rate: host_rate,
                delay,
            });
        }
    }
    for l in 0..leaves {
        for s in 0..spines {
            links.push(LinkSpec {
                a: leaf0 + l,
                b: spine0 + s,
                rate: fabric_rate,
                delay,
            });
        }
    }
    Topology::from_links("leaf_spine", nodes, &links, AddrPlan::Flat)
}

/// A k-ary fat tree (Al-Fares et al. 2008): k pods of k/2 edge and k/2
/// aggregation switches, (k/2)^2 cores, k^3/4 hosts. `k` must be even.
pub fn fat_tree(
    k: u32,
    host_rate: BitRate,
    fabric_rate: BitRate,
    delay: SimTime,
) -> Result<Topology, String> {
    if k < 2 || !k.is_multiple_of(2) || k > 64 {
        return Err(format!("topology.k: must be even and in 2..=64, got {k}"));
    }
    let h = k / 2;
    let mut nodes = Vec::new();
    for p in 0..k {
        for e in 0..h {
            for j in 0..h {
                nodes.push((format!("h{}", (p * h + e) * h + j), NodeKind::Host));
            }
        }
    }
    let edge0 = nodes.len() as NodeId;
    for p in 0..k {
        for e in 0..h {
            nodes.push((format!("edge{p}_{e}"), NodeKind::Switch { tier: 0 }));
        }
    }
    let agg0 = nodes.len() as NodeId;
    for p in 0..k {
        for a in 0..h {
            nodes.push((format!("agg{p}_{a}"), NodeKind::Switch { tier: 1 }));
        }
    }
    let core0 = nodes.len() as NodeId;
    for c in 0..h * h {
        nodes.push((format!("core{c}"), NodeKind::Switch { tier: 2 }));
    }
    let mut links = Vec::new();
    for p in 0..k {
        for e in 0..h {
            for j in 0..h {
                links.push(LinkSpec {
                    a: (p * h + e) * h + j,
                    b: edge0 + p * h + e,
                    rate: host_rate,
                    delay,
                });
            }
        }
    }
    for p in 0..k {
        for e in 0..h {
            for a in 0..h {
                links.push(LinkSpec {
                    a: edge0 + p * h + e,
                    b: agg0 + p * h + a,
                    rate: fabric_rate,
                    delay,
                });
            }
        }
    }
    // Aggregation switch a of every pod links to cores a*h .. a*h + h - 1.
    for p in 0..k {
        for a in 0..h {
            for i in 0..h {
                links.push(LinkSpec {
                    a: agg0 + p * h + a,
                    b: core0 + a * h + i,
                    rate: fabric_rate,
                    delay,
                });
            }
        }
    }
    Topology::from_links("fat_tree", nodes, &links, AddrPlan::FatTree { half_k: h })
}

/// The HULA paper's evaluation topology (HULA section 6, Fig. 4): two spines
/// S1, S2; two pods, each of two aggregation switches (A1, A2 | A3, A4) and
/// two ToRs (T1, T2 | T3, T4); every aggregation switch links to both
/// spines and to both ToRs of its pod; 8 servers per ToR.
pub fn hula3tier(
    host_rate: BitRate,
    fabric_rate: BitRate,
    delay: SimTime,
    hosts_per_tor: u32,
) -> Result<Topology, String> {
    let mut nodes = Vec::new();
    for h in 0..4 * hosts_per_tor {
        nodes.push((format!("h{h}"), NodeKind::Host));
    }
    let t0 = nodes.len() as NodeId;
    for t in 1..=4 {
        nodes.push((format!("T{t}"), NodeKind::Switch { tier: 0 }));
    }
    let a0 = nodes.len() as NodeId;
    for a in 1..=4 {
        nodes.push((format!("A{a}"), NodeKind::Switch { tier: 1 }));
    }
    let s0 = nodes.len() as NodeId;
    for s in 1..=2 {
        nodes.push((format!("S{s}"), NodeKind::Switch { tier: 2 }));
    }
    let mut links = Vec::new();
    for t in 0..4 {
        for j in 0..hosts_per_tor {
            links.push(LinkSpec {
                a: t * hosts_per_tor + j,
                b: t0 + t,
                rate: host_rate,
                delay,
            });
        }
    }
    for pod in 0..2 {
        for t in 0..2 {
            for a in 0..2 {
                links.push(LinkSpec {
                    a: t0 + pod * 2 + t,
                    b: a0 + pod * 2 + a,
                    rate: fabric_rate,
                    delay,
                });
            }
        }
    }
    for a in 0..4 {
        for s in 0..2 {
            links.push(LinkSpec {
                a: a0 + a,
                b: s0 + s,
                rate: fabric_rate,
                delay,
            });
        }
    }
    Topology::from_links("hula3tier", nodes, &links, AddrPlan::Flat)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(x: f64) -> BitRate {
        BitRate::from_gbps(x)
    }

    #[test]
    fn leaf_spine_shape_and_routes() {
        let t = leaf_spine(4, 3, 2, g(10.0), g(40.0), SimTime::from_us(1)).unwrap();
        assert_eq!(t.n_hosts, 8);
        assert_eq!(t.n_switches(), 7);
        assert_eq!(t.racks.len(), 4);
        let routes = t.compute_routes();
        // leaf0 toward rack 1: all three spines.
        let leaf0 = (t.node_by_name("leaf0").unwrap() - t.n_hosts) as usize;
        assert_eq!(routes[leaf0][1].len(), 3);
        assert!(routes[leaf0][0].is_empty());
        // spine toward rack 2: the one port to leaf2.
        let sp = (t.node_by_name("spine1").unwrap() - t.n_hosts) as usize;
        assert_eq!(routes[sp][2].len(), 1);
        assert_eq!(t.uplinks(t.node_by_name("leaf0").unwrap()).len(), 3);
    }

    #[test]
    fn fat_tree_k4_counts_and_addresses() {
        let t = fat_tree(4, g(10.0), g(10.0), SimTime::from_us(1)).unwrap();
        assert_eq!(t.n_hosts, 16);
        assert_eq!(t.n_switches(), 20);
        // Host 5 = pod 1, edge 0, host 1 -> 10.1.0.3.
        assert_eq!(ipv4_string(t.host_addr[5]), "10.1.0.3");
        for h in 0..t.n_hosts {
            assert_eq!(t.host_of_addr(t.host_addr[h as usize]), Some(h));
        }
        let routes = t.compute_routes();
        let paths = t.routes();
        let e = (t.node_by_name("edge0_0").unwrap() - t.n_hosts) as usize;
        // Edge toward another pod: both aggregation switches.
        assert_eq!(routes[e][3].len(), 2);
        let c = (t.node_by_name("core0").unwrap() - t.n_hosts) as usize;
        assert_eq!(routes[c][3].len(), 1);
        // A path across pods has 6 links: host, edge-agg, agg-core, core-agg, agg-edge, host.
        assert_eq!(t.path_links(&paths, 0, 15).len(), 6);
        assert_eq!(t.path_links(&paths, 0, 1).len(), 2);
    }

    #[test]
    fn fat_tree_rejects_odd_k() {
        let e = fat_tree(5, g(10.0), g(10.0), SimTime::from_us(1)).unwrap_err();
        assert!(e.contains("topology.k") && e.contains("even"), "{e}");
    }

    #[test]
    fn hula3tier_matches_the_paper() {
        let t = hula3tier(g(10.0), g(40.0), SimTime::from_us(1), 8).unwrap();
        assert_eq!(t.n_hosts, 32);
        assert_eq!(t.n_switches(), 10);
        let a4 = t.node_by_name("A4").unwrap();
        assert_eq!(t.nodes[a4 as usize].ports.len(), 4);
        let routes = t.compute_routes();
        let t1 = (t.node_by_name("T1").unwrap() - t.n_hosts) as usize;
        // T1 to T3 (other pod): both aggregation switches of its pod.
        assert_eq!(routes[t1][2].len(), 2);
    }

    #[test]
    fn disconnected_is_an_error() {
        let nodes = vec![
            ("a".to_string(), NodeKind::Host),
            ("b".to_string(), NodeKind::Host),
            ("s1".to_string(), NodeKind::Switch { tier: 0 }),
            ("s2".to_string(), NodeKind::Switch { tier: 0 }),
        ];
        let links = [
            LinkSpec {
                a: 0,
                b: 2,
                rate: g(1.0),
                delay: SimTime::ZERO,
            },
            LinkSpec {
                a: 1,
                b: 3,
                rate: g(1.0),
                delay: SimTime::ZERO,
            },
        ];
        let e = Topology::from_links("custom", nodes, &links, AddrPlan::Flat).unwrap_err();
        assert!(e.contains("disconnected"), "{e}");
    }
}
