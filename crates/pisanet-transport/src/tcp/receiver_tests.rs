//! Script-like tests of the receiver: feed data segments, check the ACKs.

use super::*;
use crate::tcp::test_util::{acks, data_pkt, ends, us, MSS};
use crate::tcp::CcKind;
use proptest::prelude::*;

const M: u32 = MSS as u32;

fn cfg() -> TcpConfig {
    TcpConfig {
        mss: M,
        rwnd_bytes: 64_000,
        ..TcpConfig::default()
    }
}

/// A receiver driven step by step.
struct Script {
    rx: TcpReceiver,
}

impl Script {
    fn new(cfg: &TcpConfig, size: u64) -> Self {
        Script {
            rx: TcpReceiver::new(cfg, ends().reversed(), size),
        }
    }

    fn delayed(size: u64) -> Self {
        Script::new(
            &TcpConfig {
                delayed_ack: true,
                ..cfg()
            },
            size,
        )
    }

    fn recv(&mut self, at_us: u64, seq: u64, len: u32) -> Vec<(u64, bool)> {
        self.recv_ecn(at_us, seq, len, Ecn::NotEct)
    }

    fn recv_ecn(&mut self, at_us: u64, seq: u64, len: u32, ecn: Ecn) -> Vec<(u64, bool)> {
        let mut out = Vec::new();
        self.rx
            .on_packet(us(at_us), &data_pkt(seq, len, ecn), &mut out);
        acks(&out)
    }

    fn timer(&mut self, at: SimTime) -> Vec<(u64, bool)> {
        let mut out = Vec::new();
        self.rx.on_timer(at, &mut out);
        acks(&out)
    }
}

#[test]
fn every_in_order_segment_is_acked_with_a_complete_packet() {
    let mut s = Script::new(&cfg(), 2500);
    let mut out = Vec::new();
    s.rx.on_packet(us(4), &data_pkt(0, M, Ecn::NotEct), &mut out);
    let p = &out[0];
    let t = p.tcp().expect("tcp ack");
    assert_eq!(
        (t.ack, t.flags, t.window, t.payload),
        (1000, tcp_flags::ACK, 64_000, 0)
    );
    assert_eq!((t.sport, t.dport), (ends().dport, ends().sport));
    assert_eq!((p.ip.src, p.ip.dst), (ends().dst_addr, ends().src_addr));
    assert_eq!(
        (p.uid, p.flow, p.size, p.sent_at),
        (0, ends().flow, 64, us(4))
    );
    assert_eq!(p.ip.ecn, Ecn::NotEct);
    assert_eq!(s.recv(5, 1000, M), vec![(2000, false)]);
    assert!(!s.rx.is_complete());
    assert_eq!(s.recv(6, 2000, 500), vec![(2500, false)]);
    assert!(s.rx.is_complete());
    assert_eq!(s.rx.completed_at(), Some(us(6)));
    assert_eq!(s.rx.delivered_bytes(), 2500);
    assert_eq!(s.rx.delivery_error(), None);
    assert_eq!(s.rx.timer_deadline(), None);
}

#[test]
fn out_of_order_segments_get_dup_acks_and_the_hole_fill_acks_all() {
    let mut s = Script::new(&cfg(), 5000);
    assert_eq!(s.recv(1, 0, M), vec![(1000, false)]);
    assert_eq!(s.recv(2, 2000, M), vec![(1000, false)]);
    assert_eq!(s.recv(3, 3000, M), vec![(1000, false)]);
    assert_eq!(s.rx.reordered_packets(), 2);
    assert_eq!(s.rx.stats().buffered_bytes, 2000);
    assert_eq!(s.rx.delivered_bytes(), 1000);
    // The hole fills: one ACK covers everything held.
    assert_eq!(s.recv(4, 1000, M), vec![(4000, false)]);
    assert_eq!(s.rx.delivered_bytes(), 4000);
    assert_eq!(s.rx.stats().buffered_bytes, 0);
    assert_eq!(s.rx.reordered_packets(), 2);
    assert_eq!(s.rx.duplicate_bytes(), 0);
}

#[test]
fn partial_hole_fill_acks_up_to_the_next_hole() {
    let mut s = Script::new(&cfg(), 10_000);
    s.recv(1, 1000, M);
    s.recv(2, 3000, M);
    assert_eq!(s.recv(3, 0, M), vec![(2000, false)]);
    assert_eq!(s.recv(4, 2000, M), vec![(4000, false)]);
}

#[test]
fn duplicates_are_counted_and_acked_at_once() {
    let mut s = Script::new(&cfg(), 10_000);
    s.recv(1, 0, M);
    s.recv(2, 2000, M);
    // Already delivered.
    assert_eq!(s.recv(3, 0, M), vec![(1000, false)]);
    // Already buffered out of order.
    assert_eq!(s.recv(4, 2000, M), vec![(1000, false)]);
    // Overlapping: 500 old bytes, 500 new.
    assert_eq!(s.recv(5, 500, M), vec![(1500, false)]);
    assert_eq!(s.rx.duplicate_bytes(), 2500);
    assert_eq!(s.rx.reordered_packets(), 1);
    assert_eq!(s.rx.delivery_error(), None);
}

#[test]
fn delayed_ack_acks_every_second_segment() {
    let mut s = Script::delayed(10_000);
    assert!(s.recv(1, 0, M).is_empty());
    assert_eq!(s.rx.timer_deadline(), Some(us(41)));
    assert_eq!(s.recv(2, 1000, M), vec![(2000, false)]);
    assert_eq!(s.rx.timer_deadline(), None);
    assert!(s.recv(3, 2000, M).is_empty());
    assert_eq!(s.recv(4, 3000, M), vec![(4000, false)]);
}

#[test]
fn delayed_ack_fires_on_the_timer_only_when_due() {
    let mut s = Script::delayed(10_000);
    assert!(s.recv(10, 0, M).is_empty());
    assert!(s.timer(us(49)).is_empty());
    assert_eq!(s.timer(us(50)), vec![(1000, false)]);
    assert_eq!(s.rx.timer_deadline(), None);
    // A stale call after the ACK went out does nothing.
    assert!(s.timer(us(60)).is_empty());
}

#[test]
fn delayed_ack_is_skipped_for_out_of_order_and_hole_filling_data() {
    let mut s = Script::delayed(10_000);
    assert!(s.recv(1, 0, M).is_empty());
    // Out of order: immediate duplicate ACK (flushing the held one).
    assert_eq!(s.recv(2, 2000, M), vec![(1000, false)]);
    assert_eq!(s.rx.timer_deadline(), None);
    // Fills the hole: immediate.
    assert_eq!(s.recv(3, 1000, M), vec![(3000, false)]);
}

#[test]
fn dctcp_echo_without_delayed_acks_mirrors_each_packet() {
    let mut s = Script::new(
        &TcpConfig {
            cc: CcKind::DCTCP,
            ..cfg()
        },
        10_000,
    );
    assert_eq!(s.recv_ecn(1, 0, M, Ecn::Ect0), vec![(1000, false)]);
    assert_eq!(s.recv_ecn(2, 1000, M, Ecn::Ce), vec![(2000, true)]);
    assert_eq!(s.recv_ecn(3, 2000, M, Ecn::Ce), vec![(3000, true)]);
    assert_eq!(s.recv_ecn(4, 3000, M, Ecn::Ect0), vec![(4000, false)]);
    assert_eq!(s.rx.stats().ce_packets, 2);
}

#[test]
fn dctcp_echo_with_delayed_acks_flushes_on_a_ce_change() {
    let dctcp = TcpConfig {
        cc: CcKind::DCTCP,
        delayed_ack: true,
        ..cfg()
    };
    let mut s = Script::new(&dctcp, 10_000);
    assert!(s.recv_ecn(1, 0, M, Ecn::Ect0).is_empty());
    // CE flips with one segment held: ACK it at once with the old ECE (0),
    // then hold the new one under the new state.
    assert_eq!(s.recv_ecn(2, 1000, M, Ecn::Ce), vec![(1000, false)]);
    assert_eq!(s.recv_ecn(3, 2000, M, Ecn::Ce), vec![(3000, true)]);
    // Flip back with nothing held: no extra ACK.
    assert!(s.recv_ecn(4, 3000, M, Ecn::Ect0).is_empty());
    assert_eq!(s.recv_ecn(5, 4000, M, Ecn::Ect0), vec![(5000, false)]);
    // Flip to CE with one held, and the timer sends the CE one.
    assert!(s.recv_ecn(6, 5000, M, Ecn::Ect0).is_empty());
    assert_eq!(s.recv_ecn(7, 6000, M, Ecn::Ce), vec![(6000, false)]);
    assert_eq!(s.timer(us(47)), vec![(7000, true)]);
}

#[test]
fn ce_new_seq_only_ignores_a_mark_at_or_below_the_last_one_taken() {
    // Segment 0 is lost; 1000 and 2000 arrive marked; then the resend of 0
    // arrives marked too, and a marked 3000.
    let mut echoes = Vec::new();
    for on in [false, true] {
        let c = TcpConfig {
            cc: CcKind::Dctcp { g_shift: 4 },
            ce_new_seq_only: on,
            ..cfg()
        };
        let mut s = Script::new(&c, 10 * MSS);
        assert_eq!(s.recv_ecn(1, 1000, M, Ecn::Ce), vec![(0, true)]);
        assert_eq!(s.recv_ecn(2, 2000, M, Ecn::Ce), vec![(0, true)]);
        let resend = s.recv_ecn(3, 0, M, Ecn::Ce);
        let next = s.recv_ecn(4, 3000, M, Ecn::Ce);
        echoes.push((resend, next));
        assert_eq!(s.rx.stats().ce_packets, 4);
    }
    // RFC 8257: every mark echoed. ns-3's `m_ecnCESeq`: the resend (0 <=
    // 2000) counts as unmarked, so its ACK has no ECE; 3000 is new.
    assert_eq!(echoes[0], (vec![(3000, true)], vec![(4000, true)]));
    assert_eq!(echoes[1], (vec![(3000, false)], vec![(4000, true)]));
}

#[test]
fn newreno_receiver_never_sets_ece() {
    let mut s = Script::new(&cfg(), 10_000);
    assert_eq!(s.recv_ecn(1, 0, M, Ecn::Ce), vec![(1000, false)]);
}

#[test]
fn data_beyond_the_flow_size_is_a_delivery_error() {
    let mut s = Script::new(&cfg(), 1500);
    s.recv(1, 0, M);
    assert_eq!(s.rx.delivery_error(), None);
    s.recv(2, 1000, M);
    let err = s.rx.delivery_error().expect("2000 > 1500 must be flagged");
    assert!(err.contains("beyond"), "{err}");
    assert!(!s.rx.is_complete());
}

#[test]
fn the_application_check_catches_repeats_and_gaps() {
    let mut app = AppDelivery {
        size: 100,
        delivered: 0,
        error: None,
    };
    app.deliver(0, 10);
    app.deliver(10, 30);
    assert_eq!(app.error, None);
    app.deliver(20, 40);
    assert!(app.error.as_deref().is_some_and(|e| e.contains("twice")));
    let mut app = AppDelivery {
        size: 100,
        delivered: 0,
        error: None,
    };
    app.deliver(5, 10);
    assert!(app.error.is_some());
}

#[test]
fn pure_acks_and_non_tcp_packets_are_ignored() {
    let mut s = Script::new(&cfg(), 1000);
    let mut out = Vec::new();
    s.rx.on_packet(us(1), &data_pkt(0, 0, Ecn::NotEct), &mut out);
    s.rx.on_packet(us(1), &Packet::default(), &mut out);
    assert!(out.is_empty());
    assert_eq!(s.rx.stats().data_packets, 0);
}

/// Segments of a flow of `size` bytes in `mss`-byte pieces, plus `extra`
/// arbitrary (possibly overlapping) ranges, as retransmissions with other
/// boundaries would produce.
fn segments(size: u64, mss: u64, extra: &[(u64, u64)]) -> Vec<(u64, u32)> {
    let mut v: Vec<(u64, u32)> = (0..size.div_ceil(mss))
        .map(|i| (i * mss, (mss.min(size - i * mss)) as u32))
        .collect();
    for &(a, l) in extra {
        let start = a % size;
        let len = l.min(size - start).max(1);
        v.push((start, len as u32));
    }
    v
}

proptest! {
    /// However segments are reordered and duplicated, the application gets
    /// every byte exactly once, in order.
    #[test]
    fn shuffled_duplicated_segments_deliver_exactly_once(
        size in 1u64..40_000,
        mss in 1u64..3000,
        dups in prop::collection::vec(any::<prop::sample::Index>(), 0..20),
        extra in prop::collection::vec((any::<u64>(), 1u64..4000), 0..10),
        delayed in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let mut segs = segments(size, mss, &extra);
        let n = segs.len();
        for d in &dups {
            segs.push(segs[d.index(n)]);
        }
        // Fisher-Yates with a small LCG keyed by `seed`.
        let mut x = seed | 1;
        for i in (1..segs.len()).rev() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            segs.swap(i, (x >> 33) as usize % (i + 1));
        }
        let cfg = TcpConfig { delayed_ack: delayed, ..cfg() };
        let mut rx = TcpReceiver::new(&cfg, ends().reversed(), size);
        let mut out = Vec::new();
        let mut sent = 0u64;
        for (k, &(seq, len)) in segs.iter().enumerate() {
            rx.on_packet(us(k as u64), &data_pkt(seq, len, Ecn::NotEct), &mut out);
            sent += u64::from(len);
        }
        prop_assert_eq!(rx.delivery_error(), None);
        prop_assert!(rx.is_complete());
        prop_assert_eq!(rx.delivered_bytes(), size);
        prop_assert_eq!(rx.duplicate_bytes(), sent - size);
        prop_assert_eq!(rx.stats().buffered_bytes, 0);
        // ACKs never go backwards and the last ACK (or the held one) is size.
        let acked: Vec<u64> = acks(&out).into_iter().map(|(a, _)| a).collect();
        prop_assert!(acked.windows(2).all(|w| w[0] <= w[1]));
        if rx.timer_deadline().is_none() {
            prop_assert_eq!(acked.last().copied(), Some(size));
        }
    }
}

proptest! {
    /// Segment by segment (no delayed ACKs), the ACK sent, the new bytes
    /// (duplicate bytes) and the reordered count equal those of a model
    /// that keeps the set of bytes received: in-order data with nothing
    /// held (the receiver's path without its interval set) and the rest
    /// agree with it.
    #[test]
    fn each_segment_matches_a_byte_set_model(
        size in 1u64..20_000,
        mss in 1u64..3000,
        dups in prop::collection::vec(any::<prop::sample::Index>(), 0..20),
        extra in prop::collection::vec((any::<u64>(), 1u64..4000), 0..10),
        swaps in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>()), 0..6),
    ) {
        let mut segs = segments(size, mss, &extra);
        let n = segs.len();
        for d in &dups {
            segs.push(segs[d.index(n)]);
        }
        // Mostly in order, with a few swaps: both paths are taken.
        let m = segs.len();
        for (a, b) in &swaps {
            segs.swap(a.index(m), b.index(m));
        }
        let mut rx = TcpReceiver::new(&cfg(), ends().reversed(), size);
        let mut held = vec![false; size as usize];
        let mut rcv_nxt = 0u64;
        let (mut dup_bytes, mut reordered) = (0u64, 0u32);
        for (k, &(seq, len)) in segs.iter().enumerate() {
            let mut out = Vec::new();
            rx.on_packet(us(k as u64), &data_pkt(seq, len, Ecn::NotEct), &mut out);
            let mut new = 0u64;
            for b in seq..seq + u64::from(len) {
                if !held[b as usize] {
                    held[b as usize] = true;
                    new += 1;
                }
            }
            dup_bytes += u64::from(len) - new;
            if new > 0 && seq > rcv_nxt {
                reordered += 1;
            }
            while rcv_nxt < size && held[rcv_nxt as usize] {
                rcv_nxt += 1;
            }
            prop_assert_eq!(acks(&out).into_iter().map(|(a, _)| a).collect::<Vec<_>>(), vec![rcv_nxt]);
            prop_assert_eq!(rx.rcv_nxt(), rcv_nxt);
            prop_assert_eq!(rx.duplicate_bytes(), dup_bytes);
            prop_assert_eq!(rx.reordered_packets(), reordered);
            prop_assert_eq!(rx.delivered_bytes(), rcv_nxt);
            let beyond = held[rcv_nxt as usize..].iter().filter(|&&h| h).count() as u64;
            prop_assert_eq!(rx.stats().buffered_bytes, beyond);
        }
        prop_assert_eq!(rx.delivery_error(), None);
    }
}

/// A data segment in order reads the receiver's first two cache lines
/// only (the simulator puts the receiver at a line): the first holds the
/// delayed-ACK deadline (read by every event of its flow), the in-order
/// state and the application check, the second the ACK's fields and the
/// flags; see the note at `TcpReceiver`.
#[test]
fn the_receiver_reads_by_cache_line() {
    use std::mem::{offset_of, size_of};
    let line = |off: usize, size: usize| {
        assert_eq!(
            off / 64,
            (off + size - 1) / 64,
            "field at {off} across lines"
        );
        off / 64
    };
    for (off, size) in [
        (offset_of!(TcpReceiver, delayed_ack_deadline), 16),
        (offset_of!(TcpReceiver, rcv_nxt), 8),
        (offset_of!(TcpReceiver, ooo_bytes), 8),
        (offset_of!(TcpReceiver, app), size_of::<AppDelivery>()),
        (offset_of!(TcpReceiver, data_packets), 4),
        (offset_of!(TcpReceiver, ce_packets), 4),
    ] {
        assert_eq!(line(off, size), 0, "{off}");
    }
    for (off, size) in [
        (offset_of!(TcpReceiver, ends), size_of::<FlowEnds>()),
        (offset_of!(TcpReceiver, rwnd), 4),
        (offset_of!(TcpReceiver, duplicate_bytes), 8),
        (offset_of!(TcpReceiver, unacked_segments), 4),
        (offset_of!(TcpReceiver, acks_sent), 4),
        (offset_of!(TcpReceiver, delayed_ack), 1),
        (offset_of!(TcpReceiver, dctcp_echo), 1),
        (offset_of!(TcpReceiver, classic_echo), 1),
        (offset_of!(TcpReceiver, ece_latched), 1),
        (offset_of!(TcpReceiver, sack), 1),
        (offset_of!(TcpReceiver, ce_state), 1),
    ] {
        assert_eq!(line(off, size), 1, "{off}");
    }
}

/// The application check keeps the first error: a chunk that does not
/// start where the last one ended, then one beyond the flow's size.
#[test]
fn the_application_check_keeps_the_first_error() {
    let mut app = AppDelivery {
        size: 20,
        delivered: 0,
        error: None,
    };
    app.deliver(0, 10);
    assert!(app.error.is_none());
    app.deliver(5, 15);
    let first = app
        .error
        .as_deref()
        .cloned()
        .expect("an overlap is an error");
    assert!(first.contains("delivered twice or out of order"), "{first}");
    app.deliver(15, 30);
    assert_eq!(app.error.as_deref(), Some(&first));
    // Every chunk is counted, even after the error.
    assert_eq!(app.delivered, 10 + 10 + 15);
    let mut app = AppDelivery {
        size: 20,
        delivered: 0,
        error: None,
    };
    app.deliver(0, 21);
    let e = app
        .error
        .as_deref()
        .cloned()
        .expect("beyond the size is an error");
    assert!(e.contains("goes beyond the flow's 20 bytes"), "{e}");
}
