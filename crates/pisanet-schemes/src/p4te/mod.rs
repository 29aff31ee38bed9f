//! `p4te`: P4TE (seed 000), the five tasks on the PISA model.
//!
//! ```text
//! ingress (alg. 2, sections 4.1.2, 4.1.3, 4.3.1):
//!   [recirculated feedback] portUtilizations[port] = colour ─► CPU, or resubmit to build a FACK
//!   [recirculated FACK]     clone of a data packet rewritten into a TCP ACK toward its source
//!   T1  incoming_rate[in_port, class] (srTCM, EBS 0: two colours) ─► meta.incoming colour
//!   ipv4_lpm (MAT_down) ── set_nhop ─► downward / local host
//!        │                 at a leaf: ACK to a local sender   ─► last_ack[flow] = (tag, ack)
//!        │                            FACK to a local sender  ─► ack = last_ack[flow], rc_seq[flow] = seq
//!        │                 data from a local host ─► last_ack, rc_seq read ─► shim (HOLD, ack, in-flight)
//!        └─ set_ecmp_group ─► T2 upward: mat_up_queue_depth ─► rg_queue_depth ─► lowQueueDepthPort
//!                                        mat_up_link_util   ─► rg_link_util   ─► lowUtilPort
//!                                        flowlet_time, portUtilizations, flowlet_port ─► egress_spec
//! egress (alg. 1, section 4.3.1):
//!   T3  oldQueueDepths[port] (±delta) ; mat_link_util_rate direct trTCM ─► oldPacketColors[port]
//!   T4  incoming YELLOW and egress RED ─► FACK window/2 ; YELLOW and GREEN ─► FACK window*5/4
//!   clone E2E ─► session [CPU] | [RECIRC] | [CPU, RECIRC]
//! CPU agent (alg. 3, T5): moves one port between routing groups per event (agent.rs).
//! ```
//!
//! Choices the paper leaves open are recorded in docs/schemes/p4te.md.

#![deny(clippy::float_arithmetic, clippy::integer_division)]

pub mod agent;
mod meta;

pub use agent::P4teAgent;
pub use meta::{Meta, Shim, PROTO_P4TE, SHIM_ACK, SHIM_FLAGS, SHIM_INFLIGHT, SHIM_WIRE};

use crate::blocks::FlowletTimer;
use crate::l3::{self, FIVE_TUPLE_FIELDS, L3, SET_ECMP_GROUP, SET_NHOP};
use crate::SchemeParams;
use pisanet_engine::{units, SimTime};
use pisanet_net::packet::{tcp_flags, Ecn};
use pisanet_net::{ExtHeader, Packet, PortNo, TC_LARGE};
use pisanet_pisa::{
    ActionCall, ActionId, CloneType, Color, ControlPlaneConfig, CounterId, CounterKind,
    CounterSpec, Ctx, DataPlane, HashAlgo, HashId, HashInput, HashSpec, InstanceType, KeyField,
    MatchKind, MeterId, MeterKind, MeterSpec, MeterUnit, Pipeline, RegisterId, RegisterSpec,
    SelectorId, SelectorSpec, StandardMetadata, SwitchInfo, TableId, TableSpec, UserMeta,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The P4TE shim header's `ExtHeader::kind`.
pub const SHIM_KIND: u16 = 0x7E04;
/// Bytes the shim adds on the wire: flags (1), reserved (3), last ack (4),
/// in-flight bytes (4).
pub const SHIM_BYTES: u32 = 12;

/// Clone sessions the agent configures.
pub const SESSION_CPU: u16 = 1;
pub const SESSION_RECIRC: u16 = 2;
pub const SESSION_CPU_RECIRC: u16 = 3;

/// Actions of the routing-group tables.
pub const SET_ROUTING_GROUP: ActionId = ActionId(0);
pub const USE_ROUTE: ActionId = ActionId(1);
/// Action of the routing-group selectors' members.
pub const SET_PORT: ActionId = ActionId(0);

/// Width of the flowlet timestamps (v1model's 48-bit timestamps).
const TIME_BITS: u8 = 48;
const TIME_MASK: u64 = (1 << TIME_BITS) - 1;
/// `last_ack` cells: a 17-bit flow tag (valid bit + CRC-16) above a 47-bit ack.
const ACK_BITS: u32 = 47;
const ACK_MASK: u64 = (1 << ACK_BITS) - 1;
/// `rc_seq` cells: a valid bit above a 32-bit TCP sequence number.
const RC_VALID: u64 = 1 << 32;
const SEQ32: u64 = (1 << 32) - 1;
/// Smallest window a FACK advertises: one full segment (NOTE: a smaller one
/// would stall a sender that only sends full segments).
const MIN_WINDOW: u64 = 1460;

/// Events and colours as v1model numbers them.
pub const EVT_NONE: u64 = 0;
pub const EVT_INCREASE: u64 = 1;
pub const EVT_DECREASE: u64 = 2;
pub const FACK_NONE: u64 = 0;
pub const FACK_DECREASE: u64 = 1;
pub const FACK_INCREASE: u64 = 2;

/// P4TE's parameters (`[scheme.p4te]`; section 6.1), with the paper's
/// defaults or their scaling to real link speeds (docs/schemes/p4te.md).
/// Rates are percentages of each port's line rate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct P4teParams {
    /// Rate adaptation with fake ACKs (P4TE-RA, true) or without (P4TE-NRA, false); section 7.1.1.
    pub rate_adaptation: bool,
    /// Flowlet interval (us; section 6.1.4: 40 ms at 40 packets/s, about 0.6 x the average RTT).
    #[serde(rename = "flowlet_interval_us", with = "units::us")]
    #[schemars(with = "f64", range(min = 0.001, max = 2.8e8), extend("x-unit" = "us"))]
    pub flowlet_interval: SimTime,
    /// Delta of alg. 1 and width of a queue-depth routing group (packets; section 7: p90 of ECMP's queue depth / 3).
    #[schemars(range(min = 1, max = 1000000), extend("x-unit" = "packets"))]
    pub delta_pkts: u32,
    /// Routing groups of MAT_up_QueueDepth, r (section 6.1.1: 4).
    #[schemars(range(min = 1, max = 64))]
    pub queue_groups: u32,
    /// Link-utilization meter CIR (% of the port's line rate; section 6.1.2: 75). At most util_pir_pct.
    #[schemars(range(min = 1, max = 100), extend("x-unit" = "%"))]
    pub util_cir_pct: u32,
    /// Link-utilization meter PIR (% of line rate; section 6.1.2: 95).
    #[schemars(range(min = 1, max = 100), extend("x-unit" = "%"))]
    pub util_pir_pct: u32,
    /// CBS = PBS of the link-utilization meter: this % of line rate (section 6.1.2: 5) ...
    #[schemars(range(min = 1, max = 100), extend("x-unit" = "%"))]
    pub util_burst_pct: u32,
    /// ... over this window (us).
    #[serde(rename = "util_burst_window_us", with = "units::us")]
    #[schemars(with = "f64", range(min = 0.001, max = 1e6), extend("x-unit" = "us"))]
    pub util_burst_window: SimTime,
    /// Safe rate of short flows per input port (% of line rate; section 6.1.3: 90).
    #[schemars(range(min = 1, max = 100), extend("x-unit" = "%"))]
    pub short_safe_pct: u32,
    /// Safe rate of large flows per input port (% of line rate; section 6.1.3: 10).
    #[schemars(range(min = 1, max = 100), extend("x-unit" = "%"))]
    pub large_safe_pct: u32,
    /// Committed burst of the class meters: the safe rate over this window (us).
    #[serde(rename = "class_burst_window_us", with = "units::us")]
    #[schemars(with = "f64", range(min = 0.001, max = 1e6), extend("x-unit" = "us"))]
    pub class_burst_window: SimTime,
    /// Rate-control window B (KB; section 6.1.5: line rate x average RTT).
    #[serde(rename = "rate_control_window_kb", with = "units::kb")]
    #[schemars(with = "f64", range(min = 1.0, max = 2e6), extend("x-unit" = "KB"))]
    pub rate_control_window_bytes: u64,
    /// Slots of the per-flow registers (a power of two, 1..=2^24).
    #[schemars(range(min = 1, max = 16777216))]
    pub flow_slots: u32,
    /// Alg. 3's switch CPU as a batching P4Runtime controller (agent.rs,
    /// [`P4teAgent`]; default false: one move's writes per event, as alg. 3
    /// is written). True: at most one batch of writes in flight, then only
    /// the net change since; still one entry at a time, not atomic.
    pub cpu_coalesce: bool,
}

impl Default for P4teParams {
    fn default() -> Self {
        P4teParams {
            rate_adaptation: true,
            flowlet_interval: SimTime::from_us(100),
            delta_pkts: 8,
            queue_groups: 4,
            util_cir_pct: 75,
            util_pir_pct: 95,
            util_burst_pct: 5,
            util_burst_window: SimTime::from_us(100),
            short_safe_pct: 90,
            large_safe_pct: 10,
            class_burst_window: SimTime::from_us(100),
            // 10 Gb/s x 40 us (section 6.1.5: line rate x average RTT).
            rate_control_window_bytes: 50_000,
            flow_slots: 1 << 16,
            cpu_coalesce: false,
        }
    }
}

impl P4teParams {
    /// The checks between keys (ranges are in the schema).
    pub fn validate(&self) -> Result<(), String> {
        if !self.flow_slots.is_power_of_two() {
            return Err(format!(
                "scheme.p4te.flow_slots: must be a power of two, got {}",
                self.flow_slots
            ));
        }
        if self.util_cir_pct > self.util_pir_pct {
            return Err(format!(
                "scheme.p4te.util_cir_pct: must be at most scheme.p4te.util_pir_pct ({}), got {}",
                self.util_pir_pct, self.util_cir_pct
            ));
        }
        if self.delta_pkts == 0 || !(1..=64).contains(&self.queue_groups) {
            return Err("scheme.p4te.delta_pkts, queue_groups: out of range".into());
        }
        if self.flowlet_interval.ps() >= TIME_MASK {
            return Err("scheme.p4te.flowlet_interval_us: exceeds the 48-bit timestamp".into());
        }
        if self.rate_control_window_bytes >= 1 << 31 {
            return Err("scheme.p4te.rate_control_window_kb: must be below 2^31 bytes".into());
        }
        Ok(())
    }
}

/// The program's handles and per-switch constants.
pub struct P4te {
    pub l3: L3,
    /// MAT_up_QueueDepth and its routing groups (alg. 2, line 1).
    pub mat_up_queue_depth: TableId,
    pub rg_queue_depth: SelectorId,
    /// MAT_up_LinkUtil and its routing groups (alg. 2, line 2).
    pub mat_up_link_util: TableId,
    pub rg_link_util: SelectorId,
    /// MAT_LinkUtilRate: one entry per egress port with a direct trTCM (alg. 1, line 14).
    pub mat_link_util_rate: TableId,
    /// T1: srTCM per (input port, class), index port * 2 + class.
    pub incoming_rate: MeterId,
    /// crc32 of the packet's 5-tuple: flowlet slot and group member (alg. 2, line 3).
    pub flowlet_hash: HashId,
    /// crc32 and crc16 of the data direction's 5-tuple: per-flow slot and tag.
    pub flow_hash: HashId,
    pub flow_tag: HashId,
    pub flowlet_time: FlowletTimer,
    pub flowlet_port: RegisterId,
    pub port_utilizations: RegisterId,
    pub old_queue_depths: RegisterId,
    pub old_packet_colors: RegisterId,
    /// Leaf only: last ACK sent down to the flow's local sender.
    pub last_ack: Option<RegisterId>,
    /// Leaf only: sequence number at which rate control last acted.
    pub rc_seq: Option<RegisterId>,
    /// FACKs built (index 0 decrease, 1 increase) and feedback packets
    /// cloned (0 queue-depth event, 1 utilization event).
    pub facks: CounterId,
    pub feedback: CounterId,
    /// Instrumentation of alg. 2 (no effect on forwarding), per class
    /// (short, large): flowlet decisions, and those where the colour check
    /// (lines 9-10, 17-18) sent the flowlet to the other metric's port, when
    /// that port differs.
    pub path_choices: [CounterId; 2],
    pub path_overrides: [CounterId; 2],
    params: P4teParams,
    tier: u8,
    leaf: bool,
    n_ports: u16,
    /// Bit p set: port p faces a host.
    host_ports: u64,
    slot_mask: u32,
}

fn ternary_dst() -> Vec<KeyField> {
    vec![KeyField {
        name: "hdr.ipv4.dst",
        kind: MatchKind::Ternary,
        width: 32,
    }]
}

impl P4te {
    /// Declares the program's objects in `pipe`. A tier-0 switch runs the
    /// leaf program (with the per-flow rate-adaptation registers).
    pub fn new(
        pipe: &mut Pipeline,
        params: &SchemeParams,
        info: &SwitchInfo,
    ) -> Result<Self, String> {
        let p = params.p4te.clone();
        p.validate()?;
        let leaf = info.tier == 0;
        let ports = info.n_ports.max(1) as u32;
        let slots = p.flow_slots;
        let flowlet_hash = pipe.hash(HashSpec {
            name: "flowlet_hash",
            algo: HashAlgo::Crc32,
            fields: FIVE_TUPLE_FIELDS.to_vec(),
        });
        let flow_hash = pipe.hash(HashSpec {
            name: "flow_hash",
            algo: HashAlgo::Crc32,
            fields: FIVE_TUPLE_FIELDS.to_vec(),
        });
        let flow_tag = pipe.hash(HashSpec {
            name: "flow_tag",
            algo: HashAlgo::Crc16,
            fields: FIVE_TUPLE_FIELDS.to_vec(),
        });
        let incoming_rate = pipe.meter(MeterSpec {
            name: "incoming_rate",
            kind: MeterKind::SrTcm,
            unit: MeterUnit::Bytes,
            size: ports * 2,
        });
        let l3 = L3::declare(pipe, HashAlgo::Crc32);
        let rg_table = |pipe: &mut Pipeline, name, size| {
            pipe.table(TableSpec {
                name,
                keys: ternary_dst(),
                actions: vec!["set_routing_group", "use_route"],
                size,
                default_action: ActionCall::bare(USE_ROUTE),
                direct_counter: false,
                direct_meter: None,
            })
        };
        let rg_selector = |pipe: &mut Pipeline, name, groups| {
            pipe.selector(SelectorSpec {
                name,
                algo: HashAlgo::Crc32,
                actions: vec!["set_port"],
                max_groups: groups,
                max_members_per_group: 64,
            })
        };
        let mat_up_queue_depth = rg_table(pipe, "mat_up_queue_depth", p.queue_groups);
        let rg_queue_depth = rg_selector(pipe, "rg_queue_depth", p.queue_groups);
        let mat_up_link_util = rg_table(pipe, "mat_up_link_util", 3);
        let rg_link_util = rg_selector(pipe, "rg_link_util", 3);
        let flowlet_time = FlowletTimer::declare(
            pipe,
            slots,
            "lastSeenTime of the slot's flowlet, ps mod 2^48 (alg. 2, lines 4-5)",
        );
        let port_utilizations = pipe.register(RegisterSpec {
            name: "port_utilizations",
            width: 2,
            size: ports,
            holds: "colour of each port's last utilization event (section 4.1.2)",
        });
        let flowlet_port = pipe.register(RegisterSpec {
            name: "flowlet_port",
            width: 10,
            size: slots,
            holds: "lastUsedPorts: port + 1 of the slot's flowlet, 0 = none (alg. 2, lines 15, 23, 26)",
        });
        let (last_ack, rc_seq) = if leaf {
            let a = pipe.register(RegisterSpec {
                name: "last_ack",
                width: 64,
                size: slots,
                holds: "flow tag (17 b) and last ACK sent to the local sender (47 b)",
            });
            let s = pipe.register(RegisterSpec {
                name: "rc_seq",
                width: 33,
                size: slots,
                holds: "valid bit and TCP sequence number of the last rate control (section 4.3.1)",
            });
            (Some(a), Some(s))
        } else {
            (None, None)
        };
        let old_queue_depths = pipe.register(RegisterSpec {
            name: "old_queue_depths",
            width: 19,
            size: ports,
            holds: "lastUpdatedQueueDepth of each port, packets (alg. 1, lines 2, 6, 10)",
        });
        let mat_link_util_rate = pipe.table(TableSpec {
            name: "mat_link_util_rate",
            keys: vec![KeyField {
                name: "standard_metadata.egress_port",
                kind: MatchKind::Exact,
                width: 9,
            }],
            actions: vec!["meter_port"],
            size: ports,
            default_action: ActionCall::bare(ActionId(0)),
            direct_counter: false,
            direct_meter: Some((MeterKind::TrTcm, MeterUnit::Bytes)),
        });
        let old_packet_colors = pipe.register(RegisterSpec {
            name: "old_packet_colors",
            width: 2,
            size: ports,
            holds: "lastUpdatedPacketColor of each port (alg. 1, lines 13, 15)",
        });
        let facks = pipe.counter(CounterSpec {
            name: "facks",
            kind: CounterKind::Packets,
            size: 2,
        });
        let feedback = pipe.counter(CounterSpec {
            name: "feedback",
            kind: CounterKind::Packets,
            size: 2,
        });
        let mut one = |name| {
            pipe.counter(CounterSpec {
                name,
                kind: CounterKind::Packets,
                size: 1,
            })
        };
        let path_choices = [one("path_choices_short"), one("path_choices_large")];
        let path_overrides = [one("path_overrides_short"), one("path_overrides_large")];
        // A recirculated feedback packet that also becomes a FACK is
        // resubmitted (portUtilizations is touched once per pass).
        pipe.keep_original();
        // Dependent stages (docs/schemes/p4te.md): ingress: meter, hash and
        // MAT_down | routing-group tables | selectors, per-flow registers |
        // portUtilizations | status compare | flowlet_port | shim;
        // egress: oldQueueDepths and MAT_LinkUtilRate | oldPacketColors |
        // rate-control decision | clone.
        pipe.stages(7, 4);
        let host_ports = info
            .host_ports
            .iter()
            .filter(|&&p| p < 64)
            .fold(0u64, |m, &p| m | (1 << p));
        Ok(P4te {
            l3,
            mat_up_queue_depth,
            rg_queue_depth,
            mat_up_link_util,
            rg_link_util,
            mat_link_util_rate,
            incoming_rate,
            flowlet_hash,
            flow_hash,
            flow_tag,
            flowlet_time,
            flowlet_port,
            port_utilizations,
            old_queue_depths,
            old_packet_colors,
            last_ack,
            rc_seq,
            facks,
            feedback,
            path_choices,
            path_overrides,
            tier: info.tier,
            leaf,
            n_ports: info.n_ports,
            host_ports,
            slot_mask: p.flow_slots - 1,
            params: p,
        })
    }

    /// The control agent of this program, for a switch CPU with timing `cp`.
    pub fn agent(&self, cp: ControlPlaneConfig) -> P4teAgent {
        P4teAgent::new(self, cp)
    }

    pub fn params(&self) -> &P4teParams {
        &self.params
    }

    fn is_host_port(&self, port: PortNo) -> bool {
        port < 64 && self.host_ports & (1 << port) != 0
    }

    /// The per-flow slot and tag of the data direction of `pkt`'s flow
    /// (`reversed` for ACKs and FACKs travelling back to the sender).
    fn flow_slot(&self, ctx: &mut Ctx<'_>, pkt: &Packet, reversed: bool) -> (u32, u64) {
        let (s, d, pr, sp, dp) = pkt.five_tuple();
        let input = if reversed {
            HashInput::new().u32(d).u32(s).u8(pr).u16(dp).u16(sp)
        } else {
            HashInput::new().u32(s).u32(d).u8(pr).u16(sp).u16(dp)
        };
        let slot = ctx.hash(self.flow_hash, &input) & self.slot_mask;
        let tag = ctx.hash(self.flow_tag, &input) as u64 | 1 << 16;
        (slot, tag)
    }

    /// Section 4.3: a recirculated clone of a data packet becomes a fake ACK
    /// toward the source, carrying the window the egress decision chose and
    /// the sender-side leaf's last ACK (restamped when it passes that leaf).
    fn build_fack(&self, pkt: &mut Packet, meta: &mut UserMeta) {
        let m = Meta(*meta);
        let shim = Shim::of(pkt).unwrap_or_default();
        let Some(tcp) = pkt.tcp_mut() else { return };
        let trigger = tcp.seq & SEQ32;
        let (sport, dport) = (tcp.sport, tcp.dport);
        tcp.sport = dport;
        tcp.dport = sport;
        tcp.flags = tcp_flags::ACK;
        tcp.seq = 0;
        tcp.ack = shim.ack;
        tcp.window = m.window();
        tcp.payload = 0;
        std::mem::swap(&mut pkt.ip.src, &mut pkt.ip.dst);
        pkt.ip.ecn = Ecn::NotEct;
        let fack = Shim {
            flags: Shim::FACK,
            ack: shim.ack,
            inflight: 0,
            trigger,
        };
        fack.put(pkt);
        pkt.size = Packet::tcp_wire_size(0) + SHIM_BYTES;
        *meta = [0; 2];
    }

    /// At a leaf, a data packet from a local sender: reads what the leaf
    /// knows of the flow (last ACK, last rate control) into the metadata;
    /// returns the shim to carry upward.
    fn source_leaf(&self, ctx: &mut Ctx<'_>, pkt: &Packet, meta: &mut UserMeta) -> Shim {
        let (Some(last_ack), Some(rc_seq)) = (self.last_ack, self.rc_seq) else {
            return Shim::default();
        };
        let (slot, tag) = self.flow_slot(ctx, pkt, false);
        let tcp = pkt.tcp().copied().unwrap_or_default();
        let seq_end = tcp.seq + tcp.payload as u64;
        let cell = ctx.register_read(last_ack, slot);
        let ack = cell & ACK_MASK;
        // A tag from another flow, or an ack beyond this segment, is unknown.
        let valid = cell >> ACK_BITS == tag && ack <= seq_end;
        let inflight = if valid {
            (seq_end - ack).min(u32::MAX as u64)
        } else {
            0
        };
        // Section 4.3.1: one packet per B bytes is open to rate control; the
        // leaf flags the others (HOLD). A FACK that returns restarts the
        // window at the packet it acted on.
        let seq = tcp.seq & SEQ32;
        let b = self.params.rate_control_window_bytes;
        let hold = ctx.register(rc_seq, slot, |rc| {
            let since = seq.wrapping_sub(rc & SEQ32) & SEQ32;
            if rc & RC_VALID != 0 && since < b {
                (rc, true)
            } else {
                (RC_VALID | seq, false)
            }
        });
        let mut flags = 0;
        if hold {
            flags |= Shim::HOLD;
        }
        if valid {
            flags |= Shim::ACK_VALID;
        }
        let shim = Shim {
            flags,
            ack: if valid { ack } else { 0 },
            inflight,
            trigger: 0,
        };
        let mut m = Meta(*meta);
        m.set_rc_flags(flags);
        m.set_window(inflight as u32);
        *meta = m.0;
        shim
    }

    /// Alg. 2: the upward port of `pkt`; `route_group` is the ECMP group of
    /// its route, used only while a routing-group table has no entry.
    fn select_upward(
        &self,
        ctx: &mut Ctx<'_>,
        pkt: &Packet,
        sm: &StandardMetadata,
        route_group: u32,
    ) -> Option<PortNo> {
        let dst = pkt.ip.dst as u64;
        // Line 3: flowletId = hash of the 5-tuple.
        let h = ctx.hash(self.flowlet_hash, &l3::five_tuple(pkt));
        let member = l3::member_hash(h, self.tier);
        let pick = |ctx: &mut Ctx<'_>, table, selector| {
            let hit = ctx.apply(table, [dst, 0, 0, 0]);
            let m = if hit.action.action == SET_ROUTING_GROUP {
                ctx.select(selector, hit.action.params[0] as u32, member)
            } else {
                None
            };
            m.or_else(|| ctx.select(self.l3.ecmp_group, route_group, member))
                .map(|a| a.params[0] as PortNo)
        };
        // Lines 1-2: the first member of the best non-empty group, by hash.
        let low_queue_depth = pick(ctx, self.mat_up_queue_depth, self.rg_queue_depth)?;
        let low_util = pick(ctx, self.mat_up_link_util, self.rg_link_util)?;
        let slot = h & self.slot_mask;
        // Lines 4-7.
        let gap = self.flowlet_time.gap(ctx, slot, sm);
        let new_flowlet = gap >= self.params.flowlet_interval.ps();
        // Lines 8-14 (short) and 16-22 (large).
        let large = pkt.ip.dscp & TC_LARGE != 0;
        let (first, second) = if large {
            (low_util, low_queue_depth)
        } else {
            (low_queue_depth, low_util)
        };
        let status = ctx.register_read(self.port_utilizations, first as u32);
        let choice = if status == Color::Green as u64 {
            first
        } else {
            second
        };
        // Lines 15, 23 and 26 (a never-written slot starts a flowlet).
        let (port, decided) = ctx.register(self.flowlet_port, slot, |last| {
            if new_flowlet || last == 0 {
                (choice as u64 + 1, (choice as u64, true))
            } else {
                (last, (last - 1, false))
            }
        });
        if decided {
            let class = large as usize;
            ctx.count(self.path_choices[class], 0, sm.packet_length);
            if choice != first {
                ctx.count(self.path_overrides[class], 0, sm.packet_length);
            }
        }
        Some(port as PortNo)
    }
}

impl DataPlane for P4te {
    fn ingress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        meta: &mut UserMeta,
    ) {
        match sm.instance_type {
            InstanceType::Recirculated => {
                let mut m = Meta(*meta);
                if m.util_event() != EVT_NONE {
                    // Section 4.1.2: the recirculated feedback makes the
                    // port's colour visible to ingress.
                    ctx.register_write(
                        self.port_utilizations,
                        m.event_port() as u32,
                        m.new_color(),
                    );
                    if m.fack() == FACK_NONE {
                        // Alg. 1, line 24: the feedback packet to the CPU.
                        sm.send_to_cpu();
                    } else {
                        // The FACK needs portUtilizations again: next pass.
                        m.clear_util_event();
                        *meta = m.0;
                        sm.resubmit();
                    }
                    return;
                }
                if m.fack() == FACK_NONE {
                    sm.mark_to_drop();
                    return;
                }
                self.build_fack(pkt, meta);
            }
            InstanceType::Resubmit => self.build_fack(pkt, meta),
            _ => {}
        }
        let in_port = sm.ingress_port;
        let from_switch_port = in_port < self.n_ports;
        // T1, section 4.1.3: the class's incoming rate on this port.
        if from_switch_port && sm.instance_type == InstanceType::Normal {
            let class = (pkt.ip.dscp & TC_LARGE) as u32;
            let c = ctx.execute_meter(
                self.incoming_rate,
                in_port as u32 * 2 + class,
                sm.packet_length,
            );
            let mut m = Meta(*meta);
            m.set_incoming(if c == Color::Green {
                Color::Green
            } else {
                Color::Yellow
            });
            *meta = m.0;
        }
        let shim = Shim::of(pkt);
        let is_fack = shim.is_some_and(|s| s.flags & Shim::FACK != 0);
        if let Some(s) = shim.filter(|_| !is_fack) {
            let mut m = Meta(*meta);
            m.set_rc_flags(s.flags);
            m.set_window(s.inflight as u32);
            *meta = m.0;
        }
        let tcp = pkt.tcp().copied();
        let is_data = tcp.is_some_and(|t| t.payload > 0);
        let from_local_sender = self.leaf && self.is_host_port(in_port) && is_data;
        let hit = ctx.apply(self.l3.ipv4_lpm, [pkt.ip.dst as u64, 0, 0, 0]);
        match hit.action.action {
            SET_NHOP => {
                let port = hit.action.params[0] as PortNo;
                sm.egress_spec = port;
                if !(self.leaf && self.is_host_port(port)) {
                    return;
                }
                if is_fack {
                    // Section 4.3.1: the sender's leaf records the rate
                    // control and stamps the freshest ACK it has sent down.
                    let trigger = shim.map_or(0, |s| s.trigger);
                    let (slot, tag) = self.flow_slot(ctx, pkt, true);
                    if let (Some(la), Some(rc)) = (self.last_ack, self.rc_seq) {
                        let cell = ctx.register_read(la, slot);
                        ctx.register_write(rc, slot, RC_VALID | trigger);
                        if let Some(t) = pkt.tcp_mut() {
                            if cell >> ACK_BITS == tag {
                                t.ack = cell & ACK_MASK;
                            }
                        }
                    }
                } else if from_local_sender {
                    self.source_leaf(ctx, pkt, meta);
                } else if let (Some(t), Some(la)) = (tcp, self.last_ack) {
                    if t.payload == 0 && t.has(tcp_flags::ACK) && shim.is_none() {
                        let (slot, tag) = self.flow_slot(ctx, pkt, true);
                        ctx.register_write(la, slot, tag << ACK_BITS | (t.ack & ACK_MASK));
                    }
                }
                Shim::strip(pkt);
            }
            SET_ECMP_GROUP => {
                if from_local_sender {
                    let s = self.source_leaf(ctx, pkt, meta);
                    s.put(pkt);
                    pkt.size += SHIM_BYTES;
                }
                match self.select_upward(ctx, pkt, sm, hit.action.params[0] as u32) {
                    Some(p) => sm.egress_spec = p,
                    None => sm.mark_to_drop(),
                }
            }
            _ => sm.mark_to_drop(),
        }
    }

    fn egress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        meta: &mut UserMeta,
    ) {
        let port = sm.egress_port;
        let mut m = Meta(*meta);
        // Alg. 1, lines 1-11.
        let depth = sm.deq_qdepth as u64;
        let delta = self.params.delta_pkts as u64;
        let queue_event = ctx.register(self.old_queue_depths, port as u32, |last| {
            if depth >= last + delta {
                (depth, EVT_INCREASE)
            } else if depth + delta <= last {
                (depth, EVT_DECREASE)
            } else {
                (last, EVT_NONE)
            }
        });
        // Lines 12-20.
        let hit = ctx.apply(self.mat_link_util_rate, [port as u64, 0, 0, 0]);
        let color = ctx.read_direct_meter(self.mat_link_util_rate, &hit, sm.packet_length);
        let last_color = ctx.register(self.old_packet_colors, port as u32, |old| {
            (color as u64, old)
        });
        let util_event = match (color as u64).cmp(&last_color) {
            std::cmp::Ordering::Greater => EVT_INCREASE,
            std::cmp::Ordering::Less => EVT_DECREASE,
            std::cmp::Ordering::Equal => EVT_NONE,
        };
        // T4, section 4.3.1: incoming class over its safe rate and the port
        // overutilized (RED) or with spare capacity (GREEN).
        let flags = m.rc_flags();
        let eligible = self.params.rate_adaptation
            && sm.instance_type == InstanceType::Normal
            && !pkt.switch_made
            && pkt.tcp().is_some_and(|t| t.payload > 0)
            && flags & Shim::ACK_VALID != 0
            && flags & (Shim::HOLD | Shim::ACTED) == 0
            && m.incoming() == Color::Yellow as u64;
        let fack = match (eligible, color) {
            (true, Color::Red) => FACK_DECREASE,
            (true, Color::Green) => FACK_INCREASE,
            _ => FACK_NONE,
        };
        if fack != FACK_NONE {
            // Section 6.1.5: halve, or raise by a quarter (shifts only); at
            // least one segment so that the sender is never stalled.
            let inflight = m.window() as u64;
            let w = if fack == FACK_DECREASE {
                inflight >> 1
            } else {
                inflight + (inflight >> 2)
            };
            m.set_window(w.clamp(MIN_WINDOW, u32::MAX as u64) as u32);
            m.set_fack(fack);
            m.set_rc_flags(flags | Shim::ACTED);
            Shim::mark_acted(pkt);
            ctx.count(self.facks, fack as u32 - 1, sm.packet_length);
        }
        // Lines 21-25: one feedback clone per event; utilization events and
        // FACKs go through the recirculation port.
        let cpu_event = queue_event != EVT_NONE || util_event != EVT_NONE;
        if cpu_event {
            m.set_events(queue_event, depth, util_event, color as u64, port);
            if queue_event != EVT_NONE {
                ctx.count(self.feedback, 0, sm.packet_length);
            }
            if util_event != EVT_NONE {
                ctx.count(self.feedback, 1, sm.packet_length);
            }
        }
        let session = match (cpu_event, util_event != EVT_NONE, fack != FACK_NONE) {
            (false, _, false) => None,
            (true, false, false) => Some(SESSION_CPU),
            (true, true, false) | (false, _, true) => Some(SESSION_RECIRC),
            (true, _, true) => Some(SESSION_CPU_RECIRC),
        };
        *meta = m.0;
        if let Some(s) = session {
            sm.clone_to(CloneType::E2E, s);
        }
    }
}

impl Shim {
    /// The shim header of `pkt`, if it carries one.
    pub fn of(pkt: &Packet) -> Option<Shim> {
        pkt.ext().filter(|e| e.kind == SHIM_KIND).map(|e| {
            let flags = SHIM_FLAGS.get(&e.fields);
            let fack = flags & Shim::FACK != 0;
            let word = SHIM_INFLIGHT.get(&e.fields);
            Shim {
                flags,
                // SHIM_ACK's word, whole: the wire cuts it, the model does not.
                ack: e.fields[1],
                inflight: if fack { 0 } else { word },
                trigger: if fack { word } else { 0 },
            }
        })
    }

    /// Emits this shim on `pkt` (the caller accounts for its bytes).
    pub fn put(&self, pkt: &mut Packet) {
        let mut fields = [0; 4];
        SHIM_FLAGS.set(&mut fields, self.flags);
        fields[1] = self.ack;
        let fack = self.flags & Shim::FACK != 0;
        SHIM_INFLIGHT.set(&mut fields, if fack { self.trigger } else { self.inflight });
        pkt.set_ext(Some(ExtHeader {
            kind: SHIM_KIND,
            bytes: SHIM_BYTES as u16,
            fields,
        }));
    }

    /// Removes the shim before a packet reaches a host.
    pub fn strip(pkt: &mut Packet) {
        if pkt.ext().is_some_and(|e| e.kind == SHIM_KIND) {
            pkt.set_ext(None);
            pkt.size = pkt
                .size
                .saturating_sub(SHIM_BYTES)
                .max(pisanet_net::MIN_FRAME_BYTES);
        }
    }

    /// Sets the ACTED flag, if the packet carries the shim.
    pub fn mark_acted(pkt: &mut Packet) {
        if let Some(e) = pkt.ext_mut().filter(|e| e.kind == SHIM_KIND) {
            let flags = SHIM_FLAGS.get(&e.fields);
            SHIM_FLAGS.set(&mut e.fields, flags | Shim::ACTED);
        }
    }
}

#[cfg(test)]
mod tests;

/// The resource report of the leaf (`leaf = true`) or non-leaf program on a
/// switch with `n_ports` ports, for `flow_slots` flows (section 6.2.3).
pub fn resource_report(
    leaf: bool,
    n_ports: u16,
    flow_slots: u32,
) -> Result<pisanet_pisa::ResourceReport, String> {
    let params = SchemeParams {
        p4te: P4teParams {
            flow_slots,
            ..P4teParams::default()
        },
        ..SchemeParams::default()
    };
    let info = SwitchInfo {
        n_ports,
        tier: if leaf { 0 } else { 1 },
        ..SwitchInfo::default()
    };
    let mut pipe = Pipeline::new("p4te");
    P4te::new(&mut pipe, &params, &info)?;
    Ok(pipe.resources())
}

/// The registry's constructor (lib.rs, `REGISTRY`).
pub fn declare(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    cp: ControlPlaneConfig,
) -> Result<crate::Program, String> {
    let p = P4te::new(pipe, params, info)?;
    let a = p.agent(cp);
    Ok((Box::new(p), Box::new(a)))
}
