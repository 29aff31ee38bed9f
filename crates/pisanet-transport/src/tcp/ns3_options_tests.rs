//! The options that select ns-3's behaviour: the SYN / SYN-ACK handshake
//! (`TcpConfig::handshake`) and RFC 3042 limited transmit.

use super::test_util::{dupacks, ends, segs, started, us, MSS};
use super::{TcpConfig, TcpReceiver, TcpSender};
use pisanet_engine::SimTime;
use pisanet_net::packet::{tcp_flags, Ecn, Packet};

fn cfg(handshake: bool) -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        initial_rto: SimTime::from_ms(3),
        min_rto: SimTime::from_ms(1),
        handshake,
        ..TcpConfig::default()
    }
}

fn flags(p: &Packet) -> u8 {
    p.tcp().unwrap().flags
}

#[test]
fn syn_then_data_one_rtt_later_with_first_rtt_sample() {
    let c = cfg(true);
    let mut tx = TcpSender::new(&c, ends(), 5 * MSS);
    let mut rx = TcpReceiver::new(&c, ends().reversed(), 5 * MSS);
    let mut out = Vec::new();
    tx.on_start(SimTime::ZERO, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(flags(&out[0]), tcp_flags::SYN);
    assert_eq!(out[0].tcp().unwrap().payload, 0);
    assert_eq!(out[0].ip.ecn, Ecn::NotEct);
    assert_eq!(tx.timer_deadline(), Some(SimTime::from_ms(3)));
    // The receiver answers with a SYN-ACK carrying its window.
    let mut back = Vec::new();
    rx.on_packet(us(5), &out[0], &mut back);
    assert_eq!(back.len(), 1);
    assert_eq!(flags(&back[0]), tcp_flags::SYN | tcp_flags::ACK);
    assert_eq!(back[0].tcp().unwrap().window, c.rwnd_bytes);
    // The SYN-ACK at 10 us releases the first window and is the first RTT
    // sample: RTO = max(min_rto, 10 us + 4 * 5 us) = min_rto.
    let mut data = Vec::new();
    tx.on_packet(us(10), &back[0], &mut data);
    assert_eq!(segs(&data).len(), 5);
    assert_eq!(tx.stats().srtt, Some(us(10)));
    assert_eq!(tx.timer_deadline(), Some(us(10) + SimTime::from_ms(1)));
    let mut acks = Vec::new();
    for p in &data {
        rx.on_packet(us(15), p, &mut acks);
    }
    for a in &acks {
        tx.on_packet(us(20), a, &mut Vec::new());
    }
    assert!(tx.is_complete());
    assert_eq!(tx.completed_at(), Some(us(20)));
}

#[test]
fn lost_syn_is_resent_with_backoff_and_gives_no_sample() {
    let c = cfg(true);
    let (mut tx, mut out) = started(&c, 3 * MSS);
    // Early timer calls and plain ACKs change nothing.
    tx.on_timer(SimTime::from_ms(2), &mut out);
    tx.on_packet(us(1), &super::test_util::ack_pkt(0, 1000, false), &mut out);
    assert_eq!(out.len(), 1);
    out.clear();
    tx.on_timer(SimTime::from_ms(3), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(flags(&out[0]), tcp_flags::SYN);
    assert_eq!(tx.stats().timeouts, 1);
    // Backed off: 6 ms after the resend.
    assert_eq!(tx.timer_deadline(), Some(SimTime::from_ms(9)));
    let mut rx = TcpReceiver::new(&c, ends().reversed(), 3 * MSS);
    let mut back = Vec::new();
    rx.on_packet(SimTime::from_ms(3) + us(5), &out[0], &mut back);
    let mut data = Vec::new();
    tx.on_packet(SimTime::from_ms(3) + us(10), &back[0], &mut data);
    assert_eq!(segs(&data).len(), 3);
    // Karn: the resent SYN gives no RTT sample.
    assert_eq!(tx.stats().srtt, None);
}

#[test]
fn without_handshake_data_leaves_at_once() {
    let c = cfg(false);
    let (_, out) = started(&c, 3 * MSS);
    assert_eq!(segs(&out).len(), 3);
    assert!(out.iter().all(|p| flags(p) & tcp_flags::SYN == 0));
}

/// RFC 3042 limited transmit (`TcpConfig::limited_transmit`): lives here
/// with the other options that select ns-3's behaviour.
#[test]
fn limited_transmit_sends_one_new_segment_per_early_dup_ack() {
    use super::test_util::ack_pkt;
    for lt in [false, true] {
        let c = TcpConfig {
            limited_transmit: lt,
            init_cwnd_segments: 4,
            ..cfg(false)
        };
        let (mut tx, out) = started(&c, 20 * MSS);
        assert_eq!(segs(&out).len(), 4);
        // Segment 0 is lost: the ACKs of 1..3 are duplicates of ack 0.
        let window = c.rwnd_bytes;
        let mut sent = Vec::new();
        for i in 0..2 {
            let mut o = Vec::new();
            tx.on_packet(us(10 + i), &ack_pkt(0, window, false), &mut o);
            sent.push(segs(&o));
        }
        if lt {
            assert_eq!(
                sent,
                vec![vec![(4 * MSS, MSS as u32)], vec![(5 * MSS, MSS as u32)]]
            );
        } else {
            assert_eq!(sent, vec![vec![], vec![]]);
        }
        // cwnd is unchanged by limited transmit.
        assert_eq!(tx.stats().cwnd_bytes, 4 * MSS);
        // The third duplicate ACK: fast retransmit of segment 0 either way.
        let mut o = Vec::new();
        tx.on_packet(us(12), &ack_pkt(0, window, false), &mut o);
        assert_eq!(segs(&o)[0], (0, MSS as u32));
        assert_eq!(tx.stats().fast_retransmits, 1);
    }
}

/// ns-3's CA_CWR (`TcpConfig::cwr_ignores_dupacks`): after an ECN cut,
/// duplicate ACKs start no fast retransmit until an ACK passes what was
/// sent at the cut; off, the third one does as usual.
#[test]
fn cwr_ignores_dupacks_defers_fast_retransmit_past_the_cut_window() {
    use super::test_util::ack_pkt;
    for ns3 in [false, true] {
        let c = TcpConfig {
            ecn: true,
            cwr_ignores_dupacks: ns3,
            init_cwnd_segments: 10,
            ..cfg(false)
        };
        let (mut tx, _) = started(&c, 40 * MSS);
        let window = c.rwnd_bytes;
        // The first segment's ACK carries ECE: classic ECN cuts the window.
        let mut o = Vec::new();
        tx.on_packet(us(10), &ack_pkt(MSS, window, true), &mut o);
        assert_eq!(tx.stats().ecn_cuts, 1);
        let sent_at_cut = tx.stats().snd_max;
        // Segment 1 is lost: three duplicate ACKs of MSS.
        let o = dupacks(&mut tx, us(11), 3, MSS, window, false);
        assert_eq!(tx.stats().dup_acks, 3);
        if ns3 {
            assert_eq!(tx.stats().fast_retransmits, 0);
            assert!(segs(&o).iter().all(|&(s, _)| s != MSS), "{:?}", segs(&o));
            // An ACK past the cut window ends the state (ns-3: ackNumber >
            // m_recover, so the ACK of everything sent at the cut is not
            // enough); a new loss is then recovered by the third duplicate.
            let mut o = Vec::new();
            tx.on_packet(us(20), &ack_pkt(sent_at_cut, window, false), &mut o);
            assert!(tx.stats().snd_max > sent_at_cut + MSS);
            let ack = sent_at_cut + MSS;
            tx.on_packet(us(21), &ack_pkt(ack, window, false), &mut o);
            for i in 0..3 {
                tx.on_packet(us(22 + i), &ack_pkt(ack, window, false), &mut o);
            }
            assert_eq!(tx.stats().fast_retransmits, 1);
            assert!(segs(&o).contains(&(ack, MSS as u32)), "{:?}", segs(&o));
        } else {
            assert_eq!(tx.stats().fast_retransmits, 1);
            assert_eq!(segs(&o)[0], (MSS, MSS as u32));
        }
    }
}

/// ns-3's CA_CWR window (`TcpConfig::cwr_freeze`): after an ECN cut, the
/// ACKs of the cut window do not grow cwnd, and the first ACK past it sets
/// cwnd = ssthresh; off, congestion avoidance grows cwnd within the window.
#[test]
fn cwr_freeze_keeps_cwnd_at_the_cut_until_the_window_is_acked() {
    use super::test_util::ack_pkt;
    for freeze in [false, true] {
        let c = TcpConfig {
            ecn: true,
            cwr_freeze: freeze,
            init_cwnd_segments: 10,
            ..cfg(false)
        };
        let (mut tx, _) = started(&c, 100 * MSS);
        let window = c.rwnd_bytes;
        // The first segment's ACK carries ECE: classic ECN halves the flight.
        let mut o = Vec::new();
        tx.on_packet(us(10), &ack_pkt(MSS, window, true), &mut o);
        assert_eq!(tx.stats().ecn_cuts, 1);
        let cut = tx.stats().cwnd_bytes;
        assert_eq!(cut, 5 * MSS);
        assert_eq!(tx.stats().ssthresh_bytes, cut);
        let sent_at_cut = tx.stats().snd_max;
        // Every other segment of the cut window is acknowledged, one by one.
        let mut ack = MSS;
        let mut t = 11;
        while ack < sent_at_cut {
            ack += MSS;
            tx.on_packet(us(t), &ack_pkt(ack, window, false), &mut o);
            t += 1;
        }
        let at_end = tx.stats().cwnd_bytes;
        if freeze {
            assert_eq!(at_end, cut, "no growth in the cut window");
        } else {
            assert!(at_end > cut, "congestion avoidance grows cwnd: {at_end}");
        }
        // The first ACK past the cut window.
        tx.on_packet(us(t), &ack_pkt(ack + MSS, window, false), &mut o);
        if freeze {
            assert_eq!(tx.stats().cwnd_bytes, tx.stats().ssthresh_bytes);
        }
    }
}

/// `TcpConfig::rtt_every_ack`: one RTT sample per ACK of new data instead
/// of one timed segment per round trip.
#[test]
fn rtt_every_ack_takes_a_sample_from_each_ack() {
    use super::test_util::ack_pkt;
    for every in [false, true] {
        let c = TcpConfig {
            rtt_every_ack: every,
            init_cwnd_segments: 4,
            ..cfg(false)
        };
        let (mut tx, out) = started(&c, 20 * MSS);
        assert_eq!(segs(&out).len(), 4);
        for i in 1..=4 {
            tx.on_packet(
                us(10 + i),
                &ack_pkt(i * MSS, c.rwnd_bytes, false),
                &mut Vec::new(),
            );
        }
        let (n, last) = tx.rtt_samples();
        if every {
            // Each ACK times the segment it acknowledges (sent at 0).
            assert_eq!((n, last), (4, us(14)));
        } else {
            // The first segment only; the next probe went out at 11 us.
            assert_eq!((n, last), (1, us(11)));
        }
    }
}

/// `TcpConfig::ts_clock`: samples read from a millisecond timestamp clock,
/// as ns-3 does (`TcpOptionTS`): whole ticks, zero counted as 1 us.
#[test]
fn ts_clock_quantises_samples_as_ns3_timestamps() {
    use super::test_util::ack_pkt;
    for tick_us in [0, 1000] {
        let c = TcpConfig {
            rtt_every_ack: true,
            ts_clock: us(tick_us),
            init_cwnd_segments: 4,
            ..cfg(false)
        };
        let mut tx = TcpSender::new(&c, ends(), 20 * MSS);
        let mut out = Vec::new();
        let t0 = us(990);
        tx.on_start(t0, &mut out);
        // Within the same millisecond: a sample of 0 ticks.
        tx.on_packet(us(995), &ack_pkt(MSS, c.rwnd_bytes, false), &mut Vec::new());
        let first = tx.rtt_samples().1;
        // Across the millisecond boundary: one tick.
        tx.on_packet(
            us(1002),
            &ack_pkt(2 * MSS, c.rwnd_bytes, false),
            &mut Vec::new(),
        );
        let second = tx.rtt_samples().1;
        if tick_us == 0 {
            assert_eq!((first, second), (us(5), us(12)));
        } else {
            assert_eq!((first, second), (us(1), SimTime::from_ms(1)));
            // SRTT follows: 7/8 * 1 us + 1/8 * 1 ms.
            assert_eq!(
                tx.stats().srtt,
                Some(SimTime((7 * us(1).ps() + SimTime::from_ms(1).ps()) / 8))
            );
        }
    }
}

/// A config with `rtt_every_ack`, millisecond timestamps when `ts`, ns-3's
/// scoreboard when `board`, and `init` segments of initial window.
fn rtt_cfg(ts: bool, board: bool, init: u32) -> TcpConfig {
    TcpConfig {
        rtt_every_ack: true,
        ts_clock: if ts {
            SimTime::from_ms(1)
        } else {
            SimTime::ZERO
        },
        reno_scoreboard: board,
        init_cwnd_segments: init,
        ..cfg(false)
    }
}

/// Karn's rule with `rtt_every_ack`: an ACK whose oldest covered segment
/// was resent gives no sample; the next ACK of never-resent data does.
#[test]
fn rtt_every_ack_skips_acks_of_retransmitted_data() {
    use super::test_util::ack_pkt;
    let c = rtt_cfg(false, false, 6);
    let (mut tx, _) = started(&c, 40 * MSS);
    let w = c.rwnd_bytes;
    // Segment 0 lost: three duplicate ACKs, fast retransmit.
    dupacks(&mut tx, us(10), 3, 0, w, false);
    assert_eq!(tx.stats().fast_retransmits, 1);
    assert_eq!(tx.rtt_samples().0, 0);
    // The resend fills the hole: the ACK covers segment 0 (resent) and
    // 1..5 (sent once): no sample.
    let mut o = Vec::new();
    tx.on_packet(us(30), &ack_pkt(6 * MSS, w, false), &mut o);
    assert_eq!(tx.rtt_samples().0, 0);
    // Segments sent after the loss are timed again.
    let next = segs(&o);
    assert!(!next.is_empty());
    let (seq, len) = next[0];
    tx.on_packet(
        us(45),
        &ack_pkt(seq + u64::from(len), w, false),
        &mut Vec::new(),
    );
    assert_eq!(tx.rtt_samples(), (1, us(15)));
}

/// `rtt_every_ack` times an ACK from the oldest segment it covers (ns-3
/// `EstimateRtt` reads `m_history.front()`; RFC 7323 section 4.3: a
/// delayed ACK echoes the earliest unacknowledged segment's timestamp),
/// not from the newest.
#[test]
fn rtt_every_ack_times_the_oldest_segment_an_ack_covers() {
    use super::test_util::ack_pkt;
    let c = rtt_cfg(false, false, 2);
    let (mut tx, out) = started(&c, 20 * MSS);
    assert_eq!(segs(&out), vec![(0, MSS as u32), (MSS, MSS as u32)]);
    // The first ACK (at 10 us) times segment 0 and opens the window:
    // segments 2 and 3 leave at 10 us.
    let mut o = Vec::new();
    tx.on_packet(us(10), &ack_pkt(MSS, c.rwnd_bytes, false), &mut o);
    assert_eq!(tx.rtt_samples(), (1, us(10)));
    assert_eq!(segs(&o)[0].0, 2 * MSS);
    // One ACK covers segment 1 (sent at 0) and segment 2 (sent at 10 us):
    // timed from segment 1, 30 us (from segment 2 it would be 20 us).
    tx.on_packet(
        us(30),
        &ack_pkt(3 * MSS, c.rwnd_bytes, false),
        &mut Vec::new(),
    );
    assert_eq!(tx.rtt_samples(), (2, us(30)));
}

/// With TCP timestamps (`ts_clock` set) the ACK of a resent segment is
/// timed from the resend, whose timestamp the receiver echoes (ns-3
/// `CalculateRttSample` reads the echo whether or not the segment was
/// resent; RFC 7323 section 4 removes Karn's ambiguity); without them
/// Karn's rule holds (`rtt_every_ack_skips_acks_of_retransmitted_data`).
#[test]
fn with_timestamps_the_ack_of_a_resend_is_timed_from_the_resend() {
    use super::test_util::ack_pkt;
    for ts in [false, true] {
        let c = rtt_cfg(ts, false, 6);
        let (mut tx, _) = started(&c, 40 * MSS);
        let w = c.rwnd_bytes;
        // Segment 0 lost: three duplicate ACKs, resent at 10 us.
        dupacks(&mut tx, us(10), 3, 0, w, false);
        assert_eq!(tx.stats().fast_retransmits, 1);
        // The resend's ACK, at 1005 us: one millisecond tick after it.
        tx.on_packet(us(1005), &ack_pkt(6 * MSS, w, false), &mut Vec::new());
        if ts {
            assert_eq!(tx.rtt_samples(), (1, SimTime::from_ms(1)));
        } else {
            assert_eq!(tx.rtt_samples().0, 0);
        }
    }
}

/// A retransmission timeout empties the RTT log (ns-3 `ReTxTimeout`:
/// `m_history.clear()`), and the go-back-N's resends are not logged: their
/// ACKs give no sample, with timestamps too (where a fast retransmit's
/// does, above), with ns-3's scoreboard (`reno_board_timeout`) or without.
/// Without timestamps Karn's rule gives none either.
#[test]
fn a_timeout_forgets_the_segments_sent_before_it() {
    use super::test_util::ack_pkt;
    for (ts, board) in [(false, false), (true, false), (false, true), (true, true)] {
        let c = rtt_cfg(ts, board, 4);
        let (mut tx, _) = started(&c, 40 * MSS);
        let w = c.rwnd_bytes;
        // No ACK before the initial RTO (3 ms): a timeout resends segment 0
        // alone (cwnd one segment).
        let deadline = tx.timer_deadline().unwrap();
        let mut o = Vec::new();
        tx.on_timer(deadline, &mut o);
        assert_eq!(tx.stats().timeouts, 1);
        assert_eq!(segs(&o), vec![(0, MSS as u32)]);
        // The originals' ACKs arrive late: segment 0 (resent), then
        // segment 1 (sent at 0, never resent).
        let t = deadline + us(5);
        tx.on_packet(t, &ack_pkt(MSS, w, false), &mut Vec::new());
        tx.on_packet(t + us(1), &ack_pkt(2 * MSS, w, false), &mut Vec::new());
        assert_eq!(tx.rtt_samples().0, 0, "timestamps {ts}, board {board}");
    }
}

/// `TcpConfig::ece_ends_recovery`: in ns-3 an ECE on a partial ACK ends
/// fast recovery (EnterCwr): the next hole is not resent and the window is
/// cut again; off (Linux), the partial ACK resends the next hole.
#[test]
fn ece_on_a_partial_ack_ends_recovery_only_with_the_option() {
    use super::test_util::ack_pkt;
    use super::CcKind;
    for ns3 in [false, true] {
        let c = TcpConfig {
            cc: CcKind::Dctcp { g_shift: 4 },
            cwr_ignores_dupacks: true,
            ece_ends_recovery: ns3,
            init_cwnd_segments: 10,
            ..cfg(false)
        };
        let (mut tx, _) = started(&c, 40 * MSS);
        let w = c.rwnd_bytes;
        // Segments 0 and 2 lost: duplicate ACKs of 0 from 1, 3, 4.
        dupacks(&mut tx, us(10), 3, 0, w, false);
        assert_eq!(tx.stats().fast_retransmits, 1);
        let ssthresh = tx.stats().ssthresh_bytes;
        // The resent segment 0 arrives: a partial ACK of 2 * MSS, with ECE.
        let mut o = Vec::new();
        tx.on_packet(us(30), &ack_pkt(2 * MSS, w, true), &mut o);
        let resent_hole = segs(&o).contains(&(2 * MSS, MSS as u32));
        if ns3 {
            assert!(!resent_hole, "{:?}", segs(&o));
            assert_eq!(tx.stats().ecn_cuts, 1);
            // alpha is 1 at the start: (1 - 1/2) x the recovery's ssthresh.
            assert_eq!(tx.stats().ssthresh_bytes, ssthresh / 2);
            assert_eq!(tx.stats().cwnd_bytes, ssthresh / 2);
            // CA_CWR: later duplicate ACKs start no new recovery.
            for i in 0..3 {
                tx.on_packet(us(31 + i), &ack_pkt(2 * MSS, w, false), &mut Vec::new());
            }
            assert_eq!(tx.stats().fast_retransmits, 1);
        } else {
            assert!(resent_hole, "{:?}", segs(&o));
            assert_eq!(tx.stats().ecn_cuts, 0);
        }
    }
}

/// `TcpConfig::dctcp_dupack_bytes`: duplicate ACKs count in DCTCP's alpha
/// (one MSS each, marked with ECE), as in Linux and ns-3; off, only newly
/// acknowledged bytes do (RFC 8257).
#[test]
fn dctcp_dupack_bytes_counts_marked_duplicate_acks_in_alpha() {
    use super::test_util::ack_pkt;
    use super::CcKind;
    let mut alphas = Vec::new();
    for on in [false, true] {
        let c = TcpConfig {
            cc: CcKind::Dctcp { g_shift: 4 },
            dctcp_dupack_bytes: on,
            init_cwnd_segments: 10,
            ..cfg(false)
        };
        let (mut tx, _) = started(&c, 40 * MSS);
        let w = c.rwnd_bytes;
        // The first ACK ends the first observation window: alpha = 15/16.
        tx.on_packet(us(10), &ack_pkt(MSS, w, false), &mut Vec::new());
        // Two duplicate ACKs with ECE, then an unmarked ACK of 10 more
        // segments, past the window's end (10 MSS sent then).
        for i in 0..2 {
            tx.on_packet(us(11 + i), &ack_pkt(MSS, w, true), &mut Vec::new());
        }
        tx.on_packet(us(20), &ack_pkt(11 * MSS, w, false), &mut Vec::new());
        alphas.push(tx.stats().dctcp_alpha.unwrap());
    }
    let a0 = 15.0 / 16.0;
    // Off: F = 0 of 10 MSS. On: F = 2 of 12 MSS.
    assert!((alphas[0] - a0 * a0).abs() < 1e-12, "{alphas:?}");
    let f: f64 = 2.0 / 12.0;
    assert!(
        (alphas[1] - (a0 * a0 + f / 16.0)).abs() < 1e-12,
        "{alphas:?}"
    );
}

/// `reno_scoreboard`: a sender of `n` segments with `cwnd` segments, that
/// has sent its first window.
fn reno_board_sender(on: bool, n: u64) -> (TcpSender, Vec<Packet>) {
    let c = TcpConfig {
        mss: MSS as u32,
        init_cwnd_segments: 10,
        limited_transmit: true,
        reno_scoreboard: on,
        ..cfg(false)
    };
    let (tx, out) = started(&c, n * MSS);
    (tx, out)
}

#[test]
fn reno_scoreboard_ignores_duplicate_acks_until_the_timeout_is_repaired() {
    use super::test_util::ack_pkt;
    for on in [false, true] {
        let (mut tx, first) = reno_board_sender(on, 40);
        assert_eq!(segs(&first).len(), 10);
        let rto = tx.timer_deadline().unwrap();
        let mut out = Vec::new();
        tx.on_timer(rto, &mut out);
        // Both resend the head alone (cwnd = 1 SMSS): ns-3 marked all ten
        // lost (`SetSentListLost`), the default goes back to snd_una.
        assert_eq!(segs(&out), vec![(0, MSS as u32)], "on = {on}");
        // Its ACK: both resend segments 1 and 2 (cwnd 2; ns-3's pipe counts
        // only resent segments).
        out.clear();
        tx.on_packet(rto + us(10), &ack_pkt(MSS, 1 << 20, false), &mut out);
        assert_eq!(
            segs(&out),
            vec![(MSS, MSS as u32), (2 * MSS, MSS as u32)],
            "on = {on}"
        );
        // Two duplicate ACKs (the originals of 1 and 2 were still queued):
        // the default's limited transmit sends new data on each; ns-3's
        // CA_LOSS ignores them ("We do not count the DupAcks received in
        // CA_LOSS").
        out.clear();
        for k in 0..2 {
            tx.on_packet(rto + us(20 + k), &ack_pkt(MSS, 1 << 20, false), &mut out);
        }
        let n = segs(&out).len();
        if on {
            assert_eq!(n, 0);
            assert_eq!(tx.stats().dup_acks, 2);
        } else {
            assert_eq!(n, 2);
        }
    }
}

#[test]
fn reno_scoreboard_marks_left_after_recovery_resend_the_head_and_one_dupack_recovers() {
    use super::test_util::ack_pkt;
    let w = 1 << 20;
    let mut resent_on_exit = Vec::new();
    for on in [false, true] {
        let (mut tx, _) = reno_board_sender(on, 80);
        // Segment 0 lost; 16 duplicate ACKs (more than the 9 segments the
        // receiver holds: the others come from duplicates): the third starts
        // fast recovery in both.
        for t in 1..=16 {
            tx.on_packet(us(10 + t), &ack_pkt(0, w, false), &mut Vec::new());
        }
        assert_eq!(tx.stats().fast_retransmits, 1);
        assert!(tx.stats().in_recovery);
        // The recovery point: snd_max when it started (10 + 2 limited
        // transmit segments).
        let recover = 12 * MSS;
        let before = tx.stats().retransmitted_segments;
        let mut sent = Vec::new();
        tx.on_packet(us(40), &ack_pkt(recover, w, false), &mut sent);
        assert!(!tx.stats().in_recovery);
        resent_on_exit.push(tx.stats().retransmitted_segments - before);
        let resent: Vec<u64> = segs(&sent)
            .iter()
            .map(|&(s, _)| s)
            .filter(|&s| s < recover + 14 * MSS)
            .collect();
        if on {
            // ns-3: the duplicate ACKs marked segments past the recovery
            // point SACKed; the ACK makes the marked segment 12 the head, so
            // it is marked lost instead and resent at once...
            assert_eq!(resent.first(), Some(&recover), "{:?}", segs(&sent));
            // ...and a single duplicate ACK starts the next recovery
            // (`DupAck`: IsLost(HighACK + 1)).
            tx.on_packet(us(50), &ack_pkt(recover, w, false), &mut Vec::new());
            assert_eq!(tx.stats().fast_retransmits, 2);
        } else {
            // RFC 6582: nothing is resent, and one duplicate ACK does nothing.
            assert!(resent.is_empty(), "{:?}", segs(&sent));
            tx.on_packet(us(50), &ack_pkt(recover, w, false), &mut Vec::new());
            assert_eq!(tx.stats().fast_retransmits, 1);
        }
    }
    assert_eq!(resent_on_exit, vec![0, 1]);
}

/// `cwr_ends_at_timeout`: a DCTCP sender cut by an ECE, then timed out
/// before the cut window is acknowledged. The ECE on the ACK of the
/// timeout's resend cuts again only with the option (ns-3 3.44: the
/// timeout turned CA_CWR into CA_LOSS, and `ReceivedAck` enters CA_CWR on
/// an ECE in any state but CA_CWR); off, the guard of the first cut (no new
/// cut until SND.UNA passes what was sent then) still holds. Both timeout
/// paths: RFC 6582's go-back-N and ns-3's `reno_scoreboard`.
#[test]
fn cwr_ends_at_timeout_lets_the_next_ece_cut_at_once() {
    use super::test_util::ack_pkt;
    use super::CcKind;
    let w = 1 << 20;
    for board in [false, true] {
        let mut cuts = Vec::new();
        for on in [false, true] {
            let c = TcpConfig {
                cc: CcKind::DCTCP,
                cwr_ignores_dupacks: true,
                limited_transmit: true,
                reno_scoreboard: board,
                cwr_ends_at_timeout: on,
                init_cwnd_segments: 10,
                ..cfg(false)
            };
            let (mut tx, _) = started(&c, 40 * MSS);
            // The first segment's ACK carries ECE: DCTCP cuts; what was sent
            // then (11 segments) is the cut's window.
            tx.on_packet(us(10), &ack_pkt(MSS, w, true), &mut Vec::new());
            assert_eq!(tx.stats().ecn_cuts, 1);
            let window_end = tx.stats().snd_max;
            assert!(window_end > 2 * MSS);
            // Nothing more arrives: the timer resends segment 1.
            let rto = tx.timer_deadline().unwrap();
            let mut out = Vec::new();
            tx.on_timer(rto, &mut out);
            assert_eq!(segs(&out)[0], (MSS, MSS as u32), "board {board}");
            assert_eq!(tx.stats().timeouts, 1);
            // Its ACK, inside the cut's window, carries ECE.
            tx.on_packet(rto + us(10), &ack_pkt(2 * MSS, w, true), &mut Vec::new());
            assert!(2 * MSS <= window_end);
            cuts.push(tx.stats().ecn_cuts);
            if on {
                // ns-3's CA_CWR now: duplicate ACKs are only counted.
                let before = tx.stats().fast_retransmits;
                for k in 0..3 {
                    tx.on_packet(
                        rto + us(20 + k),
                        &ack_pkt(2 * MSS, w, false),
                        &mut Vec::new(),
                    );
                }
                assert_eq!(tx.stats().fast_retransmits, before, "board {board}");
            }
        }
        assert_eq!(cuts, vec![1, 2], "board {board}");
    }
}

#[test]
fn unvalidated_cwnd_grows_while_the_receive_window_limits_the_flight() {
    // A flow held to 2 segments by the receive window: with validation
    // (RFC 7661 section 4.2) cwnd stays at its initial 10 segments (already
    // above twice the largest flight); ns-3's rule grows it by one segment
    // per segment acknowledged in slow start, 20 ACKs later to 30, while
    // the flight never passes the receive window in either.
    use super::test_util::ack_pkt;
    let w = 2 * MSS as u32;
    let mut grown = Vec::new();
    for on in [false, true] {
        let c = TcpConfig {
            rwnd_bytes: w,
            unvalidated_cwnd: on,
            init_cwnd_segments: 10,
            ..cfg(false)
        };
        let (mut tx, out) = started(&c, 100 * MSS);
        assert_eq!(segs(&out).len(), 2);
        for i in 1..=20u64 {
            let mut o = Vec::new();
            tx.on_packet(us(10 * i), &ack_pkt(i * MSS, w, false), &mut o);
            assert_eq!(segs(&o), vec![((i + 1) * MSS, MSS as u32)]);
            assert!(tx.bytes_in_flight() <= 2 * MSS);
        }
        grown.push(tx.stats().cwnd_bytes);
    }
    assert_eq!(grown, vec![10 * MSS, 30 * MSS]);
}

#[test]
fn dctcp_window_end_next_tx_follows_the_resends_after_a_timeout() {
    use super::test_util::ack_pkt;
    use super::CcKind;
    // Alpha after each ACK, with ns-3's window end and with RFC 8257's.
    let mut runs = Vec::new();
    for on in [false, true] {
        let c = TcpConfig {
            cc: CcKind::Dctcp { g_shift: 4 },
            reno_scoreboard: true,
            dctcp_window_end_next_tx: on,
            ..cfg(false)
        };
        let (mut tx, first) = started(&c, 40 * MSS);
        assert_eq!(segs(&first).len(), 10);
        let w = 1 << 20;
        let mut alphas = Vec::new();
        let mut out = Vec::new();
        for ack in [MSS, 10 * MSS] {
            tx.on_packet(us(10), &ack_pkt(ack, w, false), &mut out);
            alphas.push(tx.stats().dctcp_alpha.unwrap());
        }
        // Slow start has sent up to 22 MSS. The timer: every segment from
        // 10 MSS is lost and resent oldest first, one then two at a time.
        let sent = segs(&out).last().map(|&(s, l)| s + u64::from(l));
        assert_eq!(sent, Some(22 * MSS));
        let rto = tx.timer_deadline().unwrap();
        out.clear();
        tx.on_timer(rto, &mut out);
        assert_eq!(segs(&out), vec![(10 * MSS, MSS as u32)]);
        for ack in [11, 12, 13] {
            out.clear();
            tx.on_packet(rto + us(ack), &ack_pkt(ack * MSS, w, false), &mut out);
            alphas.push(tx.stats().dctcp_alpha.unwrap());
        }
        runs.push(alphas);
    }
    let a = 15.0 / 16.0;
    // RFC 8257: the first ACK ends a window, then SND.NXT (12 MSS, then
    // 22 MSS) must be passed; no window ends among the resends.
    assert_eq!(runs[0], vec![a, a, a * a, a * a, a * a]);
    // ns-3: the first ACK sets the end (10 MSS, what was sent), reached by
    // the second; the next end is 12 MSS, what was sent when that ACK came;
    // after the timeout the next segment to send is just past the resends,
    // so the ACKs of 12 and 13 MSS each end a window.
    assert_eq!(runs[1], vec![1.0, a, a, a * a, a * a * a]);
}

/// ns-3 3.44's `ProcessAck` leaving CA_LOSS recomputes `segsAcked =
/// (ackNumber - m_recover) / SMSS` for `IncreaseWindow`: with ns-3's
/// growth by segments acknowledged (`slow_start_all_acked`,
/// `ca_segment_count`), the ACK that repairs a timeout up to the recovery
/// point grows cwnd by nothing, however much it acknowledged. An ACK below
/// the recovery point grows it by all it acknowledged, as in ns-3.
#[test]
fn loss_exit_grows_cwnd_only_beyond_the_recovery_point() {
    use super::test_util::ack_pkt;
    let w = 1 << 20;
    let run = |all_acked: bool, seg_count: bool, acks: &[u64]| {
        let c = TcpConfig {
            init_cwnd_segments: 10,
            reno_scoreboard: true,
            slow_start_all_acked: all_acked,
            ca_segment_count: seg_count,
            ..cfg(false)
        };
        let (mut tx, first) = started(&c, 40 * MSS);
        assert_eq!(segs(&first).len(), 10);
        let rto = tx.timer_deadline().unwrap();
        let mut out = Vec::new();
        tx.on_timer(rto, &mut out);
        // cwnd 1 SMSS, ssthresh 5 SMSS (half the ten in flight), the
        // recovery point at 10 SMSS.
        assert_eq!(segs(&out), vec![(0, MSS as u32)]);
        assert_eq!(tx.stats().ssthresh_bytes, 5 * MSS);
        for (k, &a) in acks.iter().enumerate() {
            tx.on_packet(
                rto + us(10 + k as u64),
                &ack_pkt(a * MSS, w, false),
                &mut out,
            );
        }
        tx.stats().cwnd_bytes
    };
    // The receiver held segments 1-9: the head's resend is acknowledged up
    // to the recovery point, 10 segments at once, and CA_LOSS ends with no
    // segment beyond it: cwnd stays at 1 SMSS (ns-3: `SlowStart` with
    // segmentsAcked = 0).
    for seg_count in [false, true] {
        assert_eq!(run(true, seg_count, &[10]), MSS, "{seg_count}");
    }
    // Without `slow_start_all_acked`, RFC 5681 equation (2): one SMSS.
    for seg_count in [false, true] {
        assert_eq!(run(false, seg_count, &[10]), 2 * MSS, "{seg_count}");
    }
    // Below the recovery point (still CA_LOSS) the ACK grows cwnd by all
    // it acknowledged, up to ssthresh: 1 + 4 segments.
    assert_eq!(run(true, false, &[5]), 5 * MSS);
}

/// The same exit with `newreno_ack_adder` (ns-3's `TcpNewReno`): the ACK
/// that reaches the recovery point adds nothing (segmentsAcked = 0), where
/// RFC 5681's rule adds one SMSS; an ACK below it adds one SMSS
/// (`TcpNewReno::SlowStart`), whatever it covers.
#[test]
fn loss_exit_with_the_newreno_adder_grows_nothing() {
    use super::test_util::ack_pkt;
    let run = |adder: bool, ack: u64| {
        let c = TcpConfig {
            init_cwnd_segments: 10,
            reno_scoreboard: true,
            newreno_ack_adder: adder,
            ..cfg(false)
        };
        let (mut tx, _) = started(&c, 40 * MSS);
        let rto = tx.timer_deadline().unwrap();
        let mut out = Vec::new();
        tx.on_timer(rto, &mut out);
        tx.on_packet(rto + us(10), &ack_pkt(ack * MSS, 1 << 20, false), &mut out);
        tx.stats().cwnd_bytes
    };
    assert_eq!(run(true, 10), MSS);
    assert_eq!(run(false, 10), 2 * MSS);
    assert_eq!(run(true, 5), 2 * MSS);
}
