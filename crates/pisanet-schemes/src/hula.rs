//! `hula`: HULA (Katta et al., SOSR 2016), hop-by-hop utilization-aware load
//! balancing: ToRs send periodic probes that the switches replicate up and
//! down the tiers; each switch keeps, per destination ToR, the best next hop
//! and the utilization of the best path through it, and forwards flowlets on
//! that hop.
//!
//! ```text
//! header:   Eth | IPv4 (proto = PROTO_HULA) | hula { tor_id: 24, min_util: 8 }     (64 B frame)
//!
//! ingress, probe:  ingress_port_info[in_port] -> scale, upstream       (stage 1)
//!                  tx_util estimator of in_port, quantized to 8 bits   (stage 1)
//!                  best_path[tor_id] pairs update (util, hop, time)    (stage 2)
//!                  hula_mcast[in_port] -> multicast group | terminate  (stage 3)
//! ingress, data:   get_dst_tor (LPM on dst) -> own rack: ipv4_lpm to the host
//!                  flowlet_time[h] -> gap                              (stage 2)
//!                  best_path[dst_tor] -> best hop                      (stage 3)
//!                  flowlet_hop[h] := best hop on a new flowlet         (stage 4)
//!                  nhop_upstream[hop] (loop guard) -> ipv4_lpm/ecmp_group fallback
//! egress:          probe copies: last_sent[tor, port] (suppression)
//!                  every packet: tx_util estimator of the egress port
//! ```
//!
//! Choices where the paper leaves room are in docs/schemes/hula.md.

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use crate::blocks::FlowletTimer;
pub use crate::blocks::{
    declare_get_dst_tor, dst_tor_entries, ns32, quantize, util_scale, NEW_DATA_FLOWLETS, NO_TOR,
    SET_DST_TOR,
};
use crate::l3::{self, RouteAgent, FIVE_TUPLE_FIELDS, L3};
use crate::SchemeParams;
use pisanet_engine::{units, SimTime};
use pisanet_net::wire::{FieldDef, HeaderDef, Placement};
use pisanet_net::{ExtHeader, Packet, PacketExtra, PortNo, MIN_FRAME_BYTES};
use pisanet_pisa::{
    matches, ActionCall, ActionId, ControlAgent, CounterId, CounterKind, CounterSpec, CpuApi, Ctx,
    DataPlane, EstimatorId, EstimatorSpec, HashAlgo, HashId, HashSpec, KeyField, MatchKind,
    Pipeline, PktGenSpec, RegisterId, RegisterSpec, StandardMetadata, SwitchInfo, TableEntry,
    TableId, TableSpec, UpdateType, UserMeta, Write, PKTGEN_PORT,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// IPv4 protocol number of HULA probes (RFC 3692 experimental range).
pub const PROTO_HULA: u8 = 253;
/// `ExtHeader::kind` of the HULA header.
pub const HULA_HEADER: u16 = 0x4855;
/// Bytes of the HULA header (torID 24 bits + minUtil 8 bits; HULA section 4.2).
pub const HULA_HEADER_BYTES: u16 = 4;
/// HULA section 4.2, the probe header: the fields the program reads and
/// writes, and their layout on the wire (docs/headers.md).
pub const HULA_TOR_ID: FieldDef = FieldDef::ext(
    "tor_id",
    24,
    0,
    0,
    "ToR that generated the probe (HULA section 4.2, torID)",
);
pub const HULA_MIN_UTIL: FieldDef = FieldDef::ext(
    "min_util",
    8,
    1,
    0,
    "utilization of the best path to tor_id so far, 0..254, 255 = infinity (HULA section 4.2, minUtil)",
);
pub static HULA_WIRE: HeaderDef = HeaderDef {
    name: "hula",
    title: "HULA probe",
    schemes: "hula",
    kind: HULA_HEADER,
    bytes: HULA_HEADER_BYTES,
    placement: Placement::IpProto(PROTO_HULA),
    doc: "Probes the ToRs' packet generators send and the switches replicate (HULA section 4.1); \
          a minimum-sized frame: nothing follows the header but padding.",
    fields: &[HULA_TOR_ID, HULA_MIN_UTIL],
};

/// "Infinity" of the 8-bit utilization (HULA section 4.3, bootstrapping):
/// measured utilizations saturate at `UTIL_MAX`, one below.
pub const UTIL_INF: u64 = 255;
pub const UTIL_MAX: u64 = 254;

/// Names of the diagnostic counters, by tier (0 = ToR).
const TIER_NAMES: usize = 3;
static BEST_HOP_CHANGES: [&str; TIER_NAMES] = [
    "hula_best_hop_changes_tier0",
    "hula_best_hop_changes_tier1",
    "hula_best_hop_changes_tier2",
];

/// Actions of `hula_mcast`.
pub const SET_MCAST_GRP: ActionId = ActionId(0);
pub const TERMINATE: ActionId = ActionId(1);
/// Actions of `ingress_port_info`.
pub const SET_PORT_INFO: ActionId = ActionId(0);
/// Actions of `nhop_upstream`.
pub const IS_UPSTREAM: ActionId = ActionId(0);
pub const NOT_UPSTREAM: ActionId = ActionId(1);

/// Bit layout of a `best_path` cell: the pair (path_util, best_hop) and the
/// hop's update time, updated together (Domino's Pairs atom, HULA section 5.3).
const TIME_MASK: u64 = 0xffff_ffff;
const UTIL_SHIFT: u32 = 32;
const HOP_SHIFT: u32 = 40;
/// Width of the flowlet timestamps (as v1model's 48-bit timestamps).
/// Multicast group of the probes the packet generator makes (ToR uplinks).
const fn origin_group(n_ports: u16) -> u16 {
    n_ports + 1
}

/// Parameters of `hula` (`[scheme.hula]`; HULA sections 4 and 6).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HulaParams {
    /// Each ToR sends a probe on every uplink this often (us; T_p, section 6: 200).
    #[serde(rename = "probe_interval_us", with = "units::us")]
    #[schemars(with = "f64", range(min = 0.01, max = 1e6), extend("x-unit" = "us"))]
    pub probe_interval: SimTime,
    /// A best hop not refreshed for this long is replaced by any probe (us;
    /// T_fail, section 4.4). Default: 3 x probe_interval_us.
    #[serde(
        rename = "keepalive_us",
        with = "units::opt_us",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<f64>", range(min = 0.01, max = 4e6), extend("x-unit" = "us"))]
    pub keepalive_us: Option<SimTime>,
    /// Time constant of the TX utilization estimator (us; section 4.2: at
    /// least 2 x probe_interval_us). Default: 2 x probe_interval_us.
    #[serde(
        rename = "tau_us",
        with = "units::opt_us",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<f64>", range(min = 0.01, max = 4e6), extend("x-unit" = "us"))]
    pub tau_us: Option<SimTime>,
    /// Per ToR and link, at most one probe per this window (us; section 4.5).
    /// Default: 3/4 x probe_interval_us, so that jitter does not suppress a
    /// ToR's next round.
    #[serde(
        rename = "suppress_us",
        with = "units::opt_us",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<f64>", range(min = 0.01, max = 1e6), extend("x-unit" = "us"))]
    pub suppress_us: Option<SimTime>,
    /// ToRs the program's per-ToR registers hold (at least the topology's ToRs).
    #[schemars(range(min = 1, max = 65536))]
    pub tor_slots: u32,
}

impl Default for HulaParams {
    fn default() -> Self {
        HulaParams {
            probe_interval: SimTime::from_us(200),
            keepalive_us: None,
            tau_us: None,
            suppress_us: None,
            tor_slots: 1024,
        }
    }
}

// NOTE: control-plane configuration, not data plane: the defaults are
// fractions of the probe interval, computed as the config always did.
#[allow(clippy::float_arithmetic)]
impl HulaParams {
    /// T_fail (section 4.4): `keepalive_us`, default 3 x the probe interval.
    pub fn keepalive(&self) -> SimTime {
        self.keepalive_us
            .unwrap_or_else(|| SimTime::from_us_f64(3.0 * self.probe_interval.as_us_f64()))
    }
    /// The estimator's time constant (section 4.2): `tau_us`, default 2 x the probe interval.
    pub fn tau(&self) -> SimTime {
        self.tau_us
            .unwrap_or_else(|| SimTime::from_us_f64(2.0 * self.probe_interval.as_us_f64()))
    }
    /// The suppression window (section 4.5): `suppress_us`, default 3/4 of the probe interval.
    pub fn suppress_window(&self) -> SimTime {
        self.suppress_us
            .unwrap_or_else(|| SimTime::from_us_f64(0.75 * self.probe_interval.as_us_f64()))
    }
    /// The checks between keys (ranges are in the schema).
    pub fn validate(&self) -> Result<(), String> {
        let (tp, keepalive, tau, suppress) = (
            self.probe_interval,
            self.keepalive(),
            self.tau(),
            self.suppress_window(),
        );
        if tau.ps() < 2 * tp.ps() {
            // HULA section 4.2: tau is at least twice the probe interval.
            return Err(format!(
                "scheme.hula.tau_us: must be at least 2 x scheme.hula.probe_interval_us ({}) (HULA section 4.2), got {}",
                2.0 * tp.as_us_f64(),
                tau.as_us_f64()
            ));
        }
        if keepalive <= tp {
            return Err(format!(
                "scheme.hula.keepalive_us: must exceed scheme.hula.probe_interval_us ({}), got {}",
                tp.as_us_f64(),
                keepalive.as_us_f64()
            ));
        }
        if suppress > tp {
            return Err(format!(
                "scheme.hula.suppress_us: must be at most scheme.hula.probe_interval_us ({}), got {}",
                tp.as_us_f64(),
                suppress.as_us_f64()
            ));
        }
        if keepalive.as_us_f64() >= 4.0e6 || tau.as_us_f64() >= 4.0e6 {
            return Err(
                "scheme.hula.keepalive_us, tau_us: must be below 4 s (32-bit ns timestamps)".into(),
            );
        }
        Ok(())
    }
}

/// A `best_path` cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BestPath {
    pub util: u64,
    pub hop: PortNo,
    /// Nanoseconds mod 2^32.
    pub time_ns: u64,
}

impl BestPath {
    pub fn pack(self) -> u64 {
        (self.time_ns & TIME_MASK) | (self.util << UTIL_SHIFT) | ((self.hop as u64) << HOP_SHIFT)
    }
    pub fn unpack(v: u64) -> Self {
        BestPath {
            util: (v >> UTIL_SHIFT) & 0xff,
            hop: ((v >> HOP_SHIFT) & 0xffff) as PortNo,
            time_ns: v & TIME_MASK,
        }
    }
}

/// The probe ToR `tor` generates (HULA section 4.2: a minimum-sized packet).
pub fn probe(tor: u32, util: u64) -> Packet {
    let mut fields = [0; 4];
    HULA_TOR_ID.set(&mut fields, tor as u64);
    HULA_MIN_UTIL.set(&mut fields, util);
    let mut p = Packet {
        size: MIN_FRAME_BYTES,
        flow: Packet::NO_FLOW,
        extra: PacketExtra::of_ext(ExtHeader {
            kind: HULA_HEADER,
            bytes: HULA_HEADER_BYTES,
            fields,
        }),
        ..Default::default()
    };
    p.ip.proto = PROTO_HULA;
    p.ip.ttl = 64;
    p
}

/// The HULA header of a packet, if it is a probe: (tor_id, min_util).
pub fn probe_header(pkt: &Packet) -> Option<(u32, u64)> {
    match pkt.ext() {
        Some(h) if pkt.ip.proto == PROTO_HULA && h.kind == HULA_HEADER => Some((
            HULA_TOR_ID.get(&h.fields) as u32,
            HULA_MIN_UTIL.get(&h.fields),
        )),
        _ => None,
    }
}

/// The program's handles and per-switch constants.
pub struct Hula {
    pub l3: L3,
    pub get_dst_tor: TableId,
    pub hula_mcast: TableId,
    pub ingress_port_info: TableId,
    pub nhop_upstream: TableId,
    /// crc32 over the 5-tuple: the flowlet slot and the fallback ECMP choice.
    pub flowlet_index: HashId,
    /// Per destination ToR: (path_util, best_hop, update_time).
    pub best_path: RegisterId,
    /// Last time a packet of the slot's flow was seen (ps mod 2^48).
    pub flowlet_time: FlowletTimer,
    /// The slot's destination ToR and next hop + 1 (0: none yet).
    pub flowlet_hop: RegisterId,
    /// Per (ToR, egress port): when the last probe for the ToR left (ns mod 2^32, 0 = never).
    pub last_sent: RegisterId,
    /// TX utilization per port (HULA section 4.2).
    pub tx_util: EstimatorId,
    /// Probes that moved `best_hop` to another port (read by the control
    /// plane; the experiments count them per tier).
    pub best_hop_changes: CounterId,
    /// Data packets (longer than a minimum frame) that started a flowlet.
    pub new_data_flowlets: CounterId,
    slot_mask: u32,
    n_ports: u32,
    /// This switch's own rack, if it is a ToR.
    rack: Option<u32>,
    tier: u8,
    flowlet_timeout_ps: u64,
    keepalive_ns: u64,
    suppress_ns: u64,
}

impl Hula {
    pub fn new(
        pipe: &mut Pipeline,
        params: &SchemeParams,
        info: &SwitchInfo,
    ) -> Result<Self, String> {
        let h = &params.hula;
        let slots = params.flowlet_slots;
        if !slots.is_power_of_two() {
            return Err(format!("flowlet_slots must be a power of two, got {slots}"));
        }
        if info.n_racks > h.tor_slots {
            return Err(format!(
                "scheme.hula.tor_slots ({}) is smaller than the number of ToRs ({})",
                h.tor_slots, info.n_racks
            ));
        }
        if h.tau().ps() < 2 * h.probe_interval.ps() {
            // HULA section 4.2: tau is at least twice the probe interval.
            return Err("scheme.hula.tau_us must be at least twice probe_interval_us".into());
        }
        let n_ports = info.n_ports.max(1) as u32;
        let l3 = L3::declare(pipe, HashAlgo::Crc32);
        let get_dst_tor = declare_get_dst_tor(pipe);
        let port_key = |name| KeyField {
            name,
            kind: MatchKind::Exact,
            width: 16,
        };
        let ingress_port_info = pipe.table(TableSpec {
            name: "ingress_port_info",
            keys: vec![port_key("standard_metadata.ingress_port")],
            actions: vec!["set_port_info"],
            size: 512,
            default_action: ActionCall::new(SET_PORT_INFO, [0, 0, 0]),
            direct_counter: false,
            direct_meter: None,
        });
        let nhop_upstream = pipe.table(TableSpec {
            name: "nhop_upstream",
            keys: vec![port_key("meta.nxt_hop")],
            actions: vec!["is_upstream", "not_upstream"],
            size: 512,
            default_action: ActionCall::bare(NOT_UPSTREAM),
            direct_counter: false,
            direct_meter: None,
        });
        let hula_mcast = pipe.table(TableSpec {
            name: "hula_mcast",
            keys: vec![port_key("standard_metadata.ingress_port")],
            actions: vec!["set_mcast_grp", "terminate"],
            size: 512,
            default_action: ActionCall::bare(TERMINATE),
            direct_counter: false,
            direct_meter: None,
        });
        let flowlet_index = pipe.hash(HashSpec {
            name: "flowlet_index",
            algo: HashAlgo::Crc32,
            fields: FIVE_TUPLE_FIELDS.to_vec(),
        });
        let best_path = pipe.register(RegisterSpec {
            name: "best_path",
            width: 56,
            size: h.tor_slots,
            holds: "per ToR: best_hop (16) | path_util (8) | update_time (32, ns)",
        });
        let flowlet_time = FlowletTimer::declare(
            pipe,
            slots,
            "last packet time of the slot's flow, ps mod 2^48",
        );
        let flowlet_hop = pipe.register(RegisterSpec {
            name: "flowlet_hop",
            width: 40,
            size: slots,
            holds: "destination ToR (24) | next hop + 1 (16, 0 = none) of the slot's flowlet",
        });
        let last_sent = pipe.register(RegisterSpec {
            name: "last_sent",
            width: 32,
            size: h.tor_slots * n_ports,
            holds: "per (ToR, egress port): last probe sent, ns mod 2^32 (0 = never)",
        });
        let tx_util = pipe.estimator(EstimatorSpec {
            name: "tx_util",
            ports: n_ports as u16,
            tau_ps: h.tau().ps(),
        });
        // Diagnostics only (nothing reads them in the data plane): one name
        // per tier, since the run's summary sums each counter over switches.
        let tier_ix = (info.tier as usize).min(TIER_NAMES - 1);
        let best_hop_changes = pipe.counter(CounterSpec {
            name: BEST_HOP_CHANGES[tier_ix],
            kind: CounterKind::Packets,
            size: 1,
        });
        let new_data_flowlets = pipe.counter(CounterSpec {
            name: NEW_DATA_FLOWLETS[tier_ix],
            kind: CounterKind::PacketsAndBytes,
            size: 1,
        });
        if info.rack.is_some() {
            // HULA section 4.1: every ToR sends a probe every probe interval.
            pipe.packet_generator(PktGenSpec {
                app: 0,
                period_ps: h.probe_interval.ps(),
                start_ps: 0,
            });
        }
        pipe.stages(5, 1);
        Ok(Hula {
            l3,
            get_dst_tor,
            hula_mcast,
            ingress_port_info,
            nhop_upstream,
            flowlet_index,
            best_path,
            flowlet_time,
            flowlet_hop,
            last_sent,
            tx_util,
            best_hop_changes,
            new_data_flowlets,
            slot_mask: slots - 1,
            n_ports,
            rack: info.rack,
            tier: info.tier,
            flowlet_timeout_ps: params.flowlet_timeout.ps(),
            keepalive_ns: ns32(h.keepalive()),
            suppress_ns: ns32(h.suppress_window()),
        })
    }

    pub fn agent(&self, params: &SchemeParams) -> HulaAgent {
        HulaAgent {
            routes: RouteAgent::new(self.l3),
            hula: HulaTables {
                get_dst_tor: self.get_dst_tor,
                hula_mcast: self.hula_mcast,
                ingress_port_info: self.ingress_port_info,
                nhop_upstream: self.nhop_upstream,
                best_path: self.best_path,
            },
            tau: params.hula.tau(),
            tor_slots: params.hula.tor_slots,
        }
    }

    /// The flowlet slot of a 5-tuple hash.
    pub fn slot(&self, h: u32) -> u32 {
        h & self.slot_mask
    }

    /// The shortest-path route (ipv4_lpm, then ecmp_group on the 5-tuple hash).
    fn route(&self, ctx: &mut Ctx<'_>, pkt: &Packet, sm: &mut StandardMetadata, h: u32) {
        let tier = self.tier;
        self.l3.route(ctx, pkt, sm, |_| l3::member_hash(h, tier));
    }

    /// HULA section 4.2 and Fig. 3b, lines 2-13: a probe from `in_port`.
    fn on_probe(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        tor: u32,
        probe_util: u64,
    ) {
        let in_port = sm.ingress_port;
        if in_port == PKTGEN_PORT {
            // HULA section 4.1: the ToR's own probe goes out on every uplink.
            sm.mcast_grp = origin_group(self.n_ports as u16);
            return;
        }
        // Stage 1: the TX utilization of the port the probe entered (the
        // link data to `tor` would leave on), quantized to 8 bits.
        let info = ctx.apply(self.ingress_port_info, [in_port as u64, 0, 0, 0]);
        let scale = info.action.params[0];
        let tx = quantize(ctx.read_estimator(self.tx_util, in_port), scale, UTIL_MAX);
        // Fig. 3b lines 4-5: max of the probe's and the link's utilization.
        let max_util = probe_util.max(tx);
        // Stage 2: the pair update (Fig. 3b lines 6-12; section 5.3 item 3:
        // a probe on the current best hop also refreshes its utilization;
        // section 4.4: an entry not refreshed within keepalive is replaced).
        let now = ns32(ctx.now());
        let keepalive = self.keepalive_ns;
        let (best, moved) = ctx.register(self.best_path, tor, |cell| {
            let old = BestPath::unpack(cell);
            let aged = now.wrapping_sub(old.time_ns) & TIME_MASK > keepalive;
            let new = if max_util < old.util || old.hop == in_port || aged {
                BestPath {
                    util: max_util,
                    hop: in_port,
                    time_ns: now,
                }
            } else {
                old
            };
            let moved = new.hop != old.hop && old.util < UTIL_INF;
            (new.pack(), (new.util, moved))
        });
        if moved {
            ctx.count(self.best_hop_changes, 0, sm.packet_length);
        }
        // Fig. 3b line 13: the probe carries this switch's best path onward.
        if let Some(h) = pkt.ext_mut() {
            HULA_MIN_UTIL.set(&mut h.fields, best);
        }
        // Stage 3: hula_mcast (section 4.1): replicate, or end the journey.
        let hit = ctx.apply(self.hula_mcast, [in_port as u64, 0, 0, 0]);
        match hit.action.action {
            SET_MCAST_GRP => sm.mcast_grp = hit.action.params[0] as u16,
            _ => sm.terminate(),
        }
    }

    /// HULA section 4.3 and Fig. 3b, lines 15-20: flowlet forwarding.
    fn on_data(&mut self, ctx: &mut Ctx<'_>, pkt: &mut Packet, sm: &mut StandardMetadata) {
        let tor_hit = ctx.apply(self.get_dst_tor, [pkt.ip.dst as u64, 0, 0, 0]);
        let h = ctx.hash(self.flowlet_index, &l3::five_tuple(pkt));
        if tor_hit.action.action != SET_DST_TOR {
            return self.route(ctx, pkt, sm, h);
        }
        let dst_tor = tor_hit.action.params[0] as u32;
        if Some(dst_tor) == self.rack {
            // Fig. 3a: send_to_host.
            return self.route(ctx, pkt, sm, h);
        }
        let port_info = ctx.apply(self.ingress_port_info, [sm.ingress_port as u64, 0, 0, 0]);
        let from_upstream = port_info.action.params[1] == 1;
        let slot = h & self.slot_mask;
        // Line 16: a new flowlet after a gap longer than the timeout.
        let gap = self.flowlet_time.gap(ctx, slot, sm);
        let new_flowlet = gap > self.flowlet_timeout_ps;
        if new_flowlet && sm.packet_length > MIN_FRAME_BYTES {
            ctx.count(self.new_data_flowlets, 0, sm.packet_length);
        }
        // Line 17: the best hop for the destination ToR; while no probe has
        // come (utilization at infinity, section 4.3) there is none.
        let best = BestPath::unpack(ctx.register_read(self.best_path, dst_tor));
        let best_hop = if best.util < UTIL_INF {
            best.hop as u64 + 1
        } else {
            0
        };
        // Lines 17-19: flowlet_hop keeps the flowlet's hop. NOTE: the cell
        // also holds the destination ToR, and a packet to another ToR that
        // hashes to the same slot starts a new flowlet: without this check a
        // collision would send it towards the other ToR, and a packet sent
        // the wrong way keeps its own (wrong) flowlet alive.
        let tag = (dst_tor as u64) << 16;
        let hop = ctx.register(self.flowlet_hop, slot, |cur| {
            let same_tor = cur & !0xffff == tag;
            let cell = if new_flowlet || !same_tor {
                tag | best_hop
            } else {
                cur
            };
            (cell, cell & 0xffff)
        });
        if hop == 0 {
            // Bootstrapping: no probe yet for this ToR; shortest paths.
            return self.route(ctx, pkt, sm, h);
        }
        let nxt_hop = (hop - 1) as PortNo;
        // NOTE: loop guard (docs/schemes/hula.md): a packet that came down
        // from an upstream switch keeps going down, so transient best hops
        // that point back up can never make a packet loop.
        if from_upstream {
            let up = ctx.apply(self.nhop_upstream, [nxt_hop as u64, 0, 0, 0]);
            if up.action.action == IS_UPSTREAM {
                return self.route(ctx, pkt, sm, h);
            }
        }
        sm.egress_spec = nxt_hop;
    }
}

impl DataPlane for Hula {
    fn ingress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        _meta: &mut UserMeta,
    ) {
        match probe_header(pkt) {
            Some((tor, util)) => self.on_probe(ctx, pkt, sm, tor, util),
            None => self.on_data(ctx, pkt, sm),
        }
    }

    fn egress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        _meta: &mut UserMeta,
    ) {
        let port = sm.egress_port;
        if let Some((tor, _)) = probe_header(pkt) {
            // HULA section 4.5: per ToR, at most one probe per link per
            // window (lastSent). The ToR's own probes leave one per interval
            // by construction and are not suppressed.
            if sm.ingress_port != PKTGEN_PORT {
                let now = ns32(ctx.now()).max(1);
                let window = self.suppress_ns;
                let index = tor * self.n_ports + port as u32;
                let send = ctx.register(self.last_sent, index, |last| {
                    if last == 0 || now.wrapping_sub(last) & TIME_MASK >= window {
                        (now, true)
                    } else {
                        (last, false)
                    }
                });
                if !send {
                    sm.terminate();
                    return;
                }
            }
        }
        // HULA section 4.2: the TX utilization estimator counts every packet
        // that leaves the port.
        ctx.update_estimator(self.tx_util, port, pkt.size);
    }

    fn generate(&mut self, _now: SimTime, _app: u8) -> Option<Packet> {
        self.rack.map(|r| probe(r, 0))
    }
}

/// Handles the agent writes to.
#[derive(Clone, Copy, Debug)]
struct HulaTables {
    get_dst_tor: TableId,
    hula_mcast: TableId,
    ingress_port_info: TableId,
    nhop_upstream: TableId,
    best_path: RegisterId,
}

/// The replication groups of HULA section 4.1, per ingress port: from a
/// downstream switch, to every other downstream switch and every upstream
/// one; from an upstream switch, to every downstream switch; a ToR's own
/// probes, to every uplink. Hosts never get probes; ports to a switch of the
/// same tier (custom topologies) neither send nor replicate them.
pub fn mcast_groups(info: &SwitchInfo) -> Vec<(PortNo, Vec<PortNo>)> {
    let tier = info.tier as i8;
    let ports = 0..info.n_ports;
    let peer = |p: PortNo| info.peer_tier.get(p as usize).copied().unwrap_or(-1);
    let down: Vec<PortNo> = ports
        .clone()
        .filter(|&p| peer(p) >= 0 && peer(p) < tier)
        .collect();
    let up: Vec<PortNo> = ports.clone().filter(|&p| peer(p) > tier).collect();
    let mut out = Vec::new();
    if info.rack.is_some() && !up.is_empty() {
        out.push((PKTGEN_PORT, up.clone()));
    }
    for p in ports {
        let t = peer(p);
        let group: Vec<PortNo> = if t >= 0 && t < tier {
            down.iter()
                .chain(up.iter())
                .copied()
                .filter(|&q| q != p)
                .collect()
        } else if t > tier {
            down.clone()
        } else {
            continue;
        };
        if !group.is_empty() {
            out.push((p, group));
        }
    }
    out
}

/// HULA's control agent: the shortest-path routes (for hosts, bootstrapping
/// and the loop guard), `get_dst_tor`, the multicast groups (set once, HULA
/// section 4.1), the per-port quantization scales, and `best_path` at
/// infinity (section 4.3).
pub struct HulaAgent {
    routes: RouteAgent,
    hula: HulaTables,
    tau: SimTime,
    tor_slots: u32,
}

impl ControlAgent for HulaAgent {
    fn on_start(&mut self, info: &SwitchInfo, cpu: &mut CpuApi<'_>) {
        self.routes.on_start(info, cpu);
        let t = self.hula;
        for w in dst_tor_entries(t.get_dst_tor, info) {
            cpu.write(w);
        }
        for (port, replicas) in mcast_groups(info) {
            let group = if port == PKTGEN_PORT {
                origin_group(info.n_ports.max(1))
            } else {
                port + 1
            };
            cpu.write(Write::MulticastGroup {
                group,
                replicas: replicas.iter().map(|&p| (p, 0)).collect(),
            });
            cpu.write(Write::TableEntry {
                table: t.hula_mcast,
                update: UpdateType::Insert,
                entry: TableEntry::new(
                    vec![matches::exact(port as u64)],
                    ActionCall::new(SET_MCAST_GRP, [group as u64, 0, 0]),
                ),
            });
        }
        for p in 0..info.n_ports {
            let rate = info.port_rates.get(p as usize).map_or(0, |r| r.bps());
            let peer = info.peer_tier.get(p as usize).copied().unwrap_or(-1);
            let upstream = peer > info.tier as i8;
            cpu.write(Write::TableEntry {
                table: t.ingress_port_info,
                update: UpdateType::Insert,
                entry: TableEntry::new(
                    vec![matches::exact(p as u64)],
                    ActionCall::new(
                        SET_PORT_INFO,
                        [util_scale(rate, self.tau, UTIL_MAX + 1), upstream as u64, 0],
                    ),
                ),
            });
            if upstream {
                cpu.write(Write::TableEntry {
                    table: t.nhop_upstream,
                    update: UpdateType::Insert,
                    entry: TableEntry::new(
                        vec![matches::exact(p as u64)],
                        ActionCall::bare(IS_UPSTREAM),
                    ),
                });
            }
        }
        let inf = BestPath {
            util: UTIL_INF,
            hop: 0,
            time_ns: 0,
        }
        .pack();
        for tor in 0..info.n_racks.min(self.tor_slots) {
            cpu.write(Write::Register {
                register: t.best_path,
                index: tor,
                value: inf,
            });
        }
    }

    fn on_port_status(&mut self, port: PortNo, up: bool, cpu: &mut CpuApi<'_>) {
        // The shortest-path groups (used only for bootstrapping and the loop
        // guard) follow the routing protocol; HULA's own state learns of the
        // failure from the absence of probes (section 4.4).
        self.routes.on_port_status(port, up, cpu);
    }
}

/// The registry's constructor (lib.rs, `REGISTRY`).
pub fn declare(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    _: pisanet_pisa::ControlPlaneConfig,
) -> Result<crate::Program, String> {
    let p = Hula::new(pipe, params, info)?;
    let a = p.agent(params);
    Ok((Box::new(p), Box::new(a)))
}
