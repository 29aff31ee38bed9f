//! The retransmission timeout estimator of RFC 6298.
//!
//! Owns: SRTT, RTTVAR and the current RTO, including exponential backoff.
//! Guarantees: the RTO is always within `[min_rto, max_rto]`.
//! Leaves to others: which segments are timed (Karn's rule is applied by the
//! sender, which only feeds samples from segments never retransmitted) and
//! when the timer runs.

use pisanet_engine::SimTime;

/// RFC 6298 section 2: K = 4, alpha = 1/8, beta = 1/4.
const K: u64 = 4;
/// `RtoEstimator::srtt` before the first sample.
const NO_SRTT: SimTime = SimTime(u64::MAX);
/// Clock granularity G by default: our clock ticks in picoseconds.
const CLOCK_GRANULARITY: SimTime = SimTime(1);

/// SRTT / RTTVAR / RTO state of one sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct RtoEstimator {
    // NOTE: `repr(C)`, what an ACK reads first (`rto`, `srtt`: the sender
    // puts them at the end of one of its lines, the rest in the next;
    // docs/performance.md, "Session 12: host side").
    rto: SimTime,
    /// The smoothed RTT; the largest time until the first sample (an RTT
    /// is never that long), so that it takes 8 bytes.
    srtt: SimTime,
    rttvar: SimTime,
    min_rto: SimTime,
    max_rto: SimTime,
    /// Clock granularity G of RFC 6298 (2.2)/(2.3) (`TcpConfig::rto_granularity`).
    granularity: SimTime,
    /// Consecutive backoffs since the last valid sample.
    backoffs: u32,
    /// RTT samples taken, and the latest (for measurement).
    samples: u32,
    last_sample: SimTime,
}

impl RtoEstimator {
    /// A fresh estimator. `initial_rto` is clamped into `[min_rto, max_rto]`.
    pub fn new(initial_rto: SimTime, min_rto: SimTime, max_rto: SimTime) -> Self {
        let max_rto = max_rto.max(min_rto);
        RtoEstimator {
            srtt: NO_SRTT,
            rttvar: SimTime::ZERO,
            // RFC 6298 (2.1): until a measurement is made, RTO = initial.
            rto: initial_rto.clamp(min_rto, max_rto),
            min_rto,
            max_rto,
            granularity: CLOCK_GRANULARITY,
            backoffs: 0,
            samples: 0,
            last_sample: SimTime::ZERO,
        }
    }

    /// The same with clock granularity `g` in RFC 6298's RTO <- SRTT +
    /// max(G, K*RTTVAR) (at least one tick). ns-3 uses G = 1 ms
    /// (`TcpSocketBase::ClockGranularity`); Linux's RTO is SRTT + max(4
    /// mdev, rto_min) (`tcp_set_rto`: `rttvar_us` is at least
    /// `tcp_rto_min_us`), i.e. G = min RTO. See docs/model.md, "Hosts".
    pub fn with_granularity(mut self, g: SimTime) -> Self {
        self.granularity = g.max(CLOCK_GRANULARITY);
        self
    }

    /// How many RTT samples were taken, and the latest one (zero before any).
    pub fn samples(&self) -> (u32, SimTime) {
        (self.samples, self.last_sample)
    }

    /// The current timeout, backoff included.
    pub fn rto(&self) -> SimTime {
        self.rto
    }

    /// The smoothed RTT, once a sample was taken.
    #[inline]
    pub fn srtt(&self) -> Option<SimTime> {
        (self.srtt != NO_SRTT).then_some(self.srtt)
    }

    pub fn rttvar(&self) -> SimTime {
        self.rttvar
    }

    /// Consecutive backoffs since the last valid RTT sample.
    pub fn backoffs(&self) -> u32 {
        self.backoffs
    }

    /// Takes one RTT measurement `r` and recomputes the RTO. A valid sample
    /// also ends any backoff (RFC 6298 section 5, last paragraph).
    pub fn on_sample(&mut self, r: SimTime) {
        self.samples = self.samples.wrapping_add(1);
        self.last_sample = r;
        debug_assert!(r != NO_SRTT, "an RTT sample of the largest time");
        match self.srtt() {
            None => {
                // RFC 6298 (2.2): SRTT <- R, RTTVAR <- R/2.
                self.srtt = r;
                self.rttvar = SimTime(r.ps() / 2);
            }
            Some(srtt) => {
                // RFC 6298 (2.3): RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'|
                // (with the old SRTT), then SRTT <- 7/8 SRTT + 1/8 R'.
                let err = srtt.ps().abs_diff(r.ps());
                self.rttvar = SimTime((3 * self.rttvar.ps() + err) / 4);
                self.srtt = SimTime((7 * srtt.ps() + r.ps()) / 8);
            }
        }
        self.rto_from_estimate(self.srtt);
    }

    /// RFC 6298 (2.2)/(2.3): RTO <- SRTT + max(G, K*RTTVAR); (2.4) and
    /// (2.5): clamped, our floor being `min_rto`. Any backoff ends.
    fn rto_from_estimate(&mut self, srtt: SimTime) {
        let var = SimTime(K.saturating_mul(self.rttvar.ps())).max(self.granularity);
        self.rto = srtt.saturating_add(var).clamp(self.min_rto, self.max_rto);
        self.backoffs = 0;
    }

    /// `TcpConfig::rto_reset_on_ack`: an ACK of new data recomputes the
    /// RTO from SRTT and RTTVAR, RTO <- SRTT + max(G, K*RTTVAR) clamped,
    /// which ends any backoff without a new sample (ns-3 3.44's
    /// `TcpSocketBase::NewAck`). Before the first sample it does nothing.
    pub fn reset_backoff(&mut self) {
        if let Some(srtt) = self.srtt() {
            self.rto_from_estimate(srtt);
        }
    }

    /// The timer expired: RFC 6298 (5.5), RTO <- RTO * 2, at most `max_rto`.
    pub fn on_timeout(&mut self) {
        self.rto = SimTime(self.rto.ps().saturating_mul(2)).min(self.max_rto);
        self.backoffs += 1;
    }
}

#[cfg(test)]
#[path = "rto_tests.rs"]
mod tests;
