//! DBB's planner (section III), run offline by the control plane for one
//! source-sink switch pair: exploitable bandwidth by maximum flow (III.A),
//! stages and simple integer ratios (III.B), the network-wide packet
//! dispatching cycle (PDC, III.C, eqs. 1-2), quotas (III.D, eq. 3) and the
//! stage-by-stage dispatch of algorithm 1, in the reading that reproduces
//! Tables III and IV (docs/schemes/dbb.md shows it beside the printed one).
//!
//! Integers throughout: capacities and b_ij in bit/s, ratios compared by
//! cross-multiplication.

// NOTE: the planner runs in the control plane, not the pipeline; its
// divisions are exact (b / gcd, lcm, rho N / rho^s).
#![allow(clippy::integer_division)]

use petgraph::algo::dinics;
use petgraph::graph::{DiGraph, NodeIndex};
use pisanet_net::packet::{NodeId, PortNo};
use pisanet_net::topology::{NodeKind, Topology};

/// How the dispatch picks the next hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// The reading that reproduces Tables III and IV: among the current
    /// switch's links whose N_ij is not used up in this PDC, the next switch
    /// with the highest R/Q; ties to the lower switch index (then port).
    Corrected,
    /// Algorithm 1 as printed (line 10 over all the current switch's links,
    /// N_ij ignored; line 12 read as decrementing the chosen switch's R).
    /// For comparison only: it gives 1246, 1356, 1246, 1356 on Fig. 2a.
    Printed,
}

/// One link (i, j) with exploitable bandwidth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanLink {
    pub from: NodeId,
    pub to: NodeId,
    /// The egress port of `from` on this link.
    pub port: PortNo,
    /// Exploitable bandwidth b_ij (bit/s; section III.A).
    pub b_bps: u64,
    /// Stage s of the link (1-based: stage 1 holds the source's links).
    pub stage: usize,
    /// Simple integer ratio rho_ij (section III.B).
    pub rho: u64,
    /// Packets per PDC, N_ij = rho_ij N / rho^s (eq. 2).
    pub n: u64,
}

/// The plan of one source-sink switch pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub src: NodeId,
    pub sink: NodeId,
    /// The maximum flow z (bit/s).
    pub max_flow_bps: u64,
    /// Links carrying flow, by stage, then switch index, then port.
    pub links: Vec<PlanLink>,
    /// Switches of stage 1..=l (index 0 = stage 1 = the source).
    pub stages: Vec<Vec<NodeId>>,
    /// rho^s for s = 1..l-1.
    pub stage_sums: Vec<u64>,
    /// The PDC length N (eq. 1).
    pub n: u64,
    /// Q_s(k) for every switch of stages 2..=l, in stage order (eq. 3).
    pub quotas: Vec<(NodeId, u64)>,
    /// The N paths of a PDC, in order, each a list of switches from the
    /// source to the sink (Tables III and IV).
    pub paths: Vec<Vec<NodeId>>,
    /// The same paths as indices into `links` (parallel links differ).
    pub path_links: Vec<Vec<usize>>,
}

impl Plan {
    /// The egress ports switch `k` uses, in order, for the packets of this
    /// pair it forwards in one PDC: its dispatch table, indexed by its
    /// local circular counter (section III.E). Empty for the sink and for
    /// switches off the plan. Its length is Q_s(k) (N at the source).
    pub fn dispatch_of(&self, k: NodeId) -> Vec<PortNo> {
        let mut out = Vec::new();
        for path in &self.path_links {
            out.extend(
                path.iter()
                    .filter(|&&i| self.links[i].from == k)
                    .map(|&i| self.links[i].port),
            );
        }
        out
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn name(topo: &Topology, n: NodeId) -> &str {
    &topo.nodes[n as usize].name
}

/// Plans the pair (`src`, `sink`) (switch node ids). `max_pdc` caps N.
pub fn plan(
    topo: &Topology,
    src: NodeId,
    sink: NodeId,
    max_pdc: u64,
    dispatch: Dispatch,
) -> Result<Plan, String> {
    let is_switch = |n: NodeId| matches!(topo.nodes[n as usize].kind, NodeKind::Switch { .. });
    if !is_switch(src) || !is_switch(sink) {
        return Err(format!(
            "source {} and sink {} must be switches",
            name(topo, src),
            name(topo, sink)
        ));
    }
    if src == sink {
        return Err(format!(
            "source and sink are the same switch {}",
            name(topo, src)
        ));
    }
    // Section III.A: the maximum flow over switch-to-switch links, each
    // link a pair of directed edges with its line rate as capacity.
    let mut g: DiGraph<(), u64> = DiGraph::new();
    for _ in &topo.nodes {
        g.add_node(());
    }
    // Edge index -> (from, port).
    let mut edge_of: Vec<(NodeId, PortNo)> = Vec::new();
    for (u, node) in topo.nodes.iter().enumerate() {
        if !is_switch(u as NodeId) {
            continue;
        }
        for (p, spec) in node.ports.iter().enumerate() {
            if is_switch(spec.peer_node) {
                g.add_edge(
                    NodeIndex::new(u),
                    NodeIndex::new(spec.peer_node as usize),
                    spec.rate.0,
                );
                edge_of.push((u as NodeId, p as PortNo));
            }
        }
    }
    let (z, flows) = dinics(
        &g,
        NodeIndex::new(src as usize),
        NodeIndex::new(sink as usize),
    );
    if z == 0 {
        return Err(format!(
            "no path from {} to {}",
            name(topo, src),
            name(topo, sink)
        ));
    }
    // Section III.B: stages by hop distance from the source over links that
    // carry flow; a layered flow has every such link from stage s to s+1.
    let mut used: Vec<(NodeId, PortNo, NodeId, u64)> = Vec::new();
    for (e, &f) in flows.iter().enumerate() {
        if f > 0 {
            let (u, p) = edge_of[e];
            let v = topo.nodes[u as usize].ports[p as usize].peer_node;
            used.push((u, p, v, f));
        }
    }
    let mut stage = vec![0usize; topo.nodes.len()];
    stage[src as usize] = 1;
    let mut frontier = vec![src];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for &u in &frontier {
            for &(a, _, v, _) in &used {
                if a == u && stage[v as usize] == 0 {
                    stage[v as usize] = stage[u as usize] + 1;
                    next.push(v);
                }
            }
        }
        frontier = next;
    }
    let l = stage[sink as usize];
    for &(u, _, v, _) in &used {
        if stage[v as usize] != stage[u as usize] + 1 || (v != sink && stage[v as usize] >= l) {
            return Err(format!(
                "the maximum flow from {} to {} is not layered: link {}->{} carries flow from stage {} to stage {}; DBB (section III.B) supports only layered (staged) maximum flows",
                name(topo, src),
                name(topo, sink),
                name(topo, u),
                name(topo, v),
                stage[u as usize],
                stage[v as usize]
            ));
        }
    }
    let mut stages: Vec<Vec<NodeId>> = vec![Vec::new(); l];
    for (n, &s) in stage.iter().enumerate() {
        if s > 0 {
            stages[s - 1].push(n as NodeId);
        }
    }
    if stages[l - 1] != [sink] {
        return Err(format!(
            "the maximum flow from {} to {} is not layered: stage {l} holds {} besides the sink; DBB (section III.B) supports only layered (staged) maximum flows",
            name(topo, src),
            name(topo, sink),
            stages[l - 1]
                .iter()
                .filter(|&&n| n != sink)
                .map(|&n| name(topo, n))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    used.sort_by_key(|&(u, p, _, _)| (stage[u as usize], u, p));
    // Section III.B: rho_ij = b_ij / gcd of the stage's b (the minimum
    // constant that makes the ratios integers); rho^s their sum.
    let mut links: Vec<PlanLink> = used
        .iter()
        .map(|&(u, p, v, f)| PlanLink {
            from: u,
            to: v,
            port: p,
            b_bps: f,
            stage: stage[u as usize],
            rho: 0,
            n: 0,
        })
        .collect();
    let mut stage_sums = Vec::with_capacity(l - 1);
    for s in 1..l {
        let g = links
            .iter()
            .filter(|k| k.stage == s)
            .fold(0, |g, k| gcd(g, k.b_bps));
        let mut sum = 0;
        for k in links.iter_mut().filter(|k| k.stage == s) {
            k.rho = k.b_bps / g;
            sum += k.rho;
        }
        stage_sums.push(sum);
    }
    // Eq. 1: N = lcm(rho^1, ..., rho^{l-1}), capped.
    let too_big = || {
        format!(
            "PDC length N = lcm of the stage sums {} is more than scheme.dbb.max_pdc = {max_pdc} (pair {} -> {}); raise max_pdc or round the link rates",
            stage_sums
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            name(topo, src),
            name(topo, sink)
        )
    };
    let mut n: u64 = 1;
    for &s in &stage_sums {
        n = (n / gcd(n, s)).checked_mul(s).ok_or_else(too_big)?;
        if n > max_pdc {
            return Err(too_big());
        }
    }
    // Eq. 2: N_ij = rho_ij N / rho^s.
    for k in links.iter_mut() {
        k.n = k.rho * n / stage_sums[k.stage - 1];
    }
    // Eq. 3: Q_s(k) = sum of N_ik over the links into k.
    let mut quota = vec![0u64; topo.nodes.len()];
    for k in &links {
        quota[k.to as usize] += k.n;
    }
    let quotas = stages[1..]
        .iter()
        .flatten()
        .map(|&k| (k, quota[k as usize]))
        .collect();
    let path_links = dispatch_paths(&links, &quota, src, sink, n, dispatch);
    let paths = path_links
        .iter()
        .map(|p| {
            std::iter::once(src)
                .chain(p.iter().map(|&i| links[i].to))
                .collect()
        })
        .collect();
    Ok(Plan {
        src,
        sink,
        max_flow_bps: z,
        links,
        stages,
        stage_sums,
        n,
        quotas,
        paths,
        path_links,
    })
}

/// Algorithm 1 (lines 7-14): the N paths of a PDC, built hop by hop, each
/// as the indices of its links.
fn dispatch_paths(
    links: &[PlanLink],
    quota: &[u64],
    src: NodeId,
    sink: NodeId,
    n: u64,
    dispatch: Dispatch,
) -> Vec<Vec<usize>> {
    // Line 7: R_s(j) <- Q_s(j) (j, not "for all k"). Signed: the printed
    // variant may overdraw.
    let mut remaining: Vec<i64> = quota.iter().map(|&q| q as i64).collect();
    // The per-link counts the printed line 10 ignores.
    let mut link_left: Vec<u64> = links.iter().map(|k| k.n).collect();
    let mut paths = Vec::with_capacity(n as usize);
    for _seq in 0..n {
        let mut cur = src;
        let mut path = Vec::new();
        while cur != sink {
            // Line 10: the next switch with the highest R/Q, ties to the
            // lower switch index (links are sorted by switch, then port, so
            // of parallel links the lower port).
            let mut best: Option<usize> = None;
            for (i, k) in links.iter().enumerate() {
                if k.from != cur || (dispatch == Dispatch::Corrected && link_left[i] == 0) {
                    continue;
                }
                best = match best {
                    None => Some(i),
                    Some(b) => {
                        let (j, jb) = (k.to as usize, links[b].to as usize);
                        // R_j / Q_j > R_jb / Q_jb, by cross-multiplication.
                        let lhs = remaining[j] * quota[jb] as i64;
                        let rhs = remaining[jb] * quota[j] as i64;
                        if lhs > rhs || (lhs == rhs && k.to < links[b].to) {
                            Some(i)
                        } else {
                            Some(b)
                        }
                    }
                };
            }
            let i = best.expect("a layered flow leaves every switch but the sink");
            // Line 12: the chosen switch's R (not R_s(k+1)).
            remaining[links[i].to as usize] -= 1;
            link_left[i] = link_left[i].saturating_sub(1);
            cur = links[i].to;
            path.push(i);
        }
        paths.push(path);
    }
    paths
}
