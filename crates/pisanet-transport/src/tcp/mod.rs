//! TCP as two one-way state machines: a [`TcpSender`] that pushes `size`
//! bytes and a [`TcpReceiver`] that delivers them in order and acknowledges.
//!
//! Owns: segmentation, acknowledgement, loss recovery (fast retransmit and
//! NewReno fast recovery, RFC 6582, or with [`TcpConfig::sack`] SACK,
//! RFC 2018, and RFC 6675 recovery), the retransmission timer (RFC 6298,
//! [`rto`]), congestion control ([`cc`]: NewReno per RFC 5681, DCTCP per
//! RFC 8257, CUBIC per RFC 9438), ECN (DCTCP's, or classic RFC 3168 with
//! [`TcpConfig::ecn`]), the FIN, and the application's rate cap
//! ([`TcpConfig::app_rate_bps`]) and close ([`TcpSender::close`]).
//!
//! Simplifications, each deliberate (see docs/model.md):
//! * Sequence numbers are 64-bit byte offsets starting at 0. FIN rides on
//!   the segment with the last byte and, like the SYN of the optional
//!   handshake ([`TcpConfig::handshake`]), takes no sequence number: data
//!   flows at once (or after the SYN-ACK), and a flow is complete when
//!   every byte is cumulatively acknowledged.
//! * Data goes one way. The receiver sends pure ACKs (seq 0, no payload).
//! * No timestamps, no window scaling (the window is a u32 of bytes); SACK
//!   is the only option, and only with [`TcpConfig::sack`].
//!
//! Duration-limited flows (iperf3 `-t`): create the sender and receiver
//! with `u64::MAX` bytes, and call [`TcpSender::close`] when the time is
//! up: no byte beyond those sent goes, a FIN tells the receiver where the
//! flow ends ([`TcpReceiver::set_size`] does too), and the flow completes
//! when what was sent is acknowledged. With a rate cap the sender needs its
//! timer while the token bucket holds it back: `timer_deadline` covers it.
//!
//! Guarantees: the sender never has more than `min(cwnd, rwnd)` bytes in
//! flight (`snd_nxt - snd_una`), where `rwnd` is the window of the latest
//! acceptable ACK; the one exception is the RFC 9293 section 3.8.6.1
//! zero-window probe, which carries one byte when nothing is in flight and
//! the window is zero. The receiver hands bytes to the application exactly
//! once and in order, and checks this independently of its own sequence
//! bookkeeping ([`TcpReceiver::delivery_error`]).

pub mod cc;
mod receiver;
mod reno_board;
pub mod rto;
mod scoreboard;
mod sender;

#[cfg(test)]
mod test_util;

#[cfg(test)]
mod ns3_options_tests;

#[cfg(test)]
mod window_floor_tests;

#[cfg(test)]
mod features_tests;

pub use receiver::{ReceiverStats, TcpReceiver};
pub use sender::{SenderStats, TcpSender};

use pisanet_engine::SimTime;
use pisanet_net::packet::{Ecn, FlowId, Ipv4, Packet, PacketExtra, SackOption, Tcp, L4, PROTO_TCP};
use serde::{Deserialize, Serialize};

/// The congestion control a sender runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CcKind {
    /// RFC 5681 slow start and congestion avoidance with RFC 6582 recovery.
    NewReno,
    /// RFC 8257 DCTCP. The EWMA gain is `g = 1 / 2^g_shift` (RFC 8257
    /// section 4.2 recommends 1/16, i.e. `g_shift = 4`). Range 0..=16.
    Dctcp { g_shift: u8 },
    /// RFC 9438 CUBIC ([`cc::Cubic`]): `W_cubic(t) = c (t - K)^3 + W_max`
    /// in segments and seconds, multiplicative decrease `beta`. RFC 9438
    /// section 5 sets c = 0.4 and beta = 0.7. Ranges: c in (0, 1e6],
    /// beta in [0.5, 1) (RFC 9438 section 4.6 gives 0.7; below 0.5 CUBIC
    /// would cut harder than Reno, and 1 would never cut).
    Cubic { c: f64, beta: f64 },
}

impl CcKind {
    /// DCTCP with the recommended gain g = 1/16.
    pub const DCTCP: CcKind = CcKind::Dctcp { g_shift: 4 };
    /// CUBIC with RFC 9438 section 5's constants, C = 0.4, beta = 0.7.
    pub const CUBIC: CcKind = CcKind::Cubic { c: 0.4, beta: 0.7 };

    /// Whether data packets of this kind are sent ECN-capable (Ect0).
    pub fn ecn_capable(self) -> bool {
        matches!(self, CcKind::Dctcp { .. })
    }
}

/// Parameters of one TCP flow, shared by its sender and receiver.
///
/// Every field has a data-center default ([`TcpConfig::default`]); call
/// [`TcpConfig::validate`] on user input before building endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    /// Payload bytes per segment (SMSS). Default 1460 (a 1518 B frame).
    /// Range >= 1.
    pub mss: u32,
    /// Initial congestion window in segments (RFC 6928 allows 10).
    /// Default 10. Range >= 1.
    pub init_cwnd_segments: u32,
    /// Lower clamp of the retransmission timeout, in place of RFC 6298
    /// (2.4)'s one second. Default 1 ms (data-center practice).
    #[serde(with = "sim_time_ps")]
    pub min_rto: SimTime,
    /// Upper clamp of the retransmission timeout, backoff included
    /// (RFC 6298 (2.5)). Default 1 s. Range >= `min_rto`.
    #[serde(with = "sim_time_ps")]
    pub max_rto: SimTime,
    /// RTO before the first RTT sample (RFC 6298 (2.1) says 1 s for the
    /// Internet). Default 3 ms. Range > 0; clamped into [min_rto, max_rto].
    #[serde(with = "sim_time_ps")]
    pub initial_rto: SimTime,
    /// Acknowledge every second segment instead of every one (RFC 5681
    /// section 4.2). Default false.
    pub delayed_ack: bool,
    /// How long a delayed ACK may wait. Default 40 us. Range > 0 when
    /// `delayed_ack` is on.
    #[serde(with = "sim_time_ps")]
    pub delayed_ack_timeout: SimTime,
    /// The window the receiver advertises, in bytes. Default 4 MiB, above
    /// the bandwidth-delay product of any data-center path we model, so it
    /// limits nothing unless a scheme rewrites it. Range >= 1.
    pub rwnd_bytes: u32,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681 section 3.2).
    /// Default 3. Range >= 1.
    pub dupack_threshold: u32,
    /// Congestion control. Default NewReno (DCTCP needs ECN-marking
    /// switches to differ from it).
    pub cc: CcKind,
    /// Open the connection with a SYN / SYN-ACK exchange before any data
    /// (RFC 9293 section 3.5), as Linux and ns-3 do: data leaves one round
    /// trip after the flow starts, and the SYN's round trip is the first
    /// RTT sample (as Linux: `tcp_ack` -> `tcp_clean_rtx_queue` times the SYN).
    /// A lost SYN is resent after the RTO, doubled each time. Default false
    /// (data at once, the model before this option). See docs/model.md.
    pub handshake: bool,
    /// RFC 3042 limited transmit: each of the first two duplicate ACKs
    /// (below `dupack_threshold`) lets one new segment out beyond cwnd, so a
    /// small window still collects the duplicate ACKs fast retransmit needs.
    /// ns-3 does it (`TcpSocketBase::LimitedTransmit`, default true); Linux
    /// gets the same effect by counting a duplicate ACK as a SACKed segment
    /// (`tcp_add_reno_sack`), which lowers `tcp_packets_in_flight` by one.
    /// Default false (the model before this option).
    pub limited_transmit: bool,
    /// Classic ECN (RFC 3168) for NewReno and CUBIC: data is sent ECT(0),
    /// the receiver echoes a CE mark with ECE on every ACK until a segment
    /// with CWR arrives (section 6.1.3), and the sender reduces its window
    /// as for a loss, at most once per window of data and without
    /// retransmitting (section 6.1.2), then sets CWR on its next new data.
    /// DCTCP ignores it (it is always ECN-capable, RFC 8257). Default false.
    pub ecn: bool,
    /// SACK (RFC 2018) with RFC 6675 loss recovery: the receiver reports
    /// up to three SACK blocks on every ACK while it holds out-of-order
    /// data; the sender keeps a scoreboard and recovers with pipe,
    /// IsLost and NextSeg instead of RFC 6582. Default false (Linux and
    /// ns-3 default to on; see docs/model.md "Hosts").
    pub sack: bool,
    /// Clock granularity G in RFC 6298's RTO <- SRTT + max(G, 4 RTTVAR)
    /// (sections 2.2-2.3), before the clamp to `[min_rto, max_rto]`.
    /// ns-3 3.44 uses 1 ms (`TcpSocketBase::ClockGranularity`), so its RTO
    /// is at least SRTT + 1 ms; Linux's is SRTT + max(4 mdev, rto_min)
    /// (`tcp_set_rto`), i.e. G = the minimum RTO. Default zero: one tick
    /// of our clock (1 ps), so RTO = max(min_rto, SRTT + 4 RTTVAR), the
    /// model before this option. See docs/model.md, "Hosts".
    #[serde(with = "sim_time_ps")]
    pub rto_granularity: SimTime,
    /// ns-3's CA_CWR: after an ECN window reduction (DCTCP's cut, or
    /// classic ECN's) outside loss recovery, until an ACK passes the
    /// highest byte sent at the reduction, duplicate ACKs are counted but
    /// start neither limited transmit nor fast retransmit, so a loss in
    /// that window waits for the RTO. ns-3 3.44 does this
    /// (`TcpSocketBase::DupAck` acts only in CA_OPEN, CA_DISORDER and
    /// CA_RECOVERY); Linux does not (`tcp_fastretrans_alert` enters
    /// Recovery from CWR), nor does RFC 3168 section 6.1.2, which limits
    /// window reductions, not loss recovery. Default false. See
    /// docs/model.md, "Hosts".
    pub cwr_ignores_dupacks: bool,
    /// ns-3's window in CA_CWR: after an ECN window reduction (DCTCP's
    /// or classic ECN's), cwnd does not grow until an ACK passes the
    /// highest byte sent at the cut, and is then set to ssthresh. ns-3
    /// 3.44 does this (`ProcessAck` grows the window only outside CA_CWR
    /// and sets `m_cWnd = m_ssThresh` on leaving it); Linux also does not
    /// grow cwnd in CWR (`tcp_cong_control` runs `tcp_cwnd_reduction`,
    /// PRR, instead of `tcp_cong_avoid` while `tcp_in_cwnd_reduction`) and
    /// ends it with cwnd = ssthresh (`tcp_end_cwnd_reduction`). Off
    /// (default), DCTCP and classic ECN grow cwnd by NewReno's rule after
    /// the cut (RFC 8257 section 3.3). See docs/model.md, "Hosts".
    pub cwr_freeze: bool,
    /// ns-3's CA_CWR ends at a retransmission timeout: the once-per-window
    /// guard on ECN reductions (DCTCP's, RFC 8257 section 3.3, and classic
    /// ECN's, RFC 3168 section 6.1.2: no new cut until SND.UNA passes the
    /// highest byte sent at the last one) is forgotten at a timeout, so
    /// the next ACK of new data with ECE cuts the window and, with
    /// `cwr_ignores_dupacks`, enters CA_CWR at once, also while the
    /// timeout's resends are outstanding (ns-3's CA_LOSS). ns-3 3.44 does
    /// this: its guard is the CA_CWR state, `ReTxTimeout` replaces it with
    /// CA_LOSS, and `ReceivedAck` calls `EnterCwr` on an ECE of new data in
    /// any state but CA_CWR. Linux also forgets it (`tcp_enter_loss` sets
    /// TCP_CA_Loss) but ignores ECE until the loss is repaired
    /// (`tcp_enter_cwr` acts only below TCP_CA_CWR), then cuts at the first
    /// ECE. Default false: the guard outlives the timeout. See
    /// docs/model.md, "Hosts".
    pub cwr_ends_at_timeout: bool,
    /// ns-3's window growth: cwnd grows on every ACK of new data by the
    /// controller's rule whether or not the flow used its window (ns-3
    /// 3.44's `TcpSocketBase::ProcessAck` calls `IncreaseWindow` in
    /// CA_OPEN without a cwnd-limited check; a flow limited by the receive
    /// window grows cwnd without bound). Default false: congestion-window
    /// validation (RFC 7661 section 4.2, Linux `tcp_is_cwnd_limited`). See
    /// docs/model.md, "Hosts".
    pub unvalidated_cwnd: bool,
    /// Slow start grows cwnd by every byte an ACK acknowledges, up to
    /// ssthresh (ns-3 3.44 `TcpLinuxReno::SlowStart`, which `TcpDctcp`
    /// uses: cwnd += segmentsAcked x SMSS; Linux `tcp_slow_start`: cwnd +=
    /// acked; ns-3's `TcpNewReno` adds one SMSS per ACK instead, see
    /// `newreno_ack_adder`), the
    /// rest towards congestion avoidance. It matters when one ACK covers
    /// many segments: after a timeout without SACK, the resend of a hole
    /// acknowledges what the receiver held beyond it. With
    /// `reno_scoreboard`, the ACK that ends ns-3's CA_LOSS grows cwnd only
    /// by what it acknowledged beyond the recovery point (ns-3's
    /// `ProcessAck`, `AckEvent::loss_exit_acked`; also with
    /// `ca_segment_count`). Default false: RFC
    /// 5681 equation (2), cwnd += min(N, SMSS). See docs/model.md, "Hosts".
    pub slow_start_all_acked: bool,
    /// RTT samples from every ACK that acknowledges new data, as ns-3 and
    /// Linux take them, instead of one timed segment per round trip (RFC
    /// 6298 section 3's minimum, the model before this option). A sample
    /// is taken when the oldest segment the ACK covers was never
    /// retransmitted (Karn's rule; ns-3's `m_history` front, Linux's
    /// `FLAG_RETRANS_DATA_ACKED`), and measures from the send of the
    /// newest segment the ACK covers (the one whose timestamp the receiver
    /// echoes, RFC 7323 section 4.3). Default false. See docs/model.md,
    /// "Hosts".
    pub rtt_every_ack: bool,
    /// ns-3's EnterCwr from fast recovery: with `cwr_ignores_dupacks`, an
    /// ACK of new data carrying ECE during NewReno fast recovery (DCTCP,
    /// or classic `ecn`) ends the recovery and enters CA_CWR instead:
    /// ssthresh = the controller's ECN reduction of the recovery's window
    /// (DCTCP: (1 - alpha / 2) x ssthresh; classic: half the flight),
    /// cwnd = ssthresh, and the rest of the losses wait for the RTO, since
    /// CA_CWR neither resends on partial ACKs nor counts duplicate ACKs.
    /// ns-3 3.44 does this (`TcpSocketBase::ReceivedAck` calls `EnterCwr`
    /// whenever the state is not CA_CWR); Linux does not (`tcp_try_to_open`
    /// / `tcp_enter_cwr` only from CA_Open or CA_Disorder, and RFC 3168
    /// section 6.1.2 treats a loss response as the window's reduction).
    /// Without SACK only. Default false. See docs/model.md, "Hosts".
    pub ece_ends_recovery: bool,
    /// DCTCP: a duplicate ACK counts as one MSS acknowledged in alpha's
    /// estimate (RFC 8257 section 3.3's BytesAcked), and as one MSS marked
    /// when it carries ECE, as Linux 4.x (`dctcp_update_alpha`: "count
    /// dupack as MSS size") and ns-3 3.44 (`ProcessAck` calls
    /// `PktsAcked(1)` on a duplicate ACK; `TcpDctcp::PktsAcked` counts it)
    /// do. Default false: only newly acknowledged bytes count (RFC 8257).
    /// See docs/model.md, "Hosts".
    pub dctcp_dupack_bytes: bool,
    /// DCTCP: on a loss (fast retransmit, or a retransmission timeout of a
    /// segment not yet resent by the timer) ssthresh = (1 - alpha / 2) x
    /// cwnd, at least 2 SMSS, as ns-3 3.44 does (`TcpSocketBase::
    /// EnterRecovery` and `ReTxTimeout` call `TcpDctcp::GetSsThresh`,
    /// which returns (1 - alpha / 2) x cwnd and ignores the flight), and
    /// as Linux 4.x did (`dctcp_ssthresh`, the only loss response there).
    /// Default false: react to a loss as conventional TCP (RFC 8257
    /// section 3.5), as current Linux does (`dctcp_state` and
    /// `dctcp_cwnd_event` call `dctcp_react_to_loss`: ssthresh = cwnd / 2).
    /// See docs/model.md, "Hosts".
    pub dctcp_loss_uses_alpha: bool,
    /// DCTCP: the alpha-scaled reduction (cwnd x (1 - alpha / 2), on an
    /// ECN echo and, with `dctcp_loss_uses_alpha`, on a loss) has no
    /// floor, as ns-3 3.44's `TcpDctcp::GetSsThresh` returns it
    /// (src/internet/model/tcp-dctcp.cc: `(1 - m_alpha / 2.0) *
    /// tcb->m_cWnd`, used by `EnterCwr`, `EnterRecovery` and
    /// `ReTxTimeout`): cwnd may fall below one segment. Default false:
    /// at least 2 SMSS, as Linux's `dctcp_ssthresh`
    /// (`max(cwnd - ((cwnd * alpha) >> 11), 2U)`, in segments) and RFC
    /// 5681 equation (4).
    /// See docs/model.md, "Hosts".
    pub dctcp_no_floor: bool,
    /// DCTCP: alpha's observation window ends when the cumulative ACK
    /// reaches one past the last segment sent, a resent one included, as
    /// ns-3 3.44's `TcpDctcp::PktsAcked` ends it (`m_lastAckedSeq >=
    /// m_nextSeq`, then `m_nextSeq = tcb->m_nextTxSequence`, which
    /// `ReTxTimeout` moves back to the head and `SendPendingData` advances
    /// past each segment it sends, resends included; `DoRetransmit` only
    /// raises it). After a timeout the windows then end a few segments
    /// apart and alpha decays fast. Default false: the window ends when
    /// `snd_una` passes SND.NXT as it stood at the window's start (RFC
    /// 8257 section 3.3; Linux's `dctcp_update_alpha` takes `tp->snd_nxt`,
    /// which a resend does not move back). See docs/model.md, "Hosts".
    pub dctcp_window_end_next_tx: bool,
    /// Congestion avoidance counts whole segments acknowledged, as ns-3
    /// 3.44's `TcpLinuxReno::CongestionAvoidance` (which `TcpDctcp`
    /// uses): one SMSS is added each time the count reaches w =
    /// floor(cwnd / SMSS), and nothing resets the count at a window cut;
    /// acknowledged bytes become segments with the remainder carried
    /// (`ProcessAck`'s `m_bytesAckedNotProcessed`). With
    /// `slow_start_all_acked`, slow start adds whole segments too
    /// (`TcpLinuxReno::SlowStart`). NewReno and DCTCP only. Default false:
    /// byte counting (RFC 3465 section 2.1), one SMSS per cwnd of bytes
    /// acknowledged, the count reset at each cut (Linux's
    /// `tcp_init_cwnd_reduction` zeroes `snd_cwnd_cnt`). See
    /// docs/model.md, "Hosts".
    pub ca_segment_count: bool,
    /// NewReno grows once per ACK, as ns-3 3.44's `TcpNewReno::
    /// IncreaseWindow` (tcp-congestion-ops.cc): acknowledged bytes become
    /// whole segments with the remainder carried (as for
    /// `ca_segment_count`); an ACK of at least one segment adds one SMSS in
    /// slow start (`SlowStart`, whatever the ACK covers, not capped at
    /// ssthresh), and the segments left once cwnd reaches ssthresh add
    /// max(1, SMSS x SMSS / cwnd) bytes, once per ACK however many
    /// segments it covers (`CongestionAvoidance`). With an ACK per
    /// segment this is byte counting less the truncation (about 1400 of
    /// 1448 bytes per round trip at 100 segments); an ACK covering k
    /// segments grows cwnd k times less. NewReno only (ns-3's `TcpDctcp`
    /// grows as `TcpLinuxReno`: `ca_segment_count`); not with
    /// `ca_segment_count` or `slow_start_all_acked`. Default false: RFC
    /// 5681 slow start (cwnd += min(N, SMSS)) and byte counting (RFC 3465
    /// section 2.1). See docs/model.md, "Hosts".
    pub newreno_ack_adder: bool,
    /// The receiver takes a CE mark only on a segment whose sequence
    /// number is above that of the last CE-marked segment it took, as
    /// ns-3 3.44's `TcpSocketBase::ForwardUp` does (`m_ecnCESeq <
    /// seq`; otherwise the segment counts as unmarked ECT,
    /// `CA_EVENT_ECN_NO_CE`, which under DCTCP ends the CE state, so its
    /// ACK carries no ECE). A go-back-N resend lies below the marked
    /// segments it resends, so its mark is not echoed. DCTCP's echo and
    /// classic ECN's alike. Default false: every CE mark is echoed (RFC
    /// 8257 section 3.2, RFC 3168 section 6.1.3; Linux's
    /// `tcp_ecn_check_ce` looks at the mark only). See docs/model.md,
    /// "Hosts".
    pub ce_new_seq_only: bool,
    /// ns-3's sender-side silly-window avoidance: new data leaves only
    /// when the usable window (min(cwnd, rwnd) less what is in flight)
    /// holds a full segment or all the data left (ns-3 3.44
    /// `TcpSocketBase::SendPendingData`: "Preventing Silly Window
    /// Syndrome. Wait to send."). With nothing in flight and a window
    /// under one segment no ACK will come: the sender waits for the
    /// retransmission timer (ns-3's `NewAck` keeps it armed while the
    /// send buffer holds data), whose expiry is a timeout like any other
    /// (`ReTxTimeout`: ssthresh from the controller with nothing in
    /// flight, cwnd = 1 SMSS, the RTO doubled, CA_LOSS) and sends one
    /// segment. Linux's cwnd counts whole segments (`tcp_cwnd_test`), so
    /// its window never falls below one. Default false: with nothing in
    /// flight the sender sends what the window allows at once. See
    /// docs/model.md, "Hosts".
    pub full_segment_window: bool,
    /// Every ACK of new data that restarts the retransmission timer first
    /// recomputes the RTO from SRTT and RTTVAR (RTO = SRTT + max(G, 4
    /// RTTVAR), clamped), so a backoff ends at the first new ACK after a
    /// timeout, sample or not, as ns-3 3.44's `TcpSocketBase::NewAck`
    /// does (`m_rto = Max(m_rtt->GetEstimate() + Max(m_clockGranularity,
    /// 4 x m_rtt->GetVariation()), m_minRto)` before it schedules
    /// `ReTxTimeout`; a partial ACK of a fast recovery other than the
    /// first does not restart the timer and so does not recompute).
    /// Default false: RFC 6298 section 5 with Karn's algorithm, the backed
    /// off RTO kept until a valid RTT sample (Linux: `tcp_ack_update_rtt`
    /// clears `icsk_backoff` only with a sample, which its timestamps give
    /// on the ACK of a retransmission too). Before the first sample it
    /// changes nothing. See docs/model.md, "Hosts".
    pub rto_reset_on_ack: bool,
    /// Without SACK, ns-3 3.44's per-segment send buffer (`TcpTxBuffer`)
    /// and the loss recovery `TcpSocketBase` runs on it: each duplicate
    /// ACK marks one more segment SACKed (`AddRenoSack`); the pipe is the
    /// bytes sent, less those SACKed and lost, plus those resent; a timeout
    /// marks every outstanding segment lost and they are resent oldest
    /// first as the window allows; marks left above a cumulative ACK mark
    /// the next head lost (resent at once, and one duplicate ACK then
    /// starts recovery). Read only with `sack = false`. Default false:
    /// RFC 5681 / RFC 6582 with go-back-N after a timeout. See
    /// docs/model.md, "Hosts".
    pub reno_scoreboard: bool,
    /// With `rtt_every_ack`, the tick of the TCP timestamp clock the
    /// samples are read from: a sample is (ticks at the ACK - ticks at the
    /// echoed send) x tick, a zero difference counting as 1 us, as ns-3
    /// 3.44 does (`TcpOptionTS::NowToTsValue` counts milliseconds;
    /// `TcpSocketBase::EstimateRtt` turns a zero sample into 1 us). Zero
    /// (default): the simulator's own clock (Linux times samples in
    /// microseconds, `tcp_clean_rtx_queue`).
    #[serde(with = "sim_time_ps")]
    pub ts_clock: SimTime,
    /// Application rate cap (iperf3 `-b`): a token bucket in the sender
    /// lets new payload bytes leave at most at this rate (bits/s) with a
    /// burst of `app_burst_bytes`. `None` (default): no cap. Range > 0.
    pub app_rate_bps: Option<u64>,
    /// Depth of the application token bucket in payload bytes; 0 means one
    /// MSS (the bucket then paces segment by segment). Default 0.
    pub app_burst_bytes: u64,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1460,
            init_cwnd_segments: 10,
            min_rto: SimTime::from_ms(1),
            max_rto: SimTime::from_ms(1000),
            initial_rto: SimTime::from_ms(3),
            delayed_ack: false,
            delayed_ack_timeout: SimTime::from_us(40),
            rwnd_bytes: 4 << 20,
            dupack_threshold: 3,
            cc: CcKind::NewReno,
            handshake: false,
            limited_transmit: false,
            ecn: false,
            sack: false,
            rto_granularity: SimTime::ZERO,
            cwr_ignores_dupacks: false,
            cwr_freeze: false,
            cwr_ends_at_timeout: false,
            unvalidated_cwnd: false,
            slow_start_all_acked: false,
            rtt_every_ack: false,
            ece_ends_recovery: false,
            dctcp_dupack_bytes: false,
            dctcp_loss_uses_alpha: false,
            dctcp_no_floor: false,
            dctcp_window_end_next_tx: false,
            ca_segment_count: false,
            newreno_ack_adder: false,
            ce_new_seq_only: false,
            full_segment_window: false,
            rto_reset_on_ack: false,
            reno_scoreboard: false,
            ts_clock: SimTime::ZERO,
            app_rate_bps: None,
            app_burst_bytes: 0,
        }
    }
}

impl TcpConfig {
    /// Checks every field against its documented range.
    pub fn validate(&self) -> Result<(), String> {
        if self.mss == 0 {
            return Err("tcp.mss must be at least 1 byte".into());
        }
        if self.init_cwnd_segments == 0 {
            return Err("tcp.init_cwnd_segments must be at least 1".into());
        }
        if self.min_rto > self.max_rto {
            return Err(format!(
                "tcp.min_rto ({}) must not exceed tcp.max_rto ({})",
                self.min_rto, self.max_rto
            ));
        }
        if self.max_rto == SimTime::ZERO || self.initial_rto == SimTime::ZERO {
            return Err("tcp.max_rto and tcp.initial_rto must be positive".into());
        }
        if self.delayed_ack && self.delayed_ack_timeout == SimTime::ZERO {
            return Err("tcp.delayed_ack_timeout must be positive when delayed_ack is on".into());
        }
        if self.rwnd_bytes == 0 {
            return Err("tcp.rwnd_bytes must be at least 1".into());
        }
        if self.dupack_threshold == 0 {
            return Err("tcp.dupack_threshold must be at least 1".into());
        }
        match self.cc {
            CcKind::Dctcp { g_shift } if g_shift > 16 => {
                return Err(format!("tcp.cc.g_shift must be in 0..=16, got {g_shift}"));
            }
            CcKind::Cubic { c, .. } if !(c > 0.0 && c <= 1e6) => {
                return Err(format!("tcp.cc.c must be in (0, 1e6], got {c}"));
            }
            CcKind::Cubic { beta, .. } if !(0.5..1.0).contains(&beta) => {
                return Err(format!("tcp.cc.beta must be in [0.5, 1), got {beta}"));
            }
            _ => {}
        }
        if self.app_rate_bps == Some(0) {
            return Err("tcp.app_rate_bps must be positive (None for no cap)".into());
        }
        Ok(())
    }
}

/// Serde of a [`SimTime`] as integer picoseconds.
mod sim_time_ps {
    use pisanet_engine::SimTime;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &SimTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(t.ps())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SimTime, D::Error> {
        u64::deserialize(d).map(SimTime::from_ps)
    }
}

/// Addresses, ports and ids a flow's packets carry, seen from the endpoint
/// that emits them (`src` is the emitter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowEnds {
    pub flow: FlowId,
    pub src_addr: u32,
    pub dst_addr: u32,
    pub sport: u16,
    pub dport: u16,
    /// Written into the IPv4 DSCP field (six bits).
    pub dscp: u8,
    /// Strict-priority queue index at egress.
    pub prio: u8,
}

impl FlowEnds {
    /// The same flow seen from the other end (addresses and ports swapped).
    pub fn reversed(self) -> FlowEnds {
        FlowEnds {
            src_addr: self.dst_addr,
            dst_addr: self.src_addr,
            sport: self.dport,
            dport: self.sport,
            ..self
        }
    }
}

/// Header fields of one emitted TCP packet.
pub(crate) struct SegmentSpec {
    pub seq: u64,
    pub ack: u64,
    pub flags: u8,
    pub window: u32,
    pub payload: u32,
    pub ecn: Ecn,
}

/// Builds a complete TCP packet (uid 0: the host assigns uids).
pub(crate) fn build_packet(ends: &FlowEnds, now: SimTime, s: SegmentSpec) -> Packet {
    build_packet_with_sack(ends, now, s, None)
}

/// Builds a complete TCP packet carrying `sack` (its option bytes count in
/// the wire size).
pub(crate) fn build_packet_with_sack(
    ends: &FlowEnds,
    now: SimTime,
    s: SegmentSpec,
    sack: Option<SackOption>,
) -> Packet {
    let options = sack.as_ref().map_or(0, |o| o.wire_bytes());
    Packet {
        uid: 0,
        flow: ends.flow,
        size: Packet::tcp_wire_size_with_options(s.payload, options),
        ip: Ipv4 {
            src: ends.src_addr,
            dst: ends.dst_addr,
            proto: PROTO_TCP,
            dscp: ends.dscp,
            ecn: s.ecn,
            ttl: 64,
        },
        l4: L4::Tcp(Tcp {
            sport: ends.sport,
            dport: ends.dport,
            seq: s.seq,
            ack: s.ack,
            flags: s.flags,
            window: s.window,
            payload: s.payload,
        }),
        extra: sack.map(|o| {
            Box::new(PacketExtra {
                ext: None,
                sack: Some(o),
            })
        }),
        sent_at: now,
        prio: ends.prio,
        switch_made: false,
    }
}
