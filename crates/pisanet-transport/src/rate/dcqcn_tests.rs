//! State-machine tests of DCQCN's reaction and notification points against
//! hand-computed values.

use super::*;
use pisanet_net::packet::{Ecn, Udp, L4};
use proptest::prelude::*;

fn us(v: u64) -> SimTime {
    SimTime::from_us(v)
}
fn gb(v: u64) -> BitRate {
    BitRate::from_bps(v * 1_000_000_000)
}
const G: f64 = 1.0 / 256.0;

fn data(ecn: Ecn) -> Packet {
    let mut p = Packet {
        flow: 7,
        size: 1518,
        l4: L4::Udp(Udp {
            sport: 10000,
            dport: 4791,
            payload: 1472,
            psn: 0,
            ack_req: false,
        }),
        ..Default::default()
    };
    p.ip.src = 0x0a00_0002;
    p.ip.dst = 0x0a00_0103;
    p.ip.proto = PROTO_UDP;
    p.ip.ecn = ecn;
    p
}

fn cnp(now: SimTime) -> Packet {
    cnp_for(now, &data(Ecn::Ce))
}

/// A 40 Gb/s sender with a 1000 B byte counter, cut twice at time zero:
/// Rc = 10, Rt = 20 Gb/s (alpha = 1 on both CNPs).
fn cut_twice() -> DcqcnReactionPoint {
    let params = DcqcnParams {
        byte_counter: 1000,
        ..Default::default()
    };
    let mut rp = DcqcnReactionPoint::new(&params, gb(40), gb(40));
    rp.on_feedback(SimTime::ZERO, &cnp(SimTime::ZERO));
    rp.on_feedback(SimTime::ZERO, &cnp(SimTime::ZERO));
    rp
}

#[test]
fn cnp_cuts_by_alpha_over_two_and_updates_alpha() {
    let mut rp = DcqcnReactionPoint::new(&DcqcnParams::default(), gb(40), gb(40));
    assert_eq!(rp.timer_deadline(), None, "no timer before the first CNP");
    // Only CNPs count.
    rp.on_feedback(SimTime::ZERO, &data(Ecn::Ce));
    assert_eq!(rp.rate(), gb(40));
    // alpha = 1: Rc = 40 (1 - 1/2) = 20; Rt = 40; alpha = (1 - g) 1 + g = 1.
    rp.on_feedback(SimTime::ZERO, &cnp(SimTime::ZERO));
    assert_eq!((rp.rate(), rp.target()), (gb(20), gb(40)));
    assert_eq!(rp.alpha(SimTime::ZERO), 1.0);
    assert_eq!(rp.timer_deadline(), Some(us(55)));
    // No CNP for K = 55 us: alpha = (1 - g) alpha, once per K.
    assert_eq!(rp.alpha(SimTime::from_ps(us(55).ps() - 1)), 1.0);
    assert_eq!(rp.alpha(us(55)), 1.0 - G);
    assert_eq!(rp.alpha(us(110)), (1.0 - G) * (1.0 - G));
    // A CNP at 110 us cuts by the decayed alpha, then raises it.
    let a = (1.0 - G) * (1.0 - G);
    let rc = rp.rate().bps();
    rp.on_feedback(us(110), &cnp(us(110)));
    let want = (rc as f64 * (1.0 - a / 2.0)).round() as u64;
    assert_eq!(rp.rate().bps(), want);
    assert_eq!(rp.target().bps(), rc);
    assert_eq!(rp.alpha(us(110)), (1.0 - G) * a + G);
    // ... and restarts the decay from there.
    assert_eq!(rp.alpha(us(164)), (1.0 - G) * a + G);
    assert_eq!(rp.alpha(us(165)), (1.0 - G) * ((1.0 - G) * a + G));
    assert_eq!(rp.cnps(), 2);
}

#[test]
fn timer_events_fast_recovery_then_additive_increase() {
    let mut rp = cut_twice();
    assert_eq!((rp.rate(), rp.target()), (gb(10), gb(20)));
    // An early wake-up does nothing.
    rp.on_timer(us(54));
    assert_eq!(rp.counts(), (0, 0));
    // T = 1..5: fast recovery towards Rt = 20: 15, 17.5, 18.75, 19.375, 19.6875.
    let want = [
        15_000_000_000u64,
        17_500_000_000,
        18_750_000_000,
        19_375_000_000,
        19_687_500_000,
    ];
    for (i, w) in want.into_iter().enumerate() {
        let t = us(55 * (i as u64 + 1));
        assert_eq!(rp.timer_deadline(), Some(t));
        rp.on_timer(t);
        assert_eq!(rp.rate().bps(), w, "T = {}", i + 1);
        assert_eq!(rp.target(), gb(20));
    }
    // T = 6 > F, BC = 0: additive increase, Rt = 20 G + 5 M.
    rp.on_timer(us(330));
    assert_eq!(rp.counts(), (6, 0));
    assert_eq!(rp.target().bps(), 20_005_000_000);
    assert_eq!(rp.rate().bps(), (20_005_000_000 + 19_687_500_000) / 2);
}

#[test]
fn byte_counter_and_timer_together_reach_hyper_increase() {
    let mut rp = cut_twice();
    // BC = 1..5 (1000 B each): fast recovery; BC = 6: additive increase.
    rp.on_bytes_sent(SimTime::ZERO, 5 * 1000 + 999);
    assert_eq!(rp.counts(), (0, 5));
    assert_eq!(rp.rate().bps(), 19_687_500_000);
    rp.on_bytes_sent(SimTime::ZERO, 1);
    assert_eq!(rp.target().bps(), 20_005_000_000);
    let mut rc = (20_005_000_000u64 + 19_687_500_000).div_ceil(2);
    assert_eq!(rp.rate().bps(), rc);
    // T = 1..5 with BC = 6: one counter past F: additive increase each.
    let mut rt = 20_005_000_000u64;
    for i in 1..=5u64 {
        rp.on_timer(us(55 * i));
        rt += 5_000_000;
        rc = (rt + rc).div_ceil(2);
        assert_eq!((rp.target().bps(), rp.rate().bps()), (rt, rc), "T = {i}");
    }
    // T = 6, BC = 6: both past F: hyper increase with i = min - F = 1.
    rp.on_timer(us(330));
    assert_eq!(rp.counts(), (6, 6));
    rt += 50_000_000;
    rc = (rt + rc).div_ceil(2);
    assert_eq!((rp.target().bps(), rp.rate().bps()), (rt, rc));
    // BC = 7: min is still 6, i = 1.
    rp.on_bytes_sent(SimTime::ZERO, 1000);
    rt += 50_000_000;
    rc = (rt + rc).div_ceil(2);
    assert_eq!((rp.target().bps(), rp.rate().bps()), (rt, rc));
    // T = 7: min 7, i = 2.
    rp.on_timer(us(385));
    rt += 100_000_000;
    rc = (rt + rc).div_ceil(2);
    assert_eq!((rp.target().bps(), rp.rate().bps()), (rt, rc));
    // A CNP resets both counts and the timer.
    rp.on_feedback(us(400), &cnp(us(400)));
    assert_eq!(rp.counts(), (0, 0));
    assert_eq!(rp.timer_deadline(), Some(us(455)));
}

#[test]
fn recovery_stops_at_the_cap_and_the_timer_with_it() {
    let mut rp = DcqcnReactionPoint::new(&DcqcnParams::default(), gb(40), gb(10));
    assert_eq!(rp.rate(), gb(10));
    rp.on_feedback(SimTime::ZERO, &cnp(SimTime::ZERO));
    assert_eq!(rp.rate(), gb(5));
    let mut t = SimTime::ZERO;
    while let Some(d) = rp.timer_deadline() {
        assert!(d > t, "the deadline moves forward");
        t = d;
        rp.on_timer(t);
        assert!(rp.rate() <= gb(10) && rp.target() <= gb(10));
    }
    assert_eq!(rp.rate(), gb(10));
}

#[test]
fn rate_is_floored_at_the_minimum() {
    let mut rp = DcqcnReactionPoint::new(
        &DcqcnParams::default(),
        gb(40),
        BitRate::from_bps(300_000_000),
    );
    for want in [150_000_000, 100_000_000, 100_000_000] {
        rp.on_feedback(SimTime::ZERO, &cnp(SimTime::ZERO));
        assert_eq!(rp.rate().bps(), want);
    }
}

#[test]
fn np_sends_at_most_one_cnp_per_50_us() {
    let mut np = DcqcnNotificationPoint::new(&DcqcnNpParams::default());
    // Unmarked packets: nothing.
    assert!(np.on_packet(us(1), &data(Ecn::Ect0)).is_none());
    assert_eq!(np.timer_deadline(), None);
    // The first marked packet: a CNP at once, to the data's source.
    let c = np.on_packet(us(10), &data(Ecn::Ce)).expect("a CNP");
    assert!(is_cnp(&c));
    assert_eq!((c.ip.src, c.ip.dst), (0x0a00_0103, 0x0a00_0002));
    assert_eq!(c.five_tuple().3, 4791);
    assert_eq!(c.five_tuple().4, 10000);
    assert_eq!(
        (c.flow, c.size, c.sent_at, c.ip.ecn),
        (7, 64, us(10), Ecn::NotEct)
    );
    // Marked packets within 50 us: none now, one when the window ends.
    assert!(np.on_packet(us(20), &data(Ecn::Ce)).is_none());
    assert!(np.on_packet(us(59), &data(Ecn::Ce)).is_none());
    assert_eq!(np.timer_deadline(), Some(us(60)));
    assert!(np.on_timer(us(59)).is_none(), "early");
    let c = np.on_timer(us(60)).expect("the deferred CNP");
    assert_eq!((c.ip.dst, c.sent_at), (0x0a00_0002, us(60)));
    assert_eq!(np.timer_deadline(), None);
    assert!(np.on_timer(us(60)).is_none(), "stale");
    // The window restarted at 60 us; a mark at 109 us waits, at 110 us it would not.
    assert!(np.on_packet(us(109), &data(Ecn::Ce)).is_none());
    assert_eq!(np.timer_deadline(), Some(us(110)));
    assert!(np.on_packet(us(110), &data(Ecn::Ce)).is_some());
    assert_eq!(np.timer_deadline(), None);
    assert_eq!(np.cnps(), 3);
    // A window without marks sends nothing at its end.
    assert!(np.on_packet(us(200), &data(Ecn::Ce)).is_some());
    assert_eq!(np.timer_deadline(), None);
}

#[test]
fn defaults_are_dcqcns() {
    let p = DcqcnParams::default();
    assert_eq!(p.g, 1.0 / 256.0);
    assert_eq!((p.alpha_timer, p.increase_timer), (us(55), us(55)));
    assert_eq!(p.byte_counter, 10_000_000);
    assert_eq!(p.fast_recovery_steps, 5);
    assert_eq!(
        (p.rai_mbps, p.rhai_mbps, p.min_rate_mbps),
        (5.0, 50.0, 100.0)
    );
    assert_eq!(DcqcnNpParams::default().cnp_interval, us(50));
    assert!(p.validate().is_ok());
    let q: DcqcnParams =
        serde_json::from_str(r#"{"byte_counter_kb": 150, "alpha_timer_us": 10}"#).unwrap();
    assert_eq!((q.byte_counter, q.alpha_timer), (150_000, us(10)));
}

proptest! {
    /// Whatever CNPs, bytes and timers come, min rate <= Rc <= Rt <= cap,
    /// and 0 < alpha <= 1.
    #[test]
    fn rates_stay_ordered_and_bounded(ops in prop::collection::vec((0u8..3, 1u32..50_000), 1..200)) {
        let params = DcqcnParams { byte_counter: 20_000, ..Default::default() };
        let mut rp = DcqcnReactionPoint::new(&params, gb(40), gb(25));
        let mut now = SimTime::ZERO;
        for (op, x) in ops {
            now += SimTime::from_ns(x as u64);
            match op {
                0 => rp.on_feedback(now, &cnp(now)),
                1 => rp.on_bytes_sent(now, x),
                _ => rp.on_timer(now),
            }
            let (rc, rt) = (rp.rate().bps(), rp.target().bps());
            prop_assert!(100_000_000 <= rc && rc <= rt && rt <= 25_000_000_000, "rc {} rt {}", rc, rt);
            let a = rp.alpha(now);
            prop_assert!(a > 0.0 && a <= 1.0);
        }
    }
}

#[test]
fn scaling_keeps_fractions_of_the_link_and_the_timers() {
    // docs/schemes/p4qcn.md, "Scaling": the table's values.
    let d = DcqcnParams::default();
    let s = d.scaled_to(BitRate::from_bps(7_000_000));
    assert_eq!(mbps(s.rai_mbps), 875);
    assert_eq!(mbps(s.rhai_mbps), 8_750);
    assert_eq!(mbps(s.min_rate_mbps), 17_500);
    assert_eq!(s.byte_counter, 1_750);
    assert_eq!((s.g, s.fast_recovery_steps), (d.g, d.fast_recovery_steps));
    assert_eq!((s.alpha_timer, s.increase_timer), (us(55), us(55)));
    let s = d.scaled_to(gb(100));
    assert_eq!(
        (mbps(s.rai_mbps), mbps(s.rhai_mbps)),
        (12_500_000, 125_000_000)
    );
    assert_eq!(
        (mbps(s.min_rate_mbps), s.byte_counter),
        (250_000_000, 25_000_000)
    );
    assert_eq!(d.scaled_to(gb(40)), d);
}
