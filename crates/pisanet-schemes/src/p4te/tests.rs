//! Golden-packet and behaviour tests of `p4te`: alg. 1's events, alg. 2's
//! choices and flowlets, alg. 3's non-atomic moves, FACK construction, the
//! once-per-B-bytes rule and the header flag, and a TCP sender's reaction to
//! FACKs. Every test also checks the PISA rules (register once per pass).

#![allow(clippy::integer_division)]

use super::*;
use crate::{build_kind, SchemeParams};
use pisanet_engine::{BitRate, RngStreams, StreamKind};
use pisanet_net::{Tcp, L4, PROTO_TCP, TC_SHORT};
use pisanet_pisa::{
    matches, ControlPlaneConfig, DeqInfo, Emit, QueueMeta, Route, Switch, TableEntry, UpdateType,
    Write,
};

fn ip(a: u8, b: u8, c: u8, d: u8) -> u32 {
    u32::from_be_bytes([a, b, c, d])
}

const H0: u32 = 0x0A00_0002; // 10.0.0.2 on port 0
const REMOTE: u32 = 0x0A00_0102; // 10.0.1.2, behind the uplinks

/// A leaf: hosts 10.0.0.2 and .3 on ports 0 and 1, uplinks 2 and 3 (10G).
fn leaf_info() -> SwitchInfo {
    let r = |prefix, len, ports: Vec<PortNo>| Route {
        prefix,
        len,
        ports,
        rack: None,
    };
    SwitchInfo {
        id: 4,
        n_ports: 4,
        port_rates: vec![BitRate::from_gbps(10.0); 4],
        routes: vec![
            r(H0, 32, vec![0]),
            r(ip(10, 0, 0, 3), 32, vec![1]),
            r(ip(10, 0, 1, 0), 24, vec![2, 3]),
            r(ip(10, 0, 2, 0), 24, vec![2, 3]),
        ],
        uplinks: vec![2, 3],
        tier: 0,
        rack: Some(0),
        host_ports: vec![0, 1],
        ..Default::default()
    }
}

/// A spine: leaf 0's rack on port 0, leaf 1's on port 1.
fn spine_info() -> SwitchInfo {
    SwitchInfo {
        id: 9,
        n_ports: 2,
        port_rates: vec![BitRate::from_gbps(10.0); 2],
        routes: vec![
            Route {
                prefix: ip(10, 0, 0, 0),
                len: 24,
                ports: vec![0],
                rack: Some(0),
            },
            Route {
                prefix: ip(10, 0, 1, 0),
                len: 24,
                ports: vec![1],
                rack: Some(1),
            },
        ],
        tier: 1,
        ..Default::default()
    }
}

fn params(f: impl FnOnce(&mut P4teParams)) -> SchemeParams {
    let mut p = SchemeParams::default();
    f(&mut p.p4te);
    p
}

fn switch(info: &SwitchInfo, params: &SchemeParams) -> Switch {
    let rng = RngStreams::new(3).stream(StreamKind::Switch, info.id as u64);
    build_kind("p4te", params, info, rng, ControlPlaneConfig::default()).unwrap()
}

fn us(t: u64) -> SimTime {
    SimTime::from_us(t)
}

fn tcp_pkt(src: u32, dst: u32, sport: u16, seq: u64, payload: u32, class: u8) -> Packet {
    let mut p = Packet {
        size: Packet::tcp_wire_size(payload),
        flow: 77,
        ..Default::default()
    };
    p.ip.src = src;
    p.ip.dst = dst;
    p.ip.proto = PROTO_TCP;
    p.ip.dscp = class;
    p.l4 = L4::Tcp(Tcp {
        sport,
        dport: 80,
        seq,
        payload,
        flags: tcp_flags::ACK,
        window: 4 << 20,
        ..Default::default()
    });
    p
}

fn ack_pkt(src: u32, dst: u32, dport: u16, ack: u64) -> Packet {
    let mut p = tcp_pkt(src, dst, 80, 0, 0, TC_SHORT);
    let t = p.tcp_mut().unwrap();
    t.dport = dport;
    t.ack = ack;
    p
}

/// Ingress: the single packet queued (port, packet, metadata).
fn through(
    sw: &mut Switch,
    now: SimTime,
    port: PortNo,
    pkt: Packet,
) -> (PortNo, Packet, QueueMeta) {
    let mut out = Vec::new();
    sw.ingress(now, port, pkt, &mut out);
    assert_eq!(out.len(), 1, "{out:?}");
    match out.pop().unwrap() {
        Emit::Enqueue { port, pkt, meta } => (port, pkt, meta),
        other => panic!("expected Enqueue, got {other:?}"),
    }
}

/// Egress of a queued packet with `depth` packets left in its queue.
fn egress(sw: &mut Switch, now: SimTime, q: &(PortNo, Packet, QueueMeta), depth: u32) -> Vec<Emit> {
    let deq = DeqInfo {
        enq_timestamp: now,
        enq_qdepth: depth,
        deq_qdepth: depth,
        deq_timedelta: SimTime::ZERO,
        meta: q.2,
    };
    let mut out = Vec::new();
    sw.egress(now, q.0, q.1.clone(), deq, &mut out);
    out
}

/// Runs pending work up to `t`; what it emits.
fn settle(sw: &mut Switch, t: SimTime) -> Vec<Emit> {
    let mut out = Vec::new();
    while let Some(d) = sw.next_deadline().filter(|&d| d <= t) {
        sw.on_timer(d, &mut out);
    }
    out
}

fn members(sw: &Switch, sel: SelectorId, g: u32) -> Vec<u64> {
    sw.pipeline()
        .group_members(sel, g)
        .iter()
        .map(|a| a.params[0])
        .collect()
}

/// The program's handles, declared again on a scratch pipeline (same order,
/// same ids).
fn handles(info: &SwitchInfo, params: &SchemeParams) -> P4te {
    P4te::new(&mut Pipeline::new("p4te"), params, info).unwrap()
}

/// A leaf switch and its handles, after one short-class TCP packet from a
/// local host went up through ingress at time 0: the packet as queued at
/// its uplink, for the egress tests to replay.
fn leaf_with_uplink_packet(
    info: &SwitchInfo,
    params: &SchemeParams,
) -> (P4te, Switch, (PortNo, Packet, QueueMeta)) {
    let h = handles(info, params);
    let mut sw = switch(info, params);
    let q = through(
        &mut sw,
        us(0),
        0,
        tcp_pkt(H0, REMOTE, 1000, 0, 1460, TC_SHORT),
    );
    (h, sw, q)
}

fn to_cpu(out: &[Emit]) -> usize {
    out.iter()
        .filter(|e| matches!(e, Emit::Consumed(_)))
        .count()
}

// ---- T3: alg. 1 ----

#[test]
fn queue_depth_events_fire_at_delta_and_move_the_port() {
    let info = leaf_info();
    let p = params(|p| p.delta_pkts = 8);
    let (h, mut sw, q) = leaf_with_uplink_packet(&info, &p);
    // Alg. 1 lines 3 and 7: an event when the depth moves by delta from the
    // last reported one; packets 200 us apart keep the meter GREEN.
    let script = [
        (0, false),
        (7, false),
        (8, true),
        (15, false),
        (16, true),
        (9, false),
        (8, true),
        (0, true),
    ];
    let mut t = 0;
    for (depth, event) in script {
        t += 200;
        let out = egress(&mut sw, us(t), &q, depth);
        assert_eq!(to_cpu(&out), event as usize, "depth {depth}: {out:?}");
        assert!(matches!(out.last(), Some(Emit::Transmit(_))));
        if depth == 16 {
            // Alg. 3 after the CPU latency and the writes: (16 - 1) / 8 = group 1.
            settle(&mut sw, us(t + 199));
            assert_eq!(members(&sw, h.rg_queue_depth, 1), vec![q.0 as u64]);
        }
    }
    settle(&mut sw, us(t + 1000));
    assert_eq!(members(&sw, h.rg_queue_depth, 0), vec![2, 3]);
    assert_eq!(sw.pipeline().read_counter(h.feedback, 0).packets, 4);
    sw.assert_no_violations();
}

#[test]
fn colour_changes_recirculate_feedback_that_updates_port_utilizations() {
    let info = leaf_info();
    let p = SchemeParams::default();
    let (h, mut sw, q) = leaf_with_uplink_packet(&info, &p);
    let port = q.0 as u32;
    // Back to back at line rate: CBS = PBS = 5% x 1.25 GB/s x 100 us =
    // 6250 B, four packets; the fifth finds the peak bucket empty: RED.
    let mut events = 0;
    for i in 0..5 {
        let out = egress(&mut sw, us(10), &q, 0);
        events += to_cpu(&out) + sw.stats().recirculated as usize;
        assert_eq!(sw.stats().recirculated, (i == 4) as u64, "packet {i}");
    }
    assert_eq!(events, 1);
    // The recirculated copy writes portUtilizations, then reaches the CPU.
    let out = settle(&mut sw, us(11));
    assert_eq!(to_cpu(&out), 1);
    assert_eq!(
        sw.pipeline().read_register(h.port_utilizations, port),
        Color::Red as u64
    );
    settle(&mut sw, us(200));
    assert_eq!(members(&sw, h.rg_link_util, 2), vec![port as u64]);
    assert!(!members(&sw, h.rg_link_util, 0).contains(&(port as u64)));
    // Idle for a while: GREEN again, a decrease event, back to group 0.
    egress(&mut sw, us(1000), &q, 0);
    settle(&mut sw, us(1300));
    assert_eq!(
        sw.pipeline().read_register(h.port_utilizations, port),
        Color::Green as u64
    );
    assert_eq!(members(&sw, h.rg_link_util, 0), vec![2, 3]);
    assert_eq!(sw.pipeline().read_counter(h.feedback, 1).packets, 2);
    sw.assert_no_violations();
}

/// Alg. 1 lines 12-20 with an RFC 2698 meter (bmv2's `Meter::execute`
/// checks the peak bucket, then the committed one, as RFC 2698 section 4):
/// a port that sends steadily between CIR and PIR gets GREEN while the
/// committed bucket holds a packet's tokens and YELLOW otherwise, so once the
/// CBS is spent, green and yellow packets interleave and alg. 1 reports every
/// change (two events per yellow packet). The burst size only delays the
/// first change: section 5.2's "one feedback packet per microburst" holds
/// for bursts shorter than CBS / (rate - CIR), not for a sustained rate.
#[test]
fn a_port_paced_between_cir_and_pir_reports_every_colour_flip() {
    let info = leaf_info();
    for burst_window_us in [100u64, 1000] {
        let p = params(|p| p.util_burst_window = us(burst_window_us));
        let (h, mut sw, q) = leaf_with_uplink_packet(&info, &p);
        // Paced at 85% of 10G (CIR 75%, PIR 95%): one packet every
        // bits / 8.5 ns.
        let bits = q.1.size as u64 * 8;
        let gap_ps = bits * 1000 * 100 / 850;
        let n = 2000u64;
        let mut first_event = None;
        for i in 0..n {
            let before = sw.pipeline().read_counter(h.feedback, 1).packets;
            egress(&mut sw, us(10) + SimTime(i * gap_ps), &q, 0);
            if first_event.is_none() && sw.pipeline().read_counter(h.feedback, 1).packets > before {
                first_event = Some(i);
            }
        }
        let events = sw.pipeline().read_counter(h.feedback, 1).packets;
        // The committed bucket (CBS = 5% x 1.25 GB/s x window) drains by
        // 10/85 of a packet per packet until it holds less than one packet.
        let size = q.1.size as u64;
        let cbs = 1_250_000_000 * 5 / 100 * burst_window_us / 1_000_000;
        let drain = (cbs - size) * 85 / 10 / size;
        let first = first_event.expect("no colour event");
        assert!(
            first.abs_diff(drain) <= 2,
            "first flip at packet {first}, expected ~{drain}"
        );
        // Afterwards 1 - 75/85 = 10/85 of the packets are yellow, each one
        // between green ones: two events each.
        let yellow = (n - first) * 10 / 85;
        assert!(
            events.abs_diff(2 * yellow) <= 4,
            "window {burst_window_us} us: {events} events, expected ~{}",
            2 * yellow
        );
        // The queue never moved: all of them were colour events.
        assert_eq!(sw.pipeline().read_counter(h.feedback, 0).packets, 0);
        sw.assert_no_violations();
    }
}

// ---- T5: alg. 3 ----

#[test]
fn a_group_move_lands_one_write_at_a_time() {
    let info = leaf_info();
    let p = params(|p| p.delta_pkts = 4);
    let (h, mut sw, q) = leaf_with_uplink_packet(&info, &p);
    let (port, other) = (q.0 as u64, 5 - q.0 as u64);
    // Depth 9: group (9 - 1) / 4 = 2.
    assert_eq!(to_cpu(&egress(&mut sw, us(0), &q, 9)), 1);
    let cp = ControlPlaneConfig::default();
    let first = cp.to_cpu_latency + cp.write_latency;
    let entries = |sw: &Switch| sw.pipeline().entries(h.mat_up_queue_depth).len();
    settle(&mut sw, first - SimTime(1));
    assert_eq!(members(&sw, h.rg_queue_depth, 0), vec![2, 3]);
    // Line 4 lands first: the port is in no group for a while.
    settle(&mut sw, first);
    assert_eq!(members(&sw, h.rg_queue_depth, 0), vec![other]);
    assert!(members(&sw, h.rg_queue_depth, 2).is_empty());
    // Line 5: the group fills, then its entry appears (no entry ever points
    // at an empty group).
    settle(&mut sw, first + cp.write_interval);
    assert_eq!(members(&sw, h.rg_queue_depth, 2), vec![port]);
    assert_eq!(entries(&sw), 1);
    settle(&mut sw, first + cp.write_interval + cp.write_interval);
    assert_eq!(entries(&sw), 2);
    // The highest-priority non-empty group still wins: the other port.
    for sport in 0..20 {
        let (up, ..) = through(
            &mut sw,
            us(500) + SimTime::from_us(sport as u64 * 200),
            1,
            tcp_pkt(ip(10, 0, 0, 3), REMOTE, 2000 + sport, 0, 1460, TC_SHORT),
        );
        assert_eq!(up as u64, other);
    }
    sw.assert_no_violations();
}

/// One metric's routing groups as a lookup sees them: (port * 8 + group)
/// per member, and the table's entries as (group, priority).
type GroupState = (Vec<u64>, Vec<(u64, i32)>);

/// Both metrics' routing groups.
fn group_state(sw: &Switch, h: &P4te) -> Vec<GroupState> {
    [
        (h.mat_up_queue_depth, h.rg_queue_depth, 4),
        (h.mat_up_link_util, h.rg_link_util, 3),
    ]
    .into_iter()
    .map(|(table, sel, n)| {
        let ports = (0..n).flat_map(|g| {
            members(sw, sel, g)
                .into_iter()
                .map(move |p| p * 8 + g as u64)
        });
        let mut entries: Vec<(u64, i32)> = sw
            .pipeline()
            .entries(table)
            .iter()
            .map(|e| (e.action.params[0], e.priority))
            .collect();
        entries.sort_unstable();
        (ports.collect(), entries)
    })
    .collect()
}

/// A storm of queue-depth events on both uplinks, 4 us apart (faster than
/// the default CPU writes: 50 us each, 5 us apart), on a switch with or
/// without `cpu_coalesce`. Returns the switch once every write has landed.
fn event_storm(coalesce: bool, events: usize) -> (Switch, P4te) {
    let info = leaf_info();
    let p = params(|p| {
        p.delta_pkts = 4;
        p.cpu_coalesce = coalesce;
    });
    let (h, mut sw, q) = leaf_with_uplink_packet(&info, &p);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for i in 0..events {
        // xorshift64: depths 0..31, so every group is visited.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let port = 2 + (x >> 40) as PortNo % 2;
        let t = us(10 + 4 * i as u64);
        settle(&mut sw, t);
        egress(&mut sw, t, &(port, q.1.clone(), q.2), (x % 32) as u32);
    }
    settle(&mut sw, SimTime::from_ms(100));
    assert!(sw.next_deadline().is_none(), "writes still pending");
    sw.assert_no_violations();
    (sw, h)
}

#[test]
fn a_coalescing_cpu_ends_in_the_same_groups_with_fewer_writes() {
    let (plain, h) = event_storm(false, 400);
    let (batched, _) = event_storm(true, 400);
    let (fb_plain, fb_batched) = (
        plain.pipeline().read_counter(h.feedback, 0).packets,
        batched.pipeline().read_counter(h.feedback, 0).packets,
    );
    // Same data-plane events (the groups do not change which port a queue
    // event is on), same final tables, far fewer writes.
    assert_eq!(fb_plain, fb_batched);
    assert!(fb_plain > 200, "{fb_plain} events");
    assert_eq!(group_state(&plain, &h), group_state(&batched, &h));
    let (w_plain, w_batched) = (plain.stats().writes_issued, batched.stats().writes_issued);
    assert!(
        w_batched * 2 < w_plain,
        "writes issued: {w_batched} batched vs {w_plain} as written"
    );
    assert_eq!(plain.stats().write_errors + batched.stats().write_errors, 0);
    // As written, the backlog grows with every event; batched, a write waits
    // at most for one batch (at most 2 writes per group, 2 entries).
    let max_batch = 2 * (4 + 3) + 2;
    let bound = ControlPlaneConfig::default().write_interval.ps() * max_batch;
    assert!(batched.stats().write_wait_ps_max <= bound);
    assert!(
        plain.stats().write_wait_ps_max > 10 * bound,
        "as written: {} ps",
        plain.stats().write_wait_ps_max
    );
}

#[test]
fn a_coalescing_cpu_writes_a_lone_move_as_alg_3_does() {
    // One event on an idle CPU: the same writes at the same times (the
    // script of a_group_move_lands_one_write_at_a_time).
    let info = leaf_info();
    let cp = ControlPlaneConfig::default();
    let first = cp.to_cpu_latency + cp.write_latency;
    let mut seen = Vec::new();
    for coalesce in [false, true] {
        let p = params(|p| {
            p.delta_pkts = 4;
            p.cpu_coalesce = coalesce;
        });
        let (h, mut sw, q) = leaf_with_uplink_packet(&info, &p);
        assert_eq!(to_cpu(&egress(&mut sw, us(0), &q, 9)), 1);
        let mut steps = Vec::new();
        for k in 0..4 {
            settle(&mut sw, first + SimTime(cp.write_interval.ps() * k));
            steps.push(group_state(&sw, &h));
        }
        assert_eq!(sw.stats().writes_issued, 3);
        seen.push(steps);
    }
    assert_eq!(seen[0], seen[1]);
}

// ---- T2: alg. 2 ----

/// Puts `port` alone in group `g` of `table`/`sel` (the other uplink stays
/// in group 0), as alg. 3 would.
fn regroup(
    sw: &mut Switch,
    table: TableId,
    sel: SelectorId,
    n: u32,
    port: PortNo,
    g: u32,
    now: SimTime,
) {
    let other = 5 - port;
    let set = |ports: Vec<PortNo>, group| Write::SelectorGroup {
        selector: sel,
        group,
        members: ports
            .into_iter()
            .map(|p| ActionCall::new(SET_PORT, [p as u64, 0, 0]))
            .collect(),
    };
    let entry = TableEntry::new(
        vec![matches::ternary(ip(10, 0, 0, 0) as u64, 0xFFFF_FC00)],
        ActionCall::new(SET_ROUTING_GROUP, [g as u64, 0, 0]),
    )
    .with_priority((n - g) as i32);
    sw.cpu_write(
        now,
        vec![
            set(vec![other], 0),
            set(vec![port], g),
            Write::TableEntry {
                table,
                update: UpdateType::Insert,
                entry,
            },
        ],
    );
    // Three writes: they land 50, 55 and 60 us after `now`.
    settle(sw, now + us(90));
}

#[test]
fn short_flows_take_the_least_queued_port_unless_it_is_not_green_and_large_flows_the_least_utilized(
) {
    let info = leaf_info();
    let p = SchemeParams::default();
    let h = handles(&info, &p);
    let mut sw = switch(&info, &p);
    // lowQueueDepthPort = 3 (port 2 in queue group 2); lowUtilPort = 2 (port 3 YELLOW).
    regroup(
        &mut sw,
        h.mat_up_queue_depth,
        h.rg_queue_depth,
        4,
        2,
        2,
        us(0),
    );
    regroup(&mut sw, h.mat_up_link_util, h.rg_link_util, 3, 3, 1, us(0));
    let util = |sw: &mut Switch, port: u32, c: Color, t: SimTime| {
        sw.cpu_write(
            t,
            vec![Write::Register {
                register: h.port_utilizations,
                index: port,
                value: c as u64,
            }],
        );
        settle(sw, t + SimTime::from_ms(1));
    };
    let mut t = us(2000);
    let mut sport = 100;
    let mut choose = |sw: &mut Switch, class, t: SimTime| {
        sport += 1;
        through(sw, t, 0, tcp_pkt(H0, REMOTE, sport, 0, 1460, class)).0
    };
    // Alg. 2 lines 9-13.
    assert_eq!(choose(&mut sw, TC_SHORT, t), 3);
    util(&mut sw, 3, Color::Yellow, t);
    t += SimTime::from_ms(2);
    assert_eq!(choose(&mut sw, TC_SHORT, t), 2);
    // Lines 17-21.
    assert_eq!(choose(&mut sw, TC_LARGE, t), 2);
    util(&mut sw, 2, Color::Red, t);
    t += SimTime::from_ms(2);
    assert_eq!(choose(&mut sw, TC_LARGE, t), 3);
    // The instrumentation counts each class's decisions and the overrides.
    let count = |c: pisanet_pisa::CounterId| sw.pipeline().read_counter(c, 0).packets;
    let short = (count(h.path_choices[0]), count(h.path_overrides[0]));
    let large = (count(h.path_choices[1]), count(h.path_overrides[1]));
    assert_eq!((short, large), ((2, 1), (2, 1)));
    sw.assert_no_violations();
}

#[test]
fn a_flowlet_keeps_its_port_until_the_interval_passes() {
    let info = leaf_info();
    let p = params(|p| p.flowlet_interval = us(100));
    let h = handles(&info, &p);
    let mut sw = switch(&info, &p);
    regroup(
        &mut sw,
        h.mat_up_queue_depth,
        h.rg_queue_depth,
        4,
        2,
        2,
        us(0),
    );
    let pkt = |seq| tcp_pkt(H0, REMOTE, 4242, seq, 1460, TC_SHORT);
    let t0 = us(1000);
    assert_eq!(through(&mut sw, t0, 0, pkt(0)).0, 3);
    // The groups change at t0: port 3 becomes the worse one (lands by t0 + 60 us).
    regroup(&mut sw, h.mat_up_queue_depth, h.rg_queue_depth, 4, 3, 3, t0);
    // Alg. 2 line 26: gaps below the interval keep the flowlet's port.
    assert_eq!(through(&mut sw, t0 + us(99), 0, pkt(1460)).0, 3);
    assert_eq!(through(&mut sw, t0 + us(198), 0, pkt(2920)).0, 3);
    // Line 7: a gap of the interval starts a flowlet on the best port now.
    assert_eq!(through(&mut sw, t0 + us(298), 0, pkt(4380)).0, 2);
    sw.assert_no_violations();
}

// ---- T4: FACKs ----

/// A leaf whose class meters allow one packet's burst (so the second
/// back-to-back large packet is over its safe rate) and B = 10 KB.
fn fack_params() -> SchemeParams {
    params(|p| {
        p.class_burst_window = SimTime::from_ns(1);
        p.rate_control_window_bytes = 10_000;
    })
}

/// Data segments of a large flow from host 0, arriving back to back at `t`;
/// the FACKs they cause (after each one's egress pass and recirculation).
fn send_data(sw: &mut Switch, t: SimTime, seqs: &[u64], red_first: bool) -> Vec<Packet> {
    let mut facks = Vec::new();
    let mut queued = Vec::new();
    for &seq in seqs {
        queued.push(through(
            sw,
            t,
            0,
            tcp_pkt(H0, REMOTE, 5555, seq, 1460, TC_LARGE),
        ));
    }
    // Leaving 20 us apart: the uplink's meter stays GREEN unless drained.
    for (i, q) in queued.iter().enumerate() {
        let at = t + us(20 * i as u64 + 20);
        if red_first {
            // Drain the uplink's peak bucket with packets of no flow first.
            let filler = (
                q.0,
                tcp_pkt(ip(10, 0, 0, 3), REMOTE, 1, 0, 1460, TC_SHORT),
                QueueMeta::default(),
            );
            for _ in 0..5 {
                egress(sw, at, &filler, 0);
            }
        }
        let out = egress(sw, at, q, 0);
        assert!(matches!(out.last(), Some(Emit::Transmit(_))));
        for e in settle(sw, at + us(5)) {
            if let Emit::Enqueue { port: 0, pkt, .. } = e {
                facks.push(pkt);
            }
        }
    }
    facks
}

#[test]
fn a_yellow_flow_on_a_green_port_gets_one_fack_raising_its_window_per_b_bytes() {
    let info = leaf_info();
    let p = fack_params();
    let h = handles(&info, &p);
    let mut sw = switch(&info, &p);
    // The ACK stream to the sender: the leaf learns ack = 3000.
    let (port, ..) = through(&mut sw, us(1), 2, ack_pkt(REMOTE, H0, 5555, 3000));
    assert_eq!(port, 0);
    // Segments at 3000, 4460, ...: the first is open to rate control
    // (incoming GREEN: nothing), the next ones within 10 KB are held; the
    // one at 3000 + 7 x 1460 = 13220 is open again and its class is over
    // the safe rate (YELLOW), its port GREEN: a FACK raising the window.
    let seqs: Vec<u64> = (0..14).map(|i| 3000 + i * 1460).collect();
    let facks = send_data(&mut sw, us(10), &seqs, false);
    assert_eq!(facks.len(), 1, "{facks:?}");
    let f = &facks[0];
    let t = f.tcp().unwrap();
    assert_eq!(
        (f.ip.src, f.ip.dst, t.sport, t.dport),
        (REMOTE, H0, 80, 5555)
    );
    assert_eq!(
        (t.flags, t.ack, t.payload, t.seq),
        (tcp_flags::ACK, 3000, 0, 0)
    );
    // In flight: 13220 + 1460 - 3000 = 11680; raised by a quarter.
    assert_eq!(t.window, 11680 + 11680 / 4);
    assert_eq!(
        (f.size, f.ext().is_none(), f.flow, f.switch_made),
        (64, true, 77, true)
    );
    // The leaf recorded the rate control at 13220: segments up to 23220 are
    // held (21980 here, which also uses the class's burst); 23440 is open
    // again and over the safe rate; the 5 after it are held.
    let later: Vec<u64> = (13..20).map(|i| 3000 + i * 1460).collect();
    let facks = send_data(&mut sw, us(1000), &later, false);
    assert_eq!(facks.len(), 1);
    assert_eq!(
        facks[0].tcp().unwrap().window,
        (23440 + 1460 - 3000) * 5 / 4
    );
    assert_eq!(sw.pipeline().read_counter(h.facks, 1).packets, 2);
    sw.assert_no_violations();
}

#[test]
fn a_yellow_flow_on_a_red_port_gets_a_fack_halving_its_window() {
    let info = leaf_info();
    let p = fack_params();
    let mut sw = switch(&info, &p);
    through(&mut sw, us(1), 2, ack_pkt(REMOTE, H0, 5555, 3000));
    let seqs: Vec<u64> = (0..8).map(|i| 3000 + i * 1460).collect();
    let facks = send_data(&mut sw, us(10), &seqs, true);
    assert_eq!(facks.len(), 1);
    assert_eq!(facks[0].tcp().unwrap().window, 11680 / 2);
    sw.assert_no_violations();
}

#[test]
fn without_rate_adaptation_or_a_known_ack_there_is_no_fack() {
    let info = leaf_info();
    let seqs: Vec<u64> = (0..8).map(|i| 3000 + i * 1460).collect();
    let mut p = fack_params();
    p.p4te.rate_adaptation = false;
    let mut sw = switch(&info, &p);
    through(&mut sw, us(1), 2, ack_pkt(REMOTE, H0, 5555, 3000));
    assert!(send_data(&mut sw, us(10), &seqs, false).is_empty());
    // No ACK seen for the flow: the leaf cannot build a FACK.
    let mut sw = switch(&info, &fack_params());
    assert!(send_data(&mut sw, us(10), &seqs, false).is_empty());
    sw.assert_no_violations();
}

#[test]
fn a_spine_acts_once_and_flags_the_packet_and_honours_the_flags() {
    let info = spine_info();
    let p = fack_params();
    let mut sw = switch(&info, &p);
    let data = |flags| {
        let mut d = tcp_pkt(H0, REMOTE, 6000, 50_000, 1460, TC_LARGE);
        Shim {
            flags,
            ack: 40_000,
            inflight: 20_000,
            trigger: 0,
        }
        .put(&mut d);
        d.size += SHIM_BYTES;
        d
    };
    let run = |sw: &mut Switch, flags, t| {
        // Two back to back: the second is over the class's safe rate.
        through(sw, t, 0, data(flags));
        let q = through(sw, t, 0, data(flags));
        assert_eq!(q.0, 1);
        let out = egress(sw, t, &q, 0);
        let sent = match out.last() {
            Some(Emit::Transmit(p)) => p.clone(),
            other => panic!("{other:?}"),
        };
        let facks: Vec<Packet> = settle(sw, t + us(5))
            .into_iter()
            .filter_map(|e| match e {
                Emit::Enqueue { port: 0, pkt, .. } => Some(pkt),
                _ => None,
            })
            .collect();
        (sent, facks)
    };
    let (sent, facks) = run(&mut sw, Shim::ACK_VALID, us(10));
    assert_eq!(facks.len(), 1);
    // Toward the sender's leaf, still with the shim (FACK, trigger) for it.
    let s = Shim::of(&facks[0]).unwrap();
    assert_eq!((s.flags, s.trigger), (Shim::FACK, 50_000));
    assert_eq!(facks[0].tcp().unwrap().window, 25_000);
    assert_eq!(facks[0].size, 64 + SHIM_BYTES);
    // Section 4.3.1: the packet carries on with the ACTED flag.
    assert_eq!(
        Shim::of(&sent).unwrap().flags,
        Shim::ACK_VALID | Shim::ACTED
    );
    for flags in [Shim::ACK_VALID | Shim::ACTED, Shim::ACK_VALID | Shim::HOLD] {
        let (_, facks) = run(&mut sw, flags, us(100));
        assert!(facks.is_empty(), "flags {flags}");
    }
    sw.assert_no_violations();
}

#[test]
fn the_senders_leaf_records_a_returning_fack_and_stamps_its_freshest_ack() {
    let info = leaf_info();
    let p = fack_params();
    let h = handles(&info, &p);
    let mut sw = switch(&info, &p);
    through(&mut sw, us(1), 2, ack_pkt(REMOTE, H0, 5555, 9000));
    // A FACK from a spine with an older ack and trigger 20000.
    let mut f = ack_pkt(REMOTE, H0, 5555, 4000);
    Shim {
        flags: Shim::FACK,
        ack: 4000,
        inflight: 0,
        trigger: 20_000,
    }
    .put(&mut f);
    f.size += SHIM_BYTES;
    let (port, out, _) = through(&mut sw, us(2), 3, f);
    assert_eq!(port, 0);
    assert_eq!(
        (out.tcp().unwrap().ack, out.ext().is_none(), out.size),
        (9000, true, 64)
    );
    let (slot, _) = {
        let mut pipe = Pipeline::new("scratch");
        let _ = P4te::new(&mut pipe, &p, &info).unwrap();
        let input = HashInput::new()
            .u32(H0)
            .u32(REMOTE)
            .u8(PROTO_TCP)
            .u16(5555)
            .u16(80);
        (
            pisanet_pisa::HashAlgo::Crc32.compute(input.bytes()) & (p.p4te.flow_slots - 1),
            (),
        )
    };
    assert_eq!(
        sw.pipeline().read_register(h.rc_seq.unwrap(), slot),
        RC_VALID | 20_000
    );
    sw.assert_no_violations();
}

#[test]
fn a_tcp_sender_honours_facks_and_identical_ones_count_as_duplicate_acks() {
    use pisanet_transport::tcp::{FlowEnds, TcpConfig, TcpSender};
    let ends = FlowEnds {
        flow: 77,
        src_addr: H0,
        dst_addr: REMOTE,
        sport: 5555,
        dport: 80,
        dscp: 1,
        prio: 0,
    };
    let mut tx = TcpSender::new(&TcpConfig::default(), ends, 1_000_000);
    let mut out = Vec::new();
    tx.on_start(us(0), &mut out);
    assert_eq!(tx.bytes_in_flight(), 14_600);
    // What the leaf hands the host: a FACK acking snd_una with half the window.
    let fack = || {
        let mut f = ack_pkt(REMOTE, H0, 5555, 0);
        f.tcp_mut().unwrap().window = 7300;
        f
    };
    out.clear();
    tx.on_packet(us(20), &fack(), &mut out);
    let s = tx.stats();
    assert_eq!((s.rwnd_bytes, s.window_updates, s.dup_acks), (7300, 1, 0));
    // A real ACK for two segments: the sender may not exceed the FACK's
    // window... until that ACK's own window (4 MiB) replaces it.
    let mut real = ack_pkt(REMOTE, H0, 5555, 2920);
    real.tcp_mut().unwrap().window = 7300;
    tx.on_packet(us(21), &real, &mut out);
    assert!(
        out.is_empty(),
        "in flight 11680 > 7300: nothing new may leave"
    );
    // Three more identical FACKs (same ack, same window) are duplicate ACKs
    // (RFC 5681 section 2): fast retransmit of data the receiver may well hold.
    let mut f = fack();
    f.tcp_mut().unwrap().ack = 2920;
    for i in 0..3 {
        tx.on_packet(us(22 + i), &f, &mut out);
    }
    assert_eq!(tx.stats().dup_acks, 3);
    assert_eq!(tx.retransmissions(), 1);
}

// ---- resources (section 6.2) ----

#[test]
fn leaf_and_non_leaf_resources_for_a_million_flows() {
    let leaf = resource_report(true, 64, 1 << 20).unwrap();
    let spine = resource_report(false, 64, 1 << 20).unwrap();
    let bits = |r: &pisanet_pisa::ResourceReport, name: &str| {
        r.registers
            .iter()
            .find(|x| x.spec.name == name)
            .map(|x| x.bits)
    };
    // Section 6.2.3: timestamp, port and sequence number per flow at the leaf.
    assert_eq!(bits(&leaf, "flowlet_time"), Some(48 << 20));
    assert_eq!(bits(&leaf, "flowlet_port"), Some(10 << 20));
    assert_eq!(bits(&leaf, "rc_seq"), Some(33 << 20));
    assert_eq!(bits(&leaf, "last_ack"), Some(64 << 20));
    assert_eq!(bits(&spine, "rc_seq"), None);
    assert_eq!(bits(&spine, "last_ack"), None);
    assert!(leaf.register_bits > spine.register_bits);
    assert_eq!(leaf.meters.len(), 1);
    assert_eq!((leaf.ingress_stages, leaf.egress_stages), (7, 4));
    let t = |name| leaf.tables.iter().find(|t| t.name == name).unwrap().entries;
    assert_eq!(
        (
            t("mat_up_queue_depth"),
            t("mat_up_link_util"),
            t("mat_link_util_rate")
        ),
        (4, 3, 64)
    );
}
