//! Finished-flow records: what a flow leaves behind when it ends, so that
//! memory follows the flows still running, not every flow of the run
//! (issue 18, docs/performance.md "Memory against finished flows").
//!
//! When a flow completes (or the run stops with it still running) its row of
//! `flows.parquet` goes into a batch; a full batch ([`BATCH_ROWS`] rows) goes
//! to the run's [`FlowSink`] (the Python front end writes it to Parquet)
//! and is freed. What stays per finished flow:
//! - [`Done`], 32 bytes: what the summary's statistics need (FCT, slowdown,
//!   goodput for fairness, class and size bucket, group), so the summary is
//!   computed exactly as from the whole table;
//! - the digest's rows of flows that finished before an earlier-started flow
//!   did (48 bytes each, while they wait): the digest hashes flows in id
//!   order, as it always has, folding each row in as soon as every flow
//!   started before it has ended. With short flows that window is a few
//!   flows; a flow that never ends holds it open to the end of the run.
//!
//! Without a sink (the library's `run_toml`, tests) every row is kept and the
//! table is handed back in flow id order, as before.

use std::collections::VecDeque;

use pisanet_engine::SimTime;
use sha2::{Digest, Sha256};

use super::meter::FlowStats;
use super::FlowRecord;
use crate::api::{Error, FlowTable};

/// Rows handed to the sink at once.
pub const BATCH_ROWS: usize = 1 << 16;

/// Where finished-flow rows go, a batch at a time: rows in the order flows
/// ended (then the flows still running when the run stopped, by id); the
/// last call (possibly with no rows) comes when the run ends. An error
/// stops the run and is its result.
pub type FlowSink = Box<dyn FnMut(FlowTable) -> Result<(), Error> + Send>;

/// The values the digest hashes of one flow (besides its id).
#[derive(Clone, Copy, Debug)]
struct DigestRow {
    src: u32,
    dst: u32,
    bytes: u64,
    start_ps: u64,
    finish_ps: u64,
    retransmissions: u32,
    reordered: u32,
}

/// What the summary's statistics need of a finished flow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Done {
    pub id: u32,
    pub group: u16,
    pub class: u8,
    /// Bit 0: fewer than 100 kB; bit 1: more than 10 MB.
    pub size: u8,
    pub fct: SimTime,
    pub slowdown: f64,
    /// Mean goodput (Gb/s) for the fairness index; NaN when the FCT is 0.
    pub gbps: f64,
}

pub(crate) const LT_100KB: u8 = 1;
pub(crate) const GT_10MB: u8 = 2;

/// The records of a run's flows (see the module doc).
pub struct FlowRecords {
    /// Flows started so far (ids 0..started).
    pub started: u64,
    hasher: Sha256,
    /// Id of the first flow not yet hashed.
    window_base: u64,
    /// One slot per flow from `window_base` on: its digest row once it ended.
    window: VecDeque<Option<DigestRow>>,
    pub(crate) done: Vec<Done>,
    /// Sums over every started flow.
    pub retransmissions: u64,
    pub lost_packets: u64,
    pub lost_bytes: u64,
    pub reordered: u64,
    batch: FlowTable,
    sink: Option<FlowSink>,
    /// Without a sink: every row so far.
    kept: FlowTable,
    /// The sink's error: the run stops and reports it.
    pub(crate) failed: Option<Error>,
}

impl Default for FlowRecords {
    fn default() -> Self {
        FlowRecords {
            started: 0,
            hasher: Sha256::new(),
            window_base: 0,
            window: VecDeque::new(),
            done: Vec::new(),
            retransmissions: 0,
            lost_packets: 0,
            lost_bytes: 0,
            reordered: 0,
            batch: FlowTable::default(),
            sink: None,
            kept: FlowTable::default(),
            failed: None,
        }
    }
}

impl FlowRecords {
    /// Records for a run of `total` flows (capacity is reserved, not touched).
    pub fn new(total: u64, sink: Option<FlowSink>) -> Self {
        // NOTE: reserving the exact count avoids a doubling Vec's slack (up
        // to 2x); pages never written cost no memory. Capped (512 MB of
        // address space) for runs that stop long before their flow count.
        let done = Vec::with_capacity(total.min(1 << 24) as usize);
        FlowRecords {
            done,
            sink,
            ..Default::default()
        }
    }

    /// Whether rows go to a sink (else they are kept).
    pub fn streaming(&self) -> bool {
        self.sink.is_some()
    }

    /// Flow `id` started (ids come in order).
    pub(crate) fn start(&mut self, id: u32) {
        debug_assert_eq!(u64::from(id), self.started);
        self.started += 1;
        self.window.push_back(None);
    }

    /// Flow `id` ended (`rec.finish` set) or the run stopped with it running
    /// (`rec.finish` unset): its row, its digest row and its statistics.
    pub(crate) fn end(&mut self, id: u32, rec: &FlowRecord, st: &FlowStats) {
        let start = rec.first_sent.unwrap_or(rec.arrival);
        let (finish_us, fct_us, slowdown) = match rec.finish {
            Some(fin) => {
                let fct = fin.saturating_sub(start);
                let slowdown = fct.ps() as f64 / rec.ideal.ps().max(1) as f64;
                let fct_us = fct.as_us_f64();
                // Fairness (run.rs, `fairness_summary`): TCP delivers every
                // byte (losses are retransmitted); UDP what arrived.
                let delivered = match rec.transport {
                    0 => rec.bytes,
                    _ => rec.bytes - rec.lost_bytes,
                } as f64;
                let gbps = if fct_us > 0.0 {
                    delivered * 8.0 / (fct_us * 1e3)
                } else {
                    f64::NAN
                };
                let size = if rec.bytes < 100_000 { LT_100KB } else { 0 }
                    | if rec.bytes > 10_000_000 { GT_10MB } else { 0 };
                self.done.push(Done {
                    id,
                    group: rec.group,
                    class: rec.class,
                    size,
                    fct,
                    slowdown,
                    gbps,
                });
                (fin.as_us_f64(), fct_us, slowdown)
            }
            None => (f64::NAN, f64::NAN, f64::NAN),
        };
        self.retransmissions += u64::from(rec.retransmissions);
        self.lost_packets += u64::from(rec.lost_packets);
        self.lost_bytes += rec.lost_bytes;
        self.reordered += u64::from(rec.reordered);
        let slot = (u64::from(id) - self.window_base) as usize;
        self.window[slot] = Some(DigestRow {
            src: rec.src,
            dst: rec.dst,
            bytes: rec.bytes,
            start_ps: start.ps(),
            finish_ps: rec.finish.map_or(u64::MAX, |t| t.ps()),
            retransmissions: rec.retransmissions,
            reordered: rec.reordered,
        });
        self.fold_digest();
        let t = &mut self.batch;
        t.id.push(id);
        t.src.push(rec.src);
        t.dst.push(rec.dst);
        t.bytes.push(rec.bytes);
        t.class.push(rec.class);
        t.start_us.push(start.as_us_f64());
        t.finish_us.push(finish_us);
        t.fct_us.push(fct_us);
        t.slowdown.push(slowdown);
        t.retransmissions.push(rec.retransmissions);
        t.reordered.push(rec.reordered);
        t.transport.push(rec.transport);
        t.priority.push(rec.prio);
        t.group.push(u32::from(rec.group));
        t.lost_packets.push(rec.lost_packets);
        t.lost_bytes.push(rec.lost_bytes);
        t.delay_mean_us.push(st.delay_mean_us);
        t.delay_p50_us.push(st.delay_p50_us);
        t.delay_p99_us.push(st.delay_p99_us);
        t.delay_max_us.push(st.delay_max_us);
        t.rtt_mean_us.push(st.rtt_mean_us);
        t.rtt_p99_us.push(st.rtt_p99_us);
        t.rtt_max_us.push(st.rtt_max_us);
        t.deadline_missed_packets.push(st.deadline_missed_packets);
        t.dup_acks.push(st.tcp.dup_acks);
        t.fast_retransmits.push(st.tcp.fast_retransmits);
        t.timeouts.push(st.tcp.timeouts);
        t.delay_packets.push(st.delay_packets);
        t.delivered.push(rec.delivered);
        if t.id.len() >= BATCH_ROWS {
            self.flush();
        }
    }

    /// Hashes the rows at the front of the window whose flows have ended.
    fn fold_digest(&mut self) {
        while let Some(Some(r)) = self.window.front() {
            for x in [
                self.window_base,
                u64::from(r.src),
                u64::from(r.dst),
                r.bytes,
                r.start_ps,
                r.finish_ps,
                u64::from(r.retransmissions),
                u64::from(r.reordered),
            ] {
                self.hasher.update(x.to_le_bytes());
            }
            self.window.pop_front();
            self.window_base += 1;
        }
        if self.window.is_empty() && self.window.capacity() > 1024 {
            // A window that grew behind a long flow gives its memory back.
            self.window.shrink_to(1024);
        }
    }

    /// Hands the batch to the sink (or keeps it without one).
    fn flush(&mut self) {
        let batch = std::mem::take(&mut self.batch);
        match self.sink.as_mut() {
            None => self.kept.append(batch),
            Some(_) if self.failed.is_some() => {}
            Some(sink) => {
                if let Err(e) = sink(batch) {
                    self.failed = Some(e);
                }
            }
        }
    }

    /// The run is over and every started flow has ended or been recorded as
    /// running: the digest, and the table (empty when streamed; else every
    /// row, in flow id order). The sink gets its last batch here.
    pub(crate) fn finish(&mut self) -> Result<(String, FlowTable), Error> {
        debug_assert!(self.window.is_empty(), "every started flow has a row");
        self.flush();
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let digest = std::mem::replace(&mut self.hasher, Sha256::new()).finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut table = std::mem::take(&mut self.kept);
        table.sort_by_id();
        self.done.sort_unstable_by_key(|d| d.id);
        Ok((digest, table))
    }
}

/// Applies `$m!(column)` to every column of a `FlowTable`.
macro_rules! each_column {
    ($m:ident) => {
        $m!(
            id,
            src,
            dst,
            bytes,
            class,
            start_us,
            finish_us,
            fct_us,
            slowdown,
            retransmissions,
            reordered,
            transport,
            priority,
            group,
            lost_packets,
            lost_bytes,
            delay_mean_us,
            delay_p50_us,
            delay_p99_us,
            delay_max_us,
            rtt_mean_us,
            rtt_p99_us,
            rtt_max_us,
            deadline_missed_packets,
            dup_acks,
            fast_retransmits,
            timeouts,
            delay_packets,
            delivered
        )
    };
}

impl FlowTable {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }

    /// Appends `other`'s rows.
    pub fn append(&mut self, mut other: FlowTable) {
        macro_rules! app {
            ($($c:ident),*) => { $( self.$c.append(&mut other.$c); )* };
        }
        each_column!(app);
    }

    /// Reorders the rows by flow id.
    pub fn sort_by_id(&mut self) {
        if self.id.windows(2).all(|w| w[0] < w[1]) {
            return;
        }
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_unstable_by_key(|&i| self.id[i]);
        macro_rules! gather {
            ($($c:ident),*) => { $( self.$c = order.iter().map(|&i| self.$c[i]).collect(); )* };
        }
        each_column!(gather);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(finish_us: Option<u64>) -> FlowRecord {
        FlowRecord {
            src: 1,
            dst: 2,
            bytes: 5000,
            class: 0,
            transport: 0,
            prio: 0,
            group: 0,
            arrival: SimTime::from_us(1),
            first_sent: None,
            finish: finish_us.map(SimTime::from_us),
            retransmissions: 0,
            reordered: 0,
            lost_packets: 0,
            lost_bytes: 0,
            ideal: SimTime::from_us(2),
            delivered: 5000,
        }
    }

    /// The digest of flows ended in any order is the digest of the same
    /// flows ended in id order (what `finish` hashed before streaming).
    #[test]
    fn digest_does_not_depend_on_the_order_flows_end() {
        let ends = |order: &[u32]| {
            let mut r = FlowRecords::new(order.len() as u64, None);
            for id in 0..order.len() as u32 {
                r.start(id);
            }
            for &id in order {
                r.end(id, &rec(Some(10 + u64::from(id))), &FlowStats::default());
            }
            r.finish().unwrap()
        };
        let (in_order, t1) = ends(&[0, 1, 2, 3, 4]);
        let (shuffled, t2) = ends(&[3, 0, 4, 2, 1]);
        assert_eq!(in_order, shuffled);
        assert_eq!(t1.id, vec![0, 1, 2, 3, 4]);
        assert_eq!(t2.id, t1.id);
        assert_eq!(t2.finish_us, t1.finish_us);
    }

    /// Every row reaches the sink exactly once, in batches of at most
    /// `BATCH_ROWS`, the last one at `finish`.
    #[test]
    fn sink_gets_every_row_once_in_batches() {
        let n = BATCH_ROWS as u32 * 2 + 7;
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let s = seen.clone();
        let sink: FlowSink = Box::new(move |t: FlowTable| {
            s.lock().unwrap().push(t.id);
            Ok(())
        });
        let mut r = FlowRecords::new(u64::from(n), Some(sink));
        for id in 0..n {
            r.start(id);
        }
        for id in (0..n).rev() {
            r.end(id, &rec(Some(100)), &FlowStats::default());
        }
        let (_, table) = r.finish().unwrap();
        assert!(table.is_empty());
        let batches = seen.lock().unwrap();
        assert_eq!(batches.len(), 3);
        assert!(batches.iter().all(|b| b.len() <= BATCH_ROWS));
        let mut ids: Vec<u32> = batches.iter().flatten().copied().collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..n).collect::<Vec<_>>());
    }

    /// A sink's error is the run's result, and the sink is not called again.
    #[test]
    fn a_sink_error_is_reported_once() {
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let c = calls.clone();
        let sink: FlowSink = Box::new(move |_| {
            c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Err(Error::input("disk full"))
        });
        let n = BATCH_ROWS as u32 + 1;
        let mut r = FlowRecords::new(u64::from(n), Some(sink));
        for id in 0..n {
            r.start(id);
            r.end(id, &rec(None), &FlowStats::default());
        }
        assert_eq!(r.finish().unwrap_err().message, "disk full");
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 1);
    }
}
