//! `conga` and `conga_prime`: CONGA (Alizadeh et al., SIGCOMM 2014) for
//! 2-tier leaf-spine fabrics, and CONGA' as the HULA paper (section 6)
//! defines it for 3-tier ones: CONGA within a pod, flowlet ECMP across pods.
//!
//! ```text
//! header (overlay, 8 B):  src_leaf | lbtag, ce | fb_lbtag, fb_metric, fb_valid | flowlet hash
//!
//! source leaf, ingress (from a host):
//!   get_dst_tor -> own rack: ipv4_lpm to the host
//!   flowlet_time[h] -> gap                                          (stage 2)
//!   conga_prime, other pod: flowlet_id[h] new on a new flowlet, hash(flowlet id, 5-tuple)
//!        carried in the header; ipv4_lpm -> ecmp_group on it       (stages 3-4)
//!   otherwise: congestion_to_leaf_u[dst] and dre(uplink u) for each uplink u
//!        (unrolled), flowlet_port[h] := argmin_u max(...) on a new flowlet
//!   fb_ptr[dst] round robin -> congestion_from_leaf[dst, k] piggybacked
//! destination leaf, ingress (from the fabric):
//!   congestion_from_leaf[src, lbtag] := ce;  congestion_to_leaf_{fb_lbtag}[src] := fb_metric
//!   decapsulate, ipv4_lpm to the host
//! spine / aggregation, ingress: ipv4_lpm -> ecmp_group on the carried hash
//! egress, every port: dre estimator; ce := max(ce, dre quantized to 3 bits)
//! ```
//!
//! Choices where the CONGA or HULA papers leave room are in docs/schemes/hula.md.

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use crate::blocks::{
    declare_get_dst_tor, dst_tor_entries, ns32, quantize, util_scale, FlowletTimer,
    NEW_DATA_FLOWLETS, SET_DST_TOR,
};
use crate::l3::{self, RouteAgent, FIVE_TUPLE_FIELDS, L3};
use crate::{FlowletId, SchemeParams};
use pisanet_engine::{units, SimTime};
use pisanet_net::wire::{FieldDef, HeaderDef, Placement, ETHERTYPE_EXPERIMENTAL_1};
use pisanet_net::{ExtHeader, Packet, PortNo, MIN_FRAME_BYTES};
use pisanet_pisa::{
    ControlAgent, CounterId, CounterKind, CounterSpec, CpuApi, Ctx, DataPlane, EstimatorId,
    EstimatorSpec, HashAlgo, HashId, HashInput, HashSpec, Pipeline, RegisterId, RegisterSpec,
    StandardMetadata, SwitchInfo, TableId, UserMeta,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `ExtHeader::kind` of the CONGA overlay header.
pub const CONGA_HEADER: u16 = 0x434e;
/// Wire bytes of the overlay header (CONGA section 3.1 carries its fields in
/// the VXLAN header; we count its 8 bytes, not the outer Eth/IP/UDP).
pub const CONGA_HEADER_BYTES: u16 = 8;
/// Uplinks a leaf may have (the unrolled comparison of CONGA section 3.4).
pub const MAX_UPLINKS: usize = 8;
/// Bits of the congestion metric (CONGA section 3.2: Q = 3).
pub const METRIC_MAX: u64 = 7;
/// `lbtag` of a packet on a flowlet-ECMP path (conga_prime across pods):
/// the largest 4-bit tag, never an uplink index (< [`MAX_UPLINKS`]).
pub const LBTAG_ECMP: u64 = 0xf;

const TIME_MASK: u64 = 0xffff_ffff;

static CTL_NAMES: [&str; MAX_UPLINKS] = [
    "congestion_to_leaf_0",
    "congestion_to_leaf_1",
    "congestion_to_leaf_2",
    "congestion_to_leaf_3",
    "congestion_to_leaf_4",
    "congestion_to_leaf_5",
    "congestion_to_leaf_6",
    "congestion_to_leaf_7",
];

/// The overlay header (CONGA section 3.1, packet format: LBTag 4 bits, CE 3 bits,
/// FB_LBTag 4 bits, FB_Metric 3 bits), as the program keeps and writes it
/// (docs/headers.md).
pub const CONGA_SRC_LEAF: FieldDef = FieldDef::ext(
    "src_leaf",
    16,
    0,
    0,
    "source leaf (CONGA section 3.1 reads it from the outer IP source address)",
);
pub const CONGA_LBTAG: FieldDef = FieldDef::ext(
    "lbtag",
    4,
    1,
    0,
    "uplink the source leaf chose (section 3.1, LBTag); 15 = flowlet ECMP (conga_prime across pods)",
);
pub const CONGA_CE: FieldDef = FieldDef::ext(
    "ce",
    3,
    1,
    8,
    "congestion extent: the largest quantized DRE along the path so far (section 3.2, CE)",
);
pub const CONGA_FB_LBTAG: FieldDef = FieldDef::ext(
    "fb_lbtag",
    4,
    2,
    0,
    "piggybacked feedback: uplink of the path from the receiver's leaf (section 3.3, FB_LBTag)",
);
pub const CONGA_FB_METRIC: FieldDef = FieldDef::ext(
    "fb_metric",
    3,
    2,
    8,
    "piggybacked feedback: that path's congestion metric (section 3.3, FB_Metric)",
);
pub const CONGA_FB_VALID: FieldDef = FieldDef::ext(
    "fb_valid",
    1,
    2,
    16,
    "1 when fb_lbtag and fb_metric carry feedback",
);
pub const CONGA_HASH: FieldDef = FieldDef::ext(
    "hash",
    32,
    3,
    0,
    "flowlet hash every switch picks its ECMP member with (conga_prime across pods)",
);
pub static CONGA_WIRE: HeaderDef = HeaderDef {
    name: "conga",
    title: "CONGA overlay",
    schemes: "conga, conga_prime",
    kind: CONGA_HEADER,
    bytes: CONGA_HEADER_BYTES,
    placement: Placement::EtherType(ETHERTYPE_EXPERIMENTAL_1),
    doc: "Pushed by the source leaf on packets to another leaf, popped by the destination leaf. \
          CONGA carries these fields in a VXLAN header; pisanet counts only these 8 bytes, so the \
          frame puts them between Ethernet and IPv4 (IEEE local experimental EtherType) instead \
          of an outer Ethernet/IPv4/UDP.",
    fields: &[
        CONGA_SRC_LEAF,
        CONGA_LBTAG,
        CONGA_CE,
        CONGA_FB_LBTAG,
        CONGA_FB_METRIC,
        CONGA_FB_VALID,
        FieldDef::reserved(1),
        CONGA_HASH,
    ],
};

/// Parameters of `conga` and `conga_prime` (`[scheme.conga]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CongaParams {
    /// Time constant of the DRE (us; CONGA: T_dre / alpha = 20 us / 0.1).
    #[serde(rename = "tau_us", with = "units::us")]
    #[schemars(with = "f64", range(min = 0.01, max = 1e6), extend("x-unit" = "us"))]
    pub tau: SimTime,
    /// Congestion-To-Leaf entries not refreshed for this long count as uncongested (us; below 4 s: 32-bit ns timestamps).
    #[serde(rename = "age_us", with = "units::us")]
    #[schemars(with = "f64", range(min = 0.01, max = 3.9e6), extend("x-unit" = "us"))]
    pub age: SimTime,
    /// Leaves the program's per-leaf registers hold.
    #[schemars(range(min = 1, max = 65536))]
    pub leaf_slots: u32,
}

impl Default for CongaParams {
    fn default() -> Self {
        CongaParams {
            tau: SimTime::from_us(200),
            age: SimTime::from_us(10_000),
            leaf_slots: 1024,
        }
    }
}

impl CongaParams {
    /// The checks between keys (none beyond the ranges in the schema).
    pub fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// The overlay header's fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CongaHeader {
    pub src_leaf: u32,
    /// Uplink index the source leaf chose, or [`LBTAG_ECMP`].
    pub lbtag: u64,
    /// Congestion extent along the path so far (CONGA section 3.2).
    pub ce: u64,
    /// Piggybacked feedback: for paths from the receiver of this packet to
    /// its sender, uplink `fb_lbtag` has metric `fb_metric`.
    pub fb: Option<(u64, u64)>,
    /// The flowlet hash every switch uses (conga_prime across pods).
    pub hash: u32,
}

impl CongaHeader {
    pub fn of(pkt: &Packet) -> Option<CongaHeader> {
        let h = pkt.ext().filter(|h| h.kind == CONGA_HEADER)?;
        let f = &h.fields;
        Some(CongaHeader {
            src_leaf: CONGA_SRC_LEAF.get(f) as u32,
            lbtag: CONGA_LBTAG.get(f),
            ce: CONGA_CE.get(f),
            fb: (CONGA_FB_VALID.get(f) == 1)
                .then_some((CONGA_FB_LBTAG.get(f), CONGA_FB_METRIC.get(f))),
            hash: CONGA_HASH.get(f) as u32,
        })
    }

    fn fields(&self) -> [u64; 4] {
        let mut f = [0; 4];
        CONGA_SRC_LEAF.set(&mut f, self.src_leaf as u64);
        CONGA_LBTAG.set(&mut f, self.lbtag);
        CONGA_CE.set(&mut f, self.ce);
        if let Some((tag, metric)) = self.fb {
            CONGA_FB_LBTAG.set(&mut f, tag);
            CONGA_FB_METRIC.set(&mut f, metric);
            CONGA_FB_VALID.set(&mut f, 1);
        }
        CONGA_HASH.set(&mut f, self.hash as u64);
        f
    }

    /// Encapsulates: the packet grows by the header.
    pub fn push(&self, pkt: &mut Packet) {
        pkt.size += CONGA_HEADER_BYTES as u32;
        pkt.set_ext(Some(ExtHeader {
            kind: CONGA_HEADER,
            bytes: CONGA_HEADER_BYTES,
            fields: self.fields(),
        }));
    }

    fn write(&self, pkt: &mut Packet) {
        if let Some(h) = pkt.ext_mut() {
            h.fields = self.fields();
        }
    }

    /// Decapsulates.
    pub fn pop(pkt: &mut Packet) {
        if pkt.take_ext().is_some() {
            pkt.size -= CONGA_HEADER_BYTES as u32;
        }
    }
}

/// A congestion-to-leaf cell: metric (3 bits) and update time (ns mod 2^32).
fn ctl_pack(metric: u64, time_ns: u64) -> u64 {
    (metric << 32) | (time_ns & TIME_MASK)
}

pub struct Conga {
    pub l3: L3,
    pub get_dst_tor: TableId,
    pub flowlet_index: HashId,
    /// crc32 over (flowlet id, 5-tuple): conga_prime's cross-pod hash.
    pub flowlet_hash: HashId,
    pub flowlet_time: FlowletTimer,
    /// The slot's uplink index + 1 (0 = none), CONGA's flowlet table.
    pub flowlet_port: RegisterId,
    /// The slot's flowlet id (conga_prime across pods).
    pub flowlet_id: RegisterId,
    /// Congestion-To-Leaf, one array per uplink: metric and update time per leaf.
    pub congestion_to_leaf: Vec<RegisterId>,
    /// Congestion-From-Leaf: per (source leaf, lbtag), the last CE seen.
    pub congestion_from_leaf: RegisterId,
    /// Per destination leaf: the next lbtag to feed back (round robin).
    pub fb_ptr: RegisterId,
    /// The discounting rate estimator of every port (CONGA section 3.2).
    pub dre: EstimatorId,
    /// Data packets (longer than a minimum frame) that started a flowlet at
    /// the source leaf (diagnostics, read by the control plane).
    pub new_data_flowlets: CounterId,
    /// Whether traffic to other pods takes flowlet ECMP (conga_prime).
    prime: bool,
    uplinks: Vec<PortNo>,
    /// Quantization scale of each port's DRE.
    scales: Vec<u64>,
    rack: Option<u32>,
    pod: Option<u32>,
    rack_pods: std::sync::Arc<[u32]>,
    /// The tier passed to [`l3::member_hash`] (0 everywhere when
    /// `ecmp_hash_per_tier` is off).
    hash_tier: u8,
    slot_mask: u32,
    flowlet_timeout_ps: u64,
    /// How a new cross-pod flowlet gets its id (`scheme.flowlet_id`).
    id_mode: FlowletId,
    age_ns: u64,
}

impl Conga {
    pub fn new(
        pipe: &mut Pipeline,
        params: &SchemeParams,
        info: &SwitchInfo,
        prime: bool,
    ) -> Result<Self, String> {
        let c = &params.conga;
        if !prime && info.pod.is_some() {
            return Err("conga is for 2-tier leaf-spine topologies; use conga_prime on 3-tier ones (HULA section 6)".into());
        }
        let slots = params.flowlet_slots;
        if !slots.is_power_of_two() {
            return Err(format!("flowlet_slots must be a power of two, got {slots}"));
        }
        let leaf = info.rack.is_some();
        let uplinks = if leaf {
            info.uplinks.clone()
        } else {
            Vec::new()
        };
        if uplinks.len() > MAX_UPLINKS {
            return Err(format!(
                "a CONGA leaf has at most {MAX_UPLINKS} uplinks, {} has {}",
                info.name,
                uplinks.len()
            ));
        }
        let leaves = c.leaf_slots;
        if info.n_racks > leaves {
            return Err(format!(
                "scheme.conga.leaf_slots ({leaves}) is smaller than the number of leaves ({})",
                info.n_racks
            ));
        }
        let l3 = L3::declare(pipe, HashAlgo::Crc32);
        let get_dst_tor = declare_get_dst_tor(pipe);
        let flowlet_index = pipe.hash(HashSpec {
            name: "flowlet_index",
            algo: HashAlgo::Crc32,
            fields: FIVE_TUPLE_FIELDS.to_vec(),
        });
        let mut fields = vec![("meta.flowlet_id", 16)];
        fields.extend(FIVE_TUPLE_FIELDS);
        let flowlet_hash = pipe.hash(HashSpec {
            name: "flowlet_hash",
            algo: HashAlgo::Crc32,
            fields,
        });
        let flowlet_time = FlowletTimer::declare(
            pipe,
            slots,
            "last packet time of the slot's flow, ps mod 2^48",
        );
        let flowlet_port = pipe.register(RegisterSpec {
            name: "flowlet_port",
            width: 4,
            size: slots,
            holds: "uplink index + 1 of the slot's flowlet (0 = none)",
        });
        let flowlet_id = pipe.register(RegisterSpec {
            name: "flowlet_id",
            width: 16,
            size: slots,
            holds: "flowlet id of the slot's flow, renewed after each idle gap",
        });
        let congestion_to_leaf = (0..uplinks.len().max(1))
            .map(|u| {
                pipe.register(RegisterSpec {
                    name: CTL_NAMES[u],
                    width: 35,
                    size: leaves,
                    holds:
                        "per destination leaf, via this uplink: metric (3) | update time (32, ns)",
                })
            })
            .collect();
        let congestion_from_leaf = pipe.register(RegisterSpec {
            name: "congestion_from_leaf",
            width: 3,
            size: leaves * MAX_UPLINKS as u32,
            holds: "per (source leaf, lbtag): CE of the last packet",
        });
        let fb_ptr = pipe.register(RegisterSpec {
            name: "fb_ptr",
            width: 3,
            size: leaves,
            holds: "per destination leaf: next lbtag to feed back",
        });
        let n_ports = info.n_ports.max(1);
        let dre = pipe.estimator(EstimatorSpec {
            name: "dre",
            ports: n_ports,
            tau_ps: c.tau.ps(),
        });
        let scales = (0..n_ports)
            .map(|p| {
                let rate = info.port_rates.get(p as usize).map_or(0, |r| r.bps());
                util_scale(rate, c.tau, METRIC_MAX + 1)
            })
            .collect();
        let new_data_flowlets = pipe.counter(CounterSpec {
            name: NEW_DATA_FLOWLETS[0],
            kind: CounterKind::PacketsAndBytes,
            size: 1,
        });
        pipe.stages(6, 1);
        Ok(Conga {
            l3,
            get_dst_tor,
            flowlet_index,
            flowlet_hash,
            flowlet_time,
            flowlet_port,
            flowlet_id,
            congestion_to_leaf,
            congestion_from_leaf,
            fb_ptr,
            dre,
            new_data_flowlets,
            prime,
            uplinks,
            scales,
            rack: info.rack,
            pod: info.pod,
            rack_pods: info.rack_pods.clone(),
            hash_tier: l3::hash_tier(info.tier, params.ecmp_hash_per_tier),
            slot_mask: slots - 1,
            flowlet_timeout_ps: params.flowlet_timeout.ps(),
            id_mode: params.flowlet_id,
            age_ns: ns32(c.age),
        })
    }

    pub fn agent(&self) -> CongaAgent {
        CongaAgent {
            routes: RouteAgent::new(self.l3),
            get_dst_tor: self.get_dst_tor,
        }
    }

    pub fn slot(&self, h: u32) -> u32 {
        h & self.slot_mask
    }

    /// ipv4_lpm, then ecmp_group on `h`.
    fn route(&self, ctx: &mut Ctx<'_>, pkt: &Packet, sm: &mut StandardMetadata, h: u32) {
        let tier = self.hash_tier;
        self.l3.route(ctx, pkt, sm, |_| l3::member_hash(h, tier));
    }

    /// The quantized DRE of a port (CONGA section 3.2).
    fn dre_q(&self, ctx: &mut Ctx<'_>, port: PortNo) -> u64 {
        let scale = self.scales.get(port as usize).copied().unwrap_or(0);
        quantize(ctx.read_estimator(self.dre, port), scale, METRIC_MAX)
    }

    /// The source leaf: a packet from a host to another leaf.
    fn at_source_leaf(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        me: u32,
        dst_leaf: u32,
    ) {
        let h5 = ctx.hash(self.flowlet_index, &l3::five_tuple(pkt));
        let slot = h5 & self.slot_mask;
        let gap = self.flowlet_time.gap(ctx, slot, sm);
        let new_flowlet = gap > self.flowlet_timeout_ps;
        if new_flowlet && sm.packet_length > MIN_FRAME_BYTES {
            ctx.count(self.new_data_flowlets, 0, sm.packet_length);
        }
        let cross_pod = self.prime
            && self.rack_pods.get(dst_leaf as usize).copied() != self.pod
            && self.pod.is_some();
        if cross_pod {
            // HULA section 6: flowlet ECMP across pods; the hash of the
            // flowlet id and the 5-tuple is used by every switch after.
            let id = self.id_mode.update(ctx, self.flowlet_id, slot, new_flowlet);
            let input = l3::push_five_tuple(HashInput::new().u16(id), pkt);
            let hash = ctx.hash(self.flowlet_hash, &input);
            CongaHeader {
                src_leaf: me,
                lbtag: LBTAG_ECMP,
                hash,
                ..Default::default()
            }
            .push(pkt);
            return self.route(ctx, pkt, sm, hash);
        }
        // CONGA section 3.4: for a new flowlet, the uplink minimizing the
        // larger of the local DRE and the Congestion-To-Leaf metric
        // (unrolled over the uplinks: one array and one estimator each).
        let now = ns32(ctx.now());
        let n = self.uplinks.len();
        if n == 0 {
            return self.route(ctx, pkt, sm, h5);
        }
        let mut metric = [u64::MAX; MAX_UPLINKS];
        for (u, m) in metric.iter_mut().enumerate().take(n) {
            let cell = ctx.register_read(self.congestion_to_leaf[u], dst_leaf);
            // Entries not refreshed within `age` count as uncongested.
            let remote = if now.wrapping_sub(cell & TIME_MASK) & TIME_MASK > self.age_ns {
                0
            } else {
                cell >> 32
            };
            let local = self.dre_q(ctx, self.uplinks[u]);
            *m = remote.max(local);
        }
        // Ties: the first in a random rotation (CONGA: random among the best).
        let start = ctx.random(0, n as u32 - 1) as usize;
        let mut best = start;
        for k in 1..n {
            let u = (start + k) % n;
            if metric[u] < metric[best] {
                best = u;
            }
        }
        let min = metric[best];
        let chosen = ctx.register(self.flowlet_port, slot, |cur| {
            let keep = cur != 0 && (cur as usize) <= n && metric[cur as usize - 1] == min;
            let port = if !new_flowlet && cur != 0 {
                cur
            } else if keep {
                // CONGA: among equally good uplinks, the cached one.
                cur
            } else {
                best as u64 + 1
            };
            (port, port)
        }) as usize
            - 1;
        // CONGA section 3.3: piggyback one Congestion-From-Leaf entry for the
        // destination leaf, round robin over its lbtags.
        let k = ctx.register(self.fb_ptr, dst_leaf, |p| {
            let next = if p + 1 >= n as u64 { 0 } else { p + 1 };
            (next, p)
        });
        let fb_metric = ctx.register_read(
            self.congestion_from_leaf,
            dst_leaf * MAX_UPLINKS as u32 + k as u32,
        );
        CongaHeader {
            src_leaf: me,
            lbtag: chosen as u64,
            ce: 0,
            fb: Some((k, fb_metric)),
            hash: h5,
        }
        .push(pkt);
        sm.egress_spec = self.uplinks[chosen];
    }

    /// The destination leaf: record the path's CE and the feedback, then
    /// decapsulate (CONGA section 3.3).
    fn at_destination_leaf(&mut self, ctx: &mut Ctx<'_>, pkt: &mut Packet, hdr: CongaHeader) {
        if hdr.lbtag != LBTAG_ECMP && (hdr.lbtag as usize) < MAX_UPLINKS {
            let index = hdr.src_leaf * MAX_UPLINKS as u32 + hdr.lbtag as u32;
            ctx.register_write(self.congestion_from_leaf, index, hdr.ce.min(METRIC_MAX));
        }
        if let Some((tag, m)) = hdr.fb {
            // One branch per uplink: only the array of `tag` is accessed.
            if let Some(&reg) = self.congestion_to_leaf.get(tag as usize) {
                if (tag as usize) < self.uplinks.len() {
                    let now = ns32(ctx.now());
                    ctx.register_write(reg, hdr.src_leaf, ctl_pack(m.min(METRIC_MAX), now));
                }
            }
        }
        CongaHeader::pop(pkt);
    }
}

impl DataPlane for Conga {
    fn ingress(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &mut Packet,
        sm: &mut StandardMetadata,
        _meta: &mut UserMeta,
    ) {
        let hdr = CongaHeader::of(pkt);
        let Some(me) = self.rack else {
            // Spine or aggregation: route, hashing on the carried hash.
            let h = match hdr {
                Some(hdr) => hdr.hash,
                None => ctx.hash(self.flowlet_index, &l3::five_tuple(pkt)),
            };
            return self.route(ctx, pkt, sm, h);
        };
        let tor = ctx.apply(self.get_dst_tor, [pkt.ip.dst as u64, 0, 0, 0]);
        let dst_leaf = (tor.action.action == SET_DST_TOR).then_some(tor.action.params[0] as u32);
        if let Some(hdr) = hdr {
            self.at_destination_leaf(ctx, pkt, hdr);
        }
        match dst_leaf {
            Some(d) if d != me => self.at_source_leaf(ctx, pkt, sm, me, d),
            _ => {
                let h = ctx.hash(self.flowlet_index, &l3::five_tuple(pkt));
                self.route(ctx, pkt, sm, h)
            }
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
        ctx.update_estimator(self.dre, port, pkt.size);
        // CONGA section 3.2: each hop raises CE to its egress port's metric.
        if let Some(mut hdr) = CongaHeader::of(pkt) {
            if hdr.lbtag != LBTAG_ECMP {
                let q = self.dre_q(ctx, port);
                if q > hdr.ce {
                    hdr.ce = q;
                    hdr.write(pkt);
                }
            }
        }
    }
}

/// CONGA's control agent: shortest-path routes and `get_dst_tor`.
pub struct CongaAgent {
    routes: RouteAgent,
    get_dst_tor: TableId,
}

impl ControlAgent for CongaAgent {
    fn on_start(&mut self, info: &SwitchInfo, cpu: &mut CpuApi<'_>) {
        self.routes.on_start(info, cpu);
        for w in dst_tor_entries(self.get_dst_tor, info) {
            cpu.write(w);
        }
    }

    fn on_port_status(&mut self, port: PortNo, up: bool, cpu: &mut CpuApi<'_>) {
        self.routes.on_port_status(port, up, cpu);
    }
}

/// The registry's constructor of `conga` (lib.rs, `REGISTRY`).
pub fn declare(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    _: pisanet_pisa::ControlPlaneConfig,
) -> Result<crate::Program, String> {
    let p = Conga::new(pipe, params, info, false)?;
    let a = p.agent();
    Ok((Box::new(p), Box::new(a)))
}

/// The registry's constructor of `conga_prime` (lib.rs, `REGISTRY`).
pub fn declare_prime(
    pipe: &mut Pipeline,
    params: &SchemeParams,
    info: &SwitchInfo,
    _: pisanet_pisa::ControlPlaneConfig,
) -> Result<crate::Program, String> {
    let p = Conga::new(pipe, params, info, true)?;
    let a = p.agent();
    Ok((Box::new(p), Box::new(a)))
}
