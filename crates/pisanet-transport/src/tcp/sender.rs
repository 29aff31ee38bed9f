//! The sending half of a TCP flow.
//!
//! Owns: the send sequence space (`snd_una <= snd_nxt <= snd_max <= size`),
//! duplicate-ACK counting, fast retransmit and NewReno fast recovery
//! (RFC 5681 section 3.2, RFC 6582), the retransmission timer (RFC 6298
//! section 5) with go-back-N after a timeout, the zero-window probe, and
//! Karn's rule for RTT samples.
//!
//! Guarantees: `snd_nxt - snd_una <= min(cwnd, rwnd)` after every send of
//! new data, where `rwnd` is the window of the latest acceptable ACK. Only a
//! retransmission of the segment at `snd_una` (fast retransmit, partial ACK,
//! timeout) or a one-byte zero-window probe may exceed it, as the RFCs
//! prescribe.
//!
//! Two host-facing refinements, both as Linux does them:
//!
//! * **Send budget** (Linux TCP Small Queues, `tcp_small_queue_check` in
//!   net/ipv4/tcp_output.c): the host may cap how many more bytes this flow
//!   may put into the NIC now ([`TcpSender::set_send_budget`], wire bytes;
//!   default unlimited). New data (and go-back-N resends after a timeout)
//!   leave only while the budget is positive, so the last packet may pass it
//!   by less than one packet, as Linux throttles only once the queued bytes
//!   exceed the limit. Every emitted packet is charged to the budget. The
//!   retransmission of the segment at `snd_una` (fast retransmit, partial
//!   ACK, timeout) and the zero-window probe are never held back by it:
//!   they repair a loss or a stall and are one packet each. When the budget
//!   stopped data that the windows allowed, [`TcpSender::is_budget_blocked`]
//!   says so, and the host calls [`TcpSender::on_send_ready`] once budget
//!   frees up (Linux's `tcp_tsq_handler` on TX completion).
//! * **Congestion-window validation** (RFC 7661 section 4.2, as Linux's
//!   `tcp_cwnd_validate` and `tcp_is_cwnd_limited`): after each send the
//!   sender records, per window of data, whether it was cwnd-limited and the
//!   largest flight; an ACK may grow cwnd only if the flow was cwnd-limited
//!   in the current window, or, in slow start, if cwnd is below twice that
//!   largest flight.

use super::cc::{AckEvent, Cc, Controller, Window};
use super::reno_board::RenoBoard;
use super::rto::RtoEstimator;
use super::scoreboard::Scoreboard;
use super::{build_packet, CcKind, FlowEnds, SegmentSpec, TcpConfig};
use pisanet_engine::SimTime;
use pisanet_net::packet::{tcp_flags, Ecn, Packet};
use std::collections::VecDeque;

/// Scaled credit of the application token bucket: bytes * 8 * 10^12
/// (bit-picoseconds), so that refills at a rate in bits/s over picoseconds
/// are exact integers and the rate never drifts.
const BYTE_CREDIT: u128 = 8 * 1_000_000_000_000;

/// The application's token bucket (iperf3 `-b`): new payload bytes leave
/// only against credit, refilled at `rate_bps` up to `depth` bytes.
#[derive(Clone, Debug)]
struct AppBucket {
    rate_bps: u64,
    depth: u128,
    credit: u128,
    last: SimTime,
}

impl AppBucket {
    fn refill(&mut self, now: SimTime) {
        if now > self.last {
            let add = u128::from(self.rate_bps) * u128::from((now - self.last).ps());
            self.credit = (self.credit + add).min(self.depth);
            self.last = now;
        }
    }

    /// When `bytes` of credit will be there (never before `now`).
    fn ready_at(&self, now: SimTime, bytes: u64) -> SimTime {
        let need = u128::from(bytes) * BYTE_CREDIT;
        if self.credit >= need {
            return now;
        }
        let ps = (need - self.credit).div_ceil(u128::from(self.rate_bps));
        now + SimTime::from_ps(u64::try_from(ps).unwrap_or(u64::MAX))
    }
}

/// A snapshot of a sender's counters and state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SenderStats {
    /// `snd_una`: bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    /// `snd_nxt`: next byte to send.
    pub snd_nxt: u64,
    /// Highest byte offset ever sent (exclusive).
    pub snd_max: u64,
    pub cwnd_bytes: u64,
    /// `u64::MAX` until the first congestion event.
    pub ssthresh_bytes: u64,
    /// Window of the latest acceptable ACK.
    pub rwnd_bytes: u64,
    pub srtt: Option<SimTime>,
    pub rto: SimTime,
    /// Retransmission-timer expiries with data outstanding.
    pub timeouts: u32,
    /// Fast retransmits (entries into fast recovery).
    pub fast_retransmits: u32,
    /// Segments sent again, by any mechanism.
    pub retransmitted_segments: u32,
    /// Duplicate ACKs per RFC 5681 section 2.
    pub dup_acks: u32,
    /// ACKs that acked nothing new but changed the window.
    pub window_updates: u32,
    /// Window cuts in response to ECN echoes (DCTCP).
    pub ecn_cuts: u32,
    /// ACKs received with ECE set.
    pub ece_acks: u32,
    /// Zero-window probes sent.
    pub window_probes: u32,
    /// DCTCP's alpha; `None` under NewReno.
    pub dctcp_alpha: Option<f64>,
    pub in_recovery: bool,
    /// Window cuts in response to classic ECN echoes (RFC 3168).
    pub classic_ecn_cuts: u32,
    /// Entries into SACK-based loss recovery (RFC 6675), a subset of
    /// `fast_retransmits`.
    pub sack_recoveries: u32,
    /// Rescue retransmissions (RFC 6675 NextSeg rule 4).
    pub rescue_retransmits: u32,
}

/// The sender of one flow of `size` bytes. See the module docs.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct TcpSender {
    // NOTE: `repr(C)`, by cache line, for the simulator's flow state, which
    // puts the sender 8 bytes into a line, after its endpoints' tag
    // (docs/performance.md, "Session 10" and "Session 12: host side").
    // An ACK of new data reads lines A to D and the controller's line F,
    // not E or what follows it (RTT samples read E, loss recovery, options
    // and the counters the rest). Line A (56 bytes, with the tag): what
    // every event of the flow reads (`is_complete`, `timer_deadline`) and
    // the sequence state. B: the window and its validation. C: the RTT
    // probe, the ACK's and the data's fields, the hot flags. D: the rest of
    // the hot flags, the options' boxes (a flow without them reads one word
    // each), ns-3's CWR marks and the RTO estimator's `rto` and `srtt`; its
    // cold fields fill E. F: the congestion controller, its tag and its
    // per-ACK state. `the_sender_reads_by_cache_line` checks the offsets.
    //
    // Line A.
    snd_una: u64,
    size: u64,
    /// RTO or persist deadline.
    timer: Option<SimTime>,
    /// When the token bucket will let the next segment out, while it holds
    /// the flow back.
    app_timer: Option<SimTime>,
    snd_nxt: u64,
    // Line B.
    snd_max: u64,
    /// Wire bytes the host still lets this flow put into its NIC now.
    send_budget: u64,
    /// cwnd, ssthresh and the SMSS (`win.mss`, the sender's MSS).
    win: Window,
    /// Bytes above cwnd that limited transmit lets out now: one SMSS per
    /// duplicate ACK below the threshold; 0 once recovery starts or new
    /// data is acknowledged.
    lt_allowance: u64,
    /// Linux `tp->max_packets_out`, in bytes: the largest flight in the
    /// current tracking window.
    max_flight: u64,
    // Line C.
    /// Linux `tp->cwnd_usage_seq`: `snd_nxt` when the tracking window began;
    /// once `snd_una` reaches it, a new one starts.
    cwnd_usage_seq: u64,
    /// The segment being timed: (end of its bytes, when it was sent).
    rtt_probe: RttProbe,
    ends: FlowEnds,
    /// Window of the latest acceptable ACK, as advertised.
    last_window: u32,
    dupacks: u32,
    ece_acks: u32,
    /// `first_sent_at` is set: `on_start` ran (or `close` before it).
    started: bool,
    /// `syn_sent` is set: a SYN is out and no SYN-ACK has come.
    syn_pending: bool,
    /// SACK and RFC 6675 recovery (`TcpConfig::sack`).
    sack: bool,
    in_recovery: bool,
    /// The last send stopped because of `send_budget` while the windows
    /// allowed more.
    budget_blocked: bool,
    /// Linux `tp->is_cwnd_limited`: the flow was cwnd-limited at some send
    /// in the current tracking window.
    is_cwnd_limited: bool,
    /// Set CWR on the next new data segment (RFC 3168 section 6.1.2).
    cwr_pending: bool,
    /// Classic ECN (RFC 3168) reactions (`TcpConfig::ecn`, not DCTCP).
    classic_ecn: bool,
    // Line D.
    /// The ACK being processed arrived inside a frozen CWR window.
    ack_in_cwr_freeze: bool,
    /// The segment at `snd_una` has been resent by the timer (RFC 5681
    /// section 3.1 then holds ssthresh on a further timeout).
    una_resent_by_timer: bool,
    /// `TcpConfig::unvalidated_cwnd`.
    unvalidated_cwnd: bool,
    /// `TcpConfig::slow_start_all_acked`.
    slow_start_all_acked: bool,
    data_ecn: Ecn,
    /// `TcpConfig::ece_ends_recovery` (with `cwr_ignores_dupacks`).
    ece_ends_recovery: bool,
    cwr_ignores_dupacks: bool,
    cwr_freeze: bool,
    /// The application's rate cap (`TcpConfig::app_rate_bps`).
    app: Option<Box<AppBucket>>,
    /// `TcpConfig::reno_scoreboard` (without SACK): ns-3's per-segment
    /// send buffer; `None` when the option is off.
    board: Option<Box<RenoBoard>>,
    /// `TcpConfig::rtt_every_ack`: every segment sent and not yet
    /// acknowledged, in sequence order (`None` when the option is off).
    // NOTE: boxed so that a sender without the option (nearly all) holds
    // one word here, among the fields an ACK reads, not the deque's 32
    // bytes (docs/performance.md, "Session 10").
    #[allow(clippy::box_collection)]
    sent_log: Option<Box<VecDeque<SentSeg>>>,
    /// ns-3's CA_CWR (`TcpConfig::cwr_ignores_dupacks`): after an ECN
    /// window reduction, until an ACK passes this (the highest byte sent
    /// then), duplicate ACKs start neither limited transmit nor recovery.
    /// None when the option is off or no such reduction is pending.
    ns3_cwr_until: OptSeq,
    /// `TcpConfig::cwr_freeze`: after an ECN window reduction, cwnd does
    /// not grow until an ACK passes this (the highest byte sent at the
    /// cut), and is then set to ssthresh (ns-3's CA_CWR).
    cwr_freeze_until: OptSeq,
    /// `rto` and `srtt` first, at the end of line D; the rest in line E.
    rto: RtoEstimator,
    // Line E (after the estimator's cold fields).
    dupack_threshold: u32,
    retransmitted: u32,
    ecn_cuts: u32,
    /// `TcpConfig::dctcp_dupack_bytes`.
    dctcp_dupack_bytes: bool,
    /// No partial ACK has yet arrived in this recovery (RFC 6582 section
    /// 3.2 step 3: the first one resets the timer).
    first_partial_ack: bool,
    /// `TcpConfig::cwr_ends_at_timeout`.
    cwr_ends_at_timeout: bool,
    /// Open with a SYN (`TcpConfig::handshake`).
    handshake: bool,
    // Line F: the controller (its tag, then DCTCP's per-ACK state).
    cc: Cc,
    // Options, loss recovery and counters.
    first_sent_at: Option<SimTime>,
    /// A SYN is out and no SYN-ACK has come: (when the SYN was first sent,
    /// whether it was resent). No data leaves meanwhile.
    syn_sent: Option<(SimTime, bool)>,
    /// RFC 6582 `recover`, kept as the exclusive end of the data sent when
    /// it was recorded. `None` plays the role of the initial send sequence.
    recover: Option<u64>,
    /// `TcpConfig::ts_clock` (zero: the simulator's clock).
    ts_clock: SimTime,
    completed_at: Option<SimTime>,
    /// `snd_max` at the last window reduction under classic ECN: no ECE
    /// cut until `snd_una` passes it (RFC 3168 section 6.1.2).
    cwr_end: Option<u64>,
    scoreboard: Scoreboard,
    /// RFC 6675 HighRxt (exclusive end of the highest byte retransmitted
    /// in this recovery).
    high_rxt: u64,
    /// RFC 6675 RescueRxt; `None` is "undefined".
    rescue_rxt: Option<u64>,
    /// RFC 3042 limited transmit (`TcpConfig::limited_transmit`).
    limited_transmit: bool,
    /// With `board`: ns-3's CA_LOSS, from a timeout until the cumulative
    /// ACK reaches `recover` (duplicate ACKs are ignored meanwhile).
    loss: bool,
    /// With `board`: ns-3's `m_recoverActive` (set on entering recovery or
    /// at a timeout, cleared once the cumulative ACK reaches `recover`).
    recover_active: bool,
    /// `close` was called: `size` is what had been sent then.
    closed: bool,
    /// `TcpConfig::full_segment_window` (read off the ACK path: a window
    /// under one segment, and the timer).
    full_segment_window: bool,
    /// `TcpConfig::rto_reset_on_ack`.
    rto_reset_on_ack: bool,
    timeouts: u32,
    fast_retransmits: u32,
    dup_acks: u32,
    window_updates: u32,
    window_probes: u32,
    classic_ecn_cuts: u32,
    sack_recoveries: u32,
    rescue_retransmits: u32,
    /// ns-3's `m_nextTxSequence`: one past the last segment sent, a resend
    /// included (a timeout moves it back to `snd_una`; a retransmission
    /// outside the send loop only raises it; an ACK past it raises it).
    /// DCTCP's observation window ends there with
    /// `TcpConfig::dctcp_window_end_next_tx`.
    next_tx: u64,
    /// Unused: the sender takes 56 bytes more than whole lines, so that a
    /// receiver after it (in the simulator's flow state) starts at a line.
    _pad: [u32; 5],
}

/// An optional sequence number in 8 bytes (`Option<u64>` takes 16): the
/// largest number stands for none (a flow never sends 2^64 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct OptSeq(u64);

impl OptSeq {
    const NONE: OptSeq = OptSeq(u64::MAX);

    #[inline]
    fn some(seq: u64) -> OptSeq {
        debug_assert!(seq != u64::MAX, "the largest sequence number is none");
        OptSeq(seq)
    }

    #[inline]
    fn is_some(self) -> bool {
        self.0 != u64::MAX
    }

    #[inline]
    fn is_none(self) -> bool {
        self.0 == u64::MAX
    }

    #[inline]
    fn is_some_and(self, f: impl FnOnce(u64) -> bool) -> bool {
        self.is_some() && f(self.0)
    }
}

/// The segment being timed (RFC 6298 section 3), in 16 bytes: the end of
/// its bytes (`u64::MAX`: none) and when it was sent.
#[derive(Clone, Copy, Debug)]
struct RttProbe {
    end: u64,
    sent: SimTime,
}

impl RttProbe {
    const NONE: RttProbe = RttProbe {
        end: u64::MAX,
        sent: SimTime::ZERO,
    };

    #[inline]
    fn new(end: u64, sent: SimTime) -> RttProbe {
        debug_assert!(end != u64::MAX, "the largest sequence number is none");
        RttProbe { end, sent }
    }

    #[inline]
    fn get(self) -> Option<(u64, SimTime)> {
        (self.end != u64::MAX).then_some((self.end, self.sent))
    }

    #[inline]
    fn is_none(self) -> bool {
        self.end == u64::MAX
    }
}

impl TcpSender {
    /// A sender of `size_bytes` bytes. `ends` is seen from the sender
    /// (`src` = this host). Until the first ACK the peer's window is assumed
    /// to be `cfg.rwnd_bytes`. `cfg` should have passed
    /// [`TcpConfig::validate`]; zero sizes are raised to 1 so that nothing
    /// can loop or divide by zero.
    pub fn new(cfg: &TcpConfig, ends: FlowEnds, size_bytes: u64) -> Self {
        let mss = u64::from(cfg.mss.max(1));
        TcpSender {
            ends,
            size: size_bytes,
            dupack_threshold: cfg.dupack_threshold.max(1),
            data_ecn: if cfg.cc.ecn_capable() || cfg.ecn {
                Ecn::Ect0
            } else {
                Ecn::NotEct
            },
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            last_window: cfg.rwnd_bytes,
            win: Window::new(mss, u64::from(cfg.init_cwnd_segments.max(1))),
            cc: Cc::new(cfg.cc)
                .with_dctcp_loss_uses_alpha(cfg.dctcp_loss_uses_alpha)
                .with_dctcp_no_floor(cfg.dctcp_no_floor)
                .with_dctcp_window_end_next_tx(cfg.dctcp_window_end_next_tx)
                .with_ca_segment_count(cfg.ca_segment_count)
                .with_newreno_ack_adder(cfg.newreno_ack_adder),
            rto: RtoEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto)
                .with_granularity(cfg.rto_granularity),
            dupacks: 0,
            in_recovery: false,
            recover: None,
            first_partial_ack: false,
            una_resent_by_timer: false,
            rtt_probe: RttProbe::NONE,
            sent_log: cfg.rtt_every_ack.then(Box::default),
            ts_clock: cfg.ts_clock,
            timer: None,
            cwr_pending: false,
            send_budget: u64::MAX,
            budget_blocked: false,
            is_cwnd_limited: false,
            max_flight: 0,
            cwnd_usage_seq: 0,
            first_sent_at: None,
            completed_at: None,
            handshake: cfg.handshake,
            limited_transmit: cfg.limited_transmit,
            ns3_cwr_until: OptSeq::NONE,
            cwr_ignores_dupacks: cfg.cwr_ignores_dupacks,
            cwr_freeze_until: OptSeq::NONE,
            cwr_freeze: cfg.cwr_freeze,
            cwr_ends_at_timeout: cfg.cwr_ends_at_timeout,
            unvalidated_cwnd: cfg.unvalidated_cwnd,
            slow_start_all_acked: cfg.slow_start_all_acked,
            ack_in_cwr_freeze: false,
            ece_ends_recovery: cfg.ece_ends_recovery && cfg.cwr_ignores_dupacks,
            dctcp_dupack_bytes: cfg.dctcp_dupack_bytes,
            full_segment_window: cfg.full_segment_window,
            rto_reset_on_ack: cfg.rto_reset_on_ack,
            lt_allowance: 0,
            syn_sent: None,
            started: false,
            syn_pending: false,
            classic_ecn: cfg.ecn && !matches!(cfg.cc, CcKind::Dctcp { .. }),
            cwr_end: None,
            sack: cfg.sack,
            scoreboard: Scoreboard::default(),
            high_rxt: 0,
            rescue_rxt: None,
            board: (cfg.reno_scoreboard && !cfg.sack).then(Box::default),
            loss: false,
            recover_active: false,
            app: cfg.app_rate_bps.map(|rate| {
                let depth = u128::from(cfg.app_burst_bytes.max(mss)) * BYTE_CREDIT;
                Box::new(AppBucket {
                    rate_bps: rate.max(1),
                    depth,
                    credit: depth,
                    last: SimTime::ZERO,
                })
            }),
            app_timer: None,
            closed: false,
            timeouts: 0,
            fast_retransmits: 0,
            retransmitted: 0,
            dup_acks: 0,
            window_updates: 0,
            ecn_cuts: 0,
            ece_acks: 0,
            window_probes: 0,
            classic_ecn_cuts: 0,
            sack_recoveries: 0,
            rescue_retransmits: 0,
            next_tx: 0,
            _pad: [0; 5],
        }
    }

    /// Sends the first window. Calling it twice does nothing new.
    pub fn on_start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.started || self.completed_at.is_some() {
            return;
        }
        self.first_sent_at = Some(now);
        self.started = true;
        if self.size == 0 {
            // NOTE: an empty flow is complete at once and sends nothing.
            self.completed_at = Some(now);
            return;
        }
        if let Some(app) = &mut self.app {
            // The bucket starts full when the application starts.
            app.last = now;
        }
        if self.handshake {
            // RFC 9293 section 3.5: SYN first; data waits for the SYN-ACK.
            self.syn_sent = Some((now, false));
            self.syn_pending = true;
            self.emit_syn(now, out);
            return;
        }
        self.send_new_data(now, out);
    }

    /// Sends a SYN (not ECN-capable, RFC 3168 section 6.1.1) and arms the
    /// timer for it.
    fn emit_syn(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.send_budget = self
            .send_budget
            .saturating_sub(u64::from(Packet::tcp_wire_size(0)));
        out.push(build_packet(
            &self.ends,
            now,
            SegmentSpec {
                seq: 0,
                ack: 0,
                flags: tcp_flags::SYN,
                window: self.last_window,
                payload: 0,
                ecn: Ecn::NotEct,
            },
        ));
        self.timer = Some(now + self.rto.rto());
    }

    /// A packet while the SYN is out: a SYN-ACK opens the connection.
    fn on_packet_syn_sent(&mut self, now: SimTime, pkt: &Packet, out: &mut Vec<Packet>) {
        let Some(tcp) = pkt.tcp() else { return };
        let Some((sent, resent)) = self.syn_sent else {
            return;
        };
        if !(tcp.has(tcp_flags::SYN) && tcp.has(tcp_flags::ACK)) {
            return;
        }
        self.syn_sent = None;
        self.syn_pending = false;
        self.timer = None;
        self.last_window = tcp.window;
        if !resent {
            // Karn's rule: only a SYN sent once gives a sample. Linux takes
            // it (the SYN is on its retransmission queue, `tcp_ack` ->
            // `tcp_clean_rtx_queue`).
            let r = self.rtt_sample(sent, now);
            self.rto.on_sample(r);
        }
        // NOTE: no separate third-handshake ACK: the first data segment
        // carries it (Linux and ns-3 send a 64 B pure ACK first).
        self.send_new_data(now, out);
    }

    /// Processes one packet from the receiver (an ACK, real or rewritten).
    /// Packets that are not TCP ACKs, ACK data never sent, or are older
    /// than `snd_una` are ignored.
    pub fn on_packet(&mut self, now: SimTime, pkt: &Packet, out: &mut Vec<Packet>) {
        debug_assert_eq!(self.syn_pending, self.syn_sent.is_some());
        debug_assert_eq!(self.started, self.first_sent_at.is_some());
        if self.syn_pending {
            self.on_packet_syn_sent(now, pkt, out);
            return;
        }
        let Some(tcp) = pkt.tcp() else { return };
        if !tcp.has(tcp_flags::ACK) || !self.started {
            return;
        }
        let ack = tcp.ack;
        // RFC 9293 section 3.10.7.4: an ACK of data not yet sent, or older
        // than SND.UNA, is not acceptable (and old ones carry stale windows).
        if ack > self.snd_max || ack < self.snd_una {
            return;
        }
        let ece = tcp.has(tcp_flags::ECE);
        if ece {
            self.ece_acks += 1;
        }
        if self.sack {
            self.on_ack_sack(now, pkt, ece, out);
            return;
        }
        if self.board.is_some() {
            self.on_ack_reno_board(now, pkt, ece, out);
            return;
        }
        if ack == self.snd_una {
            // RFC 5681 section 2, DUPLICATE ACKNOWLEDGMENT: (a) data is
            // outstanding, (b) the ACK carries no data, (c) neither SYN nor
            // FIN, (d) it acks SND.UNA, (e) the window is unchanged.
            let is_dup = self.snd_max > self.snd_una
                && tcp.payload == 0
                && !tcp.has(tcp_flags::SYN | tcp_flags::FIN)
                && tcp.window == self.last_window;
            if tcp.window != self.last_window {
                // A window update, not a duplicate ACK.
                self.window_updates += 1;
                self.last_window = tcp.window;
            }
            if is_dup {
                if self.dctcp_dupack_bytes {
                    self.cc.on_dup_ack(ece, self.win.mss);
                }
                self.on_dup_ack(now, ack, out);
            }
        } else {
            self.last_window = tcp.window;
            self.on_new_ack(now, ack, ece, out);
        }
        self.send_new_data(now, out);
    }

    /// The timer fired. Early or stale calls (`now` before the deadline, or
    /// no deadline) do nothing.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.app_timer.is_some_and(|d| now >= d) {
            // The token bucket has credit for the next segment again.
            self.app_timer = None;
            if !matches!(self.timer, Some(d) if now >= d) {
                if !self.is_complete() {
                    self.send_new_data(now, out);
                }
                return;
            }
        }
        match self.timer {
            Some(deadline) if now >= deadline => {}
            _ => return,
        }
        self.timer = None;
        if self.is_complete() {
            return;
        }
        if self.syn_pending {
            // RFC 6298 (5.5)-(5.6) for the SYN: back off and resend it.
            self.timeouts += 1;
            self.rto.on_timeout();
            self.syn_sent = self.syn_sent.map(|(t, _)| (t, true));
            self.emit_syn(now, out);
            return;
        }
        if self.snd_max > self.snd_una {
            self.on_retransmission_timeout(now, out);
        } else if self.full_segment_window && self.last_window > 0 {
            // `full_segment_window`: nothing in flight and a window under
            // one segment held the flow; ns-3's retransmission timer
            // fires on an empty flight.
            self.empty_flight_timeout(now);
        } else {
            self.send_window_probe(now, out);
        }
        self.send_new_data(now, out);
    }

    /// Sets how many more wire bytes this flow may put into the host's NIC
    /// now (Linux TSQ: the limit minus what the flow already has queued).
    /// Each packet the sender emits is charged against it; new data stops
    /// while it is zero. `u64::MAX` (the default) means no limit.
    pub fn set_send_budget(&mut self, bytes: u64) {
        self.send_budget = bytes;
    }

    /// What is left of the send budget.
    pub fn send_budget(&self) -> u64 {
        self.send_budget
    }

    /// The send budget, not the windows, stopped new data at the last send:
    /// the host should call [`TcpSender::on_send_ready`] when budget frees.
    pub fn is_budget_blocked(&self) -> bool {
        self.budget_blocked
    }

    /// Budget freed up (the flow's packets left the NIC): send what the
    /// windows and the new budget allow (Linux `tcp_tsq_handler` ->
    /// `tcp_write_xmit`). Harmless at any time.
    pub fn on_send_ready(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.is_complete() {
            self.budget_blocked = false;
            return;
        }
        self.send_new_data(now, out);
    }

    /// When `on_timer` must be called next: the RTO deadline while data is
    /// outstanding, the persist deadline while a zero window blocks the
    /// flow, `None` otherwise.
    pub fn timer_deadline(&self) -> Option<SimTime> {
        match (self.timer, self.app_timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The application closes the flow (iperf3 `-t` expired): no byte
    /// beyond those already sent will be, `size_bytes()` becomes that
    /// count, and the flow completes once all of them are acknowledged
    /// (at once if they already are). The segment carrying the last byte
    /// has FIN set whenever it is sent again; since it already left
    /// without it, a FIN without payload (sequence `size`, no sequence
    /// space of its own, as the model's SYN) goes out now so the receiver
    /// learns where the flow ends. It is not resent if lost: a host that
    /// needs the receiver to know the size should also tell it
    /// ([`crate::tcp::TcpReceiver::set_size`]). Calling it again, or on a
    /// flow that already sent every byte, does nothing.
    pub fn close(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.closed || self.snd_max >= self.size {
            self.closed = true;
            return;
        }
        self.closed = true;
        self.size = self.snd_max;
        self.app_timer = None;
        if self.started && !self.syn_pending {
            self.send_budget = self
                .send_budget
                .saturating_sub(u64::from(Packet::tcp_wire_size(0)));
            out.push(build_packet(
                &self.ends,
                now,
                SegmentSpec {
                    seq: self.size,
                    ack: 0,
                    flags: tcp_flags::FIN,
                    window: 0,
                    payload: 0,
                    ecn: Ecn::NotEct,
                },
            ));
        } else {
            // Closed before anything was sent (or before the SYN-ACK).
            self.syn_sent = None;
            self.syn_pending = false;
            self.first_sent_at.get_or_insert(now);
            self.started = true;
        }
        if self.is_complete() {
            self.completed_at.get_or_insert(now);
            self.timer = None;
        }
    }

    /// `close` was called.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Every byte is cumulatively acknowledged.
    pub fn is_complete(&self) -> bool {
        self.snd_una >= self.size
    }

    pub fn completed_at(&self) -> Option<SimTime> {
        self.completed_at
    }

    pub fn first_sent_at(&self) -> Option<SimTime> {
        self.first_sent_at
    }

    /// Segments sent again (fast retransmit, partial ACKs, timeouts and the
    /// go-back-N resends after them).
    /// RTT samples taken so far (RFC 6298 with Karn's rule) and the latest
    /// one: a caller that reads this after each call sees every sample.
    pub fn rtt_samples(&self) -> (u32, SimTime) {
        self.rto.samples()
    }

    pub fn retransmissions(&self) -> u32 {
        self.retransmitted
    }

    /// Bytes sent and not yet acknowledged (`snd_nxt - snd_una`).
    pub fn bytes_in_flight(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    pub fn size_bytes(&self) -> u64 {
        self.size
    }

    /// The congestion controller and its state.
    pub fn cc(&self) -> &Cc {
        &self.cc
    }

    pub fn ends(&self) -> &FlowEnds {
        &self.ends
    }

    pub fn stats(&self) -> SenderStats {
        SenderStats {
            bytes_acked: self.snd_una,
            snd_nxt: self.snd_nxt,
            snd_max: self.snd_max,
            cwnd_bytes: self.win.cwnd,
            ssthresh_bytes: self.win.ssthresh,
            rwnd_bytes: u64::from(self.last_window),
            srtt: self.rto.srtt(),
            rto: self.rto.rto(),
            timeouts: self.timeouts,
            fast_retransmits: self.fast_retransmits,
            retransmitted_segments: self.retransmitted,
            dup_acks: self.dup_acks,
            window_updates: self.window_updates,
            ecn_cuts: self.ecn_cuts,
            ece_acks: self.ece_acks,
            window_probes: self.window_probes,
            dctcp_alpha: self.cc.alpha(),
            in_recovery: self.in_recovery,
            classic_ecn_cuts: self.classic_ecn_cuts,
            sack_recoveries: self.sack_recoveries,
            rescue_retransmits: self.rescue_retransmits,
        }
    }

    fn on_dup_ack(&mut self, now: SimTime, ack: u64, out: &mut Vec<Packet>) {
        self.dupacks += 1;
        self.dup_acks += 1;
        if self.ns3_cwr_until.is_some() && !self.in_recovery {
            // ns-3's TcpSocketBase::DupAck in CA_CWR: counted, nothing else.
            return;
        }
        if self.in_recovery {
            // RFC 5681 section 3.2 step 4 (RFC 6582 section 3.2 step 3):
            // each further duplicate ACK inflates cwnd by SMSS.
            self.win.cwnd += self.win.mss;
        } else if self.limited_transmit && self.dupacks < self.dupack_threshold {
            // RFC 3042 section 2: on each of the first two duplicate ACKs,
            // send one new segment if the peer's window allows and the
            // flight stays within cwnd + 2 SMSS; cwnd itself is unchanged.
            self.lt_allowance = u64::from(self.dupacks) * self.win.mss;
        } else if self.dupacks == self.dupack_threshold {
            // RFC 6582 section 3.2 step 2: enter fast retransmit only if the
            // ACK covers more than `recover` (the highest byte sent when
            // `recover` was last recorded); otherwise do nothing.
            let covers_recover = match self.recover {
                None => true,
                Some(recover) => ack >= recover,
            };
            if covers_recover {
                self.enter_fast_recovery(now, out);
            }
        }
    }

    fn enter_fast_recovery(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.lt_allowance = 0;
        // Loss recovery manages the window from here (ns-3 CA_RECOVERY).
        self.cwr_freeze_until = OptSeq::NONE;
        let flight = self.snd_nxt - self.snd_una;
        // RFC 5681 section 3.2 step 2: ssthresh per equation (4).
        self.cc.on_fast_retransmit(&mut self.win, flight);
        // RFC 6582 section 3.2 step 2: recover = highest sequence sent.
        self.recover = Some(self.snd_max);
        self.in_recovery = true;
        self.first_partial_ack = true;
        self.fast_retransmits += 1;
        self.note_loss_reduction();
        // RFC 5681 section 3.2 step 3: retransmit the lost segment, and
        // cwnd = ssthresh + 3 * SMSS (one SMSS per duplicate ACK counted).
        self.retransmit_una(now, out);
        self.win.cwnd = self.win.ssthresh + u64::from(self.dupack_threshold) * self.win.mss;
    }

    /// Sends `[seq, seq + len)`, timing it if it is new data and no
    /// segment is being timed (RFC 6298 section 3: one per round trip);
    /// returns whether it was new data (snd_max grew to its end).
    // NOTE: inlined with `emit_data`'s body into the send loops, the
    // path of nearly every data packet; the other senders of a segment
    // (retransmissions, probes) call `emit_data` out of line
    // (docs/performance.md, "Session 12: host side").
    #[inline(always)]
    pub(super) fn emit_timed(
        &mut self,
        now: SimTime,
        seq: u64,
        len: u64,
        out: &mut Vec<Packet>,
    ) -> bool {
        if seq >= self.snd_max && self.rtt_probe.is_none() && self.sent_log.is_none() {
            self.rtt_probe = RttProbe::new(seq + len, now);
        }
        self.emit_data_inline(now, seq, len, out);
        // ns-3's `SendPendingData`: `m_nextTxSequence += sz` past what it
        // sent, a resend included.
        self.next_tx = seq + len;
        if seq + len > self.snd_max {
            self.snd_max = seq + len;
            true
        } else {
            false
        }
    }

    /// What every cumulative ACK of new data does first (both loss
    /// bookkeepings): advance snd_una, take the RTT sample, and, with
    /// `ece_ends_recovery`, turn an ECE in recovery into ns-3's CA_CWR.
    /// Returns the bytes newly acked, or `None` when the ACK was CA_CWR's
    /// and is fully handled.
    #[inline(always)]
    pub(super) fn accept_new_ack(&mut self, now: SimTime, ack: u64, ece: bool) -> Option<u64> {
        self.leave_ns3_cwr(ack);
        self.leave_cwr_freeze(ack);
        let acked = ack - self.snd_una;
        self.snd_una = ack;
        // After a go-back-N, ACKs of the original transmissions may pass
        // snd_nxt: skip what is already there.
        self.snd_nxt = self.snd_nxt.max(ack);
        self.dupacks = 0;
        self.lt_allowance = 0;
        self.una_resent_by_timer = false;

        // RFC 6298 section 3 with Karn's rule: only a segment never
        // retransmitted is timed (the probe is dropped on retransmission).
        if let Some((end, sent)) = self.rtt_probe.get() {
            if ack >= end {
                self.rto.on_sample(now.saturating_sub(sent));
                self.rtt_probe = RttProbe::NONE;
            }
        }
        self.sample_every_ack(now, ack);

        if self.in_recovery && ece && self.ece_ends_recovery && self.data_ecn != Ecn::NotEct {
            self.ns3_enter_cwr_from_recovery();
            // This ACK is CA_CWR's: no resend, no growth (ns-3
            // `ProcessAck`: PktsAcked and the recovery's DoRecovery only).
            self.after_new_ack(now, acked, ece, true);
            self.finish_new_ack(now, true);
            return None;
        }
        Some(acked)
    }

    #[inline(always)]
    fn on_new_ack(&mut self, now: SimTime, ack: u64, ece: bool, out: &mut Vec<Packet>) {
        let Some(acked) = self.accept_new_ack(now, ack, ece) else {
            return;
        };
        let was_in_recovery = self.in_recovery;
        let mut restart_timer = true;
        if self.in_recovery {
            match self.recover {
                Some(recover) if ack < recover => {
                    // RFC 6582 section 3.2 step 3, partial acknowledgment:
                    // retransmit the first unacknowledged segment, deflate
                    // cwnd by the newly acked bytes and add back one SMSS
                    // if at least one SMSS was acked.
                    self.retransmit_una(now, out);
                    self.win.cwnd = self.win.cwnd.saturating_sub(acked);
                    if acked >= self.win.mss {
                        self.win.cwnd += self.win.mss;
                    }
                    self.win.cwnd = self.win.cwnd.max(self.win.mss);
                    // ...and reset the timer on the first partial ACK only
                    // (the "Impatient" variant, RFC 6582 section 4).
                    restart_timer = self.first_partial_ack;
                    self.first_partial_ack = false;
                }
                _ => {
                    // RFC 6582 section 3.2 step 3, full acknowledgment:
                    // cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS).
                    let flight = self.snd_nxt - self.snd_una;
                    self.win.cwnd = self
                        .win
                        .ssthresh
                        .min(flight.max(self.win.mss) + self.win.mss);
                    self.win.ca_bytes_acked = 0;
                    self.in_recovery = false;
                }
            }
        }

        self.after_new_ack(now, acked, ece, was_in_recovery);
        self.finish_new_ack(now, restart_timer);
    }

    /// Completion and the retransmission timer after a new ACK.
    fn finish_new_ack(&mut self, now: SimTime, restart_timer: bool) {
        if restart_timer && self.rto_reset_on_ack {
            // `rto_reset_on_ack`: ns-3's `NewAck(ack, resetRTO = true)`
            // recomputes the RTO before it restarts the timer.
            self.rto.reset_backoff();
        }
        if self.is_complete() {
            if self.completed_at.is_none() {
                self.completed_at = Some(now);
            }
            self.timer = None;
        } else if self.snd_una >= self.snd_max {
            // RFC 6298 (5.2): all outstanding data acked, stop the timer.
            self.timer = None;
        } else if restart_timer || self.timer.is_none() {
            // RFC 6298 (5.3): new data acked, restart the timer.
            self.timer = Some(now + self.rto.rto());
        }
    }

    /// `ece_ends_recovery`: ns-3 3.44's `ReceivedAck` calls `EnterCwr` on
    /// an ECE of new data in any state but CA_CWR, fast recovery included:
    /// ssthresh = the controller's `GetSsThresh` from the recovery's cwnd
    /// (classic recovery keeps `m_cWnd` = ssthresh; the inflation is in
    /// the pipe), cwnd = ssthresh (`TcpClassicRecovery::EnterRecovery`),
    /// m_recover = the highest byte sent; the recovery is over.
    fn ns3_enter_cwr_from_recovery(&mut self) {
        let base = self.win.ssthresh;
        let target = match self.cc.alpha() {
            // `TcpDctcp::GetSsThresh`: (1 - alpha / 2) x cwnd.
            Some(alpha) => (base as f64 * (1.0 - alpha / 2.0)) as u64,
            // `TcpLinuxReno::GetSsThresh`: max(2 SMSS, flight / 2).
            None => (self.snd_max - self.snd_una) / 2,
        };
        // `dctcp_no_floor`: ns-3's `TcpDctcp::GetSsThresh` has no floor.
        self.win.ssthresh = if self.cc.dctcp_no_floor() {
            target
        } else {
            target.max(2 * self.win.mss)
        };
        self.win.cwnd = self.win.ssthresh;
        self.win.ca_bytes_acked = 0;
        self.in_recovery = false;
        self.recover = Some(self.snd_max);
        self.ecn_cuts += 1;
        self.cwr_pending = true;
        self.ns3_cwr_until = OptSeq::some(self.snd_max);
        if self.cwr_freeze {
            self.cwr_freeze_until = OptSeq::some(self.snd_max);
        }
    }

    /// The congestion controller's view of an ACK that acknowledged
    /// `acked` new bytes, with classic ECN's reaction (RFC 3168).
    #[inline(always)]
    fn after_new_ack(&mut self, now: SimTime, acked: u64, ece: bool, was_in_recovery: bool) {
        self.after_new_ack_exit(now, acked, ece, was_in_recovery, None);
    }

    /// `after_new_ack` with `AckEvent::loss_exit_acked` (an ACK that ends
    /// ns-3's CA_LOSS, `reno_scoreboard`).
    #[inline(always)]
    pub(super) fn after_new_ack_exit(
        &mut self,
        now: SimTime,
        acked: u64,
        ece: bool,
        was_in_recovery: bool,
        loss_exit_acked: Option<u64>,
    ) {
        if self.classic_ecn && ece {
            // RFC 3168 section 6.1.2: react to ECE as to a loss, but at most
            // once per window of data (not until snd_una passes what was
            // sent at the last reduction) and not during loss recovery,
            // which has reduced already; retransmit nothing; and do not
            // increase cwnd on an ECE ACK.
            let may_cut = !matches!(self.cwr_end, Some(end) if self.snd_una <= end);
            if may_cut && !was_in_recovery {
                let flight = self.snd_max - self.snd_una + acked;
                self.cc.on_ece(&mut self.win, flight);
                self.ecn_cuts += 1;
                self.classic_ecn_cuts += 1;
                self.enter_ns3_cwr();
                self.cwr_end = Some(self.snd_max);
                self.cwr_pending = true;
            }
            return;
        }
        let ev = AckEvent {
            acked,
            ece,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            next_tx: self.next_tx,
            in_recovery: was_in_recovery,
            // `cwr_freeze`: an ACK of a CWR window never grows cwnd (ns-3
            // 3.44's `ProcessAck` calls no `IncreaseWindow` in CA_CWR).
            cwnd_limited: self.is_cwnd_limited() && !self.ack_in_cwr_freeze,
            now,
            srtt: self.rto.srtt(),
            slow_start_all_acked: self.slow_start_all_acked,
            loss_exit_acked,
        };
        if self.cc.on_ack(&mut self.win, &ev) {
            self.ecn_cuts += 1;
            self.cwr_pending = true;
            if !was_in_recovery {
                self.enter_ns3_cwr();
            }
        }
        // ns-3's `NewAck`, after `PktsAcked`: an ACK past
        // `m_nextTxSequence` raises it.
        self.next_tx = self.next_tx.max(self.snd_una);
    }

    /// With `cwr_ignores_dupacks`, an ECN window reduction outside loss
    /// recovery enters ns-3's CA_CWR until an ACK passes the highest byte
    /// sent now (ns-3 3.44 `TcpSocketBase::EnterCwr`: m_recover =
    /// m_highTxMark; `ReceivedAck` leaves CA_CWR when ackNumber >
    /// m_recover).
    fn enter_ns3_cwr(&mut self) {
        if self.cwr_ignores_dupacks && !self.in_recovery && self.ns3_cwr_until.is_none() {
            self.ns3_cwr_until = OptSeq::some(self.snd_max);
        }
        if self.cwr_freeze && !self.in_recovery && self.cwr_freeze_until.is_none() {
            self.cwr_freeze_until = OptSeq::some(self.snd_max);
        }
    }

    /// `cwr_freeze`: notes whether this ACK (cumulative `ack`) belongs to
    /// a frozen CWR window, and ends the window once `ack` passes the
    /// highest byte sent at the cut: cwnd = ssthresh (ns-3 3.44
    /// `TcpSocketBase::ProcessAck` on leaving CA_CWR, as Linux's
    /// `tcp_end_cwnd_reduction`). The ACK that ends it does not grow cwnd.
    fn leave_cwr_freeze(&mut self, ack: u64) {
        self.ack_in_cwr_freeze = self.cwr_freeze_until.is_some();
        if self.cwr_freeze_until.is_some_and(|end| ack > end) {
            self.cwr_freeze_until = OptSeq::NONE;
            self.win.cwnd = self.win.ssthresh;
            self.win.ca_bytes_acked = 0;
        }
    }

    fn leave_ns3_cwr(&mut self, ack: u64) {
        if self.ns3_cwr_until.is_some_and(|end| ack > end) {
            self.ns3_cwr_until = OptSeq::NONE;
        }
    }

    /// `cwr_ends_at_timeout`: a timeout ends the last ECN reduction's
    /// window (ns-3 3.44 `ReTxTimeout`: CA_CWR -> CA_LOSS), so the next
    /// ECE of new data may cut at once (`ReceivedAck` -> `EnterCwr` in any
    /// state but CA_CWR). Called after `note_loss_reduction`, which it
    /// overrides for classic ECN.
    pub(super) fn end_ecn_window_at_timeout(&mut self) {
        if self.cwr_ends_at_timeout {
            self.cc.end_ecn_window();
            self.cwr_end = None;
        }
    }

    /// Under classic ECN, a loss response is the window's reduction for
    /// this window of data: an ECE in it does not cut again, and the next
    /// new segment carries CWR (RFC 3168 section 6.1.2).
    fn note_loss_reduction(&mut self) {
        if self.classic_ecn {
            self.cwr_end = Some(self.snd_max);
            self.cwr_pending = true;
        }
    }

    /// An acceptable ACK with SACK on (RFC 6675 section 5).
    fn on_ack_sack(&mut self, now: SimTime, pkt: &Packet, ece: bool, out: &mut Vec<Packet>) {
        let Some(tcp) = pkt.tcp() else { return };
        let ack = tcp.ack;
        let pure = tcp.payload == 0 && !tcp.has(tcp_flags::SYN | tcp_flags::FIN);
        if tcp.window != self.last_window {
            if ack == self.snd_una {
                self.window_updates += 1;
            }
            self.last_window = tcp.window;
        }
        let was_in_recovery = self.in_recovery;
        let mut acked = 0;
        if ack > self.snd_una {
            acked = ack - self.snd_una;
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            self.scoreboard.advance(ack);
            self.high_rxt = self.high_rxt.max(ack);
            self.leave_ns3_cwr(ack);
            self.leave_cwr_freeze(ack);
            // RFC 6675 section 5: a cumulative ACK resets DupAcks.
            self.dupacks = 0;
            self.lt_allowance = 0;
            self.una_resent_by_timer = false;
            if let Some((end, sent)) = self.rtt_probe.get() {
                if ack >= end {
                    self.rto.on_sample(now.saturating_sub(sent));
                    self.rtt_probe = RttProbe::NONE;
                }
            }
            self.sample_every_ack(now, ack);
        }
        // RFC 6675 section 5: update the scoreboard from every ACK; one
        // that SACKs new bytes is a duplicate acknowledgment (section 2).
        let news = self
            .scoreboard
            .update(pkt.sack_blocks(), self.snd_una, self.snd_max);
        let dup = news && pure && self.snd_max > self.snd_una;
        if dup {
            self.dup_acks += 1;
            if self.dctcp_dupack_bytes {
                self.cc.on_dup_ack(ece, self.win.mss);
            }
        }

        if self.in_recovery {
            // (A): a cumulative ACK covering RecoveryPoint ends recovery;
            // the scoreboard above it is kept. cwnd stays at ssthresh.
            if self.recover.is_some_and(|r| self.snd_una >= r) {
                self.in_recovery = false;
                self.win.ca_bytes_acked = 0;
            }
        } else if dup && self.ns3_cwr_until.is_some() {
            // ns-3's DupAck in CA_CWR: counted, nothing else.
            self.dupacks += 1;
        } else if dup {
            self.dupacks += 1;
            let recovery_allowed = match self.recover {
                None => true,
                // RFC 6675 section 5.1: no new recovery until HighACK
                // reaches the RecoveryPoint a timeout recorded.
                Some(r) => self.snd_una >= r,
            };
            // (1) DupAcks >= DupThresh, or (2) IsLost(HighACK + 1).
            let lost = self
                .scoreboard
                .lost_below(self.win.mss, self.dupack_threshold)
                > self.snd_una;
            if recovery_allowed && (self.dupacks >= self.dupack_threshold || lost) {
                self.enter_sack_recovery(now, out);
            } else if self.limited_transmit {
                // (3) Limited transmit by pipe: HighRxt = HighACK, then new
                // segments while cwnd - pipe >= 1 SMSS.
                self.high_rxt = self.snd_una;
                // Sending while flight + seg <= cwnd + allowance is then
                // pipe + seg <= cwnd: the allowance is flight - pipe.
                self.lt_allowance = (self.snd_nxt - self.snd_una).saturating_sub(self.pipe());
            }
        }

        if acked > 0 {
            self.after_new_ack(now, acked, ece, was_in_recovery);
            if self.is_complete() {
                self.completed_at.get_or_insert(now);
                self.timer = None;
            } else if self.snd_una >= self.snd_max {
                // RFC 6298 (5.2).
                self.timer = None;
            } else {
                // RFC 6298 (5.3): new data acked, restart the timer.
                self.timer = Some(now + self.rto.rto());
            }
        }
        self.send_new_data(now, out);
    }

    /// RFC 6675 section 5, step (4): fast retransmit and loss recovery.
    fn enter_sack_recovery(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.lt_allowance = 0;
        self.cwr_freeze_until = OptSeq::NONE;
        let flight = self.snd_max - self.snd_una;
        // (4.1) RecoveryPoint = HighData.
        self.recover = Some(self.snd_max);
        // (4.2) ssthresh = cwnd = FlightSize / 2 (the controller's ssthresh:
        // RFC 5681 equation (4), or beta_cubic for CUBIC).
        self.cc.on_fast_retransmit(&mut self.win, flight);
        self.win.cwnd = self.win.ssthresh;
        self.in_recovery = true;
        self.fast_retransmits += 1;
        self.sack_recoveries += 1;
        self.note_loss_reduction();
        // (4.3) Retransmit the first segment presumed dropped, at HighACK;
        // HighRxt = RescueRxt = its end.
        let start = self.snd_una;
        let end = self.hole_end(start);
        self.emit_data(now, start, end - start, out);
        self.high_rxt = end;
        self.rescue_rxt = Some(end);
        // (4.4)-(4.5): SetPipe, then step (C) via `send_new_data`.
    }

    /// End of a segment starting at un-SACKed `seq`: one SMSS, but not into
    /// the next SACKed range nor beyond what was sent.
    fn hole_end(&self, seq: u64) -> u64 {
        let mut end = (seq + self.win.mss).min(self.snd_max);
        if let Some(s) = self.scoreboard.next_sacked_start(seq) {
            end = end.min(s);
        }
        end
    }

    /// RFC 6675 section 4, SetPipe(): un-SACKed bytes in flight that are
    /// not lost, plus those retransmitted (below HighRxt).
    fn pipe(&self) -> u64 {
        let lost_below = self
            .scoreboard
            .lost_below(self.win.mss, self.dupack_threshold);
        let sb = &self.scoreboard;
        sb.unsacked_in(self.snd_una.max(lost_below), self.snd_max)
            + sb.unsacked_in(self.snd_una, self.high_rxt.min(self.snd_max))
    }

    /// RFC 6675 section 5, step (C): while cwnd - pipe >= 1 SMSS, send
    /// what NextSeg() picks.
    fn sack_transmit(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.budget_blocked = false;
        let mut app_blocked = false;
        let mut sent = false;
        loop {
            let pipe = self.pipe();
            if self.win.cwnd < pipe + self.win.mss {
                break;
            }
            if self.send_budget == 0 {
                self.budget_blocked = true;
                break;
            }
            let Some((seq, len, rescue)) = self.next_seg(now, &mut app_blocked) else {
                break;
            };
            if self.emit_timed(now, seq, len, out) {
                // (C.3) new data: HighData grows.
                self.snd_nxt = self.snd_max;
                sent = true;
            } else if rescue {
                // Rule (4): RescueRxt = RecoveryPoint; HighRxt unchanged.
                self.rescue_rxt = self.recover;
                self.rescue_retransmits += 1;
            } else {
                // (C.2) HighRxt = the end of the retransmitted segment.
                self.high_rxt = self.high_rxt.max(seq + len);
            }
        }
        self.validate_cwnd(sent);
        if self.timer.is_none() && self.snd_max > self.snd_una {
            self.timer = Some(now + self.rto.rto());
        }
    }

    /// RFC 6675 section 4, NextSeg(): (seq, len, by rule 4).
    fn next_seg(&mut self, now: SimTime, app_blocked: &mut bool) -> Option<(u64, u64, bool)> {
        let sb = &self.scoreboard;
        let highest = sb.highest_sacked().unwrap_or(self.snd_una);
        let lost_below = sb.lost_below(self.win.mss, self.dupack_threshold);
        // Rules (1) and (3): the first un-SACKed byte above HighRxt and
        // below the highest SACKed byte; (1) if it is lost.
        let s2 = sb.next_unsacked(self.high_rxt.max(self.snd_una));
        let candidate = (s2 < highest).then_some(s2);
        if let Some(s) = candidate.filter(|&s| s < lost_below) {
            return Some((s, self.hole_end(s) - s, false));
        }
        // Rule (2): new data, if the receiver's window allows.
        if self.snd_max < self.size {
            let len = self.segment_len(self.snd_max);
            let wnd = u64::from(self.last_window);
            if self.snd_max + len - self.snd_una <= wnd {
                if self.app_allows(now, self.snd_max, len) {
                    return Some((self.snd_max, len, false));
                }
                *app_blocked = true;
            }
        }
        // Rule (3): the first un-SACKed segment not yet lost.
        if let Some(s) = candidate {
            return Some((s, self.hole_end(s) - s, false));
        }
        // Rule (4): one rescue retransmission per recovery, of a segment
        // holding the highest un-SACKed byte outstanding.
        // NOTE: only bytes above HighRxt count as outstanding here: rule 4
        // is for a lost tail that nothing SACKed above can declare lost,
        // and taken literally it would resend a hole already resent by
        // rule 1 whenever HighACK passes RescueRxt.
        if self.rescue_rxt.is_none_or(|r| self.snd_una > r) {
            let from = self.snd_una.max(self.high_rxt);
            if let Some((start, end)) = self.scoreboard.last_unsacked_run(from, self.snd_max) {
                let s = start.max(end.saturating_sub(self.win.mss));
                return Some((s, end - s, true));
            }
        }
        None
    }

    fn on_retransmission_timeout(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.board.is_some() {
            self.reno_board_timeout(now);
            return;
        }
        self.enter_timeout();
        let flight = self.snd_nxt - self.snd_una;
        // RFC 5681 section 3.1: ssthresh per equation (4) on the first
        // timeout of this segment, cwnd = 1 SMSS.
        // NOTE: "no more than" equation (4): a timeout during fast recovery
        // keeps the ssthresh chosen on entry if lower (as Linux does), since
        // after a long recovery snd_nxt - snd_una counts data the receiver
        // already holds and overstates the flight many times over.
        let ssthresh_before = self.win.ssthresh;
        let first = !self.una_resent_by_timer;
        self.cc.on_rto(&mut self.win, flight, first);
        if self.in_recovery {
            self.win.ssthresh = self.win.ssthresh.min(ssthresh_before);
        }
        self.leave_for_timeout();
        // Go back to snd_una and resend from there in slow start
        // (RFC 5681 section 3.1, RFC 6298 (5.4)).
        self.snd_nxt = self.snd_una;
        // The first unacknowledged segment as it was sent, within the
        // window (one byte when the window is zero, RFC 9293 3.8.6.1).
        let len = self.resend_len().min(self.last_window.max(1).into());
        self.emit_data(now, self.snd_una, len, out);
        self.snd_nxt = self.snd_una + len;
        self.una_resent_by_timer = true;
        // RFC 6298 (5.6): restart the timer with the backed-off RTO.
        self.timer = Some(now + self.rto.rto());
    }

    /// `full_segment_window`: ns-3 3.44's `TcpSocketBase::ReTxTimeout`
    /// with nothing in flight (the usable window was under one segment, so
    /// `SendPendingData` sent nothing and `NewAck` left the timer armed):
    /// a timeout like any other, with an empty flight. ssthresh from the
    /// controller (`GetSsThresh(tcb, 0)`: DCTCP's alpha cut of cwnd with
    /// `dctcp_loss_uses_alpha`, else RFC 5681 equation (4), 2 SMSS), cwnd
    /// = 1 SMSS, RTO doubled (RFC 6298 (5.5)), RecoveryPoint = HighData,
    /// CA_LOSS; nothing to resend. The caller then sends (ns-3:
    /// `SendPendingData`, one segment).
    fn empty_flight_timeout(&mut self, now: SimTime) {
        if self.board.is_some() {
            // The board is empty: `reno_board_timeout` marks nothing lost.
            self.reno_board_timeout(now);
            return;
        }
        self.enter_timeout();
        let first = !self.una_resent_by_timer;
        self.cc.on_rto(&mut self.win, 0, first);
        self.win.cwnd = self.win.mss;
        self.lt_allowance = 0;
        self.leave_for_timeout();
    }

    /// What every retransmission timeout does before the controller's
    /// cut (`on_retransmission_timeout`, `empty_flight_timeout`).
    fn enter_timeout(&mut self) {
        self.timeouts += 1;
        // ns-3's `ReTxTimeout`: "Restart from highest Ack".
        self.next_tx = self.snd_una;
        // ns-3 leaves CA_CWR for CA_LOSS.
        self.ns3_cwr_until = OptSeq::NONE;
        self.cwr_freeze_until = OptSeq::NONE;
        self.note_loss_reduction();
        self.end_ecn_window_at_timeout();
        if self.sack {
            // RFC 6675 section 5.1: leave SACK recovery, RecoveryPoint =
            // HighData (set by `leave_for_timeout`), and, as RFC 2018
            // section 8 says of a timeout (the receiver may have reneged),
            // forget the SACKed bytes: the go-back-N resends them.
            self.scoreboard.clear();
            self.high_rxt = self.snd_una;
            self.rescue_rxt = None;
        }
    }

    /// What every retransmission timeout does after the controller's cut.
    fn leave_for_timeout(&mut self) {
        // RFC 6298 (5.5): back off the timer.
        self.rto.on_timeout();
        // RFC 6582 section 3.2 step 4: record the highest sequence sent in
        // `recover` and leave fast recovery.
        self.recover = Some(self.snd_max);
        self.in_recovery = false;
        self.dupacks = 0;
        self.untime_flight();
    }

    fn send_window_probe(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        // RFC 9293 section 3.8.6.1: with a zero window, probe with one byte
        // after a retransmission timeout, backing off like the RTO.
        if self.snd_nxt >= self.size {
            return;
        }
        self.window_probes += 1;
        self.rto.on_timeout();
        self.emit_data(now, self.snd_nxt, 1, out);
        self.snd_nxt += 1;
        self.snd_max = self.snd_max.max(self.snd_nxt);
        self.timer = Some(now + self.rto.rto());
    }

    /// Linux `tcp_is_cwnd_limited` (include/net/tcp.h), RFC 7661 section
    /// 4.2: the flow filled cwnd in the current window, or it is in slow
    /// start and cwnd is below twice the largest flight ("ensure cwnd grows
    /// to twice what was ACKed").
    /// With `unvalidated_cwnd` always true (ns-3 3.44 has no such check).
    fn is_cwnd_limited(&self) -> bool {
        self.unvalidated_cwnd
            || self.is_cwnd_limited
            || (self.win.in_slow_start() && self.win.cwnd < 2 * self.max_flight)
    }

    /// Linux `tcp_cwnd_validate` (net/ipv4/tcp_output.c, after commit
    /// f4ce91ce12a7): keep the strongest signal of cwnd use per window of
    /// data. `limited` is Linux's `packets_in_flight >= cwnd`, in bytes: no
    /// room is left for another full segment.
    fn validate_cwnd(&mut self, sent: bool) {
        let flight = match &self.board {
            // ns-3's pipe (`TcpTxBuffer::BytesInFlight`).
            Some(b) => b.bytes_in_flight(),
            None => self.snd_nxt - self.snd_una,
        };
        let limited = flight + self.win.mss > self.win.cwnd;
        // Linux `tcp_write_xmit`: only if something was sent or cwnd-limited.
        if !(sent || limited) {
            return;
        }
        if self.snd_una >= self.cwnd_usage_seq
            || limited
            || (!self.is_cwnd_limited && flight > self.max_flight)
        {
            self.is_cwnd_limited = limited;
            self.max_flight = flight;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// Sends new segments while `min(cwnd, rwnd)` and the send budget
    /// allow, then arms the retransmission or persist timer as needed.
    fn send_new_data(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if !self.started || self.syn_pending {
            return;
        }
        if self.sack && self.in_recovery {
            self.sack_transmit(now, out);
            return;
        }
        if self.board.is_some() {
            self.reno_board_send(now, out);
            return;
        }
        self.budget_blocked = false;
        let mut app_blocked = false;
        let mut sent = false;
        let wnd = (self.win.cwnd + self.lt_allowance).min(u64::from(self.last_window));
        while self.snd_nxt < self.size {
            let flight = self.snd_nxt - self.snd_una;
            let seg = self.segment_len(self.snd_nxt);
            let len = if flight + seg <= wnd {
                seg
            } else if flight == 0 && wnd > 0 && !self.full_segment_window {
                // NOTE: the window is below one segment and nothing is in
                // flight, so no ACK will come to open it: send what the
                // window allows now (RFC 9293 section 3.8.6.2.1 permits it
                // after an override timeout; we do not wait).
                wnd
            } else {
                // `full_segment_window`, ns-3 3.44's `SendPendingData`:
                // "Preventing Silly Window Syndrome. Wait to send." (the
                // usable window is under a segment and more data than it
                // is left); with nothing in flight, the timer armed below
                // ends the wait (`on_timer`).
                break;
            };
            // Linux `tcp_small_queue_check`: throttled once the flow's bytes
            // below TCP exceed the limit (the host's budget is spent).
            if self.send_budget == 0 {
                self.budget_blocked = true;
                break;
            }
            if !self.app_allows(now, self.snd_nxt, len) {
                app_blocked = true;
                break;
            }
            self.emit_timed(now, self.snd_nxt, len, out);
            self.snd_nxt += len;
            sent = true;
        }
        self.validate_cwnd(sent);
        if self.is_complete() {
            return;
        }
        if self.snd_max == self.snd_una && (self.budget_blocked || app_blocked) {
            // Nothing outstanding and the budget or the application, not a
            // zero window, holds the flow: no RTO and no persist timer; the
            // host calls `on_send_ready` when the flow's packets leave the
            // NIC, and the application timer fires when credit is back.
            self.timer = None;
        } else if self.timer.is_none() {
            if self.snd_max > self.snd_una {
                // RFC 6298 (5.1): data is outstanding, start the timer.
                self.timer = Some(now + self.rto.rto());
            } else if self.snd_nxt < self.size {
                // A zero window blocks the flow: arm the persist timer.
                self.timer = Some(now + self.rto.rto());
            }
        }
    }

    /// Whether the application's token bucket lets `[seq, seq + len)` go
    /// now; new bytes (beyond `snd_max`) are taken from it. When it does
    /// not, the application timer is set for when it will.
    fn app_allows(&mut self, now: SimTime, seq: u64, len: u64) -> bool {
        let new = (seq + len).saturating_sub(seq.max(self.snd_max));
        let Some(app) = &mut self.app else {
            return true;
        };
        if new == 0 {
            return true;
        }
        app.refill(now);
        let at = app.ready_at(now, new);
        if at > now {
            self.app_timer = Some(at);
            return false;
        }
        app.credit -= u128::from(new) * BYTE_CREDIT;
        true
    }

    /// Resends the segment at `snd_una`, whatever the window says.
    fn retransmit_una(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let len = self.resend_len();
        if len == 0 {
            return;
        }
        self.emit_data(now, self.snd_una, len, out);
        self.snd_nxt = self.snd_nxt.max(self.snd_una + len);
    }

    /// Length of a resend at `snd_una`: a full segment, but never past
    /// what was already sent (a resend carries no new data).
    fn resend_len(&self) -> u64 {
        self.segment_len(self.snd_una)
            .min(self.snd_max - self.snd_una)
    }

    /// Length of a full segment starting at `seq`, cut at the flow's end.
    fn segment_len(&self, seq: u64) -> u64 {
        self.win.mss.min(self.size.saturating_sub(seq))
    }

    /// An RTT sample from a send at `sent` acknowledged at `now`: on the
    /// simulator's clock, or with `ts_clock` as ns-3 reads its TCP
    /// timestamps (`TcpOptionTS::ElapsedTimeFromTsValue`: whole ticks
    /// between the echoed TSval and now; `TcpSocketBase::EstimateRtt`:
    /// zero becomes 1 us).
    fn rtt_sample(&self, sent: SimTime, now: SimTime) -> SimTime {
        let tick = self.ts_clock.ps();
        if tick == 0 || self.sent_log.is_none() {
            return now.saturating_sub(sent);
        }
        let ticks = now.ps() / tick - sent.ps() / tick;
        if ticks == 0 {
            SimTime::from_us(1)
        } else {
            SimTime(ticks * tick)
        }
    }

    /// `TcpConfig::rtt_every_ack`: the sample of an ACK that moved
    /// `snd_una` to `ack`, as ns-3 3.44's `TcpSocketBase::EstimateRtt`
    /// takes it: only when the ACK covers the oldest logged segment in
    /// full, timed from that segment's last send (RFC 7323 section 4.3:
    /// the receiver echoes the timestamp of the earliest segment it has
    /// not yet acknowledged; ns-3 `ProcessOptionTimestamp` keeps the
    /// TSval of the segment that arrives at `NextRxSequence`, Linux's
    /// `tcp_clean_rtx_queue` times its `first_ackt`). Karn's rule on that
    /// segment, except with TCP timestamps (`ts_clock` set), which make a
    /// resend's sample unambiguous: ns-3's `CalculateRttSample` reads the
    /// echo whether or not the segment was resent (as Linux's
    /// `tcp_ack_update_rtt` does). A timeout empties the log
    /// (`untime_flight`).
    #[inline]
    fn sample_every_ack(&mut self, now: SimTime, ack: u64) {
        if self.sent_log.is_some() {
            self.sample_logged(now, ack);
        }
    }

    fn sample_logged(&mut self, now: SimTime, ack: u64) {
        let timestamps = self.ts_clock > SimTime::ZERO;
        let Some(log) = &mut self.sent_log else {
            return;
        };
        let echoed = log
            .front()
            .filter(|s| s.end <= ack && (timestamps || !s.retx))
            .map(|s| s.sent);
        while log.front().is_some_and(|s| s.end <= ack) {
            log.pop_front();
        }
        if let Some(sent) = echoed {
            let r = self.rtt_sample(sent, now);
            self.rto.on_sample(r);
        }
    }

    /// Karn's rule at a retransmission timeout: nothing in flight may be
    /// timed now. The per-round-trip probe is dropped, and the per-ACK log
    /// emptied, as ns-3's `ReTxTimeout` empties `m_history`: nothing sent
    /// before the timeout is timed, and the go-back-N's resends (below
    /// `snd_max`) are not logged.
    pub(super) fn untime_flight(&mut self) {
        self.rtt_probe = RttProbe::NONE;
        if let Some(log) = &mut self.sent_log {
            log.clear();
        }
    }

    #[inline(never)]
    fn emit_data(&mut self, now: SimTime, seq: u64, len: u64, out: &mut Vec<Packet>) {
        self.emit_data_inline(now, seq, len, out);
        // ns-3's `DoRetransmit`: "In case of RTO, advance
        // m_nextTxSequence", never back.
        self.next_tx = self.next_tx.max(seq + len);
    }

    /// Sends `[seq, seq + len)` (`emit_data`, inlined).
    #[inline(always)]
    fn emit_data_inline(&mut self, now: SimTime, seq: u64, len: u64, out: &mut Vec<Packet>) {
        if let Some(log) = &mut self.sent_log {
            log_send(log, seq, len, self.snd_max, now);
        }
        if let Some(board) = &mut self.board {
            board.on_send(seq, len);
        }
        let mut flags = 0;
        if seq < self.snd_max {
            self.retransmitted += 1;
            // Karn's rule (RFC 6298 section 3): no sample from a segment
            // that was retransmitted. NOTE: resending any segment before the
            // timed one drops the sample too, since the ACK that covers the
            // timed segment then waits for the resend.
            if self.rtt_probe.get().is_some_and(|(end, _)| seq < end) {
                self.rtt_probe = RttProbe::NONE;
            }
        } else if self.cwr_pending {
            // RFC 3168 section 6.1.2: CWR on the next new data segment.
            flags |= tcp_flags::CWR;
            self.cwr_pending = false;
        }
        if seq + len == self.size {
            // RFC 9293 section 3.6: FIN on the segment that carries the
            // last byte (it takes no sequence number here; docs/model.md).
            flags |= tcp_flags::FIN;
        }
        // `len` is at most one MSS, which is a u32.
        let payload = u32::try_from(len).unwrap_or(u32::MAX);
        // Every packet, retransmissions included, is charged to the budget.
        self.send_budget = self
            .send_budget
            .saturating_sub(u64::from(Packet::tcp_wire_size(payload)));
        out.push(build_packet(
            &self.ends,
            now,
            SegmentSpec {
                seq,
                ack: 0,
                flags,
                window: 0,
                payload,
                ecn: self.data_ecn,
            },
        ));
    }
}

#[path = "sender_reno.rs"]
mod reno;

#[cfg(test)]
#[path = "sender_tests.rs"]
mod tests;

/// One segment in `TcpSender::sent_log`: `[start, end)`, when it was last
/// sent, and whether it was ever resent.
#[derive(Clone, Copy, Debug)]
struct SentSeg {
    start: u64,
    end: u64,
    sent: SimTime,
    retx: bool,
}

/// Records the send of `[seq, seq + len)` at `now` in `log` (in sequence
/// order): new data (at or past `snd_max`) is appended; a resend marks
/// every logged segment it overlaps as retransmitted and resent now (ns-3
/// `TcpSocketBase::SendDataPacket` marks its `RttHistory` entry `retx`).
fn log_send(log: &mut VecDeque<SentSeg>, seq: u64, len: u64, snd_max: u64, now: SimTime) {
    let end = seq + len;
    if seq >= snd_max {
        log.push_back(SentSeg {
            start: seq,
            end,
            sent: now,
            retx: false,
        });
        return;
    }
    let first = log.partition_point(|s| s.end <= seq);
    for s in log.iter_mut().skip(first) {
        if s.start >= end {
            break;
        }
        s.retx = true;
        s.sent = now;
    }
    if end > snd_max {
        // A resend that also carries new bytes (not sent by this model,
        // which resends whole logged segments): log the new part.
        log.push_back(SentSeg {
            start: snd_max,
            end,
            sent: now,
            retx: false,
        });
    }
}
