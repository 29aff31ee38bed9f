//! A PISA switch: a program ([`DataPlane`] and [`ControlAgent`]) on the v1model
//! pipeline, driven by the simulator's event loop.
//!
//! ```text
//!            ingress(now, port, pkt)                egress(now, port, pkt, deq)
//!  wire ──► parser ─► ingress ─► PRE ─► Emit::Enqueue ──► [ loop's TM queues ] ──► egress ─► Emit::Transmit ──► wire
//!                        │        │  clone I2E, multicast copies      ▲             │  clone E2E ──► Emit::Enqueue
//!                        │        └─ resubmit ──┐                     │             └─ recirculate ─┐
//!                        ▼                       ▼                    │                             ▼
//!                  CPU agent ◄── to_cpu_latency   pending work (time-ordered): writes, CPU deliveries,
//!                        └── writes (write_latency, one at a time) ──► re-entries, packet generator ticks
//! ```
//!
//! Owns: the pipeline's state, the packet replication engine's decisions,
//! recirculation and resubmission costs, the CPU agent's latencies, and
//! conservation accounting for packets it creates. Leaves to the loop: the
//! egress queues (the traffic manager), links and time. The loop calls
//! [`Switch::next_deadline`] after every call and [`Switch::on_timer`] when
//! that time comes; early or stale calls are harmless.
//!
//! End-of-pass order follows bmv2 `simple_switch`: after ingress, the I2E
//! clone, then resubmission (which replaces forwarding), then termination
//! (`terminate`, pisanet's accounting name for a probe's final drop), then
//! multicast, then drop or unicast; after egress, the E2E clone, then
//! termination, drop, recirculation (which replaces transmission) or
//! transmission.

use crate::clock::Clock;
use crate::control::{ControlAgent, ControlPlaneConfig, CpuApi};
use crate::form::{FormPass, IngressForm, LpmSelect};
use crate::info::{SwitchInfo, TargetConfig};
use crate::meta::{
    CloneType, Gress, InstanceType, StandardMetadata, UserMeta, CPU_PORT, DROP_PORT, PKTGEN_PORT,
    RECIRC_PORT,
};
use crate::pipeline::{Ctx, Digest, Pipeline, Violation, ViolationKind, Write};
use pisanet_engine::{SimRng, SimTime};
use pisanet_net::{Packet, PortNo};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// The data-plane half of a scheme: a P4 program's parser, ingress and egress.
/// The deparser is implicit: the typed headers of [`Packet`] are emitted as
/// they are at the end of the pass.
pub trait DataPlane: Send {
    /// The parser: return `false` to reject (the packet is dropped).
    fn parse(&mut self, _pkt: &Packet, _meta: &mut UserMeta) -> bool {
        true
    }
    /// Whether [`Self::parse`] may reject: a program whose parser accepts
    /// everything (the default `parse`) may return false, and the switch
    /// skips the call.
    fn has_parser(&self) -> bool {
        true
    }
    /// The ingress control: decides the egress port, a drop, a multicast
    /// group, a clone, a resubmission or a send to the CPU.
    fn ingress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        meta: &mut UserMeta,
    );
    /// The egress control: sees the queue state; may modify, clone (E2E),
    /// recirculate or drop, but not change the port.
    fn egress(
        &mut self,
        _ctx: &mut Ctx<'_>,
        _pkt: &mut Packet,
        _sm: &mut StandardMetadata,
        _meta: &mut UserMeta,
    ) {
    }
    /// Whether this program has an egress control. A program whose egress is
    /// empty returns false, and the traffic manager hands its packets
    /// straight to the transmitter: an empty v1model egress control is a
    /// no-op, so this changes nothing but the cost of the pass.
    fn has_egress(&self) -> bool {
        true
    }
    /// The program's ingress control in one of the forms the switch runs
    /// itself ([`IngressForm`]), if it has one: the switch checks it against
    /// the declarations at load and then runs it instead of calling
    /// [`Self::ingress`], which must compute the same thing (the program's
    /// tests compare the two). `None` (the default): every pass calls
    /// `ingress`.
    fn ingress_form(&self) -> Option<IngressForm> {
        None
    }
    /// The packet generator application `app` fires: the packet to inject
    /// into ingress (on [`PKTGEN_PORT`]), if any.
    fn generate(&mut self, _now: SimTime, _app: u8) -> Option<Packet> {
        None
    }
}

/// What travels with a packet through the traffic manager to egress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueMeta {
    /// User metadata from ingress.
    pub user: UserMeta,
    pub ingress_port: PortNo,
    pub instance_type: InstanceType,
    pub egress_rid: u16,
}

/// Queue state the traffic manager reports when a packet leaves its queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeqInfo {
    pub enq_timestamp: SimTime,
    /// Packets in the queue when this one was enqueued.
    pub enq_qdepth: u32,
    /// Packets in the queue when this one was dequeued.
    pub deq_qdepth: u32,
    /// Time spent in the queue.
    pub deq_timedelta: SimTime,
    /// What ingress handed to the traffic manager with the packet.
    pub meta: QueueMeta,
}

/// Why a switch dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The program dropped it (`mark_to_drop`, or no forwarding decision).
    Program,
    ParserReject,
    /// Multicast to an empty or unknown group.
    NoMulticastGroup,
    /// `egress_spec` or a clone session named a port the switch lacks.
    InvalidPort,
}

/// What a call hands back to the loop.
#[derive(Debug)]
pub enum Emit {
    /// To the traffic manager: queue at `port` with priority `pkt.prio`.
    Enqueue {
        port: PortNo,
        pkt: Packet,
        meta: QueueMeta,
    },
    /// Only from egress: the packet leaves on that port's wire now.
    Transmit(Packet),
    Drop {
        pkt: Packet,
        reason: DropReason,
    },
    /// Absorbed by the switch (sent to its CPU, probe terminated).
    Consumed(Packet),
}

/// Counters of a switch. `injected` counts every packet the switch created
/// (clones, multicast copies beyond one, generated, packet-out), each marked
/// `switch_made`: the loop checks injected = delivered + consumed + dropped +
/// in flight.
// NOTE: `repr(C)`: the two counters every ingress pass reads come first
// (the switch keeps them beside its other per-pass fields).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SwitchStats {
    pub ingress_passes: u64,
    /// PISA rule violations by the program (must be zero for a valid run).
    pub violations: u64,
    pub egress_passes: u64,
    pub resubmitted: u64,
    pub recirculated: u64,
    pub cloned: u64,
    /// Clone requests for a session that has no port.
    pub clone_misses: u64,
    /// Multicast copies beyond the first.
    pub replicated: u64,
    pub generated: u64,
    pub packet_outs: u64,
    pub to_cpu: u64,
    pub digests: u64,
    /// Packets the program ended with `terminate` (reported as consumed).
    pub terminated: u64,
    pub injected: u64,
    pub writes_applied: u64,
    /// Writes the agent issued after start-up (some may still be pending
    /// when the run ends).
    pub writes_issued: u64,
    /// Time those writes waited behind earlier ones beyond the write latency
    /// (the CPU's write backlog): sum and largest, picoseconds.
    pub write_wait_ps_sum: u64,
    pub write_wait_ps_max: u64,
    pub write_errors: u64,
    pub last_write_error: Option<String>,
}

enum Work {
    Write(Write),
    ToCpu(Packet, UserMeta),
    Digest(Digest),
    Reenter {
        pkt: Packet,
        meta: UserMeta,
        instance: InstanceType,
        port: PortNo,
    },
    PktGen {
        app_index: usize,
    },
    PacketOut(Packet),
    Wake,
}

struct Pending {
    at: SimTime,
    seq: u64,
    work: Work,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    // Reversed: earliest (then first scheduled) on top of the max-heap.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at
            .cmp(&self.at)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// One switch: its program, state, CPU agent and pending work.
// NOTE: `repr(C)`: what an ingress pass reads comes first (program, the
// ingress form and its memo, flags, counters: one cache line; then the
// pipeline, whose own per-pass fields lead), so a pass touches few cache
// lines of a switch that has gone cold since its last packet.
#[repr(C, align(64))]
pub struct Switch {
    dp: Box<dyn DataPlane>,
    /// The program's ingress form and its memo (see [`FormPass`]), used
    /// when `form_on`: a form pass reads this first line of the switch and
    /// one memo slot.
    form: FormPass,
    /// Ingress passes run `form` ([`DataPlane::ingress_form`], checked at
    /// load; only when `plain_ingress`).
    form_on: bool,
    /// `form_on` and no egress control ([`DataPlane::has_egress`]): see
    /// [`Self::form_unicast`].
    form_only: bool,
    /// No parser, an ideal clock and no copy of the original packet: an
    /// ingress pass needs none of the three checks (one flag, read first).
    plain_ingress: bool,
    /// `dp.has_parser()`, asked once.
    parses: bool,
    /// `clock.is_ideal()`, asked once.
    clock_ideal: bool,
    n_ports: u16,
    /// Passes so far (ingress and egress each count one; the first is 1);
    /// `SwitchStats::ingress_passes` is this less the egress passes.
    pass: u64,
    seq: u64,
    /// `dp.ingress_form()`, checked at load; `None` when turned off
    /// ([`Self::use_ingress_form`]).
    declared_form: Option<LpmSelect>,
    pipe: Pipeline,
    stats: SwitchStats,
    id: u32,
    agent: Box<dyn ControlAgent>,
    rng: SimRng,
    cp: ControlPlaneConfig,
    target: TargetConfig,
    /// The switch's own clock (ideal unless `[clock]` says otherwise).
    clock: Clock,
    pending: BinaryHeap<Pending>,
    made: u64,
    /// When the last scheduled control-plane write takes effect.
    last_write_at: Option<SimTime>,
    /// When the recirculation port is free again.
    recirc_free_at: SimTime,
    scratch_writes: Vec<Write>,
    scratch_outs: Vec<Packet>,
}

impl Switch {
    /// Builds a switch and runs its agent's start-up installation (applied at
    /// once: time zero, before traffic). Fails if a start-up write fails.
    pub fn new(
        info: &SwitchInfo,
        pipe: Pipeline,
        dp: Box<dyn DataPlane>,
        agent: Box<dyn ControlAgent>,
        rng: SimRng,
        cp: ControlPlaneConfig,
        target: TargetConfig,
    ) -> Result<Switch, String> {
        let mut sw = Switch {
            id: info.id,
            n_ports: info.n_ports,
            dp,
            agent,
            pipe,
            rng,
            cp,
            target,
            clock: Clock::IDEAL,
            clock_ideal: true,
            pending: BinaryHeap::new(),
            seq: 0,
            pass: 0,
            made: 0,
            last_write_at: None,
            recirc_free_at: SimTime::ZERO,
            stats: SwitchStats::default(),
            parses: true,
            plain_ingress: false,
            form: FormPass::new(&LpmSelect::NONE),
            form_on: false,
            form_only: false,
            declared_form: None,
            scratch_writes: Vec::new(),
            scratch_outs: Vec::new(),
        };
        sw.parses = sw.dp.has_parser();
        if let Some(form) = sw.dp.ingress_form() {
            form.check(&sw.pipe)
                .map_err(|e| format!("switch {} ({}): ingress form: {e}", sw.id, sw.pipe.name()))?;
            let IngressForm::LpmSelect(f) = form;
            sw.declared_form = Some(f);
            sw.form = FormPass::new(&f);
        }
        sw.update_plain_ingress();
        let mut writes = Vec::new();
        let mut outs = Vec::new();
        let mut wake = None;
        {
            let mut api = CpuApi::new(SimTime::ZERO, &sw.pipe, &mut writes, &mut outs, &mut wake);
            sw.agent.on_start(info, &mut api);
        }
        for w in &writes {
            sw.form.forget();
            sw.pipe.apply(SimTime::ZERO, w).map_err(|e| {
                format!("switch {} ({}): start-up write: {e}", sw.id, sw.pipe.name())
            })?;
            sw.stats.writes_applied += 1;
        }
        for pkt in outs {
            sw.schedule(SimTime::ZERO, Work::PacketOut(pkt));
        }
        if let Some(t) = wake {
            sw.schedule(t, Work::Wake);
        }
        for i in 0..sw.pipe.pktgen.len() {
            let at = SimTime(sw.pipe.pktgen[i].start_ps);
            sw.schedule(at, Work::PktGen { app_index: i });
        }
        Ok(sw)
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    /// The switch's ports: a unicast decision ([`Self::ingress_unicast`],
    /// [`Emit::Enqueue`]) names one below this.
    pub fn n_ports(&self) -> u16 {
        self.n_ports
    }

    /// Gives the switch its own clock: every timestamp its program reads
    /// from then on is this clock's reading ([`Clock`]).
    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
        self.clock_ideal = clock.is_ideal();
        self.update_plain_ingress();
    }

    fn update_plain_ingress(&mut self) {
        self.plain_ingress = !self.parses && self.clock_ideal && !self.pipe.keep_original;
        self.form_on = self.declared_form.is_some() && self.plain_ingress;
        self.form_only = self.form_on && !self.dp.has_egress();
    }

    /// Whether ingress passes run the program's [`IngressForm`] (it has one,
    /// and the passes are plain: no parser, an ideal clock, no copy of the
    /// original packet).
    pub fn runs_ingress_form(&self) -> bool {
        self.form_on
    }

    /// Runs every ingress pass through the program's `ingress` (`false`),
    /// or through its [`IngressForm`] where it has one (`true`, the
    /// default): for tests and benchmarks that compare the two.
    pub fn use_ingress_form(&mut self, on: bool) {
        let declared = self.dp.ingress_form().map(|IngressForm::LpmSelect(f)| f);
        self.declared_form = if on { declared } else { None };
        if let Some(f) = &self.declared_form {
            self.form = FormPass::new(f);
        }
        self.update_plain_ingress();
    }

    /// The switch's clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The switch's counters (a copy: `ingress_passes` is derived).
    pub fn stats(&self) -> SwitchStats {
        SwitchStats {
            // Every pass counts one in `pass`, an egress pass also one in
            // `egress_passes`: an ingress pass writes only `pass`, in the
            // switch's first cache line (docs/performance.md, session 9).
            ingress_passes: self.pass - self.stats.egress_passes,
            ..self.stats.clone()
        }
    }

    /// The program's state (for the control plane's reads, tests, reports).
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipe
    }

    /// Violations of the PISA rules so far: the first few in full, and the count.
    pub fn violations(&self) -> (&[Violation], u64) {
        self.pipe.violations()
    }

    /// Panics if the program broke a PISA rule (for tests).
    pub fn assert_no_violations(&self) {
        let (v, n) = self.pipe.violations();
        assert!(
            n == 0,
            "switch {} ({}): {n} violations, first: {v:?}",
            self.id,
            self.pipe.name()
        );
    }

    /// The earliest pending work (control-plane writes, CPU deliveries,
    /// re-entries, generator ticks).
    /// How much work the switch has scheduled so far (a count): when it has
    /// not changed across a call, neither has [`Self::next_deadline`] moved
    /// earlier.
    #[inline]
    pub fn scheduled(&self) -> u64 {
        self.seq
    }

    pub fn next_deadline(&self) -> Option<SimTime> {
        self.pending.peek().map(|p| p.at)
    }

    /// A packet arrives on `in_port`.
    pub fn ingress(&mut self, now: SimTime, in_port: PortNo, pkt: Packet, out: &mut Vec<Emit>) {
        self.run_ingress_to(now, in_port, pkt, InstanceType::Normal, [0; 2], out);
    }

    /// [`Self::ingress`] on a packet the caller keeps: a plain unicast
    /// decision comes back as its egress port and what travels with the
    /// packet to the traffic manager, and `pkt` (as ingress left it) stays
    /// with the caller to queue. Otherwise (`None`) the pass took the packet
    /// (`pkt` is left a default) and put what it made or decided in `out`,
    /// as `ingress` does. Same semantics; no moves of the packet on the hot
    /// path.
    #[inline]
    pub fn ingress_unicast(
        &mut self,
        now: SimTime,
        in_port: PortNo,
        pkt: &mut Packet,
        out: &mut Vec<Emit>,
    ) -> Option<(PortNo, QueueMeta)> {
        self.run_ingress(now, in_port, pkt, InstanceType::Normal, [0; 2], out)
    }

    /// Whether ingress passes run the program's form and the program has
    /// no egress control: then [`Self::form_unicast`] may stand for
    /// [`Self::ingress_unicast`].
    #[inline]
    pub fn form_only(&self) -> bool {
        self.form_only
    }

    /// [`Self::ingress_unicast`] of a switch with [`Self::form_only`], for
    /// a caller that keeps no queue metadata: the port alone. With no egress
    /// control nothing in the switch reads what travels with a packet to the
    /// traffic manager (for a port of the switch, the form's pass gives the
    /// plain one: the ingress port, user metadata zero, `Normal`, no
    /// replication id); the same pass, counted the same, without building
    /// it (docs/performance.md, "Session 11: switch side").
    #[inline]
    pub fn form_unicast(
        &mut self,
        now: SimTime,
        in_port: PortNo,
        pkt: &mut Packet,
        out: &mut Vec<Emit>,
    ) -> Option<PortNo> {
        match self.form_try(pkt) {
            Ok(port) => Some(port),
            Err(port) => self.form_finish(now, in_port, pkt, port, out),
        }
    }

    /// [`Self::form_unicast`] in two steps: the pass (counted) gives
    /// `Ok(port)` for a port of the switch, which is then all of it (nothing
    /// emitted, nothing scheduled), and otherwise `Err(egress_spec)`, which
    /// [`Self::form_finish`] completes. The caller's common case skips what
    /// only the rest needs (docs/performance.md, "Session 12: switch side").
    #[inline]
    pub fn form_try(&mut self, pkt: &Packet) -> Result<PortNo, PortNo> {
        debug_assert!(self.form_only);
        self.pass += 1;
        let port = self.form_port(pkt);
        if port < self.n_ports {
            Ok(port)
        } else {
            Err(port)
        }
    }

    /// The rest of a [`Self::form_try`] pass that gave `port`, not a port
    /// of the switch (a drop, or the general path's handling of it): what
    /// [`Self::form_unicast`] gives then.
    #[inline]
    pub fn form_finish(
        &mut self,
        now: SimTime,
        in_port: PortNo,
        pkt: &mut Packet,
        port: PortNo,
        out: &mut Vec<Emit>,
    ) -> Option<PortNo> {
        self.form_other(now, in_port, pkt, InstanceType::Normal, [0; 2], port, out)
            .map(|(port, _)| port)
    }

    /// Whether packets leaving this switch's queues need an egress pass
    /// (see [`DataPlane::has_egress`]).
    #[inline]
    pub fn has_egress(&self) -> bool {
        self.dp.has_egress()
    }

    /// The traffic manager hands `pkt` from `port`'s queue to the transmitter.
    ///
    /// NOTE: egress's `ingress_global_timestamp` is `deq.enq_timestamp` (the
    /// model's ingress takes no time, so the two are equal).
    pub fn egress(
        &mut self,
        now: SimTime,
        port: PortNo,
        mut pkt: Packet,
        deq: DeqInfo,
        out: &mut Vec<Emit>,
    ) {
        self.pass += 1;
        self.stats.egress_passes += 1;
        let mut meta = deq.meta.user;
        let mut sm = StandardMetadata::for_ingress(
            deq.meta.ingress_port,
            pkt.size,
            deq.enq_timestamp,
            deq.meta.instance_type,
        );
        sm.egress_spec = port;
        sm.egress_port = port;
        sm.egress_rid = deq.meta.egress_rid;
        sm.egress_global_timestamp = now;
        sm.enq_timestamp = deq.enq_timestamp;
        sm.enq_qdepth = deq.enq_qdepth;
        sm.deq_qdepth = deq.deq_qdepth;
        sm.deq_timedelta = deq.deq_timedelta;
        let mut local = now;
        if !self.clock_ideal {
            // Timestamps are the switch clock's readings; the queueing time
            // is the difference of two of them (a duration).
            local = self.clock.read(now);
            let enq = self.clock.read(deq.enq_timestamp);
            sm.ingress_global_timestamp = enq;
            sm.enq_timestamp = enq;
            sm.egress_global_timestamp = local;
            sm.deq_timedelta = local.saturating_sub(enq);
        }
        {
            let mut ctx = Ctx::new(
                now,
                local,
                self.pass,
                Gress::Egress,
                &mut self.pipe,
                &mut self.rng,
            );
            self.dp.egress(&mut ctx, &mut pkt, &mut sm, &mut meta);
        }
        if sm.resubmit_requested() {
            self.pipe
                .violate(now, ViolationKind::PrimitiveInWrongGress, "resubmit");
        }
        if sm.egress_spec != port && sm.egress_spec != DROP_PORT {
            self.pipe
                .violate(now, ViolationKind::EgressPortChanged, "egress_spec");
        }
        self.end_pass(now);
        if let Some((kind, session)) = sm.clone_request() {
            if kind == CloneType::I2E {
                self.pipe
                    .violate(now, ViolationKind::PrimitiveInWrongGress, "clone I2E");
            } else {
                let copy = pkt.clone();
                self.clone_to_session(
                    now,
                    session,
                    copy,
                    meta,
                    port,
                    InstanceType::EgressClone,
                    out,
                );
            }
        }
        if sm.terminate_requested() {
            self.stats.terminated += 1;
            out.push(Emit::Consumed(pkt));
        } else if sm.egress_spec == DROP_PORT {
            out.push(Emit::Drop {
                pkt,
                reason: DropReason::Program,
            });
        } else if sm.recirculate_requested() {
            self.recirculate(now, pkt, meta);
        } else {
            out.push(Emit::Transmit(pkt));
        }
    }

    /// Packets inside the switch that will re-enter the pipeline
    /// (recirculated or resubmitted), for the loop's conservation check.
    /// Packets sent to the CPU were consumed when they left the data plane.
    /// O(pending work).
    pub fn held_packets(&self) -> u64 {
        self.pending
            .iter()
            .filter(|p| matches!(p.work, Work::Reenter { .. }))
            .count() as u64
    }

    /// Runs the pending work due at or before `now`.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Emit>) {
        while self.pending.peek().is_some_and(|p| p.at <= now) {
            let p = self.pending.pop().expect("peeked");
            match p.work {
                Work::Write(w) => {
                    // The form's memo holds what the entries resolved to.
                    self.form.forget();
                    match self.pipe.apply(now, &w) {
                        Ok(()) => self.stats.writes_applied += 1,
                        Err(e) => {
                            self.stats.write_errors += 1;
                            self.stats.last_write_error = Some(e);
                        }
                    }
                }
                Work::ToCpu(pkt, meta) => {
                    self.call_agent(now, |a, api| a.on_packet_in(pkt, meta, api))
                }
                Work::Digest(d) => self.call_agent(now, |a, api| a.on_digest(d, api)),
                Work::Wake => self.call_agent(now, |a, api| a.on_wake(api)),
                Work::Reenter {
                    pkt,
                    meta,
                    instance,
                    port,
                } => self.run_ingress_to(now, port, pkt, instance, meta, out),
                Work::PktGen { app_index } => {
                    let spec = self.pipe.pktgen[app_index];
                    if let Some(mut pkt) = self.dp.generate(now, spec.app) {
                        self.mark_made(&mut pkt);
                        self.stats.generated += 1;
                        self.run_ingress_to(
                            now,
                            PKTGEN_PORT,
                            pkt,
                            InstanceType::Normal,
                            [0; 2],
                            out,
                        );
                    }
                    self.schedule(p.at + SimTime(spec.period_ps), Work::PktGen { app_index });
                }
                Work::PacketOut(mut pkt) => {
                    self.mark_made(&mut pkt);
                    self.stats.packet_outs += 1;
                    self.run_ingress_to(now, CPU_PORT, pkt, InstanceType::Normal, [0; 2], out);
                }
            }
        }
    }

    /// A link on `port` failed (`up = false`) or recovered: the agent hears of
    /// it; the data plane sees nothing unless the agent writes something.
    pub fn port_status(&mut self, now: SimTime, port: PortNo, up: bool) {
        self.call_agent(now, |a, api| a.on_port_status(port, up, api));
    }

    /// Issues writes as the CPU agent would (operator or test): they take
    /// effect after the write latency, one at a time.
    pub fn cpu_write(&mut self, now: SimTime, writes: Vec<Write>) {
        for w in writes {
            self.schedule_write(now, w);
        }
    }

    // ---- internals ----

    fn schedule(&mut self, at: SimTime, work: Work) {
        self.seq += 1;
        self.pending.push(Pending {
            at,
            seq: self.seq,
            work,
        });
    }

    fn schedule_write(&mut self, now: SimTime, w: Write) {
        let earliest = now + self.cp.write_latency;
        let at = match self.last_write_at {
            Some(last) => earliest.max(last + self.cp.write_interval),
            None => earliest,
        };
        self.last_write_at = Some(at);
        let wait = at.saturating_sub(earliest).ps();
        self.stats.writes_issued += 1;
        self.stats.write_wait_ps_sum = self.stats.write_wait_ps_sum.saturating_add(wait);
        self.stats.write_wait_ps_max = self.stats.write_wait_ps_max.max(wait);
        self.schedule(at, Work::Write(w));
    }

    fn call_agent(&mut self, now: SimTime, f: impl FnOnce(&mut dyn ControlAgent, &mut CpuApi<'_>)) {
        let mut writes = std::mem::take(&mut self.scratch_writes);
        let mut outs = std::mem::take(&mut self.scratch_outs);
        let mut wake = None;
        {
            let mut api = CpuApi::new(now, &self.pipe, &mut writes, &mut outs, &mut wake);
            f(self.agent.as_mut(), &mut api);
        }
        for w in writes.drain(..) {
            self.schedule_write(now, w);
        }
        for pkt in outs.drain(..) {
            self.schedule(now + self.cp.write_latency, Work::PacketOut(pkt));
        }
        if let Some(t) = wake {
            self.schedule(t.max(now), Work::Wake);
        }
        self.scratch_writes = writes;
        self.scratch_outs = outs;
    }

    /// Marks a packet the switch created and counts it as injected.
    fn mark_made(&mut self, pkt: &mut Packet) {
        pkt.uid = (1u64 << 63) | ((self.id as u64) << 40) | self.made;
        pkt.switch_made = true;
        self.made += 1;
        self.stats.injected += 1;
    }

    #[cold]
    fn parser_reject(&mut self, pkt: &mut Packet, out: &mut Vec<Emit>) {
        out.push(Emit::Drop {
            pkt: std::mem::take(pkt),
            reason: DropReason::ParserReject,
        });
    }

    fn end_pass(&mut self, now: SimTime) {
        self.stats.violations = self.pipe.violation_count;
        if !self.pipe.digests.is_empty() {
            let mut ds = std::mem::take(&mut self.pipe.digests);
            for d in ds.drain(..) {
                self.stats.digests += 1;
                self.schedule(now + self.cp.to_cpu_latency, Work::Digest(d));
            }
            self.pipe.digests = ds;
        }
    }

    fn send_to_cpu(&mut self, now: SimTime, pkt: Packet, meta: UserMeta, out: &mut Vec<Emit>) {
        self.stats.to_cpu += 1;
        self.schedule(now + self.cp.to_cpu_latency, Work::ToCpu(pkt.clone(), meta));
        out.push(Emit::Consumed(pkt));
    }

    /// Sends a packet into the recirculation port: it occupies the port for
    /// its serialization time, then enters ingress again (P4TE section 3.6:
    /// recirculation costs pipeline throughput).
    fn recirculate(&mut self, now: SimTime, pkt: Packet, meta: UserMeta) {
        self.stats.recirculated += 1;
        let start = now.max(self.recirc_free_at);
        let done = start + self.target.recirc_rate.tx_time(pkt.size as u64);
        self.recirc_free_at = done;
        let work = Work::Reenter {
            pkt,
            meta,
            instance: InstanceType::Recirculated,
            port: RECIRC_PORT,
        };
        self.schedule(done + self.target.pipeline_latency, work);
    }

    /// One copy of `copy` per replica of clone `session`: to a port's queue,
    /// to the CPU (with `user` as packet-in metadata), or into the
    /// recirculation port.
    #[allow(clippy::too_many_arguments)]
    fn clone_to_session(
        &mut self,
        now: SimTime,
        session: u16,
        copy: Packet,
        user: UserMeta,
        ingress_port: PortNo,
        instance_type: InstanceType,
        out: &mut Vec<Emit>,
    ) {
        let n = self
            .pipe
            .clone_sessions
            .get(session as usize)
            .map_or(0, |r| r.len());
        if n == 0 {
            self.stats.clone_misses += 1;
            return;
        }
        for i in 0..n {
            let port = self.pipe.clone_sessions[session as usize][i];
            let mut copy = copy.clone();
            self.mark_made(&mut copy);
            self.stats.cloned += 1;
            if port == CPU_PORT {
                self.send_to_cpu(now, copy, user, out);
            } else if port == RECIRC_PORT {
                self.recirculate(now, copy, user);
            } else if port < self.n_ports {
                let meta = QueueMeta {
                    user,
                    ingress_port,
                    instance_type,
                    egress_rid: 0,
                };
                out.push(Emit::Enqueue {
                    port,
                    pkt: copy,
                    meta,
                });
            } else {
                out.push(Emit::Drop {
                    pkt: copy,
                    reason: DropReason::InvalidPort,
                });
            }
        }
    }

    /// [`Self::run_ingress`], with the unicast result emitted into `out` too.
    fn run_ingress_to(
        &mut self,
        now: SimTime,
        in_port: PortNo,
        mut pkt: Packet,
        instance: InstanceType,
        user: UserMeta,
        out: &mut Vec<Emit>,
    ) {
        if let Some((port, meta)) = self.run_ingress(now, in_port, &mut pkt, instance, user, out) {
            out.push(Emit::Enqueue { port, pkt, meta });
        }
    }

    /// One ingress pass over `pkt` in place. A plain unicast result is
    /// returned (the common case: the packet stays with the caller);
    /// everything else (copies, drops, CPU, multicast, resubmission) takes
    /// the packet and goes into `out`.
    #[inline(always)]
    fn run_ingress(
        &mut self,
        now: SimTime,
        in_port: PortNo,
        pkt: &mut Packet,
        instance: InstanceType,
        user: UserMeta,
        out: &mut Vec<Emit>,
    ) -> Option<(PortNo, QueueMeta)> {
        self.pass += 1;
        if self.form_on {
            let port = self.form_port(pkt);
            if port < self.n_ports {
                let meta = QueueMeta {
                    user,
                    ingress_port: in_port,
                    instance_type: instance,
                    egress_rid: 0,
                };
                return Some((port, meta));
            }
            return self.form_other(now, in_port, pkt, instance, user, port, out);
        }
        let mut meta = user;
        let plain = self.plain_ingress;
        if !plain && self.parses && !self.dp.parse(pkt, &mut meta) {
            self.parser_reject(pkt, out);
            return None;
        }
        let mut sm = StandardMetadata::for_ingress(in_port, pkt.size, now, instance);
        let mut local = now;
        if !plain && !self.clock_ideal {
            local = self.clock.read(now);
            sm.ingress_global_timestamp = local;
        }
        let original = if !plain && self.pipe.keep_original {
            Some(pkt.clone())
        } else {
            None
        };
        {
            let mut ctx = Ctx::new(
                now,
                local,
                self.pass,
                Gress::Ingress,
                &mut self.pipe,
                &mut self.rng,
            );
            self.dp.ingress(&mut ctx, pkt, &mut sm, &mut meta);
        }
        // The common case, a plain unicast that asked for nothing else: what
        // the general path below would do, without its checks.
        if original.is_none()
            && sm.is_plain_unicast()
            && sm.egress_spec < self.n_ports
            && self.pipe.digests.is_empty()
            && self.pipe.violation_count == self.stats.violations
        {
            let meta = QueueMeta {
                user: meta,
                ingress_port: in_port,
                instance_type: sm.instance_type,
                egress_rid: 0,
            };
            return Some((sm.egress_spec, meta));
        }
        self.finish_ingress(now, in_port, pkt, sm, meta, original, out)
    }

    /// The `egress_spec` of an ingress pass through the program's ingress
    /// form, checked at load: the same lookups, hash and selection as its
    /// `ingress`, straight.
    // NOTE: inline(always): the simulator's arrival handler (`on_arrive`,
    // out of the event loop since session 10) calls it through
    // `form_try`; out of line it cost 13 instructions of register saves a
    // pass (demo 300 flows: 1.4% fewer instructions inlined, the k=8 bench
    // 1.9%; `ecmp_native`, which does not run it, 0.5% more: the larger
    // `on_arrive`'s saves; docs/performance.md, "Session 12: switch side").
    // Inlined into the event loop itself (session 8) it cost every event.
    #[inline(always)]
    fn form_port(&mut self, pkt: &Packet) -> PortNo {
        self.form.run(&mut self.pipe, pkt)
    }

    /// The end of a form's pass that did not give a port of the switch.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn form_other(
        &mut self,
        now: SimTime,
        in_port: PortNo,
        pkt: &mut Packet,
        instance: InstanceType,
        user: UserMeta,
        port: PortNo,
        out: &mut Vec<Emit>,
    ) -> Option<(PortNo, QueueMeta)> {
        let mut sm = StandardMetadata::for_ingress(in_port, pkt.size, now, instance);
        sm.egress_spec = port;
        self.finish_ingress(now, in_port, pkt, sm, user, None, out)
    }

    /// The rest of an ingress pass that did more than a plain unicast (or
    /// broke a rule): rule checks, digests, copies, drops, CPU, multicast,
    /// resubmission.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn finish_ingress(
        &mut self,
        now: SimTime,
        in_port: PortNo,
        pkt: &mut Packet,
        sm: StandardMetadata,
        meta: UserMeta,
        original: Option<Packet>,
        out: &mut Vec<Emit>,
    ) -> Option<(PortNo, QueueMeta)> {
        if sm.recirculate_requested() {
            self.pipe
                .violate(now, ViolationKind::PrimitiveInWrongGress, "recirculate");
        }
        self.end_pass(now);
        let needs_original =
            sm.resubmit_requested() || matches!(sm.clone_request(), Some((CloneType::I2E, _)));
        if needs_original && original.is_none() {
            self.pipe
                .violate(now, ViolationKind::OriginalNotKept, "clone I2E / resubmit");
            self.stats.violations = self.pipe.violation_count;
        }
        // 1. The I2E clone: a copy of the packet as it entered ingress.
        if let Some((kind, session)) = sm.clone_request() {
            if kind == CloneType::E2E {
                self.pipe
                    .violate(now, ViolationKind::PrimitiveInWrongGress, "clone E2E");
                self.stats.violations = self.pipe.violation_count;
            } else {
                let copy = original.clone().unwrap_or_else(|| pkt.clone());
                self.clone_to_session(
                    now,
                    session,
                    copy,
                    meta,
                    in_port,
                    InstanceType::IngressClone,
                    out,
                );
            }
        }
        // 2. Resubmission: the original passes ingress again; this one is not forwarded.
        if sm.resubmit_requested() {
            self.stats.resubmitted += 1;
            let again = original.unwrap_or_else(|| std::mem::take(pkt));
            let work = Work::Reenter {
                pkt: again,
                meta,
                instance: InstanceType::Resubmit,
                port: in_port,
            };
            self.schedule(now + self.target.pipeline_latency, work);
            return None;
        }
        // 3. Termination (a probe's last hop): consumed, not forwarded.
        if sm.terminate_requested() {
            self.stats.terminated += 1;
            out.push(Emit::Consumed(std::mem::take(pkt)));
            return None;
        }
        // 4. Multicast.
        if sm.mcast_grp != 0 {
            self.replicate(sm.mcast_grp, std::mem::take(pkt), meta, in_port, out);
            return None;
        }
        // 5. Unicast, drop or CPU.
        match sm.egress_spec {
            DROP_PORT => out.push(Emit::Drop {
                pkt: std::mem::take(pkt),
                reason: DropReason::Program,
            }),
            CPU_PORT => self.send_to_cpu(now, std::mem::take(pkt), meta, out),
            port if port < self.n_ports => {
                let meta = QueueMeta {
                    user: meta,
                    ingress_port: in_port,
                    instance_type: sm.instance_type,
                    egress_rid: 0,
                };
                return Some((port, meta));
            }
            _ => out.push(Emit::Drop {
                pkt: std::mem::take(pkt),
                reason: DropReason::InvalidPort,
            }),
        }
        None
    }

    /// The packet replication engine: one copy per (port, rid) of the group.
    /// The first replica carries the original packet; the others are
    /// switch-made copies.
    fn replicate(
        &mut self,
        group: u16,
        pkt: Packet,
        user: UserMeta,
        ingress_port: PortNo,
        out: &mut Vec<Emit>,
    ) {
        let n = self
            .pipe
            .mcast_groups
            .get(group as usize)
            .map_or(0, |g| g.len());
        if n == 0 {
            out.push(Emit::Drop {
                pkt,
                reason: DropReason::NoMulticastGroup,
            });
            return;
        }
        let meta_for = |rid| QueueMeta {
            user,
            ingress_port,
            instance_type: InstanceType::Replication,
            egress_rid: rid,
        };
        let first = out.len();
        for i in 1..n {
            let (port, rid) = self.pipe.mcast_groups[group as usize][i];
            let mut copy = pkt.clone();
            self.mark_made(&mut copy);
            self.stats.replicated += 1;
            if port < self.n_ports {
                out.push(Emit::Enqueue {
                    port,
                    pkt: copy,
                    meta: meta_for(rid),
                });
            } else {
                out.push(Emit::Drop {
                    pkt: copy,
                    reason: DropReason::InvalidPort,
                });
            }
        }
        let (port, rid) = self.pipe.mcast_groups[group as usize][0];
        let emit = if port < self.n_ports {
            Emit::Enqueue {
                port,
                pkt,
                meta: meta_for(rid),
            }
        } else {
            Emit::Drop {
                pkt,
                reason: DropReason::InvalidPort,
            }
        };
        // Keep the replicas in group order.
        out.insert(first, emit);
    }
}
