//! DCQCN's end points (Zhu et al., "Congestion Control for Large-Scale RDMA
//! Deployments", SIGCOMM 2015, section 3.1): the notification point (NP) at
//! the receiver and the reaction point (RP) at the sender; the congestion
//! point is the switch program `dcqcn_cp` (crates/pisanet-schemes).
//!
//! ```text
//!  NP (receiver):  CE-marked packet of a flow ─► a CNP to the sender now, if none in the last
//!                  50 us; else one when the 50 us window ends (if a mark came in it)
//!  RP (sender):    CNP ─► Rt = Rc, Rc = Rc (1 - alpha / 2), alpha = (1 - g) alpha + g,
//!                         timer, byte counter and both event counts reset
//!                  no CNP for K = 55 us ─► alpha = (1 - g) alpha
//!                  each rate-increase event (timer T = 55 us, or B bytes sent):
//!                    max(t, bc) <= F          fast recovery    Rc = (Rt + Rc) / 2
//!                    min(t, bc) >  F          hyper increase   Rt += (min(t, bc) - F) R_HAI, Rc = (Rt + Rc) / 2
//!                    otherwise                additive         Rt += R_AI, Rc = (Rt + Rc) / 2
//! ```
//!
//! Owns: one flow's RP state (Rc, Rt, alpha, counters, timers) and NP state
//! (last CNP, a pending mark), and the CNP's header ([`CNP_WIRE`]).
//! Guarantees: Rc stays within [min rate, cap] (the cap is the application's
//! rate, no higher than the line rate), Rt within [Rc, cap]; the NP sends at
//! most one CNP per flow per interval. Leaves to others: pacing at the RP's
//! rate, and delivering packets to the NP and CNPs to the RP (the host).
//!
//! Defaults are DCQCN's published ones; their sources are cited at each key
//! and in docs/schemes/p4qcn.md.

use super::{mean, ReactionPoint};
use pisanet_engine::{units, BitRate, SimTime};
use pisanet_net::packet::{Ecn, ExtHeader, Packet, PacketExtra, Udp, L4, PROTO_UDP};
use pisanet_net::wire::{FieldDef, HeaderDef, Placement};
use pisanet_net::{ETH_BYTES, IPV4_BYTES, MIN_FRAME_BYTES, UDP_BYTES};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `ExtHeader::kind` of a congestion notification packet.
pub const CNP_KIND: u16 = 0x4e50;
/// Bytes of the CNP header.
pub const CNP_BYTES: u16 = 4;
/// The InfiniBand opcode of a CNP (RoCEv2, IBTA Annex A17: BTH opcode
/// 1000_0001b).
pub const CNP_OPCODE: u64 = 0x81;
/// RoCE's EtherType (RoCE v1, IBTA Annex A16), which carries the BTH whose
/// opcode marks a CNP. (IEEE's local experimental types 0x88b5 and 0x88b6
/// are CONGA's and P4QoS's.)
pub const ETHERTYPE_ROCE: u16 = 0x8915;
pub const CNP_OPCODE_FIELD: FieldDef = FieldDef::ext(
    "opcode",
    8,
    0,
    0,
    "0x81: the InfiniBand BTH opcode of a congestion notification packet (RoCEv2 Annex A17)",
);
/// The CNP's header (docs/headers.md).
pub static CNP_WIRE: HeaderDef = HeaderDef {
    name: "cnp",
    title: "DCQCN congestion notification packet (CNP)",
    schemes: "dcqcn_cp (sent by the receiver's notification point)",
    kind: CNP_KIND,
    bytes: CNP_BYTES,
    placement: Placement::EtherType(ETHERTYPE_ROCE),
    doc: "Sent by a receiver's notification point to the sender of a flow whose packets \
          arrived CE-marked, at most one per flow per 50 us (DCQCN section 3.1); IPv4 and UDP \
          follow with the flow's addresses and ports swapped and no payload. NOTE: RoCEv2 \
          carries the CNP as a BTH after UDP port 4791; the model places scheme headers \
          before IPv4 or after it only, so the opcode comes first here.",
    fields: &[CNP_OPCODE_FIELD, FieldDef::reserved(24)],
};

/// Whether `pkt` is a CNP.
pub fn is_cnp(pkt: &Packet) -> bool {
    pkt.ext().is_some_and(|h| h.kind == CNP_KIND)
}

/// The CNP answering data packet `data` (at the receiver, at `now`): to its
/// source, from its destination, ports swapped, no payload, not ECN-capable,
/// in the highest-priority queue (DCQCN section 3.1: CNPs must not wait
/// behind the congested data), a minimum-size frame.
pub fn cnp_for(now: SimTime, data: &Packet) -> Packet {
    let (src, dst, _, sport, dport) = data.five_tuple();
    let mut fields = [0; 4];
    CNP_OPCODE_FIELD.set(&mut fields, CNP_OPCODE);
    let mut p = Packet {
        flow: data.flow,
        size: (ETH_BYTES + IPV4_BYTES + UDP_BYTES + CNP_BYTES as u32).max(MIN_FRAME_BYTES),
        ip: data.ip,
        l4: L4::Udp(Udp {
            sport: dport,
            dport: sport,
            payload: 0,
            psn: 0,
            ack_req: false,
        }),
        extra: PacketExtra::of_ext(ExtHeader {
            kind: CNP_KIND,
            bytes: CNP_BYTES,
            fields,
        }),
        sent_at: now,
        prio: 0,
        ..Default::default()
    };
    p.ip.src = dst;
    p.ip.dst = src;
    p.ip.proto = PROTO_UDP;
    p.ip.ecn = Ecn::NotEct;
    p.ip.ttl = 64;
    p
}

/// Parameters of DCQCN's notification point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DcqcnNpParams {
    /// At most one CNP per flow per this interval (us; DCQCN section 3.1: N = 50).
    #[serde(rename = "cnp_interval_us", with = "units::us")]
    #[schemars(with = "f64", range(min = 0.001, max = 1e9), extend("x-unit" = "us"))]
    pub cnp_interval: SimTime,
}

impl Default for DcqcnNpParams {
    fn default() -> Self {
        DcqcnNpParams {
            cnp_interval: SimTime::from_us(50),
        }
    }
}

/// DCQCN's notification point for one flow, at its receiver.
///
/// How it plugs in: the receiving host calls [`Self::on_packet`] with each
/// data packet of the flow it receives and sends the CNP it returns (through
/// its NIC, like any packet it sends); after each call it reads
/// [`Self::timer_deadline`] and calls [`Self::on_timer`] then, which may
/// return a deferred CNP. Early or stale `on_timer` calls return nothing.
#[derive(Clone, Debug)]
pub struct DcqcnNotificationPoint {
    interval: SimTime,
    last_cnp: Option<SimTime>,
    /// A CE-marked packet arrived since the last CNP (its template).
    pending: Option<Packet>,
    cnps: u64,
}

impl DcqcnNotificationPoint {
    pub fn new(params: &DcqcnNpParams) -> Self {
        DcqcnNotificationPoint {
            interval: params.cnp_interval,
            last_cnp: None,
            pending: None,
            cnps: 0,
        }
    }

    /// CNPs sent so far.
    pub fn cnps(&self) -> u64 {
        self.cnps
    }

    fn window_open(&self, now: SimTime) -> bool {
        self.last_cnp.is_none_or(|t| now >= t + self.interval)
    }

    fn send(&mut self, now: SimTime, data: &Packet) -> Packet {
        self.last_cnp = Some(now);
        self.pending = None;
        self.cnps += 1;
        cnp_for(now, data)
    }

    /// A data packet of the flow arrived: the CNP to send now, if any.
    pub fn on_packet(&mut self, now: SimTime, pkt: &Packet) -> Option<Packet> {
        if pkt.ip.ecn != Ecn::Ce || is_cnp(pkt) {
            return None;
        }
        // DCQCN section 3.1: "If a marked packet arrives for a flow, and no
        // CNP has been sent for the flow in last N microseconds, a CNP is
        // sent immediately."
        if self.window_open(now) {
            return Some(self.send(now, pkt));
        }
        // "Then, the NIC generates at most one CNP packet every N
        // microseconds for the flow, if any packet that arrives within that
        // time window was marked."
        if self.pending.is_none() {
            let mut template = pkt.clone();
            template.set_ext(None);
            self.pending = Some(template);
        }
        None
    }

    /// When the window with a pending mark ends.
    pub fn timer_deadline(&self) -> Option<SimTime> {
        match (self.pending.as_ref(), self.last_cnp) {
            (Some(_), Some(t)) => Some(t + self.interval),
            _ => None,
        }
    }

    /// The deferred CNP, if its window has ended.
    pub fn on_timer(&mut self, now: SimTime) -> Option<Packet> {
        let due = self.timer_deadline().is_some_and(|t| now >= t);
        if !due {
            return None;
        }
        let template = self.pending.take()?;
        Some(self.send(now, &template))
    }
}

/// Parameters of DCQCN's reaction point (Zhu et al. 2015). Rates are
/// absolute, as published for 40 Gb/s; docs/schemes/p4qcn.md gives the
/// rule the experiments use to scale them to other line rates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DcqcnParams {
    /// Gain g of the alpha update (DCQCN section 3.1 and section 5: 1/256).
    #[schemars(range(min = 0.000001, max = 1))]
    pub g: f64,
    /// alpha decays when no CNP came for this long (us; K, DCQCN section
    /// 3.1: 55).
    #[serde(rename = "alpha_timer_us", with = "units::us")]
    #[schemars(with = "f64", range(min = 0.001, max = 1e9), extend("x-unit" = "us"))]
    pub alpha_timer: SimTime,
    /// Rate-increase timer T (us; DCQCN section 5: 55).
    #[serde(rename = "increase_timer_us", with = "units::us")]
    #[schemars(with = "f64", range(min = 0.001, max = 1e9), extend("x-unit" = "us"))]
    pub increase_timer: SimTime,
    /// Byte counter B: a rate-increase event per this many bytes sent (KB,
    /// 1 KB = 1000 B; DCQCN section 5: 10 MB).
    #[serde(rename = "byte_counter_kb", with = "units::kb")]
    #[schemars(with = "f64", range(min = 0.064, max = 1e9), extend("x-unit" = "KB"))]
    pub byte_counter: u64,
    /// Increase events of fast recovery F (DCQCN section 3.1, QCN: 5).
    #[schemars(range(min = 0, max = 1000))]
    pub fast_recovery_steps: u32,
    /// Additive-increase step R_AI (Mb/s; 5, the `RateAI` default of the
    /// DCQCN ns-3 models, at 40 Gb/s).
    #[schemars(range(min = 0.000001, max = 1e8), extend("x-unit" = "Mb/s"))]
    pub rai_mbps: f64,
    /// Hyper-increase step R_HAI (Mb/s; 50, the ns-3 models' `RateHAI`).
    #[schemars(range(min = 0.000001, max = 1e8), extend("x-unit" = "Mb/s"))]
    pub rhai_mbps: f64,
    /// Floor of the current rate (Mb/s; 100, the ns-3 models' `MinRate`).
    #[schemars(range(min = 0.000001, max = 1e8), extend("x-unit" = "Mb/s"))]
    pub min_rate_mbps: f64,
    /// Move R_AI, R_HAI, the minimum rate and B from DCQCN's 40 Gb/s to the
    /// sender's line rate, in proportion (docs/schemes/p4qcn.md, "Scaling").
    /// Default false: the values as given (DCQCN's published ones).
    pub scale_to_line_rate: bool,
}

impl Default for DcqcnParams {
    fn default() -> Self {
        DcqcnParams {
            g: 1.0 / 256.0,
            alpha_timer: SimTime::from_us(55),
            increase_timer: SimTime::from_us(55),
            byte_counter: 10_000_000,
            fast_recovery_steps: 5,
            rai_mbps: 5.0,
            rhai_mbps: 50.0,
            min_rate_mbps: 100.0,
            scale_to_line_rate: false,
        }
    }
}

/// The line rate DCQCN's published rates and byte counter are for.
pub const DCQCN_DESIGN_RATE_BPS: u64 = 40_000_000_000;

impl DcqcnParams {
    /// These parameters moved from DCQCN's 40 Gb/s to line rate `line`
    /// (docs/schemes/p4qcn.md, "Scaling"): the rate steps, the minimum rate
    /// and the byte counter in proportion to the line rate (the same
    /// fraction of the link, the same number of full-size frames per
    /// cycle at line rate); g, F and the timers unchanged (the timers
    /// follow the round-trip time and the NIC's clock, not the rate).
    pub fn scaled_to(&self, line: BitRate) -> DcqcnParams {
        let k = line.bps() as f64 / DCQCN_DESIGN_RATE_BPS as f64;
        DcqcnParams {
            rai_mbps: self.rai_mbps * k,
            rhai_mbps: self.rhai_mbps * k,
            min_rate_mbps: self.min_rate_mbps * k,
            byte_counter: ((self.byte_counter as f64 * k).round() as u64).max(1),
            ..self.clone()
        }
    }

    /// The checks between keys (ranges are in the schema).
    pub fn validate(&self) -> Result<(), String> {
        if !(self.g > 0.0 && self.g <= 1.0) {
            return Err(format!("g: must be in (0, 1], got {}", self.g));
        }
        if self.byte_counter == 0 {
            return Err("byte_counter_kb: must be at least 0.001 (one byte)".into());
        }
        if self.alpha_timer == SimTime::ZERO || self.increase_timer == SimTime::ZERO {
            return Err("alpha_timer_us, increase_timer_us: must be positive".into());
        }
        Ok(())
    }
}

/// DCQCN's reaction point for one flow.
#[derive(Clone, Debug)]
pub struct DcqcnReactionPoint {
    rc: u64,
    rt: u64,
    alpha: f64,
    /// Rate-increase events since the last cut: timer (T) and byte counter (BC).
    t: u32,
    bc: u32,
    bytes: u64,
    /// Whether a cut has happened (the timers run from the first CNP on).
    limited: bool,
    next_increase: Option<SimTime>,
    /// The last CNP: alpha decays once per K after it (applied lazily, exactly).
    last_cnp: Option<SimTime>,
    p: DcqcnParams,
    rai: u64,
    rhai: u64,
    min_rate: u64,
    cap: u64,
    cnps: u64,
}

/// Beyond this many K without a CNP, alpha is below 1e-300 at g = 1/256:
/// the decay stops counting.
const MAX_DECAYS: u64 = 200_000;

fn mbps(v: f64) -> u64 {
    (v * 1e6).round() as u64
}

impl DcqcnReactionPoint {
    /// The reaction point of a flow whose application sends at `app_rate`
    /// from a host on a `line_rate` link; it starts at the cap,
    /// min(`app_rate`, `line_rate`), with alpha = 1 (DCQCN's initial value).
    /// With `scale_to_line_rate`, the rates and B are first scaled to
    /// `line_rate` ([`DcqcnParams::scaled_to`]).
    pub fn new(params: &DcqcnParams, line_rate: BitRate, app_rate: BitRate) -> Self {
        let cap = app_rate.bps().min(line_rate.bps()).max(1);
        let scaled;
        let params = if params.scale_to_line_rate {
            scaled = params.scaled_to(line_rate);
            &scaled
        } else {
            params
        };
        DcqcnReactionPoint {
            rc: cap,
            rt: cap,
            alpha: 1.0,
            t: 0,
            bc: 0,
            bytes: 0,
            limited: false,
            next_increase: None,
            last_cnp: None,
            p: params.clone(),
            rai: mbps(params.rai_mbps),
            rhai: mbps(params.rhai_mbps),
            min_rate: mbps(params.min_rate_mbps).clamp(1, cap),
            cap,
            cnps: 0,
        }
    }

    pub fn target(&self) -> BitRate {
        BitRate::from_bps(self.rt)
    }
    /// alpha at `now`: the value after the last CNP, decayed by (1 - g)
    /// once per K without a CNP since.
    pub fn alpha(&self, now: SimTime) -> f64 {
        let mut a = self.alpha;
        if let Some(t) = self.last_cnp {
            // Each K without a CNP: alpha = (1 - g) alpha. NOTE: computed
            // when asked instead of by a timer every K: the same values,
            // without a wake-up per K for the flow's whole life.
            let k = self.p.alpha_timer.ps();
            let n = now.saturating_sub(t).ps() / k;
            for _ in 0..n.min(MAX_DECAYS) {
                a *= 1.0 - self.p.g;
            }
        }
        a
    }
    /// The rate-increase event counts (timer, byte counter) since the last cut.
    pub fn counts(&self) -> (u32, u32) {
        (self.t, self.bc)
    }
    pub fn cnps(&self) -> u64 {
        self.cnps
    }

    /// DCQCN section 3.1: the rate cut on a CNP.
    fn on_cnp(&mut self, now: SimTime) {
        self.cnps += 1;
        self.limited = true;
        let alpha = self.alpha(now);
        // Rt = Rc, Rc = Rc (1 - alpha / 2) with alpha as it stood before
        // this CNP, then alpha = (1 - g) alpha + g (DCQCN section 3.1; the
        // order of htsim's dcqcn.cpp `processCNP`).
        self.rt = self.rc;
        let cut = (self.rc as f64 * (1.0 - alpha / 2.0)).round() as u64;
        self.rc = cut.clamp(self.min_rate, self.cap);
        self.alpha = (1.0 - self.p.g) * alpha + self.p.g;
        self.last_cnp = Some(now);
        // The timer and the byte counter restart; both event counts reset.
        self.t = 0;
        self.bc = 0;
        self.bytes = 0;
        self.next_increase = Some(now + self.p.increase_timer);
    }

    /// One rate-increase event (DCQCN section 3.1; the stage by the two
    /// counts as htsim's dcqcn.cpp `increaseRate` has it).
    fn increase(&mut self) {
        let (hi, lo) = (self.t.max(self.bc), self.t.min(self.bc));
        let f = self.p.fast_recovery_steps;
        if hi <= f {
            // Fast recovery: Rt unchanged.
        } else if lo > f {
            // Hyper increase: Rt += i R_HAI, i = min(T, BC) - F.
            self.rt = self.rt.saturating_add((lo - f) as u64 * self.rhai);
        } else {
            // Additive increase.
            self.rt = self.rt.saturating_add(self.rai);
        }
        self.rt = self.rt.min(self.cap);
        self.rc = mean(self.rt, self.rc);
    }
}

impl ReactionPoint for DcqcnReactionPoint {
    fn rate(&self) -> BitRate {
        BitRate::from_bps(self.rc)
    }

    fn on_feedback(&mut self, now: SimTime, pkt: &Packet) {
        if is_cnp(pkt) {
            self.on_cnp(now);
        }
    }

    fn on_bytes_sent(&mut self, _now: SimTime, bytes: u32) {
        if !self.limited {
            return;
        }
        self.bytes += bytes as u64;
        while self.bytes >= self.p.byte_counter {
            self.bytes -= self.p.byte_counter;
            self.bc += 1;
            self.increase();
        }
    }

    fn timer_deadline(&self) -> Option<SimTime> {
        self.next_increase
    }

    fn on_timer(&mut self, now: SimTime) {
        // The rate-increase timer: one event per T while Rc is below the cap.
        while let Some(t) = self.next_increase.filter(|&t| now >= t) {
            self.t += 1;
            self.increase();
            self.next_increase = (self.rc < self.cap).then_some(t + self.p.increase_timer);
        }
    }
}

#[cfg(test)]
#[path = "dcqcn_tests.rs"]
mod tests;
