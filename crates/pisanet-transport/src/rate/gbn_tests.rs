use super::*;
use crate::rate::{Notifier, RateReceiver, RateSender, ReactionKind};
use crate::tcp::FlowEnds;
use pisanet_engine::BitRate;

fn ends() -> FlowEnds {
    FlowEnds {
        flow: 4,
        src_addr: 1,
        dst_addr: 2,
        sport: 5000,
        dport: 80,
        dscp: 0,
        prio: 2,
    }
}

fn params() -> GbnParams {
    GbnParams {
        timeout: SimTime::from_us(100),
        ack_every: 4,
    }
}

/// A go-back-N sender of `bytes` in 1000-byte datagrams at 8 Gb/s.
fn sender(kind: ReactionKind, bytes: u64) -> RateSender {
    RateSender::new(
        ends(),
        kind.build(BitRate::from_gbps(8.0)),
        1000,
        bytes,
        None,
    )
    .with_go_back_n(&params())
}

fn psn(p: &Packet) -> u32 {
    match p.l4 {
        L4::Udp(u) => u.psn,
        _ => panic!("not UDP"),
    }
}

/// A data packet with `psn` (and AckReq as given), as the sender builds it.
fn data(psn: u32, ack_req: bool) -> Packet {
    let mut p = crate::udp::datagram(&ends(), SimTime::ZERO, 1000, Ecn::NotEct);
    if let L4::Udp(u) = &mut p.l4 {
        u.psn = psn;
        u.ack_req = ack_req;
    }
    p
}

#[test]
fn receiver_naks_once_per_gap_then_acks_the_fill() {
    let mut rx = RateReceiver::new(Notifier::None).with_go_back_n(&params());
    let mut out = Vec::new();
    let t = SimTime::ZERO;
    rx.on_packet(t, &data(0, false), &mut out);
    rx.on_packet(t, &data(1, false), &mut out);
    assert!(out.is_empty(), "ACKs are coalesced (every 4)");
    // PSN 2 lost: 3 and 4 are out of order.
    rx.on_packet(t, &data(3, false), &mut out);
    rx.on_packet(t, &data(4, false), &mut out);
    assert_eq!(out.len(), 1, "one NAK per gap");
    assert_eq!(parse_ack(&out[0]), Some((2, true)));
    assert!(is_ack(&out[0]));
    assert_eq!(out[0].ip.dst, 1, "to the sender");
    assert_eq!(rx.received_packets(), 2);
    // The sender goes back: 2..=5 accepted; the NAK restarted the
    // coalescing count, so the fourth accepted after it is ACKed.
    out.clear();
    for p in 2..5 {
        rx.on_packet(t, &data(p, false), &mut out);
    }
    assert!(out.is_empty());
    rx.on_packet(t, &data(5, false), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(parse_ack(&out[0]), Some((6, false)));
    // A duplicate without AckReq is dropped silently; with it, re-ACKed.
    out.clear();
    rx.on_packet(t, &data(1, false), &mut out);
    assert!(out.is_empty());
    rx.on_packet(t, &data(3, true), &mut out);
    assert_eq!(parse_ack(&out[0]), Some((6, false)));
    assert_eq!(rx.received_packets(), 6);
    assert_eq!(rx.received_bytes(), 6000);
    assert_eq!(rx.go_back_n().unwrap().discarded, 4);
    // A packet without payload (a switch's feedback) is not data.
    let mut fb = data(6, false);
    if let L4::Udp(u) = &mut fb.l4 {
        u.payload = 0;
        u.psn = 0;
    }
    rx.on_packet(t, &fb, &mut out);
    assert_eq!(rx.received_packets(), 6);
    assert_eq!(rx.go_back_n().unwrap().expected(), 6);
    // A new gap gets its own NAK.
    out.clear();
    rx.on_packet(t, &data(8, false), &mut out);
    assert_eq!(parse_ack(&out[0]), Some((6, true)));
}

#[test]
fn sender_goes_back_to_the_naked_psn() {
    let mut s = sender(ReactionKind::Fixed, 10_000);
    let mut out = Vec::new();
    s.on_start(SimTime::ZERO, &mut out);
    while out.len() < 6 {
        let t = s.timer_deadline().unwrap();
        s.on_timer(t, &mut out);
    }
    let sent: Vec<u32> = out.iter().map(psn).collect();
    assert_eq!(sent, [0, 1, 2, 3, 4, 5]);
    // The receiver lost PSN 2: NAK(2).
    let nak = ack_for(SimTime::from_us(5), &data(3, false), 2, true);
    s.on_packet(SimTime::from_us(5), &nak);
    out.clear();
    while out.len() < 5 {
        let t = s.timer_deadline().unwrap();
        s.on_timer(t, &mut out);
    }
    let sent: Vec<u32> = out.iter().map(psn).collect();
    assert_eq!(sent, [2, 3, 4, 5, 6]);
    assert_eq!(s.retransmissions(), 4);
    assert_eq!(s.naks(), 1);
    assert_eq!(s.sent_bytes(), 7000, "sent_bytes counts each byte once");
    assert_eq!(s.acked_bytes(), 2000);
    // ACK(5), then a stale NAK(2) (overtaken): no going back below 5.
    let t = SimTime::from_us(7);
    s.on_packet(t, &ack_for(t, &data(4, false), 5, false));
    assert_eq!(s.acked_bytes(), 5000);
    s.on_packet(t, &nak);
    assert_eq!(s.naks(), 1);
    out.clear();
    s.on_timer(s.timer_deadline().unwrap(), &mut out);
    assert_eq!(out.iter().map(psn).collect::<Vec<_>>(), [7]);
}

#[test]
fn rewound_packets_keep_the_reaction_points_pace() {
    // 1000 B payload + headers at 8 Gb/s: one datagram per wire-size time.
    let mut s = sender(ReactionKind::Fixed, 4000);
    let mut out = Vec::new();
    s.on_start(SimTime::ZERO, &mut out);
    let mut times = Vec::new();
    while let Some(t) = s.timer_deadline() {
        if out.len() == 4 {
            break;
        }
        s.on_timer(t, &mut out);
        times.push(t);
    }
    // Everything sent; NAK(1) resumes the idle sender one gap after its last.
    let gap = BitRate::from_gbps(8.0).tx_time(u64::from(Packet::udp_wire_size(1000)));
    let last = *times.last().unwrap();
    s.on_packet(last, &ack_for(last, &data(2, false), 1, true));
    assert_eq!(s.timer_deadline(), Some(last + gap));
}

#[test]
fn timeout_goes_back_when_the_tail_is_lost() {
    let mut s = sender(ReactionKind::Fixed, 3000);
    let mut out = Vec::new();
    s.on_start(SimTime::ZERO, &mut out);
    while out.len() < 3 {
        let t = s.timer_deadline().unwrap();
        s.on_timer(t, &mut out);
    }
    let flags: Vec<bool> = out
        .iter()
        .map(|p| matches!(p.l4, L4::Udp(u) if u.ack_req))
        .collect();
    assert_eq!(flags, [false, false, true], "AckReq on the last packet");
    // The receiver got 0 and 1 (no ACK yet: coalesced every 4) and the
    // tail was lost: nothing comes back. The timer is the only deadline.
    let rto = s.timer_deadline().unwrap();
    assert_eq!(rto, SimTime::from_us(100), "armed by the first packet");
    assert!(!s.is_complete());
    out.clear();
    s.on_timer(rto, &mut out);
    assert_eq!(out.iter().map(psn).collect::<Vec<_>>(), [0]);
    assert_eq!(s.timeouts(), 1);
    // ACK(2) arrives (the receiver had 0 and 1): go on from 2, not 1.
    s.on_packet(rto, &ack_for(rto, &data(0, true), 2, false));
    out.clear();
    while let Some(t) = s.timer_deadline() {
        s.on_timer(t, &mut out);
        if !out.is_empty() {
            break;
        }
    }
    assert_eq!(out.iter().map(psn).collect::<Vec<_>>(), [2]);
    // The final ACK completes the flow.
    let t = out[0].sent_at;
    s.on_packet(t, &ack_for(t, &out[0], 3, false));
    assert!(s.is_complete());
    assert_eq!(s.timer_deadline(), None);
    assert_eq!(s.retransmissions(), 2);
}

/// A loop of a sender and a receiver over a link of `delay` each way that
/// drops each data packet `lose` says (by PSN and how often that PSN was
/// sent before); returns the receiver at the end.
fn run_lossy(
    s: &mut RateSender,
    delay: SimTime,
    lose: impl Fn(u32, u32) -> bool,
    until: SimTime,
) -> RateReceiver {
    let mut rx = RateReceiver::new(Notifier::None).with_go_back_n(&params());
    let mut wire: Vec<(SimTime, Packet)> = Vec::new(); // to the receiver
    let mut back: Vec<(SimTime, Packet)> = Vec::new(); // to the sender
    let mut seen = std::collections::HashMap::<u32, u32>::new();
    let mut out = Vec::new();
    s.on_start(SimTime::ZERO, &mut out);
    loop {
        for p in out.drain(..) {
            let n = seen.entry(psn(&p)).or_insert(0);
            if !lose(psn(&p), *n) {
                wire.push((p.sent_at + delay, p));
            }
            *n += 1;
        }
        let next = [
            s.timer_deadline(),
            wire.iter().map(|w| w.0).min(),
            back.iter().map(|w| w.0).min(),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(t) = next else { break };
        if t > until {
            break;
        }
        if let Some(i) = wire.iter().position(|w| w.0 == t) {
            let (_, p) = wire.remove(i);
            let mut acks = Vec::new();
            rx.on_packet(t, &p, &mut acks);
            back.extend(acks.into_iter().map(|a| (t + delay, a)));
        } else if let Some(i) = back.iter().position(|w| w.0 == t) {
            let (_, p) = back.remove(i);
            s.on_packet(t, &p);
        } else {
            s.on_timer(t, &mut out);
        }
    }
    rx
}

#[test]
fn a_lossy_flow_completes_with_every_byte_in_order() {
    let mut s = sender(ReactionKind::Fixed, 100_500);
    // Each of these PSNs is lost the first time (100 is the tail), PSN 40
    // twice.
    let lost = [3u32, 17, 40, 41, 77, 100];
    let rx = run_lossy(
        &mut s,
        SimTime::from_us(2),
        |p, n| (lost.contains(&p) && n == 0) || (p == 40 && n == 1),
        SimTime::from_ms(100),
    );
    assert!(s.is_complete());
    assert_eq!(s.sent_bytes(), 100_500);
    assert_eq!(s.acked_bytes(), 100_500);
    assert_eq!(rx.received_bytes(), 100_500);
    assert_eq!(rx.received_packets(), 101);
    assert!(s.retransmissions() > lost.len() as u64);
    // NAKs for the gaps at 3, 17 and 40; the second loss of 40 falls in
    // the gap already NAKed (one NAK per gap), so the timer recovers it,
    // and the rewind from 40 resends 77 and the tail as well.
    assert_eq!(s.naks(), 3);
    assert_eq!(s.timeouts(), 1);
}

#[test]
fn acks_do_not_reach_the_reaction_point() {
    let mut s = sender(ReactionKind::Halve, 50_000);
    let rx = run_lossy(
        &mut s,
        SimTime::from_us(1),
        |p, n| p == 10 && n == 0,
        SimTime::from_ms(10),
    );
    assert!(s.is_complete());
    assert_eq!(rx.received_bytes(), 50_000);
    assert_eq!(s.rate(), BitRate::from_gbps(8.0), "no feedback, no halving");
}

#[test]
fn without_go_back_n_nothing_is_resent_and_acks_are_not_sent() {
    let mut s = RateSender::new(
        ends(),
        ReactionKind::Fixed.build(BitRate::from_gbps(8.0)),
        1000,
        5000,
        None,
    );
    let mut out = Vec::new();
    s.on_start(SimTime::ZERO, &mut out);
    while let Some(t) = s.timer_deadline() {
        s.on_timer(t, &mut out);
    }
    assert_eq!(out.len(), 5);
    assert!(s.is_complete());
    assert!(out.iter().all(|p| psn(p) == 0));
    let mut rx = RateReceiver::new(Notifier::None);
    let mut acks = Vec::new();
    rx.on_packet(SimTime::ZERO, &out[3], &mut acks);
    assert!(acks.is_empty());
    assert_eq!(rx.received_packets(), 1);
}

#[test]
fn psns_unwrap_mod_2_32() {
    assert_eq!(unwrap_psn(5, 7), 7);
    assert_eq!(unwrap_psn(5, 3), 3);
    assert_eq!(
        unwrap_psn(u64::from(u32::MAX) - 1, 2),
        u64::from(u32::MAX) + 3
    );
    assert_eq!(unwrap_psn((1 << 32) + 10, 8), (1 << 32) + 8);
}
