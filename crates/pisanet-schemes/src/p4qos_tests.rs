//! Golden-packet and behaviour tests of P4QoS (seed 003) and its baselines:
//! LLEP under clock offset and drift, deadline accounting, Alg. 1's target
//! computation, update propagation, keep-lower, overwrite and FIN reset,
//! the update back-off, and CoDel's control law. A small two-port-queue
//! network (below) carries packets between switches with serialization and
//! propagation delay, as the simulator's loop does.

use crate::blocks::{Codel, ControlLaw};
use crate::p4qos::{Backoff, TRGT_NONE};
use crate::qos::{self, ctl_of, DeadlineEntry, QosHdr, CTL_LLEP_REPLY, CTL_TARGET_UPDATE};
use crate::*;
use pisanet_engine::{BitRate, RngStreams, SimTime, StreamKind};
use pisanet_net::packet::tcp_flags;
use pisanet_net::{Ecn, Packet, PortNo, Tcp, L4, PROTO_TCP};
use pisanet_pisa::{
    Clock, ControlPlaneConfig, DeqInfo, Emit, InstanceType, QueueMeta, Route, Switch, SwitchInfo,
};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

const A: u32 = 0x0a00_0001; // 10.0.0.1, behind the first switch
const B: u32 = 0x0a00_0101; // 10.0.1.1, behind the last switch

fn route(prefix: u32, port: PortNo) -> Route {
    Route {
        prefix,
        len: 32,
        ports: vec![port],
        rack: None,
    }
}

/// Switch `i` of a chain of `n`: port 0 towards A (a host at the first
/// switch), port 1 towards B (a host at the last).
fn chain_info(i: u32, n: u32, rate: BitRate) -> SwitchInfo {
    let mut host_ports = Vec::new();
    if i == 0 {
        host_ports.push(0);
    }
    if i == n - 1 {
        host_ports.push(1);
    }
    SwitchInfo {
        id: i,
        n_ports: 2,
        port_rates: vec![rate; 2],
        routes: vec![route(A, 0), route(B, 1)],
        host_ports,
        name: format!("s{i}"),
        ..Default::default()
    }
}

fn params(kind: &str, deadline_us: u64) -> SchemeParams {
    let mut p = SchemeParams {
        kind: SchemeKind::by_name(kind).unwrap(),
        ..Default::default()
    };
    p.qos.deadlines = vec![DeadlineEntry {
        src: None,
        dst: Some("10.0.1.1".into()),
        sport: None,
        dport: None,
        dscp: None,
        deadline_us,
    }];
    p
}

fn build_switch(p: &SchemeParams, info: &SwitchInfo) -> Switch {
    let rng = RngStreams::new(3).stream(StreamKind::Switch, info.id as u64);
    build(p, info, rng, ControlPlaneConfig::default()).unwrap()
}

fn data(src: u32, dst: u32, sport: u16, payload: u32) -> Packet {
    let mut p = Packet {
        size: Packet::tcp_wire_size(payload),
        flow: 1,
        ..Default::default()
    };
    p.ip.src = src;
    p.ip.dst = dst;
    p.ip.proto = PROTO_TCP;
    p.ip.ecn = Ecn::Ect0;
    p.l4 = L4::Tcp(Tcp {
        sport,
        dport: 80,
        payload,
        ..Default::default()
    });
    p
}

/// (time, index of the packet in `wire`, switch, port, event kind).
type Event = Reverse<(SimTime, u64, usize, PortNo, u8)>;

struct Queued {
    pkt: Packet,
    meta: QueueMeta,
    at: SimTime,
}

/// A chain of switches joined by links of `rate` and `delay`; hosts at the
/// ends absorb what reaches them.
struct Chain {
    sw: Vec<Switch>,
    rate: BitRate,
    delay: SimTime,
    queues: Vec<[VecDeque<Queued>; 2]>,
    busy: Vec<[SimTime; 2]>,
    /// (time, seq, event)
    events: BinaryHeap<Event>,
    wire: Vec<Option<Packet>>,
    seq: u64,
    /// Packets delivered to B (time, packet).
    at_b: Vec<(SimTime, Packet)>,
    at_a: Vec<(SimTime, Packet)>,
    consumed: u64,
    /// How long each LLEP reply waited in its queue (t_q at the downstream).
    reply_waits: Vec<SimTime>,
}

const EV_ARRIVE: u8 = 0;
const EV_TXDONE: u8 = 1;

impl Chain {
    fn new(p: &SchemeParams, n: u32, rate: BitRate, delay: SimTime) -> Chain {
        Chain {
            sw: (0..n)
                .map(|i| build_switch(p, &chain_info(i, n, rate)))
                .collect(),
            rate,
            delay,
            queues: (0..n).map(|_| [VecDeque::new(), VecDeque::new()]).collect(),
            busy: vec![[SimTime::ZERO; 2]; n as usize],
            events: BinaryHeap::new(),
            wire: Vec::new(),
            seq: 0,
            at_b: Vec::new(),
            at_a: Vec::new(),
            consumed: 0,
            reply_waits: Vec::new(),
        }
    }

    fn schedule(&mut self, at: SimTime, sw: usize, port: PortNo, ev: u8, pkt: Option<Packet>) {
        self.seq += 1;
        self.wire.push(pkt);
        self.events
            .push(Reverse((at, self.wire.len() as u64 - 1, sw, port, ev)));
    }

    /// A packet from host A (into switch 0, port 0) at `at`.
    fn send_from_a(&mut self, at: SimTime, pkt: Packet) {
        self.schedule(at, 0, 0, EV_ARRIVE, Some(pkt));
    }

    /// A packet from host B (into the last switch, port 1) at `at`.
    fn send_from_b(&mut self, at: SimTime, pkt: Packet) {
        let last = self.sw.len() - 1;
        self.schedule(at, last, 1, EV_ARRIVE, Some(pkt));
    }

    fn apply(&mut self, now: SimTime, sw: usize, out: Vec<Emit>) {
        for e in out {
            match e {
                Emit::Enqueue { port, pkt, meta } => {
                    self.queues[sw][port as usize].push_back(Queued { pkt, meta, at: now });
                    self.try_tx(now, sw, port);
                }
                Emit::Consumed(_) => self.consumed += 1,
                Emit::Drop { .. } => {}
                Emit::Transmit(_) => panic!("transmit outside egress"),
            }
        }
    }

    fn try_tx(&mut self, now: SimTime, sw: usize, port: PortNo) {
        if self.busy[sw][port as usize] > now {
            return;
        }
        while let Some(q) = self.queues[sw][port as usize].pop_front() {
            let deq = DeqInfo {
                enq_timestamp: q.at,
                enq_qdepth: 0,
                deq_qdepth: self.queues[sw][port as usize].len() as u32,
                deq_timedelta: now.saturating_sub(q.at),
                meta: q.meta,
            };
            let mut out = Vec::new();
            self.sw[sw].egress(now, port, q.pkt, deq, &mut out);
            let mut sent = None;
            let mut rest = Vec::new();
            for e in out {
                match e {
                    Emit::Transmit(p) => sent = Some(p),
                    e => rest.push(e),
                }
            }
            if let Some(p) = &sent {
                self.busy[sw][port as usize] = now + self.rate.tx_time(p.size as u64);
                if ctl_of(p).is_some_and(|c| c.0 == CTL_LLEP_REPLY) {
                    self.reply_waits.push(now.saturating_sub(q.at));
                }
            }
            self.apply(now, sw, rest);
            if let Some(p) = sent {
                let done = now + self.rate.tx_time(p.size as u64);
                self.busy[sw][port as usize] = done;
                self.schedule(done, sw, port, EV_TXDONE, None);
                let n = self.sw.len();
                let arrive = done + self.delay;
                match (sw, port) {
                    (0, 0) => self.at_a.push((arrive, p)),
                    (s, 1) if s == n - 1 => self.at_b.push((arrive, p)),
                    (s, 1) => self.schedule(arrive, s + 1, 0, EV_ARRIVE, Some(p)),
                    (s, _) => self.schedule(arrive, s - 1, 1, EV_ARRIVE, Some(p)),
                }
                return;
            }
        }
    }

    fn run(&mut self, until: SimTime) {
        while let Some(Reverse((t, idx, sw, port, ev))) = self.events.peek().copied() {
            if t > until {
                break;
            }
            self.events.pop();
            for s in 0..self.sw.len() {
                while self.sw[s].next_deadline().is_some_and(|d| d <= t) {
                    let d = self.sw[s].next_deadline().unwrap();
                    let mut out = Vec::new();
                    self.sw[s].on_timer(d, &mut out);
                    self.apply(d, s, out);
                }
            }
            match ev {
                EV_ARRIVE => {
                    let pkt = self.wire[idx as usize].take().unwrap();
                    let mut out = Vec::new();
                    self.sw[sw].ingress(t, port, pkt, &mut out);
                    self.apply(t, sw, out);
                }
                _ => self.try_tx(t, sw, port),
            }
        }
        for s in &self.sw {
            s.assert_no_violations();
        }
    }
}

fn ll_est(sw: &Switch, port: u32) -> u64 {
    sw.pipeline().read_register(qos_core().ll_est, port)
}

/// The QoS core's handles as every QoS scheme declares them (first).
fn qos_core() -> qos::QosCore {
    let mut pipe = pisanet_pisa::Pipeline::new("handles");
    qos::QosCore::declare(
        &mut pipe,
        &qos::QosParams::default(),
        &SwitchInfo::default(),
        true,
    )
}

fn p4qos_handles(p: &SchemeParams, info: &SwitchInfo) -> crate::p4qos::P4qos {
    let mut pipe = pisanet_pisa::Pipeline::new("handles");
    crate::p4qos::P4qos::new(&mut pipe, p, info, crate::p4qos::Variant::Plain)
}

/// LLEP's ideal estimate: propagation plus half the forward (the stamped
/// data packet) and return (the 64-byte reply) serialization.
fn ideal_ll(rate: BitRate, delay: SimTime, data_bytes: u32) -> u64 {
    let ser = rate.tx_time(data_bytes as u64).ps() + rate.tx_time(64).ps();
    (delay.ps() + ser / 2) / 1000
}

fn llep_estimate(clocks: [Clock; 2]) -> (u64, u64) {
    let (est, ideal, _) = llep_run(clocks, false);
    (est, ideal)
}

/// LLEP over one 1 Gb/s, 40 us link: (the last estimate, the ideal, the
/// mean of every estimate written), with `reverse` traffic from B that
/// keeps the downstream switch's port back to A busy 80 % of the time, so
/// the replies queue there (t_q > 0 in eq. 1).
fn llep_run(clocks: [Clock; 2], reverse: bool) -> (u64, u64, f64) {
    let rate = BitRate::from_bps(1_000_000_000);
    let delay = SimTime::from_us(40);
    let mut p = params("p4qos", 60_000);
    p.qos.llep_interval = SimTime::from_us(100);
    let mut net = Chain::new(&p, 2, rate, delay);
    net.sw[0].set_clock(clocks[0]);
    net.sw[1].set_clock(clocks[1]);
    for i in 0..200u64 {
        net.send_from_a(SimTime::from_us(20 * i), data(A, B, 1000, 1000));
    }
    if reverse {
        // Two 1500-byte segments (24 us on the wire) every 30 us.
        for i in 0..400u64 {
            for _ in 0..2 {
                net.send_from_b(SimTime::from_us(30 * i + 7), data(B, A, 2000, 1460));
            }
        }
    }
    net.run(SimTime::from_ms(10));
    let data_bytes = Packet::tcp_wire_size(1000) + qos::QOS_BYTES as u32;
    let totals = net.sw[0].pipeline().counter_totals();
    let count = |name: &str| totals.iter().find(|(n, _)| *n == name).unwrap().1;
    let replies = count("qos_llep_replies").packets;
    assert!(replies >= 20, "LLEP ran: {replies} replies");
    let sum = count("qos_llep_estimate_ns");
    let mean = sum.bytes as f64 / sum.packets as f64;
    if reverse {
        let waited = net
            .reply_waits
            .iter()
            .filter(|w| **w > SimTime::ZERO)
            .count();
        assert!(
            waited * 2 > net.reply_waits.len(),
            "most replies queued: {waited} of {}",
            net.reply_waits.len()
        );
    }
    (
        ll_est(&net.sw[0], 1),
        ideal_ll(rate, delay, data_bytes),
        mean,
    )
}

#[test]
fn llep_estimates_propagation_plus_half_the_serialization() {
    let (est, ideal) = llep_estimate([Clock::IDEAL, Clock::IDEAL]);
    // Ideal clocks: exact to the nanosecond the 32-bit timestamps carry.
    assert!(
        est.abs_diff(ideal) <= 1,
        "estimate {est} ns, ideal {ideal} ns"
    );
}

#[test]
fn llep_subtracts_the_replys_queueing_downstream_under_offset_and_drift() {
    // The reply waits behind reverse traffic at the downstream switch
    // (t_q up to ~24 us, a quarter of the link's round trip); eq. 1
    // subtracts it, so every estimate is still the ideal value.
    let (_, ideal, mean) = llep_run([Clock::IDEAL, Clock::IDEAL], true);
    assert!(
        (mean - ideal as f64).abs() <= 1.0,
        "ideal clocks: mean estimate {mean} ns, ideal {ideal} ns"
    );
    // Offsets of 3.7 s and 0.2 s, drift +80 and -80 ppm, 1 ns resolution:
    // offsets cancel; drift costs 80 ppm of the upstream's round trip and
    // of the downstream's t_q (~ 0.01 ns per us), the floors 1 ns each.
    let clocks = [
        Clock {
            offset_ps: 3_700_000_000_123,
            drift_ppb: 80_000,
            resolution_ps: 1000,
        },
        Clock {
            offset_ps: 200_000_000_000,
            drift_ppb: -80_000,
            resolution_ps: 1000,
        },
    ];
    let (_, ideal, mean) = llep_run(clocks, true);
    assert!(
        (mean - ideal as f64).abs() <= 12.0,
        "offset and drift: mean estimate {mean} ns, ideal {ideal} ns"
    );
}

#[test]
fn llep_is_unaffected_by_clock_offset_and_nearly_by_drift() {
    let (ideal_est, ideal) = llep_estimate([Clock::IDEAL, Clock::IDEAL]);
    // Offsets of 3.7 s and 0.2 s: a one-way difference of timestamps would
    // be off by 3.5 s; eq. 1 uses each clock only for differences of its
    // own readings, so the offsets cancel.
    let offset_only = [
        Clock {
            offset_ps: 3_700_000_000_123,
            drift_ppb: 0,
            resolution_ps: 1000,
        },
        Clock {
            offset_ps: 200_000_000_000,
            drift_ppb: 0,
            resolution_ps: 1000,
        },
    ];
    let (est, _) = llep_estimate(offset_only);
    assert!(
        est.abs_diff(ideal_est) <= 2,
        "offset: {est} ns against {ideal_est} ns with ideal clocks"
    );
    // Drift of +80 and -80 ppm: the upstream's round trip (~90 us) is read
    // 80 ppm long, a few ns; the resolution floors cost at most 1 ns each.
    let drifting = [
        Clock {
            drift_ppb: 80_000,
            ..offset_only[0]
        },
        Clock {
            drift_ppb: -80_000,
            ..offset_only[1]
        },
    ];
    let (est, _) = llep_estimate(drifting);
    assert!(
        est.abs_diff(ideal) <= 12,
        "drift: {est} ns, ideal {ideal} ns"
    );
}

#[test]
fn the_first_switch_pushes_the_header_and_the_last_pops_it() {
    let p = params("p4qos", 20_000);
    let rate = BitRate::from_bps(10_000_000_000);
    let mut net = Chain::new(&p, 3, rate, SimTime::from_us(1));
    net.send_from_a(SimTime::ZERO, data(A, B, 1, 1000));
    // Not matched by the deadline table: no header.
    net.send_from_a(SimTime::from_us(5), data(B, A, 2, 1000));
    net.run(SimTime::from_ms(1));
    assert_eq!(net.at_b.len(), 1);
    let (_, got) = &net.at_b[0];
    assert!(got.ext().is_none(), "popped before the host");
    assert_eq!(got.size, Packet::tcp_wire_size(1000), "size restored");
}

/// One egress pass of `pkt` at `sw`'s `port`, queued for `qdelay`.
fn egress_once(
    sw: &mut Switch,
    now: SimTime,
    port: PortNo,
    pkt: Packet,
    qdelay: SimTime,
    in_port: PortNo,
) -> Vec<Emit> {
    let deq = DeqInfo {
        enq_timestamp: now.saturating_sub(qdelay),
        enq_qdepth: 3,
        deq_qdepth: 3,
        deq_timedelta: qdelay,
        meta: QueueMeta {
            user: [0; 2],
            ingress_port: in_port,
            instance_type: InstanceType::Normal,
            egress_rid: 0,
        },
    };
    let mut out = Vec::new();
    sw.egress(now, port, pkt, deq, &mut out);
    out
}

fn transmitted(out: &[Emit]) -> &Packet {
    out.iter()
        .find_map(|e| match e {
            Emit::Transmit(p) => Some(p),
            _ => None,
        })
        .expect("transmitted")
}

fn with_qos(mut p: Packet, h: QosHdr) -> Packet {
    h.push(&mut p);
    p
}

#[test]
fn deadline_and_target_lose_queueing_and_the_next_links_latency() {
    let p = params("p4qos", 20_000);
    // A middle switch: no host ports.
    let info = chain_info(1, 3, BitRate::from_bps(10_000_000_000));
    let mut sw = build_switch(&p, &info);
    let h = p4qos_handles(&p, &info);
    // LL_est of port 1: 50 us (as LLEP would have written it).
    sw.cpu_write(
        SimTime::ZERO,
        vec![pisanet_pisa::Write::Register {
            register: h.core.ll_est,
            index: 1,
            value: 50_000,
        }],
    );
    let mut out = Vec::new();
    sw.on_timer(SimTime::from_ms(1), &mut out);
    let hdr = QosHdr {
        deadline: 1000,
        target: 900,
        ..Default::default()
    };
    // Queued 2.048 ms: 2 units of 1.024 us... 2000 units; 50 us = 48 units.
    let q = SimTime::from_ns(204_800);
    let out = egress_once(
        &mut sw,
        SimTime::from_ms(2),
        1,
        with_qos(data(A, B, 1, 1000), hdr),
        q,
        0,
    );
    let got = QosHdr::of(transmitted(&out)).unwrap();
    // d -= (204800 + 50000) >> 10 = 248 units; t_t -= 50000 >> 10 = 48.
    assert_eq!(got.deadline, 1000 - 248);
    assert_eq!(got.target, 900 - 48);
    // 204.8 us > s (default 1.2 ms)? No: not a bottleneck.
    assert_eq!(got.n_btl, 0);
    // Above the sensitivity: one more bottleneck; past the deadline: late.
    let out = egress_once(
        &mut sw,
        SimTime::from_ms(3),
        1,
        with_qos(data(A, B, 1, 1000), hdr),
        SimTime::from_ms(2),
        0,
    );
    let got = QosHdr::of(transmitted(&out)).unwrap();
    assert_eq!(got.n_btl, 1);
    assert_eq!(got.deadline, 0);
    assert_ne!(got.flags & qos::FLAG_LATE, 0);
    let late = sw
        .pipeline()
        .counter_totals()
        .into_iter()
        .find(|(n, _)| *n == "qos_deadline_missed")
        .unwrap()
        .1
        .packets;
    assert_eq!(late, 1);
    sw.assert_no_violations();
}

fn target_of(sw: &Switch, h: &crate::p4qos::P4qos, port: u32) -> (u64, u64) {
    let cell = sw.pipeline().read_register(h.target, port);
    let t = match cell & 0xffff_ffff {
        0 => TRGT_NONE,
        t => t,
    };
    (t, cell >> 32)
}

#[test]
fn the_last_switch_computes_alg1_target_and_sends_the_update_back() {
    let p = params("p4qos", 20_000);
    let info = chain_info(2, 3, BitRate::from_bps(10_000_000_000));
    let mut sw = build_switch(&p, &info);
    let h = p4qos_handles(&p, &info);
    // t_t = 3000 units, n_btl = 2 here and one more at this switch: 3,
    // rounded up to 4: trgt_new = (3000 << 10) >> 2 = 768000 ns.
    let hdr = QosHdr {
        deadline: 5000,
        target: 3000,
        n_btl: 2,
        ..Default::default()
    };
    let out = egress_once(
        &mut sw,
        SimTime::from_ms(5),
        1,
        with_qos(data(A, B, 7, 1000), hdr),
        SimTime::from_ms(2),
        0,
    );
    // The data goes on to B without its header, CE-marked: queued 2 ms >
    // the new target 0.768 ms.
    let d = transmitted(&out);
    assert!(d.ext().is_none());
    assert_eq!(d.ip.ecn, Ecn::Ce);
    let (t, id) = target_of(&sw, &h, 1);
    assert_eq!(t, 768_000);
    assert_ne!(id, 0);
    // The E2E clone, back towards the sender (port 0), becomes the update.
    let (port, clone, meta) = out
        .into_iter()
        .find_map(|e| match e {
            Emit::Enqueue { port, pkt, meta } => Some((port, pkt, meta)),
            _ => None,
        })
        .expect("the update's clone");
    assert_eq!(port, 0);
    assert_eq!(meta.instance_type, InstanceType::EgressClone);
    let deq = DeqInfo {
        enq_timestamp: SimTime::from_ms(5),
        deq_timedelta: SimTime::ZERO,
        meta,
        ..Default::default()
    };
    let mut out = Vec::new();
    sw.egress(SimTime::from_ms(5), 0, clone, deq, &mut out);
    let u = transmitted(&out);
    assert_eq!(ctl_of(u), Some((CTL_TARGET_UPDATE, 768_000, id)));
    assert_eq!((u.ip.src, u.ip.dst), (B, A), "addresses swapped");
    assert_eq!(u.size, 64);
    sw.assert_no_violations();
}

fn update_pkt(trgt: u64, id: u64) -> Packet {
    let mut p = data(B, A, 0, 0);
    qos::make_ctl(&mut p, CTL_TARGET_UPDATE, trgt, id);
    p
}

/// Runs an update arriving on `port` through ingress and every egress pass
/// it causes; returns the ports the update leaves on.
fn deliver_update(sw: &mut Switch, now: SimTime, port: PortNo, u: Packet) -> Vec<PortNo> {
    let mut out = Vec::new();
    sw.ingress(now, port, u, &mut out);
    let mut left = Vec::new();
    for e in out {
        if let Emit::Enqueue { port, pkt, meta } = e {
            let deq = DeqInfo {
                enq_timestamp: now,
                meta,
                ..Default::default()
            };
            let mut o = Vec::new();
            sw.egress(now, port, pkt, deq, &mut o);
            if o.iter().any(|e| matches!(e, Emit::Transmit(_))) {
                left.push(port);
            }
        }
    }
    left
}

#[test]
fn updates_keep_the_lower_target_let_its_flow_overwrite_and_fin_resets() {
    let p = params("p4qos", 20_000);
    // A middle switch: the update goes on (port 0) and applies to port 1.
    let info = chain_info(1, 3, BitRate::from_bps(10_000_000_000));
    let mut sw = build_switch(&p, &info);
    let h = p4qos_handles(&p, &info);
    let t = SimTime::from_ms(1);
    assert_eq!(
        deliver_update(&mut sw, t, 1, update_pkt(500_000, 7)),
        vec![0]
    );
    assert_eq!(target_of(&sw, &h, 1), (500_000, 7));
    assert_eq!(target_of(&sw, &h, 0).0, TRGT_NONE, "only the data's port");
    // Another flow's higher target: kept lower (line 12).
    deliver_update(&mut sw, t, 1, update_pkt(900_000, 8));
    assert_eq!(target_of(&sw, &h, 1), (500_000, 7));
    // Another flow's lower target: taken.
    deliver_update(&mut sw, t, 1, update_pkt(300_000, 8));
    assert_eq!(target_of(&sw, &h, 1), (300_000, 8));
    // The flow that set it may raise it.
    deliver_update(&mut sw, t, 1, update_pkt(700_000, 8));
    assert_eq!(target_of(&sw, &h, 1), (700_000, 8));
    // A FIN of another flow leaves it; the FIN of flow 8 resets it.
    let mut fin = data(A, B, 9, 100);
    fin.tcp_mut().unwrap().flags |= tcp_flags::FIN;
    egress_once(&mut sw, t, 1, fin.clone(), SimTime::ZERO, 0);
    assert_eq!(target_of(&sw, &h, 1), (700_000, 8));
    // Make the id of the FIN's flow the one that set the target.
    let fin_id = {
        crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&{
            let (s, d, pr, sp, dp) = fin.five_tuple();
            let mut v = Vec::new();
            v.extend(s.to_be_bytes());
            v.extend(d.to_be_bytes());
            v.push(pr);
            v.extend(sp.to_be_bytes());
            v.extend(dp.to_be_bytes());
            v
        }) as u64
    };
    deliver_update(&mut sw, t, 1, update_pkt(600_000, fin_id));
    assert_eq!(target_of(&sw, &h, 1), (600_000, fin_id));
    egress_once(&mut sw, t, 1, fin, SimTime::ZERO, 0);
    assert_eq!(target_of(&sw, &h, 1).0, TRGT_NONE, "reset by its FIN");
    sw.assert_no_violations();

    // At the first switch the update stops: applied, not sent to the host.
    let info = chain_info(0, 3, BitRate::from_bps(10_000_000_000));
    let mut first = build_switch(&p, &info);
    assert!(deliver_update(&mut first, t, 1, update_pkt(400_000, 3)).is_empty());
    assert_eq!(target_of(&first, &h, 1), (400_000, 3));
    first.assert_no_violations();
}

fn updates_sent(backoff: Backoff) -> u64 {
    let mut p = params("p4qos", 20_000);
    p.p4qos.backoff = backoff;
    let info = chain_info(2, 3, BitRate::from_bps(10_000_000_000));
    let mut sw = build_switch(&p, &info);
    // 1 s of packets every 100 us at the last switch, from two flows.
    for i in 0..10_000u64 {
        let hdr = QosHdr {
            deadline: 5000,
            target: 3000,
            n_btl: (i / 2500) % 3,
            ..Default::default()
        };
        let pkt = with_qos(data(A, B, (i % 2) as u16, 1000), hdr);
        egress_once(
            &mut sw,
            SimTime::from_us(100 * i + 1),
            1,
            pkt,
            SimTime::from_us(10),
            0,
        );
    }
    sw.assert_no_violations();
    sw.pipeline()
        .counter_totals()
        .into_iter()
        .find(|(n, _)| *n == "p4qos_target_updates")
        .unwrap()
        .1
        .packets
}

#[test]
fn fixed_backoff_sends_far_fewer_updates_than_plain() {
    let plain = updates_sent(Backoff::None);
    let fixed = updates_sent(Backoff::Fixed);
    let adaptive = updates_sent(Backoff::Adaptive);
    eprintln!("updates: plain {plain}, fixed {fixed}, adaptive {adaptive}");
    assert_eq!(plain, 10_000, "Alg. 1: one per QoS packet");
    // One per 100 ms over 1 s.
    assert!((10..=11).contains(&fixed), "fixed: {fixed}");
    assert!(
        adaptive > fixed && adaptive < plain / 10,
        "adaptive: {adaptive}"
    );
}

#[test]
fn codel_control_law_is_interval_over_sqrt_count() {
    let law = ControlLaw::new(SimTime::from_ms(100));
    assert_eq!(law.delta(1), 100_000_000);
    assert_eq!(law.delta(4), 50_000_000);
    assert_eq!(law.delta(100), 10_000_000);
    assert!(law.delta(2).abs_diff(70_710_678) <= 2);
    assert_eq!(law.delta(10_000), law.delta(255), "the table's last entry");
}

#[test]
fn codel_drops_after_an_interval_above_target_then_by_the_control_law() {
    let mut pipe = pisanet_pisa::Pipeline::new("codel");
    let codel = Codel::declare(&mut pipe, 1, SimTime::from_ms(100));
    let mut sw = Switch::new(
        &SwitchInfo {
            n_ports: 1,
            ..Default::default()
        },
        pipe,
        Box::new(CodelOnly(codel)),
        Box::new(NoAgent),
        RngStreams::new(1).stream(StreamKind::Switch, 0),
        ControlPlaneConfig::default(),
        Default::default(),
    )
    .unwrap();
    // Sojourn 10 ms > 5 ms from t = 0, a packet every ms.
    let mut drops = Vec::new();
    for ms in 0..400u64 {
        let out = egress_once(
            &mut sw,
            SimTime::from_ms(ms),
            0,
            data(A, B, 1, 1000),
            SimTime::from_ms(10),
            0,
        );
        if out.iter().any(|e| matches!(e, Emit::Drop { .. })) {
            drops.push(ms);
        }
    }
    // First drop one interval after the queue went above target (count 1,
    // next one interval later, RFC 8289 section 5.5); then 100/sqrt(2) =
    // 70.7 ms, 100/sqrt(3) = 57.7 ms later, ...
    assert_eq!(&drops[..4], &[100, 200, 271, 329]);
    sw.assert_no_violations();
}

struct CodelOnly(Codel);
impl pisanet_pisa::DataPlane for CodelOnly {
    fn ingress(
        &mut self,
        _: &mut pisanet_pisa::Ctx<'_>,
        _: &mut Packet,
        sm: &mut pisanet_pisa::StandardMetadata,
        _: &mut pisanet_pisa::UserMeta,
    ) {
        sm.egress_spec = 0;
    }
    fn egress(
        &mut self,
        ctx: &mut pisanet_pisa::Ctx<'_>,
        _: &mut Packet,
        sm: &mut pisanet_pisa::StandardMetadata,
        _: &mut pisanet_pisa::UserMeta,
    ) {
        let now = crate::blocks::ns_u64(sm.egress_global_timestamp);
        let soj = crate::blocks::ns_u64(sm.deq_timedelta);
        if self.0.dequeue(ctx, 0, now, soj, 5_000_000, false) {
            sm.mark_to_drop();
        }
    }
}
struct NoAgent;
impl pisanet_pisa::ControlAgent for NoAgent {
    fn on_start(&mut self, _: &SwitchInfo, _: &mut pisanet_pisa::CpuApi<'_>) {}
}

#[test]
fn variants_mark_differently_above_the_same_target() {
    // One queue 2 ms deep for 300 ms; the target 0.5 ms (set by an update).
    let count_marks = |kind: &str| {
        let p = params(kind, 20_000);
        let info = chain_info(1, 3, BitRate::from_bps(10_000_000_000));
        let mut sw = build_switch(&p, &info);
        deliver_update(&mut sw, SimTime::from_us(1), 1, update_pkt(500_000, 5));
        let mut marks = 0;
        for ms in 1..=300u64 {
            let out = egress_once(
                &mut sw,
                SimTime::from_ms(ms),
                1,
                with_qos(
                    data(A, B, 1, 1000),
                    QosHdr {
                        deadline: 20_000,
                        target: 20_000,
                        ..Default::default()
                    },
                ),
                SimTime::from_ms(2),
                0,
            );
            if transmitted(&out).ip.ecn == Ecn::Ce {
                marks += 1;
            }
        }
        sw.assert_no_violations();
        marks
    };
    assert_eq!(count_marks("p4qos"), 300, "every packet above trgt");
    let interval = count_marks("p4qos_interval");
    let codel = count_marks("p4qos_codel");
    // Interval: at 1, 101, 171.7, 229.4, 279.4 ms (the interval shrinking).
    assert_eq!(interval, 5);
    // CoDel waits one interval above target first: 101, 201, 272.
    assert_eq!(codel, 3);
    for kind in ["noaqm", "prio"] {
        assert_eq!(count_marks(kind), 0, "{kind}");
    }
}

/// Interval P4QoS's mark times (ms) on a queue that is 2 ms deep (above a
/// 0.5 ms trgt) for 5 ms and empty for 5 ms, a packet every ms for 600 ms,
/// then empty for 300 ms, then deep for 300 ms.
fn interval_marks(reset: crate::p4qos::IntervalReset) -> Vec<u64> {
    let mut p = params("p4qos_interval", 20_000);
    p.p4qos.interval_reset = reset;
    let info = chain_info(1, 3, BitRate::from_bps(10_000_000_000));
    let mut sw = build_switch(&p, &info);
    deliver_update(&mut sw, SimTime::from_us(1), 1, update_pkt(500_000, 5));
    let mut marks = Vec::new();
    for ms in 1..=1200u64 {
        let deep = if ms <= 600 { ms % 10 < 5 } else { ms > 900 };
        let q = if deep {
            SimTime::from_ms(2)
        } else {
            SimTime::ZERO
        };
        let hdr = QosHdr {
            deadline: 20_000,
            target: 20_000,
            ..Default::default()
        };
        let out = egress_once(
            &mut sw,
            SimTime::from_ms(ms),
            1,
            with_qos(data(A, B, 1, 1000), hdr),
            q,
            0,
        );
        if transmitted(&out).ip.ecn == Ecn::Ce {
            marks.push(ms);
        }
    }
    sw.assert_no_violations();
    marks
}

#[test]
fn interval_p4qos_resets_its_interval_below_target_or_after_a_quiet_interval() {
    use crate::p4qos::IntervalReset;
    // Default reading: every packet at or below trgt resets the interval,
    // so on a queue that dips below trgt every 10 ms the marks stay a whole
    // 100 ms apart.
    let below = interval_marks(IntervalReset::BelowTarget);
    eprintln!("below_target: {below:?}");
    assert_eq!(&below[..4], &[1, 101, 201, 301]);
    // quiet_interval: the queue is above trgt again within an interval
    // after each idle one, so the interval shrinks as CoDel's (100,
    // 70.7, 57.7, 50, ... ms) ...
    let quiet = interval_marks(IntervalReset::QuietInterval);
    eprintln!("quiet_interval: {quiet:?}");
    assert_eq!(&quiet[..4], &[1, 101, 172, 230]);
    let before = |v: &[u64], t| v.iter().filter(|&&m| m <= t).count();
    assert!(before(&quiet, 600) > before(&below, 600) + 2);
    // ... and 300 ms with nothing above trgt (longer than an interval
    // after the last idle one) reset it: two marks a default interval apart.
    let after: Vec<u64> = quiet.iter().copied().filter(|&m| m > 600).collect();
    assert_eq!(&after[..2], &[901, 1001], "{after:?}");
}

#[test]
fn prio_puts_the_lower_deadline_in_the_higher_priority_queue() {
    let mut p = params("prio", 20_000);
    p.qos.deadlines.push(DeadlineEntry {
        src: None,
        dst: Some("10.0.1.2".into()),
        sport: None,
        dport: None,
        dscp: None,
        deadline_us: 5_000,
    });
    let mut info = chain_info(0, 2, BitRate::from_bps(10_000_000_000));
    info.routes.push(route(B + 1, 1));
    let mut sw = build_switch(&p, &info);
    let mut prio_of = |dst| {
        let mut out = Vec::new();
        sw.ingress(SimTime::from_us(1), 0, data(A, dst, 1, 100), &mut out);
        match &out[0] {
            Emit::Enqueue { pkt, .. } => pkt.prio,
            e => panic!("{e:?}"),
        }
    };
    assert_eq!(prio_of(B), 1);
    assert_eq!(prio_of(B + 1), 0);
}

#[test]
fn llep_reply_carries_the_downstream_time_and_is_consumed_upstream() {
    let p = params("noaqm", 20_000);
    let rate = BitRate::from_bps(10_000_000_000);
    let mut p2 = p.clone();
    p2.qos.llep_interval = SimTime::from_us(1);
    let mut net = Chain::new(&p2, 2, rate, SimTime::from_us(3));
    for i in 0..5 {
        net.send_from_a(SimTime::from_us(10 * i), data(A, B, 1, 500));
    }
    net.run(SimTime::from_ms(1));
    assert_eq!(net.at_b.len(), 5);
    assert!(net.at_a.is_empty(), "replies never reach a host");
    assert!(
        net.consumed >= 5,
        "each reply consumed at the upstream switch"
    );
}

#[test]
fn the_llep_clone_becomes_a_reply_with_t_q_plus_t_p() {
    let p = params("noaqm", 20_000);
    let info = chain_info(1, 2, BitRate::from_bps(10_000_000_000));
    let mut sw = build_switch(&p, &info);
    let hdr = QosHdr {
        deadline: 100,
        target: 100,
        flags: qos::FLAG_LLEP,
        t_send: 123_456,
        ..Default::default()
    };
    let mut out = Vec::new();
    sw.ingress(
        SimTime::from_us(10),
        0,
        with_qos(data(A, B, 1, 500), hdr),
        &mut out,
    );
    let mut clone = None;
    for e in out {
        if let Emit::Enqueue { port, pkt, meta } = e {
            if meta.instance_type == InstanceType::IngressClone {
                assert_eq!(port, 0, "back where it came from");
                clone = Some((pkt, meta));
            } else {
                assert_eq!(QosHdr::of(&pkt).unwrap().flags & qos::FLAG_LLEP, 0);
            }
        }
    }
    let (pkt, meta) = clone.expect("cloned");
    // Queued 7 us behind other packets at port 0.
    let deq = DeqInfo {
        enq_timestamp: SimTime::from_us(10),
        deq_timedelta: SimTime::from_us(7),
        meta,
        ..Default::default()
    };
    let mut out = Vec::new();
    sw.egress(SimTime::from_us(17), 0, pkt, deq, &mut out);
    let r = transmitted(&out);
    assert_eq!(ctl_of(r), Some((CTL_LLEP_REPLY, 123_456, 7_000)));
    assert_eq!(r.size, 64);
    sw.assert_no_violations();
}

#[test]
fn p4qos_state_is_16_bytes_per_port() {
    let r = resources("p4qos").unwrap();
    let per_port: u64 = r
        .registers
        .iter()
        .filter(|x| ["ll_est", "llep_last", "target"].contains(&x.spec.name))
        .map(|x| x.bits)
        .sum();
    // 24 ports x 16 B = 384 B (the paper's "386 B" is a typo).
    assert_eq!(per_port, 24 * 16 * 8);
    assert_eq!(r.register_bits, per_port, "plain p4qos keeps nothing else");
}

#[test]
fn bad_deadline_entries_are_refused() {
    let mut p = params("p4qos", 20_000);
    p.qos.deadlines[0].dst = Some("10.0.1".into());
    assert!(p.validate().unwrap_err().contains("deadlines[0].dst"));
    let mut p = params("p4qos", 100_000);
    assert!(p.validate().unwrap_err().contains("time_shift"));
    p.qos.time_shift = 12;
    p.validate().unwrap();
}
