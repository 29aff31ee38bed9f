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

/// The entries of `get_dst_tor`: each rack's /24 (a ToR's own rack from its
/// host /32 routes).
pub fn dst_tor_entries(table: TableId, info: &SwitchInfo) -> Vec<Write> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for r in &info.routes {
        let Some(rack) = r.rack else { continue };
        let prefix = r.prefix & 0xffff_ff00;
        if seen.contains(&(prefix, rack)) {
            continue;
        }
        seen.push((prefix, rack));
        out.push(Write::TableEntry {
            table,
            update: UpdateType::Insert,
            entry: TableEntry::new(
                vec![matches::lpm(prefix as u64, 24)],
                ActionCall::new(SET_DST_TOR, [rack as u64, 0, 0]),
            ),
        });
    }
    out
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
