//! Meters: RFC 2697 single-rate and RFC 2698 two-rate three-colour markers,
//! in packets or bytes, indexed (v1model `meter(N, MeterType)`) or attached
//! to a table's entries (`direct_meter`).
//!
//! Token buckets are kept exactly, in units of (bytes or packets) x 10^12, so
//! that a rate in units per second adds `rate` tokens per picosecond with no
//! rounding. Both buckets start full when a configuration is written (RFC 2697
//! section 3, RFC 2698 section 3). An unconfigured meter marks GREEN, as bmv2's.

use pisanet_engine::SimTime;
use serde::{Deserialize, Serialize};

/// Token-bucket units per unit (picoseconds per second).
const SCALE: u128 = 1_000_000_000_000;

/// v1model `MeterColor_t`: GREEN = 0, YELLOW = 1, RED = 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum Color {
    Green = 0,
    Yellow = 1,
    Red = 2,
}

/// Which marker a meter runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MeterKind {
    /// RFC 2697 single-rate three-colour marker.
    SrTcm,
    /// RFC 2698 two-rate three-colour marker.
    TrTcm,
}

/// v1model `MeterType`: what one packet costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MeterUnit {
    Bytes,
    Packets,
}

/// A meter's rates and burst sizes, written by the control plane. Rates are in
/// units (bytes or packets) per second, burst sizes in units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MeterConfig {
    /// RFC 2697: committed information rate, committed and excess burst sizes.
    SrTcm { cir: u64, cbs: u64, ebs: u64 },
    /// RFC 2698: committed and peak information rates and burst sizes (PIR >= CIR).
    TrTcm {
        cir: u64,
        cbs: u64,
        pir: u64,
        pbs: u64,
    },
}

impl MeterConfig {
    pub fn kind(&self) -> MeterKind {
        match self {
            MeterConfig::SrTcm { .. } => MeterKind::SrTcm,
            MeterConfig::TrTcm { .. } => MeterKind::TrTcm,
        }
    }
}

/// Declaration of an indexed meter array.
#[derive(Clone, Debug, Serialize)]
pub struct MeterSpec {
    pub name: &'static str,
    pub kind: MeterKind,
    pub unit: MeterUnit,
    pub size: u32,
}

/// Handle of a meter array in its pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MeterId(pub(crate) u16);

/// One meter's state: two token buckets and the time they were last filled.
#[derive(Clone, Copy, Debug, Default)]
pub struct MeterCell {
    config: Option<MeterConfig>,
    /// RFC 2697 Tc / RFC 2698 Tc, scaled.
    committed: u128,
    /// RFC 2697 Te / RFC 2698 Tp, scaled.
    excess_or_peak: u128,
    last: SimTime,
}

impl MeterCell {
    /// Writes a configuration: both buckets full at `now`.
    pub fn configure(&mut self, config: MeterConfig, now: SimTime) {
        let (c, e) = match config {
            MeterConfig::SrTcm { cbs, ebs, .. } => (cbs, ebs),
            MeterConfig::TrTcm { cbs, pbs, .. } => (cbs, pbs),
        };
        self.config = Some(config);
        self.committed = c as u128 * SCALE;
        self.excess_or_peak = e as u128 * SCALE;
        self.last = now;
    }

    pub fn config(&self) -> Option<MeterConfig> {
        self.config
    }

    /// Colours a packet of `packet_length` bytes arriving at `now`.
    /// `pre_color` is `None` in colour-blind mode, the packet's colour in
    /// colour-aware mode.
    pub fn execute(
        &mut self,
        unit: MeterUnit,
        now: SimTime,
        packet_length: u32,
        pre_color: Option<Color>,
    ) -> Color {
        let Some(config) = self.config else {
            return Color::Green;
        };
        let b = match unit {
            MeterUnit::Bytes => packet_length as u128,
            MeterUnit::Packets => 1,
        } * SCALE;
        let dt = now.saturating_sub(self.last).ps() as u128;
        self.last = self.last.max(now);
        let pre = pre_color.unwrap_or(Color::Green);
        match config {
            MeterConfig::SrTcm { cir, cbs, ebs } => {
                // RFC 2697 section 3: tokens that overflow C go to E.
                let (cbs, ebs) = (cbs as u128 * SCALE, ebs as u128 * SCALE);
                let tc = self.committed + dt * cir as u128;
                if tc > cbs {
                    self.excess_or_peak = (self.excess_or_peak + (tc - cbs)).min(ebs);
                    self.committed = cbs;
                } else {
                    self.committed = tc;
                }
                // RFC 2697 section 4 (colour-blind is colour-aware with green).
                if pre == Color::Green && self.committed >= b {
                    self.committed -= b;
                    Color::Green
                } else if pre != Color::Red && self.excess_or_peak >= b {
                    self.excess_or_peak -= b;
                    Color::Yellow
                } else {
                    Color::Red
                }
            }
            MeterConfig::TrTcm { cir, cbs, pir, pbs } => {
                // RFC 2698 section 3: each bucket fills at its own rate.
                let (cbs, pbs) = (cbs as u128 * SCALE, pbs as u128 * SCALE);
                self.committed = (self.committed + dt * cir as u128).min(cbs);
                self.excess_or_peak = (self.excess_or_peak + dt * pir as u128).min(pbs);
                // RFC 2698 section 4.
                if pre == Color::Red || self.excess_or_peak < b {
                    Color::Red
                } else if pre == Color::Yellow || self.committed < b {
                    self.excess_or_peak -= b;
                    Color::Yellow
                } else {
                    self.excess_or_peak -= b;
                    self.committed -= b;
                    Color::Green
                }
            }
        }
    }
}

pub(crate) struct MeterArray {
    pub(crate) spec: MeterSpec,
    pub(crate) cells: Vec<MeterCell>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use Color::*;

    fn us(t: u64) -> SimTime {
        SimTime::from_us(t)
    }

    /// Runs (time, length, expected colour) steps through one colour-blind meter.
    fn script(config: MeterConfig, unit: MeterUnit, steps: &[(SimTime, u32, Color)]) {
        let mut m = MeterCell::default();
        m.configure(config, SimTime::ZERO);
        for (i, &(t, len, want)) in steps.iter().enumerate() {
            assert_eq!(
                m.execute(unit, t, len, None),
                want,
                "step {i}: {len} at {t}"
            );
        }
    }

    #[test]
    fn unconfigured_meter_is_green() {
        let mut m = MeterCell::default();
        assert_eq!(m.execute(MeterUnit::Bytes, us(1), 1_000_000, None), Green);
    }

    #[test]
    fn srtcm_bytes_follows_rfc2697() {
        // CIR 1 byte/us, CBS 1000 B, EBS 2000 B; both buckets full at 0.
        let cfg = MeterConfig::SrTcm {
            cir: 1_000_000,
            cbs: 1000,
            ebs: 2000,
        };
        script(
            cfg,
            MeterUnit::Bytes,
            &[
                (us(0), 600, Green),   // Tc 1000 -> 400
                (us(0), 600, Yellow),  // Te 2000 -> 1400
                (us(0), 600, Yellow),  // Te 1400 -> 800
                (us(0), 600, Yellow),  // Te 800 -> 200
                (us(0), 600, Red),     // Tc 400, Te 200
                (us(100), 600, Red),   // Tc 500, Te 200
                (us(300), 600, Green), // Tc 700 -> 100
                // 1700 tokens: Tc fills to CBS, the 800 that overflow go to Te.
                (us(2000), 1000, Green),  // Tc 1000 -> 0, Te 1000
                (us(2000), 1000, Yellow), // Te 1000 -> 0
                (us(2000), 64, Red),
                // A long idle time caps Te at EBS: at most CBS + EBS pass.
                (us(1_000_000), 1000, Green),
                (us(1_000_000), 2000, Yellow),
                (us(1_000_000), 64, Red),
            ],
        );
    }

    #[test]
    fn srtcm_packets_follows_rfc2697() {
        // CIR 1000 packets/s (one per ms), CBS 2, EBS 1.
        let cfg = MeterConfig::SrTcm {
            cir: 1000,
            cbs: 2,
            ebs: 1,
        };
        let ms = SimTime::from_ms;
        script(
            cfg,
            MeterUnit::Packets,
            &[
                (ms(0), 1500, Green),
                (ms(0), 64, Green),
                (ms(0), 9000, Yellow),
                (ms(0), 64, Red),
                (ms(1), 64, Green), // one token
                (ms(1), 64, Red),
                (SimTime::from_us(2500), 64, Green), // 1.5 tokens -> 0.5
                (SimTime::from_us(2500), 64, Red),
                // 7.5 more: Tc full (2), Te full (1).
                (ms(10), 64, Green),
                (ms(10), 64, Green),
                (ms(10), 64, Yellow),
                (ms(10), 64, Red),
            ],
        );
    }

    #[test]
    fn trtcm_bytes_follows_rfc2698() {
        // CIR 1 B/us, CBS 500 B, PIR 2 B/us, PBS 1500 B.
        let cfg = MeterConfig::TrTcm {
            cir: 1_000_000,
            cbs: 500,
            pir: 2_000_000,
            pbs: 1500,
        };
        script(
            cfg,
            MeterUnit::Bytes,
            &[
                (us(0), 400, Green),   // Tp 1100, Tc 100
                (us(0), 400, Yellow),  // Tp 700
                (us(0), 400, Yellow),  // Tp 300
                (us(0), 400, Red),     // Tp 300 < 400: nothing taken
                (us(50), 400, Yellow), // Tc 150, Tp 400 -> 0
                (us(50), 1, Red),
                // Both buckets cap at their burst sizes.
                (us(1000), 500, Green),   // Tc 500 -> 0, Tp 1500 -> 1000
                (us(1000), 1000, Yellow), // Tp 0
                (us(1000), 1, Red),
                // PBS bounds the largest packet that is ever not red.
                (us(10_000), 1501, Red),
            ],
        );
    }

    #[test]
    fn trtcm_packets_mode() {
        // 1 packet per ms committed, 4 per ms peak; CBS 1, PBS 2.
        let cfg = MeterConfig::TrTcm {
            cir: 1000,
            cbs: 1,
            pir: 4000,
            pbs: 2,
        };
        let ms = SimTime::from_ms;
        script(
            cfg,
            MeterUnit::Packets,
            &[
                (ms(0), 9000, Green),
                (ms(0), 64, Yellow),
                (ms(0), 64, Red),
                (SimTime::from_us(250), 64, Yellow), // one peak token, no committed
                (ms(1), 64, Green),
            ],
        );
    }

    #[test]
    fn colour_aware_modes_never_promote() {
        let mut sr = MeterCell::default();
        sr.configure(
            MeterConfig::SrTcm {
                cir: 1,
                cbs: 1000,
                ebs: 1000,
            },
            SimTime::ZERO,
        );
        assert_eq!(
            sr.execute(MeterUnit::Bytes, us(0), 100, Some(Yellow)),
            Yellow
        );
        assert_eq!(sr.execute(MeterUnit::Bytes, us(0), 100, Some(Red)), Red);
        assert_eq!(sr.execute(MeterUnit::Bytes, us(0), 100, Some(Green)), Green);
        let mut tr = MeterCell::default();
        tr.configure(
            MeterConfig::TrTcm {
                cir: 1,
                cbs: 1000,
                pir: 1,
                pbs: 1000,
            },
            SimTime::ZERO,
        );
        assert_eq!(
            tr.execute(MeterUnit::Bytes, us(0), 100, Some(Yellow)),
            Yellow
        );
        assert_eq!(tr.execute(MeterUnit::Bytes, us(0), 100, Some(Red)), Red);
        assert_eq!(tr.execute(MeterUnit::Bytes, us(0), 100, Some(Green)), Green);
        // Yellow took 100 from Tp only, green 100 from both: Tp 800, Tc 900.
        assert_eq!(tr.execute(MeterUnit::Bytes, us(0), 850, None), Red);
        assert_eq!(tr.execute(MeterUnit::Bytes, us(0), 800, None), Green);
    }
}
