//! Switch-level tests: the pipeline's end-of-pass semantics (clone,
//! resubmission, recirculation, multicast, CPU), the control plane's latency
//! and non-atomic writes, the register-once rule, externs through `Ctx`.

use crate::*;
use pisanet_engine::{RngStreams, SimTime, StreamKind};
use pisanet_net::{Packet, PortNo, Udp, L4};
use std::sync::{Arc, Mutex};

type Stage = Box<dyn FnMut(&mut Ctx<'_>, &mut Packet, &mut StandardMetadata, &mut UserMeta) + Send>;
type Generator = Box<dyn FnMut(SimTime, u8) -> Option<Packet> + Send>;

/// A program made of two closures, so each test writes only what it checks.
struct Prog {
    ingress: Stage,
    egress: Stage,
    generate: Option<Generator>,
}

impl DataPlane for Prog {
    fn ingress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        meta: &mut UserMeta,
    ) {
        (self.ingress)(ctx, pkt, sm, meta)
    }
    fn egress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        meta: &mut UserMeta,
    ) {
        (self.egress)(ctx, pkt, sm, meta)
    }
    fn generate(&mut self, now: SimTime, app: u8) -> Option<Packet> {
        self.generate.as_mut().and_then(|g| g(now, app))
    }
}

fn prog(ingress: Stage) -> Prog {
    Prog {
        ingress,
        egress: Box::new(|_, _, _, _| {}),
        generate: None,
    }
}

type Log = Arc<Mutex<Vec<(SimTime, String)>>>;

/// An agent that installs `start`, logs what reaches it, and answers a
/// packet-in with `react`.
struct Recorder {
    start: Vec<Write>,
    react: Vec<Write>,
    log: Log,
}

impl ControlAgent for Recorder {
    fn on_start(&mut self, _: &SwitchInfo, cpu: &mut CpuApi<'_>) {
        for w in self.start.drain(..) {
            cpu.write(w);
        }
    }
    fn on_packet(&mut self, pkt: Packet, cpu: &mut CpuApi<'_>) {
        self.log
            .lock()
            .unwrap()
            .push((cpu.now, format!("packet {}", pkt.uid)));
        for w in self.react.drain(..) {
            cpu.write(w);
        }
    }
    fn on_digest(&mut self, d: Digest, cpu: &mut CpuApi<'_>) {
        self.log
            .lock()
            .unwrap()
            .push((cpu.now, format!("digest {}", d.data[0])));
    }
    fn on_port_status(&mut self, port: PortNo, up: bool, cpu: &mut CpuApi<'_>) {
        self.log
            .lock()
            .unwrap()
            .push((cpu.now, format!("port {port} {up}")));
    }
}

const CP: ControlPlaneConfig = ControlPlaneConfig {
    to_cpu_latency: SimTime::from_us(10),
    write_latency: SimTime::from_us(50),
    write_interval: SimTime::from_us(5),
};

fn switch_with(pipe: Pipeline, p: Prog, start: Vec<Write>, react: Vec<Write>) -> (Switch, Log) {
    let info = SwitchInfo {
        id: 3,
        n_ports: 8,
        ..Default::default()
    };
    let log: Log = Arc::default();
    let agent = Recorder {
        start,
        react,
        log: log.clone(),
    };
    let rng = RngStreams::new(7).stream(StreamKind::Switch, 3);
    let sw = Switch::new(
        &info,
        pipe,
        Box::new(p),
        Box::new(agent),
        rng,
        CP,
        TargetConfig::default(),
    )
    .unwrap();
    (sw, log)
}

fn udp(src: u32, dst: u32, sport: u16) -> Packet {
    let mut p = Packet {
        uid: 42,
        size: 1000,
        l4: L4::Udp(Udp {
            sport,
            dport: 80,
            payload: 954,
            psn: 0,
            ack_req: false,
        }),
        ..Default::default()
    };
    p.ip.src = src;
    p.ip.dst = dst;
    p.ip.proto = pisanet_net::PROTO_UDP;
    p
}

fn at(us: u64) -> SimTime {
    SimTime::from_us(us)
}

/// Runs the switch's pending work up to and including `t`.
fn run_until(sw: &mut Switch, t: SimTime, out: &mut Vec<Emit>) {
    while let Some(d) = sw.next_deadline() {
        if d > t {
            break;
        }
        sw.on_timer(d, out);
    }
}

fn deq_of(meta: QueueMeta, now: SimTime) -> DeqInfo {
    DeqInfo {
        enq_timestamp: now,
        enq_qdepth: 3,
        deq_qdepth: 2,
        deq_timedelta: SimTime::from_ns(100),
        meta,
    }
}

fn enqueued(e: &Emit) -> (PortNo, &Packet, QueueMeta) {
    match e {
        Emit::Enqueue { port, pkt, meta } => (*port, pkt, *meta),
        other => panic!("expected Enqueue, got {other:?}"),
    }
}

fn register(pipe: &mut Pipeline, name: &'static str, width: u8, size: u32) -> RegisterId {
    pipe.register(RegisterSpec {
        name,
        width,
        size,
        holds: "test",
    })
}

#[test]
fn second_register_access_in_a_pass_is_a_violation() {
    let mut pipe = Pipeline::new("twice");
    let r = register(&mut pipe, "r", 8, 4);
    let (mut sw, _) = switch_with(
        pipe,
        prog(Box::new(move |ctx, pkt, sm, _| {
            let v = ctx.register(r, 0, |v| (v + 300, v)); // 300 masks to 44 in 8 bits
            if pkt.ip.dst == 2 {
                ctx.register_write(r, 1, v);
            }
            sm.egress_spec = 1;
        })),
        vec![],
        vec![],
    );
    let mut out = Vec::new();
    sw.ingress(at(0), 0, udp(1, 1, 1), &mut out);
    sw.ingress(at(1), 0, udp(1, 1, 1), &mut out);
    sw.assert_no_violations();
    assert_eq!(sw.pipeline().read_register(r, 0), (300 + 300) & 0xFF);
    sw.ingress(at(2), 0, udp(1, 2, 1), &mut out);
    let (v, n) = sw.violations();
    assert_eq!(n, 1);
    assert_eq!(v[0].kind, ViolationKind::RegisterTwice);
    assert_eq!(v[0].object, "r");
    assert_eq!(sw.stats().violations, 1);
    // The next pass starts afresh.
    sw.ingress(at(3), 0, udp(1, 1, 1), &mut out);
    assert_eq!(sw.violations().1, 1);
}

#[test]
#[should_panic(expected = "violations")]
fn assert_no_violations_panics_on_a_violation() {
    let mut pipe = Pipeline::new("twice");
    let r = register(&mut pipe, "r", 8, 4);
    let (mut sw, _) = switch_with(
        pipe,
        prog(Box::new(move |ctx, _, _, _| {
            ctx.register_read(r, 0);
            ctx.register_read(r, 3);
        })),
        vec![],
        vec![],
    );
    sw.ingress(at(0), 0, udp(1, 1, 1), &mut Vec::new());
    sw.assert_no_violations();
}

#[test]
fn a_register_belongs_to_one_gress() {
    let mut pipe = Pipeline::new("gress");
    let r = register(&mut pipe, "r", 16, 1);
    let mut p = prog(Box::new(move |ctx, _, sm, _| {
        ctx.register_read(r, 0);
        sm.egress_spec = 1;
    }));
    p.egress = Box::new(move |ctx, _, _, _| {
        ctx.register_read(r, 0);
    });
    let (mut sw, _) = switch_with(pipe, p, vec![], vec![]);
    let mut out = Vec::new();
    sw.ingress(at(0), 0, udp(1, 1, 1), &mut out);
    sw.assert_no_violations();
    let (port, pkt, meta) = enqueued(&out[0]);
    sw.egress(
        at(1),
        port,
        pkt.clone(),
        deq_of(meta, at(0)),
        &mut Vec::new(),
    );
    assert_eq!(
        sw.violations().0[0].kind,
        ViolationKind::RegisterBothGresses
    );
}

#[test]
fn egress_sees_queue_state_and_user_metadata_but_cannot_change_the_port() {
    let pipe = Pipeline::new("egress");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let mut p = prog(Box::new(|_, _, sm, meta| {
        meta[0] = 0xABCD;
        sm.egress_spec = 4;
    }));
    p.egress = Box::new(move |_, pkt, sm, meta| {
        s2.lock().unwrap().push((
            sm.egress_port,
            sm.ingress_port,
            sm.enq_qdepth,
            sm.deq_qdepth,
            sm.deq_timedelta,
            meta[0],
            sm.instance_type,
        ));
        if pkt.ip.src == 9 {
            sm.egress_spec = 5;
        }
    });
    let (mut sw, _) = switch_with(pipe, p, vec![], vec![]);
    let mut out = Vec::new();
    sw.ingress(at(0), 2, udp(1, 1, 1), &mut out);
    let (port, pkt, meta) = enqueued(&out[0]);
    assert_eq!(port, 4);
    let mut eout = Vec::new();
    sw.egress(at(1), port, pkt.clone(), deq_of(meta, at(0)), &mut eout);
    assert!(matches!(eout[0], Emit::Transmit(_)));
    assert_eq!(
        seen.lock().unwrap()[0],
        (
            4,
            2,
            3,
            2,
            SimTime::from_ns(100),
            0xABCD,
            InstanceType::Normal
        )
    );
    sw.assert_no_violations();
    sw.egress(at(2), 4, udp(9, 1, 1), deq_of(meta, at(1)), &mut eout);
    // The packet still leaves on its port; the attempt is a violation.
    assert!(matches!(eout[1], Emit::Transmit(_)));
    assert_eq!(sw.violations().0[0].kind, ViolationKind::EgressPortChanged);
}

#[test]
fn i2e_clone_copies_the_packet_as_it_entered() {
    let mut pipe = Pipeline::new("clone");
    pipe.keep_original();
    let p = prog(Box::new(|_, pkt, sm, _| {
        pkt.ip.dscp = 7; // modified after the clone point
        sm.clone_to(CloneType::I2E, 5);
        sm.egress_spec = 1;
    }));
    let start = vec![Write::CloneSession {
        session: 5,
        port: Some(3),
    }];
    let (mut sw, _) = switch_with(pipe, p, start, vec![]);
    let mut out = Vec::new();
    sw.ingress(at(0), 0, udp(1, 1, 1), &mut out);
    assert_eq!(out.len(), 2);
    let (cport, clone, cmeta) = enqueued(&out[0]);
    let (oport, orig, ometa) = enqueued(&out[1]);
    assert_eq!((cport, oport), (3, 1));
    assert!(clone.switch_made && !orig.switch_made);
    assert_eq!(clone.uid, (1 << 63) | (3 << 40));
    assert_eq!((clone.ip.dscp, orig.ip.dscp), (0, 7));
    assert_eq!(cmeta.instance_type, InstanceType::IngressClone);
    assert_eq!(ometa.instance_type, InstanceType::Normal);
    assert_eq!((sw.stats().cloned, sw.stats().injected), (1, 1));
    // A session without a port clones nothing.
    sw.cpu_write(
        at(0),
        vec![Write::CloneSession {
            session: 5,
            port: None,
        }],
    );
    run_until(&mut sw, at(100), &mut out);
    out.clear();
    sw.ingress(at(100), 0, udp(1, 1, 1), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(sw.stats().clone_misses, 1);
    sw.assert_no_violations();
}

#[test]
fn i2e_clone_without_keep_original_is_flagged() {
    let pipe = Pipeline::new("clone");
    let p = prog(Box::new(|_, _, sm, _| {
        sm.clone_to(CloneType::I2E, 5);
        sm.egress_spec = 1;
    }));
    let (mut sw, _) = switch_with(
        pipe,
        p,
        vec![Write::CloneSession {
            session: 5,
            port: Some(3),
        }],
        vec![],
    );
    sw.ingress(at(0), 0, udp(1, 1, 1), &mut Vec::new());
    assert_eq!(sw.violations().0[0].kind, ViolationKind::OriginalNotKept);
}

#[test]
fn e2e_clone_copies_the_packet_as_it_leaves_and_passes_egress_again() {
    let pipe = Pipeline::new("e2e");
    let mut p = prog(Box::new(|_, _, sm, _| sm.egress_spec = 1));
    p.egress = Box::new(|_, pkt, sm, _| {
        if sm.instance_type == InstanceType::Normal {
            pkt.ip.ecn = pisanet_net::Ecn::Ce;
            sm.clone_to(CloneType::E2E, 1);
        } else {
            pkt.ip.dscp = 9; // the copy's own egress pass
        }
    });
    let (mut sw, _) = switch_with(
        pipe,
        p,
        vec![Write::CloneSession {
            session: 1,
            port: Some(6),
        }],
        vec![],
    );
    let mut out = Vec::new();
    sw.ingress(at(0), 0, udp(1, 1, 1), &mut out);
    let (port, pkt, meta) = enqueued(&out[0]);
    let mut eout = Vec::new();
    sw.egress(at(1), port, pkt.clone(), deq_of(meta, at(0)), &mut eout);
    assert_eq!(eout.len(), 2);
    let (cport, copy, cmeta) = enqueued(&eout[0]);
    assert_eq!(cport, 6);
    assert!(copy.switch_made);
    assert_eq!(copy.ip.ecn, pisanet_net::Ecn::Ce);
    assert_eq!(cmeta.instance_type, InstanceType::EgressClone);
    assert!(matches!(&eout[1], Emit::Transmit(p) if !p.switch_made));
    // The cost is visible: the copy takes a queue slot and another egress pass.
    let mut eout2 = Vec::new();
    sw.egress(at(2), cport, copy.clone(), deq_of(cmeta, at(1)), &mut eout2);
    assert!(matches!(&eout2[0], Emit::Transmit(p) if p.ip.dscp == 9));
    assert_eq!(sw.stats().egress_passes, 2);
    assert_eq!(sw.stats().injected, 1);
    sw.assert_no_violations();
}

/// Logs the metadata of each packet-in.
struct MetaLog(Arc<Mutex<Vec<(SimTime, u64, u64)>>>, Vec<Write>);

impl ControlAgent for MetaLog {
    fn on_start(&mut self, _: &SwitchInfo, cpu: &mut CpuApi<'_>) {
        for w in self.1.drain(..) {
            cpu.write(w);
        }
    }
    fn on_packet_in(&mut self, pkt: Packet, meta: UserMeta, cpu: &mut CpuApi<'_>) {
        self.0.lock().unwrap().push((cpu.now, pkt.uid, meta[1]));
    }
}

#[test]
fn clone_session_replicas_reach_a_port_the_cpu_and_the_recirculation_port() {
    let pipe = Pipeline::new("replicas");
    let mut p = prog(Box::new(|_, _, sm, meta| {
        if sm.instance_type == InstanceType::Recirculated {
            // The recirculated replica keeps the egress pass's metadata.
            assert_eq!((sm.ingress_port, meta[1]), (RECIRC_PORT, 55));
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
        }
    }));
    p.egress = Box::new(|_, _, sm, meta| {
        if sm.instance_type == InstanceType::Normal && sm.egress_port == 1 {
            meta[1] = 55;
            sm.clone_to(CloneType::E2E, 9);
        }
    });
    let log = Arc::default();
    let start = vec![Write::CloneSessionReplicas {
        session: 9,
        ports: vec![CPU_PORT, RECIRC_PORT, 6],
    }];
    let info = SwitchInfo {
        id: 3,
        n_ports: 8,
        ..Default::default()
    };
    let rng = RngStreams::new(7).stream(StreamKind::Switch, 3);
    let mut sw = Switch::new(
        &info,
        pipe,
        Box::new(p),
        Box::new(MetaLog(Arc::clone(&log), start)),
        rng,
        CP,
        TargetConfig::default(),
    )
    .unwrap();
    assert_eq!(sw.pipeline().clone_session(9), &[CPU_PORT, RECIRC_PORT, 6]);
    let mut out = Vec::new();
    sw.ingress(at(0), 0, udp(1, 1, 1), &mut out);
    let (port, pkt, meta) = enqueued(&out[0]);
    let mut eout = Vec::new();
    sw.egress(at(1), port, pkt.clone(), deq_of(meta, at(0)), &mut eout);
    // The CPU replica is consumed at once, the port replica queued, the
    // original transmitted; the recirculated one is held inside the switch.
    assert_eq!(eout.len(), 3, "{eout:?}");
    assert!(matches!(&eout[0], Emit::Consumed(p) if p.switch_made));
    assert_eq!(enqueued(&eout[1]).0, 6);
    assert!(matches!(&eout[2], Emit::Transmit(p) if !p.switch_made));
    assert_eq!(sw.held_packets(), 1);
    let mut later = Vec::new();
    run_until(&mut sw, at(100), &mut later);
    assert_eq!(later.len(), 1);
    let (rport, _, rmeta) = enqueued(&later[0]);
    assert_eq!(
        (rport, rmeta.instance_type),
        (2, InstanceType::Recirculated)
    );
    let s = sw.stats();
    assert_eq!(
        (s.cloned, s.injected, s.recirculated, s.to_cpu),
        (3, 3, 1, 1)
    );
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].0, log[0].2), (at(1) + CP.to_cpu_latency, 55));
    sw.assert_no_violations();
}

#[test]
fn recirculation_passes_ingress_again_after_its_cost() {
    let pipe = Pipeline::new("recirc");
    let mut p = prog(Box::new(|_, _, sm, meta| {
        if sm.instance_type == InstanceType::Recirculated {
            assert_eq!(sm.ingress_port, RECIRC_PORT);
            assert_eq!(meta[1], 77);
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
        }
    }));
    p.egress = Box::new(|_, _, sm, meta| {
        if sm.egress_port == 1 {
            meta[1] = 77;
            sm.recirculate();
        }
    });
    let (mut sw, _) = switch_with(pipe, p, vec![], vec![]);
    let target = TargetConfig::default();
    let mut out = Vec::new();
    sw.ingress(at(0), 0, udp(1, 1, 1), &mut out);
    sw.ingress(at(0), 0, udp(1, 1, 2), &mut out);
    let mut eout = Vec::new();
    for e in out.drain(..) {
        let (port, pkt, meta) = enqueued(&e);
        sw.egress(at(1), port, pkt.clone(), deq_of(meta, at(0)), &mut eout);
    }
    // Neither leaves: both wait for the recirculation port, one after the other.
    assert!(eout.is_empty());
    let tx = target.recirc_rate.tx_time(1000);
    let first = at(1) + tx + target.pipeline_latency;
    assert_eq!(sw.next_deadline(), Some(first));
    sw.on_timer(first - SimTime(1), &mut out); // early: nothing
    assert!(out.is_empty());
    sw.on_timer(first, &mut out);
    assert_eq!(out.len(), 1);
    let (port, _, meta) = enqueued(&out[0]);
    assert_eq!((port, meta.instance_type), (2, InstanceType::Recirculated));
    assert_eq!(sw.next_deadline(), Some(first + tx));
    sw.on_timer(first + tx, &mut out);
    assert_eq!(out.len(), 2);
    let s = sw.stats();
    assert_eq!(
        (
            s.recirculated,
            s.ingress_passes,
            s.egress_passes,
            s.injected
        ),
        (2, 4, 2, 0)
    );
    sw.assert_no_violations();
}

#[test]
fn resubmission_passes_the_original_again_with_its_metadata() {
    let mut pipe = Pipeline::new("resubmit");
    pipe.keep_original();
    let (mut sw, _) = switch_with(
        pipe,
        prog(Box::new(|_, pkt, sm, meta| {
            if sm.instance_type == InstanceType::Resubmit {
                assert_eq!(pkt.ip.dscp, 0, "the original, not the modified packet");
                sm.egress_spec = meta[0] as PortNo;
            } else {
                pkt.ip.dscp = 5;
                meta[0] = 6;
                sm.resubmit();
                sm.egress_spec = 1; // replaced by the resubmission
            }
        })),
        vec![],
        vec![],
    );
    let mut out = Vec::new();
    sw.ingress(at(0), 0, udp(1, 1, 1), &mut out);
    assert!(out.is_empty());
    let due = sw.next_deadline().unwrap();
    assert_eq!(due, at(0) + TargetConfig::default().pipeline_latency);
    sw.on_timer(due, &mut out);
    let (port, _, meta) = enqueued(&out[0]);
    assert_eq!((port, meta.instance_type), (6, InstanceType::Resubmit));
    assert_eq!((sw.stats().resubmitted, sw.stats().ingress_passes), (1, 2));
    sw.assert_no_violations();
}

#[test]
fn multicast_replicates_to_each_port_of_the_group() {
    let pipe = Pipeline::new("mcast");
    let p = prog(Box::new(|_, pkt, sm, _| sm.mcast_grp = pkt.ip.dst as u16));
    let start = vec![Write::MulticastGroup {
        group: 1,
        replicas: vec![(1, 10), (2, 20), (5, 50)],
    }];
    let (mut sw, _) = switch_with(pipe, p, start, vec![]);
    let mut out = Vec::new();
    sw.ingress(at(0), 0, udp(1, 1, 1), &mut out);
    let got: Vec<(PortNo, bool, u16, InstanceType)> = out
        .iter()
        .map(|e| {
            let (port, pkt, meta) = enqueued(e);
            (port, pkt.switch_made, meta.egress_rid, meta.instance_type)
        })
        .collect();
    use InstanceType::Replication as R;
    assert_eq!(
        got,
        vec![(1, false, 10, R), (2, true, 20, R), (5, true, 50, R)]
    );
    let uids: std::collections::HashSet<u64> = out.iter().map(|e| enqueued(e).1.uid).collect();
    assert_eq!(uids.len(), 3);
    assert_eq!((sw.stats().replicated, sw.stats().injected), (2, 2));
    // An unknown group drops.
    out.clear();
    sw.ingress(at(1), 0, udp(1, 9, 1), &mut out);
    assert!(matches!(
        out[0],
        Emit::Drop {
            reason: DropReason::NoMulticastGroup,
            ..
        }
    ));
}

#[test]
fn packets_and_digests_reach_the_cpu_after_its_latency() {
    let pipe = Pipeline::new("cpu");
    let p = prog(Box::new(|ctx, pkt, sm, _| {
        if pkt.ip.dst == 1 {
            sm.send_to_cpu();
        } else {
            ctx.digest(0, [pkt.ip.dst as u64, 0, 0, 0]);
            sm.egress_spec = 1;
        }
    }));
    let (mut sw, log) = switch_with(pipe, p, vec![], vec![]);
    let mut out = Vec::new();
    sw.ingress(at(3), 0, udp(1, 1, 1), &mut out);
    assert!(matches!(out[0], Emit::Consumed(_)));
    sw.ingress(at(4), 0, udp(1, 2, 1), &mut out);
    assert!(matches!(out[1], Emit::Enqueue { .. }));
    run_until(&mut sw, at(100), &mut out);
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            (at(13), "packet 42".to_string()),
            (at(14), "digest 2".to_string())
        ]
    );
    assert_eq!((sw.stats().to_cpu, sw.stats().digests), (1, 1));
    sw.port_status(at(20), 4, false);
    assert_eq!(log.lock().unwrap()[2], (at(20), "port 4 false".to_string()));
}

fn exact_table(pipe: &mut Pipeline) -> TableId {
    pipe.table(TableSpec {
        name: "dst_exact",
        keys: vec![KeyField {
            name: "hdr.ipv4.dst",
            kind: MatchKind::Exact,
            width: 32,
        }],
        actions: vec!["drop", "set_port"],
        size: 16,
        default_action: ActionCall::bare(ActionId(0)),
        direct_counter: false,
        direct_meter: None,
    })
}

fn forward_by(t: TableId) -> Stage {
    Box::new(move |ctx, pkt, sm, _| {
        let hit = ctx.apply(t, [pkt.ip.dst as u64, 0, 0, 0]);
        if hit.action.action == ActionId(1) {
            sm.egress_spec = hit.action.params[0] as PortNo;
        }
    })
}

fn insert(t: TableId, dst: u64, port: u64) -> Write {
    let entry = TableEntry::new(
        vec![matches::exact(dst)],
        ActionCall::new(ActionId(1), [port, 0, 0]),
    );
    Write::TableEntry {
        table: t,
        update: UpdateType::Insert,
        entry,
    }
}

fn port_of(sw: &mut Switch, now: SimTime, dst: u32) -> Option<PortNo> {
    let mut out = Vec::new();
    sw.on_timer(now, &mut out);
    out.clear();
    sw.ingress(now, 0, udp(1, dst, 1), &mut out);
    match &out[0] {
        Emit::Enqueue { port, .. } => Some(*port),
        Emit::Drop { .. } | Emit::Consumed(_) => None,
        other => panic!("{other:?}"),
    }
}

#[test]
fn writes_land_after_the_latency_one_entry_at_a_time() {
    let mut pipe = Pipeline::new("cp");
    let t = exact_table(&mut pipe);
    let (mut sw, _) = switch_with(pipe, prog(forward_by(t)), vec![insert(t, 100, 7)], vec![]);
    // Start-up writes are in place before traffic.
    assert_eq!(port_of(&mut sw, at(0), 100), Some(7));
    // Two writes issued together at 10 us: the first lands at 60, the second at 65.
    sw.cpu_write(at(10), vec![insert(t, 1, 1), insert(t, 2, 2)]);
    assert_eq!(sw.next_deadline(), Some(at(60)));
    assert_eq!(port_of(&mut sw, at(59), 1), None);
    assert_eq!(port_of(&mut sw, at(60), 1), Some(1));
    // Between them: the first is seen, the second not (no atomicity).
    assert_eq!(port_of(&mut sw, at(62), 2), None);
    assert_eq!(port_of(&mut sw, at(62), 1), Some(1));
    assert_eq!(port_of(&mut sw, at(65), 2), Some(2));
    // A write issued later queues behind the earlier ones if they are still pending.
    sw.cpu_write(at(100), vec![insert(t, 3, 3), insert(t, 4, 4)]);
    sw.cpu_write(at(101), vec![insert(t, 5, 5)]);
    assert_eq!(port_of(&mut sw, at(155), 4), Some(4));
    assert_eq!(port_of(&mut sw, at(159), 5), None);
    assert_eq!(port_of(&mut sw, at(160), 5), Some(5));
    // A failing write is counted, not fatal.
    sw.cpu_write(at(200), vec![insert(t, 5, 6)]);
    port_of(&mut sw, at(300), 5);
    assert_eq!(sw.stats().write_errors, 1);
    assert!(sw
        .stats()
        .last_write_error
        .as_deref()
        .unwrap()
        .contains("exists"));
}

#[test]
fn an_agent_reacts_to_a_packet_in_with_a_write() {
    let mut pipe = Pipeline::new("react");
    let t = exact_table(&mut pipe);
    let mut fwd = forward_by(t);
    let p = prog(Box::new(move |ctx, pkt, sm, meta| {
        fwd(ctx, pkt, sm, meta);
        if sm.is_dropped() {
            sm.send_to_cpu(); // table miss: ask the controller
        }
    }));
    let (mut sw, _) = switch_with(pipe, p, vec![], vec![insert(t, 8, 3)]);
    let mut out = Vec::new();
    sw.ingress(at(0), 0, udp(1, 8, 1), &mut out);
    assert!(matches!(out[0], Emit::Consumed(_)));
    // CPU at 10 us, the write lands 50 us later.
    run_until(&mut sw, at(10), &mut out);
    assert_eq!(port_of(&mut sw, at(59), 8), None);
    assert_eq!(port_of(&mut sw, at(60), 8), Some(3));
}

#[test]
fn cannot_start_with_a_bad_write() {
    let mut pipe = Pipeline::new("bad");
    let t = exact_table(&mut pipe);
    let info = SwitchInfo {
        n_ports: 2,
        ..Default::default()
    };
    let agent = Recorder {
        start: vec![insert(t, 1, 1), insert(t, 1, 2)],
        react: vec![],
        log: Arc::default(),
    };
    let rng = RngStreams::new(1).stream(StreamKind::Switch, 0);
    let r = Switch::new(
        &info,
        pipe,
        Box::new(prog(forward_by(t))),
        Box::new(agent),
        rng,
        CP,
        TargetConfig::default(),
    );
    assert!(r.err().unwrap().contains("start-up write"));
}

#[test]
fn packet_generator_injects_periodic_packets() {
    let mut pipe = Pipeline::new("pktgen");
    pipe.packet_generator(PktGenSpec {
        app: 2,
        period_ps: at(10).ps(),
        start_ps: at(5).ps(),
    });
    let mut p = prog(Box::new(|_, _, sm, _| {
        assert_eq!(sm.ingress_port, PKTGEN_PORT);
        sm.egress_spec = 1;
    }));
    p.generate = Some(Box::new(|now, app| {
        assert_eq!(app, 2);
        let mut pkt = udp(0, 0, 0);
        pkt.sent_at = now;
        Some(pkt)
    }));
    let (mut sw, _) = switch_with(pipe, p, vec![], vec![]);
    let mut out = Vec::new();
    run_until(&mut sw, at(40), &mut out);
    let times: Vec<SimTime> = out.iter().map(|e| enqueued(e).1.sent_at).collect();
    assert_eq!(times, vec![at(5), at(15), at(25), at(35)]);
    assert!(out.iter().all(|e| enqueued(e).1.switch_made));
    assert_eq!((sw.stats().generated, sw.stats().injected), (4, 4));
    assert_eq!(sw.next_deadline(), Some(at(45)));
}

#[test]
fn meters_counters_and_estimators_through_the_pipeline() {
    let mut pipe = Pipeline::new("externs");
    let m = pipe.meter(MeterSpec {
        name: "port_meter",
        kind: MeterKind::TrTcm,
        unit: MeterUnit::Bytes,
        size: 4,
    });
    let c = pipe.counter(CounterSpec {
        name: "port_count",
        kind: CounterKind::PacketsAndBytes,
        size: 4,
    });
    let e = pipe.estimator(EstimatorSpec {
        name: "tx_util",
        ports: 8,
        tau_ps: at(100).ps(),
    });
    let t = pipe.table(TableSpec {
        name: "class_meter",
        keys: vec![KeyField {
            name: "hdr.ipv4.dscp",
            kind: MatchKind::Exact,
            width: 6,
        }],
        actions: vec!["nop"],
        size: 4,
        default_action: ActionCall::bare(ActionId(0)),
        direct_counter: true,
        direct_meter: Some((MeterKind::SrTcm, MeterUnit::Packets)),
    });
    let colours = Arc::new(Mutex::new(Vec::new()));
    let c2 = colours.clone();
    let mut p = prog(Box::new(move |ctx, pkt, sm, _| {
        let indexed = ctx.execute_meter(m, 1, sm.packet_length);
        let hit = ctx.apply(t, [pkt.ip.dscp as u64, 0, 0, 0]);
        let direct = ctx.read_direct_meter(t, &hit, sm.packet_length);
        ctx.count(c, 1, sm.packet_length);
        c2.lock().unwrap().push((indexed, direct));
        sm.egress_spec = 1;
    }));
    p.egress = Box::new(move |ctx, _, sm, _| {
        ctx.update_estimator(e, sm.egress_port, sm.packet_length);
    });
    let mut entry = TableEntry::new(vec![matches::exact(0)], ActionCall::bare(ActionId(0)));
    entry.meter = Some(MeterConfig::SrTcm {
        cir: 1,
        cbs: 1,
        ebs: 1,
    });
    let start = vec![
        Write::Meter {
            meter: m,
            index: 1,
            config: MeterConfig::TrTcm {
                cir: 1,
                cbs: 1500,
                pir: 1,
                pbs: 2000,
            },
        },
        Write::TableEntry {
            table: t,
            update: UpdateType::Insert,
            entry,
        },
    ];
    let (mut sw, _) = switch_with(pipe, p, start, vec![]);
    let mut out = Vec::new();
    for i in 0..3 {
        sw.ingress(at(i), 0, udp(1, 1, 1), &mut out);
    }
    use Color::*;
    assert_eq!(
        *colours.lock().unwrap(),
        vec![(Green, Green), (Yellow, Yellow), (Red, Red)]
    );
    let counted = sw.pipeline().read_counter(c, 1);
    assert_eq!((counted.packets, counted.bytes), (3, 3000));
    assert_eq!(sw.pipeline().read_direct_counter(t, 0).packets, 3);
    for (i, e) in out.drain(..).enumerate() {
        let (port, pkt, meta) = enqueued(&e);
        sw.egress(
            at(10 + i as u64),
            port,
            pkt.clone(),
            deq_of(meta, at(0)),
            &mut Vec::new(),
        );
    }
    // U after 3 packets 1 us apart, tau 100 us: ((1000 * 0.99) + 1000) * 0.99 + 1000.
    let want = (1000.0 * 0.99 + 1000.0) * 0.99 + 1000.0;
    let got = sw.pipeline().read_estimator(e, 1, at(12)) as f64;
    assert!((got - want).abs() < 2.0, "{got} vs {want}");
    sw.assert_no_violations();
}

#[test]
fn action_selector_spreads_five_tuples_evenly() {
    let mut pipe = Pipeline::new("selector");
    let sel = pipe.selector(SelectorSpec {
        name: "ecmp_group",
        algo: HashAlgo::Crc16,
        actions: vec!["set_nhop"],
        max_groups: 4,
        max_members_per_group: 8,
    });
    let h = pipe.hash(HashSpec {
        name: "five_tuple",
        algo: HashAlgo::Crc16,
        fields: vec![
            ("src", 32),
            ("dst", 32),
            ("proto", 8),
            ("sport", 16),
            ("dport", 16),
        ],
    });
    let p = prog(Box::new(move |ctx, pkt, sm, _| {
        let (s, d, pr, sp, dp) = pkt.five_tuple();
        let hash = ctx.hash(h, &HashInput::new().u32(s).u32(d).u8(pr).u16(sp).u16(dp));
        sm.egress_spec = ctx.select(sel, 0, hash).unwrap().params[0] as PortNo;
    }));
    let members = (2..6)
        .map(|p| ActionCall::new(ActionId(0), [p, 0, 0]))
        .collect();
    let (mut sw, _) = switch_with(
        pipe,
        p,
        vec![Write::SelectorGroup {
            selector: sel,
            group: 0,
            members,
        }],
        vec![],
    );
    let mut counts = [0u32; 8];
    let mut out = Vec::new();
    let n = 20_000u32;
    for i in 0..n {
        out.clear();
        let src = 0x0A00_0000 | (i % 200);
        let dst = 0x0A01_0000 | (i / 200);
        sw.ingress(at(0), 0, udp(src, dst, 10_000 + (i % 7) as u16), &mut out);
        counts[enqueued(&out[0]).0 as usize] += 1;
    }
    let expected = n as f64 / 4.0;
    let chi2: f64 = counts[2..6]
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum();
    // 3 degrees of freedom: p = 0.001 at 16.27.
    assert!(chi2 < 16.27, "chi-square {chi2}, counts {counts:?}");
    assert_eq!(counts[2..6].iter().sum::<u32>(), n);
    sw.assert_no_violations();
}

#[test]
fn hash_input_must_match_its_declaration() {
    let mut pipe = Pipeline::new("hash");
    let h = pipe.hash(HashSpec {
        name: "h",
        algo: HashAlgo::Crc32,
        fields: vec![("a", 32)],
    });
    let (mut sw, _) = switch_with(
        pipe,
        prog(Box::new(move |ctx, _, sm, _| {
            ctx.hash(h, &HashInput::new().u16(1));
            sm.egress_spec = 1;
        })),
        vec![],
        vec![],
    );
    sw.ingress(at(0), 0, udp(1, 1, 1), &mut Vec::new());
    assert_eq!(sw.violations().0[0].kind, ViolationKind::HashInputMismatch);
}

#[test]
fn default_is_drop_and_bad_ports_drop() {
    let (mut sw, _) = switch_with(
        Pipeline::new("nothing"),
        prog(Box::new(|_, pkt, sm, _| {
            if pkt.ip.dst == 1 {
                sm.egress_spec = 100; // beyond the 8 ports
            }
        })),
        vec![],
        vec![],
    );
    let mut out = Vec::new();
    sw.ingress(at(0), 0, udp(1, 0, 1), &mut out);
    sw.ingress(at(0), 0, udp(1, 1, 1), &mut out);
    assert!(matches!(
        out[0],
        Emit::Drop {
            reason: DropReason::Program,
            ..
        }
    ));
    assert!(matches!(
        out[1],
        Emit::Drop {
            reason: DropReason::InvalidPort,
            ..
        }
    ));
}

#[test]
fn resource_report_lists_declared_objects() {
    let mut pipe = Pipeline::new("report");
    exact_table(&mut pipe);
    register(&mut pipe, "flow_time", 48, 1024);
    pipe.meter(MeterSpec {
        name: "m",
        kind: MeterKind::SrTcm,
        unit: MeterUnit::Packets,
        size: 2,
    });
    pipe.stages(3, 1);
    let r = pipe.resources();
    assert_eq!((r.ingress_stages, r.egress_stages), (3, 1));
    assert_eq!(r.tables[0].key_bits, 32);
    assert_eq!(r.tables[0].default_action, "drop");
    assert_eq!(r.register_bits, 48 * 1024);
    let text = r.to_string();
    for needle in [
        "dst_exact",
        "flow_time",
        "49152 bits",
        "ingress 3, egress 1",
        "SrTcm in Packets x 2",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

#[test]
fn terminate_consumes_in_ingress_and_in_egress() {
    let pipe = Pipeline::new("terminate");
    // Ingress: UDP port 1 terminates, others go to port 2 (even after a
    // multicast request: termination wins).
    let mut p = prog(Box::new(|_, pkt, sm, _| {
        if pkt.five_tuple().3 == 1 {
            sm.mcast_grp = 1;
            sm.terminate();
        } else {
            sm.egress_spec = 2;
        }
    }));
    // Egress: UDP port 3 is terminated as it leaves the queue.
    p.egress = Box::new(|_, pkt, sm, _| {
        if pkt.five_tuple().3 == 3 {
            sm.terminate();
        }
    });
    let start = vec![Write::MulticastGroup {
        group: 1,
        replicas: vec![(1, 0), (2, 0)],
    }];
    let (mut sw, _) = switch_with(pipe, p, start, vec![]);
    let mut out = Vec::new();
    sw.ingress(at(0), 0, udp(1, 1, 1), &mut out);
    assert!(matches!(&out[..], [Emit::Consumed(p)] if p.uid == 42));
    out.clear();
    sw.ingress(at(0), 0, udp(1, 1, 3), &mut out);
    let (port, pkt, meta) = enqueued(&out[0]);
    let pkt = pkt.clone();
    out.clear();
    sw.egress(at(1), port, pkt.clone(), deq_of(meta, at(0)), &mut out);
    assert!(matches!(&out[..], [Emit::Consumed(_)]));
    out.clear();
    sw.egress(at(1), port, udp(1, 1, 4), deq_of(meta, at(0)), &mut out);
    assert!(matches!(&out[..], [Emit::Transmit(_)]));
    assert_eq!(sw.stats().terminated, 2);
    assert_eq!(sw.stats().injected, 0);
    sw.assert_no_violations();
}

#[test]
fn programs_read_their_switch_clock_and_queueing_stays_a_duration() {
    type Seen = Arc<Mutex<Vec<(SimTime, SimTime, SimTime)>>>;
    let seen: Seen = Arc::default();
    let (s1, s2) = (seen.clone(), seen.clone());
    let p = Prog {
        ingress: Box::new(move |ctx, _, sm, _| {
            s1.lock()
                .unwrap()
                .push((sm.ingress_global_timestamp, ctx.now(), SimTime::ZERO));
            sm.egress_spec = 1;
        }),
        egress: Box::new(move |ctx, _, sm, _| {
            s2.lock()
                .unwrap()
                .push((sm.egress_global_timestamp, ctx.now(), sm.deq_timedelta));
        }),
        generate: None,
    };
    let (mut sw, _) = switch_with(Pipeline::new("clock"), p, vec![], vec![]);
    sw.set_clock(Clock {
        offset_ps: 2_000_000_000, // 2 ms
        drift_ppb: 1_000_000,     // +1000 ppm
        resolution_ps: 1_000_000, // 1 us (bmv2)
    });
    let mut out = Vec::new();
    sw.ingress(SimTime::from_us(1000), 0, Packet::default(), &mut out);
    let (port, pkt, meta) = match out.pop() {
        Some(Emit::Enqueue { port, pkt, meta }) => (port, pkt, meta),
        e => panic!("{e:?}"),
    };
    let deq = DeqInfo {
        enq_timestamp: SimTime::from_us(1000),
        deq_timedelta: SimTime::from_us(500),
        meta,
        ..Default::default()
    };
    sw.egress(SimTime::from_us(1500), port, pkt, deq, &mut out);
    let seen = seen.lock().unwrap();
    // 1 ms true: 2 ms + 1 ms x 1.001 = 3.001 ms, floored to the us.
    assert_eq!(seen[0].0, SimTime::from_us(3001));
    assert_eq!(seen[0].1, SimTime::from_us(3001));
    // 1.5 ms true: 2 ms + 1.5015 ms = 3501.5 us, floored.
    assert_eq!(seen[1].0, SimTime::from_us(3501));
    assert_eq!(seen[1].1, SimTime::from_us(3501));
    // The queueing time on the switch's clock: 500 us.
    assert_eq!(seen[1].2, SimTime::from_us(500));
}
