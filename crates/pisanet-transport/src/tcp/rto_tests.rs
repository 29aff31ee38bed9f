use super::*;

fn us(x: u64) -> SimTime {
    SimTime::from_us(x)
}

#[test]
fn first_sample_sets_srtt_and_half_rttvar() {
    let mut e = RtoEstimator::new(us(3000), us(1), us(1_000_000));
    assert_eq!(e.rto(), us(3000));
    e.on_sample(us(100));
    assert_eq!(e.srtt(), Some(us(100)));
    assert_eq!(e.rttvar(), us(50));
    // SRTT + 4 * RTTVAR = 100 + 200.
    assert_eq!(e.rto(), us(300));
}

#[test]
fn later_samples_use_the_old_srtt_for_rttvar() {
    let mut e = RtoEstimator::new(us(3000), us(1), us(1_000_000));
    e.on_sample(us(100));
    e.on_sample(us(180));
    // RTTVAR = 3/4 * 50 + 1/4 * |100 - 180| = 37.5 + 20 = 57.5
    assert_eq!(e.rttvar(), SimTime::from_ns(57_500));
    // SRTT = 7/8 * 100 + 1/8 * 180 = 110
    assert_eq!(e.srtt(), Some(us(110)));
    assert_eq!(e.rto(), SimTime::from_ns(110_000 + 4 * 57_500));
}

#[test]
fn min_rto_clamps_small_estimates() {
    let mut e = RtoEstimator::new(us(3000), SimTime::from_ms(1), SimTime::from_ms(100));
    e.on_sample(us(20));
    assert_eq!(e.rto(), SimTime::from_ms(1));
    // The initial RTO is clamped too.
    let e = RtoEstimator::new(us(10), SimTime::from_ms(1), SimTime::from_ms(100));
    assert_eq!(e.rto(), SimTime::from_ms(1));
}

#[test]
fn backoff_doubles_up_to_max_and_a_sample_ends_it() {
    let mut e = RtoEstimator::new(
        SimTime::from_ms(1),
        SimTime::from_ms(1),
        SimTime::from_ms(5),
    );
    e.on_timeout();
    assert_eq!(e.rto(), SimTime::from_ms(2));
    e.on_timeout();
    assert_eq!(e.rto(), SimTime::from_ms(4));
    e.on_timeout();
    assert_eq!(e.rto(), SimTime::from_ms(5));
    assert_eq!(e.backoffs(), 3);
    e.on_sample(us(100));
    assert_eq!(e.backoffs(), 0);
    assert_eq!(e.rto(), SimTime::from_ms(1));
}

#[test]
fn clock_granularity_floors_the_variance_term_not_the_rto() {
    // ns-3's G = 1 ms: RTO = SRTT + max(G, 4 RTTVAR) = 100 + 1000 us,
    // above the 1 ms minimum RTO that alone would give 1000 us.
    let mut ns3 = RtoEstimator::new(us(3000), us(1000), us(1_000_000)).with_granularity(us(1000));
    ns3.on_sample(us(100));
    assert_eq!(ns3.rto(), us(1100));
    // A variance term above G wins: 4 * RTTVAR = 4 * 400 = 1600 us.
    let mut big = RtoEstimator::new(us(3000), us(1000), us(1_000_000)).with_granularity(us(1000));
    big.on_sample(us(800));
    assert_eq!(big.rto(), us(800 + 1600));
    // Default G (one tick): the minimum RTO clamps SRTT + 4 RTTVAR = 300.
    let mut default = RtoEstimator::new(us(3000), us(1000), us(1_000_000));
    default.on_sample(us(100));
    assert_eq!(default.rto(), us(1000));
    // A zero granularity means the default tick, not a zero floor.
    let zero = RtoEstimator::new(us(3000), us(1000), us(1_000_000)).with_granularity(SimTime::ZERO);
    assert_eq!(zero, RtoEstimator::new(us(3000), us(1000), us(1_000_000)));
}

#[test]
fn reset_backoff_recomputes_from_the_estimate_without_a_sample() {
    let mut e = RtoEstimator::new(us(3000), us(1000), us(60_000_000)).with_granularity(us(1000));
    // Before any sample: nothing to recompute from.
    e.on_timeout();
    e.reset_backoff();
    assert_eq!((e.rto(), e.backoffs()), (us(6000), 1));
    // SRTT 300 us, RTTVAR 150 us: RTO = 300 + max(1000, 600) = 1300 us.
    e.on_sample(us(300));
    assert_eq!(e.rto(), us(1300));
    for _ in 0..5 {
        e.on_timeout();
    }
    assert_eq!((e.rto(), e.backoffs()), (us(41_600), 5));
    e.reset_backoff();
    assert_eq!((e.rto(), e.backoffs()), (us(1300), 0));
    // The samples are unchanged.
    assert_eq!(e.samples(), (1, us(300)));
}
