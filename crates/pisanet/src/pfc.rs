//! Priority flow control (IEEE 802.1Qbb): the formulas a
//! lossless fabric is configured by: the headroom a link needs, and the PFC
//! and P4QCN thresholds of seed 002 (P4QCN) section 3.2.2. The traffic
//! manager that uses them is crates/pisanet/src/sim/pfc.rs; docs/model.md
//! "Priority flow control" says what is modelled and what is not.

use pisanet_engine::{BitRate, SimTime};
use pisanet_net::packet::MIN_FRAME_BYTES;

/// Bit times in one pause quantum (IEEE 802.1Qbb clause 36 / 802.3 Annex 31B:
/// a quantum is the time to transmit 512 bits at the link's rate).
pub const BITS_PER_QUANTUM: u64 = 512;

// The parameters (`topology.pfc`) are declared with the rest of `[topology]`
// in pisanet-net (docs/architecture.md, "Parameters: declared once").
pub use pisanet_net::params::{AutoKw, Headroom, PfcParams as PfcCfg};

/// The headroom (bytes) a (port, priority) needs so that nothing is lost
/// between crossing XOFF and the upstream sender stopping, for a link of
/// `rate` and one-way propagation `delay`, frames up to `mtu` bytes,
/// `lossless` lossless priorities on the port, and a sender that reacts
/// `response` after the PAUSE's last bit arrived.
///
/// The terms follow the Cisco white paper "Priority Flow Control: Build
/// Reliable Layer 2 Infrastructure" (c11-542809, the worst-case delays of
/// IEEE 802.1Qbb Annex N): the receiver may be sending a full frame when
/// the threshold is crossed (one MTU before the PAUSE can leave), the PAUSE
/// frames themselves (one 64-byte frame per lossless priority, which may
/// queue behind one another), the cable twice (the PAUSE travelling up and
/// the data on the wire coming down), the sender's response time, and the
/// frame the sender has started (one MTU). One more MTU: the packet whose
/// arrival crossed XOFF is counted whole, so occupancy can stand a packet
/// above XOFF when the PAUSE is sent. Preamble and inter-frame gap are not
/// modelled (docs/model.md), so they are not counted.
pub fn headroom_bytes(
    rate: BitRate,
    delay: SimTime,
    mtu: u64,
    lossless: u32,
    response: SimTime,
) -> u64 {
    let bytes_in = |t: SimTime| -> u64 {
        // Bytes the link carries in t, rounded up.
        let bits = t.ps() as u128 * rate.bps() as u128;
        bits.div_ceil(8 * 1_000_000_000_000) as u64
    };
    3 * mtu
        + lossless.max(1) as u64 * MIN_FRAME_BYTES as u64
        + bytes_in(delay + delay)
        + bytes_in(response)
}

/// How long `quanta` pause quanta last on a link of `rate`.
pub fn pause_time(quanta: u16, rate: BitRate) -> SimTime {
    let bits = quanta as u128 * BITS_PER_QUANTUM as u128;
    SimTime::from_ps((bits * 1_000_000_000_000).div_ceil(rate.bps().max(1) as u128) as u64)
}

/// Seed 002 section 3.2.2: the PFC threshold of a switch with `buffer`
/// bytes shared by `ports` ports, `prios` PFC priorities (8 in the paper)
/// and `flight` bytes in flight per port: Q_PFC <= (Q - 8 n Q_flight) / 8n.
/// `None` when the headroom alone exceeds the buffer.
pub fn q_pfc(buffer: u64, ports: u64, prios: u64, flight: u64) -> Option<u64> {
    let k = prios * ports;
    buffer.checked_sub(k * flight).map(|free| free / k.max(1))
}

/// Seed 002 section 3.2.2: the P4QCN threshold under the DCQCN-style
/// shared-buffer bound, Q_P4QCN < alpha (B - 8 n Q_flight) / (8 n (alpha + 1)),
/// with alpha = 8 as the paper uses; also at most Q_PFC - Q_flight.
pub fn q_p4qcn(buffer: u64, ports: u64, prios: u64, flight: u64, alpha: u64) -> Option<u64> {
    let k = prios * ports;
    let free = buffer.checked_sub(k * flight)?;
    let shared = alpha * free / (k.max(1) * (alpha + 1));
    let below_pfc = q_pfc(buffer, ports, prios, flight)?.checked_sub(flight)?;
    Some(shared.min(below_pfc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headroom_counts_mtus_frames_and_the_wire_twice() {
        // 10 Gb/s, 1 us: 2 us of wire = 2500 B; 3 MTU of 1518; one PAUSE.
        let h = headroom_bytes(
            BitRate::from_gbps(10.0),
            SimTime::from_us_f64(1.0),
            1518,
            1,
            SimTime::ZERO,
        );
        assert_eq!(h, 3 * 1518 + 64 + 2500);
        // Longer cable, faster link: more headroom; a response time adds rate x time.
        let h2 = headroom_bytes(
            BitRate::from_gbps(100.0),
            SimTime::from_us_f64(5.0),
            1518,
            8,
            SimTime::from_us_f64(1.0),
        );
        assert_eq!(h2, 3 * 1518 + 8 * 64 + 125_000 + 12_500);
    }

    #[test]
    fn pause_quantum_is_512_bit_times() {
        // 65535 quanta at 10 Gb/s: 65535 * 512 bits / 1e10 = 3.355392 ms.
        assert_eq!(
            pause_time(65535, BitRate::from_gbps(10.0)),
            SimTime::from_us_f64(3355.392)
        );
        assert_eq!(
            pause_time(1, BitRate::from_gbps(100.0)),
            SimTime::from_ps(5120)
        );
    }

    #[test]
    fn seed_002_thresholds() {
        // Q = 12 MB, n = 32 ports, 8 priorities, 10 KB in flight:
        // Q_PFC = (12e6 - 256 * 1e4) / 256 = 36 875. P4QCN (alpha 8): the
        // shared-buffer bound 8 * 9.44e6 / (256 * 9) = 32 777 is above
        // Q_PFC - Q_flight = 26 875, which binds.
        assert_eq!(q_pfc(12_000_000, 32, 8, 10_000), Some(36_875));
        assert_eq!(q_p4qcn(12_000_000, 32, 8, 10_000, 8), Some(26_875));
        // With more buffer the shared-buffer bound binds.
        let shared = 8 * (100_000_000 - 256 * 10_000) / (256 * 9);
        assert_eq!(q_p4qcn(100_000_000, 32, 8, 10_000, 8), Some(shared));
        assert!(shared < q_pfc(100_000_000, 32, 8, 10_000).unwrap() - 10_000);
        // Headroom alone larger than the buffer: no threshold.
        assert_eq!(q_pfc(1_000, 32, 8, 10_000), None);
    }

    #[test]
    fn bad_settings_are_one_line_errors() {
        let mut c = PfcCfg {
            enabled: true,
            priorities: vec![0, 3],
            ..Default::default()
        };
        let e = c.validate(2).unwrap_err();
        assert!(
            e.starts_with("topology.pfc.priorities: 3 is not a priority"),
            "{e}"
        );
        c.priorities = vec![1];
        assert!(c.validate(2).is_ok());
        assert_eq!(c.lossless_mask(2), 0b10);
        c.priorities.clear();
        assert_eq!(c.lossless_mask(8), 0xff);
        c.xoff_kb = Some(10.0);
        c.xon_kb = Some(20.0);
        let e = c.validate(2).unwrap_err();
        assert!(e.starts_with("topology.pfc.xon_kb: must be at most"), "{e}");
        assert!(!e.contains('\n'));
    }
}
