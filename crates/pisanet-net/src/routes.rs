//! Shortest-path routes by class of racks, installed as prefix routes.
//!
//! Two racks whose ToRs have the same switch neighbours (every edge switch
//! of a fat-tree pod, every leaf of a leaf-spine) are reached by every other
//! switch through the same ports: for a switch `s` other than a ToR `t`,
//! `dist(s, t) = 1 + min over t's neighbours a of dist(s, a)`, which depends
//! on `t` only through its neighbour set. So one breadth-first search per
//! class (from the class's neighbour set) replaces one per rack, and a
//! switch needs one route per class instead of one per rack, except toward
//! the racks it links to directly (an aggregation switch toward its pod's
//! edges, a spine toward every leaf), which get one /24 each.
//!
//! Prefix routes (what [`Routes::prefix_routes`] gives a switch), longest
//! prefix first as a real fabric installs them (Al-Fares et al., SIGCOMM
//! 2008, section 3.3: "terminating" prefixes downward, a default upward):
//! - a ToR: a /32 per host of its rack and a /24 drop for the rest of its
//!   own rack;
//! - a /24 per rack whose ToR the switch links to;
//! - one route per class covering exactly that class's racks (a fat-tree
//!   pod's /19 for k = 64, all leaves of a leaf-spine), else one /24 per
//!   rack of the class (a custom topology whose classes interleave);
//! - the class routes that share the most common next-hop group become one
//!   default route, `10.0.0.0/8` (every host address is in 10/8).
//!
//! For every host address the longest matching prefix gives exactly the
//! ports of the per-rack shortest-path table (same ports, same order: the
//! ECMP hash picks the same member), which the test
//! `prefix_routes_forward_as_the_per_rack_table` checks on every topology
//! builder and an irregular one. Addresses of no host may now match the
//! default route where they matched nothing before; no packet carries one.

use std::collections::{HashMap, VecDeque};

use crate::packet::{NodeId, PortNo};
use crate::topology::{rack_prefix, Topology};

/// Unreached, in [`Routes`]' distance table.
const FAR: u16 = u16::MAX;

/// The default route's prefix: `10.0.0.0/8`, which holds every host.
pub const DEFAULT_PREFIX: (u32, u8) = (0x0a00_0000, 8);

/// One route of a switch: the ports on shortest paths toward every host
/// under `prefix/len` (several = an ECMP group, in port order; none = drop).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrefixRoute {
    pub prefix: u32,
    pub len: u8,
    pub ports: Vec<PortNo>,
    /// The rack, for a rack's /24 or a host's /32; None for a class or the
    /// default route.
    pub rack: Option<u32>,
}

/// Shortest-path next hops of every switch toward every rack, by class of
/// racks (see the module doc). Memory: classes x switches distances plus
/// the racks; no per-(switch, rack) or per-host state.
#[derive(Clone, Debug)]
pub struct Routes {
    n_hosts: u32,
    n_switches: u32,
    /// Class of each rack.
    rack_class: Vec<u32>,
    /// Position of each rack in its class's `class_racks`.
    rack_pos: Vec<u32>,
    /// Racks of each class, ascending.
    class_racks: Vec<Vec<u32>>,
    /// A prefix that covers a class's racks and no other rack, if any.
    class_prefix: Vec<Option<(u32, u8)>>,
    /// `dist[c * n_switches + s]`: hops from switch `s` to the nearest
    /// switch neighbour of class `c`'s ToRs (0 = `s` links to every ToR of
    /// the class), FAR if unreached.
    dist: Vec<u16>,
}

impl Routes {
    pub fn new(topo: &Topology) -> Routes {
        let nh = topo.n_hosts;
        let ns = topo.n_switches();
        let mut class_of: HashMap<Vec<NodeId>, u32> = HashMap::new();
        let mut class_nbrs: Vec<Vec<NodeId>> = Vec::new();
        let mut class_racks: Vec<Vec<u32>> = Vec::new();
        let mut rack_class = Vec::with_capacity(topo.racks.len());
        let mut rack_pos = Vec::with_capacity(topo.racks.len());
        for (r, &tor) in topo.racks.iter().enumerate() {
            let mut nbrs: Vec<NodeId> = topo.nodes[tor as usize]
                .ports
                .iter()
                .map(|p| p.peer_node)
                .filter(|&v| v >= nh)
                .collect();
            nbrs.sort_unstable();
            nbrs.dedup();
            let c = *class_of.entry(nbrs).or_insert_with_key(|k| {
                class_nbrs.push(k.clone());
                class_racks.push(Vec::new());
                class_racks.len() as u32 - 1
            });
            rack_class.push(c);
            rack_pos.push(class_racks[c as usize].len() as u32);
            class_racks[c as usize].push(r as u32);
        }
        // One multi-source BFS per class over the switches (hosts are not
        // transit nodes), from the ToRs' common neighbours.
        let mut dist = vec![FAR; class_nbrs.len() * ns as usize];
        let mut q: VecDeque<NodeId> = VecDeque::new();
        for (c, nbrs) in class_nbrs.iter().enumerate() {
            let d = &mut dist[c * ns as usize..(c + 1) * ns as usize];
            for &a in nbrs {
                d[(a - nh) as usize] = 0;
                q.push_back(a);
            }
            while let Some(u) = q.pop_front() {
                let du = d[(u - nh) as usize];
                for p in &topo.nodes[u as usize].ports {
                    let v = p.peer_node;
                    if v >= nh && d[(v - nh) as usize] == FAR {
                        d[(v - nh) as usize] = du.saturating_add(1).min(FAR - 1);
                        q.push_back(v);
                    }
                }
            }
        }
        // A class's prefix: the longest one common to its racks' /24s, kept
        // if no rack of another class falls under it.
        let mut sorted: Vec<u32> = (0..topo.racks.len() as u32)
            .map(|r| rack_prefix(topo.plan, r))
            .collect();
        sorted.sort_unstable();
        let class_prefix = class_racks
            .iter()
            .map(|racks| {
                let mut it = racks.iter().map(|&r| rack_prefix(topo.plan, r));
                let first = it.next()?;
                let (lo, hi) = it.fold((first, first), |(lo, hi), p| (lo.min(p), hi.max(p)));
                let len = (lo ^ hi).leading_zeros().min(24) as u8;
                let mask = u32::MAX.checked_shl(32 - len as u32).unwrap_or(0);
                let (base, top) = (lo & mask, (lo & mask) | !mask);
                let inside =
                    sorted.partition_point(|&p| p <= top) - sorted.partition_point(|&p| p < base);
                (inside == racks.len()).then_some((base, len))
            })
            .collect();
        Routes {
            n_hosts: nh,
            n_switches: ns,
            rack_class,
            rack_pos,
            class_racks,
            class_prefix,
            dist,
        }
    }

    pub fn n_classes(&self) -> u32 {
        self.class_racks.len() as u32
    }

    pub fn rack_class(&self, rack: u32) -> u32 {
        self.rack_class[rack as usize]
    }

    /// Position of `rack` among its class's racks.
    pub fn rack_pos(&self, rack: u32) -> u32 {
        self.rack_pos[rack as usize]
    }

    pub fn class_racks(&self, class: u32) -> &[u32] {
        &self.class_racks[class as usize]
    }

    /// Does switch `sw` (index, node - hosts) link to every ToR of `class`?
    pub fn adjacent(&self, sw: u32, class: u32) -> bool {
        self.dist[(class * self.n_switches + sw) as usize] == 0
    }

    /// Hops from switch node `x` to rack `rack`'s ToR `tor` (of `class`).
    fn hops(&self, class: u32, tor: NodeId, x: NodeId) -> u32 {
        if x == tor {
            return 0;
        }
        match self.dist[(class * self.n_switches + x - self.n_hosts) as usize] {
            FAR => u32::MAX,
            d => d as u32 + 1,
        }
    }

    /// The ports of switch `sw` (index) on shortest paths toward rack
    /// `rack`, in port order (empty at the rack's own ToR or if unreached).
    pub fn next_hops(&self, topo: &Topology, sw: u32, rack: u32) -> Vec<PortNo> {
        let node = sw + self.n_hosts;
        let tor = topo.racks[rack as usize];
        let class = self.rack_class[rack as usize];
        let d = self.hops(class, tor, node);
        if d == 0 || d == u32::MAX {
            return Vec::new();
        }
        topo.nodes[node as usize]
            .ports
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                p.peer_node >= self.n_hosts && self.hops(class, tor, p.peer_node) == d - 1
            })
            .map(|(i, _)| i as PortNo)
            .collect()
    }

    /// The prefix routes of switch `sw` (index); see the module doc.
    pub fn prefix_routes(&self, topo: &Topology, sw: u32) -> Vec<PrefixRoute> {
        let node = sw + self.n_hosts;
        let own = topo.racks.binary_search(&node).ok().map(|r| r as u32);
        let mut out = Vec::new();
        if let Some(r) = own {
            for &h in &topo.rack_hosts[r as usize] {
                out.push(PrefixRoute {
                    prefix: topo.host_addr[h as usize],
                    len: 32,
                    ports: vec![topo.nodes[h as usize].ports[0].peer_port],
                    rack: Some(r),
                });
            }
            out.push(PrefixRoute {
                prefix: rack_prefix(topo.plan, r),
                len: 24,
                ports: Vec::new(),
                rack: Some(r),
            });
        }
        let per_rack = |out: &mut Vec<PrefixRoute>, r: u32, ports: Vec<PortNo>| {
            if !ports.is_empty() {
                out.push(PrefixRoute {
                    prefix: rack_prefix(topo.plan, r),
                    len: 24,
                    ports,
                    rack: Some(r),
                });
            }
        };
        let mut classes: Vec<(u32, u8, Vec<PortNo>)> = Vec::new();
        for c in 0..self.n_classes() {
            let racks = &self.class_racks[c as usize];
            if self.adjacent(sw, c) {
                for &r in racks {
                    per_rack(&mut out, r, self.next_hops(topo, sw, r));
                }
                continue;
            }
            // Every rack of the class but the own one has the same next hops.
            let Some(&rep) = racks.iter().find(|&&r| Some(r) != own) else {
                continue;
            };
            let ports = self.next_hops(topo, sw, rep);
            if ports.is_empty() {
                continue;
            }
            match self.class_prefix[c as usize] {
                Some((prefix, len)) => classes.push((prefix, len, ports)),
                None => {
                    for &r in racks.iter().filter(|&&r| Some(r) != own) {
                        per_rack(&mut out, r, ports.clone());
                    }
                }
            }
        }
        // The most common group (first of the most common, for determinism)
        // becomes the default route when two classes or more share it.
        let mut count: HashMap<&[PortNo], (usize, usize)> = HashMap::new();
        for (i, (_, _, ports)) in classes.iter().enumerate() {
            count.entry(ports.as_slice()).or_insert((0, i)).0 += 1;
        }
        let default = count
            .values()
            .filter(|&&(n, _)| n >= 2)
            .max_by_key(|&&(n, first)| (n, std::cmp::Reverse(first)))
            .map(|&(_, first)| classes[first].2.clone());
        for (prefix, len, ports) in classes {
            if default.as_ref() != Some(&ports) {
                out.push(PrefixRoute {
                    prefix,
                    len,
                    ports,
                    rack: None,
                });
            }
        }
        if let Some(ports) = default {
            out.push(PrefixRoute {
                prefix: DEFAULT_PREFIX.0,
                len: DEFAULT_PREFIX.1,
                ports,
                rack: None,
            });
        }
        out
    }

    /// The /24 of every rack, by rack index.
    pub fn rack_prefixes(topo: &Topology) -> Vec<u32> {
        (0..topo.racks.len() as u32)
            .map(|r| rack_prefix(topo.plan, r))
            .collect()
    }
}

/// The route `routes` picks for `addr` by longest prefix match (a linear
/// scan: for tests).
pub fn longest_match(routes: &[PrefixRoute], addr: u32) -> Option<&PrefixRoute> {
    routes
        .iter()
        .filter(|r| {
            let mask = u32::MAX.checked_shl(32 - r.len as u32).unwrap_or(0);
            addr & mask == r.prefix & mask
        })
        .max_by_key(|r| r.len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{fat_tree, hula3tier, leaf_spine, AddrPlan, LinkSpec, NodeKind};
    use pisanet_engine::{BitRate, SimTime};
    use std::collections::VecDeque;

    /// The per-rack BFS this module replaces (one search per rack), kept as
    /// the reference.
    fn per_rack_table(t: &Topology) -> Vec<Vec<Vec<PortNo>>> {
        let n = t.nodes.len();
        let nh = t.n_hosts as usize;
        let mut routes = vec![vec![Vec::new(); t.racks.len()]; n - nh];
        let mut dist = vec![u32::MAX; n];
        for (r, &tor) in t.racks.iter().enumerate() {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[tor as usize] = 0;
            let mut q = VecDeque::from([tor]);
            while let Some(u) = q.pop_front() {
                for p in &t.nodes[u as usize].ports {
                    let v = p.peer_node as usize;
                    if v >= nh && dist[v] == u32::MAX {
                        dist[v] = dist[u as usize] + 1;
                        q.push_back(v as NodeId);
                    }
                }
            }
            for s in nh..n {
                if dist[s] == 0 || dist[s] == u32::MAX {
                    continue;
                }
                routes[s - nh][r] = t.nodes[s]
                    .ports
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| {
                        let v = p.peer_node as usize;
                        v >= nh && dist[v] == dist[s] - 1
                    })
                    .map(|(i, _)| i as PortNo)
                    .collect();
            }
        }
        routes
    }

    /// An irregular fabric: ToRs with different uplink sets, a ToR-ToR link,
    /// a chain, racks of one class interleaved with another's.
    fn irregular() -> Topology {
        let g = BitRate::from_gbps(10.0);
        let d = SimTime::from_us(1);
        let mut nodes = Vec::new();
        for h in 0..12 {
            nodes.push((format!("h{h}"), NodeKind::Host));
        }
        for s in 0..9 {
            let tier = if s < 6 { 0 } else { 1 };
            nodes.push((format!("s{s}"), NodeKind::Switch { tier }));
        }
        let mut links = Vec::new();
        let l = |a: u32, b: u32| LinkSpec {
            a,
            b,
            rate: g,
            delay: d,
        };
        for h in 0..12u32 {
            links.push(l(h, 12 + h / 2));
        }
        // s0, s2, s4 -> {s6, s7}; s1, s3 -> {s7, s8}; s5 -> s4 only; s0-s1.
        for tor in [0, 2, 4] {
            links.push(l(12 + tor, 18));
            links.push(l(12 + tor, 19));
        }
        for tor in [1, 3] {
            links.push(l(12 + tor, 19));
            links.push(l(12 + tor, 20));
        }
        links.push(l(17, 16));
        links.push(l(12, 13));
        links.push(l(18, 20));
        Topology::from_links("custom", nodes, &links, AddrPlan::Flat).unwrap()
    }

    #[test]
    fn prefix_routes_forward_as_the_per_rack_table() {
        let g = BitRate::from_gbps(10.0);
        let d = SimTime::from_us(1);
        let topos = [
            leaf_spine(4, 3, 2, g, g, d).unwrap(),
            leaf_spine(300, 2, 1, g, g, d).unwrap(),
            fat_tree(4, g, g, d).unwrap(),
            fat_tree(8, g, g, d).unwrap(),
            hula3tier(g, g, d, 2).unwrap(),
            irregular(),
        ];
        for t in &topos {
            let table = per_rack_table(t);
            let routes = t.routes();
            assert_eq!(t.compute_routes(), table, "{}", t.kind);
            for sw in 0..t.n_switches() {
                let pr = routes.prefix_routes(t, sw);
                for h in 0..t.n_hosts {
                    let rack = t.host_rack[h as usize];
                    let want = if t.racks[rack as usize] == sw + t.n_hosts {
                        vec![t.nodes[h as usize].ports[0].peer_port]
                    } else {
                        table[sw as usize][rack as usize].clone()
                    };
                    let got = longest_match(&pr, t.host_addr[h as usize])
                        .map(|r| r.ports.clone())
                        .unwrap_or_default();
                    assert_eq!(got, want, "{} switch {sw} host {h}", t.kind);
                }
            }
        }
    }

    #[test]
    fn a_fat_tree_needs_routes_per_pod_not_per_host() {
        let g = BitRate::from_gbps(10.0);
        let t = fat_tree(8, g, g, SimTime::from_us(1)).unwrap();
        let routes = t.routes();
        assert_eq!(routes.n_classes(), 8);
        let n = |name: &str| routes.prefix_routes(&t, t.node_by_name(name).unwrap() - t.n_hosts);
        // Edge: 4 hosts, its /24 drop, one default up.
        assert_eq!(n("edge0_0").len(), 6);
        // Aggregation: one /24 per edge of its pod, one default up.
        assert_eq!(n("agg0_0").len(), 5);
        // Core: one route per pod.
        assert_eq!(n("core0").len(), 8);
        assert!(n("core0").iter().all(|r| r.len == 22 && r.ports.len() == 1));
    }
}
