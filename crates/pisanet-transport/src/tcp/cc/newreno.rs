//! NewReno window management (RFC 5681 section 3.1). The fast-recovery
//! procedure of RFC 6582 lives in the sender; this is only the window.

use super::{AckEvent, Controller, Window};

/// Slow start, congestion avoidance with byte counting, and the loss
/// responses of RFC 5681. Stateless beyond [`Window`], unless
/// `TcpConfig::ca_segment_count` or `TcpConfig::newreno_ack_adder` asks
/// for one of ns-3's growth rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NewReno {
    /// `TcpConfig::ca_segment_count`: ns-3 3.44's `TcpLinuxReno` growth.
    seg_count: bool,
    /// `TcpConfig::newreno_ack_adder`: ns-3 3.44's `TcpNewReno` growth.
    ack_adder: bool,
    /// With `seg_count`, ns-3's `m_cWndCnt`: segments acknowledged towards
    /// the next increase. No cut resets it.
    cnt: u32,
    /// With `seg_count`, ns-3's `m_bytesAckedNotProcessed`: acknowledged
    /// bytes short of a whole segment, carried to the next ACK.
    carry: u32,
}

impl NewReno {
    /// NewReno with `TcpConfig::ca_segment_count` on or off.
    pub fn with_segment_count(on: bool) -> Self {
        NewReno {
            seg_count: on,
            ..NewReno::default()
        }
    }

    /// Whether this NewReno grows by segments acknowledged, as ns-3 does:
    /// `TcpConfig::ca_segment_count` (`TcpLinuxReno`) or
    /// `TcpConfig::newreno_ack_adder` (`TcpNewReno`).
    pub fn segment_count(&self) -> bool {
        self.seg_count || self.ack_adder
    }

    /// This NewReno with `TcpConfig::newreno_ack_adder` on or off. With
    /// `ca_segment_count` on too (the config refuses the pair), the
    /// segment count wins.
    pub fn with_ack_adder(mut self, on: bool) -> Self {
        self.ack_adder = on;
        self
    }

    /// With `ca_segment_count` or `newreno_ack_adder`: `acked` bytes as
    /// whole segments, the remainder carried (ns-3 3.44
    /// `TcpSocketBase::ProcessAck`: segsAcked = bytesAcked / SMSS, plus one
    /// each time the carried remainders make a segment). Called for every
    /// ACK of new data, whether or not the window may grow on it.
    pub(super) fn count_segments(&mut self, acked: u64, mss: u64) -> u64 {
        if !self.segment_count() {
            return 0;
        }
        let total = acked + u64::from(self.carry);
        // The remainder is below `mss`, which is a u32.
        self.carry = u32::try_from(total % mss).unwrap_or(0);
        total / mss
    }

    /// `newreno_ack_adder`'s growth, ns-3 3.44's `TcpNewReno::
    /// IncreaseWindow` on `segs` segments acknowledged: once per ACK, not
    /// per segment or byte.
    fn grow_per_ack(w: &mut Window, mut segs: u64) {
        if w.in_slow_start() && segs >= 1 {
            // `TcpNewReno::SlowStart`: one SMSS for an ACK of at least one
            // whole segment, whatever it covers, with no cap at ssthresh;
            // the other segments go on to congestion avoidance.
            w.cwnd += w.mss;
            segs -= 1;
        }
        if !w.in_slow_start() && segs > 0 {
            // `TcpNewReno::CongestionAvoidance`: cwnd += max(1,
            // SMSS x SMSS / cwnd) bytes, truncated, once per ACK.
            w.cwnd += (w.mss * w.mss / w.cwnd.max(1)).max(1);
        }
    }

    /// `ca_segment_count`'s growth, ns-3 3.44's `TcpLinuxReno::
    /// IncreaseWindow` on `segs` segments acknowledged.
    fn grow_by_segments(&mut self, w: &mut Window, ev: &AckEvent, mut segs: u64) {
        if w.in_slow_start() {
            if ev.slow_start_all_acked {
                // `TcpLinuxReno::SlowStart`: cwnd = min(cwnd + segs x
                // SMSS, ssthresh); the segments that did not fit go on to
                // congestion avoidance.
                let before = w.cwnd;
                w.cwnd = (w.cwnd + segs * w.mss).min(w.ssthresh);
                segs -= (w.cwnd - before) / w.mss;
            } else {
                // RFC 5681 equation (2), as without the option.
                w.cwnd += ev.acked.min(w.mss);
                segs = 0;
            }
        }
        if w.in_slow_start() || segs == 0 {
            return;
        }
        // `TcpLinuxReno::CongestionAvoidance`: w = floor(cwnd / SMSS), at
        // least 1; a count already at w (the window shrank under it) adds
        // one segment and restarts; then the count grows by `segs` and
        // every whole w in it adds a segment.
        let per = (w.cwnd / w.mss).max(1);
        if u64::from(self.cnt) >= per {
            self.cnt = 0;
            w.cwnd += w.mss;
        }
        let cnt = u64::from(self.cnt) + segs;
        let steps = cnt / per;
        w.cwnd += steps * w.mss;
        // Below `per`, which is at most cwnd / SMSS; a u32 in practice.
        self.cnt = u32::try_from(cnt - steps * per).unwrap_or(u32::MAX);
    }
}

impl Controller for NewReno {
    #[inline(always)]
    fn on_ack(&mut self, w: &mut Window, ev: &AckEvent) -> bool {
        let mut segs = self.count_segments(ev.acked, w.mss);
        if let Some(beyond) = ev.loss_exit_acked {
            // ns-3 3.44 `ProcessAck` leaving CA_LOSS: the carry above
            // comes from all the ACK delivered, the growth from
            // `segsAcked = (ackNumber - m_recover) / SMSS` only.
            segs = beyond / w.mss;
        }
        if ev.in_recovery {
            return false;
        }
        // RFC 7661 section 4.2 / Linux `tcp_reno_cong_avoid`: a flow that
        // did not use its window (limited by the application, the receive
        // window or the host's send budget) does not grow it.
        if !ev.cwnd_limited {
            return false;
        }
        if self.seg_count {
            self.grow_by_segments(w, ev, segs);
        } else if self.ack_adder {
            Self::grow_per_ack(w, segs);
        } else if w.in_slow_start() && ev.slow_start_all_acked {
            // `TcpConfig::slow_start_all_acked`: ns-3 3.44
            // `TcpLinuxReno::SlowStart` (which `TcpDctcp` uses; ns-3's
            // `TcpNewReno` adds one SMSS per ACK: `newreno_ack_adder`),
            // cwnd = min(cwnd + segmentsAcked x SMSS, ssthresh), and Linux
            // `tcp_slow_start`, cwnd = min(cwnd + acked, ssthresh); what
            // is left over counts towards congestion avoidance, as both do.
            // Leaving ns-3's CA_LOSS, only what the ACK acknowledged
            // beyond the recovery point (`AckEvent::loss_exit_acked`).
            let acked = ev.loss_exit_acked.unwrap_or(ev.acked);
            let grown = (w.cwnd + acked).min(w.ssthresh);
            let left = acked - (grown - w.cwnd);
            w.cwnd = grown;
            if left > 0 {
                w.ca_bytes_acked += left;
                if w.ca_bytes_acked >= w.cwnd {
                    w.ca_bytes_acked -= w.cwnd;
                    w.cwnd += w.mss;
                }
            }
        } else if w.in_slow_start() {
            // RFC 5681 section 3.1, equation (2): cwnd += min(N, SMSS).
            w.cwnd += ev.acked.min(w.mss);
        } else {
            // RFC 5681 section 3.1 (byte counting, RFC 3465 section 2.1):
            // cwnd += SMSS once a full cwnd of bytes has been acked.
            w.ca_bytes_acked += ev.acked;
            if w.ca_bytes_acked >= w.cwnd {
                w.ca_bytes_acked -= w.cwnd;
                w.cwnd += w.mss;
            }
        }
        false
    }

    fn on_fast_retransmit(&mut self, w: &mut Window, flight: u64) {
        // RFC 5681 section 3.2 step 2 / RFC 6582 section 3.2 step 2:
        // ssthresh = max(FlightSize / 2, 2 * SMSS), equation (4).
        w.ssthresh = w.half_flight(flight);
        w.ca_bytes_acked = 0;
    }

    fn on_rto(&mut self, w: &mut Window, flight: u64, first: bool) {
        // RFC 5681 section 3.1: on the first timeout of a segment, equation
        // (4); "if the segment has already been retransmitted by the
        // retransmission timer at least once, ssthresh is held constant".
        if first {
            w.ssthresh = w.half_flight(flight);
        }
        // RFC 5681 section 3.1: cwnd is set to the loss window, 1 SMSS.
        w.cwnd = w.mss;
        w.ca_bytes_acked = 0;
    }
}
