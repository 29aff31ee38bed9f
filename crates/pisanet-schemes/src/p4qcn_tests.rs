//! Golden-packet tests of `p4qcn` (P4QCN's congestion point) and `dcqcn_cp`
//! (DCQCN's), their resource reports, and a component-level direction test
//! of the 2-point against the 3-point architecture (P4QCN section 4.2.4).

use crate::blocks::PROB_ONE;
use crate::p4qcn::{feedback_header, P4qcnParams};
use crate::*;
use pisanet_engine::{BitRate, RngStreams, StreamKind};
use pisanet_net::packet::Ecn;
use pisanet_net::{Packet, PortNo, Udp, L4, PROTO_UDP};
use pisanet_pisa::{ControlPlaneConfig, DeqInfo, Emit, QueueMeta, Route, Switch, SwitchInfo};
use pisanet_transport::rate::dcqcn::{
    is_cnp, DcqcnNotificationPoint, DcqcnNpParams, DcqcnParams, DcqcnReactionPoint,
};
use pisanet_transport::rate::qcn::{QcnParams, QcnReactionPoint};
use pisanet_transport::rate::ReactionPoint;

fn ip(a: u8, b: u8, c: u8, d: u8) -> u32 {
    u32::from_be_bytes([a, b, c, d])
}

/// The flow's source (host11) and destination (on the same ToR here).
const SRC: u32 = 0x0a00_0002;
const DST: u32 = 0x0a00_0003;

/// A ToR: hosts 10.0.0.2 and .3 on ports 0 and 1, uplinks 2 and 3 towards
/// 10.0.1.0/24.
fn tor() -> SwitchInfo {
    let route = |prefix, len, ports: Vec<PortNo>| Route {
        prefix,
        len,
        ports,
        rack: None,
    };
    SwitchInfo {
        id: 0x1_0004,
        n_ports: 4,
        port_rates: vec![BitRate::from_bps(7_000_000); 4],
        routes: vec![
            route(SRC, 32, vec![0]),
            route(DST, 32, vec![1]),
            route(ip(10, 0, 1, 0), 24, vec![2, 3]),
        ],
        uplinks: vec![2, 3],
        tier: 0,
        ..Default::default()
    }
}

fn switch_with(kind: &str, params: &SchemeParams) -> Switch {
    let info = tor();
    let rng = RngStreams::new(9).stream(StreamKind::Switch, info.id as u64);
    build_kind(kind, params, &info, rng, ControlPlaneConfig::default()).unwrap()
}

fn p4qcn(p: P4qcnParams) -> Switch {
    switch_with(
        "p4qcn",
        &SchemeParams {
            p4qcn: p,
            ..Default::default()
        },
    )
}

fn udp(src: u32, dst: u32, sport: u16, ecn: Ecn) -> Packet {
    let mut p = Packet {
        flow: 42,
        size: 1518,
        l4: L4::Udp(Udp {
            sport,
            dport: 4791,
            payload: 1472,
            psn: 0,
            ack_req: false,
        }),
        ..Default::default()
    };
    p.ip.src = src;
    p.ip.dst = dst;
    p.ip.proto = PROTO_UDP;
    p.ip.ecn = ecn;
    p.ip.ttl = 64;
    p
}

/// Ingress: the single packet queued (port, packet, metadata).
fn through(
    sw: &mut Switch,
    now: SimTime,
    port: PortNo,
    pkt: Packet,
) -> (PortNo, Packet, QueueMeta) {
    let mut out = Vec::new();
    sw.ingress(now, port, pkt, &mut out);
    assert_eq!(out.len(), 1, "{out:?}");
    match out.pop().unwrap() {
        Emit::Enqueue { port, pkt, meta } => (port, pkt, meta),
        other => panic!("expected Enqueue, got {other:?}"),
    }
}

/// Egress of a queued packet that found `q` packets ahead of it; then the
/// pending work (recirculation) up to 1 ms later. Returns the transmitted
/// packet and every packet queued by the pending work.
fn egress(
    sw: &mut Switch,
    now: SimTime,
    queued: &(PortNo, Packet, QueueMeta),
    q: u32,
) -> (Packet, Vec<(PortNo, Packet)>) {
    let deq = DeqInfo {
        enq_timestamp: now,
        enq_qdepth: q,
        deq_qdepth: q,
        deq_timedelta: SimTime::ZERO,
        meta: queued.2,
    };
    let mut out = Vec::new();
    sw.egress(now, queued.0, queued.1.clone(), deq, &mut out);
    let sent = match out.as_slice() {
        [Emit::Transmit(p)] => p.clone(),
        other => panic!("expected one Transmit, got {other:?}"),
    };
    let mut later = Vec::new();
    let until = now + SimTime::from_ms(1);
    while let Some(d) = sw.next_deadline().filter(|&d| d <= until) {
        sw.on_timer(d, &mut later);
    }
    let queued = later
        .into_iter()
        .map(|e| match e {
            Emit::Enqueue { port, pkt, .. } => (port, pkt),
            other => panic!("expected Enqueue, got {other:?}"),
        })
        .collect();
    (sent, queued)
}

fn counter(sw: &Switch, name: &str) -> u64 {
    sw.pipeline()
        .counter_totals()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map_or(0, |(_, c)| c.packets)
}

// ---- p4qcn: eq. 1 and the feedback packet ----

#[test]
fn no_feedback_at_or_below_qmin() {
    // Section 4: Qmin = Qmax = 11. A packet that finds 11 packets ahead
    // (q = Qmin) triggers nothing.
    let mut sw = p4qcn(P4qcnParams::default());
    let t = SimTime::from_us(10);
    let pkt = udp(SRC, DST, 10000, Ecn::NotEct);
    for q in 0..=11 {
        let queued = through(&mut sw, t, 0, pkt.clone());
        assert_eq!(queued.0, 1, "routed to the destination's port");
        let (sent, fb) = egress(&mut sw, t, &queued, q);
        assert_eq!(sent, queued.1, "the data packet leaves unchanged (q = {q})");
        assert!(fb.is_empty(), "q = {q}");
    }
    assert_eq!(sw.stats().cloned, 0);
    sw.assert_no_violations();
}

#[test]
fn feedback_above_qmax_goes_to_the_source_with_ecn_11() {
    let mut sw = p4qcn(P4qcnParams::default());
    let t = SimTime::from_us(10);
    let queued = through(&mut sw, t, 0, udp(SRC, DST, 10000, Ecn::Ect0));
    let (sent, fb) = egress(&mut sw, t, &queued, 12);
    // The data packet goes on untouched.
    assert_eq!(sent, queued.1);
    assert_eq!(sent.ip.ecn, Ecn::Ect0);
    // One FBP, queued at the source's port 0.
    assert_eq!(fb.len(), 1, "{fb:?}");
    let (port, f) = &fb[0];
    assert_eq!(*port, 0);
    assert_eq!(f.ip.ecn, Ecn::Ce, "ECN 11 (section 3.1.1)");
    assert_eq!((f.ip.src, f.ip.dst), (DST, SRC), "to the flow's source");
    assert_eq!(f.five_tuple(), (DST, SRC, PROTO_UDP, 4791, 10000));
    assert_eq!(f.payload(), 0);
    assert_eq!(f.size, 64, "a minimum-size frame");
    assert_eq!(feedback_header(f), Some((12, 0x0004)));
    assert_eq!((f.flow, f.prio), (42, 0));
    assert!(f.switch_made);
    assert!(f.sent_at > t, "made after the recirculation");
    assert_eq!(sw.stats().recirculated, 1);
    assert_eq!(sw.stats().injected, 1);
    assert_eq!(counter(&sw, "p4qcn_feedbacks"), 1);
    // Deep queues (beyond Q_PFC too) keep triggering: another flow at q = 500.
    let queued = through(&mut sw, t, 2, udp(ip(10, 0, 1, 9), DST, 10000, Ecn::NotEct));
    assert_eq!(egress(&mut sw, t, &queued, 500).1.len(), 1);
    sw.assert_no_violations();
}

#[test]
fn feedback_to_a_remote_source_is_routed_up() {
    let mut sw = p4qcn(P4qcnParams::default());
    let remote = ip(10, 0, 1, 7);
    let t = SimTime::from_us(10);
    let queued = through(&mut sw, t, 2, udp(remote, DST, 10001, Ecn::NotEct));
    let (_, fb) = egress(&mut sw, t, &queued, 30);
    assert_eq!(fb.len(), 1);
    assert!(matches!(fb[0].0, 2 | 3), "an uplink (ECMP): {}", fb[0].0);
    assert_eq!(fb[0].1.ip.dst, remote);
}

#[test]
fn at_most_one_feedback_per_flow_every_n_us() {
    let mut sw = p4qcn(P4qcnParams::default()); // N = 50 us
    let t0 = SimTime::from_us(1000);
    let fb_at = |sw: &mut Switch, t: SimTime, src: u32, sport: u16| {
        let queued = through(sw, t, 0, udp(src, DST, sport, Ecn::NotEct));
        egress(sw, t, &queued, 40).1.len()
    };
    assert_eq!(fb_at(&mut sw, t0, SRC, 10000), 1);
    // Same (src, dst) within 50 us: none, whatever the ports (flows by IP).
    assert_eq!(fb_at(&mut sw, t0 + SimTime::from_us(1), SRC, 10000), 0);
    assert_eq!(fb_at(&mut sw, t0 + SimTime::from_us(20), SRC, 12345), 0);
    let just_before = SimTime::from_ps((t0 + SimTime::from_us(50)).ps() - 1);
    assert_eq!(fb_at(&mut sw, just_before, SRC, 10000), 0);
    // Another flow has its own budget.
    assert_eq!(
        fb_at(&mut sw, t0 + SimTime::from_us(1), ip(10, 0, 1, 8), 10000),
        1
    );
    // N us after the first: again.
    assert_eq!(fb_at(&mut sw, t0 + SimTime::from_us(50), SRC, 10000), 1);
    assert_eq!(fb_at(&mut sw, t0 + SimTime::from_us(60), SRC, 10000), 0);
    // A feedback at time zero counts too (the register's valid bit).
    let mut sw = p4qcn(P4qcnParams::default());
    assert_eq!(fb_at(&mut sw, SimTime::ZERO, SRC, 10000), 1);
    assert_eq!(fb_at(&mut sw, SimTime::from_us(1), SRC, 10000), 0);
    sw.assert_no_violations();
}

#[test]
fn probability_rises_linearly_between_qmin_and_qmax() {
    // Eq. 1 with alpha = 1 / (Qmax - Qmin): 0 at Qmin, (q - Qmin) / 10
    // between, 1 from Qmax; N = 0 so that every packet may trigger.
    let params = P4qcnParams {
        qmin_pkts: 10,
        qmax_pkts: 20,
        feedback_interval: SimTime::ZERO,
        ..Default::default()
    };
    let mut sw = p4qcn(params);
    let n = 4000u32;
    // One packet per microsecond: the recirculation port never backs up.
    let mut t = SimTime::ZERO;
    for (q, want) in [
        (10, 0.0),
        (11, 0.1),
        (15, 0.5),
        (19, 0.9),
        (20, 1.0),
        (25, 1.0),
    ] {
        let mut hits = 0;
        for _ in 0..n {
            t += SimTime::from_us(1);
            let queued = through(&mut sw, t, 0, udp(SRC, DST, 10000, Ecn::NotEct));
            hits += egress(&mut sw, t, &queued, q).1.len();
        }
        let got = hits as f64 / n as f64;
        // Binomial: 4 standard deviations of 4000 draws at p = 0.5 is 0.032.
        assert!((got - want).abs() < 0.035, "q = {q}: {got} against {want}");
    }
    sw.assert_no_violations();
}

#[test]
fn eq1_thresholds_are_exact() {
    let mut pipe = pisanet_pisa::Pipeline::new("t");
    let p = crate::blocks::DepthProbability::declare(&mut pipe, "feedback_prob");
    let ranges = |writes: Vec<pisanet_pisa::Write>| -> Vec<(u64, u64, u64)> {
        writes
            .into_iter()
            .map(|w| match w {
                pisanet_pisa::Write::TableEntry { entry, .. } => match entry.key[0] {
                    pisanet_pisa::FieldMatch::Range { lo, hi } => (lo, hi, entry.action.params[0]),
                    _ => panic!("a range"),
                },
                _ => panic!("a table entry"),
            })
            .collect()
    };
    // Qmin 10, Qmax 14, pmax 50%: alpha = 0.5 / 4; q = 11, 12, 13 -> 1/8,
    // 2/8, 3/8 of 2^16; from 14 on, 1.
    let params = P4qcnParams {
        qmin_pkts: 10,
        qmax_pkts: 14,
        pmax_pct: 50,
        ..Default::default()
    };
    assert_eq!(
        ranges(p.entries(10, 14, params.always_from(), 50)),
        vec![
            (11, 11, PROB_ONE / 8),
            (12, 12, PROB_ONE / 4),
            (13, 13, 3 * PROB_ONE / 8),
            (14, u32::MAX as u64, PROB_ONE)
        ]
    );
    // Qmin = Qmax = 11: one entry, "always" from 12.
    let d = P4qcnParams::default();
    assert_eq!(
        ranges(p.entries(11, 11, d.always_from(), 100)),
        vec![(12, u32::MAX as u64, PROB_ONE)]
    );
    // dcqcn_cp's ramp includes Kmax (probability Pmax there).
    assert_eq!(
        ranges(p.entries(4, 6, 7, 1)),
        vec![(5, 5, 328), (6, 6, 655), (7, u32::MAX as u64, PROB_ONE)]
    );
}

#[test]
fn no_feedback_for_feedback_or_tcp() {
    let mut sw = p4qcn(P4qcnParams::default());
    let t = SimTime::from_us(10);
    let queued = through(&mut sw, t, 0, udp(SRC, DST, 10000, Ecn::NotEct));
    let (_, fb) = egress(&mut sw, t, &queued, 20);
    // The FBP itself crossing a congested queue (here: port 0) triggers nothing.
    let fbp = fb[0].1.clone();
    let queued = through(&mut sw, t, 1, fbp);
    assert_eq!(queued.0, 0);
    assert!(egress(&mut sw, t + SimTime::from_us(100), &queued, 50)
        .1
        .is_empty());
    // Nor does TCP.
    let mut tcp = udp(SRC + 5, DST, 1, Ecn::NotEct);
    tcp.ip.proto = pisanet_net::PROTO_TCP;
    tcp.l4 = L4::Tcp(pisanet_net::Tcp::default());
    let queued = through(&mut sw, t, 0, tcp);
    assert!(egress(&mut sw, t, &queued, 50).1.is_empty());
    assert_eq!(sw.stats().cloned, 1);
}

#[test]
fn p4qcn_params_are_checked() {
    let bad = |p: P4qcnParams| p.validate().unwrap_err();
    assert!(bad(P4qcnParams {
        qmin_pkts: 12,
        qmax_pkts: 11,
        ..Default::default()
    })
    .contains("scheme.p4qcn.qmax_pkts"));
    assert!(bad(P4qcnParams {
        qmax_pkts: 11 + 4096,
        ..Default::default()
    })
    .contains("at most"));
    assert!(bad(P4qcnParams {
        flow_slots: 1000,
        ..Default::default()
    })
    .contains("power of two"));
    assert!(P4qcnParams::default().validate().is_ok());
    let p: P4qcnParams =
        serde_json::from_str(r#"{"qmin_pkts": 5, "feedback_interval_us": 2.5}"#).unwrap();
    assert_eq!(
        (p.qmin_pkts, p.qmax_pkts, p.feedback_interval),
        (5, 11, SimTime::from_ns(2500))
    );
}

// ---- dcqcn_cp: RED-like marking ----

fn dcqcn_cp(kmin: u32, kmax: u32, pmax: u32) -> Switch {
    switch_with(
        "dcqcn_cp",
        &SchemeParams {
            dcqcn_cp: dcqcn_cp::DcqcnCpParams {
                kmin_pkts: kmin,
                kmax_pkts: kmax,
                pmax_pct: pmax,
            },
            ..Default::default()
        },
    )
}

#[test]
fn dcqcn_cp_marks_like_red() {
    let mut sw = dcqcn_cp(10, 20, 50);
    let n = 4000u32;
    // Fig. 4: 0 up to Kmin, Pmax (q - Kmin) / (Kmax - Kmin) up to Kmax, then 1.
    for (q, want) in [(10, 0.0), (15, 0.25), (20, 0.5), (21, 1.0), (300, 1.0)] {
        let mut marked = 0;
        for i in 0..n {
            let t = SimTime::from_ns(i as u64);
            let queued = through(&mut sw, t, 0, udp(SRC, DST, 10000, Ecn::Ect0));
            let (sent, more) = egress(&mut sw, t, &queued, q);
            assert!(more.is_empty());
            marked += (sent.ip.ecn == Ecn::Ce) as u32;
        }
        let got = marked as f64 / n as f64;
        assert!((got - want).abs() < 0.035, "q = {q}: {got} against {want}");
    }
    // Not-ECT packets are never marked.
    let queued = through(&mut sw, SimTime::ZERO, 0, udp(SRC, DST, 10000, Ecn::NotEct));
    assert_eq!(
        egress(&mut sw, SimTime::ZERO, &queued, 1000).0.ip.ecn,
        Ecn::NotEct
    );
    assert!(counter(&sw, "dcqcn_cp_marks") > 0);
    sw.assert_no_violations();
}

#[test]
fn dcqcn_cp_defaults_and_checks() {
    let d = dcqcn_cp::DcqcnCpParams::default();
    // DCQCN's 5 KB / 200 KB / 1% in 1518 B frames, rounded up.
    assert_eq!((d.kmin_pkts, d.kmax_pkts, d.pmax_pct), (4, 132, 1));
    assert_eq!(5000u32.div_ceil(1518), 4);
    assert_eq!(200_000u32.div_ceil(1518), 132);
    assert!(d.validate().is_ok());
    assert!(dcqcn_cp::DcqcnCpParams {
        kmin_pkts: 5,
        kmax_pkts: 4,
        pmax_pct: 1
    }
    .validate()
    .unwrap_err()
    .contains("scheme.dcqcn_cp.kmax_pkts"));
}

// ---- resources ----

#[test]
fn resource_reports_of_p4qcn_and_dcqcn_cp() {
    let r = resources("p4qcn").unwrap();
    let regs: Vec<(&str, u64)> = r.registers.iter().map(|x| (x.spec.name, x.bits)).collect();
    assert_eq!(regs, vec![("last_feedback", 49 * 4096)]);
    let tables: Vec<&str> = r.tables.iter().map(|t| t.name).collect();
    assert_eq!(tables, vec!["ipv4_lpm", "feedback_prob"]);
    assert_eq!((r.ingress_stages, r.egress_stages), (2, 2));
    let text = r.to_string();
    assert!(
        text.contains("last_feedback") && text.contains("feedback_prob"),
        "{text}"
    );
    let r = resources("dcqcn_cp").unwrap();
    assert!(r.registers.is_empty());
    let tables: Vec<&str> = r.tables.iter().map(|t| t.name).collect();
    assert_eq!(tables, vec!["ipv4_lpm", "mark_prob"]);
}

// ---- 2-point against 3-point (section 4.2.4) ----

/// Component-level direction test: the congestion point, feedback path and
/// reaction point of each architecture, with the Fig. 10 path host11 - T1 -
/// L1 - S1 - L3 - T4 - host41 at 7 Mb/s and T4's port to host41 congested.
/// Each feedback reaches its RP after the links it crosses (serialization
/// of its own size plus 1 us propagation per link; no queueing on the way
/// back, which favours neither): the FBP crosses the 5 links T4 -> host11;
/// in the 3-point design the marked data packet first crosses T4 -> host41,
/// whose NP sends a CNP across all 6. NOTE: a hand delay model, not the
/// event loop; the loop-level test comes with the rate-based hosts.
#[test]
fn two_point_cuts_the_sources_rate_sooner_than_three_point() {
    let link = BitRate::from_bps(7_000_000);
    let prop = SimTime::from_us(1);
    let cross = |bytes: u32, links: u64| {
        let per = link.tx_time(bytes as u64) + prop;
        SimTime::from_ps(per.ps() * links)
    };
    let app = BitRate::from_bps(4_000_000);
    let congested = SimTime::from_ms(100);
    let q = 12; // the first packet beyond the thresholds

    // 2-point: T4 runs p4qcn; the FBP goes straight back.
    let mut sw = p4qcn(P4qcnParams::default());
    let queued = through(&mut sw, congested, 0, udp(SRC, DST, 10000, Ecn::Ect0));
    let (_, fb) = egress(&mut sw, congested, &queued, q);
    let fbp = &fb[0].1;
    let made = fbp.sent_at;
    let fbp_at_source = made + cross(fbp.size, 5);
    let mut qcn = QcnReactionPoint::new(&QcnParams::default(), link, app);
    qcn.on_feedback(fbp_at_source, fbp);

    // 3-point: T4 runs dcqcn_cp with the same threshold (Kmin = Kmax = 11);
    // the marked packet goes on to host41, whose NP answers.
    let mut sw = dcqcn_cp(11, 11, 100);
    let queued = through(&mut sw, congested, 0, udp(SRC, DST, 10000, Ecn::Ect0));
    let (marked, more) = egress(&mut sw, congested, &queued, q);
    assert!(more.is_empty());
    assert_eq!(marked.ip.ecn, Ecn::Ce);
    let at_receiver = congested + cross(marked.size, 1);
    let mut np = DcqcnNotificationPoint::new(&DcqcnNpParams::default());
    let cnp = np.on_packet(at_receiver, &marked).expect("a CNP at once");
    assert!(is_cnp(&cnp));
    let cnp_at_source = at_receiver + cross(cnp.size, 6);
    let mut dcqcn = DcqcnReactionPoint::new(&DcqcnParams::default().scaled_to(link), link, app);
    dcqcn.on_feedback(cnp_at_source, &cnp);

    // Both cut the source to half (alpha starts at 1), at different times.
    assert_eq!(qcn.rate(), BitRate::from_bps(2_000_000));
    assert_eq!(dcqcn.rate(), BitRate::from_bps(2_000_000));
    assert!(
        fbp_at_source < cnp_at_source,
        "2-point at {fbp_at_source}, 3-point at {cnp_at_source}"
    );
    // The gap is the data packet's trip to the receiver and the CNP's extra
    // link, less the recirculation: more than a full-size frame's time.
    assert!(cnp_at_source - fbp_at_source > link.tx_time(1518));
}
