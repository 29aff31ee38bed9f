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
        Net::with_path(cfg, size, buffer_bytes, seed, LINE, SimTime::from_us(10))
    }

    /// A path of `gbps` each way with one-way propagation `delay`.
    fn with_path(
        cfg: &TcpConfig,
        size: u64,
        buffer_bytes: u64,
        seed: u64,
        gbps: f64,
        delay: SimTime,
    ) -> Self {
        let streams = RngStreams::new(seed);
        let rate = BitRate::from_gbps(gbps);
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
        self.run_observed(limit, &mut |_, _| {})
    }

    /// `run`, calling `observe` with the sender after each ACK it takes.
    fn run_observed(
        &mut self,
        limit: SimTime,
        observe: &mut dyn FnMut(&TcpSender, SimTime),
    ) -> Outcome {
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
                    observe(&self.tx, now);
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

/// The CUBIC state of a sender.
fn cubic_of(tx: &TcpSender) -> &pisanet_transport::tcp::cc::Cubic {
    match tx.cc() {
        pisanet_transport::tcp::cc::Cc::Cubic(c) => c,
        other => panic!("not CUBIC: {other:?}"),
    }
}

#[derive(Debug)]
struct Stage {
    start: SimTime,
    k: f64,
    w_max: f64,
    /// Samples in the cubic and Reno-friendly regions, and the worst
    /// relative error of cwnd against W_cubic(t) or W_est in each.
    cubic: (u32, f64),
    reno: (u32, f64),
}

/// Runs `net` (a CUBIC sender with C = `c` on a path of base RTT `rtt`
/// seconds) and compares cwnd, at each ACK from 2 RTTs into each
/// congestion-avoidance stage, with RFC 9438's closed forms.
fn cubic_stages(net: &mut Net, c: f64, rtt: f64, limit: SimTime) -> Vec<Stage> {
    let mss = f64::from(TcpConfig::default().mss);
    let mut stages: Vec<Stage> = Vec::new();
    net.run_observed(limit, &mut |tx, now| {
        let cubic = cubic_of(tx);
        let Some(start) = cubic.epoch_start() else {
            return;
        };
        if tx.stats().in_recovery {
            return;
        }
        if stages.last().is_none_or(|s| s.start != start) {
            // RFC 9438 equation (2), computed here from W_max and cwnd_epoch.
            let k = if cubic.k() == 0.0 {
                0.0 // after a timeout (section 4.8)
            } else {
                ((cubic.w_max() - cubic.cwnd_epoch()) / c).cbrt()
            };
            assert!((cubic.k() - k).abs() < 1e-9, "K {} vs {k}", cubic.k());
            stages.push(Stage {
                start,
                k,
                w_max: cubic.w_max(),
                cubic: (0, 0.0),
                reno: (0, 0.0),
            });
        }
        let s = stages.last_mut().unwrap();
        let t = (now - start).as_secs_f64();
        if t < 2.0 * rtt {
            return;
        }
        // RFC 9438 equation (1), from the stage's K and W_max.
        let w_cubic = c * (t - s.k).powi(3) + s.w_max;
        let have = tx.stats().cwnd_bytes as f64 / mss;
        let (n, err, want) = if w_cubic >= cubic.w_est() {
            (&mut s.cubic.0, &mut s.cubic.1, w_cubic)
        } else {
            (&mut s.reno.0, &mut s.reno.1, cubic.w_est())
        };
        *n += 1;
        *err = err.max((have - want).abs() / want);
    });
    stages
}

#[test]
fn cubic_window_follows_the_closed_form_after_each_congestion_event() {
    // 100 Mb/s, 100 ms base RTT (BDP 856 segments), buffer half a BDP:
    // long enough for the cubic function, not the Reno-friendly estimate,
    // to drive the window (RFC 9438 section 4.3's region test), with the
    // standard C = 0.4 and beta = 0.7. The initial RTO is RFC 6298's 1 s,
    // above this path's RTT.
    let cfg = TcpConfig {
        cc: CcKind::CUBIC,
        sack: true,
        initial_rto: SimTime::from_ms(1000),
        min_rto: SimTime::from_ms(200),
        ..TcpConfig::default()
    };
    let mut net = Net::with_path(&cfg, 300_000_000, 625_000, 21, 0.1, SimTime::from_ms(50));
    let stages = cubic_stages(&mut net, 0.4, 0.1, SimTime::from_ms(40_000));
    for s in &stages {
        println!("{s:?}");
    }
    let long: Vec<_> = stages.iter().filter(|s| s.cubic.0 > 1000).collect();
    assert!(long.len() >= 2, "{stages:?}");
    for s in &stages {
        assert!(s.cubic.1 < 0.01, "cwnd strays from W_cubic: {s:?}");
        assert!(s.reno.1 < 0.01, "cwnd strays from W_est: {s:?}");
    }
}

#[test]
fn cubic_is_reno_friendly_on_a_data_center_path() {
    // 10 Gb/s, 20 us base RTT: W_cubic(t) barely moves in milliseconds,
    // so RFC 9438 section 4.3's W_est drives the window.
    let cfg = TcpConfig {
        cc: CcKind::CUBIC,
        ..TcpConfig::default()
    };
    let mut net = Net::new(&cfg, 60_000_000, 150_000, 22);
    let stages = cubic_stages(&mut net, 0.4, 20e-6, SimTime::from_ms(200));
    for s in &stages {
        println!("{s:?}");
    }
    assert!(
        stages.iter().map(|s| s.reno.0).sum::<u32>() > 10_000,
        "{stages:?}"
    );
    for s in &stages {
        assert!(s.reno.1 < 0.01, "cwnd strays from W_est: {s:?}");
        assert!(s.cubic.1 < 0.01, "cwnd strays from W_cubic: {s:?}");
    }
}

#[test]
fn sack_recovers_slow_start_overshoot_without_the_timeout_newreno_takes() {
    // The path of `one_newreno_flow_fills_the_line`: slow start overshoots
    // the 150 kB buffer and loses many segments of one window.
    let mut reno = Net::new(&TcpConfig::default(), 60_000_000, 150_000, 1);
    let r = reno.run(SimTime::from_ms(200));
    let sack_cfg = TcpConfig {
        sack: true,
        ..TcpConfig::default()
    };
    let mut sack = Net::new(&sack_cfg, 60_000_000, 150_000, 1);
    let s = sack.run(SimTime::from_ms(200));
    let (rs, ss) = (reno.tx.stats(), sack.tx.stats());
    println!(
        "newreno: {:.3} Gb/s, drops {}, timeouts {}, fast rtx {}; \
         sack: {:.3} Gb/s, drops {}, timeouts {}, recoveries {}, rescues {}, sack acks {}",
        r.goodput_gbps,
        r.fwd_drops,
        rs.timeouts,
        rs.fast_retransmits,
        s.goodput_gbps,
        s.fwd_drops,
        ss.timeouts,
        ss.sack_recoveries,
        ss.rescue_retransmits,
        sack.rx.stats().sack_acks
    );
    assert!(s.fwd_drops > 10, "the overshoot loses many segments");
    assert!(rs.timeouts >= 1, "{rs:?}");
    assert_eq!(ss.timeouts, 0, "{ss:?}");
    assert!(ss.sack_recoveries >= 1);
    assert!(s.goodput_gbps > r.goodput_gbps);
}

#[test]
fn sack_with_loss_and_reordering_delivers_every_byte_once() {
    for seed in 0..4 {
        let cfg = TcpConfig {
            sack: true,
            delayed_ack: seed % 2 == 1,
            ..TcpConfig::default()
        };
        let mut net = Net::new(&cfg, 3_000_000, 300_000, 30 + seed);
        net.fwd.loss = 0.01;
        net.rev.loss = 0.01;
        net.fwd.jitter = SimTime::from_us(3);
        // `run` checks completion, exact delivery and the app-side check.
        let o = net.run(SimTime::from_ms(5_000));
        let st = net.tx.stats();
        println!(
            "seed {seed}: goodput {:.3} Gb/s, drops {}, rtx {}, timeouts {}, recoveries {}",
            o.goodput_gbps, o.fwd_drops, st.retransmitted_segments, st.timeouts, st.sack_recoveries
        );
        assert!(o.fwd_drops > 0);
        assert!(st.sack_recoveries > 0);
    }
}

#[test]
fn rate_capped_flow_holds_its_rate_within_one_percent() {
    for gbps in [1.0, 2.5, 7.0] {
        let cfg = TcpConfig {
            app_rate_bps: Some((gbps * 1e9) as u64),
            ..TcpConfig::default()
        };
        let size = 100_000_000;
        let mut net = Net::new(&cfg, size, 150_000, 40);
        let o = net.run(SimTime::from_ms(2_000));
        println!(
            "cap {gbps} Gb/s: goodput {:.4} Gb/s, drops {}, max queue {} B",
            o.goodput_gbps, o.fwd_drops, o.fwd_max_queue
        );
        assert!(
            (o.goodput_gbps - gbps).abs() <= 0.01 * gbps,
            "goodput {:.4} Gb/s for a cap of {gbps}",
            o.goodput_gbps
        );
        // Below the line rate the flow builds no queue and loses nothing.
        assert_eq!(o.fwd_drops, 0);
        assert!(o.fwd_max_queue <= 2 * 1518);
    }
}

#[test]
fn classic_ecn_keeps_newreno_and_cubic_off_the_buffer_without_loss() {
    let k = 30_000;
    for cc in [CcKind::NewReno, CcKind::CUBIC] {
        let cfg = TcpConfig {
            cc,
            ecn: true,
            ..TcpConfig::default()
        };
        let mut net = Net::new(&cfg, 50_000_000, 300_000, 3);
        net.fwd.ecn_threshold_bytes = Some(k);
        net.fwd.settle = SimTime::from_ms(5);
        let o = net.run(SimTime::from_ms(200));
        let st = net.tx.stats();
        println!(
            "{cc:?} + ECN: goodput {:.3} Gb/s, drops {}, max queue {} B, cuts {}",
            o.goodput_gbps, o.fwd_drops, o.fwd_max_queue, st.classic_ecn_cuts
        );
        assert!(st.classic_ecn_cuts > 10);
        assert_eq!(o.fwd_drops, 0);
        assert_eq!(st.retransmitted_segments, 0);
        // The queue stays far below the 300 kB buffer (NewReno without ECN
        // fills it: `dctcp_keeps_the_queue_near_k_without_loss`).
        assert!(o.fwd_max_queue < 3 * k, "max queue {} B", o.fwd_max_queue);
        assert!(
            o.goodput_gbps >= 0.8 * LINE,
            "goodput {:.3}",
            o.goodput_gbps
        );
    }
}
