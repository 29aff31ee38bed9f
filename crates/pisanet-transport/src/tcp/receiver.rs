//! The receiving half of a TCP flow.
//!
//! Owns: `rcv_nxt`, the out-of-order buffer (an interval set), the ACK
//! policy (every segment, or every second one with delayed ACKs, RFC 5681
//! section 4.2), the ECN echo (DCTCP's per RFC 8257 section 3.2, or the
//! classic one of RFC 3168 section 6.1.3 with `TcpConfig::ecn`), the SACK
//! option (RFC 2018, with `TcpConfig::sack`), the FIN, and the
//! application-side delivery check.
//!
//! Guarantees: ACKs carry `ack = rcv_nxt` and `window = cfg.rwnd_bytes`.
//! Out-of-order, duplicate and hole-filling segments are acknowledged at
//! once. The delivery check ([`TcpReceiver::delivery_error`]) is kept by a
//! separate application counter that every delivered chunk is compared
//! against, so a bug in the sequence bookkeeping shows up as an error rather
//! than as silently wrong data.

use super::{build_packet, build_packet_with_sack, CcKind, FlowEnds, SegmentSpec, TcpConfig};
use pisanet_engine::SimTime;
use pisanet_net::packet::{tcp_flags, Ecn, Packet, SackBlock, SackOption, MAX_SACK_BLOCKS};
use std::collections::BTreeMap;

/// A snapshot of a receiver's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Bytes handed to the application, in order.
    pub delivered_bytes: u64,
    /// Bytes held out of order, waiting for a hole to fill.
    pub buffered_bytes: u64,
    /// Data packets received (duplicates included).
    pub data_packets: u32,
    /// Data packets that brought new bytes beyond a hole.
    pub reordered_packets: u32,
    /// Bytes received that the receiver already held.
    pub duplicate_bytes: u64,
    /// Data packets that arrived CE-marked.
    pub ce_packets: u32,
    pub acks_sent: u32,
    /// ACKs that carried a SACK option.
    pub sack_acks: u32,
}

/// The application end: takes chunks and checks each starts where the last
/// one ended and none passes the flow's size.
#[derive(Clone, Debug)]
struct AppDelivery {
    size: u64,
    /// Bytes handed over so far; the next chunk must start here.
    delivered: u64,
    /// What went wrong first. Boxed: one word among the fields a data
    /// segment reads.
    #[allow(clippy::box_collection)]
    error: Option<Box<String>>,
}

impl AppDelivery {
    // NOTE: the check inline, its message out of line: a data segment in
    // order comes here (docs/performance.md, "Session 12: host side").
    #[inline]
    fn deliver(&mut self, start: u64, end: u64) {
        if self.error.is_none() && (start != self.delivered || end > self.size) {
            self.fail(start, end);
        }
        self.delivered += end.saturating_sub(start);
    }

    /// The first delivery error: `[start, end)` does not start where the
    /// last chunk ended, or passes the flow's size.
    #[cold]
    #[inline(never)]
    fn fail(&mut self, start: u64, end: u64) {
        self.error = Some(Box::new(if start != self.delivered {
            format!(
                "chunk [{start}, {end}) handed to the application after {} bytes: \
                 a byte delivered twice or out of order",
                self.delivered
            )
        } else {
            format!(
                "chunk [{start}, {end}) goes beyond the flow's {} bytes",
                self.size
            )
        }));
    }
}

/// The receiver of one flow of `size` bytes. See the module docs.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct TcpReceiver {
    // NOTE: `repr(C)`, by cache line (the simulator's flow state puts the
    // receiver at a line): a data segment in order reads the first two
    // lines only. The first holds the delayed-ACK deadline that every
    // event of the flow reads (`timer_deadline`), the in-order state and
    // the application check; the second the ACK's fields and the flags;
    // what only holes, options, the FIN and completion read comes last
    // (docs/performance.md, "Session 10" and "Session 12: host side").
    // `the_receiver_reads_by_cache_line` checks the offsets.
    delayed_ack_deadline: Option<SimTime>,
    rcv_nxt: u64,
    /// Bytes held in `ooo` (zero exactly when it is empty).
    ooo_bytes: u64,
    app: AppDelivery,
    data_packets: u32,
    ce_packets: u32,
    // The second line.
    ends: FlowEnds,
    rwnd: u32,
    duplicate_bytes: u64,
    /// In-order segments received since the last ACK (delayed ACKs).
    unacked_segments: u32,
    acks_sent: u32,
    delayed_ack: bool,
    /// Echo CE per RFC 8257 (DCTCP).
    dctcp_echo: bool,
    /// Echo CE per RFC 3168 section 6.1.3 (`TcpConfig::ecn`, not DCTCP).
    classic_echo: bool,
    /// RFC 3168: a CE arrived and no CWR since: every ACK carries ECE.
    ece_latched: bool,
    /// Report SACK blocks (`TcpConfig::sack`).
    sack: bool,
    /// DCTCP.CE: the CE state of the last data packet (RFC 8257 3.2).
    ce_state: bool,
    /// `TcpConfig::ce_new_seq_only`.
    ce_new_seq_only: bool,
    // Holes, options, the FIN, completion.
    /// Received bytes beyond `rcv_nxt`: start -> end, disjoint and
    /// non-adjacent, every start > `rcv_nxt`.
    ooo: BTreeMap<u64, u64>,
    /// The first FIN seen: (when, sequence of its end).
    fin: Option<(SimTime, u64)>,
    reordered: u32,
    delayed_ack_timeout: SimTime,
    /// A byte of each of the most recently reported SACK blocks, the most
    /// recent first (RFC 2018 section 4).
    sack_recent: [u64; MAX_SACK_BLOCKS],
    sack_recent_len: usize,
    completed_at: Option<SimTime>,
    sack_acks: u32,
    /// With `ce_new_seq_only`: the sequence number of the last CE-marked
    /// segment taken as CE (ns-3's `m_ecnCESeq`); `None` before the first.
    ce_seq: Option<u64>,
}

impl TcpReceiver {
    /// A receiver of `size_bytes` bytes. `ends` is the ACK direction: `src`
    /// is this (receiving) host.
    pub fn new(cfg: &TcpConfig, ends: FlowEnds, size_bytes: u64) -> Self {
        TcpReceiver {
            ends,
            rwnd: cfg.rwnd_bytes,
            delayed_ack: cfg.delayed_ack,
            delayed_ack_timeout: cfg.delayed_ack_timeout,
            dctcp_echo: cfg.cc.ecn_capable(),
            classic_echo: cfg.ecn && !matches!(cfg.cc, CcKind::Dctcp { .. }),
            ece_latched: false,
            sack: cfg.sack,
            sack_recent: [0; MAX_SACK_BLOCKS],
            sack_recent_len: 0,
            fin: None,
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            ooo_bytes: 0,
            unacked_segments: 0,
            delayed_ack_deadline: None,
            ce_state: false,
            ce_new_seq_only: cfg.ce_new_seq_only,
            ce_seq: None,
            app: AppDelivery {
                size: size_bytes,
                delivered: 0,
                error: None,
            },
            completed_at: None,
            data_packets: 0,
            reordered: 0,
            duplicate_bytes: 0,
            ce_packets: 0,
            acks_sent: 0,
            sack_acks: 0,
        }
    }

    /// Sets the flow's size once it is known (a flow created with
    /// `u64::MAX` bytes, for a duration-limited sender that calls
    /// [`crate::tcp::TcpSender::close`]). A FIN sets it too.
    pub fn set_size(&mut self, now: SimTime, size: u64) {
        self.app.size = size;
        if self.app.delivered >= size && self.completed_at.is_none() {
            self.completed_at = Some(now);
        }
    }

    /// When the first segment with FIN arrived, and where the flow ends
    /// by it (its sequence plus payload).
    pub fn fin_received(&self) -> Option<(SimTime, u64)> {
        self.fin
    }

    /// Processes one data packet and pushes the ACKs it triggers.
    /// Packets without TCP payload are ignored.
    pub fn on_packet(&mut self, now: SimTime, pkt: &Packet, out: &mut Vec<Packet>) {
        let Some(tcp) = pkt.tcp() else { return };
        if tcp.has(tcp_flags::SYN) && !tcp.has(tcp_flags::ACK) {
            // RFC 9293 section 3.5: answer every SYN (a resent one too)
            // with a SYN-ACK carrying our window (TcpConfig::handshake).
            out.push(build_packet(
                &self.ends,
                now,
                SegmentSpec {
                    seq: 0,
                    ack: 0,
                    flags: tcp_flags::SYN | tcp_flags::ACK,
                    window: self.rwnd,
                    payload: 0,
                    ecn: Ecn::NotEct,
                },
            ));
            return;
        }
        let start = tcp.seq;
        let end = start.saturating_add(u64::from(tcp.payload));
        if tcp.has(tcp_flags::FIN) && self.fin.is_none() {
            // RFC 9293 section 3.6: the FIN marks the end of the data.
            self.fin = Some((now, end));
            if self.app.size == u64::MAX {
                self.set_size(now, end);
            } else if end != self.app.size && self.app.error.is_none() {
                self.app.error = Some(Box::new(format!(
                    "FIN at byte {end} but the flow has {} bytes",
                    self.app.size
                )));
            }
        }
        if tcp.payload == 0 {
            return;
        }
        self.data_packets += 1;
        let mut ce = pkt.ip.ecn == Ecn::Ce;
        if ce {
            self.ce_packets += 1;
            if self.ce_new_seq_only {
                // `ce_new_seq_only`: ns-3 3.44's `TcpSocketBase::ForwardUp`
                // takes the mark only if `m_ecnCESeq < seq`, and treats the
                // segment as unmarked otherwise.
                if self.ce_seq.is_some_and(|last| start <= last) {
                    ce = false;
                } else {
                    self.ce_seq = Some(start);
                }
            }
        }
        if self.classic_echo {
            // RFC 3168 section 6.1.3: stop setting ECE once a CWR arrives;
            // a CE mark (on that packet too) sets it until the next CWR.
            if tcp.has(tcp_flags::CWR) {
                self.ece_latched = false;
            }
            if ce {
                self.ece_latched = true;
            }
        }

        if self.dctcp_echo && ce != self.ce_state {
            // RFC 8257 section 3.2: when the CE state flips, first ACK what
            // was received before this packet with the old ECE value (if a
            // delayed ACK is pending), then take the new state.
            if self.unacked_segments > 0 {
                self.send_ack(now, out);
            }
            self.ce_state = ce;
        }

        debug_assert_eq!(self.ooo_bytes == 0, self.ooo.is_empty());
        // (`ooo_bytes`, in the first line, is zero exactly when the set is
        // empty: it holds no empty interval.)
        let had_hole = self.ooo_bytes > 0;
        let from = start.max(self.rcv_nxt);
        let (new_bytes, advanced) = if had_hole || from > self.rcv_nxt {
            let new_bytes = self.insert(from, end);
            if new_bytes > 0 && start > self.rcv_nxt {
                self.reordered += 1;
            }
            if self.sack && from > self.rcv_nxt {
                self.note_sack_block(from);
            }
            (new_bytes, self.advance())
        } else {
            // In order with nothing held beyond `rcv_nxt` (nearly every
            // segment): what `insert` then `advance` would do, without
            // the interval set: the new bytes go to the application.
            self.deliver_in_order(end)
        };
        self.duplicate_bytes += u64::from(tcp.payload) - new_bytes;
        if advanced && self.app.delivered >= self.app.size && self.completed_at.is_none() {
            self.completed_at = Some(now);
        }

        if !advanced || had_hole {
            // RFC 5681 section 4.2: ACK at once out-of-order data (a
            // duplicate ACK), duplicates, and data that fills a hole.
            self.send_ack(now, out);
        } else if self.delayed_ack {
            // RFC 5681 section 4.2: ACK at least every second segment, and
            // within the delayed-ACK timeout.
            self.unacked_segments += 1;
            if self.unacked_segments >= 2 {
                self.send_ack(now, out);
            } else if self.delayed_ack_deadline.is_none() {
                self.delayed_ack_deadline = Some(now + self.delayed_ack_timeout);
            }
        } else {
            self.send_ack(now, out);
        }
    }

    /// The delayed-ACK timer fired. Early or stale calls do nothing.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        match self.delayed_ack_deadline {
            Some(deadline) if now >= deadline => self.send_ack(now, out),
            _ => {}
        }
    }

    /// The delayed-ACK deadline, if an ACK is being held.
    pub fn timer_deadline(&self) -> Option<SimTime> {
        self.delayed_ack_deadline
    }

    /// Whether this receiver ever holds a timer: only with delayed ACKs
    /// (`TcpConfig::delayed_ack`); without, `timer_deadline` is always
    /// `None` and the caller need not ask.
    pub fn uses_timer(&self) -> bool {
        self.delayed_ack
    }

    /// Bytes handed to the application, in order.
    pub fn delivered_bytes(&self) -> u64 {
        self.app.delivered
    }

    /// The application has every byte of the flow.
    pub fn is_complete(&self) -> bool {
        self.app.delivered == self.app.size
    }

    /// When the last byte was delivered.
    pub fn completed_at(&self) -> Option<SimTime> {
        self.completed_at
    }

    /// Data packets that brought new bytes beyond a hole (`seq > rcv_nxt`
    /// on arrival). A packet that fills a hole, or a pure duplicate, is not
    /// counted.
    pub fn reordered_packets(&self) -> u32 {
        self.reordered
    }

    /// Bytes received that the receiver already held, delivered or
    /// buffered: the cost of spurious retransmissions and duplication.
    pub fn duplicate_bytes(&self) -> u64 {
        self.duplicate_bytes
    }

    /// `Some` if the application was ever handed a byte twice, out of
    /// order, or beyond the flow's size; says what happened first.
    pub fn delivery_error(&self) -> Option<String> {
        self.app.error.as_deref().cloned()
    }

    /// `rcv_nxt`: the next byte expected in order.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    pub fn stats(&self) -> ReceiverStats {
        ReceiverStats {
            delivered_bytes: self.app.delivered,
            buffered_bytes: self.ooo_bytes,
            data_packets: self.data_packets,
            reordered_packets: self.reordered,
            duplicate_bytes: self.duplicate_bytes,
            ce_packets: self.ce_packets,
            acks_sent: self.acks_sent,
            sack_acks: self.sack_acks,
        }
    }

    /// Adds `[start, end)` (with `start >= rcv_nxt`) to the out-of-order
    /// set and returns how many of its bytes were new. O(k log n) for k
    /// intervals merged.
    fn insert(&mut self, mut start: u64, mut end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let len = end - start;
        let mut overlap = 0;
        // Merge with the interval that begins at or before `start`.
        if let Some((&s, &e)) = self.ooo.range(..=start).next_back() {
            if e >= start {
                overlap += e.min(end) - start;
                start = s;
                end = end.max(e);
                self.ooo.remove(&s);
                self.ooo_bytes -= e - s;
            }
        }
        // Merge with every interval that begins inside `[start, end]`.
        while let Some((&s, &e)) = self.ooo.range(start..=end).next() {
            overlap += e.min(end).saturating_sub(s);
            end = end.max(e);
            self.ooo.remove(&s);
            self.ooo_bytes -= e - s;
        }
        self.ooo.insert(start, end);
        self.ooo_bytes += end - start;
        len - overlap
    }

    /// `insert(rcv_nxt, end)` then `advance()` with nothing held out of
    /// order: `[rcv_nxt, end)` goes to the application. Returns the new
    /// bytes and whether `rcv_nxt` moved.
    #[inline]
    fn deliver_in_order(&mut self, end: u64) -> (u64, bool) {
        debug_assert!(self.ooo.is_empty());
        let start = self.rcv_nxt;
        if end <= start {
            return (0, false);
        }
        self.app.deliver(start, end);
        self.rcv_nxt = end;
        (end - start, true)
    }

    /// Moves the interval at `rcv_nxt`, if any, to the application.
    fn advance(&mut self) -> bool {
        let Some((&s, &e)) = self.ooo.first_key_value() else {
            return false;
        };
        if s != self.rcv_nxt {
            return false;
        }
        self.ooo.remove(&s);
        self.ooo_bytes -= e - s;
        self.app.deliver(s, e);
        self.rcv_nxt = e;
        true
    }

    /// RFC 2018 section 4: the block holding `seq` (a byte just received
    /// out of order) is reported first from now on.
    fn note_sack_block(&mut self, seq: u64) {
        let n = self.sack_recent_len.min(MAX_SACK_BLOCKS - 1);
        self.sack_recent.copy_within(0..n, 1);
        self.sack_recent[0] = seq;
        self.sack_recent_len = n + 1;
    }

    /// The SACK option for an ACK now (RFC 2018 section 4): the block of
    /// the segment that triggered the ACK first (unless it advanced
    /// `rcv_nxt`), then the most recently reported blocks that still
    /// exist, at most [`MAX_SACK_BLOCKS`]; `None` with no data held beyond
    /// `rcv_nxt` (RFC 2018: SACK only on ACKs that do not acknowledge the
    /// highest sequence received).
    fn sack_option(&mut self) -> Option<SackOption> {
        if !self.sack || self.ooo_bytes == 0 {
            return None;
        }
        let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
        let mut n = 0;
        let mut kept = 0;
        for i in 0..self.sack_recent_len {
            let seq = self.sack_recent[i];
            let Some((&s, &e)) = self.ooo.range(..=seq).next_back() else {
                continue;
            };
            if e <= seq || blocks[..n].iter().any(|b| b.start == s) {
                continue;
            }
            blocks[n] = SackBlock { start: s, end: e };
            self.sack_recent[kept] = seq;
            kept += 1;
            n += 1;
        }
        self.sack_recent_len = kept;
        if n == 0 {
            // Every reported block was delivered or merged away: report
            // the highest block held.
            if let Some((&s, &e)) = self.ooo.last_key_value() {
                blocks[0] = SackBlock { start: s, end: e };
                n = 1;
            }
        }
        Some(SackOption::new(&blocks[..n]))
    }

    fn send_ack(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let mut flags = tcp_flags::ACK;
        if self.ce_state || self.ece_latched {
            flags |= tcp_flags::ECE;
        }
        let sack = self.sack_option();
        if sack.is_some() {
            self.sack_acks += 1;
        }
        out.push(build_packet_with_sack(
            &self.ends,
            now,
            SegmentSpec {
                seq: 0,
                ack: self.rcv_nxt,
                flags,
                window: self.rwnd,
                payload: 0,
                ecn: Ecn::NotEct,
            },
            sack,
        ));
        self.acks_sent += 1;
        self.unacked_segments = 0;
        self.delayed_ack_deadline = None;
    }
}

#[cfg(test)]
#[path = "receiver_tests.rs"]
mod tests;
