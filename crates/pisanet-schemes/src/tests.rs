//! Golden-packet tests ("given these entries, this packet in on port p,
//! expect it out on port q", as p4c's `.stf` files) and behaviour tests of
//! the three programs, plus their resource reports.

use crate::*;
use crc::{Crc, CRC_32_ISO_HDLC};
use pisanet_engine::{RngStreams, StreamKind};
use pisanet_net::{Packet, PortNo, Tcp, L4, PROTO_TCP};
use pisanet_pisa::{ControlPlaneConfig, Emit, Route, Switch, SwitchInfo};

fn ip(a: u8, b: u8, c: u8, d: u8) -> u32 {
    u32::from_be_bytes([a, b, c, d])
}

/// A leaf: hosts 10.0.0.1 and .2 on ports 0 and 1, `n_up` uplinks from port 2
/// towards the other leaves' /24s.
fn leaf(n_up: u16) -> SwitchInfo {
    let uplinks: Vec<PortNo> = (2..2 + n_up).collect();
    SwitchInfo {
        id: 11,
        n_ports: 2 + n_up,
        port_rates: vec![pisanet_engine::BitRate::from_gbps(10.0); 2 + n_up as usize],
        routes: vec![
            Route {
                prefix: ip(10, 0, 0, 1),
                len: 32,
                ports: vec![0],
                rack: None,
            },
            Route {
                prefix: ip(10, 0, 0, 2),
                len: 32,
                ports: vec![1],
                rack: None,
            },
            Route {
                prefix: ip(10, 0, 1, 0),
                len: 24,
                ports: uplinks.clone(),
                rack: None,
            },
            Route {
                prefix: ip(10, 0, 2, 0),
                len: 24,
                ports: uplinks.clone(),
                rack: None,
            },
        ],
        uplinks,
        tier: 0,
        ..Default::default()
    }
}

fn switch(kind: &str, info: &SwitchInfo) -> Switch {
    let rng = RngStreams::new(5).stream(StreamKind::Switch, info.id as u64);
    build_kind(
        kind,
        &SchemeParams::default(),
        info,
        rng,
        ControlPlaneConfig::default(),
    )
    .unwrap()
}

fn tcp(src: u32, dst: u32, sport: u16, dport: u16) -> Packet {
    let mut p = Packet {
        size: 1518,
        ..Default::default()
    };
    p.ip.src = src;
    p.ip.dst = dst;
    p.ip.proto = PROTO_TCP;
    p.l4 = L4::Tcp(Tcp {
        sport,
        dport,
        payload: 1460,
        ..Default::default()
    });
    p
}

/// Sends `pkt` in on `port` at `now`: the port it is queued at, or None if dropped.
fn forward(sw: &mut Switch, now: SimTime, port: PortNo, pkt: Packet) -> Option<PortNo> {
    let mut out = Vec::new();
    sw.ingress(now, port, pkt, &mut out);
    assert_eq!(out.len(), 1);
    match &out[0] {
        Emit::Enqueue { port, .. } => Some(*port),
        Emit::Drop { .. } => None,
        other => panic!("{other:?}"),
    }
}

/// The hash the data plane must compute, from the crc crate directly.
fn five_tuple_bytes(p: &Packet) -> Vec<u8> {
    let (s, d, pr, sp, dp) = p.five_tuple();
    let mut b = Vec::new();
    b.extend(s.to_be_bytes());
    b.extend(d.to_be_bytes());
    b.push(pr);
    b.extend(sp.to_be_bytes());
    b.extend(dp.to_be_bytes());
    b
}

fn crc32(bytes: &[u8]) -> u32 {
    Crc::<u32>::new(&CRC_32_ISO_HDLC).checksum(bytes)
}

fn chi_square(counts: &[u32]) -> f64 {
    let n: u32 = counts.iter().sum();
    let e = n as f64 / counts.len() as f64;
    counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum()
}

// ---- ecmp ----

#[test]
fn ecmp_golden_packets() {
    let info = leaf(2);
    let mut sw = switch("ecmp", &info);
    // Down to a host: the /32.
    assert_eq!(
        forward(
            &mut sw,
            SimTime::ZERO,
            2,
            tcp(ip(10, 0, 1, 1), ip(10, 0, 0, 2), 5000, 80)
        ),
        Some(1)
    );
    assert_eq!(
        forward(
            &mut sw,
            SimTime::ZERO,
            3,
            tcp(ip(10, 0, 2, 1), ip(10, 0, 0, 1), 5000, 80)
        ),
        Some(0)
    );
    // Up: the uplink the crc32 of the 5-tuple picks (a tier-0 switch uses
    // the hash unrotated).
    for sport in [1000u16, 1001, 2222, 40000] {
        let pkt = tcp(ip(10, 0, 0, 1), ip(10, 0, 1, 9), sport, 80);
        let h = crc32(&five_tuple_bytes(&pkt)) as usize;
        let want = info.uplinks[h % 2];
        assert_eq!(
            forward(&mut sw, SimTime::ZERO, 0, pkt),
            Some(want),
            "sport {sport}"
        );
    }
    // No route: the default action drops.
    assert_eq!(
        forward(
            &mut sw,
            SimTime::ZERO,
            0,
            tcp(ip(10, 0, 0, 1), ip(192, 168, 0, 1), 1, 2)
        ),
        None
    );
    sw.assert_no_violations();
}

#[test]
fn ecmp_keeps_each_flow_on_one_path_and_spreads_flows() {
    let info = leaf(4);
    let mut sw = switch("ecmp", &info);
    let flow = tcp(ip(10, 0, 0, 1), ip(10, 0, 1, 1), 33_000, 80);
    let first = forward(&mut sw, SimTime::ZERO, 0, flow.clone());
    for i in 0..1000 {
        assert_eq!(
            forward(&mut sw, SimTime::from_ns(i * 1200), 0, flow.clone()),
            first
        );
    }
    let mut counts = [0u32; 4];
    for i in 0..20_000u32 {
        let pkt = tcp(
            ip(10, 0, 0, 1 + (i % 2) as u8),
            ip(10, 0, 1 + (i % 2) as u8, (i % 250) as u8),
            1024 + (i / 2) as u16,
            80,
        );
        counts[forward(&mut sw, SimTime::ZERO, 0, pkt).unwrap() as usize - 2] += 1;
    }
    // 3 degrees of freedom: p = 0.001 at 16.27.
    assert!(chi_square(&counts) < 16.27, "{counts:?}");
    sw.assert_no_violations();
}

#[test]
fn ecmp_choices_at_successive_tiers_are_independent() {
    // A leaf (tier 0) and an aggregation switch (tier 1), two uplinks each:
    // without per-tier bit slices every flow would take the same-numbered
    // uplink at both (hash polarization); with them the four combinations
    // are equally likely.
    let leaf_info = leaf(2);
    let agg_info = SwitchInfo {
        id: 20,
        tier: 1,
        ..leaf(2)
    };
    let (mut l, mut a) = (switch("ecmp", &leaf_info), switch("ecmp", &agg_info));
    let mut joint = [0u32; 4];
    for i in 0..8000u32 {
        let pkt = tcp(
            ip(10, 0, 0, 1),
            ip(10, 0, 2, (i % 200) as u8),
            1024 + i as u16,
            80,
        );
        let up1 = forward(&mut l, SimTime::ZERO, 0, pkt.clone()).unwrap() - 2;
        let up2 = forward(&mut a, SimTime::ZERO, 0, pkt).unwrap() - 2;
        joint[(up1 * 2 + up2) as usize] += 1;
    }
    assert!(chi_square(&joint) < 16.27, "{joint:?}");
}

#[test]
fn ecmp_agent_removes_a_failed_uplink_after_the_write_latency() {
    let info = leaf(2);
    let mut sw = switch("ecmp", &info);
    let cp = ControlPlaneConfig::default();
    let flows: Vec<Packet> = (0..64)
        .map(|i| tcp(ip(10, 0, 0, 1), ip(10, 0, 1, 1), 2000 + i, 80))
        .collect();
    let used = |sw: &mut Switch, now| {
        let mut ports: Vec<PortNo> = flows
            .iter()
            .map(|f| forward(sw, now, 0, f.clone()).unwrap())
            .collect();
        ports.sort_unstable();
        ports.dedup();
        ports
    };
    assert_eq!(used(&mut sw, SimTime::ZERO), vec![2, 3]);
    let t0 = SimTime::from_us(100);
    sw.port_status(t0, 3, false);
    // Until the write lands, the data plane still uses the dead port.
    assert_eq!(used(&mut sw, t0), vec![2, 3]);
    let due = sw.next_deadline().unwrap();
    assert_eq!(due, t0 + cp.write_latency);
    sw.on_timer(due, &mut Vec::new());
    assert_eq!(used(&mut sw, due), vec![2]);
    sw.port_status(due, 3, true);
    let back = sw.next_deadline().unwrap();
    sw.on_timer(back, &mut Vec::new());
    assert_eq!(used(&mut sw, back), vec![2, 3]);
}

// ---- flowlet_ecmp ----

/// A 2-uplink leaf running `flowlet_ecmp` with `mode`, one TCP flow, and the
/// program's flowlet registers at that flow's slot.
struct FlowletLeaf {
    sw: Switch,
    info: SwitchInfo,
    flow: Packet,
    slot: u32,
    flowlet_id: pisanet_pisa::RegisterId,
    flowlet_time: pisanet_pisa::RegisterId,
}

impl FlowletLeaf {
    fn new(mode: FlowletId) -> Self {
        let info = leaf(2);
        let params = SchemeParams {
            flowlet_id: mode,
            ..SchemeParams::default() // 100 us
        };
        let mut pipe = pisanet_pisa::Pipeline::new("flowlet_ecmp");
        let prog = flowlet_ecmp::FlowletEcmp::new(&mut pipe, &params, &info).unwrap();
        let (flowlet_id, flowlet_time) = (prog.flowlet_id, prog.flowlet_time.register);
        let agent = prog.agent();
        let flow = tcp(ip(10, 0, 0, 1), ip(10, 0, 1, 7), 4321, 80);
        let slot = prog.slot(crc32(&five_tuple_bytes(&flow)));
        let rng = RngStreams::new(5).stream(StreamKind::Switch, 11);
        let sw = Switch::new(
            &info,
            pipe,
            Box::new(prog),
            Box::new(agent),
            rng,
            ControlPlaneConfig::default(),
            params.target,
        )
        .unwrap();
        FlowletLeaf {
            sw,
            info,
            flow,
            slot,
            flowlet_id,
            flowlet_time,
        }
    }

    /// Forwards the flow's packet at `t`: (uplink taken, flowlet id after it).
    fn send(&mut self, t: SimTime) -> (PortNo, u64) {
        let port = forward(&mut self.sw, t, 0, self.flow.clone()).unwrap();
        (
            port,
            self.sw.pipeline().read_register(self.flowlet_id, self.slot),
        )
    }

    /// Golden: the uplink crc32(flowlet id, 5-tuple) picks.
    fn uplink_of(&self, id: u64) -> PortNo {
        let mut bytes = (id as u16).to_be_bytes().to_vec();
        bytes.extend(five_tuple_bytes(&self.flow));
        self.info.uplinks[crc32(&bytes) as usize % 2]
    }
}

#[test]
fn flowlet_id_changes_only_after_the_idle_gap() {
    for mode in [FlowletId::Increment, FlowletId::Random] {
        let mut leaf = FlowletLeaf::new(mode);
        let us = SimTime::from_us;
        // (arrival, starts a flowlet): gaps of exactly the timeout keep the
        // flowlet; the first packet's gap is from time 0.
        let script = [
            (us(1000), true),
            (us(1050), false),
            (us(1150), false),
            (us(1251), true),
            (us(1300), false),
            (us(2000), true),
            (us(2000), false),
        ];
        let mut ids = Vec::new();
        let mut id = 0;
        for (t, new) in script {
            let (port, now) = leaf.send(t);
            assert_eq!(now != id, new, "{mode:?} at {t}: id {id} -> {now}");
            id = now;
            ids.push(id);
            let time = leaf
                .sw
                .pipeline()
                .read_register(leaf.flowlet_time, leaf.slot);
            assert_eq!(time, t.ps());
            assert_eq!(port, leaf.uplink_of(id), "{mode:?} at {t}");
        }
        if mode == FlowletId::Increment {
            assert_eq!(ids, [1, 1, 1, 2, 2, 3, 3]);
        }
        leaf.sw.assert_no_violations();
    }
}

#[test]
fn increment_flowlet_ids_wrap_at_16_bits() {
    let mut leaf = FlowletLeaf::new(FlowletId::Increment);
    // One packet per flowlet, 200 us apart (T_f = 100 us): flowlet n has id n.
    for n in 1..=65_537u64 {
        let (port, id) = leaf.send(SimTime::from_us(200 * n));
        assert_eq!(id, n % 65_536, "flowlet {n}");
        if n >= 65_535 {
            assert_eq!(port, leaf.uplink_of(id), "flowlet {n}");
        }
    }
    leaf.sw.assert_no_violations();
}

#[test]
fn flowlet_ecmp_moves_a_flow_only_between_flowlets() {
    let info = leaf(4);
    let mut sw = switch("flowlet_ecmp", &info);
    let flow = tcp(ip(10, 0, 0, 2), ip(10, 0, 2, 3), 777, 80);
    let mut t = SimTime::from_ms(1);
    let mut ports_per_flowlet = Vec::new();
    for _ in 0..40 {
        // A burst of 20 packets 1.2 us apart, then a 300 us pause.
        let mut burst = Vec::new();
        for _ in 0..20 {
            burst.push(forward(&mut sw, t, 1, flow.clone()).unwrap());
            t += SimTime::from_ns(1200);
        }
        assert!(
            burst.iter().all(|&p| p == burst[0]),
            "a flowlet split: {burst:?}"
        );
        ports_per_flowlet.push(burst[0]);
        t += SimTime::from_us(300);
    }
    let mut distinct = ports_per_flowlet.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        4,
        "flowlets should visit every uplink: {ports_per_flowlet:?}"
    );
    // Downward traffic is not hashed.
    assert_eq!(
        forward(
            &mut sw,
            t,
            3,
            tcp(ip(10, 0, 2, 3), ip(10, 0, 0, 2), 80, 777)
        ),
        Some(1)
    );
    sw.assert_no_violations();
}

#[test]
fn flowlet_slots_must_be_a_power_of_two() {
    let params = SchemeParams {
        flowlet_slots: 1000,
        ..Default::default()
    };
    let rng = RngStreams::new(5).stream(StreamKind::Switch, 0);
    let r = build_kind(
        "flowlet_ecmp",
        &params,
        &leaf(2),
        rng,
        ControlPlaneConfig::default(),
    );
    assert!(r.err().unwrap().contains("power of two"));
}

// ---- rps ----

#[test]
fn rps_sprays_uniformly_per_packet() {
    let info = leaf(4);
    let mut sw = switch("rps", &info);
    let flow = tcp(ip(10, 0, 0, 1), ip(10, 0, 1, 1), 5555, 80);
    let mut counts = [0u32; 4];
    let mut changes = 0;
    let mut last = None;
    let n = 40_000;
    for i in 0..n {
        let p = forward(&mut sw, SimTime::from_ns(i * 1200), 0, flow.clone()).unwrap();
        counts[p as usize - 2] += 1;
        if last.is_some_and(|l| l != p) {
            changes += 1;
        }
        last = Some(p);
    }
    assert!(chi_square(&counts) < 16.27, "{counts:?}");
    // Independent choices: a packet leaves on another port than the one
    // before it three times in four.
    let rate = changes as f64 / (n - 1) as f64;
    assert!((rate - 0.75).abs() < 0.01, "{rate}");
    // Golden: down to a host is not sprayed.
    assert_eq!(
        forward(
            &mut sw,
            SimTime::ZERO,
            4,
            tcp(ip(10, 0, 1, 1), ip(10, 0, 0, 1), 80, 5555)
        ),
        Some(0)
    );
    sw.assert_no_violations();
}

// ---- factory and reports ----

#[test]
fn unknown_schemes_are_refused() {
    assert!(resources("nope")
        .unwrap_err()
        .contains("ecmp, flowlet_ecmp, rps"));
    let rng = RngStreams::new(5).stream(StreamKind::Switch, 0);
    assert!(build_kind(
        "nope",
        &SchemeParams::default(),
        &leaf(2),
        rng,
        ControlPlaneConfig::default()
    )
    .is_err());
}

#[test]
fn resource_reports() {
    for kind in REGISTRY
        .iter()
        .filter(|r| r.declare.is_some())
        .map(|r| r.name)
    {
        let r = resources(kind).unwrap();
        assert_eq!(r.program, kind);
        let lpm = r.tables.iter().find(|t| t.name == "ipv4_lpm").unwrap();
        assert_eq!(
            (lpm.key_bits, lpm.entries, lpm.default_action),
            (32, l3::IPV4_LPM_SIZE, "drop")
        );
        assert_eq!(r.selectors[0].name, "ecmp_group");
        assert!(r.to_string().contains("ipv4_lpm"));
    }
    let ecmp = resources("ecmp").unwrap();
    assert!(ecmp.registers.is_empty());
    assert_eq!((ecmp.ingress_stages, ecmp.egress_stages), (2, 0));
    let fl = resources("flowlet_ecmp").unwrap();
    let bits: Vec<(&str, u64)> = fl.registers.iter().map(|r| (r.spec.name, r.bits)).collect();
    assert_eq!(
        bits,
        vec![("flowlet_time", 48 * 8192), ("flowlet_id", 16 * 8192)]
    );
    assert_eq!(fl.register_bits, 64 * 8192);
    assert_eq!(fl.ingress_stages, 4);
    let text = fl.to_string();
    assert!(
        text.contains("flowlet_time") && text.contains("393216 bits"),
        "{text}"
    );
    let rps = resources("rps").unwrap();
    assert!(rps.hashes.is_empty());
}

// ---- the ecmp program's ingress form ----

/// An `ecmp` switch built by hand (for the handles of its objects), with its
/// ingress form on or off.
fn ecmp_switch(info: &SwitchInfo, params: &SchemeParams, form: bool) -> (Switch, crate::l3::L3) {
    let mut pipe = pisanet_pisa::Pipeline::new("ecmp");
    let p = crate::ecmp::Ecmp::new(&mut pipe, params, info);
    let (l3, agent) = (p.l3, p.agent());
    let rng = RngStreams::new(5).stream(StreamKind::Switch, info.id as u64);
    let mut sw = Switch::new(
        info,
        pipe,
        Box::new(p),
        Box::new(agent),
        rng,
        ControlPlaneConfig::default(),
        params.target,
    )
    .unwrap();
    sw.use_ingress_form(form);
    assert_eq!(sw.runs_ingress_form(), form);
    (sw, l3)
}

#[test]
fn ecmp_switches_run_the_ingress_form() {
    let sw = switch("ecmp", &leaf(4));
    assert!(sw.runs_ingress_form());
    // A switch with its own clock runs the program's ingress.
    let mut sw = switch("ecmp", &leaf(4));
    sw.set_clock(pisanet_pisa::Clock {
        offset_ps: 5,
        drift_ppb: 0,
        resolution_ps: 1,
    });
    assert!(!sw.runs_ingress_form());
    // Other programs have no form.
    assert!(!switch("flowlet_ecmp", &leaf(4)).runs_ingress_form());
}

proptest::proptest! {
    /// The `ecmp` program's ingress form gives exactly what its `ingress`
    /// gives: the same port or drop (and drop reason), queue metadata,
    /// counters and violations, for any routes (nested prefixes, groups of
    /// any size, ports the switch lacks, the CPU port), tier and hash
    /// setting, groups emptied or rewritten by the control plane, and
    /// packets with and without ports.
    #[test]
    fn ecmp_form_equals_the_program(
        routes in proptest::collection::vec(
            (proptest::num::u32::ANY, 0u8..=32, proptest::collection::vec(0u16..20, 0..14)),
            1..12,
        ),
        tier in 0u8..4,
        per_tier in proptest::bool::ANY,
        groups in proptest::collection::vec((0u32..6, proptest::collection::vec(0u16..10, 0..12)), 0..3),
        extra in proptest::collection::vec(
            (proptest::num::u32::ANY, 0u8..=32, proptest::prop_oneof![
                proptest::strategy::Just(pisanet_pisa::CPU_PORT),
                proptest::strategy::Just(600u16),
                0u16..8,
            ]),
            0..3,
        ),
        pkts in proptest::collection::vec(
            (0usize..16, proptest::num::u32::ANY, proptest::num::u32::ANY, proptest::num::u16::ANY, proptest::num::u16::ANY, 0u8..3),
            1..200,
        ),
    ) {
        use pisanet_pisa::{matches, ActionCall, TableEntry, UpdateType, Write};
        let mask = |len: u8| if len == 0 { 0 } else { u32::MAX << (32 - len as u32) };
        let mut seen = std::collections::HashSet::new();
        let routes: Vec<Route> = routes
            .into_iter()
            .filter(|&(p, len, _)| seen.insert((p & mask(len), len)))
            .map(|(p, len, ports)| Route { prefix: p & mask(len), len, ports, rack: None })
            .collect();
        let info = SwitchInfo {
            id: 3,
            n_ports: 16,
            port_rates: vec![pisanet_engine::BitRate::from_gbps(10.0); 16],
            routes: routes.clone(),
            tier,
            ..Default::default()
        };
        let params = SchemeParams { ecmp_hash_per_tier: per_tier, ..SchemeParams::default() };
        let (mut a, l3) = ecmp_switch(&info, &params, true);
        let (mut b, _) = ecmp_switch(&info, &params, false);
        // `c` runs the form as the simulator does when nothing reads the
        // queue metadata (`form_unicast`: the port alone).
        let (mut c, _) = ecmp_switch(&info, &params, true);
        proptest::prop_assert!(c.form_only() && !b.form_only());
        // Control-plane writes after start: groups rewritten or emptied,
        // routes to the CPU or to ports the switch lacks.
        let mut writes = Vec::new();
        for (g, members) in groups {
            let members = members.into_iter().map(|p| ActionCall::new(crate::l3::SET_NHOP, [p as u64, 0, 0])).collect();
            writes.push(Write::SelectorGroup { selector: l3.ecmp_group, group: g, members });
        }
        for (p, len, port) in extra {
            if seen.insert((p & mask(len), len)) {
                let entry = TableEntry::new(
                    vec![matches::lpm((p & mask(len)) as u64, len)],
                    ActionCall::new(crate::l3::SET_NHOP, [port as u64, 0, 0]),
                );
                writes.push(Write::TableEntry { table: l3.ipv4_lpm, update: UpdateType::Insert, entry });
            }
        }
        let t = SimTime::from_us(100);
        for sw in [&mut a, &mut b, &mut c] {
            sw.cpu_write(SimTime::ZERO, writes.clone());
            let mut out = Vec::new();
            while let Some(d) = sw.next_deadline() {
                proptest::prop_assert!(d <= t);
                sw.on_timer(d, &mut out);
            }
        }
        for (i, &(r, host, src, sport, dport, l4)) in pkts.iter().enumerate() {
            // Mostly into a route's prefix, sometimes anywhere.
            let dst = match routes.get(r) {
                Some(route) => route.prefix | (host & !mask(route.len)),
                None => host,
            };
            let mut pkt = tcp(src, dst, sport, dport);
            match l4 {
                0 => {}
                1 => {
                    pkt.ip.proto = pisanet_net::PROTO_UDP;
                    pkt.l4 = L4::Udp(pisanet_net::Udp { sport, dport, ..Default::default() });
                }
                _ => pkt.l4 = L4::None,
            }
            let in_port = (i % 8) as PortNo;
            let (mut pa, mut pb, mut pc) = (pkt.clone(), pkt.clone(), pkt);
            let (mut oa, mut ob, mut oc) = (Vec::new(), Vec::new(), Vec::new());
            let ra = a.ingress_unicast(t, in_port, &mut pa, &mut oa);
            let rb = b.ingress_unicast(t, in_port, &mut pb, &mut ob);
            let rc = c.form_unicast(t, in_port, &mut pc, &mut oc);
            proptest::prop_assert_eq!(ra, rb);
            proptest::prop_assert_eq!(rc, ra.map(|(port, _)| port));
            if let Some((_, meta)) = ra {
                // What `form_unicast` does not build: the plain metadata.
                let plain = pisanet_pisa::QueueMeta {
                    user: [0; 2],
                    ingress_port: in_port,
                    instance_type: pisanet_pisa::InstanceType::Normal,
                    egress_rid: 0,
                };
                proptest::prop_assert_eq!(meta, plain);
            }
            proptest::prop_assert_eq!(format!("{pa:?}"), format!("{pb:?}"));
            proptest::prop_assert_eq!(format!("{pa:?}"), format!("{pc:?}"));
            proptest::prop_assert_eq!(format!("{oa:?}"), format!("{ob:?}"));
            proptest::prop_assert_eq!(format!("{oa:?}"), format!("{oc:?}"));
        }
        proptest::prop_assert_eq!(a.stats(), b.stats());
        proptest::prop_assert_eq!(a.stats(), c.stats());
        proptest::prop_assert_eq!(a.violations(), b.violations());
        proptest::prop_assert_eq!(a.violations(), c.violations());
        proptest::prop_assert_eq!(a.violations().1, 0);
    }
}
