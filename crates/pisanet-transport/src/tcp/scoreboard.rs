//! The SACK scoreboard of RFC 6675: which bytes above `snd_una` the
//! receiver has reported holding (RFC 2018), and the queries RFC 6675
//! section 4 builds on it (IsLost, the bytes counted by SetPipe, the
//! candidates of NextSeg).
//!
//! Octets in the RFCs are half-open byte ranges here: a block `[s, e)`,
//! `HighRxt` and `RescueRxt` as exclusive ends.

use pisanet_net::packet::SackBlock;
use std::collections::BTreeMap;

/// SACKed ranges above the cumulative ACK: start -> end, disjoint and
/// non-adjacent.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scoreboard {
    sacked: BTreeMap<u64, u64>,
}

impl Scoreboard {
    /// Forgets every SACKed range (RFC 6675 section 5.1 after a timeout).
    pub fn clear(&mut self) {
        self.sacked.clear();
    }

    /// RFC 6675 section 4, Update(): records `blocks`, clipped to
    /// `[una, high_data)`. Returns true if any of them SACKed bytes not
    /// SACKed before (RFC 6675 section 2's duplicate acknowledgment).
    pub fn update(&mut self, blocks: &[SackBlock], una: u64, high_data: u64) -> bool {
        let mut news = false;
        for b in blocks {
            let (s, e) = (b.start.max(una), b.end.min(high_data));
            if s < e {
                news |= self.insert(s, e) > 0;
            }
        }
        news
    }

    /// Drops what lies below the new cumulative ACK `una`.
    pub fn advance(&mut self, una: u64) {
        while let Some((&s, &e)) = self.sacked.first_key_value() {
            if s >= una {
                break;
            }
            self.sacked.remove(&s);
            if e > una {
                self.sacked.insert(una, e);
                break;
            }
        }
    }

    /// The end of the highest SACKed range, if any.
    pub fn highest_sacked(&self) -> Option<u64> {
        self.sacked.last_key_value().map(|(_, &e)| e)
    }

    /// RFC 6675 section 4, IsLost(): an un-SACKed byte is lost when at
    /// least `dup_thresh` discontiguous SACKed ranges lie above it, or more
    /// than `(dup_thresh - 1) * mss` SACKed bytes. IsLost only grows toward
    /// lower sequence numbers, so this returns the bound: every un-SACKed
    /// byte below it is lost, none at or above it. 0 when nothing is.
    pub fn lost_below(&self, mss: u64, dup_thresh: u32) -> u64 {
        let (mut ranges, mut bytes) = (0u32, 0u64);
        for (&s, &e) in self.sacked.iter().rev() {
            ranges += 1;
            bytes += e - s;
            if ranges >= dup_thresh || bytes > u64::from(dup_thresh - 1) * mss {
                return s;
            }
        }
        0
    }

    /// SACKed bytes in `[a, b)`.
    pub fn sacked_in(&self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        let mut n = 0;
        for (&s, &e) in self.sacked.range(..b).rev() {
            if e <= a {
                break;
            }
            n += e.min(b) - s.max(a);
        }
        n
    }

    /// Un-SACKed bytes in `[a, b)`.
    pub fn unsacked_in(&self, a: u64, b: u64) -> u64 {
        b.saturating_sub(a) - self.sacked_in(a, b)
    }

    /// The first un-SACKed byte at or after `seq`.
    pub fn next_unsacked(&self, seq: u64) -> u64 {
        match self.sacked.range(..=seq).next_back() {
            Some((_, &e)) if e > seq => e,
            _ => seq,
        }
    }

    /// Where the SACKed range after `seq` starts (`seq` un-SACKed), if any.
    pub fn next_sacked_start(&self, seq: u64) -> Option<u64> {
        self.sacked.range(seq..).next().map(|(&s, _)| s)
    }

    /// The last un-SACKed byte below `high` (exclusive end) and the start
    /// of the un-SACKed run it ends, both at or above `una`; `None` if
    /// every byte of `[una, high)` is SACKed.
    pub fn last_unsacked_run(&self, una: u64, high: u64) -> Option<(u64, u64)> {
        let mut end = high;
        // Step below a SACKed range that ends at `end`.
        if let Some((&s, &e)) = self.sacked.range(..end).next_back() {
            if e >= end {
                end = s;
            }
        }
        if end <= una {
            return None;
        }
        let start = match self.sacked.range(..end).next_back() {
            Some((_, &e)) => e.max(una),
            None => una,
        };
        Some((start, end))
    }

    /// Adds `[start, end)` and returns how many of its bytes were new.
    fn insert(&mut self, mut start: u64, mut end: u64) -> u64 {
        let len = end - start;
        let mut overlap = 0;
        if let Some((&s, &e)) = self.sacked.range(..=start).next_back() {
            if e >= start {
                overlap += e.min(end) - start;
                start = s;
                end = end.max(e);
                self.sacked.remove(&s);
            }
        }
        while let Some((&s, &e)) = self.sacked.range(start..=end).next() {
            overlap += e.min(end).saturating_sub(s);
            end = end.max(e);
            self.sacked.remove(&s);
        }
        self.sacked.insert(start, end);
        len - overlap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blk(start: u64, end: u64) -> SackBlock {
        SackBlock { start, end }
    }

    #[test]
    fn update_merges_and_reports_news() {
        let mut sb = Scoreboard::default();
        assert!(sb.update(&[blk(3000, 4000)], 1000, 10_000));
        assert!(!sb.update(&[blk(3000, 4000)], 1000, 10_000));
        assert!(sb.update(&[blk(4000, 5000), blk(7000, 8000)], 1000, 10_000));
        assert_eq!(sb.sacked_in(0, 10_000), 3000);
        assert_eq!(sb.highest_sacked(), Some(8000));
        // Clipped to [una, high_data): nothing new below una.
        assert!(!sb.update(&[blk(0, 1000)], 1000, 10_000));
        sb.advance(3500);
        assert_eq!(sb.sacked_in(0, 10_000), 2500);
        assert_eq!(sb.next_unsacked(3600), 5000);
        assert_eq!(sb.next_sacked_start(5000), Some(7000));
        assert_eq!(sb.last_unsacked_run(3500, 10_000), Some((8000, 10_000)));
        assert_eq!(sb.last_unsacked_run(3500, 8000), Some((5000, 7000)));
    }

    #[test]
    fn is_lost_needs_three_ranges_or_more_than_two_segments_above() {
        let mut sb = Scoreboard::default();
        sb.update(&[blk(2000, 3000), blk(4000, 5000)], 0, 10_000);
        // Two ranges, 2000 bytes: nothing lost yet.
        assert_eq!(sb.lost_below(1000, 3), 0);
        sb.update(&[blk(6000, 7000)], 0, 10_000);
        // A third range: every un-SACKed byte below 2000 is lost.
        assert_eq!(sb.lost_below(1000, 3), 2000);
        let mut sb = Scoreboard::default();
        sb.update(&[blk(5000, 8001)], 0, 10_000);
        // One range of more than 2 SMSS.
        assert_eq!(sb.lost_below(1000, 3), 5000);
    }
}
