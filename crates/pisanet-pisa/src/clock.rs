//! A switch's own clock: what every timestamp a program reads comes from.
//!
//! Real switches have independent clocks (P4QoS section II.A: "timestamps
//! are only useful locally"): each has an offset from true time, a drift
//! (a frequency error, in parts per million) and a resolution (nanoseconds
//! on Tofino, microseconds on bmv2). The switch converts the simulator's
//! true time into its clock's reading before the program sees it:
//! `ingress_global_timestamp`, `egress_global_timestamp`, `enq_timestamp`
//! and [`Ctx::now`](crate::Ctx::now) are clock readings; `deq_timedelta`
//! stays a duration (the difference of two readings of the same clock).
//!
//! ```text
//! reading(t) = floor((offset + t + t * drift_ppb / 10^9) / resolution) * resolution
//! ```
//!
//! The conversion is the model's (outside the program): it uses integer
//! arithmetic only, and the program sees an integer timestamp, as hardware
//! gives one. Offsets are non-negative (the clock's epoch is before the
//! simulation's start; only differences between clocks matter) and drift is
//! bounded well within (-10^6, 10^6) ppm, so a reading never decreases.
//! Meters, estimators and the control plane's write times run on true time.
//!
//! The default clock is ideal (no offset, no drift, picosecond resolution):
//! a reading is the true time, and runs without `[clock]` are unchanged.

use pisanet_engine::SimTime;

/// One switch's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// The reading at true time zero (ps).
    pub offset_ps: u64,
    /// Frequency error in parts per billion (positive: the clock runs fast).
    pub drift_ppb: i64,
    /// Tick of the clock (ps; 1 = exact).
    pub resolution_ps: u64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::IDEAL
    }
}

impl Clock {
    /// The true time, to the picosecond.
    pub const IDEAL: Clock = Clock {
        offset_ps: 0,
        drift_ppb: 0,
        resolution_ps: 1,
    };

    /// Whether readings are the true time.
    #[inline]
    pub fn is_ideal(&self) -> bool {
        *self == Clock::IDEAL
    }

    /// The clock's reading at true time `t`.
    #[inline]
    pub fn read(&self, t: SimTime) -> SimTime {
        if self.is_ideal() {
            return t;
        }
        let t = t.ps() as i128;
        let drifted = t + (t * self.drift_ppb as i128).div_euclid(1_000_000_000);
        let local = (self.offset_ps as i128 + drifted).max(0);
        let res = self.resolution_ps.max(1) as i128;
        let ticks = local - local.rem_euclid(res);
        SimTime(ticks.min(u64::MAX as i128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_is_identity() {
        for t in [0, 1, 999, 123_456_789_012] {
            assert_eq!(Clock::IDEAL.read(SimTime(t)), SimTime(t));
        }
    }

    #[test]
    fn offset_drift_and_resolution() {
        let c = Clock {
            offset_ps: 5_000_000,
            drift_ppb: 100_000, // +100 ppm
            resolution_ps: 1_000,
        };
        // 1 s true: 1 s + 100 us + 5 us offset.
        assert_eq!(c.read(SimTime::from_ms(1000)), SimTime(1_000_105_000_000));
        // Floors to the nanosecond.
        assert_eq!(c.read(SimTime(1_999)), SimTime(5_001_000));
        let slow = Clock {
            drift_ppb: -50_000,
            ..c
        };
        assert_eq!(slow.read(SimTime::from_ms(1000)), SimTime(999_955_000_000));
    }

    #[test]
    fn readings_never_decrease() {
        let c = Clock {
            offset_ps: 7,
            drift_ppb: -999_000_000,
            resolution_ps: 1_000_000,
        };
        let mut last = SimTime::ZERO;
        for t in (0..10_000_000u64).step_by(99_991) {
            let r = c.read(SimTime(t));
            assert!(r >= last);
            last = r;
        }
    }
}
