//! Script tests of the host features of issue 13: classic ECN (RFC 3168),
//! CUBIC's reductions (RFC 9438), SACK with RFC 6675 recovery, FIN, the
//! application rate cap and `close`.

use super::cc::Cubic;
use super::test_util::{ack_pkt, data_pkt, ends, segs, started, us, MSS};
use super::{CcKind, TcpConfig, TcpReceiver, TcpSender};
use pisanet_engine::SimTime;
use pisanet_net::packet::{tcp_flags, Ecn, Packet, SackBlock, SackOption};

const BIG: u64 = 10_000_000;
const RWND: u32 = 1_000_000;

fn cfg() -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        init_cwnd_segments: 10,
        rwnd_bytes: RWND,
        ..TcpConfig::default()
    }
}

fn send(tx: &mut TcpSender, at: SimTime, p: &Packet) -> Vec<Packet> {
    let mut out = Vec::new();
    tx.on_packet(at, p, &mut out);
    out
}

fn ece_ack(ack: u64) -> Packet {
    ack_pkt(ack, RWND, true)
}

fn sack_ack(ack: u64, blocks: &[(u64, u64)]) -> Packet {
    let mut p = ack_pkt(ack, RWND, false);
    let b: Vec<SackBlock> = blocks
        .iter()
        .map(|&(start, end)| SackBlock { start, end })
        .collect();
    p.set_sack(Some(SackOption::new(&b)));
    p
}

fn has(p: &Packet, flag: u8) -> bool {
    p.tcp().is_some_and(|t| t.has(flag))
}

// ---- classic ECN ---------------------------------------------------------

#[test]
fn classic_ecn_data_is_ect0_only_when_asked() {
    for (ecn, want) in [(false, Ecn::NotEct), (true, Ecn::Ect0)] {
        let c = TcpConfig { ecn, ..cfg() };
        let (_, out) = started(&c, BIG);
        assert!(out.iter().all(|p| p.ip.ecn == want));
    }
}

#[test]
fn classic_ecn_halves_newreno_once_per_window_and_sets_cwr() {
    let c = TcpConfig { ecn: true, ..cfg() };
    let (mut tx, _) = started(&c, BIG);
    // Grow to 20 segments in slow start: 10 ACKs of one segment each.
    for i in 1..=10 {
        send(&mut tx, us(10), &ack_pkt(i * MSS, RWND, false));
    }
    assert_eq!(tx.stats().cwnd_bytes, 20 * MSS);
    assert_eq!(tx.stats().snd_max, 30 * MSS);
    // Two ECE ACKs in the same window of data: one reduction, to half.
    let out = send(&mut tx, us(20), &ece_ack(11 * MSS));
    assert_eq!(tx.stats().cwnd_bytes, 10 * MSS);
    assert_eq!(tx.stats().ssthresh_bytes, 10 * MSS);
    assert!(
        out.is_empty(),
        "no retransmission, no room: {:?}",
        segs(&out)
    );
    send(&mut tx, us(21), &ece_ack(12 * MSS));
    assert_eq!(tx.stats().cwnd_bytes, 10 * MSS);
    assert_eq!(tx.stats().classic_ecn_cuts, 1);
    assert_eq!(tx.stats().retransmitted_segments, 0);
    // ACKs without ECE: as the flight drops below cwnd new data goes, the
    // first new segment with CWR.
    let mut sent = Vec::new();
    for i in 13..=30 {
        sent.extend(send(&mut tx, us(22), &ack_pkt(i * MSS, RWND, false)));
    }
    assert!(!sent.is_empty());
    assert!(has(&sent[0], tcp_flags::CWR));
    assert!(sent[1..].iter().all(|p| !has(p, tcp_flags::CWR)));
    // A window later (snd_una passed the data sent at the cut), an ECE
    // cuts again.
    let cwnd = tx.stats().cwnd_bytes;
    send(&mut tx, us(40), &ece_ack(31 * MSS));
    assert_eq!(tx.stats().classic_ecn_cuts, 2);
    assert_eq!(tx.stats().cwnd_bytes, (cwnd / 2).max(2 * MSS));
}

#[test]
fn classic_ecn_cuts_cubic_by_beta() {
    let c = TcpConfig {
        ecn: true,
        cc: CcKind::CUBIC,
        ..cfg()
    };
    let (mut tx, _) = started(&c, BIG);
    for i in 1..=10 {
        send(&mut tx, us(10), &ack_pkt(i * MSS, RWND, false));
    }
    assert_eq!(tx.stats().cwnd_bytes, 20 * MSS);
    send(&mut tx, us(20), &ece_ack(11 * MSS));
    // RFC 9438 section 4.6: cwnd = ssthresh = 0.7 * 20 segments.
    assert_eq!(tx.stats().cwnd_bytes, 14 * MSS);
    assert_eq!(tx.stats().ssthresh_bytes, 14 * MSS);
    send(&mut tx, us(21), &ece_ack(12 * MSS));
    assert_eq!(tx.stats().cwnd_bytes, 14 * MSS);
}

#[test]
fn classic_receiver_echoes_ce_until_cwr() {
    let c = TcpConfig { ecn: true, ..cfg() };
    let mut rx = TcpReceiver::new(&c, ends().reversed(), BIG);
    let ece = |rx: &mut TcpReceiver, p: &Packet| {
        let mut out = Vec::new();
        rx.on_packet(us(1), p, &mut out);
        has(&out[0], tcp_flags::ECE)
    };
    assert!(!ece(&mut rx, &data_pkt(0, MSS as u32, Ecn::Ect0)));
    assert!(ece(&mut rx, &data_pkt(MSS, MSS as u32, Ecn::Ce)));
    // Unmarked packets keep the echo (unlike DCTCP's per-packet echo).
    assert!(ece(&mut rx, &data_pkt(2 * MSS, MSS as u32, Ecn::Ect0)));
    let mut cwr = data_pkt(3 * MSS, MSS as u32, Ecn::Ect0);
    if let Some(t) = cwr.tcp_mut() {
        t.flags |= tcp_flags::CWR;
    }
    assert!(!ece(&mut rx, &cwr));
    assert!(!ece(&mut rx, &data_pkt(4 * MSS, MSS as u32, Ecn::Ect0)));
    // Without the option, CE is never echoed.
    let mut plain = TcpReceiver::new(&cfg(), ends().reversed(), BIG);
    assert!(!ece(&mut plain, &data_pkt(0, MSS as u32, Ecn::Ce)));
}

// ---- CUBIC ---------------------------------------------------------------

#[test]
fn cubic_k_and_window_follow_rfc_9438_equations_1_and_2() {
    use super::cc::{AckEvent, Controller, Window};
    let mut cc = Cubic::new(0.4, 0.7);
    let mut w = Window::new(MSS, 100);
    // A loss at cwnd = 100 segments: ssthresh = 70, W_max = 100.
    cc.on_fast_retransmit(&mut w, 100 * MSS);
    assert_eq!(w.ssthresh, 70 * MSS);
    w.cwnd = w.ssthresh;
    let t0 = SimTime::from_ms(1000);
    let ev = |now: SimTime| AckEvent {
        acked: MSS,
        ece: false,
        snd_una: 0,
        snd_nxt: 0,
        next_tx: 0,
        in_recovery: false,
        cwnd_limited: true,
        now,
        srtt: Some(SimTime::from_ms(100)),
        slow_start_all_acked: false,
        loss_exit_acked: None,
    };
    cc.on_ack(&mut w, &ev(t0));
    // Equation (2): K = cbrt((W_max - cwnd_epoch) / C) = cbrt(30 / 0.4).
    let k = (30.0f64 / 0.4).cbrt();
    assert!((cc.k() - k).abs() < 1e-9, "K {} vs {k}", cc.k());
    assert!((cc.w_cubic(0.0) - 70.0).abs() < 1e-9);
    assert!((cc.w_cubic(k) - 100.0).abs() < 1e-9);
    // A second loss below W_max: fast convergence (section 4.7).
    let cwnd = w.cwnd as f64 / MSS as f64;
    let flight = w.cwnd;
    cc.on_fast_retransmit(&mut w, flight);
    assert!((cc.w_max() - cwnd * 1.7 / 2.0).abs() < 1e-9);
}

#[test]
fn cubic_timeout_restarts_with_k_zero() {
    use super::cc::{AckEvent, Controller, Window};
    let mut cc = Cubic::new(0.4, 0.7);
    let mut w = Window::new(MSS, 100);
    cc.on_rto(&mut w, 100 * MSS, true);
    assert_eq!((w.cwnd, w.ssthresh), (MSS, 70 * MSS));
    w.cwnd = 70 * MSS; // as if slow start got there
    let ev = AckEvent {
        acked: MSS,
        ece: false,
        snd_una: 0,
        snd_nxt: 0,
        next_tx: 0,
        in_recovery: false,
        cwnd_limited: true,
        now: SimTime::from_ms(2000),
        srtt: None,
        slow_start_all_acked: false,
        loss_exit_acked: None,
    };
    cc.on_ack(&mut w, &ev);
    // RFC 9438 section 4.8: K = 0 and W_max = cwnd at the stage's start.
    assert_eq!(cc.k(), 0.0);
    assert!((cc.w_max() - 70.0).abs() < 1e-9);
}

// ---- SACK ----------------------------------------------------------------

#[test]
fn receiver_reports_sack_blocks_most_recent_first() {
    let c = TcpConfig {
        sack: true,
        ..cfg()
    };
    let mut rx = TcpReceiver::new(&c, ends().reversed(), BIG);
    let mut on = |seq: u64| {
        let mut out = Vec::new();
        rx.on_packet(us(1), &data_pkt(seq, MSS as u32, Ecn::NotEct), &mut out);
        let p = out.pop().unwrap();
        let blocks: Vec<(u64, u64)> = p.sack_blocks().iter().map(|b| (b.start, b.end)).collect();
        (p.tcp().unwrap().ack, blocks, p.size)
    };
    assert_eq!(on(0), (MSS, vec![], Packet::tcp_wire_size(0)));
    // Segments 2, 4, 6, 7 arrive; 1, 3, 5 are missing.
    assert_eq!(on(2 * MSS).1, vec![(2000, 3000)]);
    assert_eq!(on(4 * MSS).1, vec![(4000, 5000), (2000, 3000)]);
    let (_, b, size) = on(6 * MSS);
    assert_eq!(b, vec![(6000, 7000), (4000, 5000), (2000, 3000)]);
    // 3 blocks: 2 + 24 option bytes, padded to 28.
    assert_eq!(size, 18 + 20 + 20 + 28);
    // A segment extending a reported block moves that block first.
    assert_eq!(
        on(3 * MSS).1,
        vec![(2000, 5000), (6000, 7000)],
        "3 joins 2 and 4"
    );
    // The hole at 1 filled: ack jumps to 5000, one block left.
    let (ack, b, _) = on(MSS);
    assert_eq!((ack, b), (5000, vec![(6000, 7000)]));
    let (ack, b, size) = on(5 * MSS);
    assert_eq!((ack, b, size), (7000, vec![], 64));
}

/// A SACK sender that sent segments 0..10 and lost 1 and 3.
fn sack_sender_with_two_losses(sack: bool) -> (TcpSender, Vec<Packet>) {
    let c = TcpConfig { sack, ..cfg() };
    let (tx, out) = started(&c, 10 * MSS);
    assert_eq!(segs(&out).len(), 10);
    (tx, out)
}

#[test]
fn sack_recovers_two_losses_in_one_window_in_one_round_trip() {
    let (mut tx, _) = sack_sender_with_two_losses(true);
    let mut rx = TcpReceiver::new(
        &TcpConfig {
            sack: true,
            ..cfg()
        },
        ends().reversed(),
        10 * MSS,
    );
    // The receiver gets every segment but 1 and 3; its ACKs reach the
    // sender at 20 us.
    let mut acks = Vec::new();
    for seq in (0..10).filter(|&i| i != 1 && i != 3) {
        rx.on_packet(
            us(10),
            &data_pkt(seq * MSS, MSS as u32, Ecn::NotEct),
            &mut acks,
        );
    }
    let mut resent = Vec::new();
    for a in &acks {
        resent.extend(send(&mut tx, us(20), a));
    }
    // RFC 6675: by the third duplicate ACK (segments 4, 5, 6 SACKed)
    // both holes are lost and both are resent in this round trip.
    let rtx: Vec<u64> = segs(&resent)
        .iter()
        .map(|s| s.0)
        .filter(|&s| s < 10 * MSS)
        .collect();
    assert_eq!(rtx, vec![MSS, 3 * MSS], "{:?}", segs(&resent));
    assert_eq!(tx.stats().sack_recoveries, 1);
    // The resends arrive: everything is acknowledged, recovery ends.
    let mut acks = Vec::new();
    for p in resent.iter().filter(|p| p.tcp().unwrap().seq < 10 * MSS) {
        rx.on_packet(us(30), p, &mut acks);
    }
    for a in &acks {
        send(&mut tx, us(40), a);
    }
    assert!(tx.is_complete());
    assert!(!tx.stats().in_recovery);
    assert_eq!(tx.stats().timeouts, 0);
    assert_eq!(tx.stats().retransmitted_segments, 2);
}

#[test]
fn newreno_without_sack_needs_a_round_trip_per_loss() {
    let (mut tx, _) = sack_sender_with_two_losses(false);
    let mut rx = TcpReceiver::new(&cfg(), ends().reversed(), 10 * MSS);
    let mut acks = Vec::new();
    for seq in (0..10).filter(|&i| i != 1 && i != 3) {
        rx.on_packet(
            us(10),
            &data_pkt(seq * MSS, MSS as u32, Ecn::NotEct),
            &mut acks,
        );
    }
    let mut resent = Vec::new();
    for a in &acks {
        resent.extend(send(&mut tx, us(20), a));
    }
    // Only the first hole is resent in this round trip...
    let rtx: Vec<u64> = segs(&resent)
        .iter()
        .map(|s| s.0)
        .filter(|&s| s < 10 * MSS)
        .collect();
    assert_eq!(rtx, vec![MSS]);
    // ...the second waits for the partial ACK one round trip later.
    let mut acks = Vec::new();
    rx.on_packet(us(30), &resent[0], &mut acks);
    let out = send(&mut tx, us(40), &acks[0]);
    assert_eq!(segs(&out)[0].0, 3 * MSS);
}

#[test]
fn sack_timeout_clears_the_scoreboard_and_goes_back_n() {
    let (mut tx, _) = sack_sender_with_two_losses(true);
    // Two SACKs only (below DupThresh): no recovery, then the RTO.
    send(&mut tx, us(20), &sack_ack(MSS, &[(2 * MSS, 3 * MSS)]));
    send(
        &mut tx,
        us(20),
        &sack_ack(MSS, &[(4 * MSS, 5 * MSS), (2 * MSS, 3 * MSS)]),
    );
    assert_eq!(tx.stats().fast_retransmits, 0);
    let at = tx.timer_deadline().unwrap();
    let mut out = Vec::new();
    tx.on_timer(at, &mut out);
    assert_eq!(segs(&out), vec![(MSS, MSS as u32)]);
    assert_eq!(tx.stats().timeouts, 1);
    // RFC 6675 section 5.1: no recovery until HighACK reaches the
    // RecoveryPoint; the scoreboard is empty, so a SACK of known data is
    // news again but starts nothing.
    send(&mut tx, at + us(1), &sack_ack(MSS, &[(6 * MSS, 9 * MSS)]));
    assert_eq!(tx.stats().fast_retransmits, 0);
}

#[test]
fn sack_rescue_retransmits_the_unsacked_tail_once() {
    // 10 segments; 0 and 9 are lost, 1..=8 arrive.
    let c = TcpConfig {
        sack: true,
        ..cfg()
    };
    let (mut tx, _) = started(&c, 10 * MSS);
    send(&mut tx, us(20), &sack_ack(0, &[(MSS, 2 * MSS)]));
    send(&mut tx, us(20), &sack_ack(0, &[(MSS, 3 * MSS)]));
    // The third duplicate ACK: recovery, segment 0 resent.
    let out = send(&mut tx, us(20), &sack_ack(0, &[(MSS, 4 * MSS)]));
    assert_eq!(segs(&out), vec![(0, MSS as u32)]);
    for i in 5..=9 {
        assert!(send(&mut tx, us(20), &sack_ack(0, &[(MSS, i * MSS)])).is_empty());
    }
    // The resent 0 is acked up to 9: nothing SACKed above 9 says it is
    // lost and no new data is left, so NextSeg rule (4) resends it once.
    let out = send(&mut tx, us(40), &ack_pkt(9 * MSS, RWND, false));
    assert_eq!(segs(&out), vec![(9 * MSS, MSS as u32)]);
    assert_eq!(tx.stats().rescue_retransmits, 1);
    assert!(tx.stats().in_recovery);
    assert_eq!(tx.stats().timeouts, 0);
    let out = send(&mut tx, us(41), &ack_pkt(9 * MSS, RWND + 1, false));
    assert!(segs(&out).is_empty(), "one rescue per recovery");
    send(&mut tx, us(60), &ack_pkt(10 * MSS, RWND, false));
    assert!(tx.is_complete());
}

// ---- FIN -----------------------------------------------------------------

#[test]
fn fin_rides_on_the_last_segment_and_the_receiver_sees_it() {
    let mut tx = TcpSender::new(&cfg(), ends(), 2500);
    let mut rx = TcpReceiver::new(&cfg(), ends().reversed(), 2500);
    let mut out = Vec::new();
    tx.on_start(SimTime::ZERO, &mut out);
    let fins: Vec<bool> = out.iter().map(|p| has(p, tcp_flags::FIN)).collect();
    assert_eq!(fins, vec![false, false, true]);
    let mut acks = Vec::new();
    for p in &out {
        rx.on_packet(us(5), p, &mut acks);
    }
    assert_eq!(rx.fin_received(), Some((us(5), 2500)));
    assert!(rx.is_complete());
    assert_eq!(rx.delivery_error(), None);
    // A resend of the last segment carries FIN again.
    let (mut tx, _) = started(&cfg(), 2500);
    let at = tx.timer_deadline().unwrap();
    send(&mut tx, us(10), &ack_pkt(2000, RWND, false));
    let mut again = Vec::new();
    tx.on_timer(at.max(us(10) + SimTime::from_ms(3)), &mut again);
    assert_eq!(segs(&again), vec![(2000, 500)]);
    assert!(has(&again[0], tcp_flags::FIN));
}

#[test]
fn receiver_of_unknown_size_learns_it_from_the_fin() {
    let mut rx = TcpReceiver::new(&cfg(), ends().reversed(), u64::MAX);
    let mut acks = Vec::new();
    rx.on_packet(us(1), &data_pkt(0, 1000, Ecn::NotEct), &mut acks);
    assert!(!rx.is_complete());
    let mut last = data_pkt(1000, 700, Ecn::NotEct);
    if let Some(t) = last.tcp_mut() {
        t.flags |= tcp_flags::FIN;
    }
    rx.on_packet(us(2), &last, &mut acks);
    assert!(rx.is_complete());
    assert_eq!(rx.completed_at(), Some(us(2)));
    // A FIN that disagrees with a known size is a delivery error.
    let mut rx = TcpReceiver::new(&cfg(), ends().reversed(), 5000);
    rx.on_packet(us(2), &last, &mut acks);
    assert!(rx.delivery_error().is_some());
}

// ---- application rate cap and close --------------------------------------

#[test]
fn app_rate_cap_paces_new_data_with_its_own_timer() {
    // 8 Mb/s = one 1000 B segment per ms, a bucket of one segment.
    let c = TcpConfig {
        app_rate_bps: Some(8_000_000),
        ..cfg()
    };
    let (mut tx, out) = started(&c, BIG);
    assert_eq!(segs(&out), vec![(0, MSS as u32)]);
    assert_eq!(tx.timer_deadline(), Some(SimTime::from_ms(1)));
    // An ACK before the credit is back sends nothing.
    assert!(send(&mut tx, us(20), &ack_pkt(MSS, RWND, false)).is_empty());
    // No RTO or persist timer armed while nothing is outstanding.
    assert_eq!(tx.timer_deadline(), Some(SimTime::from_ms(1)));
    let mut out = Vec::new();
    tx.on_timer(SimTime::from_ms(1), &mut out);
    assert_eq!(segs(&out), vec![(MSS, MSS as u32)]);
    // A deeper bucket lets a burst of its depth out at once.
    let c = TcpConfig {
        app_rate_bps: Some(8_000_000),
        app_burst_bytes: 5 * MSS,
        ..cfg()
    };
    let (_, out) = started(&c, BIG);
    assert_eq!(segs(&out).len(), 5, "a full bucket of 5 segments");
}

#[test]
fn close_stops_new_data_sends_fin_and_completes_on_ack() {
    let (mut tx, out) = started(&cfg(), u64::MAX);
    assert_eq!(segs(&out).len(), 10);
    let mut fin = Vec::new();
    tx.close(us(5), &mut fin);
    assert_eq!(tx.size_bytes(), 10 * MSS);
    assert_eq!(fin.len(), 1);
    assert!(has(&fin[0], tcp_flags::FIN));
    assert_eq!(fin[0].tcp().unwrap().seq, 10 * MSS);
    assert_eq!(fin[0].tcp().unwrap().payload, 0);
    // ACKs bring no new data; the last one completes the flow.
    for i in 1..=10 {
        let more = send(&mut tx, us(20), &ack_pkt(i * MSS, RWND, false));
        assert!(segs(&more).is_empty());
    }
    assert!(tx.is_complete());
    assert_eq!(tx.completed_at(), Some(us(20)));
    // The receiver learns the end from the bare FIN.
    let mut rx = TcpReceiver::new(&cfg(), ends().reversed(), u64::MAX);
    let mut acks = Vec::new();
    for p in out.iter().chain(&fin) {
        rx.on_packet(us(10), p, &mut acks);
    }
    assert!(rx.is_complete());
    assert_eq!(rx.fin_received(), Some((us(10), 10 * MSS)));
}

#[test]
fn close_after_everything_is_acked_completes_at_once() {
    // Rate-capped (one segment per ms): after the first ACK nothing is
    // outstanding when the application closes.
    let c = TcpConfig {
        app_rate_bps: Some(8_000_000),
        ..cfg()
    };
    let (mut tx, _) = started(&c, u64::MAX);
    send(&mut tx, us(20), &ack_pkt(MSS, RWND, false));
    assert!(!tx.is_complete());
    let mut fin = Vec::new();
    tx.close(us(30), &mut fin);
    assert_eq!(tx.size_bytes(), MSS);
    assert!(tx.is_complete());
    assert_eq!(tx.completed_at(), Some(us(30)));
    assert_eq!(tx.timer_deadline(), None);
    assert!(has(&fin[0], tcp_flags::FIN));
}
