use super::*;

const MSS: u64 = 1000;

fn ack(acked: u64, snd_una: u64, snd_nxt: u64, ece: bool) -> AckEvent {
    AckEvent {
        acked,
        ece,
        snd_una,
        snd_nxt,
        in_recovery: false,
        cwnd_limited: true,
        now: SimTime::ZERO,
        srtt: None,
        slow_start_all_acked: false,
    }
}

#[test]
fn newreno_slow_start_adds_min_of_acked_and_mss() {
    let mut w = Window::new(MSS, 10);
    let mut cc = Cc::new(CcKind::NewReno);
    cc.on_ack(&mut w, &ack(500, 500, 10_000, false));
    assert_eq!(w.cwnd, 10_500);
    cc.on_ack(&mut w, &ack(3000, 3500, 10_000, false));
    assert_eq!(w.cwnd, 11_500);
}

#[test]
fn newreno_congestion_avoidance_counts_bytes() {
    let mut w = Window::new(MSS, 4);
    w.ssthresh = 4000;
    let mut cc = Cc::new(CcKind::NewReno);
    for i in 1..=3 {
        cc.on_ack(&mut w, &ack(1000, i * 1000, 8000, false));
        assert_eq!(w.cwnd, 4000);
    }
    cc.on_ack(&mut w, &ack(1000, 4000, 8000, false));
    assert_eq!(w.cwnd, 5000);
    assert_eq!(w.ca_bytes_acked, 0);
}

#[test]
fn no_growth_in_recovery() {
    let mut w = Window::new(MSS, 4);
    let mut cc = Cc::new(CcKind::NewReno);
    let mut ev = ack(1000, 1000, 4000, false);
    ev.in_recovery = true;
    cc.on_ack(&mut w, &ev);
    assert_eq!(w.cwnd, 4000);
}

#[test]
fn loss_responses_follow_equation_4() {
    let mut w = Window::new(MSS, 10);
    let mut cc = Cc::new(CcKind::NewReno);
    cc.on_fast_retransmit(&mut w, 9000);
    assert_eq!(w.ssthresh, 4500);
    cc.on_fast_retransmit(&mut w, 3000);
    assert_eq!(w.ssthresh, 2 * MSS);
    // FlightSize above cwnd (data held beyond a hole) counts as cwnd.
    cc.on_rto(&mut w, 20_000, true);
    assert_eq!((w.cwnd, w.ssthresh), (MSS, 5000));
    // A second timeout of the same segment holds ssthresh.
    cc.on_rto(&mut w, 1000, false);
    assert_eq!((w.cwnd, w.ssthresh), (MSS, 5000));
    cc.on_rto(&mut w, 1000, true);
    assert_eq!(w.ssthresh, 2 * MSS);
}

/// Feeds `windows` observation windows of `per_window` one-MSS ACKs, of
/// which the first `marked` carry ECE, and returns alpha after each.
fn run_dctcp(
    d: &mut Dctcp,
    w: &mut Window,
    windows: u64,
    per_window: u64,
    marked: u64,
) -> Vec<f64> {
    let mut una = 0;
    let mut alphas = Vec::new();
    for _ in 0..windows {
        let nxt = una + per_window * MSS;
        for k in 0..per_window {
            una += MSS;
            d.on_ack(w, &ack(MSS, una, nxt + per_window * MSS, k < marked));
        }
        alphas.push(d.alpha().unwrap_or(f64::NAN));
    }
    alphas
}

#[test]
fn dctcp_alpha_converges_to_the_marked_fraction() {
    for (marked, p) in [(0, 0.0), (3, 0.3), (10, 1.0), (5, 0.5)] {
        let mut d = Dctcp::new(4);
        let mut w = Window::new(MSS, 10);
        let alphas = run_dctcp(&mut d, &mut w, 300, 10, marked);
        let last = alphas[alphas.len() - 1];
        assert!((last - p).abs() < 0.01, "marked {marked}/10: alpha {last}");
    }
}

#[test]
fn dctcp_alpha_moves_by_g_per_window() {
    let mut d = Dctcp::new(4);
    let mut w = Window::new(MSS, 10);
    // The first ACK ends the (empty) initial window: alpha = 15/16 after an
    // unmarked one. Then windows of 10 ACKs each.
    d.on_ack(&mut w, &ack(MSS, MSS, 10 * MSS, false));
    assert!((d.alpha().unwrap_or(0.0) - 15.0 / 16.0).abs() < 1e-12);
    let mut una = MSS;
    for _ in 0..9 {
        una += MSS;
        d.on_ack(&mut w, &ack(MSS, una, 20 * MSS, false));
    }
    // Still inside the window that ends at 10 MSS.
    assert!((d.alpha().unwrap_or(0.0) - 15.0 / 16.0).abs() < 1e-12);
    d.on_ack(&mut w, &ack(MSS, una + MSS, 20 * MSS, false));
    assert!((d.alpha().unwrap_or(0.0) - (15.0f64 / 16.0).powi(2)).abs() < 1e-12);
}

#[test]
fn dctcp_cut_is_alpha_over_two_once_per_window() {
    let mut d = Dctcp::new(4);
    let mut w = Window::new(MSS, 10);
    // Drive alpha to 0.5 with half the bytes marked, then set a big window.
    run_dctcp(&mut d, &mut w, 400, 10, 5);
    let alpha = d.alpha().unwrap_or(f64::NAN);
    assert!((alpha - 0.5).abs() < 0.01);
    w.cwnd = 100 * MSS;
    w.ssthresh = u64::MAX;
    let base = 100_000_000; // past everything `run_dctcp` sent
    assert!(d.on_ack(&mut w, &ack(MSS, base, base + 100 * MSS, true)));
    let alpha = d.alpha().unwrap_or(f64::NAN);
    let expect = (100.0 * MSS as f64 * (1.0 - alpha / 2.0)) as u64;
    assert_eq!(w.cwnd, expect);
    assert_eq!(w.ssthresh, expect);
    assert!((w.cwnd as f64 / (100 * MSS) as f64 - 0.75).abs() < 0.01);
    // More ECE within the same window of data: no further cut.
    for k in 1..100 {
        assert!(!d.on_ack(&mut w, &ack(MSS, base + k * MSS, base + 200 * MSS, true)));
    }
    assert!(w.cwnd >= expect);
    // Past the data outstanding at the cut: the next ECE cuts again.
    assert!(d.on_ack(&mut w, &ack(MSS, base + 101 * MSS, base + 200 * MSS, true)));
}

#[test]
fn dctcp_cut_never_goes_below_two_segments_nor_raises_cwnd() {
    let mut d = Dctcp::new(0);
    let mut w = Window::new(MSS, 1);
    assert!(d.on_ack(&mut w, &ack(MSS, MSS, 2 * MSS, true)));
    assert_eq!((w.cwnd, w.ssthresh), (MSS, 2 * MSS));
}

#[test]
fn dctcp_loss_response_is_newreno() {
    let mut d = Cc::new(CcKind::DCTCP);
    let mut w = Window::new(MSS, 10);
    d.on_fast_retransmit(&mut w, 10_000);
    assert_eq!(w.ssthresh, 5000);
    d.on_rto(&mut w, 10_000, true);
    assert_eq!(w.cwnd, MSS);
}

/// `TcpConfig::dctcp_loss_uses_alpha`: with the option, a loss cuts to
/// (1 - alpha / 2) x cwnd (ns-3 3.44's `TcpDctcp::GetSsThresh`); without
/// it, to half the flight (RFC 8257 section 3.5).
#[test]
fn dctcp_loss_uses_alpha_sets_ssthresh_from_alpha_and_cwnd() {
    for on in [false, true] {
        let mut d = Dctcp::new(4).with_loss_uses_alpha(on);
        let mut w = Window::new(MSS, 10);
        // Alpha to about 0.2: 2 of every 10 bytes marked.
        run_dctcp(&mut d, &mut w, 400, 10, 2);
        let alpha = d.alpha().unwrap_or(f64::NAN);
        assert!((alpha - 0.2).abs() < 0.01, "{alpha}");
        let alpha_cut = (100.0 * MSS as f64 * (1.0 - alpha / 2.0)) as u64;

        // Fast retransmit with cwnd 100 MSS and 80 MSS in flight.
        w.cwnd = 100 * MSS;
        w.ca_bytes_acked = 7;
        d.on_fast_retransmit(&mut w, 80 * MSS);
        let expect = if on { alpha_cut } else { 40 * MSS };
        assert_eq!(w.ssthresh, expect, "on = {on}");
        assert_eq!(w.ca_bytes_acked, 0);

        // First timeout of a segment: the same cut, cwnd = 1 SMSS.
        w.cwnd = 100 * MSS;
        d.on_rto(&mut w, 80 * MSS, true);
        assert_eq!((w.cwnd, w.ssthresh), (MSS, expect), "on = {on}");
        // A second timeout of it holds ssthresh.
        d.on_rto(&mut w, MSS, false);
        assert_eq!((w.cwnd, w.ssthresh), (MSS, expect), "on = {on}");
        // A small window: never below 2 SMSS.
        w.cwnd = 2 * MSS;
        d.on_fast_retransmit(&mut w, 2 * MSS);
        assert_eq!(w.ssthresh, 2 * MSS);
    }
    // Through `Cc`: only DCTCP reads the option.
    let mut reno = Cc::new(CcKind::NewReno).with_dctcp_loss_uses_alpha(true);
    let mut w = Window::new(MSS, 100);
    reno.on_fast_retransmit(&mut w, 100 * MSS);
    assert_eq!(w.ssthresh, 50 * MSS);
    assert!(matches!(
        Cc::new(CcKind::DCTCP).with_dctcp_loss_uses_alpha(true),
        Cc::Dctcp(Dctcp {
            loss_uses_alpha: true,
            ..
        })
    ));
}

#[test]
fn slow_start_all_acked_grows_by_every_byte_up_to_ssthresh() {
    // `slow_start_all_acked` (ns-3 `TcpLinuxReno::SlowStart`, Linux
    // `tcp_slow_start`): one ACK of 64 segments grows cwnd by 64, where
    // RFC 5681 equation (2) grows it by one.
    for (on, want) in [(false, 11 * MSS), (true, 74 * MSS)] {
        let mut w = Window::new(MSS, 10);
        let mut cc = Cc::new(CcKind::DCTCP);
        let ev = AckEvent {
            slow_start_all_acked: on,
            ..ack(64 * MSS, 64 * MSS, 100 * MSS, false)
        };
        cc.on_ack(&mut w, &ev);
        assert_eq!(w.cwnd, want, "on {on}");
    }
    // Capped at ssthresh; the rest counts towards congestion avoidance.
    let mut w = Window::new(MSS, 10);
    w.ssthresh = 20 * MSS;
    w.ca_bytes_acked = 15 * MSS;
    let mut cc = Cc::new(CcKind::NewReno);
    let ev = AckEvent {
        slow_start_all_acked: true,
        ..ack(16 * MSS, 16 * MSS, 100 * MSS, false)
    };
    cc.on_ack(&mut w, &ev);
    // 10 + 10 = 20 (ssthresh), 6 left: 15 + 6 = 21 >= 20, +1 SMSS.
    assert_eq!((w.cwnd, w.ca_bytes_acked), (21 * MSS, MSS));
}

/// `TcpConfig::dctcp_no_floor`: the alpha cut of a small window goes below
/// 2 SMSS (and below one segment), as ns-3 3.44's `TcpDctcp::GetSsThresh`;
/// without it, Linux's floor of 2 SMSS holds. The same for a loss with
/// `dctcp_loss_uses_alpha`.
#[test]
fn dctcp_no_floor_cuts_below_two_segments_and_below_one() {
    for no_floor in [false, true] {
        // alpha = 1 (its initial value, g = 1 keeps it at F = 1): a cut
        // halves the window.
        let mut d = Dctcp::new(0).with_no_floor(no_floor);
        let mut w = Window::new(MSS, 3);
        assert!(d.on_ack(&mut w, &ack(MSS, MSS, 3 * MSS, true)));
        let expect = if no_floor { 1500 } else { 2 * MSS };
        assert_eq!((w.cwnd, w.ssthresh), (expect, expect), "{no_floor}");
        // The next window's ECE halves again: 750 B, under one segment.
        assert!(d.on_ack(&mut w, &ack(MSS, 3 * MSS + 1, 4 * MSS, true)));
        let expect = if no_floor { 750 } else { 2 * MSS };
        assert_eq!((w.cwnd, w.ssthresh), (expect, expect), "{no_floor}");

        // A loss with `dctcp_loss_uses_alpha`: (1 - alpha / 2) x cwnd.
        let mut d = Dctcp::new(0)
            .with_no_floor(no_floor)
            .with_loss_uses_alpha(true);
        let mut w = Window::new(MSS, 3);
        d.on_fast_retransmit(&mut w, 3 * MSS);
        assert_eq!(w.ssthresh, if no_floor { 1500 } else { 2 * MSS });
        w.cwnd = 750;
        d.on_rto(&mut w, 0, true);
        assert_eq!(
            (w.cwnd, w.ssthresh),
            (MSS, if no_floor { 375 } else { 2 * MSS })
        );
    }
    // The option is DCTCP's: `Cc` reports it only for DCTCP.
    let c = Cc::new(CcKind::DCTCP).with_dctcp_no_floor(true);
    assert!(c.dctcp_no_floor());
    assert!(!Cc::new(CcKind::NewReno)
        .with_dctcp_no_floor(true)
        .dctcp_no_floor());
}
