//! Traffic patterns: who sends to whom.
//!
//! Owns: the choice of destination for a source (uniform, stride,
//! permutation) and the choice of incast senders. Leaves timing and sizes to
//! the generator.
//!
//! Guarantees: a destination is never its own source; uniform and incast
//! never pick a host in the source's (receiver's) rack unless there is only
//! one rack; permutation is a bijection with no same-rack pair whenever one
//! exists (no rack holds more than half the hosts).

use crate::flow::FlowSpec;
use crate::layout::RackIndex;
use pisanet_engine::SimRng;
use pisanet_net::packet::HostId;
use rand::Rng;

/// Who sends to whom.
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    /// Random source; random destination on a different rack (any other host
    /// if there is only one rack).
    Uniform,
    /// P4TE's stride (section 7): host i of rack j sends to host (i + 1) mod n
    /// of rack (j + 1) mod m, n = hosts in the target rack, m = racks. The
    /// source of each arrival is uniform over hosts.
    Stride,
    /// A random permutation fixed at construction, with no host mapped into
    /// its own rack when that is possible. The source is uniform over hosts.
    Permutation,
    /// `senders` distinct hosts outside the receiver's rack each send one flow
    /// to one random receiver, all starting at `WorkloadSpec::start`.
    Incast {
        senders: u32,
        /// Flow size; 0 = sample each from the CDF.
        bytes: u64,
    },
    /// An explicit flow list (see [`crate::parse_flow_file`]).
    File(Vec<FlowSpec>),
    /// HULA section 6: clients (the hosts of the first half of the racks)
    /// each use one server (a host of the second half) and `connections`
    /// persistent connections to it; each connection carries a Poisson
    /// sequence of flows from the client to the server, reusing its 5-tuple.
    /// `assignment` says how clients choose their server.
    ClientServer {
        connections: u32,
        assignment: ServerAssignment,
    },
}

/// How `Pattern::ClientServer` gives each client its server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ServerAssignment {
    /// A random permutation (round robin over a shuffled server list): each
    /// server has as few clients as possible (one each when there are as
    /// many servers as clients).
    #[default]
    Permutation,
    /// Each client draws its server independently and uniformly (HULA
    /// section 6: "each client chooses a server at random"), so some servers
    /// may have several clients and others none.
    Random,
}

impl ServerAssignment {
    /// The name as written in configs.
    pub fn name(self) -> &'static str {
        match self {
            ServerAssignment::Permutation => "permutation",
            ServerAssignment::Random => "random",
        }
    }
}

impl Pattern {
    /// The pattern's name as written in configs.
    pub fn name(&self) -> &'static str {
        match self {
            Pattern::Uniform => "uniform",
            Pattern::Stride => "stride",
            Pattern::Permutation => "permutation",
            Pattern::Incast { .. } => "incast",
            Pattern::File(_) => "file",
            Pattern::ClientServer { .. } => "client_server",
        }
    }
}

/// How a Poisson-driven pattern picks the destination of a source.
#[derive(Clone, Debug)]
pub(crate) enum Dest {
    Uniform,
    Stride,
    /// `perm[src]` is src's destination.
    Permutation(Vec<HostId>),
}

impl Dest {
    /// The destination of `src`. Uniform draws one integer from `rng`; the
    /// others draw nothing.
    pub(crate) fn pick(&self, idx: &RackIndex, src: HostId, rng: &mut SimRng) -> HostId {
        match self {
            Dest::Uniform => uniform_dst(idx, src, rng),
            Dest::Stride => stride_dst(idx, src),
            Dest::Permutation(perm) => perm[src as usize],
        }
    }

    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Dest::Permutation(perm) => 4 * perm.capacity(),
            _ => 0,
        }
    }
}

/// A uniform host outside `src`'s rack, or any host but `src` with one rack.
fn uniform_dst(idx: &RackIndex, src: HostId, rng: &mut SimRng) -> HostId {
    if idx.n_racks() == 1 {
        // Any other host: draw among n - 1 and skip src.
        let k = rng.gen_range(0..idx.n_hosts() - 1);
        let own = idx.hosts(0);
        let p = idx.pos_of(src) as usize;
        return if (k as usize) < p {
            own[k as usize]
        } else {
            own[k as usize + 1]
        };
    }
    let k = rng.gen_range(0..idx.outside_count(src));
    idx.kth_outside(idx.rack_of(src), k)
}

/// P4TE section 7's stride. NOTE: the issue text reads "host i of leaf j
/// sends to host (i+1) mod n of leaf (j+1) mod n"; the rack index must wrap
/// over the number of racks m, not hosts per rack n, so we implement
/// "(i + 1) mod n of rack (j + 1) mod m", n being the target rack's size.
/// With one rack it is host (i + 1) mod n of the same rack, never i itself
/// since a valid layout has at least two hosts.
fn stride_dst(idx: &RackIndex, src: HostId) -> HostId {
    let j = idx.rack_of(src);
    let i = idx.pos_of(src);
    let target = idx.hosts((j + 1) % idx.n_racks());
    target[((i + 1) as usize) % target.len()]
}

/// A random permutation with no same-rack pair where one exists.
///
/// Start from a uniform random permutation (Fisher-Yates), then repair each
/// host i mapped into its own rack R by swapping targets with a host j that is
/// outside R and maps outside R (scanning from a random start). Such j exists
/// whenever |R| <= n / 2: at most |R| - 1 hosts outside R map into R. The swap
/// fixes i and keeps j valid, so at most n swaps of O(n) each.
/// If some rack holds more than half the hosts, the pairs that cannot be
/// repaired stay same-rack, but no host maps to itself.
pub(crate) fn permutation(idx: &RackIndex, rng: &mut SimRng) -> Vec<HostId> {
    let n = idx.n_hosts() as usize;
    let mut perm: Vec<HostId> = (0..n as HostId).collect();
    for i in (1..n).rev() {
        let j = rng.gen_range(0..=i);
        perm.swap(i, j);
    }
    let rack = |h: HostId| idx.rack_of(h);
    if idx.n_racks() > 1 {
        for i in 0..n {
            let r = rack(i as HostId);
            if rack(perm[i]) != r {
                continue;
            }
            let start = rng.gen_range(0..n);
            let found = (0..n)
                .map(|d| (start + d) % n)
                .find(|&j| rack(j as HostId) != r && rack(perm[j]) != r);
            if let Some(j) = found {
                perm.swap(i, j);
            }
        }
    }
    // Fixed points remain only when a rack is over half the hosts (or with
    // one rack). Swapping targets with any other j fixes i, and j -> i != j.
    for i in 0..n {
        if perm[i] as usize != i {
            continue;
        }
        let start = rng.gen_range(0..n);
        let others = || (0..n).map(|d| (start + d) % n).filter(|&j| j != i);
        // Prefer a j whose new target (i) is outside its rack.
        let j = others()
            .find(|&j| rack(j as HostId) != rack(i as HostId))
            .or_else(|| others().next());
        if let Some(j) = j {
            perm.swap(i, j);
        }
    }
    perm
}

/// The clients (hosts of racks 0 .. m/2) and the server of each (hosts of
/// racks m/2 .. m): shuffled and assigned round robin (`Permutation`), or one
/// independent uniform draw per client (`Random`); m >= 2 racks.
pub(crate) fn client_server(
    idx: &RackIndex,
    assignment: ServerAssignment,
    rng: &mut SimRng,
) -> Result<(Vec<HostId>, Vec<HostId>), String> {
    let m = idx.n_racks();
    if m < 2 {
        return Err("workload.pattern.client_server: needs at least 2 racks (clients in the first half, servers in the second)".into());
    }
    let half = m / 2;
    let clients: Vec<HostId> = (0..half)
        .flat_map(|r| idx.hosts(r).iter().copied())
        .collect();
    let mut servers: Vec<HostId> = (half..m)
        .flat_map(|r| idx.hosts(r).iter().copied())
        .collect();
    if assignment == ServerAssignment::Random {
        let server_of = (0..clients.len())
            .map(|_| servers[rng.gen_range(0..servers.len())])
            .collect();
        return Ok((clients, server_of));
    }
    for i in (1..servers.len()).rev() {
        let j = rng.gen_range(0..=i);
        servers.swap(i, j);
    }
    let server_of = (0..clients.len())
        .map(|i| servers[i % servers.len()])
        .collect();
    Ok((clients, server_of))
}

/// The incast receiver and `senders` distinct senders outside its rack (any
/// other host if there is only one rack). The receiver is uniform over the
/// hosts that have enough such senders; the senders are a uniform random
/// subset in random order (partial Fisher-Yates).
pub(crate) fn incast(
    idx: &RackIndex,
    senders: u32,
    rng: &mut SimRng,
) -> Result<(HostId, Vec<HostId>), String> {
    let n = idx.n_hosts();
    let available = |h: HostId| {
        if idx.n_racks() == 1 {
            n - 1
        } else {
            idx.outside_count(h)
        }
    };
    let most = (0..n).map(available).max().unwrap_or(0);
    if senders < 1 || senders > most {
        return Err(format!(
            "workload.pattern.incast.senders: must be in 1..={most} (hosts outside the receiver's rack), got {senders}"
        ));
    }
    let eligible: Vec<HostId> = (0..n).filter(|&h| available(h) >= senders).collect();
    let receiver = eligible[rng.gen_range(0..eligible.len())];
    let mut pool: Vec<HostId> = if idx.n_racks() == 1 {
        (0..n).filter(|&h| h != receiver).collect()
    } else {
        let r = idx.rack_of(receiver);
        (0..idx.outside_count(receiver))
            .map(|k| idx.kth_outside(r, k))
            .collect()
    };
    for k in 0..senders as usize {
        let j = rng.gen_range(k..pool.len());
        pool.swap(k, j);
    }
    pool.truncate(senders as usize);
    Ok((receiver, pool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::HostLayout;
    use rand::SeedableRng;

    fn index(racks: u32, per: u32) -> RackIndex {
        RackIndex::new(&HostLayout::uniform(racks, per)).unwrap()
    }

    #[test]
    fn stride_table_4x4() {
        let idx = index(4, 4);
        // Host i of rack j (id 4j + i) -> host (i + 1) mod 4 of rack (j + 1) mod 4.
        let table: Vec<HostId> = (0..16).map(|h| stride_dst(&idx, h)).collect();
        #[rustfmt::skip]
        let expected = vec![
            5, 6, 7, 4,      // rack 0 -> rack 1
            9, 10, 11, 8,    // rack 1 -> rack 2
            13, 14, 15, 12,  // rack 2 -> rack 3
            1, 2, 3, 0,      // rack 3 -> rack 0
        ];
        assert_eq!(table, expected);
    }

    #[test]
    fn stride_uneven_racks_wraps_on_target_size() {
        let l = HostLayout {
            racks: vec![vec![0, 1, 2], vec![3]],
        };
        let idx = RackIndex::new(&l).unwrap();
        let table: Vec<HostId> = (0..4).map(|h| stride_dst(&idx, h)).collect();
        // Rack 0 -> rack 1 (one host); host 0 of rack 1 -> host 1 mod 3 of rack 0.
        assert_eq!(table, vec![3, 3, 3, 1]);
        let one_rack = RackIndex::new(&HostLayout::uniform(1, 3)).unwrap();
        let table: Vec<HostId> = (0..3).map(|h| stride_dst(&one_rack, h)).collect();
        assert_eq!(table, vec![1, 2, 0]);
    }

    #[test]
    fn uniform_one_rack_never_picks_self_and_covers_all_others() {
        let idx = index(1, 4);
        let mut rng = SimRng::seed_from_u64(1);
        let mut seen = [[false; 4]; 4];
        for _ in 0..2000 {
            let src = rng.gen_range(0..4);
            let dst = uniform_dst(&idx, src, &mut rng);
            assert_ne!(src, dst);
            seen[src as usize][dst as usize] = true;
        }
        for (s, row) in seen.iter().enumerate() {
            for (d, &hit) in row.iter().enumerate() {
                assert_eq!(hit, s != d, "pair {s}->{d}");
            }
        }
    }

    fn assert_bijection(perm: &[HostId]) {
        let mut hit = vec![false; perm.len()];
        for &d in perm {
            assert!(!hit[d as usize], "{d} is hit twice");
            hit[d as usize] = true;
        }
    }

    #[test]
    fn permutation_is_cross_rack_bijection() {
        for seed in 0..50 {
            for (racks, per) in [(4, 4), (2, 8), (8, 2), (3, 5), (16, 16)] {
                let idx = index(racks, per);
                let perm = permutation(&idx, &mut SimRng::seed_from_u64(seed));
                assert_bijection(&perm);
                for (s, &d) in perm.iter().enumerate() {
                    assert_ne!(
                        idx.rack_of(s as HostId),
                        idx.rack_of(d),
                        "seed {seed} {racks}x{per}: {s}->{d}"
                    );
                }
            }
        }
    }

    #[test]
    fn permutation_with_an_oversized_rack_still_has_no_fixed_point() {
        let l = HostLayout {
            racks: vec![vec![0, 1, 2, 3, 4], vec![5], vec![6]],
        };
        let idx = RackIndex::new(&l).unwrap();
        for seed in 0..50 {
            let perm = permutation(&idx, &mut SimRng::seed_from_u64(seed));
            assert_bijection(&perm);
            for (s, &d) in perm.iter().enumerate() {
                assert_ne!(s as HostId, d);
            }
            // Hosts 5 and 6 must both map into rack 0 (the best possible).
            assert!(perm[5] < 5 && perm[6] < 5, "seed {seed}: {perm:?}");
        }
        let single = index(1, 5);
        let perm = permutation(&single, &mut SimRng::seed_from_u64(3));
        assert_bijection(&perm);
        assert!(perm.iter().enumerate().all(|(s, &d)| s as HostId != d));
    }

    #[test]
    fn permutation_depends_on_the_seed() {
        let idx = index(4, 4);
        let a = permutation(&idx, &mut SimRng::seed_from_u64(1));
        let b = permutation(&idx, &mut SimRng::seed_from_u64(2));
        assert_ne!(a, b);
    }

    #[test]
    fn incast_picks_distinct_senders_outside_the_receiver_rack() {
        let idx = index(4, 4);
        for seed in 0..50 {
            let (rx, senders) = incast(&idx, 12, &mut SimRng::seed_from_u64(seed)).unwrap();
            assert_eq!(senders.len(), 12);
            let mut sorted = senders.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), 12);
            assert!(senders.iter().all(|&s| idx.rack_of(s) != idx.rack_of(rx)));
        }
        let err = incast(&idx, 13, &mut SimRng::seed_from_u64(0)).unwrap_err();
        assert_eq!(
            err,
            "workload.pattern.incast.senders: must be in 1..=12 (hosts outside the receiver's rack), got 13"
        );
        assert!(incast(&idx, 0, &mut SimRng::seed_from_u64(0)).is_err());
    }

    #[test]
    fn incast_receiver_is_chosen_where_enough_senders_exist() {
        // Receivers in rack 0 have 2 outside hosts, in rack 1 have 4.
        let l = HostLayout {
            racks: vec![vec![0, 1, 2, 3], vec![4, 5]],
        };
        let idx = RackIndex::new(&l).unwrap();
        for seed in 0..20 {
            let (rx, senders) = incast(&idx, 3, &mut SimRng::seed_from_u64(seed)).unwrap();
            assert!(rx == 4 || rx == 5);
            assert!(senders.iter().all(|&s| s < 4));
        }
    }
}
