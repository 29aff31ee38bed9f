//! The per-port utilization estimator: a discounting rate estimator (CONGA's
//! DRE, HULA section 4.2) of the form `U = D + U (1 - dt / tau)`, where D is
//! the size of the packet that triggers the update and dt the time since the
//! last update. In steady state at rate C, U tends to C x tau bytes.
//!
//! NOTE: hardware has no divider, so the decay is a multiply by a reciprocal
//! and a shift: the control plane computes `inv_tau = 2^64 / tau` once when it
//! configures tau, and each update computes `U - (U * dt * inv_tau) >> 64`.
//! When dt >= tau the old value is forgotten (U = D). Values are integer bytes.

use pisanet_engine::SimTime;
use serde::Serialize;

/// Declaration of an estimator: one cell per port, time constant tau.
#[derive(Clone, Debug, Serialize)]
pub struct EstimatorSpec {
    pub name: &'static str,
    pub ports: u16,
    /// Time constant in picoseconds.
    pub tau_ps: u64,
}

/// Handle of an estimator in its pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EstimatorId(pub(crate) u16);

/// One port's estimator.
#[derive(Clone, Copy, Debug)]
pub struct UtilEstimator {
    tau: SimTime,
    /// 2^64 / tau, fixed point.
    inv_tau: u128,
    util: u64,
    last: SimTime,
}

impl UtilEstimator {
    pub fn new(tau: SimTime) -> Self {
        assert!(tau.ps() > 0, "estimator tau must be positive");
        UtilEstimator {
            tau,
            inv_tau: (1u128 << 64) / tau.ps() as u128,
            util: 0,
            last: SimTime::ZERO,
        }
    }

    fn decayed(&self, now: SimTime) -> u64 {
        let dt = now.saturating_sub(self.last);
        if dt >= self.tau {
            return 0;
        }
        // dt < tau, so dt * inv_tau < 2^64: the product with U fits in u128.
        let frac = dt.ps() as u128 * self.inv_tau;
        let decay = (self.util as u128 * frac) >> 64;
        self.util - decay as u64
    }

    /// `U = D + U (1 - dt / tau)` for a packet of `bytes` at `now`.
    pub fn update(&mut self, now: SimTime, bytes: u32) -> u64 {
        self.util = self.decayed(now) + bytes as u64;
        self.last = self.last.max(now);
        self.util
    }

    /// U decayed to `now` without a new packet (bytes).
    pub fn read(&self, now: SimTime) -> u64 {
        self.decayed(now)
    }
}

pub(crate) struct EstimatorArray {
    pub(crate) spec: EstimatorSpec,
    pub(crate) cells: Vec<UtilEstimator>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn steady_rate_converges_to_c_tau() {
        // 1500 B every 1.2 us is 10 Gb/s; tau 100 us: C x tau = 125,000 B.
        let mut e = UtilEstimator::new(SimTime::from_us(100));
        let mut t = SimTime::ZERO;
        for _ in 0..5000 {
            t += SimTime::from_ns(1200);
            e.update(t, 1500);
        }
        let u = e.read(t) as f64;
        assert!((u - 125_000.0).abs() / 125_000.0 < 0.02, "U = {u}");
        // Idle for a whole tau: forgotten.
        assert_eq!(e.read(t + SimTime::from_us(100)), 0);
    }

    proptest! {
        /// The integer estimator tracks U = D + U (1 - dt/tau) computed in f64.
        #[test]
        fn matches_the_formula(steps in prop::collection::vec((0u64..150_000_000, 64u32..9000), 1..200)) {
            let tau = SimTime::from_us(100);
            let mut e = UtilEstimator::new(tau);
            let mut u = 0.0f64;
            let mut t = SimTime::ZERO;
            for (dt, d) in steps {
                t += SimTime(dt);
                let keep = 1.0 - (dt as f64 / tau.ps() as f64);
                u = d as f64 + u * keep.max(0.0);
                let got = e.update(t, d) as f64;
                // Each step floors once: the error stays within a few bytes per step.
                prop_assert!((got - u).abs() <= 1.0 + u * 1e-9 + 200.0, "got {} want {}", got, u);
            }
        }
    }
}
