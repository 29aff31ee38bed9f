//! State-machine tests of P4QCN's reaction point against hand-computed rates.

use super::*;
use crate::rate::dcqcn::cnp_for;
use pisanet_net::packet::Ecn;
use proptest::prelude::*;

const T0: SimTime = SimTime::ZERO;

fn mb(v: u64) -> BitRate {
    BitRate::from_bps(v * 1_000_000)
}

/// A feedback as the P4QCN congestion point sends it: ECN 11.
fn fbp() -> Packet {
    let mut p = Packet::default();
    p.ip.ecn = Ecn::Ce;
    p
}

/// 100 Mb/s host and application, R_AI 5 Mb/s, 1500 B cycles: room for
/// active increase below the cap.
fn rp100() -> QcnReactionPoint {
    let params = QcnParams {
        byte_counter_kb: Some(1.5),
        rai_mbps: Some(5.0),
        ..Default::default()
    };
    QcnReactionPoint::new(&params, mb(100), mb(100))
}

fn cycle(rp: &mut QcnReactionPoint) {
    rp.on_bytes_sent(T0, 1500);
}

#[test]
fn feedback_halves_the_rate_and_remembers_the_old_one() {
    // Section 3.1.2, eq. 2 with beta = 1: Rt = Rold, Rc = Rc / 2.
    let mut rp = QcnReactionPoint::new(&QcnParams::default(), BitRate::from_bps(7_000_000), mb(4));
    assert_eq!(rp.rate(), mb(4));
    assert_eq!(rp.stage(), QcnStage::Unlimited);
    rp.on_feedback(T0, &fbp());
    assert_eq!(rp.rate(), mb(2));
    assert_eq!(rp.target(), mb(4));
    assert_eq!(rp.stage(), QcnStage::FastRecovery { cycles: 0 });
    // A second feedback: Rt is the rate just before it.
    rp.on_feedback(T0, &fbp());
    assert_eq!((rp.rate(), rp.target()), (mb(1), mb(2)));
    assert_eq!(rp.feedbacks(), 2);
}

#[test]
fn packets_without_ecn_11_are_not_feedback() {
    let mut rp = rp100();
    let mut p = fbp();
    for ecn in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1] {
        p.ip.ecn = ecn;
        rp.on_feedback(T0, &p);
    }
    assert_eq!(rp.rate(), mb(100));
    assert_eq!(rp.feedbacks(), 0);
    // A DCQCN CNP is feedback (the paper's 3-point variant keeps this RP).
    let mut data = Packet::default();
    data.ip.ecn = Ecn::Ce;
    rp.on_feedback(T0, &cnp_for(T0, &data));
    assert_eq!(rp.rate(), mb(50));
}

#[test]
fn beta_scales_the_cut() {
    let params = QcnParams {
        beta: 0.5,
        ..Default::default()
    };
    let mut rp = QcnReactionPoint::new(&params, mb(100), mb(80));
    rp.on_feedback(T0, &fbp());
    // 80 x (1 - 0.25) = 60.
    assert_eq!(rp.rate(), mb(60));
}

#[test]
fn five_fast_recovery_cycles_then_active_increase() {
    let mut rp = rp100();
    rp.on_feedback(T0, &fbp());
    rp.on_feedback(T0, &fbp());
    assert_eq!((rp.rate(), rp.target()), (mb(25), mb(50)));
    // Eq. 3 five times, Rt = 50 fixed: 37.5, 43.75, 46.875, 48.4375, 49.21875.
    let want = [37_500_000, 43_750_000, 46_875_000, 48_437_500, 49_218_750];
    for (i, w) in want.into_iter().enumerate() {
        // Less than a cycle's bytes changes nothing.
        rp.on_bytes_sent(T0, 1499);
        assert_eq!(
            rp.rate().bps(),
            if i == 0 { 25_000_000 } else { want[i - 1] }
        );
        rp.on_bytes_sent(T0, 1);
        assert_eq!(rp.rate().bps(), w, "cycle {}", i + 1);
        assert_eq!(rp.target(), mb(50));
    }
    assert_eq!(rp.stage(), QcnStage::ActiveIncrease);
    // Eq. 4: Rt = 55, Rc = (55 + 49.21875) / 2 = 52.109375.
    cycle(&mut rp);
    assert_eq!((rp.target(), rp.rate().bps()), (mb(55), 52_109_375));
    // Rt = 60, Rc = (60 + 52.109375) / 2 = 56.0546875, rounded up.
    cycle(&mut rp);
    assert_eq!((rp.target(), rp.rate().bps()), (mb(60), 56_054_688));
    // A feedback in active increase starts over from the current rate.
    rp.on_feedback(T0, &fbp());
    assert_eq!(rp.target().bps(), 56_054_688);
    assert_eq!(rp.rate().bps(), 28_027_344);
    assert_eq!(rp.stage(), QcnStage::FastRecovery { cycles: 0 });
}

#[test]
fn one_call_may_complete_several_cycles() {
    let mut rp = rp100();
    rp.on_feedback(T0, &fbp());
    rp.on_feedback(T0, &fbp());
    rp.on_bytes_sent(T0, 3 * 1500 + 700);
    assert_eq!(rp.rate().bps(), 46_875_000);
    assert_eq!(rp.stage(), QcnStage::FastRecovery { cycles: 3 });
    rp.on_bytes_sent(T0, 800);
    assert_eq!(rp.rate().bps(), 48_437_500);
}

#[test]
fn bytes_before_any_feedback_change_nothing() {
    let mut rp = rp100();
    rp.on_bytes_sent(T0, 1_000_000);
    assert_eq!(rp.rate(), mb(100));
    assert_eq!(rp.stage(), QcnStage::Unlimited);
    assert_eq!(rp.timer_deadline(), None);
}

#[test]
fn rate_is_capped_by_the_application_and_reaches_it() {
    let mut rp = QcnReactionPoint::new(&QcnParams::default(), BitRate::from_bps(7_000_000), mb(4));
    rp.on_feedback(T0, &fbp());
    for _ in 0..60 {
        rp.on_bytes_sent(T0, 1518);
        assert!(rp.rate() <= mb(4) && rp.target() <= mb(4));
    }
    assert_eq!(rp.rate(), mb(4), "back at the application's rate");
    assert_eq!(rp.stage(), QcnStage::ActiveIncrease);
}

#[test]
fn the_cap_is_the_line_rate_for_a_faster_application() {
    let rp = QcnReactionPoint::new(&QcnParams::default(), mb(10), mb(40));
    assert_eq!(rp.rate(), mb(10));
}

#[test]
fn rate_is_floored_at_the_minimum() {
    let params = QcnParams {
        min_rate_mbps: Some(1.5),
        ..Default::default()
    };
    let mut rp = QcnReactionPoint::new(&params, mb(100), mb(4));
    for want in [2_000_000, 1_500_000, 1_500_000] {
        rp.on_feedback(T0, &fbp());
        assert_eq!(rp.rate().bps(), want);
    }
}

#[test]
fn defaults_scale_with_the_line_rate() {
    let p = QcnParams::default();
    // The paper's links: R_AI = 5 Mb/s exactly; one frame per cycle.
    let l7 = BitRate::from_bps(7_000_000);
    assert_eq!(p.rai(l7), 5_000_000);
    assert_eq!(p.byte_counter(l7), 1518);
    assert_eq!(p.min_rate(l7), 7_000);
    // QCN's 150 KB at 10 Gb/s, in proportion above.
    assert_eq!(p.byte_counter(mb(10_000)), 150_000);
    assert_eq!(p.byte_counter(mb(40_000)), 600_000);
    assert_eq!(p.rai(mb(40_000)), 28_571_428_571);
    assert_eq!(p.min_rate(mb(100_000)), 100_000_000);
    assert!(QcnParams {
        beta: 0.0,
        ..p.clone()
    }
    .validate()
    .is_err());
    assert!(p.validate().is_ok());
}

#[test]
fn params_read_from_toml_with_defaults() {
    let p: QcnParams = serde_json::from_str(r#"{"rai_mbps": 2.5}"#).unwrap();
    assert_eq!(p.rai_mbps, Some(2.5));
    assert_eq!(p.fast_recovery_cycles, 5);
    assert!(serde_json::from_str::<QcnParams>(r#"{"rai": 2.5}"#).is_err());
}

proptest! {
    /// Whatever feedback and traffic come, min rate <= Rc <= Rt <= cap.
    #[test]
    fn rates_stay_ordered_and_bounded(ops in prop::collection::vec((any::<bool>(), 1u32..20_000), 1..200)) {
        let params = QcnParams { min_rate_mbps: Some(0.5), ..Default::default() };
        let mut rp = QcnReactionPoint::new(&params, mb(10), mb(8));
        for (fb, bytes) in ops {
            if fb {
                rp.on_feedback(T0, &fbp());
            } else {
                rp.on_bytes_sent(T0, bytes);
            }
            let (rc, rt) = (rp.rate().bps(), rp.target().bps());
            prop_assert!(500_000 <= rc && rc <= rt && rt <= 8_000_000, "rc {} rt {}", rc, rt);
        }
    }
}
