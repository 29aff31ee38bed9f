//! `TcpConfig::reno_scoreboard`: the sender's loss recovery without SACK
//! as ns-3 3.44's `TcpSocketBase` runs it on its `TcpTxBuffer`
//! (src/internet/model/tcp-socket-base.cc, with `TcpClassicRecovery`, the
//! cross-check's setting), on [`RenoBoard`]. Each step cites the ns-3
//! function it follows. The congestion controllers, ECN reactions and the
//! ns-3 CA_CWR options are the sender's own, as without this option.
//!
//! What differs from the default (RFC 5681 / RFC 6582, go-back-N after a
//! timeout): the pipe is the board's (sent - SACKed - lost + resent), not
//! `snd_nxt - snd_una`; duplicate ACKs mark segments SACKed instead of
//! inflating cwnd (and, during CA_LOSS, are ignored); after a timeout every
//! segment outstanding is marked lost and resent, oldest first, as the pipe
//! allows; SACK marks a recovery leaves above the cumulative ACK stay, so
//! an ACK that makes a marked segment the head marks it lost instead
//! (resent at once by the next send), and one duplicate ACK then starts a
//! recovery (`DupAck`: `IsLost(HighACK + 1)`).

use super::super::cc::Controller;
use super::{OptSeq, RenoBoard, TcpSender};
use pisanet_engine::SimTime;
use pisanet_net::packet::{tcp_flags, Packet};

impl TcpSender {
    fn board(&mut self) -> &mut RenoBoard {
        self.board
            .as_mut()
            .expect("reno_scoreboard path without a board")
    }

    /// An acceptable ACK (`TcpSocketBase::ReceivedAck`, then `ProcessAck`
    /// and `SendPendingData`).
    pub(super) fn on_ack_reno_board(
        &mut self,
        now: SimTime,
        pkt: &Packet,
        ece: bool,
        out: &mut Vec<Packet>,
    ) {
        let Some(tcp) = pkt.tcp() else { return };
        let ack = tcp.ack;
        if tcp.window != self.last_window {
            if ack == self.snd_una {
                self.window_updates += 1;
            }
            self.last_window = tcp.window;
        }
        // `ProcessAck`: without SACK a duplicate ACK is one for SND.UNA
        // below HighTxMark that carries no data (SYN and FIN never get
        // here); the window is not compared.
        let is_dup = ack == self.snd_una
            && ack < self.snd_max
            && tcp.payload == 0
            && !tcp.has(tcp_flags::SYN | tcp_flags::FIN);
        if ack > self.snd_una {
            // `ReceivedAck`: `DiscardUpTo` before `ProcessAck`.
            self.board().discard_up_to(ack);
            self.reno_new_ack(now, ack, ece, out);
        } else if is_dup {
            self.dup_acks += 1;
            self.reno_dup_ack(now, out);
            if self.dctcp_dupack_bytes {
                // `ProcessAck`: "Artificially call PktsAcked".
                self.cc.on_dup_ack(ece, self.win.mss);
            }
        }
        self.send_new_data(now, out);
    }

    /// `TcpSocketBase::DupAck` without SACK.
    fn reno_dup_ack(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        // "We do not count the DupAcks received in CA_LOSS".
        if self.loss {
            return;
        }
        if !self.in_recovery {
            self.dupacks += 1;
        }
        if self.in_recovery {
            // "If we are in recovery and we receive a dupack, one segment
            // has left the network. This is equivalent to a SACK of one
            // block." (`TcpClassicRecovery::DoRecovery` only inflates the
            // traced cwnd; the pipe does the rest.)
            self.board().add_reno_sack();
            return;
        }
        if self.ns3_cwr_until.is_some() {
            // CA_CWR: counted, nothing else (`cwr_ignores_dupacks`).
            return;
        }
        // CA_DISORDER: (1) the third duplicate ACK, if no recovery point
        // is active or the ACK reaches it; (2) IsLost(HighACK + 1); else
        // (3) limited transmit by one more SACK mark.
        let una = self.snd_una;
        let allowed = !self.recover_active || self.recover.is_none_or(|r| una >= r);
        let third = self.dupacks == self.dupack_threshold && allowed;
        if third || self.board().is_lost(una) {
            self.reno_enter_recovery(now, out);
        } else if self.limited_transmit {
            self.board().add_reno_sack();
        }
    }

    /// `TcpSocketBase::EnterRecovery` without SACK, `TcpClassicRecovery`.
    fn reno_enter_recovery(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        // "One segment has left the network, PLUS the head is lost".
        self.board().add_reno_sack();
        self.board().mark_head_as_lost();
        self.lt_allowance = 0;
        self.cwr_freeze_until = OptSeq::NONE;
        // (4.1) RecoveryPoint = HighData.
        self.recover = Some(self.snd_max);
        self.recover_active = true;
        self.in_recovery = true;
        self.first_partial_ack = true;
        self.fast_retransmits += 1;
        // (4.2) "If SACK is not enabled, still consider the head as 'in
        // flight'": ssthresh from the pipe plus one segment.
        let flight = self.board().bytes_in_flight() + self.win.mss;
        self.cc.on_fast_retransmit(&mut self.win, flight);
        // `TcpClassicRecovery::EnterRecovery`: cwnd = ssthresh.
        self.win.cwnd = self.win.ssthresh;
        self.note_loss_reduction();
        // (4.3) Retransmit the head.
        self.reno_retransmit(now, out);
    }

    /// `DoRetransmit`: the first segment marked lost and not resent
    /// (`NextSeg`), else the head.
    fn reno_retransmit(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let board = self.board.as_ref().expect("board");
        let head = board.items().front().map(|h| (h.start, h.end));
        if let Some((start, end)) = board.next_lost().or(head) {
            self.emit_data(now, start, end - start, out);
        }
    }

    /// A cumulative ACK of new data (`ProcessAck`, `ackNumber >
    /// oldHeadSequence`), after `DiscardUpTo`.
    fn reno_new_ack(&mut self, now: SimTime, ack: u64, ece: bool, out: &mut Vec<Packet>) {
        let Some(acked) = self.accept_new_ack(now, ack, ece) else {
            return;
        };
        let reaches_recover = self.recover.is_some_and(|r| ack >= r);
        let mut restart_timer = true;
        let mut no_growth = false;
        let mut loss_exit = None;
        if self.in_recovery {
            if reaches_recover {
                // Leaving CA_RECOVERY: cwnd = ssthresh
                // (`TcpClassicRecovery::ExitRecovery`); SACK marks above the
                // ACK stay ("SHOULD NOT be cleared").
                self.in_recovery = false;
                self.win.cwnd = self.win.ssthresh;
                self.win.ca_bytes_acked = 0;
            } else {
                // Partial ACK: "Manually setting head as lost", resend it
                // unless this ACK is that resend's; the window does not
                // grow; the timer restarts on the first partial ACK only.
                self.board().mark_head_as_lost();
                let mss = self.win.mss;
                if !self.board().is_retransmitted_data_acked(ack + mss) {
                    self.reno_retransmit(now, out);
                }
                restart_timer = self.first_partial_ack;
                self.first_partial_ack = false;
                no_growth = true;
            }
        } else if self.loss && reaches_recover {
            // CA_LOSS -> CA_OPEN. With ns-3's growth by segments
            // acknowledged (`slow_start_all_acked`, `ca_segment_count`,
            // `newreno_ack_adder`), `ProcessAck` recomputes "the segs
            // acked, that are from m_recover to ackNumber": the window
            // grows by those only.
            if self.slow_start_all_acked || self.cc.segment_count() {
                loss_exit = self.recover.map(|r| ack.saturating_sub(r));
            }
            self.loss = false;
        }
        if reaches_recover {
            self.recover_active = false;
        }
        self.after_new_ack_exit(now, acked, ece, no_growth, loss_exit);
        if self.ns3_cwr_until.is_some() {
            // `ReceivedAck` calls `EnterCwr` on an ECE in any state but
            // CA_CWR, CA_LOSS included.
            self.loss = false;
        }
        self.finish_new_ack(now, restart_timer);
    }

    /// `TcpSocketBase::ReTxTimeout` with data outstanding, without SACK.
    /// The caller then sends (`SendPendingData`).
    pub(super) fn reno_board_timeout(&mut self, now: SimTime) {
        self.timeouts += 1;
        // "Restart from highest Ack" (`m_nextTxSequence = HeadSequence`).
        self.next_tx = self.snd_una;
        self.ns3_cwr_until = OptSeq::NONE;
        self.cwr_freeze_until = OptSeq::NONE;
        self.note_loss_reduction();
        self.end_ecn_window_at_timeout();
        let in_flight = self.board().bytes_in_flight();
        let head_resent = self.board().is_head_retransmitted();
        self.dupacks = 0;
        // `ResetRenoSack`, then `SetSentListLost(resetSack = true)`.
        self.board().reset_reno_sack();
        self.board().set_sent_list_lost();
        // RFC 6675 section 5.1: RecoveryPoint = HighData.
        self.recover = Some(self.snd_max);
        self.recover_active = true;
        // RFC 6298 (5.5).
        self.rto.on_timeout();
        // ssthresh from the flight before the timeout, unless "the given
        // segment has ... been resent by way of the retransmission timer"
        // (CA_LOSS with the head resent); cwnd = 1 SMSS.
        let first = !(self.loss && head_resent);
        self.cc.on_rto(&mut self.win, in_flight, first);
        self.win.cwnd = self.win.mss;
        self.in_recovery = false;
        self.loss = true;
        self.lt_allowance = 0;
        self.untime_flight();
        self.una_resent_by_timer = true;
        self.timer = Some(now + self.rto.rto());
    }

    /// `SendPendingData`: while cwnd (capped by the peer's window) exceeds
    /// the pipe, send what `NextSeg` picks: a segment marked lost and not
    /// resent, else new data.
    pub(super) fn reno_board_send(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.budget_blocked = false;
        let mut app_blocked = false;
        let mut sent = false;
        loop {
            let wnd = self.win.cwnd.min(u64::from(self.last_window));
            let board = self.board.as_ref().expect("board");
            let pipe = board.bytes_in_flight();
            if pipe >= wnd {
                break;
            }
            let avail = wnd - pipe;
            let (seq, len) = if let Some((s, e)) = board.next_lost() {
                (s, e - s)
            } else if self.snd_max < self.size {
                // Rule (2): new data while the sent bytes are below the
                // peer's window.
                let outstanding = self.snd_max - self.snd_una;
                let rwnd = u64::from(self.last_window);
                if outstanding >= rwnd {
                    break;
                }
                (
                    self.snd_max,
                    self.segment_len(self.snd_max).min(rwnd - outstanding),
                )
            } else {
                break;
            };
            // Silly-window avoidance: wait for a full segment's room
            // unless less data than the room is left.
            if avail < self.win.mss && self.size - seq > avail {
                break;
            }
            let len = len.min(avail);
            if self.send_budget == 0 {
                self.budget_blocked = true;
                break;
            }
            if !self.app_allows(now, seq, len) {
                app_blocked = true;
                break;
            }
            if self.emit_timed(now, seq, len, out) {
                sent = true;
            }
            self.snd_nxt = self.snd_max;
        }
        self.validate_cwnd(sent);
        if self.is_complete() {
            return;
        }
        if self.snd_max == self.snd_una && (self.budget_blocked || app_blocked) {
            self.timer = None;
        } else if self.timer.is_none() && self.snd_max > self.snd_una {
            self.timer = Some(now + self.rto.rto());
        } else if self.timer.is_none() && self.snd_nxt < self.size {
            // A zero window: the persist timer.
            self.timer = Some(now + self.rto.rto());
        }
    }
}
