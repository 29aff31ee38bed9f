//! P4QCN's reaction point (Geng, Yan and Zhang, Applied Sciences 2019,
//! section 3.1.2): QCN's rate-based three-state machine at the source.
//!
//! ```text
//!   feedback (ECN 11, or a CNP)          byte counter: one cycle per B bytes sent
//!   ───────────────────────────          ─────────────────────────────────────────
//!   Rt = Rc (the rate before, Rold)      fast recovery, cycles 1..=F:  Rc = (Rt + Rc) / 2
//!   Rc = Rc (1 - beta / 2)               active increase, after F:     Rt += R_AI, Rc = (Rt + Rc) / 2
//!   byte counter reset, fast recovery
//! ```
//!
//! Owns: the current rate Rc, the target rate Rt, the stage and the byte
//! counter of one flow. Guarantees: Rc stays within [min rate, cap], where
//! the cap is the application's rate (no higher than the line rate); Rt
//! never exceeds the cap either. Before the first feedback the flow sends at
//! the cap and the byte counter is idle (QCN installs its rate limiter on
//! the first congestion message). Leaves to others: pacing at [`rate`], and
//! deciding which packets are the flow's feedback (the host hands them in).
//!
//! Feedback: a packet with ECN 11 (the P4QCN congestion point's feedback,
//! section 3.1.1: "ECN field of FBP is set to 11"), or a DCQCN congestion
//! notification packet ([`super::dcqcn::is_cnp`]), so that the paper's
//! 3-point variant (section 4.2.4: the NP takes over generating feedback, the
//! RP stays) can run with this RP. Other packets are ignored.
//!
//! Parameters the paper does not give (the byte counter, R_AI at other link
//! rates, the minimum rate) are chosen in docs/schemes/p4qcn.md.
//!
//! [`rate`]: ReactionPoint::rate

use super::{mean, ReactionPoint};
use pisanet_engine::{BitRate, SimTime};
use pisanet_net::packet::{Ecn, Packet};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// QCN's byte counter at its design rate (IEEE 802.1Qau, BC_LIMIT = 150 KB
/// at 10 Gb/s; Alizadeh et al., "Data center transport mechanisms", 2008).
pub const QCN_BYTE_COUNTER: u64 = 150_000;
/// The rate QCN's byte counter was designed for.
pub const QCN_DESIGN_RATE_BPS: u64 = 10_000_000_000;
/// Smallest default byte counter: one full-size Ethernet frame (wire bytes).
pub const MIN_BYTE_COUNTER: u64 = 1518;

/// Parameters of P4QCN's reaction point (P4QCN section 3.1.2). Keys left
/// out take the defaults, which scale with the host's line rate C
/// (docs/schemes/p4qcn.md, "Scaling").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct QcnParams {
    /// Rate reduction factor beta of eq. 2: a feedback multiplies Rc by
    /// (1 - beta / 2) (section 3.1.2 and section 4: 1, its maximum, so a
    /// feedback halves the rate).
    #[schemars(range(min = 0.0001, max = 1))]
    pub beta: f64,
    /// Byte-counter cycles of fast recovery before active increase (section
    /// 3.1.2: 5, "suggested in QCN").
    #[schemars(range(min = 0, max = 1000), extend("x-unit" = "cycles"))]
    pub fast_recovery_cycles: u32,
    /// Bytes sent per byte-counter cycle (KB, 1 KB = 1000 B, wire bytes).
    /// Default: QCN's 150 KB at 10 Gb/s scaled to the line rate C
    /// (150 KB x C / 10 Gb/s, at least one 1518 B frame): 1518 B at 7 Mb/s,
    /// 600 KB at 40 Gb/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.064, max = 1e9), extend("x-unit" = "KB"))]
    pub byte_counter_kb: Option<f64>,
    /// Active-increase step R_AI (Mb/s). Default: 5/7 of the line rate C,
    /// the paper's 5 Mb/s on its 7 Mb/s links (section 4) kept in
    /// proportion: 5 Mb/s at 7 Mb/s, 28.6 Gb/s at 40 Gb/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.000001, max = 1e8), extend("x-unit" = "Mb/s"))]
    pub rai_mbps: Option<f64>,
    /// Floor of the current rate (Mb/s). Default: C / 1000 (100 Mb/s at
    /// 100 Gb/s, the `MinRate` default of the HPCC authors' ns-3 RDMA model).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.000001, max = 1e8), extend("x-unit" = "Mb/s"))]
    pub min_rate_mbps: Option<f64>,
}

impl Default for QcnParams {
    fn default() -> Self {
        QcnParams {
            beta: 1.0,
            fast_recovery_cycles: 5,
            byte_counter_kb: None,
            rai_mbps: None,
            min_rate_mbps: None,
        }
    }
}

/// Mb/s as bits per second (rounded).
fn mbps(v: f64) -> u64 {
    (v * 1e6).round() as u64
}

impl QcnParams {
    /// Bytes per byte-counter cycle at line rate `line`.
    pub fn byte_counter(&self, line: BitRate) -> u64 {
        match self.byte_counter_kb {
            Some(kb) => ((kb * 1000.0) as u64).max(1),
            None => ((QCN_BYTE_COUNTER as u128 * line.bps() as u128 / QCN_DESIGN_RATE_BPS as u128)
                as u64)
                .max(MIN_BYTE_COUNTER),
        }
    }
    /// R_AI at line rate `line` (bits per second).
    pub fn rai(&self, line: BitRate) -> u64 {
        match self.rai_mbps {
            Some(v) => mbps(v),
            None => (line.bps() as u128 * 5 / 7) as u64,
        }
    }
    /// The minimum rate at line rate `line` (bits per second, at least 1).
    pub fn min_rate(&self, line: BitRate) -> u64 {
        match self.min_rate_mbps {
            Some(v) => mbps(v),
            None => line.bps() / 1000,
        }
        .max(1)
    }
    /// The checks between keys (ranges are in the schema).
    pub fn validate(&self) -> Result<(), String> {
        if !(self.beta > 0.0 && self.beta <= 1.0) {
            return Err(format!(
                "beta: must be in (0, 1] (P4QCN section 3.1.2), got {}",
                self.beta
            ));
        }
        Ok(())
    }
}

/// Where the state machine is (P4QCN Fig. 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QcnStage {
    /// No feedback yet: the flow sends at the cap.
    Unlimited,
    /// Fast recovery, with the cycles completed so far.
    FastRecovery {
        cycles: u32,
    },
    ActiveIncrease,
}

/// P4QCN's reaction point for one flow.
#[derive(Clone, Debug)]
pub struct QcnReactionPoint {
    /// Rc and Rt (bits per second).
    rc: u64,
    rt: u64,
    stage: QcnStage,
    /// Bytes sent in the current cycle.
    bytes: u64,
    beta: f64,
    cycles_fr: u32,
    byte_counter: u64,
    rai: u64,
    min_rate: u64,
    cap: u64,
    feedbacks: u64,
}

impl QcnReactionPoint {
    /// The reaction point of a flow whose application sends at `app_rate`
    /// from a host on a `line_rate` link. It starts at the cap,
    /// min(`app_rate`, `line_rate`).
    pub fn new(params: &QcnParams, line_rate: BitRate, app_rate: BitRate) -> Self {
        let cap = app_rate.bps().min(line_rate.bps()).max(1);
        QcnReactionPoint {
            rc: cap,
            rt: cap,
            stage: QcnStage::Unlimited,
            bytes: 0,
            beta: params.beta,
            cycles_fr: params.fast_recovery_cycles,
            byte_counter: params.byte_counter(line_rate),
            rai: params.rai(line_rate),
            min_rate: params.min_rate(line_rate).min(cap),
            cap,
            feedbacks: 0,
        }
    }

    /// The target rate Rt.
    pub fn target(&self) -> BitRate {
        BitRate::from_bps(self.rt)
    }
    pub fn stage(&self) -> QcnStage {
        self.stage
    }
    /// Feedback packets acted on.
    pub fn feedbacks(&self) -> u64 {
        self.feedbacks
    }
    /// Bytes per byte-counter cycle.
    pub fn byte_counter(&self) -> u64 {
        self.byte_counter
    }

    /// Whether `pkt` is congestion feedback for this RP (see the module doc).
    pub fn is_feedback(pkt: &Packet) -> bool {
        pkt.ip.ecn == Ecn::Ce || super::dcqcn::is_cnp(pkt)
    }

    /// P4QCN section 3.1.2, eq. 2: the rate reduction.
    fn decrease(&mut self) {
        self.feedbacks += 1;
        // Eq. 2: Rt = Rold, the rate before the feedback.
        self.rt = self.rc;
        // Eq. 2: Rc = Rc (1 - beta / 2), floored at the minimum rate.
        let cut = (self.rc as f64 * (1.0 - self.beta / 2.0)).round() as u64;
        self.rc = cut.clamp(self.min_rate, self.cap);
        // "When the sending rate is reduced, a byte counter is reset and
        // enters the fast recovery process."
        self.bytes = 0;
        self.stage = QcnStage::FastRecovery { cycles: 0 };
    }

    /// The end of one byte-counter cycle.
    fn cycle(&mut self) {
        match self.stage {
            QcnStage::Unlimited => {}
            QcnStage::FastRecovery { cycles } => {
                // Eq. 3: Rt unchanged, Rc = (Rt + Rc) / 2.
                self.rc = mean(self.rt, self.rc);
                let cycles = cycles + 1;
                self.stage = if cycles >= self.cycles_fr {
                    // "When the N cycles has been completed, the stage of
                    // active increase begins."
                    QcnStage::ActiveIncrease
                } else {
                    QcnStage::FastRecovery { cycles }
                };
            }
            QcnStage::ActiveIncrease => {
                // Eq. 4: Rt = Rt + R_AI, Rc = (Rt + Rc) / 2; both capped.
                self.rt = (self.rt + self.rai).min(self.cap);
                self.rc = mean(self.rt, self.rc);
            }
        }
    }
}

impl ReactionPoint for QcnReactionPoint {
    fn rate(&self) -> BitRate {
        BitRate::from_bps(self.rc)
    }

    fn on_feedback(&mut self, _now: SimTime, pkt: &Packet) {
        if Self::is_feedback(pkt) {
            self.decrease();
        }
    }

    fn on_bytes_sent(&mut self, _now: SimTime, bytes: u32) {
        if self.stage == QcnStage::Unlimited {
            return;
        }
        self.bytes += bytes as u64;
        while self.bytes >= self.byte_counter {
            self.bytes -= self.byte_counter;
            self.cycle();
        }
    }

    /// P4QCN's RP has a byte counter only (section 3.1.2), no timer.
    fn timer_deadline(&self) -> Option<SimTime> {
        None
    }

    fn on_timer(&mut self, _now: SimTime) {}
}

#[cfg(test)]
#[path = "qcn_tests.rs"]
mod tests;
