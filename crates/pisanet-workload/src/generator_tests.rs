use super::*;
use crate::flow::parse_flow_file;
use crate::pattern::ServerAssignment;
use pisanet_net::packet::{TC_LARGE, TC_SHORT};
use rand::SeedableRng;

fn websearch() -> Cdf {
    Cdf::builtin("websearch").unwrap()
}

fn spec(pattern: Pattern, load: f64, flows: u64) -> WorkloadSpec {
    let cdf = websearch();
    WorkloadSpec {
        short_threshold_bytes: cdf.quantile(0.9),
        cdf,
        load,
        flows,
        pattern,
        host_rate: BitRate::from_gbps(10.0),
        start: SimTime::from_us(100),
    }
}

fn generator(pattern: Pattern, flows: u64, layout: &HostLayout, seed: u64) -> FlowGenerator {
    FlowGenerator::new(
        spec(pattern, 0.5, flows),
        layout,
        SimRng::seed_from_u64(seed),
    )
    .unwrap()
}

fn new_err(spec: WorkloadSpec, layout: &HostLayout) -> String {
    match FlowGenerator::new(spec, layout, SimRng::seed_from_u64(0)) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

#[test]
fn arrival_rate_follows_the_formula() {
    let layout = HostLayout::uniform(4, 4);
    let g = generator(Pattern::Uniform, 10, &layout, 1);
    let want = 0.5 * 16.0 * 10e9 / (8.0 * websearch().mean_bytes());
    assert!((g.arrival_rate_per_s() - want).abs() < 1e-9 * want);
    assert_eq!(g.n_senders(), 16);
}

#[test]
fn empirical_arrival_rate_matches_lambda() {
    let layout = HostLayout::uniform(4, 4);
    let n = 100_000;
    let g = generator(Pattern::Uniform, n, &layout, 2);
    let lambda = g.arrival_rate_per_s();
    let last = g.last().unwrap();
    let span_s = (last.start - SimTime::from_us(100)).as_secs_f64();
    // n arrivals in span: the estimate n / span has relative std error 1/sqrt(n) = 0.3%.
    let rate = n as f64 / span_s;
    assert!(
        (rate / lambda - 1.0).abs() < 0.03,
        "rate {rate} vs lambda {lambda}"
    );
}

#[test]
fn generated_load_matches_the_target() {
    let layout = HostLayout::uniform(4, 8);
    for (load, pattern) in [
        (0.3, Pattern::Uniform),
        (0.7, Pattern::Stride),
        (0.5, Pattern::Permutation),
    ] {
        let s = spec(pattern, load, 200_000);
        let rate_bps = s.host_rate.bps() as f64;
        let g = FlowGenerator::new(s, &layout, SimRng::seed_from_u64(3)).unwrap();
        let mut bits = 0.0;
        let mut last = SimTime::ZERO;
        for f in g {
            bits += f.bytes as f64 * 8.0;
            last = f.start;
        }
        let duration_s = (last - SimTime::from_us(100)).as_secs_f64();
        let got = bits / duration_s / (layout.n_hosts() as f64 * rate_bps);
        assert!((got / load - 1.0).abs() < 0.05, "load {got} vs {load}");
    }
}

#[test]
fn flows_are_ordered_with_sequential_ids_and_classes() {
    let layout = HostLayout::uniform(2, 3);
    let g = generator(Pattern::Uniform, 5000, &layout, 4);
    let threshold = websearch().quantile(0.9);
    let mut last = SimTime::from_us(100);
    let mut large = 0;
    for (k, f) in g.enumerate() {
        assert_eq!(f.id as usize, k);
        assert!(f.start >= last);
        last = f.start;
        assert!(f.bytes >= 1);
        let want = if f.bytes > threshold {
            TC_LARGE
        } else {
            TC_SHORT
        };
        assert_eq!(f.class, want);
        large += (f.class == TC_LARGE) as u32;
    }
    // About 10% are above the 90th percentile.
    assert!((350..650).contains(&large), "{large} large flows");
}

#[test]
fn uniform_never_picks_a_same_rack_destination() {
    let layout = HostLayout {
        racks: vec![vec![0, 1, 2, 3, 4], vec![5, 6], vec![7, 8, 9]],
    };
    let mut pairs = std::collections::HashSet::new();
    let mut sources = [0u32; 10];
    for f in generator(Pattern::Uniform, 30_000, &layout, 5) {
        assert_ne!(
            layout.rack_of(f.src),
            layout.rack_of(f.dst),
            "{} -> {}",
            f.src,
            f.dst
        );
        pairs.insert((f.src, f.dst));
        sources[f.src as usize] += 1;
    }
    // Every cross-rack pair occurs: 5*5 + 2*8 + 3*7.
    assert_eq!(pairs.len(), 25 + 16 + 21);
    // Sources are uniform over hosts (3000 expected each, std dev ~52).
    assert!(
        sources.iter().all(|&c| (2700..3300).contains(&c)),
        "{sources:?}"
    );
}

#[test]
fn stride_follows_the_p4te_mapping() {
    let layout = HostLayout::uniform(4, 4);
    for f in generator(Pattern::Stride, 2000, &layout, 6) {
        let (j, i) = (f.src / 4, f.src % 4);
        assert_eq!(f.dst, ((j + 1) % 4) * 4 + (i + 1) % 4);
    }
}

#[test]
fn permutation_is_fixed_bijection_across_racks() {
    let layout = HostLayout::uniform(4, 4);
    let mut map: [Option<HostId>; 16] = [None; 16];
    for f in generator(Pattern::Permutation, 5000, &layout, 7) {
        assert_ne!(f.src / 4, f.dst / 4);
        let prev = map[f.src as usize].replace(f.dst);
        assert!(
            prev.is_none() || prev == Some(f.dst),
            "host {} changed destination",
            f.src
        );
    }
    let mut dsts: Vec<HostId> = map.iter().map(|d| d.expect("every host sent")).collect();
    dsts.sort();
    assert_eq!(dsts, (0..16).collect::<Vec<_>>());
}

#[test]
fn incast_is_synchronised_with_distinct_senders() {
    let layout = HostLayout::uniform(4, 4);
    // `flows` is ignored: one flow per sender.
    let s = spec(
        Pattern::Incast {
            senders: 10,
            bytes: 64_000,
        },
        0.5,
        1,
    );
    let g = FlowGenerator::new(s, &layout, SimRng::seed_from_u64(8)).unwrap();
    let rx = g.incast_receiver().unwrap();
    assert_eq!(
        (g.len(), g.n_senders(), g.arrival_rate_per_s()),
        (10, 10, 0.0)
    );
    let flows: Vec<FlowSpec> = g.collect();
    assert_eq!(flows.len(), 10);
    let mut srcs: Vec<HostId> = flows.iter().map(|f| f.src).collect();
    srcs.sort();
    srcs.dedup();
    assert_eq!(srcs.len(), 10);
    for (k, f) in flows.iter().enumerate() {
        assert_eq!(f.id as usize, k);
        assert_eq!(
            (f.dst, f.bytes, f.start, f.class),
            (rx, 64_000, SimTime::from_us(100), TC_SHORT)
        );
        assert_ne!(f.src / 4, rx / 4);
    }
    // bytes = 0 samples the CDF.
    let sampled = spec(
        Pattern::Incast {
            senders: 12,
            bytes: 0,
        },
        0.5,
        1,
    );
    let sizes: Vec<u64> = FlowGenerator::new(sampled, &layout, SimRng::seed_from_u64(8))
        .unwrap()
        .map(|f| f.bytes)
        .collect();
    assert_eq!(sizes.len(), 12);
    assert!(sizes.iter().any(|&b| b != sizes[0]));
}

#[test]
fn incast_needs_enough_hosts() {
    let layout = HostLayout::uniform(4, 4);
    assert_eq!(
        new_err(spec(Pattern::Incast { senders: 13, bytes: 0 }, 0.5, 1), &layout),
        "workload.pattern.incast.senders: must be in 1..=12 (hosts outside the receiver's rack), got 13"
    );
}

#[test]
fn file_flows_are_validated_sorted_and_offset() {
    let layout = HostLayout::uniform(2, 2);
    let mut flows = parse_flow_file("5,0,2,100\n1,1,3,9000000\n5,3,0,7\n", "f").unwrap();
    flows.reverse(); // the generator sorts stably whatever order it gets
    let g = FlowGenerator::new(
        spec(Pattern::File(flows), 0.5, 1),
        &layout,
        SimRng::seed_from_u64(0),
    )
    .unwrap();
    assert_eq!(g.n_senders(), 3);
    let got: Vec<(FlowId, HostId, HostId, u64, SimTime, u8)> = g
        .map(|f| (f.id, f.src, f.dst, f.bytes, f.start, f.class))
        .collect();
    let t = |us: u64| SimTime::from_us(100 + us);
    assert_eq!(
        got,
        vec![
            (0, 1, 3, 9_000_000, t(1), TC_LARGE),
            (1, 3, 0, 7, t(5), TC_SHORT),
            (2, 0, 2, 100, t(5), TC_SHORT)
        ]
    );
    let bad = parse_flow_file("0,1,2,10\n1,0,4,10", "f").unwrap();
    assert_eq!(
        new_err(spec(Pattern::File(bad), 0.5, 1), &layout),
        "workload.pattern.file entry 1: dst 4 out of range 0..4"
    );
    let same = vec![FlowSpec {
        id: 0,
        src: 2,
        dst: 2,
        bytes: 1,
        start: SimTime::ZERO,
        class: 0,
        conn: None,
        group: 0,
        attrs: Default::default(),
    }];
    assert_eq!(
        new_err(spec(Pattern::File(same), 0.5, 1), &layout),
        "workload.pattern.file entry 0: src and dst must differ, both are 2"
    );
    assert_eq!(
        new_err(spec(Pattern::File(vec![]), 0.5, 1), &layout),
        "workload.pattern.file: no flows; give at least one"
    );
}

#[test]
fn spec_errors_name_the_key() {
    let layout = HostLayout::uniform(2, 2);
    assert_eq!(
        new_err(spec(Pattern::Uniform, 1.2, 10), &layout),
        "workload.load: must be in (0, 1), got 1.2"
    );
    assert_eq!(
        new_err(spec(Pattern::Uniform, 0.0, 10), &layout),
        "workload.load: must be in (0, 1), got 0"
    );
    assert_eq!(
        new_err(spec(Pattern::Uniform, f64::NAN, 10), &layout),
        "workload.load: must be in (0, 1), got NaN"
    );
    assert_eq!(
        new_err(spec(Pattern::Stride, 0.5, 0), &layout),
        "workload.flows: must be at least 1"
    );
    assert!(new_err(spec(Pattern::Stride, 0.5, 1 << 40), &layout)
        .starts_with("workload.flows: must be at most 4294967296"));
    let zero_rate = WorkloadSpec {
        host_rate: BitRate(0),
        ..spec(Pattern::Uniform, 0.5, 10)
    };
    assert_eq!(
        new_err(zero_rate, &layout),
        "workload.host_rate: must be positive, got 0 b/s"
    );
    let one_host = HostLayout {
        racks: vec![vec![0]],
    };
    assert_eq!(
        new_err(spec(Pattern::Uniform, 0.5, 10), &one_host),
        "host layout: need at least 2 hosts, got 1"
    );
}

#[test]
fn generation_is_lazy() {
    let layout = HostLayout::uniform(4, 4);
    for pattern in [Pattern::Uniform, Pattern::Stride, Pattern::Permutation] {
        let small = generator(pattern.clone(), 10, &layout, 1);
        let mut huge = generator(pattern, 4_000_000_000, &layout, 1);
        assert_eq!(huge.len(), 4_000_000_000);
        // The state does not grow with `flows`, and is O(hosts): a flow list
        // of 4e9 entries could not have been built in this test anyway.
        assert_eq!(small.heap_bytes(), huge.heap_bytes());
        assert!(huge.heap_bytes() < 1024, "{} bytes", huge.heap_bytes());
        let first: Vec<FlowSpec> = huge.by_ref().take(10).collect();
        assert_eq!(first, small.collect::<Vec<_>>());
        assert_eq!(huge.len(), 4_000_000_000 - 10);
    }
}

#[test]
fn same_seed_same_flows() {
    let layout = HostLayout::uniform(4, 4);
    for pattern in [
        Pattern::Uniform,
        Pattern::Stride,
        Pattern::Permutation,
        Pattern::Incast {
            senders: 5,
            bytes: 0,
        },
    ] {
        let a: Vec<FlowSpec> = generator(pattern.clone(), 1000, &layout, 42).collect();
        let b: Vec<FlowSpec> = generator(pattern.clone(), 1000, &layout, 42).collect();
        let c: Vec<FlowSpec> = generator(pattern.clone(), 1000, &layout, 43).collect();
        assert_eq!(a, b, "{}", pattern.name());
        assert_ne!(a, c, "{}", pattern.name());
    }
}

#[test]
fn client_server_uses_fixed_pairs_and_persistent_connections() {
    // 4 racks of 4: clients are racks 0-1 (hosts 0..8), servers racks 2-3.
    let layout = HostLayout::uniform(4, 4);
    let pattern = Pattern::ClientServer {
        connections: 3,
        assignment: ServerAssignment::Permutation,
    };
    let flows: Vec<FlowSpec> = generator(pattern.clone(), 20_000, &layout, 9).collect();
    let mut server_of = [None; 8];
    let mut conns = std::collections::HashSet::new();
    for f in &flows {
        assert!(f.src < 8 && (8..16).contains(&f.dst), "{f:?}");
        // One server per client, for the whole run.
        assert_eq!(*server_of[f.src as usize].get_or_insert(f.dst), f.dst);
        // Connection c belongs to client c / 3.
        let c = f.conn.expect("client-server flows run on a connection");
        assert_eq!(c / 3, f.src);
        conns.insert(c);
    }
    assert_eq!(conns.len(), 24);
    // As many servers as clients: a bijection (a random permutation).
    let mut servers: Vec<HostId> = server_of.iter().map(|s| s.unwrap()).collect();
    servers.sort_unstable();
    assert_eq!(servers, (8..16).collect::<Vec<_>>());
    // Each client offers `load` of its link: lambda counts clients only.
    let g = generator(pattern.clone(), 10, &layout, 9);
    assert_eq!(g.n_senders(), 8);
    let want = 0.5 * 8.0 * 10e9 / (8.0 * websearch().mean_bytes());
    assert!((g.arrival_rate_per_s() - want).abs() / want < 1e-12);
    // Another seed, another assignment.
    let other: Vec<FlowSpec> = generator(pattern, 200, &layout, 10).collect();
    assert!(other
        .iter()
        .any(|f| server_of[f.src as usize] != Some(f.dst)));
    // One rack cannot be split into clients and servers.
    let err = new_err(
        spec(
            Pattern::ClientServer {
                connections: 3,
                assignment: ServerAssignment::Random,
            },
            0.5,
            10,
        ),
        &HostLayout::uniform(1, 4),
    );
    assert!(
        err.contains("client_server: needs at least 2 racks"),
        "{err}"
    );
    let err = new_err(
        spec(
            Pattern::ClientServer {
                connections: 0,
                assignment: ServerAssignment::Permutation,
            },
            0.5,
            10,
        ),
        &layout,
    );
    assert!(err.contains("connections"), "{err}");
}

/// The server each client of `layout` gets (clients are hosts 0..n/2 of a
/// two-pod layout), read off the flows.
fn servers_of(assignment: ServerAssignment, layout: &HostLayout, seed: u64) -> Vec<HostId> {
    let pattern = Pattern::ClientServer {
        connections: 1,
        assignment,
    };
    let n_clients = layout
        .racks
        .iter()
        .take(layout.racks.len() / 2)
        .map(|r| r.len())
        .sum();
    let mut server_of = vec![None; n_clients];
    for f in generator(pattern, 5_000, layout, seed) {
        assert_eq!(*server_of[f.src as usize].get_or_insert(f.dst), f.dst);
    }
    server_of
        .into_iter()
        .map(|s| s.expect("every client sent"))
        .collect()
}

#[test]
fn client_server_random_assignment_draws_each_server_independently() {
    // HULA section 6: "each client chooses a server at random". 4 racks of 4:
    // clients 0..8, servers 8..16.
    let layout = HostLayout::uniform(4, 4);
    let mut loaded = 0;
    let mut idle = 0;
    let mut hits = [0u32; 8];
    for seed in 0..200 {
        let s = servers_of(ServerAssignment::Random, &layout, seed);
        assert!(s.iter().all(|d| (8..16).contains(d)), "{s:?}");
        let mut per = [0u32; 8];
        for &d in &s {
            per[(d - 8) as usize] += 1;
            hits[(d - 8) as usize] += 1;
        }
        loaded += per.iter().filter(|&&k| k >= 2).count();
        idle += per.iter().filter(|&&k| k == 0).count();
        // The same seed gives the same assignment.
        assert_eq!(s, servers_of(ServerAssignment::Random, &layout, seed));
    }
    // 8 independent draws over 8 servers leave (7/8)^8 = 34% of servers with
    // no client, on average 2.7 per seed; a permutation leaves none.
    let mean_idle = idle as f64 / 200.0;
    assert!((2.2..3.2).contains(&mean_idle), "{mean_idle}");
    assert!(loaded > 0);
    // Uniform over servers: 1600 draws, 200 expected each.
    assert!(hits.iter().all(|&h| (140..260).contains(&h)), "{hits:?}");
    // The permutation never shares a server between two clients.
    for seed in 0..20 {
        let mut s = servers_of(ServerAssignment::Permutation, &layout, seed);
        s.sort_unstable();
        assert_eq!(s, (8..16).collect::<Vec<_>>());
    }
}

#[test]
fn a_flow_list_with_a_byte_order_mark_parses() {
    let text = "\u{feff}start_us,src,dst,bytes\n0,0,1,1000\n";
    let flows = crate::parse_flow_file(text, "flows.csv").unwrap();
    assert_eq!(flows.len(), 1);
}

#[test]
fn groups_merge_in_start_order_with_their_attributes() {
    use crate::{FlowAttrs, FlowSource};
    let layout = HostLayout::uniform(2, 4);
    let mk = |seed: u64| generator(Pattern::Uniform, 50, &layout, seed);
    let alone: Vec<FlowSpec> = mk(1).collect();
    // One group with no attributes: exactly the generator's flows.
    let single: Vec<FlowSpec> = FlowSource::single(mk(1)).collect();
    assert_eq!(single, alone);
    let bg = FlowAttrs {
        priority: Some(1),
        ..FlowAttrs::default()
    };
    let merged: Vec<FlowSpec> = FlowSource::new(vec![(mk(1), FlowAttrs::default()), (mk(2), bg)])
        .unwrap()
        .collect();
    assert_eq!(merged.len(), 100);
    for (i, w) in merged.windows(2).enumerate() {
        assert!(w[0].start <= w[1].start, "flow {i}");
    }
    for (i, f) in merged.iter().enumerate() {
        assert_eq!(f.id as usize, i);
        assert_eq!(f.attrs.priority, (f.group == 1).then_some(1));
    }
    // Group 0's flows are the generator's alone, in order.
    let g0: Vec<(u32, u32, u64)> = merged
        .iter()
        .filter(|f| f.group == 0)
        .map(|f| (f.src, f.dst, f.bytes))
        .collect();
    let a: Vec<(u32, u32, u64)> = alone.iter().map(|f| (f.src, f.dst, f.bytes)).collect();
    assert_eq!(g0, a);
}
