//! Golden planner tests (the paper's Tables III and IV) and golden-packet
//! tests of the program.

use super::plan::{plan, Dispatch, Plan};
use super::*;
use pisanet_engine::{BitRate, RngStreams, SimTime, StreamKind};
use pisanet_net::topology::{AddrPlan, LinkSpec};
use pisanet_net::{Tcp, PROTO_TCP};
use pisanet_pisa::{ControlPlaneConfig, Emit, Switch};

/// A topology of switches S1..Sn (named in order) with host h_src on S1
/// and h_dst on Sn, and the given switch links (1-based, Gb/s).
fn graph(n: u32, links: &[(u32, u32, f64)]) -> Topology {
    let mut nodes = vec![
        ("h1".to_string(), NodeKind::Host),
        ("h2".to_string(), NodeKind::Host),
    ];
    for i in 1..=n {
        nodes.push((format!("S{i}"), NodeKind::Switch { tier: 0 }));
    }
    let sw = |i: u32| i + 1; // S1 is node 2
    let mut specs = vec![
        LinkSpec {
            a: 0,
            b: sw(1),
            rate: BitRate::from_gbps(100.0),
            delay: SimTime::from_us(1),
        },
        LinkSpec {
            a: 1,
            b: sw(n),
            rate: BitRate::from_gbps(100.0),
            delay: SimTime::from_us(1),
        },
    ];
    for &(a, b, g) in links {
        specs.push(LinkSpec {
            a: sw(a),
            b: sw(b),
            rate: BitRate::from_gbps(g),
            delay: SimTime::from_us(1),
        });
    }
    Topology::from_links("custom", nodes, &specs, AddrPlan::Flat).unwrap()
}

/// Fig. 2a with capacities equal to the paper's b values (Fig. 2b).
fn fig2a() -> Topology {
    graph(
        6,
        &[
            (1, 2, 6.0),
            (1, 3, 6.0),
            (2, 4, 3.0),
            (2, 5, 3.0),
            (3, 4, 3.0),
            (3, 5, 3.0),
            (4, 6, 6.0),
            (5, 6, 6.0),
        ],
    )
}

/// Fig. 5: SIRs 1:4; 1, 1, 3, 5; 2:3, with capacities in those proportions.
fn fig5() -> Topology {
    graph(
        6,
        &[
            (1, 2, 2.0),
            (1, 3, 8.0),
            (2, 4, 1.0),
            (2, 5, 1.0),
            (3, 4, 3.0),
            (3, 5, 5.0),
            (4, 6, 4.0),
            (5, 6, 6.0),
        ],
    )
}

/// The PDC as the paper's tables write it: "1246", ...
fn table(topo: &Topology, p: &Plan) -> Vec<String> {
    p.paths
        .iter()
        .map(|path| {
            path.iter()
                .map(|&n| {
                    topo.nodes[n as usize]
                        .name
                        .trim_start_matches('S')
                        .to_string()
                })
                .collect()
        })
        .collect()
}

fn plan_s1_s6(topo: &Topology, dispatch: Dispatch) -> Plan {
    plan(topo, 2, 7, 1024, dispatch).unwrap()
}

#[test]
fn fig2a_gives_table_iii() {
    let t = fig2a();
    let p = plan_s1_s6(&t, Dispatch::Corrected);
    // Section III.A: z = 12 (the paper's text says 6; its own b values need 12).
    assert_eq!(p.max_flow_bps, 12_000_000_000);
    assert_eq!(p.stage_sums, vec![2, 4, 2]);
    assert_eq!(p.n, 4); // "N = lcm(2, 4, 2) = 4"
    let n: Vec<(u64, u64)> = p.links.iter().map(|l| (l.rho, l.n)).collect();
    // N_12 = 2 and N_24 = 1 (section III.C).
    assert_eq!(
        n,
        vec![
            (1, 2),
            (1, 2),
            (1, 1),
            (1, 1),
            (1, 1),
            (1, 1),
            (1, 2),
            (1, 2)
        ]
    );
    let q: Vec<u64> = p.quotas.iter().map(|&(_, q)| q).collect();
    assert_eq!(q, vec![2, 2, 2, 2, 4]);
    assert_eq!(table(&t, &p), ["1246", "1356", "1256", "1346"]);
}

#[test]
fn fig5_gives_table_iv() {
    let t = fig5();
    let p = plan_s1_s6(&t, Dispatch::Corrected);
    assert_eq!(p.stage_sums, vec![5, 10, 5]);
    assert_eq!(p.n, 10); // "N = lcm(5, 10, 5) = 10"
    let rho: Vec<u64> = p.links.iter().map(|l| l.rho).collect();
    assert_eq!(rho, vec![1, 4, 1, 1, 3, 5, 2, 3]);
    assert_eq!(
        table(&t, &p),
        ["1246", "1356", "1356", "1346", "1356", "1256", "1346", "1356", "1346", "1356"]
    );
}

#[test]
fn printed_algorithm_1_does_not_give_table_iii() {
    let t = fig2a();
    let p = plan_s1_s6(&t, Dispatch::Printed);
    assert_eq!(table(&t, &p), ["1246", "1356", "1246", "1356"]);
}

#[test]
fn per_link_counts_over_a_pdc_are_n_ij() {
    let t = fig5();
    let p = plan_s1_s6(&t, Dispatch::Corrected);
    for l in &p.links {
        let used = p
            .paths
            .iter()
            .filter(|path| path.windows(2).any(|w| w == [l.from, l.to]))
            .count() as u64;
        assert_eq!(used, l.n, "{}->{}", l.from, l.to);
        // The dispatch table of a switch uses each link N_ij times.
        let d = p.dispatch_of(l.from);
        assert_eq!(d.iter().filter(|&&x| x == l.port).count() as u64, l.n);
    }
    // Each switch's table has its quota's length.
    for &(k, q) in &p.quotas {
        if k != p.sink {
            assert_eq!(p.dispatch_of(k).len() as u64, q);
        }
    }
}

#[test]
fn huge_pdc_is_refused_naming_the_stage_sums() {
    let t = graph(
        6,
        &[
            (1, 2, 3.0),
            (1, 3, 4.0),
            (2, 4, 1.0),
            (2, 5, 2.0),
            (3, 4, 3.0),
            (3, 5, 1.0),
            (4, 6, 4.0),
            (5, 6, 3.0),
        ],
    );
    // Stage sums 7, 7 (1, 2, 3, 1), 7: N = 7; with max_pdc 5, refused.
    let e = plan(&t, 2, 7, 5, Dispatch::Corrected).unwrap_err();
    assert_eq!(
        e,
        "PDC length N = lcm of the stage sums 7, 7, 7 is more than scheme.dbb.max_pdc = 5 (pair S1 -> S6); raise max_pdc or round the link rates"
    );
}

#[test]
fn non_layered_flow_is_refused() {
    // S1 -> S2 -> S3 and S1 -> S3 directly: paths of 2 and 3 hops.
    let t = graph(3, &[(1, 2, 1.0), (2, 3, 1.0), (1, 3, 1.0)]);
    let e = plan(&t, 2, 4, 1024, Dispatch::Corrected).unwrap_err();
    assert!(e.contains("is not layered"), "{e}");
    assert!(e.contains("supports only layered"), "{e}");
}

// ---- the program ----

fn params(topo: &Topology, counter: CounterKind) -> SchemeParams {
    let mut p = SchemeParams {
        kind: crate::SchemeKind::by_name("dbb").unwrap(),
        ..SchemeParams::default()
    };
    p.dbb.counter = counter;
    p.dbb.pairs = vec![["S1".into(), "S6".into()]];
    p.dbb.rules = Some(Arc::new(switch_rules(topo, &p.dbb).unwrap()));
    p
}

/// Builds switch `name` of `topo` with its prefix routes, as the facade's
/// `switch_info`.
fn switch(topo: &Topology, p: &SchemeParams, name: &str) -> Switch {
    let node = topo.node_by_name(name).unwrap();
    let sw = node - topo.n_hosts;
    let routes = topo
        .routes()
        .prefix_routes(topo, sw)
        .into_iter()
        .map(|r| pisanet_pisa::Route {
            prefix: r.prefix,
            len: r.len,
            ports: r.ports,
            rack: r.rack,
        })
        .collect();
    let info = SwitchInfo {
        id: sw,
        n_ports: topo.nodes[node as usize].ports.len() as u16,
        name: name.into(),
        routes,
        ..Default::default()
    };
    let rng = RngStreams::new(5).stream(StreamKind::Switch, sw as u64);
    crate::build(p, &info, rng, ControlPlaneConfig::default()).unwrap()
}

fn tcp(topo: &Topology, sport: u16, payload: u32) -> Packet {
    let mut p = Packet {
        size: 1518,
        ..Default::default()
    };
    p.ip.src = topo.host_addr[0];
    p.ip.dst = topo.host_addr[1];
    p.ip.proto = PROTO_TCP;
    p.l4 = L4::Tcp(Tcp {
        sport,
        dport: 80,
        payload,
        ..Default::default()
    });
    p
}

fn forward(sw: &mut Switch, port: PortNo, pkt: Packet) -> Option<PortNo> {
    let mut out = Vec::new();
    sw.ingress(SimTime::from_ms(20), port, pkt, &mut out);
    assert_eq!(out.len(), 1);
    match &out[0] {
        Emit::Enqueue { port, .. } => Some(*port),
        Emit::Drop { .. } => None,
        other => panic!("{other:?}"),
    }
}

/// The port of `from` towards `to` in `topo`.
fn port(topo: &Topology, from: &str, to: &str) -> PortNo {
    let (a, b) = (
        topo.node_by_name(from).unwrap(),
        topo.node_by_name(to).unwrap(),
    );
    topo.nodes[a as usize]
        .ports
        .iter()
        .position(|p| p.peer_node == b)
        .unwrap() as PortNo
}

#[test]
fn source_switch_follows_table_iv_cyclically() {
    let t = fig5();
    let p = params(&t, CounterKind::Shared);
    let mut s1 = switch(&t, &p, "S1");
    let (to2, to3) = (port(&t, "S1", "S2"), port(&t, "S1", "S3"));
    // Table IV's stage-2 column: 2 3 3 3 3 2 3 3 3 3, twice (one counter
    // shared by every flow of the pair).
    let want: Vec<PortNo> = [2, 3, 3, 3, 3, 2, 3, 3, 3, 3]
        .iter()
        .map(|&s| if s == 2 { to2 } else { to3 })
        .collect();
    for round in 0..2 {
        for (i, &w) in want.iter().enumerate() {
            let got = forward(&mut s1, 0, tcp(&t, 1000 + i as u16, 1460));
            assert_eq!(got, Some(w), "round {round}, packet {i}");
        }
    }
}

#[test]
fn stage_two_switch_dispatches_its_own_arrivals() {
    let t = fig5();
    let p = params(&t, CounterKind::Shared);
    let mut s3 = switch(&t, &p, "S3");
    let (to4, to5) = (port(&t, "S3", "S4"), port(&t, "S3", "S5"));
    // S3 sees packets 2,3,4,5,7,8,9,10 of Table IV: 5 5 4 5 4 5 4 5.
    let want = [to5, to5, to4, to5, to4, to5, to4, to5];
    let in_port = port(&t, "S3", "S1");
    for (i, &w) in want.iter().enumerate() {
        assert_eq!(forward(&mut s3, in_port, tcp(&t, 7, 1460)), Some(w), "{i}");
    }
}

#[test]
fn acks_and_other_pairs_take_ecmp() {
    let t = fig5();
    let p = params(&t, CounterKind::Shared);
    let mut s1 = switch(&t, &p, "S1");
    // A pure ACK from h1 to h2 does not advance the counter: the next data
    // packet still takes Table IV's first hop (S2).
    let ack = forward(&mut s1, 0, tcp(&t, 9, 0));
    assert!(ack.is_some());
    assert_eq!(
        forward(&mut s1, 0, tcp(&t, 9, 1460)),
        Some(port(&t, "S1", "S2"))
    );
    // Reverse direction (h2 -> h1) is not planned: routed by ECMP to S1's host.
    let mut back = tcp(&t, 9, 1460);
    std::mem::swap(&mut back.ip.src, &mut back.ip.dst);
    assert_eq!(forward(&mut s1, port(&t, "S1", "S2"), back), Some(0));
}

#[test]
fn per_flow_counters_are_independent() {
    let t = fig5();
    let p = params(&t, CounterKind::PerFlow);
    let mut s1 = switch(&t, &p, "S1");
    let to2 = port(&t, "S1", "S2");
    // Two flows that hash to different slots each start at the PDC's first
    // packet (S2).
    let (a, b) = (tcp(&t, 1, 1460), tcp(&t, 2, 1460));
    assert_eq!(forward(&mut s1, 0, a.clone()), Some(to2));
    assert_ne!(forward(&mut s1, 0, a), Some(to2));
    assert_eq!(forward(&mut s1, 0, b), Some(to2));
}

#[test]
fn resources_report_lists_dbb_objects() {
    let r = crate::resources("dbb").unwrap();
    let text = format!("{r:?}");
    for name in ["dbb_pair", "dbb_dispatch", "dbb_counter", "ipv4_lpm"] {
        assert!(text.contains(name), "{name}: {text}");
    }
}

/// Pushes `packets` data packets of one flow through Fig. 5's switches in
/// order (no queues), dropping the packets `drop(i)` says on link S1->S3.
/// Returns (paths that differ from the plan's path for the source's sequence
/// number, delivered packets, packets S3 dispatched, S3->S4 count).
fn drift(packets: u64, drop: impl Fn(u64) -> bool) -> (u64, u64, u64, u64) {
    let t = fig5();
    let p = params(&t, CounterKind::Shared);
    let plan = plan_s1_s6(&t, Dispatch::Corrected);
    let names = ["S1", "S2", "S3", "S4", "S5"];
    let mut sw: Vec<Switch> = names.iter().map(|n| switch(&t, &p, n)).collect();
    let (mut differ, mut delivered, mut s3_total, mut s3_to_s4) = (0, 0, 0, 0);
    for i in 0..packets {
        let mut at = t.node_by_name("S1").unwrap();
        let mut path = vec![at];
        let mut in_port = 0;
        let mut lost = false;
        while at != t.node_by_name("S6").unwrap() {
            let k = (at - t.n_hosts) as usize;
            let out = forward(&mut sw[k], in_port, tcp(&t, 5, 1460)).unwrap();
            let spec = t.nodes[at as usize].ports[out as usize];
            if names[k] == "S3" {
                s3_total += 1;
                s3_to_s4 += (t.nodes[spec.peer_node as usize].name == "S4") as u64;
            }
            if names[k] == "S1" && t.nodes[spec.peer_node as usize].name == "S3" && drop(i) {
                lost = true;
                break;
            }
            at = spec.peer_node;
            in_port = spec.peer_port;
            path.push(at);
        }
        if !lost {
            delivered += 1;
            differ += (path != plan.paths[(i % plan.n) as usize]) as u64;
        }
    }
    (differ, delivered, s3_total, s3_to_s4)
}

#[test]
fn local_counters_drift_after_an_upstream_drop() {
    // No loss: every packet takes the plan's path for its sequence number.
    let (differ, delivered, m, to4) = drift(10_000, |_| false);
    assert_eq!((differ, delivered), (0, 10_000));
    // N_34 / Q_2(3) = 3 / 8.
    assert_eq!(to4 * 8, m * 3);
    // One drop on S1->S3 (packet 50): S3's counter is one behind from then
    // on, so S3's choices follow its table shifted by one place.
    let (differ, delivered, m, to4) = drift(10_000, |i| i == 49);
    eprintln!("one drop: {differ} of {delivered} delivered packets off their planned path");
    assert!(differ > 0);
    // The split at S3 stays 3:5 within one packet: local counters keep
    // link loads proportional; only the packet-to-path mapping drifts.
    assert!((to4 * 8).abs_diff(m * 3) <= 8, "{to4} of {m}");
    // 1% random-like loss (every 97th packet of the pair).
    let (differ, delivered, m, to4) = drift(10_000, |i| i % 97 == 96);
    eprintln!("1% loss: {differ} of {delivered} delivered packets off their planned path");
    assert!((to4 * 8).abs_diff(m * 3) <= 8, "{to4} of {m}");
}
