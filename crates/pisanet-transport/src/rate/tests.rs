use super::*;
use pisanet_net::packet::PROTO_UDP;

fn ends() -> FlowEnds {
    FlowEnds {
        flow: 4,
        src_addr: 1,
        dst_addr: 2,
        sport: 5000,
        dport: 80,
        dscp: 0,
        prio: 2,
    }
}

fn feedback() -> Packet {
    let mut out = Vec::new();
    let mut s = RateSender::new(
        ends().reversed(),
        ReactionKind::Fixed.build(BitRate::from_gbps(1.0)),
        64,
        64,
        None,
    );
    s.on_start(SimTime::ZERO, &mut out);
    out.pop().unwrap()
}

/// Runs `s` with exact wake-ups until `until` or completion; returns the packets.
fn drive(s: &mut RateSender, until: SimTime) -> Vec<Packet> {
    let mut out = Vec::new();
    s.on_start(SimTime::ZERO, &mut out);
    while let Some(t) = s.timer_deadline() {
        if t > until {
            break;
        }
        s.on_timer(t, &mut out);
    }
    out
}

#[test]
fn halve_halves_on_every_feedback() {
    let mut rp = ReactionKind::Halve.build(BitRate::from_gbps(8.0));
    let fb = feedback();
    let mut want = 8_000_000_000u64;
    for i in 0..10 {
        rp.on_feedback(SimTime::from_us(i), &fb);
        want /= 2;
        assert_eq!(rp.rate().bps(), want, "after feedback {}", i + 1);
    }
    // Sending and timers do not change it.
    rp.on_bytes_sent(SimTime::from_us(20), 1500);
    assert_eq!(rp.timer_deadline(), None);
    assert_eq!(rp.rate().bps(), want);
}

#[test]
fn fixed_ignores_feedback() {
    let mut rp = ReactionKind::Fixed.build(BitRate::from_gbps(3.0));
    rp.on_feedback(SimTime::ZERO, &feedback());
    assert_eq!(rp.rate(), BitRate::from_gbps(3.0));
    assert_eq!(ReactionKind::from_name("halve"), Some(ReactionKind::Halve));
    assert_eq!(ReactionKind::from_name("cubic"), None);
    for name in REACTION_POINTS {
        assert_eq!(ReactionKind::from_name(name).unwrap().name(), *name);
    }
}

#[test]
fn fixed_rate_is_held_over_a_long_run() {
    // 1 s at 2.5 Gb/s in 1000-byte datagrams: the wire bytes sent by time t
    // stay within one datagram of rate x t.
    let rate = BitRate::from_gbps(2.5);
    let mut s = RateSender::new(
        ends(),
        ReactionKind::Fixed.build(rate),
        1000,
        u64::MAX,
        Some(SimTime::from_ms(1000)),
    );
    let out = drive(&mut s, SimTime::from_ms(2000));
    assert!(s.is_complete());
    let wire: u64 = out.iter().map(|p| p.size as u64).sum();
    let last = out.last().unwrap().sent_at;
    let achieved = (wire - out.last().unwrap().size as u64) as f64 * 8.0 / last.as_secs_f64();
    assert!(
        (achieved / rate.bps() as f64 - 1.0).abs() < 1e-6,
        "{achieved}"
    );
    // Nothing at or after the stop time.
    assert!(last < SimTime::from_ms(1000));
    assert!(out.iter().all(|p| p.prio == 2 && p.ip.proto == PROTO_UDP));
}

#[test]
fn a_rate_cut_reschedules_the_pending_datagram() {
    let mut s = RateSender::new(
        ends(),
        ReactionKind::Halve.build(BitRate::from_gbps(1.0)),
        1000 - 46,
        10_000,
        None,
    );
    let mut out = Vec::new();
    s.on_start(SimTime::ZERO, &mut out);
    // 1000 wire bytes at 1 Gb/s: 8 us.
    assert_eq!(s.timer_deadline(), Some(SimTime::from_us(8)));
    s.on_packet(SimTime::from_us(1), &feedback());
    assert_eq!(s.rate(), BitRate::from_gbps(0.5));
    assert_eq!(s.timer_deadline(), Some(SimTime::from_us(16)));
    // Bytes-limited: the sender ends with the last byte.
    let rest = drive(&mut s, SimTime::from_ms(10));
    assert!(s.is_complete());
    assert_eq!(s.sent_bytes(), 10_000);
    assert_eq!(out.len() + rest.len(), 11);
}

#[test]
fn receiver_counts_and_the_none_notifier_says_nothing() {
    let mut rx = RateReceiver::new(Notifier::None);
    let mut out = Vec::new();
    let mut s = RateSender::new(
        ends(),
        ReactionKind::Fixed.build(BitRate::from_gbps(1.0)),
        500,
        1200,
        None,
    );
    for p in drive(&mut s, SimTime::from_ms(1)) {
        rx.on_packet(SimTime::from_ms(2), &p, &mut out);
    }
    assert_eq!((rx.received_bytes(), rx.received_packets()), (1200, 3));
    assert!(out.is_empty());
    assert_eq!(rx.timer_deadline(), None);
}

#[test]
fn the_dcqcn_notifier_answers_ce_with_one_cnp_per_interval() {
    let p = RateParams::default();
    assert!(matches!(
        ReactionKind::Dcqcn.notifier(&p),
        Notifier::Dcqcn(_)
    ));
    assert!(matches!(
        ReactionKind::QcnCnp.notifier(&p),
        Notifier::Dcqcn(_)
    ));
    assert!(matches!(ReactionKind::Qcn.notifier(&p), Notifier::None));
    let mut rx = RateReceiver::new(ReactionKind::Dcqcn.notifier(&p));
    let mut s = RateSender::new(
        ends(),
        ReactionKind::Dcqcn.build(BitRate::from_gbps(1.0)),
        500,
        5000,
        None,
    );
    let mut data = drive(&mut s, SimTime::from_ms(1));
    // DCQCN's and qcn_cnp's data is ECN-capable, so a switch can mark it.
    assert!(data.iter().all(|d| d.ip.ecn == Ecn::Ect0));
    let mut out = Vec::new();
    // Ten CE-marked datagrams 10 us apart (0-90 us): a CNP at once, the
    // next when the 50 us window has passed (DCQCN section 3.1), and the
    // mark pending after that not before 100 us.
    for (i, d) in data.iter_mut().enumerate() {
        d.ip.ecn = Ecn::Ce;
        rx.on_packet(SimTime::from_us(10 * i as u64), d, &mut out);
        while let Some(t) = rx
            .timer_deadline()
            .filter(|&t| t <= SimTime::from_us(10 * i as u64 + 9))
        {
            rx.on_timer(t, &mut out);
        }
    }
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(out.iter().all(dcqcn::is_cnp));
    assert_eq!(out[0].ip.dst, ends().src_addr);
    // The CNPs cut the DCQCN sender's rate.
    let before = s.rate();
    s.on_packet(SimTime::from_us(200), &out[0]);
    assert!(s.rate() < before);
}

#[test]
fn the_qcn_reaction_points_react_to_feedback_by_name() {
    for name in ["qcn", "qcn_cnp"] {
        let kind = ReactionKind::from_name(name).unwrap();
        let mut rp = kind.build(BitRate::from_gbps(8.0));
        let mut fb = feedback();
        fb.ip.ecn = Ecn::Ce; // P4QCN's FBP: ECN 11
        rp.on_feedback(SimTime::ZERO, &fb);
        assert_eq!(
            rp.rate(),
            BitRate::from_gbps(4.0),
            "{name}: beta = 1 halves"
        );
        assert_eq!(rp.ecn_capable(), name == "qcn_cnp");
    }
}
