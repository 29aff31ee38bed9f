use super::*;

const MSS: u64 = 1000;

fn ack(acked: u64, snd_una: u64, snd_nxt: u64, ece: bool) -> AckEvent {
    AckEvent {
        acked,
        ece,
        snd_una,
        snd_nxt,
        next_tx: snd_nxt,
        in_recovery: false,
        cwnd_limited: true,
        now: SimTime::ZERO,
        srtt: None,
        slow_start_all_acked: false,
        loss_exit_acked: None,
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
            loss_exit_acked: None,
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
        loss_exit_acked: None,
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

/// `ca_segment_count`: ns-3 3.44's `TcpLinuxReno::CongestionAvoidance`.
fn seg_reno(cwnd: u64) -> (Cc, Window) {
    let mut w = Window::new(MSS, 1);
    w.cwnd = cwnd;
    w.ssthresh = cwnd;
    (Cc::new(CcKind::NewReno).with_ca_segment_count(true), w)
}

#[test]
fn segment_count_adds_a_segment_per_floor_of_the_window_in_segments() {
    // cwnd 4.48 segments: ns-3 grows after 4 segments acknowledged, byte
    // counting after 4480 bytes (the fifth ACK).
    let (mut cc, mut w) = seg_reno(4480);
    let mut bytes = Cc::new(CcKind::NewReno);
    let mut wb = w;
    for i in 1..=5u64 {
        cc.on_ack(&mut w, &ack(MSS, i * MSS, 20 * MSS, false));
        bytes.on_ack(&mut wb, &ack(MSS, i * MSS, 20 * MSS, false));
        let (seg, byte) = if i < 4 {
            (4480, 4480)
        } else if i == 4 {
            (5480, 4480)
        } else {
            (5480, 5480)
        };
        assert_eq!((w.cwnd, wb.cwnd), (seg, byte), "ACK {i}");
    }
}

#[test]
fn segment_count_survives_a_cut_and_a_count_at_the_window_adds_at_once() {
    // Six of eight segments counted, then a loss halves the window to four
    // segments: byte counting starts over, ns-3's count does not. Its next
    // ACK finds the count (6) at or above w (4): one segment at once, the
    // count restarts at 0, then this ACK's segment counts.
    let (mut cc, mut w) = seg_reno(8 * MSS);
    for i in 1..=6u64 {
        cc.on_ack(&mut w, &ack(MSS, i * MSS, 20 * MSS, false));
    }
    assert_eq!(w.cwnd, 8 * MSS);
    cc.on_fast_retransmit(&mut w, 8 * MSS);
    w.cwnd = w.ssthresh;
    assert_eq!(w.cwnd, 4 * MSS);
    cc.on_ack(&mut w, &ack(MSS, 7 * MSS, 20 * MSS, false));
    assert_eq!(w.cwnd, 5 * MSS);
    // The count is at 1: four more segments (w = 5) for the next one.
    for i in 8..=10u64 {
        cc.on_ack(&mut w, &ack(MSS, i * MSS, 20 * MSS, false));
        assert_eq!(w.cwnd, 5 * MSS, "ACK {i}");
    }
    cc.on_ack(&mut w, &ack(MSS, 11 * MSS, 20 * MSS, false));
    assert_eq!(w.cwnd, 6 * MSS);
}

#[test]
fn segment_count_carries_partial_segments_and_ack_covering_many() {
    // Half-segment ACKs: two make one segment (ns-3's
    // m_bytesAckedNotProcessed).
    let (mut cc, mut w) = seg_reno(2 * MSS);
    cc.on_ack(&mut w, &ack(MSS / 2, MSS / 2, 20 * MSS, false));
    cc.on_ack(&mut w, &ack(MSS / 2, MSS, 20 * MSS, false));
    assert_eq!(w.cwnd, 2 * MSS);
    cc.on_ack(&mut w, &ack(MSS / 2, 3 * MSS / 2, 20 * MSS, false));
    cc.on_ack(&mut w, &ack(MSS / 2, 2 * MSS, 20 * MSS, false));
    assert_eq!(w.cwnd, 3 * MSS);
    // One ACK of seven segments at w = 3: two increases, one left counted.
    cc.on_ack(&mut w, &ack(7 * MSS, 9 * MSS, 20 * MSS, false));
    assert_eq!(w.cwnd, 5 * MSS);
    cc.on_ack(&mut w, &ack(4 * MSS, 13 * MSS, 20 * MSS, false));
    assert_eq!(w.cwnd, 6 * MSS);
}

#[test]
fn segment_count_slow_start_takes_whole_segments_and_passes_the_rest_on() {
    let mut w = Window::new(MSS, 10);
    w.ssthresh = 12 * MSS;
    let mut cc = Cc::new(CcKind::NewReno).with_ca_segment_count(true);
    let ev = AckEvent {
        slow_start_all_acked: true,
        loss_exit_acked: None,
        ..ack(5 * MSS, 5 * MSS, 20 * MSS, false)
    };
    // `TcpLinuxReno::SlowStart`: 10 -> 12 segments, three left for
    // congestion avoidance at w = 12.
    cc.on_ack(&mut w, &ev);
    assert_eq!(w.cwnd, 12 * MSS);
    for i in 1..=8u64 {
        cc.on_ack(&mut w, &ack(MSS, (5 + i) * MSS, 20 * MSS, false));
    }
    assert_eq!(w.cwnd, 12 * MSS);
    cc.on_ack(&mut w, &ack(MSS, 14 * MSS, 20 * MSS, false));
    assert_eq!(w.cwnd, 13 * MSS);
}

#[test]
fn segment_count_applies_to_dctcp_not_cubic() {
    // DCTCP grows as ns-3's TcpLinuxReno with the option.
    let mut w = Window::new(MSS, 1);
    w.cwnd = 4480;
    w.ssthresh = 4480;
    let mut cc = Cc::new(CcKind::Dctcp { g_shift: 4 }).with_ca_segment_count(true);
    for i in 1..=4u64 {
        cc.on_ack(&mut w, &ack(MSS, i * MSS, 20 * MSS, false));
    }
    assert_eq!(w.cwnd, 5480);
    let cubic = Cc::new(CcKind::Cubic { c: 0.4, beta: 0.7 });
    assert_eq!(cubic.clone().with_ca_segment_count(true), cubic);
}

#[test]
fn dctcp_window_end_next_tx_ends_windows_where_ns3_does() {
    let on = || Cc::new(CcKind::Dctcp { g_shift: 4 }).with_dctcp_window_end_next_tx(true);
    let next = |acked, una, nxt, next_tx, ece| AckEvent {
        next_tx,
        ..ack(acked, una, nxt, ece)
    };
    let a1 = 15.0 / 16.0;
    // The first ACK sets the first window's end (ns-3's m_nextSeqFlag)
    // and ends nothing; RFC 8257's rule ends a window at once.
    let mut w = Window::new(MSS, 10);
    let mut cc = on();
    cc.on_ack(&mut w, &next(MSS, MSS, 10 * MSS, 10 * MSS, false));
    assert_eq!(cc.alpha(), Some(1.0));
    let mut rfc = Cc::new(CcKind::Dctcp { g_shift: 4 });
    let mut wr = Window::new(MSS, 10);
    rfc.on_ack(&mut wr, &next(MSS, MSS, 10 * MSS, 10 * MSS, false));
    assert_eq!(rfc.alpha(), Some(a1));
    // The window ends when the ACK reaches its end (>=, not >).
    cc.on_ack(&mut w, &next(9 * MSS, 10 * MSS, 12 * MSS, 12 * MSS, false));
    assert_eq!(cc.alpha(), Some(a1));
    // After a timeout the next segment to send is back at the head: the
    // window ends at 13 MSS though 20 MSS had been sent.
    cc.on_ack(&mut w, &next(2 * MSS, 12 * MSS, 20 * MSS, 13 * MSS, true));
    assert_eq!(cc.alpha(), Some(a1 * a1 + 1.0 / 16.0));
    cc.on_ack(&mut w, &next(MSS, 13 * MSS, 20 * MSS, 14 * MSS, false));
    let a3 = (a1 * a1 + 1.0 / 16.0) * a1;
    assert!((cc.alpha().unwrap() - a3).abs() < 1e-12);
}

/// `newreno_ack_adder`: ns-3 3.44's `TcpNewReno::IncreaseWindow`. The
/// expected values are what ns-3 3.44's compiled `TcpNewReno` gives for the
/// same cwnd, ssthresh and segments acknowledged (its 1448-byte segments).
fn adder_reno(cwnd: u64, ssthresh: u64) -> (Cc, Window) {
    let mut w = Window::new(1448, 1);
    w.cwnd = cwnd;
    w.ssthresh = ssthresh;
    (Cc::new(CcKind::NewReno).with_newreno_ack_adder(true), w)
}

#[test]
fn ack_adder_slow_start_adds_one_segment_per_ack_and_passes_the_rest_on() {
    // Five segments on one ACK in slow start: one SMSS (RFC 5681's rule
    // would add the same; ns-3's TcpLinuxReno would add five).
    let (mut cc, mut w) = adder_reno(14_480, 1 << 30);
    cc.on_ack(&mut w, &ack(5 * 1448, 5 * 1448, 100_000, false));
    assert_eq!(w.cwnd, 15_928);
    // Crossing ssthresh: one SMSS, not capped at ssthresh, then the four
    // segments left add one adder, floor(1448^2 / 15928) = 131.
    let (mut cc, mut w) = adder_reno(14_480, 15_000);
    cc.on_ack(&mut w, &ack(5 * 1448, 5 * 1448, 100_000, false));
    assert_eq!(w.cwnd, 16_059);
    // Less than one whole segment grows nothing; the carried half makes a
    // segment with the next one.
    let (mut cc, mut w) = adder_reno(14_480, 1 << 30);
    cc.on_ack(&mut w, &ack(724, 724, 100_000, false));
    assert_eq!(w.cwnd, 14_480);
    cc.on_ack(&mut w, &ack(724, 1448, 100_000, false));
    assert_eq!(w.cwnd, 15_928);
}

#[test]
fn ack_adder_congestion_avoidance_adds_once_per_ack() {
    // At 100 segments one ACK adds floor(1448^2 / 144800) = 14 bytes,
    // whether it covers one segment or fifty.
    for segs in [1u64, 50] {
        let (mut cc, mut w) = adder_reno(144_800, 1000);
        cc.on_ack(&mut w, &ack(segs * 1448, segs * 1448, 1 << 30, false));
        assert_eq!(w.cwnd, 144_814, "{segs} segments");
    }
    // A round trip of one ACK per segment: 1400 bytes at 100 segments and
    // 1383 at 10, where byte counting adds 1448 in both.
    for (segs, grown) in [(100u64, 1400u64), (10, 1383)] {
        let (mut cc, mut w) = adder_reno(segs * 1448, 1000);
        let (mut bytes, mut wb) = (Cc::new(CcKind::NewReno), w);
        for i in 1..=segs {
            cc.on_ack(&mut w, &ack(1448, i * 1448, 1 << 30, false));
            bytes.on_ack(&mut wb, &ack(1448, i * 1448, 1 << 30, false));
        }
        assert_eq!(w.cwnd - segs * 1448, grown, "{segs} segments");
        assert_eq!(wb.cwnd - segs * 1448, 1448, "{segs} segments");
    }
}

#[test]
fn ack_adder_applies_to_newreno_only() {
    for cc in [
        Cc::new(CcKind::Dctcp { g_shift: 4 }),
        Cc::new(CcKind::Cubic { c: 0.4, beta: 0.7 }),
    ] {
        assert_eq!(cc.clone().with_newreno_ack_adder(true), cc);
    }
    assert_ne!(
        Cc::new(CcKind::NewReno).with_newreno_ack_adder(true),
        Cc::new(CcKind::NewReno)
    );
}
