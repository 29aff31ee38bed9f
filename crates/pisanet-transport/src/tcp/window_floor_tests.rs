//! `TcpConfig::dctcp_no_floor` and `TcpConfig::full_segment_window`
//! together, as ns-3 3.44 runs them: DCTCP's cut takes the window below
//! one segment with nothing in flight, the sender waits for the
//! retransmission timer, and the timeout restores one segment.

use super::test_util::{ack_pkt, segs, started, us, MSS};
use super::{CcKind, TcpConfig, TcpSender};
use pisanet_engine::SimTime;
use pisanet_net::packet::Packet;

const W: u32 = 1 << 20;

/// DCTCP with alpha held at the fraction marked (g = 1), a 3-segment
/// initial window, 20 segments to send.
fn cfg(no_floor: bool, full_segment: bool, board: bool) -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        init_cwnd_segments: 3,
        initial_rto: SimTime::from_ms(3),
        min_rto: SimTime::from_ms(1),
        cc: CcKind::Dctcp { g_shift: 0 },
        dctcp_no_floor: no_floor,
        full_segment_window: full_segment,
        reno_scoreboard: board,
        ..TcpConfig::default()
    }
}

/// Starts a sender and acknowledges, with ECE, its first window (one ACK
/// at 10 us) and then the segment that follows (at 20 us): two cuts by
/// half. Returns the sender and what it sent after the second ACK.
fn two_cuts(c: &TcpConfig) -> (TcpSender, Vec<Packet>) {
    let (mut tx, first) = started(c, 20 * MSS);
    assert_eq!(segs(&first).len(), 3);
    let mut out = Vec::new();
    tx.on_packet(us(10), &ack_pkt(3 * MSS, W, true), &mut out);
    out.clear();
    tx.on_packet(us(20), &ack_pkt(4 * MSS, W, true), &mut out);
    (tx, out)
}

#[test]
fn without_a_floor_the_window_falls_below_one_segment() {
    for board in [false, true] {
        // Linux's floor: 2 SMSS after each cut (one segment in flight
        // after the second ACK, one more sent).
        let (tx, out) = two_cuts(&cfg(false, false, board));
        assert_eq!(tx.stats().cwnd_bytes, 2 * MSS, "board {board}");
        assert_eq!(segs(&out), vec![(5 * MSS, MSS as u32)], "board {board}");
        // ns-3's cut: 3000 -> 1500 (one segment sent) -> 750.
        let (tx, _) = two_cuts(&cfg(true, true, board));
        assert_eq!(tx.stats().cwnd_bytes, 750, "board {board}");
        assert_eq!(tx.stats().ssthresh_bytes, 750, "board {board}");
        assert_eq!(tx.stats().ecn_cuts, 2, "board {board}");
    }
}

#[test]
fn a_window_under_one_segment_sends_nothing_until_the_timer() {
    // Without `full_segment_window` the default path sends what the window
    // allows at once (750 B); with it, nothing.
    let (tx, out) = two_cuts(&cfg(true, false, false));
    assert_eq!(segs(&out), vec![(4 * MSS, 750)]);
    assert_eq!(tx.bytes_in_flight(), 750);
    for board in [false, true] {
        let (tx, out) = two_cuts(&cfg(true, true, board));
        assert!(segs(&out).is_empty(), "board {board}");
        assert_eq!(tx.bytes_in_flight(), 0, "board {board}");
        // The timer stays armed for the RTO from the ACK (ns-3's `NewAck`).
        let rto = tx.stats().rto;
        assert_eq!(tx.timer_deadline(), Some(us(20) + rto), "board {board}");
        assert_eq!(tx.stats().timeouts, 0);
    }
}

#[test]
fn the_timeout_restores_one_segment_and_doubles_the_rto() {
    for board in [false, true] {
        let (mut tx, _) = two_cuts(&cfg(true, true, board));
        let rto = tx.stats().rto;
        let at = tx.timer_deadline().unwrap();
        // An early call does nothing.
        let mut out = Vec::new();
        tx.on_timer(at - us(1), &mut out);
        assert!(out.is_empty());
        tx.on_timer(at, &mut out);
        // One full segment of new data (not a 1-byte window probe), cwnd =
        // 1 SMSS, counted as a timeout, the RTO doubled (RFC 6298 (5.5)).
        assert_eq!(segs(&out), vec![(4 * MSS, MSS as u32)], "board {board}");
        let st = tx.stats();
        assert_eq!(st.cwnd_bytes, MSS, "board {board}");
        assert_eq!((st.timeouts, st.window_probes), (1, 0), "board {board}");
        assert_eq!(st.rto, rto + rto, "board {board}");
        assert_eq!(tx.timer_deadline(), Some(at + rto + rto), "board {board}");
        // Without `dctcp_loss_uses_alpha`: RFC 5681 equation (4) with
        // nothing in flight, 2 SMSS.
        assert_eq!(st.ssthresh_bytes, 2 * MSS, "board {board}");
        // Its ACK with ECE cuts to 500 B: nothing again until the timer.
        out.clear();
        tx.on_packet(at + us(10), &ack_pkt(5 * MSS, W, true), &mut out);
        assert!(segs(&out).is_empty(), "board {board}");
        assert_eq!(tx.stats().cwnd_bytes, 500, "board {board}");
        // Unmarked, the next timeout's segment is acknowledged and cwnd
        // grows from 1 SMSS in slow start (ssthresh 2 SMSS): two segments.
        let at = tx.timer_deadline().unwrap();
        out.clear();
        tx.on_timer(at, &mut out);
        assert_eq!(segs(&out), vec![(5 * MSS, MSS as u32)], "board {board}");
        out.clear();
        tx.on_packet(at + us(10), &ack_pkt(6 * MSS, W, false), &mut out);
        assert_eq!(
            segs(&out),
            vec![(6 * MSS, MSS as u32), (7 * MSS, MSS as u32)],
            "board {board}"
        );
    }
}

#[test]
fn without_the_options_the_old_window_probe_path_is_unchanged() {
    // `reno_scoreboard` alone already waits for a full segment: with a
    // sub-segment window and nothing in flight its timer sends the 1-byte
    // probe, as before these options; `full_segment_window` makes it a
    // timeout instead.
    let (mut tx, out) = two_cuts(&cfg(true, false, true));
    assert!(segs(&out).is_empty());
    let at = tx.timer_deadline().unwrap();
    let mut out = Vec::new();
    tx.on_timer(at, &mut out);
    assert_eq!(segs(&out), vec![(4 * MSS, 1)]);
    assert_eq!((tx.stats().timeouts, tx.stats().window_probes), (0, 1));
}

#[test]
fn with_loss_uses_alpha_the_empty_timeout_cuts_ssthresh_from_cwnd() {
    // ns-3's `ReTxTimeout` calls `TcpDctcp::GetSsThresh`: (1 - alpha / 2)
    // x cwnd, here 750 B x 0.5.
    for board in [false, true] {
        let c = TcpConfig {
            dctcp_loss_uses_alpha: true,
            ..cfg(true, true, board)
        };
        let (mut tx, _) = two_cuts(&c);
        let at = tx.timer_deadline().unwrap();
        tx.on_timer(at, &mut Vec::new());
        let st = tx.stats();
        assert_eq!(
            (st.cwnd_bytes, st.ssthresh_bytes),
            (MSS, 375),
            "board {board}"
        );
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Step {
        /// An ACK of `eighths` / 8 of what is outstanding, ECE as given.
        Ack { eighths: u64, ece: bool },
        /// The timer fires at its deadline.
        Timer,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (0u64..=8, any::<bool>()).prop_map(|(eighths, ece)| Step::Ack { eighths, ece }),
            1 => Just(Step::Timer),
        ]
    }

    proptest! {
        /// With both options, whatever the ACKs (marked or not) and
        /// timeouts: new data leaves only in full segments (or the flow's
        /// tail), a timer runs until the flow is complete (a window under
        /// one segment never stalls it), and acknowledging everything with
        /// ECE, firing the timer whenever nothing is in flight, completes
        /// the flow (one segment per timeout at worst).
        #[test]
        fn full_segments_only_and_never_stalled(
            steps in prop::collection::vec(step(), 1..150),
            board in any::<bool>(),
            size in 1u64..60_000,
        ) {
            let c = cfg(true, true, board);
            let (mut tx, first) = started(&c, size);
            let mut now = SimTime::ZERO;
            let check = |before_max: u64, out: &[Packet], tx: &TcpSender| -> Result<(), TestCaseError> {
                for p in out {
                    let t = p.tcp().expect("tcp");
                    if t.seq >= before_max {
                        prop_assert_eq!(u64::from(t.payload), MSS.min(size - t.seq));
                    }
                }
                prop_assert_eq!(tx.timer_deadline().is_none(), tx.is_complete());
                Ok(())
            };
            check(0, &first, &tx)?;
            for st in steps {
                now += us(7);
                let before_max = tx.stats().snd_max;
                let mut out = Vec::new();
                match st {
                    Step::Ack { eighths, ece } => {
                        let una = tx.stats().bytes_acked;
                        let ack = una + (tx.stats().snd_max - una) * eighths / 8;
                        tx.on_packet(now, &ack_pkt(ack, W, ece), &mut out);
                    }
                    Step::Timer => {
                        if let Some(d) = tx.timer_deadline() {
                            now = now.max(d);
                        }
                        tx.on_timer(now, &mut out);
                    }
                }
                check(before_max, &out, &tx)?;
            }
            // Drain: every ACK marked, the timer whenever nothing is in flight.
            for _ in 0..(4 * size / MSS + 20) {
                if tx.is_complete() {
                    break;
                }
                now += us(7);
                let before_max = tx.stats().snd_max;
                let mut out = Vec::new();
                if tx.bytes_in_flight() > 0 {
                    tx.on_packet(now, &ack_pkt(tx.stats().snd_max, W, true), &mut out);
                } else {
                    now = now.max(tx.timer_deadline().expect("a timer while incomplete"));
                    tx.on_timer(now, &mut out);
                }
                check(before_max, &out, &tx)?;
            }
            prop_assert!(tx.is_complete(), "{:?}", tx.stats());
        }
    }
}
