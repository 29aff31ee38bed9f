//! P4QoS (seed 003; Turkovic et al., NetSoft 2021): per-packet deadlines,
//! LLEP and the cooperative AQM of section II.B (Alg. 1), in three
//! variants (section III): `p4qos` marks every packet whose queueing delay
//! exceeds the marking target trgt; `p4qos_codel` runs P4-CoDel with trgt
//! as its target; `p4qos_interval` marks one packet above trgt per
//! interval, the interval auto-tuned as CoDel's. Target updates may be
//! rate-limited (`backoff`: fixed or adaptive, section III). The QoS header,
//! LLEP and deadline accounting are shared with the baselines (qos.rs).
//! Choices and reconstructions: docs/schemes/p4qos.md.
//!
//! ```text
//! egress, data packet with a QoS header (every switch):
//!   qos.rs: d -= t_q + t_p + LL_est                 (section II)
//!   t_t -= LL_est >> shift                           (Alg. 1 line 2)
//!   n_btl += 1 if d_queueing > s                     (lines 3-4)
//!   last switch: trgt_new = (t_t << shift) >> log2ceil(max(n_btl, 1))   (line 7), back-off gate
//!   target[port] = {trgt, id_t}: FIN of id_t resets; own update applies (lines 12-14)
//!   mark (ECN CE, or drop if not ECT) by the variant's rule against trgt
//!   last switch: E2E clone back towards the sender ─► egress turns it into a target update (line 8, 16)
//! ingress, target update (every other switch on the reverse path):
//!   route it on (swapped addresses) and I2E-clone it to the egress of the port it came in on,
//!   where lines 12-14 apply to that port's target and the copy is consumed
//! ```

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use crate::blocks::{ns_u64, Codel, ControlLaw};
use crate::l3::FIVE_TUPLE_FIELDS;
use crate::qos::{
    self, make_ctl, mark_or_drop, session_of, Arrival, QosAgent, QosCore, CTL_TARGET_UPDATE,
    M_SCHEME,
};
use crate::SchemeParams;
use pisanet_engine::{units, SimTime};
use pisanet_net::packet::tcp_flags;
use pisanet_net::Packet;
use pisanet_pisa::{
    CloneType, ControlPlaneConfig, CounterId, CounterKind, CounterSpec, Ctx, DataPlane, HashAlgo,
    HashId, HashSpec, InstanceType, Pipeline, RegisterId, RegisterSpec, StandardMetadata,
    SwitchInfo, UserMeta,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Update back-off (section III: "to limit the number of target update packets").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Backoff {
    /// Every QoS packet at the last switch sends an update (Alg. 1 as printed).
    #[default]
    None,
    /// At most one update per `update_interval_us` per last-switch port
    /// ("fixed P4QoS ... sends a target update only once each N seconds").
    Fixed,
    /// Reconstructed (the paper gives no rule): an update when the packet's
    /// bottleneck count differs from the one the port's last update carried,
    /// and otherwise at most one per update_interval_us >> min(n_btl, 3):
    /// more bottlenecks, more frequent updates.
    Adaptive,
}

/// When Interval P4QoS's interval goes back to its default (section III:
/// "if a packet is marked the interval is reduced, otherwise the interval
/// is reset to its default value"; docs/schemes/p4qos.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
// NOTE: on the type, not the field: the config's key check reads
// `x-applies-when` from the node a `$ref` field resolves to.
#[schemars(extend("x-applies-when" = {"key": "scheme.kind", "in": ["p4qos_interval"]}))]
pub enum IntervalReset {
    /// Any packet at or below trgt resets it: the next mark comes a whole
    /// default interval after the one before.
    #[default]
    BelowTarget,
    /// Only an interval with no packet above trgt resets it: a mark within
    /// one interval length after the idle interval ended shrinks the next
    /// (CoDel's control law, interval / sqrt(count)), as CoDel's count
    /// keeps growing while the queue stays bad.
    QuietInterval,
}

/// P4QoS's parameters (`[scheme.p4qos]`; section II.B and III).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct P4qosParams {
    /// Sensitivity s: a switch where the packet queued longer than this is
    /// a bottleneck (us; Alg. 1 line 3; the paper gives no value: default
    /// 1200 us, one 1500-byte packet at 10 Mb/s).
    #[serde(rename = "sensitivity_us", with = "units::us")]
    #[schemars(with = "f64", range(min = 0, max = 1e6), extend("x-unit" = "us"))]
    pub sensitivity: SimTime,
    /// Target-update back-off: "none" (default), "fixed" or "adaptive".
    pub backoff: Backoff,
    /// The back-off's interval (us; default 100 ms, CoDel's control interval).
    #[serde(rename = "update_interval_us", with = "units::us")]
    #[schemars(
        with = "f64",
        range(min = 0.001, max = 1e8),
        extend("x-unit" = "us"),
        extend("x-applies-when" = {"key": "scheme.p4qos.backoff", "in": ["fixed", "adaptive"]})
    )]
    pub update_interval: SimTime,
    /// Interval P4QoS: what resets its interval to the default,
    /// "below_target" (default: any packet at or below trgt) or
    /// "quiet_interval" (an interval without a packet above trgt).
    pub interval_reset: IntervalReset,
}

impl Default for P4qosParams {
    fn default() -> Self {
        P4qosParams {
            sensitivity: SimTime::from_us(1200),
            backoff: Backoff::None,
            update_interval: SimTime::from_ms(100),
            interval_reset: IntervalReset::BelowTarget,
        }
    }
}

/// Which rule marks against trgt (section III's three versions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Every packet whose queueing delay exceeds trgt.
    Plain,
    /// P4-CoDel with trgt as its target.
    Codel,
    /// One packet above trgt per interval; the interval shrinks as CoDel's
    /// control law while packets are marked and is back at its default
    /// once a packet is at or below trgt.
    Interval,
}

/// User metadata flags of this program (word 0; word 1 holds
/// trgt_new | id << 32).
const M_MAKE_UPDATE: u64 = M_SCHEME;
const M_APPLY_UPDATE: u64 = M_SCHEME << 1;
/// n_btl saturates at the field's 4 bits.
const NBTL_MAX: u64 = 15;
/// ceil(log2(n)) for n = 0..=15, n_btl rounded up to a power of two (a
/// 16-entry table in the program; section II.C "bit-shift operation").
const LOG2_CEIL: [u32; 16] = [0, 0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4];
/// trgt "higher than the maximum possible queueing delay" (section II.B).
pub const TRGT_NONE: u64 = 0xffff_ffff;
const TIME48: u64 = (1 << 48) - 1;

/// The program.
pub struct P4qos {
    pub core: QosCore,
    variant: Variant,
    backoff: Backoff,
    /// trgt (ns, 32 bits; 0 = none) | id_t << 32, per port (section II.B).
    pub target: RegisterId,
    /// Back-off: time of the port's last update (ns, 48 bits) | its n_btl << 48.
    pub gate: Option<RegisterId>,
    pub codel: Option<Codel>,
    /// Interval variant: count << 48 | next allowed mark (ns, 48 bits).
    pub interval_state: Option<RegisterId>,
    law: ControlLaw,
    interval_reset: IntervalReset,
    /// CRC-32 of the 5-tuple: the flow id of Alg. 1.
    pub flow_id: HashId,
    pub updates_sent: CounterId,
    pub updates_applied: CounterId,
    pub marks: CounterId,
    pub drops: CounterId,
    /// Instrumentation (Fig. 4b): QoS packets at a last switch by their
    /// bottleneck count n_btl = 0, 1, 2, 3 or more.
    pub n_btl_seen: [CounterId; 4],
    s_ns: u64,
    update_interval_ns: u64,
}

impl P4qos {
    pub fn new(
        pipe: &mut Pipeline,
        params: &SchemeParams,
        info: &SwitchInfo,
        variant: Variant,
    ) -> P4qos {
        let core = QosCore::declare(pipe, &params.qos, info, params.ecmp_hash_per_tier);
        let p = &params.p4qos;
        let slots = qos::port_slots(info);
        let target = pipe.register(RegisterSpec {
            name: "target",
            width: 64,
            size: slots,
            holds:
                "marking target trgt (ns, 0 = none) and the flow id_t that set it (P4QoS Alg. 1)",
        });
        let gate = (p.backoff != Backoff::None).then(|| {
            pipe.register(RegisterSpec {
                name: "update_gate",
                width: 64,
                size: slots,
                holds: "back-off: time of the port's last target update (ns) and its n_btl",
            })
        });
        let codel =
            (variant == Variant::Codel).then(|| Codel::declare(pipe, slots, params.codel.interval));
        let interval_state = (variant == Variant::Interval).then(|| {
            pipe.register(RegisterSpec {
                name: "interval_state",
                width: 64,
                size: slots,
                holds: "interval P4QoS: marks in a row (16 bits) and the next allowed mark (ns)",
            })
        });
        let flow_id = pipe.hash(HashSpec {
            name: "flow_id",
            algo: HashAlgo::Crc32,
            fields: FIVE_TUPLE_FIELDS.to_vec(),
        });
        let counter = |pipe: &mut Pipeline, name| {
            pipe.counter(CounterSpec {
                name,
                kind: CounterKind::Packets,
                size: 1,
            })
        };
        let updates_sent = counter(pipe, "p4qos_target_updates");
        let updates_applied = counter(pipe, "p4qos_target_updates_applied");
        let marks = counter(pipe, "aqm_marks");
        let drops = counter(pipe, "aqm_drops");
        let n_btl_seen = [
            counter(pipe, "p4qos_nbtl_0"),
            counter(pipe, "p4qos_nbtl_1"),
            counter(pipe, "p4qos_nbtl_2"),
            counter(pipe, "p4qos_nbtl_3plus"),
        ];
        // ipv4_lpm and the selector, QoS header; egress: ll_est, target, AQM, llep_last.
        pipe.stages(3, 5);
        P4qos {
            core,
            variant,
            backoff: p.backoff,
            target,
            gate,
            codel,
            interval_state,
            law: ControlLaw::new(params.codel.interval),
            interval_reset: p.interval_reset,
            flow_id,
            updates_sent,
            updates_applied,
            marks,
            drops,
            n_btl_seen,
            s_ns: ns_u64(p.sensitivity),
            update_interval_ns: ns_u64(p.update_interval),
        }
    }

    /// Alg. 1 lines 12-14 and the FIN reset on `port`'s target, one access:
    /// returns trgt (ns) after them.
    #[inline]
    fn apply_target(
        &self,
        ctx: &mut Ctx<'_>,
        port: u32,
        update: Option<(u64, u64)>,
        fin_of: Option<u64>,
    ) -> u64 {
        ctx.register(self.target, port, |cell| {
            let mut t = match cell & 0xffff_ffff {
                0 => TRGT_NONE,
                t => t,
            };
            let mut id_t = cell >> 32;
            // Section II.B: when the connection that determined the target
            // ends (its FIN), the target is reset.
            if fin_of == Some(id_t) && t != TRGT_NONE {
                t = TRGT_NONE;
                id_t = 0;
            }
            if let Some((new, id)) = update {
                // Line 12: a lower target, or the flow that set it.
                if new < t || id_t == id {
                    t = new.clamp(1, TRGT_NONE);
                    id_t = id;
                }
            }
            let stored = if t == TRGT_NONE { 0 } else { t };
            (stored | (id_t << 32), t)
        })
    }

    /// The back-off gate at the last switch (one access to `update_gate`):
    /// whether this packet's update is sent.
    #[inline]
    fn gate_open(&self, ctx: &mut Ctx<'_>, port: u32, now_ns: u64, n_btl: u64) -> bool {
        let Some(gate) = self.gate else {
            return true;
        };
        let (backoff, every) = (self.backoff, self.update_interval_ns);
        ctx.register(gate, port, |cell| {
            let last = cell & TIME48;
            let last_n = cell >> 48;
            let elapsed = now_ns.wrapping_sub(last) & TIME48;
            let open = cell == 0
                || match backoff {
                    Backoff::None => true,
                    Backoff::Fixed => elapsed >= every,
                    Backoff::Adaptive => last_n != n_btl || elapsed >= every >> n_btl.min(3),
                };
            if open {
                (((now_ns & TIME48).max(1)) | (n_btl << 48), true)
            } else {
                (cell, false)
            }
        })
    }
}

impl DataPlane for P4qos {
    fn has_parser(&self) -> bool {
        false
    }

    fn ingress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        meta: &mut UserMeta,
    ) {
        match self.core.ingress(ctx, pkt, sm, meta) {
            Arrival::Data | Arrival::LlepReply => {}
            Arrival::Ctl(CTL_TARGET_UPDATE, a, b) => {
                // Line 16: on along the reverse path, routed by its swapped
                // addresses (section II.C); lines 12-14 apply at the egress
                // of the port it came in on (the data's egress port here).
                meta[0] |= M_APPLY_UPDATE;
                meta[1] = a | (b << 32);
                self.core.route(ctx, pkt, sm);
                let on = sm.egress_spec;
                let in_port = sm.ingress_port;
                if sm.is_dropped() || self.core.host_port(ctx, on) {
                    // The first switch: apply here, the sender gets nothing.
                    sm.egress_spec = in_port;
                } else {
                    sm.clone_to(CloneType::I2E, session_of(in_port));
                }
            }
            Arrival::Ctl(..) => sm.mark_to_drop(),
        }
    }

    fn egress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        meta: &mut UserMeta,
    ) {
        if self.core.egress_llep(ctx, pkt, sm, meta) {
            return;
        }
        if meta[0] & M_APPLY_UPDATE != 0 {
            if sm.egress_port == sm.ingress_port {
                let (new, id) = (meta[1] & 0xffff_ffff, meta[1] >> 32);
                self.apply_target(ctx, sm.egress_port as u32, Some((new, id)), None);
                ctx.count(self.updates_applied, 0, 0);
                sm.terminate();
            }
            return;
        }
        if sm.instance_type == InstanceType::EgressClone && meta[0] & M_MAKE_UPDATE != 0 {
            // Line 8: the target update, back towards the sender.
            let (src, dst) = (pkt.ip.src, pkt.ip.dst);
            make_ctl(pkt, CTL_TARGET_UPDATE, meta[1] & 0xffff_ffff, meta[1] >> 32);
            pkt.ip.src = dst;
            pkt.ip.dst = src;
            return;
        }
        // Every packet leaving the port meets the port's target; packets
        // with a QoS header also run Alg. 1 lines 2-9.
        let mut view = self.core.egress_account(ctx, pkt, sm, meta);
        let shift = self.core.time_shift;
        let fin = pkt.tcp().is_some_and(|t| t.has(tcp_flags::FIN));
        let last_switch = view.is_some_and(|v| v.last_switch);
        let id = if fin || last_switch {
            ctx.hash(self.flow_id, &crate::l3::five_tuple(pkt)) as u64
        } else {
            0
        };
        let port = sm.egress_port as u32;
        let now_ns = ns_u64(sm.egress_global_timestamp);
        let mut update = None;
        if let Some(v) = view.as_mut() {
            // Alg. 1 line 2: what is left for queueing and processing.
            v.hdr.target = v.hdr.target.saturating_sub(v.ll_est_ns >> shift);
            // Lines 3-4: a bottleneck.
            if v.qdelay_ns > self.s_ns {
                v.hdr.n_btl = (v.hdr.n_btl + 1).min(NBTL_MAX);
            }
            // Lines 6-9: the last switch computes trgt_new, n_btl rounded
            // up to a power of two so the division is a shift.
            if v.last_switch {
                ctx.count(self.n_btl_seen[v.hdr.n_btl.min(3) as usize], 0, 0);
                let n = v.hdr.n_btl.clamp(1, NBTL_MAX);
                let trgt_new =
                    ((v.hdr.target << shift) >> LOG2_CEIL[n as usize]).min(TRGT_NONE - 1);
                if self.gate_open(ctx, port, now_ns, v.hdr.n_btl) {
                    update = Some((trgt_new, id));
                    ctx.count(self.updates_sent, 0, 0);
                }
            }
        }
        let trgt = self.apply_target(ctx, port, update, fin.then_some(id));
        let q = ns_u64(sm.deq_timedelta);
        // The AQM signals data packets (pure ACKs pass).
        let signal = pkt.payload() > 0
            && match self.variant {
                Variant::Plain => q > trgt,
                Variant::Codel => match &self.codel {
                    Some(c) => c.dequeue(ctx, port, now_ns, q, trgt, sm.deq_qdepth == 0),
                    None => false,
                },
                Variant::Interval => match self.interval_state {
                    Some(r) => {
                        let (law, reset) = (&self.law, self.interval_reset);
                        ctx.register(r, port, |s| {
                            let count = s >> 48;
                            let next = s & TIME48;
                            if q <= trgt {
                                match reset {
                                    // The interval is back at its default.
                                    IntervalReset::BelowTarget => (next, false),
                                    IntervalReset::QuietInterval => (s, false),
                                }
                            } else if now_ns >= next {
                                let c = match reset {
                                    IntervalReset::BelowTarget => count + 1,
                                    // Marked within one interval length
                                    // after the idle one: reduced; else a
                                    // quiet interval passed: the default.
                                    IntervalReset::QuietInterval
                                        if count > 0 && now_ns < next + law.delta(count) =>
                                    {
                                        count + 1
                                    }
                                    IntervalReset::QuietInterval => 1,
                                }
                                .min(0xffff);
                                ((c << 48) | ((now_ns + law.delta(c)) & TIME48), true)
                            } else {
                                (s, false)
                            }
                        })
                    }
                    None => false,
                },
            };
        if signal {
            if mark_or_drop(pkt, sm) {
                ctx.count(self.marks, 0, pkt.size);
            } else {
                ctx.count(self.drops, 0, pkt.size);
            }
        }
        let Some(v) = view else {
            return;
        };
        if let Some((trgt_new, id)) = update {
            if !v.first_switch {
                meta[0] |= M_MAKE_UPDATE;
                meta[1] = trgt_new | (id << 32);
                sm.clone_to(CloneType::E2E, session_of(sm.ingress_port));
            }
        }
        self.core.egress_finish(ctx, pkt, sm, &v);
    }
}

fn declare_variant(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    variant: Variant,
) -> Result<crate::Program, String> {
    let p = P4qos::new(pipe, params, info, variant);
    let a = QosAgent::new(p.core, &params.qos, Vec::new());
    Ok((Box::new(p), Box::new(a)))
}

/// The registry's constructor of `p4qos`.
pub fn declare(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    _: ControlPlaneConfig,
) -> Result<crate::Program, String> {
    declare_variant(pipe, params, info, Variant::Plain)
}

/// The registry's constructor of `p4qos_codel`.
pub fn declare_codel(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    _: ControlPlaneConfig,
) -> Result<crate::Program, String> {
    declare_variant(pipe, params, info, Variant::Codel)
}

/// The registry's constructor of `p4qos_interval`.
pub fn declare_interval(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    _: ControlPlaneConfig,
) -> Result<crate::Program, String> {
    declare_variant(pipe, params, info, Variant::Interval)
}
