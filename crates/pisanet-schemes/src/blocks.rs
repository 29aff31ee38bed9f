//! Building blocks that several switch programs share, each written once:
//! flowlet detection, the destination-ToR lookup, utilization quantization
//! and timestamp widths. No scheme imports another scheme; they import these.
//!
//! Data-plane code here obeys the same rules as the programs (no float, no
//! division); helpers that run in the control plane say so.

#![deny(clippy::float_arithmetic, clippy::integer_division)]

use pisanet_engine::SimTime;
use pisanet_pisa::{
    matches, ActionCall, ActionId, Ctx, KeyField, MatchKind, Pipeline, RegisterId, RegisterSpec,
    StandardMetadata, SwitchInfo, TableEntry, TableId, TableSpec, UpdateType, Write,
};

/// Width of flowlet timestamps (v1model's 48-bit timestamps).
pub const FLOWLET_TIME_BITS: u8 = 48;
pub const FLOWLET_TIME_MASK: u64 = (1 << FLOWLET_TIME_BITS) - 1;
/// 32-bit nanosecond timestamps (`ns32`).
const NS32_MASK: u64 = 0xffff_ffff;

/// Flowlet detection: a register of last-seen times per flow slot, and the
/// idle gap since the slot's previous packet (one read-modify-write per
/// pass; the caller compares the gap with its timeout, `>` or `>=` as its
/// paper writes it).
#[derive(Clone, Copy, Debug)]
pub struct FlowletTimer {
    /// Last time a packet of the slot's flow was seen (ps mod 2^48).
    pub register: RegisterId,
}

impl FlowletTimer {
    /// Declares `flowlet_time` with `slots` cells; `holds` documents it.
    pub fn declare(pipe: &mut Pipeline, slots: u32, holds: &'static str) -> Self {
        FlowletTimer {
            register: pipe.register(RegisterSpec {
                name: "flowlet_time",
                width: FLOWLET_TIME_BITS,
                size: slots,
                holds,
            }),
        }
    }

    /// Records this packet's arrival in `slot` and returns the gap since
    /// the previous one (wrapping at 2^48).
    #[inline]
    pub fn gap(&self, ctx: &mut Ctx<'_>, slot: u32, sm: &StandardMetadata) -> u64 {
        let now = sm.ingress_global_timestamp.ps() & FLOWLET_TIME_MASK;
        ctx.register(self.register, slot, |last| {
            (now, now.wrapping_sub(last) & FLOWLET_TIME_MASK)
        })
    }
}

/// Names of the new-flowlet counters of data packets, by tier (0 = ToR).
pub static NEW_DATA_FLOWLETS: [&str; 3] = [
    "new_data_flowlets_tier0",
    "new_data_flowlets_tier1",
    "new_data_flowlets_tier2",
];

/// Actions of `get_dst_tor`.
pub const SET_DST_TOR: ActionId = ActionId(0);
pub const NO_TOR: ActionId = ActionId(1);

/// A time in nanoseconds mod 2^32, as a 32-bit timestamp register holds it.
/// NOTE: picoseconds to nanoseconds is a shift-free division by a constant;
/// hardware timestamps are in nanoseconds already, so this is the unit
/// conversion of the model, not an operation of the program.
#[allow(clippy::integer_division)]
pub fn ns32(t: SimTime) -> u64 {
    (t.ps() / 1000) & NS32_MASK
}

/// `get_dst_tor`: LPM on the destination address to the destination ToR
/// (HULA Fig. 3a). Shared with CONGA (the destination leaf).
pub fn declare_get_dst_tor(pipe: &mut Pipeline) -> TableId {
    pipe.table(TableSpec {
        name: "get_dst_tor",
        keys: vec![KeyField {
            name: "hdr.ipv4.dst",
            kind: MatchKind::Lpm,
            width: 32,
        }],
        actions: vec!["set_dst_tor", "no_tor"],
        size: 4096,
        default_action: ActionCall::bare(NO_TOR),
        direct_counter: false,
        direct_meter: None,
    })
}

/// The entries of `get_dst_tor`: each rack's /24 (from
/// `SwitchInfo::rack_prefixes`, as the routes are prefix routes).
pub fn dst_tor_entries(table: TableId, info: &SwitchInfo) -> Vec<Write> {
    info.rack_prefixes
        .iter()
        .enumerate()
        .map(|(rack, &prefix)| Write::TableEntry {
            table,
            update: UpdateType::Insert,
            entry: TableEntry::new(
                vec![matches::lpm((prefix & 0xffff_ff00) as u64, 24)],
                ActionCall::new(SET_DST_TOR, [rack as u64, 0, 0]),
            ),
        })
        .collect()
}

/// Scale that quantizes an estimator of a port to `levels - 1` at line rate:
/// `q = min((U * scale) >> 32, levels - 1)`, with U in bytes and C x tau the
/// estimator's steady state at line rate (HULA section 4.2).
/// Computed by the control plane (it may divide; the data plane only
/// multiplies and shifts).
#[allow(clippy::integer_division)]
pub fn util_scale(rate_bps: u64, tau: SimTime, levels: u64) -> u64 {
    let full_bytes = (rate_bps as u128 * tau.ps() as u128 / 8_000_000_000_000u128).max(1);
    ((levels as u128) << 32)
        .checked_div(full_bytes)
        .unwrap_or(0) as u64
}

/// Quantizes an estimator value with a scale from [`util_scale`].
#[inline]
pub fn quantize(u: u64, scale: u64, max: u64) -> u64 {
    (((u as u128 * scale as u128) >> 32) as u64).min(max)
}

/// A probability that grows with the egress queue depth, as congestion
/// points use it (P4QCN eq. 1, DCQCN's RED-like marking): a range-match
/// table on `enq_qdepth` gives a threshold, `random(0, 2^16 - 1)` below it
/// is a yes. No division or floating point in the data plane: the control
/// plane computes one threshold per depth of the ramp ([`Self::entries`]).
#[derive(Clone, Copy, Debug)]
pub struct DepthProbability {
    pub table: TableId,
}

/// Actions of a [`DepthProbability`] table.
pub const SET_PROB: ActionId = ActionId(0);
/// A threshold of this value is "always" (the random number is at most 2^16 - 1).
pub const PROB_ONE: u64 = 1 << 16;
/// Entries a [`DepthProbability`] table holds: at most this many depths on the ramp.
pub const DEPTH_PROB_SIZE: u32 = 4096;

impl DepthProbability {
    /// Declares the table `name` (default action: probability 0).
    pub fn declare(pipe: &mut Pipeline, name: &'static str) -> Self {
        DepthProbability {
            table: pipe.table(TableSpec {
                name,
                keys: vec![KeyField {
                    name: "standard_metadata.enq_qdepth",
                    kind: MatchKind::Range,
                    width: 32,
                }],
                actions: vec!["set_prob"],
                size: DEPTH_PROB_SIZE,
                default_action: ActionCall::new(SET_PROB, [0, 0, 0]),
                direct_counter: false,
                direct_meter: None,
            }),
        }
    }

    /// Whether a packet that found `q` packets in its queue is picked.
    #[inline]
    pub fn decide(&self, ctx: &mut Ctx<'_>, q: u32) -> bool {
        let hit = ctx.apply(self.table, [q as u64, 0, 0, 0]);
        let threshold = hit.action.params[0];
        if threshold == 0 {
            return false;
        }
        if threshold >= PROB_ONE {
            return true;
        }
        (ctx.random(0, (PROB_ONE - 1) as u32) as u64) < threshold
    }

    /// The entries (control plane): probability `pmax_pct`% x (q - lo) /
    /// (hi - lo) for each depth q with lo < q < `always_from`, and 1 from
    /// `always_from` on; below and at `lo` the default, 0. `hi > lo`
    /// unless the ramp is empty (`always_from = lo + 1`).
    #[allow(clippy::integer_division)]
    pub fn entries(&self, lo: u32, hi: u32, always_from: u32, pmax_pct: u32) -> Vec<Write> {
        let entry = |q_lo: u32, q_hi: u32, p: u64| Write::TableEntry {
            table: self.table,
            update: UpdateType::Insert,
            entry: TableEntry::new(
                vec![matches::range(q_lo as u64, q_hi as u64)],
                ActionCall::new(SET_PROB, [p.min(PROB_ONE), 0, 0]),
            ),
        };
        let mut out = Vec::new();
        let span = hi.saturating_sub(lo).max(1) as u64;
        for q in lo.saturating_add(1)..always_from {
            // Rounded to the nearest 1/65536.
            let num = PROB_ONE * pmax_pct as u64 * (q - lo) as u64;
            let den = 100 * span;
            out.push(entry(q, q, (num + den / 2) / den));
        }
        out.push(entry(always_from, u32::MAX, PROB_ONE));
        out
    }
}

/// CoDel's parameters (`[scheme.codel]`; RFC 8289 section 4.2, as P4-CoDel
/// uses them): `codel` reads both; `p4qos_codel` and `p4qos_interval` read
/// the interval (their target is P4QoS's).
#[derive(
    Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields, default)]
pub struct CodelParams {
    /// Acceptable standing queueing delay (us; RFC 8289: 5 ms).
    #[serde(rename = "target_us", with = "pisanet_engine::units::us")]
    #[schemars(with = "f64", range(min = 0.001, max = 1e7), extend("x-unit" = "us"))]
    pub target: SimTime,
    /// The interval (us; RFC 8289: 100 ms), the control law's start.
    #[serde(rename = "interval_us", with = "pisanet_engine::units::us")]
    #[schemars(with = "f64", range(min = 0.001, max = 1e8), extend("x-unit" = "us"))]
    pub interval: SimTime,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            target: SimTime::from_ms(5),
            interval: SimTime::from_ms(100),
        }
    }
}

/// Entries of the control-law lookup table (drop counts 0..LAW_ENTRIES; a
/// larger count uses the last entry).
pub const LAW_ENTRIES: usize = 256;

/// CoDel's control law, interval / sqrt(count), as P4-CoDel computes it: a
/// lookup table on the drop count, filled by the control plane (which may
/// take square roots). In the data plane it is read inside the register
/// action that holds the count, as Tofino's register ALU reads its math
/// unit's table. Entry 0 is the interval itself.
#[derive(Clone, Debug)]
pub struct ControlLaw {
    /// ns, by count.
    pub delta_ns: Vec<u64>,
}

impl ControlLaw {
    /// Control plane: interval / sqrt(n) for n = 1..LAW_ENTRIES (integer
    /// square root: the largest r with r*r <= n * 2^62, so interval * 2^31 / r).
    #[allow(clippy::integer_division, clippy::float_arithmetic)]
    pub fn new(interval: SimTime) -> ControlLaw {
        let iv = ns_u64(interval);
        let delta_ns = (0..LAW_ENTRIES as u64)
            .map(|n| {
                if n <= 1 {
                    return iv;
                }
                let x = (n as u128) << 62;
                let mut r = (x as f64).sqrt() as u128;
                while r * r > x {
                    r -= 1;
                }
                while (r + 1) * (r + 1) <= x {
                    r += 1;
                }
                ((iv as u128) << 31).checked_div(r).unwrap_or(0) as u64
            })
            .collect();
        ControlLaw { delta_ns }
    }

    /// The control law's step after `count` drops (ns).
    #[inline]
    pub fn delta(&self, count: u64) -> u64 {
        self.delta_ns[(count as usize).min(LAW_ENTRIES - 1)]
    }
}

/// A time in whole nanoseconds (the model's unit conversion; hardware
/// timestamps are nanoseconds).
#[allow(clippy::integer_division)]
pub fn ns_u64(t: SimTime) -> u64 {
    t.ps() / 1000
}

/// CoDel (RFC 8289 section 5) at a port's dequeue, as P4-CoDel runs it in
/// egress: two registers per port, each read-modify-written once per pass,
/// and the control law from [`ControlLaw`]. The RFC's loop that drops
/// several packets at one dequeue becomes one signal per packet (no loops).
#[derive(Clone, Debug)]
pub struct Codel {
    /// first_above_time per port (ns; 0 = not above).
    pub first_above: RegisterId,
    /// dropping (bit 63) | count (bits 48..63) | drop_next (ns, 48 bits).
    pub state: RegisterId,
    pub law: ControlLaw,
    interval_ns: u64,
}

const CODEL_DROPPING: u64 = 1 << 63;
const CODEL_COUNT_SHIFT: u32 = 48;
const CODEL_COUNT_MASK: u64 = (1 << 15) - 1;
const CODEL_TIME_MASK: u64 = (1 << 48) - 1;

impl Codel {
    pub fn declare(pipe: &mut Pipeline, ports: u32, interval: SimTime) -> Codel {
        Codel {
            first_above: pipe.register(RegisterSpec {
                name: "codel_first_above",
                width: 64,
                size: ports,
                holds: "CoDel first_above_time, ns (RFC 8289 section 5.3)",
            }),
            state: pipe.register(RegisterSpec {
                name: "codel_state",
                width: 64,
                size: ports,
                holds: "CoDel dropping (1 bit), count (15 bits), drop_next (48 bits, ns)",
            }),
            law: ControlLaw::new(interval),
            interval_ns: ns_u64(interval),
        }
    }

    /// One dequeue at `port`: true if this packet is to be dropped (or
    /// marked). `sojourn_ns` is its queueing delay, `target_ns` the target,
    /// `queue_empty` whether the queue is empty after it (RFC 8289: no drop
    /// with less than one packet queued).
    pub fn dequeue(
        &self,
        ctx: &mut Ctx<'_>,
        port: u32,
        now_ns: u64,
        sojourn_ns: u64,
        target_ns: u64,
        queue_empty: bool,
    ) -> bool {
        let interval = self.interval_ns;
        // dodequeue(): ok_to_drop.
        let ok_to_drop = ctx.register(self.first_above, port, |first| {
            if sojourn_ns < target_ns || queue_empty {
                (0, false)
            } else if first == 0 {
                ((now_ns + interval).max(1), false)
            } else {
                (first, now_ns >= first)
            }
        });
        let law = &self.law;
        ctx.register(self.state, port, |s| {
            let dropping = s & CODEL_DROPPING != 0;
            let count = (s >> CODEL_COUNT_SHIFT) & CODEL_COUNT_MASK;
            let drop_next = s & CODEL_TIME_MASK;
            let pack = |d: bool, c: u64, t: u64| {
                (if d { CODEL_DROPPING } else { 0 })
                    | ((c.min(CODEL_COUNT_MASK)) << CODEL_COUNT_SHIFT)
                    | (t & CODEL_TIME_MASK)
            };
            if dropping {
                if !ok_to_drop {
                    (pack(false, count, drop_next), false)
                } else if now_ns >= drop_next {
                    let c = count + 1;
                    (pack(true, c, drop_next + law.delta(c)), true)
                } else {
                    (s, false)
                }
            } else if ok_to_drop {
                // RFC 8289: resume near the last count if dropping stopped
                // recently (within 16 intervals).
                let c = if count > 2 && now_ns.wrapping_sub(drop_next) < 16 * interval {
                    count - 2
                } else {
                    1
                };
                (pack(true, c, now_ns + law.delta(c)), true)
            } else {
                (s, false)
            }
        })
    }
}
