//! End-to-end checks of the TCP state machines over a tiny network of our
//! own: one bottleneck link with a drop-tail queue (optionally ECN-marking
//! and lossy) and a fixed propagation delay, and a reverse link for ACKs.
//!
//! ```text
//!   sender ──[queue, rate, loss, ECN K]── delay ──▶ receiver
//!          ◀──[queue, rate, loss]──────── delay ───
//! ```
//!
//! The loop here stands in for the simulator's host model: it feeds packets
//! and timer wake-ups to the endpoints and forwards what they emit.

use pisanet_engine::{BitRate, EventQueue, RngStreams, SimRng, SimTime, StreamKind};
use pisanet_net::packet::{Ecn, Packet};
use pisanet_transport::tcp::{CcKind, FlowEnds, TcpConfig, TcpReceiver, TcpSender};
use rand::Rng;
use std::collections::VecDeque;

/// An output queue feeding a link.
struct Link {
    rate: BitRate,
    delay: SimTime,
    buffer_bytes: u64,
    /// Mark CE on ECN-capable packets that find more than this queued.
    ecn_threshold_bytes: Option<u64>,
    loss: f64,
    /// Extra delay drawn uniformly in [0, jitter) per packet: reordering.
    jitter: SimTime,
    rng: SimRng,
    /// Departure time and size of every packet not yet fully sent.
    queued: VecDeque<(SimTime, u64)>,
    queued_bytes: u64,
    busy_until: SimTime,
    drops: u64,
    /// Largest backlog seen at or after `settle`.
    max_queued_bytes: u64,
    settle: SimTime,
}

impl Link {
    fn new(rate: BitRate, delay: SimTime, buffer_bytes: u64, rng: SimRng) -> Self {
        Link {
            rate,
            delay,
            buffer_bytes,
            ecn_threshold_bytes: None,
            loss: 0.0,
            jitter: SimTime::ZERO,
            rng,
            queued: VecDeque::new(),
            queued_bytes: 0,
            busy_until: SimTime::ZERO,
            drops: 0,
            max_queued_bytes: 0,
            settle: SimTime::ZERO,
        }
    }

    /// Enqueues `pkt` at `now`; returns when it reaches the far end, or
    /// `None` if it was dropped.
    fn enqueue(&mut self, now: SimTime, pkt: &mut Packet) -> Option<SimTime> {
        while self
            .queued
            .front()
            .is_some_and(|&(depart, _)| depart <= now)
        {
            if let Some((_, size)) = self.queued.pop_front() {
                self.queued_bytes -= size;
            }
        }
        let size = u64::from(pkt.size);
        if self.loss > 0.0 && self.rng.gen::<f64>() < self.loss {
            self.drops += 1;
            return None;
        }
        if self.queued_bytes + size > self.buffer_bytes {
            self.drops += 1;
            return None;
        }
        if let Some(k) = self.ecn_threshold_bytes {
            if self.queued_bytes > k && pkt.ip.ecn.is_ect() {
                pkt.ip.ecn = Ecn::Ce;
            }
        }
        let depart = now.max(self.busy_until) + self.rate.tx_time(size);
        self.busy_until = depart;
        self.queued.push_back((depart, size));
        self.queued_bytes += size;
        if now >= self.settle {
            self.max_queued_bytes = self.max_queued_bytes.max(self.queued_bytes);
        }
        let jitter = match self.jitter.ps() {
            0 => SimTime::ZERO,
            j => SimTime(self.rng.gen_range(0..j)),
        };
        Some(depart + self.delay + jitter)
    }
}

enum Ev {
    AtReceiver(Packet),
    AtSender(Packet),
    SenderTimer,
    ReceiverTimer,
}

struct Net {
    q: EventQueue<Ev>,
    fwd: Link,
    rev: Link,
    tx: TcpSender,
    rx: TcpReceiver,
    tx_armed: Option<SimTime>,
    rx_armed: Option<SimTime>,
}

struct Outcome {
    /// Payload goodput from the first byte sent to the last byte acked.
    goodput_gbps: f64,
    /// Payload goodput after `STEADY`, once slow start is over.
    steady_gbps: f64,
    fwd_drops: u64,
    fwd_max_queue: u64,
}

const LINE: f64 = 10.0;
/// When slow start and its overshoot are surely over on this path.
const STEADY: SimTime = SimTime::from_ms(10);

fn ends() -> FlowEnds {
    FlowEnds {
        flow: 1,
        src_addr: 10,
        dst_addr: 20,
        sport: 1234,
        dport: 80,
        dscp: 0,
        prio: 0,
    }
}

impl Net {
    fn new(cfg: &TcpConfig, size: u64, buffer_bytes: u64, seed: u64) -> Self {
        let streams = RngStreams::new(seed);
        let rate = BitRate::from_gbps(LINE);
        let delay = SimTime::from_us(10);
        Net {
            q: EventQueue::new(),
            fwd: Link::new(
                rate,
                delay,
                buffer_bytes,
                streams.stream(StreamKind::Link, 0),
            ),
            rev: Link::new(
                rate,
                delay,
                buffer_bytes,
                streams.stream(StreamKind::Link, 1),
            ),
            tx: TcpSender::new(cfg, ends(), size),
            rx: TcpReceiver::new(cfg, ends().reversed(), size),
            tx_armed: None,
            rx_armed: None,
        }
    }

    fn forward_sent(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        for mut p in out.drain(..) {
            assert!(p.sent_at == now && p.uid == 0);
            if let Some(at) = self.fwd.enqueue(now, &mut p) {
                self.q.schedule(at, Ev::AtReceiver(p));
            }
        }
        if let Some(d) = self.tx.timer_deadline() {
            if self.tx_armed != Some(d) {
                self.q.schedule(d, Ev::SenderTimer);
                self.tx_armed = Some(d);
            }
        }
    }

    fn forward_acks(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        for mut p in out.drain(..) {
            if let Some(at) = self.rev.enqueue(now, &mut p) {
                self.q.schedule(at, Ev::AtSender(p));
            }
        }
        if let Some(d) = self.rx.timer_deadline() {
            if self.rx_armed != Some(d) {
                self.q.schedule(d, Ev::ReceiverTimer);
                self.rx_armed = Some(d);
            }
        }
    }

    fn run(&mut self, limit: SimTime) -> Outcome {
        let mut out = Vec::new();
        self.tx.on_start(SimTime::ZERO, &mut out);
        self.forward_sent(SimTime::ZERO, &mut out);
        let mut steady_from: Option<(SimTime, u64)> = None;
        while let Some((now, ev)) = self.q.next() {
            if now >= STEADY && steady_from.is_none() {
                steady_from = Some((now, self.tx.stats().bytes_acked));
            }
            assert!(
                now <= limit,
                "flow did not finish by {limit}: {:?}",
                self.tx.stats()
            );
            match ev {
                Ev::AtReceiver(p) => {
                    self.rx.on_packet(now, &p, &mut out);
                    self.forward_acks(now, &mut out);
                }
                Ev::AtSender(p) => {
                    // The flight never exceeds min(cwnd, rwnd) after new data.
                    self.tx.on_packet(now, &p, &mut out);
                    self.forward_sent(now, &mut out);
                }
                Ev::SenderTimer => {
                    if self.tx_armed == Some(now) {
                        self.tx_armed = None;
                    }
                    self.tx.on_timer(now, &mut out);
                    self.forward_sent(now, &mut out);
                }
                Ev::ReceiverTimer => {
                    if self.rx_armed == Some(now) {
                        self.rx_armed = None;
                    }
                    self.rx.on_timer(now, &mut out);
                    self.forward_acks(now, &mut out);
                }
            }
            if self.tx.is_complete() && self.rx.is_complete() {
                break;
            }
        }
        assert!(
            self.tx.is_complete(),
            "sender incomplete: {:?}",
            self.tx.stats()
        );
        assert!(
            self.rx.is_complete(),
            "receiver incomplete: {:?}",
            self.rx.stats()
        );
        assert_eq!(self.rx.delivery_error(), None);
        assert_eq!(self.rx.delivered_bytes(), self.tx.size_bytes());
        let (start, end) = match (self.tx.first_sent_at(), self.tx.completed_at()) {
            (Some(s), Some(e)) => (s, e),
            other => panic!("no start or end: {other:?}"),
        };
        let secs = (end - start).as_secs_f64();
        let (t0, acked0) = steady_from.unwrap_or((start, 0));
        let steady_secs = (end - t0).as_secs_f64();
        Outcome {
            goodput_gbps: self.tx.size_bytes() as f64 * 8.0 / secs / 1e9,
            steady_gbps: (self.tx.size_bytes() - acked0) as f64 * 8.0 / steady_secs / 1e9,
            fwd_drops: self.fwd.drops,
            fwd_max_queue: self.fwd.max_queued_bytes,
        }
    }
}

/// Payload bytes per wire byte of a full segment (1460 / 1518).
fn payload_share() -> f64 {
    1460.0 / f64::from(Packet::tcp_wire_size(1460))
}

#[test]
fn one_newreno_flow_fills_the_line() {
    // 10 Gb/s, 20 us base RTT (BDP 25 kB), 150 kB drop-tail buffer.
    let mut net = Net::new(&TcpConfig::default(), 60_000_000, 150_000, 1);
    let o = net.run(SimTime::from_ms(200));
    let st = net.tx.stats();
    println!(
        "newreno: goodput {:.3} Gb/s overall, {:.3} Gb/s after slow start; \
         drops {}, timeouts {}, fast rtx {}, max queue {} B",
        o.goodput_gbps,
        o.steady_gbps,
        o.fwd_drops,
        st.timeouts,
        st.fast_retransmits,
        o.fwd_max_queue
    );
    // Goodput counts payload only: the ceiling is 96.2% of the line.
    assert!(
        o.steady_gbps >= 0.95 * LINE,
        "steady goodput {:.3} Gb/s",
        o.steady_gbps
    );
    assert!(o.steady_gbps <= payload_share() * LINE * 1.005);
    // Slow start's overshoot (no SACK: one hole per RTT, then a timeout)
    // costs a few milliseconds once.
    assert!(
        o.goodput_gbps >= 0.85 * LINE,
        "goodput {:.3} Gb/s",
        o.goodput_gbps
    );
    assert!(st.timeouts <= 3, "{st:?}");
}

#[test]
fn one_flow_with_delayed_acks_fills_the_line() {
    let cfg = TcpConfig {
        delayed_ack: true,
        ..TcpConfig::default()
    };
    let mut net = Net::new(&cfg, 60_000_000, 150_000, 2);
    let o = net.run(SimTime::from_ms(200));
    println!(
        "delayed acks: goodput {:.3} Gb/s, {:.3} after slow start",
        o.goodput_gbps, o.steady_gbps
    );
    assert!(
        o.steady_gbps >= 0.95 * LINE,
        "steady goodput {:.3} Gb/s",
        o.steady_gbps
    );
}

#[test]
fn one_percent_random_loss_still_delivers_every_byte_once() {
    for seed in 0..4 {
        let size = 3_000_000;
        let mut net = Net::new(&TcpConfig::default(), size, 300_000, seed);
        net.fwd.loss = 0.01;
        net.rev.loss = 0.01;
        // `run` checks completion, exact delivery and the app-side check.
        let o = net.run(SimTime::from_ms(5_000));
        let st = net.tx.stats();
        println!(
            "seed {seed}: goodput {:.3} Gb/s, drops {}, rtx {}, timeouts {}, dup bytes {}",
            o.goodput_gbps,
            o.fwd_drops,
            st.retransmitted_segments,
            st.timeouts,
            net.rx.duplicate_bytes()
        );
        assert!(o.fwd_drops > 0);
        assert!(st.retransmitted_segments as u64 >= o.fwd_drops);
        assert!(net.rx.reordered_packets() > 0);
    }
}

#[test]
fn dctcp_keeps_the_queue_near_k_without_loss() {
    let k = 30_000;
    let cfg = TcpConfig {
        cc: CcKind::DCTCP,
        ..TcpConfig::default()
    };
    let mut net = Net::new(&cfg, 50_000_000, 300_000, 3);
    net.fwd.ecn_threshold_bytes = Some(k);
    net.fwd.settle = SimTime::from_ms(5);
    let o = net.run(SimTime::from_ms(200));
    let st = net.tx.stats();
    println!(
        "dctcp: goodput {:.3} Gb/s, drops {}, max queue {} B, cuts {}, alpha {:?}",
        o.goodput_gbps, o.fwd_drops, o.fwd_max_queue, st.ecn_cuts, st.dctcp_alpha
    );
    assert!(
        o.goodput_gbps >= 0.9 * LINE,
        "goodput {:.3} Gb/s",
        o.goodput_gbps
    );
    assert!(st.ecn_cuts > 10);
    assert_eq!(o.fwd_drops, 0);
    let alpha = st.dctcp_alpha.unwrap_or(1.0);
    assert!(alpha > 0.0 && alpha < 0.5, "alpha {alpha}");
    // Slow start may overshoot once; after it the queue stays near K.
    assert!(o.fwd_max_queue < 2 * k, "max queue {} B", o.fwd_max_queue);

    // NewReno on the same path fills the whole buffer.
    let mut reno = Net::new(&TcpConfig::default(), 50_000_000, 300_000, 3);
    reno.fwd.settle = SimTime::from_ms(5);
    let r = reno.run(SimTime::from_ms(200));
    println!("newreno: max queue {} B", r.fwd_max_queue);
    assert!(r.fwd_max_queue > 250_000);
}

#[test]
fn reordering_loss_and_delayed_acks_still_deliver_every_byte_once() {
    for (seed, cc) in [
        (10, CcKind::NewReno),
        (11, CcKind::DCTCP),
        (12, CcKind::DCTCP),
    ] {
        let cfg = TcpConfig {
            cc,
            delayed_ack: true,
            ..TcpConfig::default()
        };
        let mut net = Net::new(&cfg, 2_000_000, 100_000, seed);
        net.fwd.loss = 0.005;
        net.rev.loss = 0.005;
        net.fwd.jitter = SimTime::from_us(5);
        net.fwd.ecn_threshold_bytes = Some(30_000);
        let o = net.run(SimTime::from_ms(5_000));
        let st = net.tx.stats();
        println!(
            "seed {seed} {cc:?}: goodput {:.3} Gb/s, reordered {}, dup bytes {}, rtx {}",
            o.goodput_gbps,
            net.rx.reordered_packets(),
            net.rx.duplicate_bytes(),
            st.retransmitted_segments
        );
        assert!(u64::from(net.rx.reordered_packets()) > o.fwd_drops);
    }
}
