//! Simulated time and link rates, with the unit in the type.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in (or span of) simulated time, in integer picoseconds.
///
/// u64 picoseconds cover about 213 days of simulated time, far beyond any run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_ps(ps: u64) -> Self {
        SimTime(ps)
    }
    pub const fn from_ns(ns: u64) -> Self {
        SimTime(ns * 1_000)
    }
    pub const fn from_us(us: u64) -> Self {
        SimTime(us * 1_000_000)
    }
    pub const fn from_ms(ms: u64) -> Self {
        SimTime(ms * 1_000_000_000)
    }
    /// From fractional microseconds (config values), rounded to the nearest picosecond.
    pub fn from_us_f64(us: f64) -> Self {
        SimTime((us * 1e6).round().max(0.0) as u64)
    }
    pub const fn ps(self) -> u64 {
        self.0
    }
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e12
    }
    pub fn saturating_sub(self, other: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(other.0))
    }
    pub fn saturating_add(self, other: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(other.0))
    }
}

impl Add for SimTime {
    type Output = SimTime;
    /// Saturates at `SimTime::MAX` (never wraps: a time past the end of the
    /// representable range stays there, and no event is scheduled before it).
    fn add(self, rhs: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(rhs.0))
    }
}
impl AddAssign for SimTime {
    fn add_assign(&mut self, rhs: SimTime) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}
impl Sub for SimTime {
    type Output = SimTime;
    fn sub(self, rhs: SimTime) -> SimTime {
        SimTime(self.0 - rhs.0)
    }
}
impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3}us", self.as_us_f64())
    }
}

/// A link or meter rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BitRate(pub u64);

impl BitRate {
    pub const fn from_bps(bps: u64) -> Self {
        BitRate(bps)
    }
    pub fn from_gbps(gbps: f64) -> Self {
        BitRate((gbps * 1e9).round() as u64)
    }
    pub const fn bps(self) -> u64 {
        self.0
    }
    pub fn gbps(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Serialization time of `bytes` at this rate, rounded up to a whole picosecond.
    #[inline]
    pub fn tx_time(self, bytes: u64) -> SimTime {
        debug_assert!(self.0 > 0);
        // Every frame: bytes * 8e12 fits in 64 bits below 2.3 MB, and a
        // 64-bit division is far cheaper than the 128-bit one (same result).
        if bytes <= 2_000_000 {
            return SimTime((bytes * 8_000_000_000_000).div_ceil(self.0));
        }
        let num = bytes as u128 * 8 * 1_000_000_000_000u128;
        let den = self.0 as u128;
        SimTime(num.div_ceil(den) as u64)
    }
    /// The picoseconds a byte takes at this rate if that is a whole number
    /// (8e12 is a multiple of the rate: 1, 10, 40, 100 Gb/s ...), else 0.
    /// Then `tx_time(b)` is `b` times it (exactly: `ceil(b * 8e12 / r)`
    /// is `b * (8e12 / r)` when `r` divides 8e12), with no division.
    pub fn ps_per_byte(self) -> u64 {
        if self.0 > 0 && 8_000_000_000_000 % self.0 == 0 {
            8_000_000_000_000 / self.0
        } else {
            0
        }
    }
    /// [`Self::tx_time`] given [`Self::ps_per_byte`] (`per_byte`): a
    /// multiplication when it is not 0 and `bytes` a frame's size.
    #[inline(always)]
    pub fn tx_time_by(self, bytes: u64, per_byte: u64) -> SimTime {
        if per_byte != 0 && bytes <= 2_000_000 {
            return SimTime(bytes * per_byte);
        }
        self.tx_time(bytes)
    }
    /// Bytes this rate carries in `t` (rounded down).
    pub fn bytes_in(self, t: SimTime) -> u64 {
        (self.0 as u128 * t.0 as u128 / 8 / 1_000_000_000_000u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_of_a_full_frame_at_10g() {
        // 1500 bytes at 10 Gb/s: 1.2 us exactly.
        assert_eq!(
            BitRate::from_gbps(10.0).tx_time(1500),
            SimTime::from_ns(1200)
        );
        // 1 byte at 3 b/s rounds up.
        assert_eq!(BitRate(3).tx_time(1), SimTime(2_666_666_666_667));
    }

    #[test]
    fn tx_time_short_and_long_paths_agree() {
        // The 64-bit path (up to 2 MB) gives the 128-bit result.
        for rate in [BitRate(3), BitRate::from_gbps(10.0), BitRate(7_777_777_777)] {
            for bytes in [0u64, 1, 64, 1518, 9000, 1_999_999, 2_000_000] {
                let wide = (bytes as u128 * 8 * 1_000_000_000_000u128).div_ceil(rate.0 as u128);
                assert_eq!(rate.tx_time(bytes).0 as u128, wide, "{rate:?} {bytes}");
            }
        }
        assert_eq!(
            BitRate(8).tx_time(2_000_001),
            SimTime(2_000_001_000_000_000_000)
        );
    }

    #[test]
    fn tx_time_by_the_byte_is_tx_time() {
        for rate in [
            BitRate(1),
            BitRate(3),
            BitRate::from_gbps(10.0),
            BitRate::from_gbps(25.0),
            BitRate::from_gbps(40.0),
            BitRate::from_gbps(100.0),
            BitRate(7_777_777_777),
            BitRate(16_000_000_000_000),
        ] {
            let per_byte = rate.ps_per_byte();
            for bytes in [0u64, 1, 64, 1518, 9000, 1_999_999, 2_000_000, 2_000_001] {
                assert_eq!(
                    rate.tx_time_by(bytes, per_byte),
                    rate.tx_time(bytes),
                    "{rate:?} {bytes}"
                );
            }
        }
        assert_eq!(BitRate::from_gbps(10.0).ps_per_byte(), 800);
        assert_eq!(BitRate(3).ps_per_byte(), 0);
        assert_eq!(BitRate(16_000_000_000_000).ps_per_byte(), 0);
    }

    #[test]
    fn bytes_in_inverts_tx_time() {
        let r = BitRate::from_gbps(40.0);
        assert_eq!(r.bytes_in(r.tx_time(9000)), 9000);
    }

    #[test]
    fn unit_conversions() {
        assert_eq!(SimTime::from_ms(1), SimTime::from_us(1000));
        assert_eq!(SimTime::from_us_f64(1.5), SimTime::from_ns(1500));
        assert!((SimTime::from_ms(3).as_secs_f64() - 0.003).abs() < 1e-15);
    }
}
