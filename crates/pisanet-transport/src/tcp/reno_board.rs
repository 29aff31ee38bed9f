//! `TcpConfig::reno_scoreboard`: ns-3 3.44's per-segment send buffer
//! without SACK (src/internet/model/tcp-tx-buffer.cc, `TcpTxBuffer`), the
//! bookkeeping behind its loss recovery when `TcpSocketBase::Sack` is off.
//!
//! Owns: one entry per segment sent and not yet cumulatively acknowledged,
//! `[snd_una, snd_max)` in sequence order, each with ns-3's three flags:
//! `sacked` (a guess: without SACK, ns-3 counts each duplicate ACK as one
//! SACKed segment, `AddRenoSack`), `lost` and `retrans`; and the byte
//! counts ns-3 keeps of them (`m_sackedOut`, `m_lostOut`, `m_retrans`).
//! Each method is the `TcpTxBuffer` method of the same name, cited at it.
//!
//! Leaves to the sender: when each is called (ns-3's `TcpSocketBase`), the
//! window, and what is sent.

use std::collections::VecDeque;

/// One sent segment `[start, end)` (ns-3 `TcpTxItem`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub start: u64,
    pub end: u64,
    pub sacked: bool,
    pub lost: bool,
    pub retrans: bool,
}

impl Item {
    fn len(&self) -> u64 {
        self.end - self.start
    }
}

/// The sent list and its counts. See the module docs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RenoBoard {
    items: VecDeque<Item>,
    /// `m_sentSize`: bytes in `items`.
    sent: u64,
    /// `m_sackedOut`.
    sacked: u64,
    /// `m_lostOut`.
    lost: u64,
    /// `m_retrans`.
    retrans: u64,
    /// `m_highestSack.second` while `m_sackSeen`: the start of the highest
    /// segment marked SACKed.
    highest_sack: Option<u64>,
}

impl RenoBoard {
    /// The entries, head (`snd_una`) first.
    pub fn items(&self) -> &VecDeque<Item> {
        &self.items
    }

    /// `TcpTxBuffer::BytesInFlight`: sent - (SACKed + lost) + resent, the
    /// pipe ns-3's `AvailableWindow` compares with cwnd.
    pub fn bytes_in_flight(&self) -> u64 {
        (self.sent + self.retrans).saturating_sub(self.sacked + self.lost)
    }

    /// Bytes marked SACKed (`GetSacked`).
    #[cfg(test)]
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked
    }

    /// Bytes marked lost (`GetLost`).
    #[cfg(test)]
    pub fn lost_bytes(&self) -> u64 {
        self.lost
    }

    /// `CopyFromSequence` of `[seq, seq + len)`: new data is appended
    /// (`GetNewSegment`); a resend of an entry sets its `retrans` flag
    /// (`GetTransmittedSegment`: "if (!item->m_retrans) m_retrans +=
    /// size"). `lost` stays set on a resent entry, as in ns-3.
    pub fn on_send(&mut self, seq: u64, len: u64) {
        let end = seq + len;
        let high = self.items.back().map_or(seq, |i| i.end);
        if seq >= high {
            self.items.push_back(Item {
                start: seq,
                end,
                sacked: false,
                lost: false,
                retrans: false,
            });
            self.sent += len;
            return;
        }
        for it in self.items.iter_mut() {
            if it.end <= seq {
                continue;
            }
            if it.start >= end {
                break;
            }
            if !it.retrans {
                it.retrans = true;
                self.retrans += it.end - it.start;
            }
        }
    }

    /// `DiscardUpTo(ack)`: drops the entries below the cumulative ACK with
    /// their flags (`RemoveFromCounts`). If the new head is marked SACKed
    /// ("not possible ... most likely our wrong guessing when adding Reno
    /// dupacks"), the mark moves on (`AddRenoSack`) and the head is marked
    /// lost (`MarkHeadAsLost`). If no SACK mark is left above the ACK,
    /// the highest-SACK point is forgotten (`m_sackSeen = false`).
    pub fn discard_up_to(&mut self, ack: u64) {
        while let Some(head) = self.items.front().copied() {
            if head.end <= ack {
                self.remove_counts(&head, head.len());
                self.sent -= head.len();
                self.items.pop_front();
            } else if head.start < ack {
                // Part of the head is acknowledged ("Fragmented").
                let cut = ack - head.start;
                self.remove_counts(&head, cut);
                self.sent -= cut;
                if let Some(h) = self.items.front_mut() {
                    h.start = ack;
                }
                break;
            } else {
                break;
            }
        }
        if self.items.front().is_some_and(|h| h.sacked) {
            let len = self.items[0].len();
            self.items[0].sacked = false;
            self.sacked -= len;
            self.add_reno_sack();
            self.mark_head_as_lost();
        }
        if self.highest_sack.is_some_and(|h| h <= ack) {
            self.highest_sack = None;
        }
    }

    fn remove_counts(&mut self, it: &Item, size: u64) {
        if it.sacked {
            self.sacked -= size;
        }
        if it.retrans {
            self.retrans -= size;
        }
        if it.lost {
            self.lost -= size;
        }
    }

    /// `AddRenoSack`: a duplicate ACK means one more segment left the
    /// network; mark the first un-SACKed entry after the head (the head is
    /// never SACKed) and make it the highest SACKed point. Nothing if every
    /// entry after the head is marked already ("dupack ... from spurious
    /// retransmissions").
    pub fn add_reno_sack(&mut self) {
        if let Some(it) = self.items.iter_mut().skip(1).find(|i| !i.sacked) {
            it.sacked = true;
            self.sacked += it.end - it.start;
            self.highest_sack = Some(it.start);
        }
    }

    /// `MarkHeadAsLost`: the head is un-SACKed, its `retrans` flag cleared
    /// (so it will be resent) and marked lost.
    pub fn mark_head_as_lost(&mut self) {
        let Some(h) = self.items.front_mut() else {
            return;
        };
        let len = h.end - h.start;
        if h.sacked {
            h.sacked = false;
            self.sacked -= len;
        }
        if h.retrans {
            h.retrans = false;
            self.retrans -= len;
        }
        if !h.lost {
            h.lost = true;
            self.lost += len;
        }
    }

    /// `ResetRenoSack` (at a timeout without SACK): every SACK mark is
    /// cleared and the highest-SACK point forgotten.
    pub fn reset_reno_sack(&mut self) {
        for it in self.items.iter_mut() {
            it.sacked = false;
        }
        self.sacked = 0;
        self.highest_sack = None;
    }

    /// `SetSentListLost(resetSack = true)` (at a timeout without SACK):
    /// every entry is marked lost and not resent, so all of them are
    /// resent, oldest first, as the window allows.
    pub fn set_sent_list_lost(&mut self) {
        self.retrans = 0;
        self.sacked = 0;
        self.lost = self.sent;
        self.highest_sack = None;
        for it in self.items.iter_mut() {
            it.sacked = false;
            it.lost = true;
            it.retrans = false;
        }
    }

    /// `IsLost(seq)`: false at or above the highest SACKed point (so
    /// always false when nothing is marked SACKed); else true if the entry
    /// holding `seq` is marked lost.
    pub fn is_lost(&self, seq: u64) -> bool {
        let Some(high) = self.highest_sack else {
            return false;
        };
        if seq >= high {
            return false;
        }
        self.items
            .iter()
            .find(|i| i.start <= seq && seq < i.end)
            .is_some_and(|i| i.lost)
    }

    /// `NextSeg` rule (1) without SACK: the first entry marked lost, not
    /// resent and not SACKed (below the highest SACKed point when one is
    /// marked): `(start, end)`.
    pub fn next_lost(&self) -> Option<(u64, u64)> {
        self.items
            .iter()
            .find(|i| {
                !i.retrans && !i.sacked && i.lost && self.highest_sack.is_none_or(|h| i.start < h)
            })
            .map(|i| (i.start, i.end))
    }

    /// `IsRetransmittedDataAcked(ack)`: an un-SACKed resent entry ends at
    /// `ack`.
    pub fn is_retransmitted_data_acked(&self, ack: u64) -> bool {
        self.items
            .iter()
            .any(|i| i.end == ack && !i.sacked && i.retrans)
    }

    /// `IsHeadRetransmitted`.
    pub fn is_head_retransmitted(&self) -> bool {
        self.items.front().is_some_and(|h| h.retrans)
    }
}

#[cfg(test)]
#[path = "reno_board_tests.rs"]
mod tests;
