//! NewReno window management (RFC 5681 section 3.1). The fast-recovery
//! procedure of RFC 6582 lives in the sender; this is only the window.

use super::{AckEvent, Controller, Window};

/// Slow start, congestion avoidance with byte counting, and the loss
/// responses of RFC 5681. Stateless beyond [`Window`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NewReno;

impl Controller for NewReno {
    #[inline(always)]
    fn on_ack(&mut self, w: &mut Window, ev: &AckEvent) -> bool {
        if ev.in_recovery {
            return false;
        }
        // RFC 7661 section 4.2 / Linux `tcp_reno_cong_avoid`: a flow that
        // did not use its window (limited by the application, the receive
        // window or the host's send budget) does not grow it.
        if !ev.cwnd_limited {
            return false;
        }
        if w.in_slow_start() && ev.slow_start_all_acked {
            // `TcpConfig::slow_start_all_acked`: ns-3 3.44
            // `TcpNewReno::SlowStart` / `TcpLinuxReno::SlowStart`,
            // cwnd = min(cwnd + segmentsAcked x SMSS, ssthresh), and Linux
            // `tcp_slow_start`, cwnd = min(cwnd + acked, ssthresh); what
            // is left over counts towards congestion avoidance, as both do.
            let grown = (w.cwnd + ev.acked).min(w.ssthresh);
            let left = ev.acked - (grown - w.cwnd);
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
