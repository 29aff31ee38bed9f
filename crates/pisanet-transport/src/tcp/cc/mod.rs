//! Congestion control: how the congestion window reacts to ACKs, ECN echoes
//! and losses.
//!
//! Owns: `cwnd` and `ssthresh` ([`Window`]) and the algorithm state behind
//! them. A controller is a small trait whose hooks are no-ops by default
//! (smoltcp's design); dispatch goes through the [`Cc`] enum.
//!
//! Leaves to the sender: the loss-recovery procedure itself (which segment to
//! retransmit, fast-recovery window inflation and deflation, RFC 6582), and
//! deciding when a hook applies.

mod cubic;
mod dctcp;
mod newreno;

pub use cubic::Cubic;
pub use dctcp::Dctcp;
pub use newreno::NewReno;

use super::CcKind;
use pisanet_engine::SimTime;

/// The window state a controller manipulates, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub cwnd: u64,
    pub ssthresh: u64,
    /// Sender maximum segment size (SMSS).
    pub mss: u64,
    /// Bytes acked since the last congestion-avoidance increase
    /// (RFC 3465 appropriate byte counting).
    pub ca_bytes_acked: u64,
}

impl Window {
    /// The initial window of `init_segments` segments; ssthresh starts
    /// "arbitrarily high" (RFC 5681 section 3.1).
    pub fn new(mss: u64, init_segments: u64) -> Self {
        Window {
            cwnd: mss * init_segments,
            ssthresh: u64::MAX,
            mss,
            ca_bytes_acked: 0,
        }
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// The ssthresh after a loss: RFC 5681 equation (4),
    /// max(FlightSize / 2, 2 * SMSS), with FlightSize capped at cwnd.
    ///
    /// NOTE: RFC 5681 section 3.1 asks for "no more than" equation (4).
    /// Without SACK, `snd_nxt - snd_una` after a long recovery counts data
    /// the receiver already holds beyond a hole, and can be many times what
    /// the network carries; halving it would set ssthresh far above the
    /// path's capacity and loop into overshoot and timeouts. Capping by
    /// cwnd is what Linux's Reno does (`tcp_reno_ssthresh`: cwnd / 2).
    pub fn half_flight(&self, flight: u64) -> u64 {
        (flight.min(self.cwnd) / 2).max(2 * self.mss)
    }
}

/// What one ACK that advanced `snd_una` tells the controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckEvent {
    /// Bytes newly acknowledged by this ACK.
    pub acked: u64,
    /// The ACK carried ECE.
    pub ece: bool,
    /// `snd_una` after this ACK.
    pub snd_una: u64,
    /// `snd_nxt` when the ACK arrived.
    pub snd_nxt: u64,
    /// One past the last segment sent, a resend included (ns-3's
    /// `m_nextTxSequence`; `TcpConfig::dctcp_window_end_next_tx`).
    pub next_tx: u64,
    /// The sender is in fast recovery (the window is managed by RFC 6582).
    pub in_recovery: bool,
    /// The flow used its window before this ACK (RFC 7661 section 4.2, as
    /// Linux's `tcp_is_cwnd_limited`): the window may grow only then. The
    /// sender computes it ([`super::TcpSender`] docs); false keeps cwnd as is.
    pub cwnd_limited: bool,
    /// When the ACK arrived (CUBIC's clock, RFC 9438 section 4.2).
    pub now: SimTime,
    /// The smoothed RTT, if sampled (CUBIC's target W_cubic(t + RTT)).
    pub srtt: Option<SimTime>,
    /// `TcpConfig::slow_start_all_acked`: slow start grows cwnd by every
    /// byte this ACK acknowledged (up to ssthresh), not by at most 1 SMSS.
    pub slow_start_all_acked: bool,
    /// With `reno_scoreboard` and `slow_start_all_acked`,
    /// `ca_segment_count` or `newreno_ack_adder`, on the ACK that ends
    /// ns-3's CA_LOSS (the cumulative ACK reaches the recovery point set at
    /// the timeout): the bytes it acknowledged beyond the recovery point. ns-3 3.44's
    /// `TcpSocketBase::ProcessAck` then recomputes `segsAcked = (ackNumber
    /// - m_recover) / SMSS` for `IncreaseWindow`, so the window grows by
    /// those segments only, not by all the ACK covered. `None` otherwise:
    /// the window grows by `acked`.
    pub loss_exit_acked: Option<u64>,
}

/// Hooks of a congestion controller. All default to doing nothing.
pub trait Controller {
    /// An ACK acknowledged new data. Returns true if it reduced the window
    /// in response to congestion (the sender then sets CWR, RFC 3168).
    fn on_ack(&mut self, _w: &mut Window, _ev: &AckEvent) -> bool {
        false
    }

    /// A duplicate ACK arrived (with ECE or not), with `dctcp_dupack_bytes`
    /// on: DCTCP counts it as `mss` bytes acknowledged.
    fn on_dup_ack(&mut self, _ece: bool, _mss: u64) {}

    /// Fast retransmit is about to happen with `flight` bytes outstanding:
    /// set ssthresh. The sender then inflates cwnd for fast recovery.
    fn on_fast_retransmit(&mut self, _w: &mut Window, _flight: u64) {}

    /// The retransmission timer expired with `flight` bytes outstanding.
    /// `first` is false when the segment was already resent by a timeout.
    fn on_rto(&mut self, _w: &mut Window, _flight: u64, _first: bool) {}

    /// `TcpConfig::cwr_ends_at_timeout`: a retransmission timeout ends
    /// the window of the last ECN reduction, so the next ECE may cut at
    /// once (DCTCP's once-per-window guard, RFC 8257 section 3.3 / RFC
    /// 3168 section 6.1.2, is forgotten).
    fn end_ecn_window(&mut self) {}

    /// Classic ECN (RFC 3168 section 6.1.2): an ECE arrived and the sender
    /// decided to react (once per window of data, not in loss recovery)
    /// with `flight` bytes outstanding. The default halves as for a loss:
    /// ssthresh per RFC 5681 equation (4), cwnd = ssthresh. The sender
    /// then sets CWR. DCTCP never gets it (its reaction is in `on_ack`).
    fn on_ece(&mut self, w: &mut Window, flight: u64) {
        w.ssthresh = w.half_flight(flight);
        w.cwnd = w.cwnd.min(w.ssthresh);
        w.ca_bytes_acked = 0;
    }

    /// The DCTCP congestion estimate, if this controller keeps one.
    fn alpha(&self) -> Option<f64> {
        None
    }
}

/// A controller of one of the supported kinds.
// NOTE: `repr(u8)`: the tag first and each controller's state 8 bytes
// after it, so that the tag and DCTCP's per-ACK state share a line of the
// sender (docs/performance.md, "Session 12: host side").
#[derive(Clone, Debug, PartialEq)]
#[repr(u8)]
pub enum Cc {
    NewReno(NewReno),
    Dctcp(Dctcp),
    Cubic(Cubic),
}

impl Cc {
    pub fn new(kind: CcKind) -> Self {
        match kind {
            CcKind::NewReno => Cc::NewReno(NewReno::default()),
            CcKind::Dctcp { g_shift } => Cc::Dctcp(Dctcp::new(g_shift)),
            CcKind::Cubic { c, beta } => Cc::Cubic(Cubic::new(c, beta)),
        }
    }

    /// `TcpConfig::dctcp_loss_uses_alpha`; other controllers ignore it.
    pub fn with_dctcp_loss_uses_alpha(self, on: bool) -> Self {
        match self {
            Cc::Dctcp(d) => Cc::Dctcp(d.with_loss_uses_alpha(on)),
            other => other,
        }
    }

    /// `TcpConfig::dctcp_no_floor`; other controllers ignore it.
    pub fn with_dctcp_no_floor(self, on: bool) -> Self {
        match self {
            Cc::Dctcp(d) => Cc::Dctcp(d.with_no_floor(on)),
            other => other,
        }
    }

    /// `TcpConfig::dctcp_window_end_next_tx`; other controllers ignore it.
    pub fn with_dctcp_window_end_next_tx(self, on: bool) -> Self {
        match self {
            Cc::Dctcp(d) => Cc::Dctcp(d.with_window_end_next_tx(on)),
            other => other,
        }
    }

    /// `TcpConfig::ca_segment_count`, for NewReno and DCTCP (CUBIC's
    /// window follows its own curve and ignores it).
    pub fn with_ca_segment_count(self, on: bool) -> Self {
        match self {
            Cc::NewReno(_) => Cc::NewReno(NewReno::with_segment_count(on)),
            Cc::Dctcp(d) => Cc::Dctcp(d.with_ca_segment_count(on)),
            other => other,
        }
    }

    /// `TcpConfig::newreno_ack_adder`, for NewReno only (ns-3's DCTCP
    /// grows as its `TcpLinuxReno`: `ca_segment_count`).
    pub fn with_newreno_ack_adder(self, on: bool) -> Self {
        match self {
            Cc::NewReno(r) => Cc::NewReno(r.with_ack_adder(on)),
            other => other,
        }
    }

    /// The window grows by segments acknowledged, as ns-3's does:
    /// `TcpConfig::ca_segment_count` (NewReno or DCTCP) or
    /// `TcpConfig::newreno_ack_adder` (NewReno).
    pub fn segment_count(&self) -> bool {
        match self {
            Cc::NewReno(r) => r.segment_count(),
            Cc::Dctcp(d) => d.segment_count(),
            Cc::Cubic(_) => false,
        }
    }

    /// DCTCP with `dctcp_no_floor`: its ECN reductions keep no 2-SMSS floor.
    pub fn dctcp_no_floor(&self) -> bool {
        matches!(self, Cc::Dctcp(d) if d.no_floor())
    }

    fn inner(&mut self) -> &mut dyn Controller {
        match self {
            Cc::NewReno(c) => c,
            Cc::Dctcp(c) => c,
            Cc::Cubic(c) => c,
        }
    }
}

impl Controller for Cc {
    // NOTE: a direct match, not `inner`'s dynamic call: the sender's every
    // ACK comes here, and DCTCP's and NewReno's hooks then inline into it
    // (docs/performance.md, "Session 12: host side").
    #[inline(always)]
    fn on_ack(&mut self, w: &mut Window, ev: &AckEvent) -> bool {
        match self {
            Cc::NewReno(c) => c.on_ack(w, ev),
            Cc::Dctcp(c) => c.on_ack(w, ev),
            Cc::Cubic(c) => c.on_ack(w, ev),
        }
    }
    fn on_dup_ack(&mut self, ece: bool, mss: u64) {
        self.inner().on_dup_ack(ece, mss)
    }
    fn on_fast_retransmit(&mut self, w: &mut Window, flight: u64) {
        self.inner().on_fast_retransmit(w, flight)
    }
    fn end_ecn_window(&mut self) {
        self.inner().end_ecn_window();
    }
    fn on_rto(&mut self, w: &mut Window, flight: u64, first: bool) {
        self.inner().on_rto(w, flight, first)
    }
    fn on_ece(&mut self, w: &mut Window, flight: u64) {
        self.inner().on_ece(w, flight)
    }
    fn alpha(&self) -> Option<f64> {
        match self {
            Cc::NewReno(c) => c.alpha(),
            Cc::Dctcp(c) => c.alpha(),
            Cc::Cubic(c) => c.alpha(),
        }
    }
}

#[cfg(test)]
#[path = "cc_tests.rs"]
mod tests;
