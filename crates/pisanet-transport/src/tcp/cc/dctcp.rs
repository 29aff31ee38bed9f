//! DCTCP (RFC 8257): NewReno plus a per-window estimate of the fraction of
//! marked bytes, `alpha`, and a window cut of `alpha / 2` on ECN echoes.

use super::{AckEvent, Controller, NewReno, Window};

/// DCTCP sender state (RFC 8257 section 3.3).
#[derive(Clone, Debug, PartialEq)]
#[repr(C)]
pub struct Dctcp {
    // NOTE: `repr(C)`, what every ACK reads first, then what the end of an
    // observation window reads (`alpha`, `g`): 56 bytes, which with the
    // `Cc` tag before them fill the line the sender puts its controller on
    // (docs/performance.md, "Session 12: host side").
    /// DCTCP.BytesAcked in the current observation window.
    bytes_acked: u64,
    /// DCTCP.BytesMarked in the current observation window.
    bytes_marked: u64,
    /// DCTCP.WindowEnd: when `snd_una` passes it, one observation window ends.
    window_end: u64,
    /// `snd_nxt` at the last ECE-triggered cut: no further cut until the
    /// ACKs pass it (once per window of data, RFC 3168 section 6.1.2).
    cwr_end: Option<u64>,
    /// DCTCP.Alpha, the estimated fraction of marked bytes.
    alpha: f64,
    /// EWMA gain g.
    g: f64,
    reno: NewReno,
    /// `TcpConfig::dctcp_loss_uses_alpha`: a loss sets ssthresh to
    /// (1 - alpha / 2) x cwnd, as ns-3 3.44 does, instead of halving.
    pub(super) loss_uses_alpha: bool,
    /// `TcpConfig::dctcp_no_floor`: the alpha-scaled ssthresh has no
    /// 2-SMSS floor, as ns-3 3.44's.
    pub(super) no_floor: bool,
    /// `TcpConfig::dctcp_window_end_next_tx`: the observation window ends
    /// when `snd_una` reaches `window_end`, set to ns-3's
    /// `m_nextTxSequence` (`AckEvent::next_tx`); `window_end` is
    /// `u64::MAX` until the first ACK starts the first window.
    end_next_tx: bool,
}

impl Dctcp {
    /// `g = 1 / 2^g_shift`; `g_shift` above 16 is treated as 16.
    pub fn new(g_shift: u8) -> Self {
        Dctcp {
            reno: NewReno::default(),
            g: 1.0 / f64::from(1u32 << g_shift.min(16)),
            // NOTE: alpha starts at 1, the conservative choice (Linux's
            // default dctcp_alpha_on_init): the first marks cut by half.
            alpha: 1.0,
            window_end: 0,
            bytes_acked: 0,
            bytes_marked: 0,
            cwr_end: None,
            loss_uses_alpha: false,
            no_floor: false,
            end_next_tx: false,
        }
    }

    /// `TcpConfig::dctcp_window_end_next_tx`.
    pub fn with_window_end_next_tx(mut self, on: bool) -> Self {
        self.end_next_tx = on;
        // ns-3's `m_nextSeqFlag`: the first ACK sets the first window's end.
        self.window_end = if on { u64::MAX } else { 0 };
        self
    }

    /// `TcpConfig::ca_segment_count`: the window grows as ns-3 3.44's
    /// `TcpLinuxReno`, `TcpDctcp`'s parent.
    pub fn with_ca_segment_count(mut self, on: bool) -> Self {
        self.reno = NewReno::with_segment_count(on);
        self
    }

    /// Whether `TcpConfig::ca_segment_count` is on.
    pub fn segment_count(&self) -> bool {
        self.reno.segment_count()
    }

    /// `TcpConfig::dctcp_loss_uses_alpha`.
    pub fn with_loss_uses_alpha(mut self, on: bool) -> Self {
        self.loss_uses_alpha = on;
        self
    }

    /// `TcpConfig::dctcp_no_floor`.
    pub fn with_no_floor(mut self, on: bool) -> Self {
        self.no_floor = on;
        self
    }

    /// The ssthresh of an alpha-scaled reduction of `cwnd`:
    /// cwnd x (1 - alpha / 2) (RFC 8257 section 3.3), at least 2 SMSS
    /// unless `no_floor`.
    fn alpha_ssthresh(&self, w: &Window) -> u64 {
        let cut = (w.cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64;
        if self.no_floor {
            // `TcpConfig::dctcp_no_floor`: ns-3 3.44's
            // `TcpDctcp::GetSsThresh` (tcp-dctcp.cc),
            // `static_cast<uint32_t>((1 - m_alpha / 2.0) * tcb->m_cWnd)`.
            return cut;
        }
        // NOTE: floor of 2 SMSS as for a loss (RFC 5681 equation (4)), as
        // Linux's `dctcp_ssthresh` does (only windows under 4 SMSS differ
        // from ns-3's, which has none: `dctcp_no_floor`).
        cut.max(2 * w.mss)
    }

    /// Whether the alpha-scaled reduction has no floor (`dctcp_no_floor`).
    pub fn no_floor(&self) -> bool {
        self.no_floor
    }

    pub fn g(&self) -> f64 {
        self.g
    }
}

impl Controller for Dctcp {
    #[inline(always)]
    fn on_ack(&mut self, w: &mut Window, ev: &AckEvent) -> bool {
        // RFC 8257 section 3.3: count acked bytes, and those acked with ECE.
        self.bytes_acked += ev.acked;
        if ev.ece {
            self.bytes_marked += ev.acked;
        }
        // RFC 8257 section 3.3: once SND.UNA passes WindowEnd, the window of
        // observation is over: F = BytesMarked / BytesAcked,
        // alpha = (1 - g) * alpha + g * F, WindowEnd = SND.NXT, reset counts.
        let window_over = if self.end_next_tx {
            // `dctcp_window_end_next_tx`: ns-3 3.44 `TcpDctcp::PktsAcked`,
            // `m_lastAckedSeq >= m_nextSeq`, the first call setting
            // `m_nextSeq` before the test.
            if self.window_end == u64::MAX {
                self.window_end = ev.next_tx;
            }
            ev.snd_una >= self.window_end
        } else {
            ev.snd_una > self.window_end
        };
        if window_over {
            if self.bytes_acked > 0 {
                let f = self.bytes_marked as f64 / self.bytes_acked as f64;
                self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
            }
            self.window_end = if self.end_next_tx {
                ev.next_tx
            } else {
                ev.snd_nxt
            };
            self.bytes_acked = 0;
            self.bytes_marked = 0;
        }
        // RFC 8257 section 3.3: on ECE, cwnd = cwnd * (1 - alpha / 2), at
        // most once per window of data (RFC 3168 section 6.1.2). A loss
        // recovery in progress has already reduced the window.
        let may_cut = !matches!(self.cwr_end, Some(end) if ev.snd_una <= end);
        if ev.ece && !ev.in_recovery && may_cut {
            // cwnd itself never grows from a cut.
            w.ssthresh = self.alpha_ssthresh(w);
            w.cwnd = w.cwnd.min(w.ssthresh);
            w.ca_bytes_acked = 0;
            self.cwr_end = Some(ev.snd_nxt);
            // `ca_segment_count`: the acknowledged bytes still count
            // towards whole segments (ns-3's `ProcessAck` in CA_CWR).
            self.reno.count_segments(ev.acked, w.mss);
            return true;
        }
        // Otherwise the window grows as NewReno's (RFC 8257 section 3.3).
        self.reno.on_ack(w, ev)
    }

    fn on_dup_ack(&mut self, ece: bool, mss: u64) {
        // `TcpConfig::dctcp_dupack_bytes`: a duplicate ACK counts as one
        // MSS acknowledged, marked if it carries ECE (Linux 4.x
        // `dctcp_update_alpha`: "count dupack as MSS size"; ns-3
        // `TcpSocketBase::ProcessAck` calls `PktsAcked(1)` on a duplicate
        // ACK). RFC 8257 section 3.3 counts only newly acknowledged bytes.
        self.bytes_acked += mss;
        if ece {
            self.bytes_marked += mss;
        }
    }

    fn end_ecn_window(&mut self) {
        // `TcpConfig::cwr_ends_at_timeout`: ns-3 3.44's guard is its
        // CA_CWR state, which `ReTxTimeout` ends (CA_LOSS).
        self.cwr_end = None;
    }

    fn on_fast_retransmit(&mut self, w: &mut Window, flight: u64) {
        if self.loss_uses_alpha {
            // `TcpConfig::dctcp_loss_uses_alpha`: ns-3 3.44's
            // `TcpSocketBase::EnterRecovery` sets ssthresh from
            // `TcpDctcp::GetSsThresh`, (1 - alpha / 2) x cwnd (the flight
            // is ignored).
            w.ssthresh = self.alpha_ssthresh(w);
            w.ca_bytes_acked = 0;
            return;
        }
        // RFC 8257 section 3.5: react to loss as conventional TCP does
        // (Linux: `dctcp_state` -> `dctcp_react_to_loss`, cwnd / 2).
        self.reno.on_fast_retransmit(w, flight);
    }

    fn on_rto(&mut self, w: &mut Window, flight: u64, first: bool) {
        if self.loss_uses_alpha {
            // ns-3 3.44's `TcpSocketBase::ReTxTimeout`: ssthresh from
            // `TcpDctcp::GetSsThresh` unless the head was already resent by
            // the timer (as RFC 5681 section 3.1); cwnd = 1 SMSS.
            if first {
                w.ssthresh = self.alpha_ssthresh(w);
            }
            w.cwnd = w.mss;
            w.ca_bytes_acked = 0;
            return;
        }
        // RFC 8257 section 3.5 (Linux: `dctcp_cwnd_event(CA_EVENT_LOSS)`
        // -> `dctcp_react_to_loss`, cwnd / 2).
        self.reno.on_rto(w, flight, first);
    }

    fn alpha(&self) -> Option<f64> {
        Some(self.alpha)
    }
}

#[cfg(test)]
mod layout_tests {
    use super::Dctcp;
    use std::mem::offset_of;

    /// What every ACK reads, and `alpha` and `g`, in the first 56 bytes
    /// (with the `Cc` tag before them, one line of the sender).
    #[test]
    fn an_ack_reads_the_first_56_bytes() {
        for end in [
            offset_of!(Dctcp, bytes_acked) + 8,
            offset_of!(Dctcp, bytes_marked) + 8,
            offset_of!(Dctcp, window_end) + 8,
            offset_of!(Dctcp, cwr_end) + 16,
            offset_of!(Dctcp, alpha) + 8,
            offset_of!(Dctcp, g) + 8,
        ] {
            assert!(end <= 56, "{end}");
        }
    }
}
