//! Tests of `hula`, `conga` and `conga_prime`: probe replication on the HULA
//! topology (never loops, covers every path), the probe update rules of
//! HULA section 4.2 and Fig. 3, aging (4.4), suppression (4.5), flowlet
//! pinning and bootstrapping (4.3), quantization, and CONGA's feedback loop.

use crate::conga::{CongaHeader, LBTAG_ECMP};
use crate::hula::{self, BestPath, Hula, UTIL_INF};
use crate::*;
use pisanet_engine::{BitRate, RngStreams, SimTime, StreamKind};
use pisanet_net::topology::{hula3tier, NodeKind};
use pisanet_net::{Packet, PortNo, Tcp, L4, PROTO_TCP};
use pisanet_pisa::{
    ControlPlaneConfig, DeqInfo, Emit, InstanceType, QueueMeta, Route, Switch, SwitchInfo,
    PKTGEN_PORT,
};
use std::collections::HashMap;

fn ip(a: u8, b: u8, c: u8, d: u8) -> u32 {
    u32::from_be_bytes([a, b, c, d])
}

fn us(t: u64) -> SimTime {
    SimTime::from_us(t)
}

fn tcp(src: u32, dst: u32, sport: u16) -> Packet {
    let mut p = Packet {
        size: 1518,
        ..Default::default()
    };
    p.ip.src = src;
    p.ip.dst = dst;
    p.ip.proto = PROTO_TCP;
    p.l4 = L4::Tcp(Tcp {
        sport,
        dport: 80,
        payload: 1460,
        ..Default::default()
    });
    p
}

/// The SwitchInfo of every switch of the HULA topology (Fig. 4), by name,
/// with the tiers and the racks; routes only where a test needs them.
fn hula3tier_infos() -> HashMap<String, SwitchInfo> {
    let g = BitRate::from_gbps;
    let t = hula3tier(g(10.0), g(40.0), us(1), 2).unwrap();
    let mut out = HashMap::new();
    for (i, n) in t.nodes.iter().enumerate() {
        let NodeKind::Switch { tier } = n.kind else {
            continue;
        };
        let peer_tier = n
            .ports
            .iter()
            .map(|p| match t.nodes[p.peer_node as usize].kind {
                NodeKind::Host => -1,
                NodeKind::Switch { tier } => tier as i8,
            })
            .collect();
        let info = SwitchInfo {
            id: i as u32 - t.n_hosts,
            n_ports: n.ports.len() as u16,
            port_rates: n.ports.iter().map(|p| p.rate).collect(),
            tier,
            name: n.name.clone(),
            rack: t
                .racks
                .iter()
                .position(|&r| r == i as u32)
                .map(|r| r as u32),
            n_racks: 4,
            peer_tier,
            ..Default::default()
        };
        out.insert(n.name.clone(), info);
    }
    out
}

/// Follows every probe copy of ToR `origin` through the multicast groups of
/// `hula::mcast_groups` (a ToR terminates what comes from its uplinks):
/// returns each path, as the switch names it visits, that ends at a ToR.
fn probe_paths(origin: &str) -> Vec<Vec<String>> {
    let g = BitRate::from_gbps;
    let t = hula3tier(g(10.0), g(40.0), us(1), 2).unwrap();
    let infos = hula3tier_infos();
    let groups: HashMap<String, Vec<(PortNo, Vec<PortNo>)>> = infos
        .iter()
        .map(|(n, i)| (n.clone(), hula::mcast_groups(i)))
        .collect();
    let node = |name: &str| t.node_by_name(name).unwrap();
    let mut done = Vec::new();
    // (node, in_port, path so far)
    let mut stack = vec![(node(origin), PKTGEN_PORT, vec![origin.to_string()])];
    let mut steps = 0;
    while let Some((n, in_port, path)) = stack.pop() {
        steps += 1;
        assert!(steps < 10_000, "probe replication does not terminate");
        let name = &t.nodes[n as usize].name;
        let out = groups[name].iter().find(|(p, _)| *p == in_port);
        match out {
            None => {
                // Terminated: it must be at a ToR.
                assert!(infos[name].rack.is_some(), "a probe ended at {name}");
                done.push(path);
            }
            Some((_, ports)) => {
                for &p in ports {
                    let spec = t.nodes[n as usize].ports[p as usize];
                    let next = &t.nodes[spec.peer_node as usize].name;
                    assert!(
                        !path.contains(next) || infos[next].rack.is_some(),
                        "a probe loops: {path:?} -> {next}"
                    );
                    let mut path = path.clone();
                    path.push(next.clone());
                    stack.push((spec.peer_node, spec.peer_port, path));
                }
            }
        }
    }
    done
}

#[test]
fn probe_replication_covers_every_path_and_never_loops() {
    // HULA section 6: 8 paths between ToRs of different pods.
    let paths = probe_paths("T1");
    let to = |tor: &str| {
        let mut v: Vec<String> = paths
            .iter()
            .filter(|p| p.last().unwrap() == tor)
            .map(|p| p.join("-"))
            .collect();
        v.sort();
        v
    };
    let t3 = to("T3");
    assert_eq!(t3.len(), 8, "{t3:?}");
    for a in ["A1", "A2"] {
        for s in ["S1", "S2"] {
            for b in ["A3", "A4"] {
                assert!(t3.contains(&format!("T1-{a}-{s}-{b}-T3")), "{t3:?}");
            }
        }
    }
    assert_eq!(to("T4").len(), 8);
    // Within the pod: the two direct paths, and the four through a spine
    // and the other aggregation switch (section 4.1: A1 sends up and down).
    let t2 = to("T2");
    assert_eq!(
        t2,
        vec![
            "T1-A1-S1-A2-T2",
            "T1-A1-S2-A2-T2",
            "T1-A1-T2",
            "T1-A2-S1-A1-T2",
            "T1-A2-S2-A1-T2",
            "T1-A2-T2"
        ]
    );
    // Every path is up then down: never up after down, at most 4 hops.
    let tier = |n: &str| hula3tier_infos()[n].tier;
    for p in &paths {
        assert!(p.len() <= 5, "{p:?}");
        let tiers: Vec<u8> = p.iter().map(|n| tier(n)).collect();
        let peak = tiers
            .iter()
            .position(|&t| t == *tiers.iter().max().unwrap())
            .unwrap();
        assert!(tiers[..=peak].windows(2).all(|w| w[0] < w[1]), "{p:?}");
        assert!(tiers[peak..].windows(2).all(|w| w[0] > w[1]), "{p:?}");
    }
    // Spines send only down, and not back where the probe came from.
    let infos = hula3tier_infos();
    for (port, group) in hula::mcast_groups(&infos["S1"]) {
        assert!(!group.contains(&port));
        assert_eq!(group.len(), 3);
    }
}

/// An aggregation switch like A1: ports 0, 1 down to ToRs (racks 0 and 1),
/// ports 2, 3 up to spines; racks 2 and 3 are in the other pod.
fn agg() -> SwitchInfo {
    let g = BitRate::from_gbps(40.0);
    SwitchInfo {
        id: 4,
        n_ports: 4,
        port_rates: vec![g; 4],
        routes: vec![
            Route {
                prefix: ip(10, 0, 0, 0),
                len: 24,
                ports: vec![0],
                rack: Some(0),
            },
            Route {
                prefix: ip(10, 0, 1, 0),
                len: 24,
                ports: vec![1],
                rack: Some(1),
            },
            Route {
                prefix: ip(10, 0, 2, 0),
                len: 24,
                ports: vec![2, 3],
                rack: Some(2),
            },
            Route {
                prefix: ip(10, 0, 3, 0),
                len: 24,
                ports: vec![2, 3],
                rack: Some(3),
            },
        ],
        uplinks: vec![2, 3],
        tier: 1,
        name: "A1".into(),
        n_racks: 4,
        pod: Some(0),
        peer_tier: vec![0, 0, 2, 2],
        rack_pods: vec![0, 0, 1, 1].into(),
        rack_prefixes: (0..4).map(|r| ip(10, 0, r, 0)).collect(),
        ..Default::default()
    }
}

/// A ToR like T1 (rack 0): hosts 10.0.0.2, .3 on ports 0, 1; uplinks 2, 3.
fn tor() -> SwitchInfo {
    let (h, f) = (BitRate::from_gbps(10.0), BitRate::from_gbps(40.0));
    let mut routes = vec![
        Route {
            prefix: ip(10, 0, 0, 2),
            len: 32,
            ports: vec![0],
            rack: Some(0),
        },
        Route {
            prefix: ip(10, 0, 0, 3),
            len: 32,
            ports: vec![1],
            rack: Some(0),
        },
    ];
    for r in 1..4u8 {
        routes.push(Route {
            prefix: ip(10, 0, r, 0),
            len: 24,
            ports: vec![2, 3],
            rack: Some(r as u32),
        });
    }
    SwitchInfo {
        id: 0,
        n_ports: 4,
        port_rates: vec![h, h, f, f],
        routes,
        uplinks: vec![2, 3],
        tier: 0,
        name: "T1".into(),
        rack: Some(0),
        host_ports: vec![0, 1],
        n_racks: 4,
        pod: Some(0),
        peer_tier: vec![-1, -1, 1, 1],
        rack_pods: vec![0, 0, 1, 1].into(),
        rack_prefixes: (0..4).map(|r| ip(10, 0, r, 0)).collect(),
    }
}

fn build_with(kind: &str, params: &SchemeParams, info: &SwitchInfo) -> Switch {
    let rng = RngStreams::new(3).stream(StreamKind::Switch, info.id as u64);
    build_kind(kind, params, info, rng, ControlPlaneConfig::default()).unwrap()
}

/// The HULA program's handles (declared the same way `build` does).
fn hula_handles(info: &SwitchInfo) -> Hula {
    let mut pipe = pisanet_pisa::Pipeline::new("hula");
    Hula::new(&mut pipe, &SchemeParams::default(), info).unwrap()
}

fn best(sw: &Switch, h: &Hula, tor: u32) -> BestPath {
    BestPath::unpack(sw.pipeline().read_register(h.best_path, tor))
}

/// A probe in on `port`: the emits.
fn probe_in(sw: &mut Switch, now: SimTime, port: PortNo, tor: u32, util: u64) -> Vec<Emit> {
    let mut out = Vec::new();
    sw.ingress(now, port, hula::probe(tor, util), &mut out);
    out
}

fn out_ports(out: &[Emit]) -> Vec<(PortNo, u64)> {
    out.iter()
        .map(|e| match e {
            Emit::Enqueue { port, pkt, .. } => (*port, hula::probe_header(pkt).unwrap().1),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn probe_updates_follow_fig3_and_section_5_3() {
    let info = agg();
    let h = hula_handles(&info);
    let mut sw = build_with("hula", &SchemeParams::default(), &info);
    // Bootstrapping: every ToR at infinity.
    assert_eq!(best(&sw, &h, 2).util, UTIL_INF);
    // A probe for ToR 2 (other pod) from spine port 2 with util 40: taken;
    // replicated down to both ToRs (section 4.1), carrying 40 (line 13).
    let out = probe_in(&mut sw, us(10), 2, 2, 40);
    assert_eq!(out_ports(&out), vec![(0, 40), (1, 40)]);
    assert_eq!(
        best(&sw, &h, 2),
        BestPath {
            util: 40,
            hop: 2,
            time_ns: 10_000
        }
    );
    // A worse probe from the other spine: no change, and the probe carries
    // the best path (40), not its own.
    let out = probe_in(&mut sw, us(20), 3, 2, 90);
    assert_eq!(out_ports(&out), vec![(0, 40), (1, 40)]);
    assert_eq!(best(&sw, &h, 2).hop, 2);
    // A better one: replaces hop and utilization.
    probe_in(&mut sw, us(30), 3, 2, 10);
    assert_eq!((best(&sw, &h, 2).hop, best(&sw, &h, 2).util), (3, 10));
    // The current best hop reports a higher utilization: refreshed (the
    // Pairs update), so a congested best hop does not stick.
    probe_in(&mut sw, us(40), 3, 2, 70);
    assert_eq!((best(&sw, &h, 2).hop, best(&sw, &h, 2).util), (3, 70));
    // A probe from a ToR (downstream) goes to the other ToR and both spines.
    let out = probe_in(&mut sw, us(50), 0, 0, 5);
    assert_eq!(out_ports(&out), vec![(1, 5), (2, 5), (3, 5)]);
    // The diagnostic counter saw one move of a best hop (2 -> 3): leaving
    // infinity and refreshing the current hop are not moves.
    assert_eq!(sw.pipeline().read_counter(h.best_hop_changes, 0).packets, 1);
    sw.assert_no_violations();
}

#[test]
fn an_entry_not_refreshed_within_keepalive_is_replaced_by_any_probe() {
    let info = agg();
    let h = hula_handles(&info);
    let params = SchemeParams::default();
    let keepalive = params.hula.keepalive();
    let mut sw = build_with("hula", &params, &info);
    probe_in(&mut sw, us(100), 2, 3, 5);
    // Within keepalive a worse probe from another hop is ignored ...
    probe_in(&mut sw, us(100) + keepalive, 3, 3, 200);
    assert_eq!(best(&sw, &h, 3).hop, 2);
    // ... after it (HULA section 4.4), it replaces the silent best hop.
    probe_in(&mut sw, us(101) + keepalive, 3, 3, 200);
    assert_eq!((best(&sw, &h, 3).hop, best(&sw, &h, 3).util), (3, 200));
    sw.assert_no_violations();
}

/// Egress of a probe copy on `port` at `now`: sent (true) or suppressed.
fn probe_out(sw: &mut Switch, now: SimTime, port: PortNo, tor: u32, from: PortNo) -> bool {
    let deq = DeqInfo {
        enq_timestamp: now,
        meta: QueueMeta {
            ingress_port: from,
            instance_type: InstanceType::Replication,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut out = Vec::new();
    sw.egress(now, port, hula::probe(tor, 0), deq, &mut out);
    match &out[..] {
        [Emit::Transmit(_)] => true,
        [Emit::Consumed(_)] => false,
        other => panic!("{other:?}"),
    }
}

#[test]
fn at_most_one_probe_per_tor_and_link_per_window() {
    let info = agg();
    let params = SchemeParams::default();
    let w = params.hula.suppress_window();
    let mut sw = build_with("hula", &params, &info);
    let t0 = us(1000);
    assert!(probe_out(&mut sw, t0, 0, 2, 2));
    // The same ToR's probe via the other spine, on the same link: suppressed.
    assert!(!probe_out(&mut sw, t0 + us(3), 0, 2, 3));
    // Other links and other ToRs are independent.
    assert!(probe_out(&mut sw, t0 + us(3), 1, 2, 3));
    assert!(probe_out(&mut sw, t0 + us(3), 0, 3, 3));
    // After the window, the next round goes through.
    assert!(!probe_out(&mut sw, t0 + w - us(1), 0, 2, 2));
    assert!(probe_out(&mut sw, t0 + w, 0, 2, 2));
    // A ToR's own probes (from the generator) are never suppressed.
    let mut t = build_with("hula", &params, &tor());
    assert!(probe_out(&mut t, t0, 2, 0, PKTGEN_PORT));
    assert!(probe_out(&mut t, t0 + us(1), 2, 0, PKTGEN_PORT));
    assert_eq!(sw.stats().terminated, 2);
    sw.assert_no_violations();
}

#[test]
fn tx_utilization_is_quantized_to_8_bits_of_line_rate() {
    let info = agg();
    let params = SchemeParams::default();
    let h = hula_handles(&info);
    // Port 2 sends 1500 B frames at line rate (40G: one per 300 ns), port 3
    // at a quarter of it, for longer than tau.
    let mut sw = build_with("hula", &params, &info);
    let deq = DeqInfo::default();
    let mut t = SimTime::ZERO;
    let mut k = 0u64;
    // Ten time constants: within 0.01% of steady state.
    while t < us(4000) {
        let mut out = Vec::new();
        let mut p = tcp(ip(10, 0, 0, 2), ip(10, 0, 2, 2), 1);
        p.size = 1500;
        sw.egress(t, 2, p.clone(), deq, &mut out);
        if k.is_multiple_of(4) {
            sw.egress(t, 3, p, deq, &mut out);
        }
        t += SimTime::from_ns(300);
        k += 1;
    }
    // A probe at util 0 entering port 2 takes the port's utilization.
    let out = probe_in(&mut sw, t, 2, 2, 0);
    let u2 = out_ports(&out)[0].1;
    assert!((250..=254).contains(&u2), "{u2}");
    // Port 3 at 25%: about 64 of 255.
    probe_in(&mut sw, t, 3, 3, 0);
    let u3 = best(&sw, &h, 3).util;
    assert!((60..=66).contains(&u3), "{u3}");
    // A probe never raises above the saturation value, and 255 stays infinity.
    assert_eq!(hula::quantize(u64::MAX >> 8, 1 << 40, hula::UTIL_MAX), 254);
    sw.assert_no_violations();
}

#[test]
fn flowlets_keep_their_hop_and_new_ones_take_the_best() {
    let info = tor();
    let params = SchemeParams::default();
    let mut sw = build_with("hula", &params, &info);
    let fwd = |sw: &mut Switch, t: SimTime, pkt: Packet| {
        let mut out = Vec::new();
        sw.ingress(t, 0, pkt, &mut out);
        match &out[..] {
            [Emit::Enqueue { port, .. }] => *port,
            other => panic!("{other:?}"),
        }
    };
    let flow = tcp(ip(10, 0, 0, 2), ip(10, 0, 2, 5), 777);
    // Bootstrapping: no probe for ToR 2 yet: the shortest-path ECMP choice.
    let first = fwd(&mut sw, us(1), flow.clone());
    assert!(first == 2 || first == 3);
    // Probes make uplink 3 the best hop for ToR 2 ...
    probe_in(&mut sw, us(10), 3, 2, 1);
    // ... but the flowlet in progress stays where it is.
    assert_eq!(fwd(&mut sw, us(50), flow.clone()), first);
    // After a gap longer than the flowlet timeout, it moves to hop 3.
    assert_eq!(fwd(&mut sw, us(200), flow.clone()), 3);
    // Uplink 2 becomes better: packets within the flowlet stay on 3.
    probe_in(&mut sw, us(210), 2, 2, 0);
    for t in (220..600).step_by(50) {
        assert_eq!(fwd(&mut sw, us(t), flow.clone()), 3);
    }
    assert_eq!(fwd(&mut sw, us(800), flow.clone()), 2);
    // Two data packets started a flowlet by their gap (at 200 and 800 us).
    let h = hula_handles(&info);
    assert_eq!(
        sw.pipeline().read_counter(h.new_data_flowlets, 0).packets,
        2
    );
    // Traffic to a local host: the host port.
    assert_eq!(
        fwd(&mut sw, us(900), tcp(ip(10, 0, 2, 5), ip(10, 0, 0, 3), 1)),
        1
    );
    // A probe from an uplink ends at the ToR (consumed, not forwarded).
    let out = probe_in(&mut sw, us(950), 2, 3, 7);
    assert!(matches!(&out[..], [Emit::Consumed(_)]));
    sw.assert_no_violations();
}

#[test]
fn a_packet_from_upstream_never_goes_back_up() {
    let info = agg();
    let mut sw = build_with("hula", &SchemeParams::default(), &info);
    // The best hop to ToR 1 (same pod) is up, through spine port 3.
    probe_in(&mut sw, us(10), 3, 1, 3);
    let mut out = Vec::new();
    // From ToR 0 (downstream): up to the spine, as HULA chose.
    sw.ingress(
        us(20),
        0,
        tcp(ip(10, 0, 0, 2), ip(10, 0, 1, 2), 5),
        &mut out,
    );
    assert!(matches!(out[0], Emit::Enqueue { port: 3, .. }));
    // From a spine: down on the shortest path (port 1), never back up.
    out.clear();
    sw.ingress(
        us(20),
        2,
        tcp(ip(10, 0, 2, 2), ip(10, 0, 1, 2), 6),
        &mut out,
    );
    assert!(matches!(out[0], Emit::Enqueue { port: 1, .. }));
    sw.assert_no_violations();
}

#[test]
fn a_tor_sends_a_probe_on_every_uplink_each_interval() {
    let params = SchemeParams::default();
    let mut sw = build_with("hula", &params, &tor());
    let mut sent = Vec::new();
    while let Some(d) = sw.next_deadline() {
        if d > us(1000) {
            break;
        }
        let mut out = Vec::new();
        sw.on_timer(d, &mut out);
        for e in out {
            if let Emit::Enqueue { port, pkt, .. } = e {
                assert_eq!(pkt.size, 64);
                assert!(pkt.switch_made);
                assert_eq!(hula::probe_header(&pkt), Some((0, 0)));
                sent.push((d, port));
            }
        }
    }
    let want: Vec<(SimTime, PortNo)> = (0..=5)
        .flat_map(|k| [(us(200 * k), 2), (us(200 * k), 3)])
        .collect();
    assert_eq!(sent, want);
    assert_eq!(sw.stats().generated, 6);
    assert_eq!(sw.stats().injected, 12);
}

#[test]
fn hula_parameters_are_checked() {
    let mut params = SchemeParams::default();
    params.hula.tau_us = Some(us(300));
    let rng = RngStreams::new(3).stream(StreamKind::Switch, 0);
    let e = build_kind(
        "hula",
        &params,
        &agg(),
        rng.clone(),
        ControlPlaneConfig::default(),
    );
    assert!(e.err().unwrap().contains("twice"));
    let mut params = SchemeParams::default();
    params.hula.tor_slots = 2;
    let e = build_kind("hula", &params, &agg(), rng, ControlPlaneConfig::default());
    assert!(e.err().unwrap().contains("tor_slots"));
}

// ---- conga ----

/// A leaf-spine leaf (rack `r` of 2), hosts 10.0.r.2/.3 on ports 0, 1,
/// uplinks 2, 3 (to spines 0 and 1).
fn leaf(r: u8) -> SwitchInfo {
    let mut info = tor();
    info.id = r as u32;
    info.rack = Some(r as u32);
    info.pod = None;
    info.rack_pods = Default::default();
    info.rack_prefixes = (0..2).map(|r| ip(10, 0, r, 0)).collect();
    info.n_racks = 2;
    let other = 1 - r;
    info.routes = vec![
        Route {
            prefix: ip(10, 0, r, 2),
            len: 32,
            ports: vec![0],
            rack: Some(r as u32),
        },
        Route {
            prefix: ip(10, 0, r, 3),
            len: 32,
            ports: vec![1],
            rack: Some(r as u32),
        },
        Route {
            prefix: ip(10, 0, other, 0),
            len: 24,
            ports: vec![2, 3],
            rack: Some(other as u32),
        },
    ];
    info
}

fn conga_handles(info: &SwitchInfo) -> crate::conga::Conga {
    let mut pipe = pisanet_pisa::Pipeline::new("conga");
    crate::conga::Conga::new(&mut pipe, &SchemeParams::default(), info, false).unwrap()
}

fn enq(out: &[Emit]) -> (PortNo, Packet) {
    match out {
        [Emit::Enqueue { port, pkt, .. }] => (*port, pkt.clone()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn conga_feedback_loop_steers_new_flowlets() {
    let params = SchemeParams::default();
    let (a_info, b_info) = (leaf(0), leaf(1));
    let (ha, hb) = (conga_handles(&a_info), conga_handles(&b_info));
    let mut a = build_with("conga", &params, &a_info);
    let mut b = build_with("conga", &params, &b_info);
    // 1. Leaf A encapsulates a host's packet towards leaf B.
    let mut out = Vec::new();
    a.ingress(
        us(10),
        0,
        tcp(ip(10, 0, 0, 2), ip(10, 0, 1, 2), 40),
        &mut out,
    );
    let (port, pkt) = enq(&out);
    let hdr = CongaHeader::of(&pkt).unwrap();
    assert_eq!((hdr.src_leaf, hdr.lbtag as PortNo + 2), (0, port));
    assert_eq!(pkt.size, 1518 + 8);
    // 2. Leaf B sees it arrive over lbtag 1 with CE 5 (a congested spine
    // downlink): Congestion-From-Leaf[A][1] = 5; B decapsulates.
    let mut c2 = tcp(ip(10, 0, 0, 2), ip(10, 0, 1, 2), 40);
    CongaHeader {
        lbtag: 1,
        ce: 5,
        fb: None,
        ..hdr
    }
    .push(&mut c2);
    out.clear();
    b.ingress(us(20), 3, c2, &mut out);
    let (port, pkt) = enq(&out);
    assert_eq!((port, pkt.ext().is_none(), pkt.size), (0, true, 1518));
    assert_eq!(b.pipeline().read_register(hb.congestion_from_leaf, 1), 5);
    // 3. B's reverse traffic to A carries the entries round robin: lbtag 0
    // (metric 0), then lbtag 1 (metric 5).
    let mut fbs = Vec::new();
    for k in 0..2u16 {
        out.clear();
        b.ingress(
            us(30),
            0,
            tcp(ip(10, 0, 1, 2), ip(10, 0, 0, 2), 80 + k),
            &mut out,
        );
        let (_, pkt) = enq(&out);
        fbs.push(CongaHeader::of(&pkt).unwrap());
    }
    assert_eq!(fbs[0].fb, Some((0, 0)));
    assert_eq!(fbs[1].fb, Some((1, 5)));
    // 4. A learns Congestion-To-Leaf[B] via uplink 1 = 5 ...
    for f in &fbs {
        let mut p = tcp(ip(10, 0, 1, 2), ip(10, 0, 0, 2), 80);
        f.push(&mut p);
        out.clear();
        a.ingress(us(40), 2, p, &mut out);
    }
    assert_eq!(
        a.pipeline().read_register(ha.congestion_to_leaf[1], 1) >> 32,
        5
    );
    // 5. ... and every new flowlet to B now takes uplink 0.
    for sport in 100..140 {
        out.clear();
        a.ingress(
            us(50),
            1,
            tcp(ip(10, 0, 0, 3), ip(10, 0, 1, 3), sport),
            &mut out,
        );
        assert_eq!(enq(&out).0, 2, "sport {sport}");
    }
    // 6. With the metric aged out, both uplinks are used again.
    let later = us(50) + params.conga.age + us(1);
    let mut ports = std::collections::BTreeSet::new();
    for sport in 200..240 {
        out.clear();
        a.ingress(
            later,
            1,
            tcp(ip(10, 0, 0, 3), ip(10, 0, 1, 3), sport),
            &mut out,
        );
        ports.insert(enq(&out).0);
    }
    assert_eq!(ports.into_iter().collect::<Vec<_>>(), vec![2, 3]);
    a.assert_no_violations();
    b.assert_no_violations();
}

#[test]
fn conga_egress_raises_ce_to_the_port_metric() {
    let params = SchemeParams::default();
    let mut spine = build_with(
        "conga",
        &params,
        &SwitchInfo {
            id: 9,
            n_ports: 2,
            port_rates: vec![BitRate::from_gbps(10.0); 2],
            tier: 1,
            peer_tier: vec![0, 0],
            n_racks: 2,
            ..Default::default()
        },
    );
    // Port 1 at line rate for longer than tau: metric 7 of 7.
    let mut t = SimTime::ZERO;
    let mut last = None;
    while t < us(600) {
        let mut p = tcp(1, 2, 3);
        CongaHeader {
            lbtag: 0,
            ce: 2,
            ..Default::default()
        }
        .push(&mut p);
        let mut out = Vec::new();
        spine.egress(t, 1, p, DeqInfo::default(), &mut out);
        last = Some(out);
        t += SimTime::from_ns(1221);
    }
    let out = last.unwrap();
    let Emit::Transmit(p) = &out[0] else { panic!() };
    assert_eq!(CongaHeader::of(p).unwrap().ce, 7);
    // A first packet on an idle port keeps the CE it carries.
    let mut p = tcp(1, 2, 3);
    CongaHeader {
        lbtag: 0,
        ce: 2,
        ..Default::default()
    }
    .push(&mut p);
    let mut out = Vec::new();
    spine.egress(t, 0, p, DeqInfo::default(), &mut out);
    let Emit::Transmit(p) = &out[0] else { panic!() };
    assert_eq!(CongaHeader::of(p).unwrap().ce, 2);
}

#[test]
fn conga_prime_is_conga_in_the_pod_and_flowlet_ecmp_across() {
    let params = SchemeParams::default();
    let info = tor();
    let mut sw = build_with("conga_prime", &params, &info);
    let mut out = Vec::new();
    // Same pod (rack 1): CONGA, with an lbtag and feedback.
    sw.ingress(
        us(10),
        0,
        tcp(ip(10, 0, 0, 2), ip(10, 0, 1, 2), 5),
        &mut out,
    );
    let (_, p) = enq(&out);
    let h = CongaHeader::of(&p).unwrap();
    assert!(h.lbtag < 2 && h.fb.is_some());
    // Other pod (rack 2): flowlet ECMP; the hash travels in the header and
    // changes with each flowlet.
    let flow = tcp(ip(10, 0, 0, 2), ip(10, 0, 2, 2), 6);
    let mut hashes = Vec::new();
    for k in 0..6 {
        out.clear();
        let t = us(100 + 300 * k);
        sw.ingress(t, 0, flow.clone(), &mut out);
        let (port, p) = enq(&out);
        let h = CongaHeader::of(&p).unwrap();
        assert_eq!((h.lbtag, h.fb), (LBTAG_ECMP, None));
        // Within the flowlet, the same hash and port.
        out.clear();
        sw.ingress(t + us(5), 0, flow.clone(), &mut out);
        let (port2, p2) = enq(&out);
        assert_eq!((port2, CongaHeader::of(&p2).unwrap().hash), (port, h.hash));
        hashes.push(h.hash);
    }
    hashes.dedup();
    assert_eq!(hashes.len(), 6);
    // An aggregation switch picks its uplink from the carried hash.
    let mut a = build_with("conga_prime", &params, &agg());
    let mut ports = std::collections::BTreeSet::new();
    for hash in 0..64u32 {
        let mut p = tcp(ip(10, 0, 0, 2), ip(10, 0, 2, 2), 6);
        CongaHeader {
            lbtag: LBTAG_ECMP,
            hash: hash.rotate_left(11),
            ..Default::default()
        }
        .push(&mut p);
        out.clear();
        a.ingress(us(1), 0, p, &mut out);
        ports.insert(enq(&out).0);
    }
    assert_eq!(ports.into_iter().collect::<Vec<_>>(), vec![2, 3]);
    // Plain conga refuses 3-tier topologies.
    let rng = RngStreams::new(3).stream(StreamKind::Switch, 0);
    let e = build_kind("conga", &params, &info, rng, ControlPlaneConfig::default());
    assert!(e.err().unwrap().contains("conga_prime"));
    sw.assert_no_violations();
}

#[test]
fn hula_and_conga_resource_reports() {
    let r = resources("hula").unwrap();
    let names: Vec<&str> = r.registers.iter().map(|x| x.spec.name).collect();
    assert_eq!(
        names,
        vec!["best_path", "flowlet_time", "flowlet_hop", "last_sent"]
    );
    let t: Vec<&str> = r.tables.iter().map(|x| x.name).collect();
    assert!(
        t.contains(&"hula_mcast") && t.contains(&"get_dst_tor"),
        "{t:?}"
    );
    let r = resources("conga_prime").unwrap();
    assert!(r
        .registers
        .iter()
        .any(|x| x.spec.name == "congestion_from_leaf"));
}

/// Why `scheme.flowlet_id` defaults to "random" (docs/schemes/hula.md,
/// "Flowlet ids"). Flowlet ECMP hashes (flowlet id, 5-tuple) with crc32, and
/// CRC is affine: an id step from even to odd flips one input bit, so it
/// changes the hash by a constant that does not depend on the flow. For the
/// id's lowest bit that constant has bits 0, 11 and 22 clear, the bits that
/// pick a member of a 2-way group at tiers 0, 1 and 2 (`l3::member_hash`).
#[test]
fn with_a_crc_an_even_to_odd_flowlet_id_step_keeps_the_path_at_every_tier() {
    let flows = [
        tcp(ip(10, 0, 0, 2), ip(10, 1, 0, 3), 40_001),
        tcp(ip(10, 0, 1, 5), ip(10, 1, 1, 7), 40_002),
        tcp(ip(10, 1, 1, 7), ip(10, 0, 1, 5), 80),
    ];
    let hash = |id: u16, p: &Packet| {
        let input = l3::push_five_tuple(pisanet_pisa::HashInput::new().u16(id), p);
        pisanet_pisa::HashAlgo::Crc32.compute(input.bytes())
    };
    let pick = |h: u32, tier: u8| l3::member_hash(h, tier) % 2;
    let mut moves = 0;
    for p in &flows {
        for id in 0..64u16 {
            for tier in 0..3 {
                let (a, b) = (pick(hash(id, p), tier), pick(hash(id + 1, p), tier));
                if id % 2 == 0 {
                    assert_eq!(a, b, "id {id} -> {}, tier {tier}", id + 1);
                } else if a != b {
                    moves += 1;
                }
            }
        }
    }
    // Odd -> even ids do move flows (about half of the time per tier).
    assert!(moves > 3 * 32 * 3 / 4, "{moves}");
}

/// The programs: with `FlowletId::Increment` (HULA section 6 as written) a
/// flow on a 2-way group never moves when its id goes from even to odd;
/// with the default `Random` every new flowlet draws its path afresh, so
/// about half of all new flowlets move, at either parity.
#[test]
fn random_flowlet_ids_let_every_new_flowlet_move() {
    // flowlet_ecmp and conga_prime (across pods) on a ToR with 2 uplinks.
    for kind in ["flowlet_ecmp", "conga_prime"] {
        for mode in [FlowletId::Increment, FlowletId::Random] {
            let params = SchemeParams {
                flowlet_id: mode,
                ..SchemeParams::default()
            };
            let mut sw = build_with(kind, &params, &tor());
            let flow = tcp(ip(10, 0, 0, 2), ip(10, 0, 2, 2), 6);
            let mut out = Vec::new();
            let ports: Vec<PortNo> = (0..201)
                .map(|k| {
                    out.clear();
                    // One packet per flowlet: 300 us apart, T_f = 100 us.
                    sw.ingress(us(1000 + 300 * k), 0, flow.clone(), &mut out);
                    enq(&out).0
                })
                .collect();
            // Flowlet k (from 0) has id k + 1 under Increment; count moves
            // into flowlets k + 1 with an odd id (from an even one) and with
            // an even id.
            let (mut to_odd, mut to_even) = (0, 0);
            for k in 0..200 {
                if ports[k] != ports[k + 1] {
                    if (k + 2) % 2 == 1 {
                        to_odd += 1;
                    } else {
                        to_even += 1;
                    }
                }
            }
            let what = format!("{kind} {mode:?}: {to_odd} to odd, {to_even} to even");
            match mode {
                FlowletId::Increment => {
                    assert_eq!(to_odd, 0, "{what}");
                    assert!(to_even > 25, "{what}");
                }
                // 100 transitions of each parity, each moving with p = 1/2.
                FlowletId::Random => assert!(
                    (30..=70).contains(&to_odd) && (30..=70).contains(&to_even),
                    "{what}"
                ),
            }
            sw.assert_no_violations();
        }
    }
}
