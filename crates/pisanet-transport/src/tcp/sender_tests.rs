//! Script-like tests of the sender: build a state, then feed ACKs and
//! timer wake-ups and check what comes out.

use super::*;
use crate::tcp::test_util::{ack_pkt, ends, segs, us, MSS};
use crate::tcp::CcKind;
use pisanet_net::packet::PROTO_TCP;

const BIG: u64 = 10_000_000;
const RWND: u32 = 1_000_000;

fn cfg() -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        init_cwnd_segments: 10,
        min_rto: SimTime::from_ms(1),
        max_rto: SimTime::from_ms(64),
        initial_rto: SimTime::from_ms(3),
        rwnd_bytes: RWND,
        ..TcpConfig::default()
    }
}

/// A sender driven step by step.
struct Script {
    tx: TcpSender,
}

impl Script {
    /// A sender of `size` bytes that sent its first window at t = 0.
    fn started(cfg: &TcpConfig, size: u64) -> (Self, Vec<(u64, u32)>) {
        let mut tx = TcpSender::new(cfg, ends(), size);
        let mut out = Vec::new();
        tx.on_start(SimTime::ZERO, &mut out);
        (Script { tx }, segs(&out))
    }

    /// A sender in congestion avoidance: first window sent, ssthresh = cwnd.
    fn in_congestion_avoidance() -> Self {
        let (mut s, _) = Script::started(&cfg(), BIG);
        s.tx.win.ssthresh = s.tx.win.cwnd;
        s
    }

    /// A sender in fast recovery after losing the segment at 1000: the first
    /// window (10 segments), an ACK of 1000 (2 more sent), 3 dup ACKs.
    fn in_fast_recovery() -> Self {
        let (mut s, _) = Script::started(&cfg(), BIG);
        assert_eq!(s.ack(10, 1000).len(), 2);
        for _ in 0..2 {
            assert!(s.ack(11, 1000).is_empty());
        }
        assert_eq!(s.ack(12, 1000), vec![(1000, 1000)]);
        assert!(s.tx.in_recovery);
        s
    }

    /// A sender of `size` bytes that started at t = 0 with a send budget of
    /// `budget` wire bytes.
    fn started_with_budget(cfg: &TcpConfig, size: u64, budget: u64) -> (Self, Vec<(u64, u32)>) {
        let mut tx = TcpSender::new(cfg, ends(), size);
        tx.set_send_budget(budget);
        let mut out = Vec::new();
        tx.on_start(SimTime::ZERO, &mut out);
        (Script { tx }, segs(&out))
    }

    /// The host freed budget: `budget` bytes may go, then `on_send_ready`.
    fn send_ready(&mut self, at_us: u64, budget: u64) -> Vec<(u64, u32)> {
        self.tx.set_send_budget(budget);
        let mut out = Vec::new();
        self.tx.on_send_ready(us(at_us), &mut out);
        segs(&out)
    }

    fn ack(&mut self, at_us: u64, ack: u64) -> Vec<(u64, u32)> {
        self.ack_win(at_us, ack, RWND)
    }

    fn ack_win(&mut self, at_us: u64, ack: u64, window: u32) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        self.tx
            .on_packet(us(at_us), &ack_pkt(ack, window, false), &mut out);
        segs(&out)
    }

    fn ack_ece(&mut self, at_us: u64, ack: u64) -> Vec<Packet> {
        let mut out = Vec::new();
        self.tx
            .on_packet(us(at_us), &ack_pkt(ack, RWND, true), &mut out);
        out
    }

    fn timer(&mut self, at: SimTime) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        self.tx.on_timer(at, &mut out);
        segs(&out)
    }

    fn cwnd(&self) -> u64 {
        self.tx.stats().cwnd_bytes
    }
}

fn full_segments(from: u64, n: u64) -> Vec<(u64, u32)> {
    (0..n).map(|i| (from + i * MSS, MSS as u32)).collect()
}

#[test]
fn first_window_is_init_cwnd_of_complete_packets() {
    let (s, first) = Script::started(&cfg(), BIG);
    assert_eq!(first, full_segments(0, 10));
    let mut out = Vec::new();
    let mut tx = TcpSender::new(&cfg(), ends(), BIG);
    tx.on_start(us(7), &mut out);
    let p = &out[0];
    assert_eq!(p.uid, 0);
    assert_eq!(p.flow, ends().flow);
    assert_eq!(p.size, Packet::tcp_wire_size(MSS as u32));
    assert_eq!((p.ip.src, p.ip.dst), (ends().src_addr, ends().dst_addr));
    assert_eq!(
        (p.ip.proto, p.ip.ttl, p.ip.dscp, p.prio),
        (PROTO_TCP, 64, 1, 2)
    );
    assert_eq!(p.ip.ecn, Ecn::NotEct);
    assert_eq!(p.sent_at, us(7));
    assert_eq!(tx.first_sent_at(), Some(us(7)));
    assert_eq!(s.tx.bytes_in_flight(), 10 * MSS);
    assert_eq!(s.tx.timer_deadline(), Some(SimTime::from_ms(3)));
}

#[test]
fn dctcp_data_is_ect0_and_newreno_is_not() {
    let dctcp = TcpConfig {
        cc: CcKind::DCTCP,
        ..cfg()
    };
    let mut out = Vec::new();
    TcpSender::new(&dctcp, ends(), BIG).on_start(SimTime::ZERO, &mut out);
    assert!(out.iter().all(|p| p.ip.ecn == Ecn::Ect0));
}

#[test]
fn slow_start_sends_two_segments_per_ack() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    for i in 1..=10 {
        // RFC 5681 eq. (2): each ACK of one SMSS grows cwnd by one SMSS,
        // and frees one segment of flight: two new segments leave.
        let out = s.ack(10 + i, i * MSS);
        assert_eq!(out, full_segments(10 * MSS + (i - 1) * 2 * MSS, 2));
    }
    assert_eq!(s.cwnd(), 20 * MSS);
    assert_eq!(s.tx.bytes_in_flight(), 20 * MSS);
}

#[test]
fn slow_start_counts_at_most_one_mss_per_ack() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    // One ACK for five segments grows cwnd by one SMSS only.
    let out = s.ack(10, 5 * MSS);
    assert_eq!(s.cwnd(), 11 * MSS);
    assert_eq!(out.len(), 6);
}

#[test]
fn congestion_avoidance_grows_one_mss_per_window() {
    let mut s = Script::in_congestion_avoidance();
    let w = s.cwnd();
    // Nine of the ten segments acked: no growth yet.
    for i in 1..=9 {
        let out = s.ack(10 + i, i * MSS);
        assert_eq!(out.len(), 1, "ack {i}");
        assert_eq!(s.cwnd(), w);
    }
    // The tenth completes a window: +1 SMSS, so two segments leave.
    assert_eq!(s.ack(20, 10 * MSS).len(), 2);
    assert_eq!(s.cwnd(), w + MSS);
}

#[test]
fn two_dup_acks_do_nothing_the_third_fast_retransmits_and_halves() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    assert_eq!(s.ack(10, 1000).len(), 2); // cwnd 11, flight 11 segments
    assert!(s.ack(11, 1000).is_empty());
    assert!(s.ack(11, 1000).is_empty());
    assert_eq!(s.tx.stats().fast_retransmits, 0);
    assert_eq!(s.ack(12, 1000), vec![(1000, 1000)]);
    let st = s.tx.stats();
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.retransmitted_segments, 1);
    assert_eq!(s.tx.retransmissions(), 1);
    // ssthresh = FlightSize / 2 = 11 segments / 2; cwnd = ssthresh + 3 SMSS.
    assert_eq!(st.ssthresh_bytes, 11 * MSS / 2);
    assert_eq!(st.cwnd_bytes, 11 * MSS / 2 + 3 * MSS);
    assert!(st.in_recovery);
}

#[test]
fn dup_acks_in_recovery_inflate_the_window_and_release_data() {
    let mut s = Script::in_fast_recovery();
    // cwnd 8.5 segments, flight 11: three more dup ACKs reach 11.5.
    assert!(s.ack(13, 1000).is_empty());
    assert!(s.ack(13, 1000).is_empty());
    assert!(s.ack(13, 1000).is_empty());
    assert_eq!(s.ack(13, 1000), vec![(12_000, 1000)]);
    assert_eq!(s.cwnd(), 11 * MSS / 2 + 7 * MSS);
}

#[test]
fn partial_ack_retransmits_the_next_hole_and_deflates() {
    let mut s = Script::in_fast_recovery();
    let cwnd = s.cwnd();
    let deadline_before = s.tx.timer_deadline();
    // Segments 1000 and 3000 were lost: the retransmission of 1000 yields a
    // partial ACK up to 3000.
    let out = s.ack(30, 3000);
    assert_eq!(out.first(), Some(&(3000, 1000)));
    // Deflate by the 2000 bytes acked, add back one SMSS.
    assert_eq!(s.cwnd(), cwnd - 2000 + MSS);
    assert!(s.tx.in_recovery);
    assert_eq!(s.tx.stats().fast_retransmits, 1);
    // The first partial ACK resets the timer.
    assert_ne!(s.tx.timer_deadline(), deadline_before);
    assert_eq!(s.tx.timer_deadline(), Some(us(30) + s.tx.stats().rto));
    // A second partial ACK does not.
    let deadline = s.tx.timer_deadline();
    s.ack(40, 5000);
    assert_eq!(s.tx.timer_deadline(), deadline);
}

#[test]
fn full_ack_ends_recovery_with_a_bounded_window() {
    let mut s = Script::in_fast_recovery();
    let recover = s.tx.stats().snd_max;
    assert_eq!(recover, 12_000);
    s.ack(40, recover);
    let st = s.tx.stats();
    assert!(!st.in_recovery);
    // cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS), FlightSize = 0.
    assert_eq!(st.cwnd_bytes, 2 * MSS);
    assert_eq!(st.ssthresh_bytes, 5500);
}

#[test]
fn dup_acks_below_recover_after_a_timeout_do_not_fast_retransmit() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    assert_eq!(s.timer(SimTime::from_ms(3)), vec![(0, 1000)]);
    // The go-back-N resend of 0 fills the hole; the receiver had 1000..9000
    // already except 5000, so it ACKs 5000 and then dup-ACKs it.
    s.ack(3010, 5000);
    for _ in 0..5 {
        s.ack(3020, 5000);
    }
    assert!(s.tx.stats().dup_acks >= 3);
    assert_eq!(s.tx.stats().fast_retransmits, 0, "RFC 6582: 5000 < recover");
}

#[test]
fn timeout_goes_back_to_snd_una_and_backs_off() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    assert_eq!(s.tx.timer_deadline(), Some(SimTime::from_ms(3)));
    // Early and stale calls are ignored.
    assert!(s.timer(SimTime::from_ms(2)).is_empty());
    assert_eq!(s.tx.stats().timeouts, 0);
    // First expiry: resend 0, cwnd 1 SMSS, ssthresh = flight / 2, RTO x2.
    assert_eq!(s.timer(SimTime::from_ms(3)), vec![(0, 1000)]);
    let st = s.tx.stats();
    assert_eq!(
        (st.timeouts, st.cwnd_bytes, st.ssthresh_bytes),
        (1, MSS, 5 * MSS)
    );
    assert_eq!(st.rto, SimTime::from_ms(6));
    assert_eq!(s.tx.timer_deadline(), Some(SimTime::from_ms(9)));
    // Second expiry of the same segment: ssthresh held, RTO x2 again.
    assert_eq!(s.timer(SimTime::from_ms(9)), vec![(0, 1000)]);
    let st = s.tx.stats();
    assert_eq!((st.timeouts, st.ssthresh_bytes), (2, 5 * MSS));
    assert_eq!(s.tx.timer_deadline(), Some(SimTime::from_ms(21)));
    // The resend is acked: slow start from snd_una, resending 1000, 2000.
    assert_eq!(s.ack(21_010, 1000), full_segments(1000, 2));
    assert_eq!(s.tx.retransmissions(), 4);
}

#[test]
fn backoff_stops_at_max_rto() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    let mut t = SimTime::ZERO;
    for _ in 0..10 {
        t = s.tx.timer_deadline().expect("data outstanding");
        s.timer(t);
    }
    assert_eq!(s.tx.stats().rto, SimTime::from_ms(64));
    assert_eq!(s.tx.timer_deadline(), Some(t + SimTime::from_ms(64)));
}

#[test]
fn karn_rule_takes_no_sample_from_a_retransmitted_segment() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    s.timer(SimTime::from_ms(3));
    // ACK of the retransmission (or the original: ambiguous) arrives.
    s.ack(3_020, 1000);
    assert_eq!(s.tx.stats().srtt, None, "an ambiguous ACK gave a sample");
    // The backed-off RTO stays until a valid sample.
    assert_eq!(s.tx.stats().rto, SimTime::from_ms(6));
    // New data sent at 3.020 ms (snd_nxt reaches past snd_max) is timed.
    let snd_max = s.tx.stats().snd_max;
    while s.tx.stats().snd_nxt <= snd_max {
        let una = s.tx.stats().bytes_acked;
        s.ack(3_040, una + MSS);
    }
    let timed_end = s.tx.stats().snd_nxt;
    s.ack(3_060, timed_end);
    let st = s.tx.stats();
    assert_eq!(st.srtt, Some(us(20)));
    // SRTT + 4 RTTVAR = 20 + 40 us, clamped up to min_rto.
    assert_eq!(st.rto, SimTime::from_ms(1));
}

#[test]
fn rtt_sample_from_a_clean_ack() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    s.ack(25, 1000);
    assert_eq!(s.tx.stats().srtt, Some(us(25)));
    assert_eq!(s.tx.timer_deadline(), Some(us(25) + SimTime::from_ms(1)));
}

#[test]
fn window_change_is_an_update_not_a_dup_ack() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    s.ack(10, 1000);
    // Three ACKs of 1000, each with a new window: updates, not duplicates.
    for (i, w) in [900_000, 800_000, 700_000].into_iter().enumerate() {
        s.ack_win(11 + i as u64, 1000, w);
    }
    let st = s.tx.stats();
    assert_eq!(
        (st.dup_acks, st.window_updates, st.fast_retransmits),
        (0, 3, 0)
    );
    assert_eq!(st.rwnd_bytes, 700_000);
    // Same window three times: duplicates, fast retransmit.
    for _ in 0..3 {
        s.ack_win(20, 1000, 700_000);
    }
    let st = s.tx.stats();
    assert_eq!((st.dup_acks, st.fast_retransmits), (3, 1));
}

#[test]
fn window_updates_between_dup_acks_are_not_counted() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    s.ack(10, 1000);
    s.ack(11, 1000); // dup 1
    s.ack_win(12, 1000, 500_000); // update (a rewritten window)
    s.ack_win(13, 1000, 500_000); // dup 2 (same window as the last ACK)
    assert_eq!(s.tx.stats().fast_retransmits, 0);
    assert_eq!(s.ack_win(14, 1000, 500_000), vec![(1000, 1000)]); // dup 3
    assert_eq!(s.tx.stats().dup_acks, 3);
}

#[test]
fn advertised_window_of_two_segments_limits_the_flight() {
    let two = TcpConfig {
        rwnd_bytes: 2 * MSS as u32,
        ..cfg()
    };
    let (mut s, first) = Script::started(&two, BIG);
    assert_eq!(first, full_segments(0, 2));
    // One segment out per segment acked; the flight never passes rwnd.
    for i in 1..=20 {
        let out = s.ack_win(10 * i, i * MSS, 2 * MSS as u32);
        assert_eq!(out, vec![((i + 1) * MSS, MSS as u32)]);
        assert!(s.tx.bytes_in_flight() <= 2 * MSS);
    }
    // RFC 7661 section 4.2 (Linux `tcp_is_cwnd_limited`): a flow limited by
    // rwnd does not grow cwnd; in slow start cwnd may reach twice the
    // largest flight (4 segments), and it already is 10.
    assert_eq!(s.cwnd(), 10 * MSS);
}

#[test]
fn shrinking_window_stops_new_data_until_acks_drain_the_flight() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    // The window drops to 3 segments while 10 are in flight.
    assert!(s.ack_win(10, 1000, 3 * MSS as u32).is_empty());
    assert!(s.ack_win(11, 5000, 3 * MSS as u32).is_empty());
    assert!(s.ack_win(12, 7000, 3 * MSS as u32).is_empty());
    assert_eq!(
        s.ack_win(13, 8000, 3 * MSS as u32),
        full_segments(10_000, 1)
    );
    assert_eq!(s.tx.bytes_in_flight(), 3 * MSS);
    // A window update alone opens it again.
    assert_eq!(s.ack_win(14, 8000, 5 * MSS as u32).len(), 2);
    assert_eq!(s.tx.stats().window_updates, 1);
}

#[test]
fn zero_window_arms_the_persist_timer_and_probes_one_byte() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    assert!(s.ack_win(10, 10 * MSS, 0).is_empty());
    let deadline = s.tx.timer_deadline().expect("persist timer");
    assert_eq!(s.timer(deadline), vec![(10 * MSS, 1)]);
    assert_eq!(s.tx.stats().window_probes, 1);
    // The probe is acked and the window reopens: data flows.
    let out = s.ack_win(deadline.ps() / 1_000_000 + 10, 10 * MSS + 1, RWND);
    assert_eq!(out.first(), Some(&(10 * MSS + 1, MSS as u32)));
}

#[test]
fn window_below_one_segment_with_nothing_in_flight_sends_what_fits() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    assert_eq!(s.ack_win(10, 10 * MSS, 300), vec![(10 * MSS, 300)]);
    // Now 300 bytes are in flight: nothing more until they are acked.
    assert!(s.ack_win(11, 10 * MSS, 300).is_empty());
}

#[test]
fn acks_of_unsent_or_old_data_are_ignored() {
    let (mut s, _) = Script::started(&cfg(), BIG);
    assert!(s.ack(10, 20 * MSS).is_empty());
    assert_eq!(s.tx.stats().bytes_acked, 0);
    s.ack(11, 3 * MSS);
    assert!(s.ack_win(12, 2 * MSS, 5).is_empty());
    let st = s.tx.stats();
    assert_eq!(
        (st.bytes_acked, st.rwnd_bytes, st.dup_acks),
        (3 * MSS, RWND as u64, 0)
    );
}

#[test]
fn flow_completes_when_every_byte_is_acked() {
    let (mut s, first) = Script::started(&cfg(), 2500);
    assert_eq!(first, vec![(0, 1000), (1000, 1000), (2000, 500)]);
    s.ack(10, 2000);
    assert!(!s.tx.is_complete());
    assert!(s.tx.timer_deadline().is_some());
    s.ack(12, 2500);
    assert!(s.tx.is_complete());
    assert_eq!(s.tx.completed_at(), Some(us(12)));
    assert_eq!(s.tx.timer_deadline(), None);
    assert!(s.timer(SimTime::from_ms(100)).is_empty());
}

#[test]
fn empty_flow_is_complete_at_start() {
    let (s, first) = Script::started(&cfg(), 0);
    assert!(first.is_empty());
    assert!(s.tx.is_complete());
    assert_eq!(s.tx.completed_at(), Some(SimTime::ZERO));
    assert_eq!(s.tx.timer_deadline(), None);
}

#[test]
fn dctcp_cuts_by_alpha_over_two_once_per_window_and_sets_cwr() {
    let dctcp = TcpConfig {
        cc: CcKind::DCTCP,
        ..cfg()
    };
    let (mut s, _) = Script::started(&dctcp, BIG);
    s.tx.win.cwnd = 100 * MSS;
    if let crate::tcp::cc::Cc::Dctcp(d) = &mut s.tx.cc {
        *d = crate::tcp::cc::Dctcp::new(4);
    }
    // First ACK closes the first observation window with F = 1: alpha
    // stays 1; the ECE cuts cwnd to (1 - 1/2) of 100 segments.
    let out = s.ack_ece(10, MSS);
    assert_eq!(s.cwnd(), 50 * MSS);
    assert_eq!(s.tx.stats().ecn_cuts, 1);
    // 9 segments in flight, cwnd 50: 41 new segments leave.
    assert_eq!(out.len(), 41);
    // Still within the same window of data: no second cut.
    s.ack_ece(11, 2 * MSS);
    assert_eq!(s.tx.stats().ecn_cuts, 1);
    assert!(s.cwnd() <= 50 * MSS + MSS);
}

#[test]
fn dctcp_cwr_flag_rides_on_the_next_new_segment() {
    let dctcp = TcpConfig {
        cc: CcKind::DCTCP,
        ..cfg()
    };
    let (mut s, _) = Script::started(&dctcp, BIG);
    let out = s.ack_ece(10, MSS);
    // cwnd 10 -> 5 segments with 9 in flight: nothing sent yet.
    assert!(out.is_empty());
    let mut sent = Vec::new();
    for i in 2..=6 {
        sent.extend(s.ack_ece(10 + i, i * MSS));
    }
    let first = sent.first().expect("the flight drained below cwnd");
    assert!(first.tcp().is_some_and(|t| t.has(tcp_flags::CWR)));
    assert!(sent[1..]
        .iter()
        .all(|p| !p.tcp().is_some_and(|t| t.has(tcp_flags::CWR))));
}

#[test]
fn karn_rule_drops_the_sample_when_an_earlier_segment_is_resent() {
    let mut s = Script::in_fast_recovery();
    // The ACK of 1000 at 10 us gave a sample; the segment timed next (sent
    // at 10 us) sits behind the fast-retransmitted hole.
    assert_eq!(s.tx.stats().srtt, Some(us(10)));
    s.ack(500, 12_000);
    assert_eq!(
        s.tx.stats().srtt,
        Some(us(10)),
        "sample taken across a retransmission"
    );
}

#[test]
fn timeout_in_recovery_keeps_the_entry_ssthresh() {
    let mut s = Script::in_fast_recovery();
    for _ in 0..40 {
        s.ack(20, 1000);
    }
    assert!(s.tx.bytes_in_flight() > 30 * MSS);
    let deadline = s.tx.timer_deadline().expect("data outstanding");
    assert_eq!(s.timer(deadline), vec![(1000, 1000)]);
    let st = s.tx.stats();
    assert_eq!(
        (st.ssthresh_bytes, st.cwnd_bytes, st.in_recovery),
        (5500, MSS, false)
    );
}

#[test]
fn ssthresh_after_a_long_recovery_halves_cwnd_not_the_sequence_span() {
    let mut s = Script::in_fast_recovery();
    // 30 more dup ACKs: the receiver holds 30 segments beyond the hole and
    // the inflated window sent as many new ones.
    for _ in 0..30 {
        s.ack(20, 1000);
    }
    s.ack(40, 12_000);
    let st = s.tx.stats();
    assert!(!st.in_recovery);
    assert_eq!(st.cwnd_bytes, 5500);
    assert!(s.tx.bytes_in_flight() > 20 * MSS);
    // A new loss right after: snd_nxt - snd_una is over 20 segments, but
    // the network holds about cwnd; ssthresh = cwnd / 2.
    for _ in 0..3 {
        s.ack(50, 12_000);
    }
    let st = s.tx.stats();
    assert_eq!((st.fast_retransmits, st.ssthresh_bytes), (2, 2750));
}

/// Wire bytes of one full test segment (1000 B payload).
fn wire() -> u64 {
    u64::from(Packet::tcp_wire_size(MSS as u32))
}

#[test]
fn budget_blocks_new_data_and_send_ready_resumes_it() {
    // Budget for exactly three packets: three leave, the budget stops the
    // rest of the initial window, and the sender says so.
    let (mut s, first) = Script::started_with_budget(&cfg(), BIG, 3 * wire());
    assert_eq!(first, full_segments(0, 3));
    assert_eq!(s.tx.send_budget(), 0);
    assert!(s.tx.is_budget_blocked());
    // Nothing freed yet: a call sends nothing and stays blocked.
    assert!(s.send_ready(1, 0).is_empty());
    assert!(s.tx.is_budget_blocked());
    // Two packets left the NIC: two more segments.
    assert_eq!(s.send_ready(2, 2 * wire()), full_segments(3 * MSS, 2));
    assert!(s.tx.is_budget_blocked());
    // Plenty of budget: the rest of cwnd (10 segments), then the window,
    // not the budget, stops the flow.
    assert_eq!(s.send_ready(3, u64::MAX), full_segments(5 * MSS, 5));
    assert!(!s.tx.is_budget_blocked());
    assert_eq!(s.tx.bytes_in_flight(), 10 * MSS);
    // ACKs under a spent budget release nothing, though cwnd opened.
    s.tx.set_send_budget(0);
    assert!(s.ack(10, 2 * MSS).is_empty());
    assert!(s.tx.is_budget_blocked());
    assert_eq!(s.send_ready(11, u64::MAX).len(), 3);
}

#[test]
fn budget_may_be_passed_by_less_than_one_packet() {
    // Linux `tcp_small_queue_check` throttles once the limit is exceeded:
    // 2.5 packets of budget let 3 packets out, not 2 and not 4.
    let (s, first) = Script::started_with_budget(&cfg(), BIG, 5 * wire() / 2);
    assert_eq!(first.len(), 3);
    assert!(s.tx.is_budget_blocked());
    // A zero budget sends nothing at all.
    let (s, first) = Script::started_with_budget(&cfg(), BIG, 0);
    assert!(first.is_empty());
    assert!(s.tx.is_budget_blocked());
    // Nothing sent is nothing to time: no timer until data leaves.
    assert_eq!(s.tx.timer_deadline(), None);
}

#[test]
fn retransmissions_pass_a_spent_budget() {
    // Fast retransmit: the hole at 1000 is resent with no budget left.
    let (mut s, _) = Script::started(&cfg(), BIG);
    assert_eq!(s.ack(10, 1000).len(), 2);
    s.tx.set_send_budget(0);
    assert!(s.ack(11, 1000).is_empty());
    assert!(s.ack(11, 1000).is_empty());
    assert_eq!(s.ack(12, 1000), vec![(1000, 1000)]);
    assert_eq!(s.tx.stats().fast_retransmits, 1);
    // A partial ACK resends the next hole, still with no budget.
    s.tx.set_send_budget(0);
    assert_eq!(s.ack(30, 3000), vec![(3000, 1000)]);
    // The retransmission timer resends snd_una with no budget either.
    s.tx.set_send_budget(0);
    let deadline = s.tx.timer_deadline().expect("data outstanding");
    assert_eq!(s.timer(deadline), vec![(3000, 1000)]);
    assert_eq!(s.tx.stats().timeouts, 1);
}

#[test]
fn budget_limited_flow_does_not_grow_cwnd_in_congestion_avoidance() {
    // Five packets of budget, cwnd 10: the host lets one packet out per
    // packet that left, so the flight stays at 5 segments.
    let (mut s, first) = Script::started_with_budget(&cfg(), BIG, 5 * wire());
    assert_eq!(first.len(), 5);
    s.tx.win.ssthresh = s.tx.win.cwnd;
    for i in 1..=60 {
        s.tx.set_send_budget(wire());
        assert_eq!(s.ack(10 + i, i * MSS).len(), 1, "ack {i}");
        assert_eq!(s.tx.bytes_in_flight(), 5 * MSS);
    }
    // Six windows' worth of ACKs would have added 5 SMSS (RFC 5681); the
    // flow never used its window (RFC 7661 section 4.2), so nothing.
    assert_eq!(s.cwnd(), 10 * MSS);
}

#[test]
fn budget_limited_slow_start_grows_cwnd_to_twice_the_flight_only() {
    // Linux `tcp_is_cwnd_limited`: in slow start cwnd may grow while it is
    // below twice the largest flight of the window (6 segments here).
    let (mut s, first) = Script::started_with_budget(&cfg(), BIG, 6 * wire());
    assert_eq!(first.len(), 6);
    for i in 1..=30 {
        s.tx.set_send_budget(wire());
        assert_eq!(s.ack(10 + i, i * MSS).len(), 1, "ack {i}");
    }
    assert_eq!(s.cwnd(), 12 * MSS);
    // The budget lifts: the flow fills cwnd and slow start resumes.
    assert_eq!(s.send_ready(50, u64::MAX).len(), 6);
    assert_eq!(s.ack(60, 31 * MSS).len(), 2);
    assert_eq!(s.cwnd(), 13 * MSS);
}

#[test]
fn dctcp_budget_limited_flow_does_not_grow_but_still_cuts() {
    let dctcp = TcpConfig {
        cc: CcKind::DCTCP,
        ..cfg()
    };
    let (mut s, _) = Script::started_with_budget(&dctcp, BIG, 4 * wire());
    s.tx.win.ssthresh = s.tx.win.cwnd;
    for i in 1..=40 {
        s.tx.set_send_budget(wire());
        s.ack(10 + i, i * MSS);
    }
    assert_eq!(s.cwnd(), 10 * MSS);
    // An ECN echo still cuts, by alpha / 2 (RFC 8257 section 3.3).
    s.tx.set_send_budget(wire());
    s.ack_ece(60, 41 * MSS);
    let alpha = s.tx.stats().dctcp_alpha.unwrap_or(f64::NAN);
    assert!(alpha > 0.0 && alpha < 1.0, "alpha {alpha}");
    assert_eq!(s.cwnd(), (10.0 * MSS as f64 * (1.0 - alpha / 2.0)) as u64);
    assert_eq!(s.tx.stats().ecn_cuts, 1);
}

#[test]
fn send_ready_is_harmless_before_start_and_after_completion() {
    let mut tx = TcpSender::new(&cfg(), ends(), 2500);
    let mut out = Vec::new();
    tx.on_send_ready(us(1), &mut out);
    assert!(out.is_empty());
    let (mut s, _) = Script::started(&cfg(), 2500);
    s.ack(10, 2500);
    assert!(s.tx.is_complete());
    assert!(s.send_ready(11, u64::MAX).is_empty());
    assert!(!s.tx.is_budget_blocked());
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Step {
        /// ACK a fraction (in 1/8ths) of what is outstanding.
        Ack {
            eighths: u64,
            window: u32,
            ece: bool,
            budget: u64,
        },
        Timer {
            budget: u64,
        },
        SendReady {
            budget: u64,
        },
    }

    fn budget() -> impl Strategy<Value = u64> {
        prop::sample::select(vec![0u64, 500, 1058, 3000, 64_000, u64::MAX])
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (0u64..=8, prop::sample::select(vec![0u32, 300, 2000, 5000, 64_000, RWND]), any::<bool>(), budget())
                .prop_map(|(eighths, window, ece, budget)| Step::Ack { eighths, window, ece, budget }),
            1 => budget().prop_map(|budget| Step::Timer { budget }),
            1 => budget().prop_map(|budget| Step::SendReady { budget }),
        ]
    }

    proptest! {
        /// Whatever the ACKs, timeouts and send budgets, the sequence space
        /// stays ordered, nothing past the flow's end is sent, new data never
        /// leaves more than min(cwnd, rwnd) in flight (a one-byte probe
        /// aside), and no new data leaves once earlier packets of the same
        /// call have spent the budget.
        #[test]
        fn flight_respects_the_windows(
            steps in prop::collection::vec(step(), 1..200),
            dctcp in any::<bool>(),
            size in 1u64..200_000,
        ) {
            let cc = if dctcp { CcKind::DCTCP } else { CcKind::NewReno };
            let c = TcpConfig { cc, ..cfg() };
            let (mut s, _) = Script::started(&c, size);
            let mut now = SimTime::ZERO;
            for st in steps {
                now += us(7);
                let before_max = s.tx.stats().snd_max;
                let before_una = s.tx.stats().bytes_acked;
                let mut out = Vec::new();
                let budget = match st {
                    Step::Ack { eighths, window, ece, budget } => {
                        s.tx.set_send_budget(budget);
                        let una = s.tx.stats().bytes_acked;
                        let ack = una + (s.tx.stats().snd_max - una) * eighths / 8;
                        s.tx.on_packet(now, &ack_pkt(ack, window, ece), &mut out);
                        budget
                    }
                    Step::Timer { budget } => {
                        s.tx.set_send_budget(budget);
                        if let Some(d) = s.tx.timer_deadline() {
                            now = now.max(d);
                        }
                        s.tx.on_timer(now, &mut out);
                        budget
                    }
                    Step::SendReady { budget } => {
                        s.tx.set_send_budget(budget);
                        s.tx.on_send_ready(now, &mut out);
                        budget
                    }
                };
                let mut left = budget;
                let mut max_sent = before_max;
                // The zero-window probe (a timer firing with nothing
                // outstanding) is exempt from the budget, as retransmissions.
                let probe = matches!(st, Step::Timer { .. }) && before_max == before_una;
                for (i, p) in out.iter().enumerate() {
                    let t = p.tcp().expect("tcp");
                    let end = t.seq + u64::from(t.payload);
                    if end > max_sent && !(probe && i == 0) {
                        prop_assert!(left > 0, "new data past a spent budget of {budget}");
                        max_sent = end;
                    }
                    left = left.saturating_sub(u64::from(p.size));
                }
                prop_assert_eq!(s.tx.send_budget(), left);
                let st = s.tx.stats();
                prop_assert!(st.bytes_acked <= st.snd_nxt && st.snd_nxt <= st.snd_max);
                prop_assert!(st.snd_max <= size);
                let mut new_data = false;
                for p in &out {
                    let t = p.tcp().expect("tcp");
                    prop_assert!(t.payload > 0 && t.seq + u64::from(t.payload) <= size);
                    new_data |= t.seq + u64::from(t.payload) > before_max;
                }
                if new_data {
                    let wnd = st.cwnd_bytes.min(st.rwnd_bytes).max(1);
                    prop_assert!(s.tx.bytes_in_flight() <= wnd, "{st:?}");
                }
                prop_assert_eq!(s.tx.is_complete(), st.bytes_acked == size);
                // A timer runs unless the flow is done, or nothing is
                // outstanding and either nothing is left to send or the
                // budget (not a zero window) holds it back.
                let idle = st.snd_max == st.bytes_acked && (st.snd_nxt >= size || s.tx.is_budget_blocked());
                prop_assert_eq!(s.tx.timer_deadline().is_none(), s.tx.is_complete() || idle);
            }
        }
    }
}

/// An ACK of new data reads lines A to D and F of the sender, as the
/// simulator places it (8 bytes into a line, after its endpoints' tag),
/// and every other event of its flow line A; see the note at `TcpSender`.
#[test]
fn the_sender_reads_by_cache_line() {
    use super::super::cc::{Cc, Dctcp};
    use std::mem::{offset_of, size_of};
    let line = |off: usize, size: usize| {
        let (first, last) = ((off + 8) / 64, (off + 8 + size - 1) / 64);
        assert_eq!(first, last, "field at {off} across lines");
        first
    };
    let lines: [&[(usize, usize)]; 4] = [
        &[
            (offset_of!(TcpSender, snd_una), 8),
            (offset_of!(TcpSender, size), 8),
            (offset_of!(TcpSender, timer), 16),
            (offset_of!(TcpSender, app_timer), 16),
            (offset_of!(TcpSender, snd_nxt), 8),
        ],
        &[
            (offset_of!(TcpSender, snd_max), 8),
            (offset_of!(TcpSender, send_budget), 8),
            (offset_of!(TcpSender, win), size_of::<Window>()),
            (offset_of!(TcpSender, lt_allowance), 8),
            (offset_of!(TcpSender, max_flight), 8),
        ],
        &[
            (offset_of!(TcpSender, cwnd_usage_seq), 8),
            (offset_of!(TcpSender, rtt_probe), size_of::<RttProbe>()),
            (offset_of!(TcpSender, ends), size_of::<FlowEnds>()),
            (offset_of!(TcpSender, last_window), 4),
            (offset_of!(TcpSender, dupacks), 4),
            (offset_of!(TcpSender, ece_acks), 4),
            (offset_of!(TcpSender, started), 1),
            (offset_of!(TcpSender, syn_pending), 1),
            (offset_of!(TcpSender, sack), 1),
            (offset_of!(TcpSender, in_recovery), 1),
            (offset_of!(TcpSender, budget_blocked), 1),
            (offset_of!(TcpSender, is_cwnd_limited), 1),
            (offset_of!(TcpSender, cwr_pending), 1),
            (offset_of!(TcpSender, classic_ecn), 1),
        ],
        &[
            (offset_of!(TcpSender, ack_in_cwr_freeze), 1),
            (offset_of!(TcpSender, una_resent_by_timer), 1),
            (offset_of!(TcpSender, unvalidated_cwnd), 1),
            (offset_of!(TcpSender, slow_start_all_acked), 1),
            (offset_of!(TcpSender, data_ecn), 1),
            (offset_of!(TcpSender, app), 8),
            (offset_of!(TcpSender, board), 8),
            (offset_of!(TcpSender, sent_log), 8),
            (offset_of!(TcpSender, ns3_cwr_until), 8),
            (offset_of!(TcpSender, cwr_freeze_until), 8),
            // The estimator's `rto` and `srtt` (`RtoEstimator` is repr(C)).
            (offset_of!(TcpSender, rto), 16),
        ],
    ];
    for (i, fields) in lines.iter().enumerate() {
        for &(off, size) in fields.iter() {
            assert_eq!(line(off, size), i, "field at {off}");
        }
    }
    // Line F: the controller's tag and DCTCP's per-ACK state (56 bytes,
    // `Cc` is repr(u8): its state 8 bytes after the tag).
    let cc = offset_of!(TcpSender, cc);
    assert_eq!(line(cc, 64), 5);
    let c = Cc::Dctcp(Dctcp::new(4));
    let Cc::Dctcp(d) = &c else { unreachable!() };
    let at = (d as *const Dctcp as usize) - (&c as *const Cc as usize);
    assert_eq!(at, 8);
    // A receiver after the sender starts at a line.
    assert_eq!((size_of::<TcpSender>() + 8) % 64, 0);
}
