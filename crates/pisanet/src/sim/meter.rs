//! Per-flow measurement, off by default (docs/metrics.md, "Per-flow
//! measurement"): one-way delay of delivered data packets, RTT samples of
//! TCP senders, deadline misses (`metrics.flow_stats`), and per-flow
//! goodput series (`metrics.goodput_interval_us`).
//!
//! Owns: the bounded-memory distributions ([`LogHistogram`], [`Dist`]), the
//! state of one running flow ([`FlowMeter`], boxed in the flow's
//! `ActiveFlow` only when measurement is on) and the run's totals
//! ([`Meter`]: distributions over all flows, deadline totals, the goodput
//! rows), allocated only when measurement is on. A flow's [`FlowStats`]
//! go into its row of the flow table when it ends (`sim::records`).

use pisanet_engine::SimTime;
use pisanet_net::packet::FlowId;

/// Sub-buckets per power of two: a bucket spans at most 1/32 of its lower
/// bound, so a percentile read at a bucket's midpoint is within 1/64
/// (1.6 %) of a value in it.
const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;

/// A log-bucketed histogram of `u64` values (picoseconds here), sparse:
/// memory grows with the distinct buckets hit, at most 64 x 32 of them.
/// Values below 32 have a bucket each (exact).
#[derive(Clone, Debug, Default)]
pub struct LogHistogram {
    /// (bucket, count), sorted by bucket.
    buckets: Vec<(u16, u32)>,
}

fn bucket_of(v: u64) -> u16 {
    if v < SUB {
        return v as u16;
    }
    let e = 63 - v.leading_zeros(); // >= SUB_BITS
    let mantissa = (v >> (e - SUB_BITS)) & (SUB - 1);
    ((e - SUB_BITS + 1) as u64 * SUB + mantissa) as u16
}

/// The lowest value of bucket `b` and its width.
fn bucket_range(b: u16) -> (u64, u64) {
    let b = b as u64;
    if b < SUB {
        return (b, 1);
    }
    let e = (b / SUB) as u32 + SUB_BITS - 1;
    let mantissa = b % SUB;
    let width = 1u64 << (e - SUB_BITS);
    ((SUB + mantissa) << (e - SUB_BITS), width)
}

impl LogHistogram {
    pub fn record(&mut self, v: u64) {
        self.add(bucket_of(v), 1);
    }

    fn add(&mut self, b: u16, n: u32) {
        match self.buckets.binary_search_by_key(&b, |&(k, _)| k) {
            Ok(i) => self.buckets[i].1 = self.buckets[i].1.saturating_add(n),
            Err(i) => self.buckets.insert(i, (b, n)),
        }
    }

    pub fn merge(&mut self, other: &LogHistogram) {
        for &(b, n) in &other.buckets {
            self.add(b, n);
        }
    }

    /// The nearest-rank `p` quantile (the value at rank `ceil(p * n)`), as
    /// the midpoint of its bucket clamped into `[lo, hi]` (the exact
    /// minimum and maximum); `None` when empty.
    pub fn quantile(&self, p: f64, lo: u64, hi: u64) -> Option<u64> {
        let n: u64 = self.buckets.iter().map(|&(_, c)| c as u64).sum();
        if n == 0 {
            return None;
        }
        let rank = ((p * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for &(b, c) in &self.buckets {
            seen += c as u64;
            if seen >= rank {
                let (low, width) = bucket_range(b);
                return Some((low + width / 2).clamp(lo, hi));
            }
        }
        Some(hi)
    }
}

/// A distribution: exact count, sum, min and max, percentiles from a
/// [`LogHistogram`].
#[derive(Clone, Debug, Default)]
pub struct Dist {
    pub n: u64,
    pub sum: u128,
    pub min: u64,
    pub max: u64,
    pub hist: LogHistogram,
}

impl Dist {
    pub fn record(&mut self, v: u64) {
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.n += 1;
        self.sum += v as u128;
        self.hist.record(v);
    }

    pub fn merge(&mut self, o: &Dist) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 || o.min < self.min {
            self.min = o.min;
        }
        self.max = self.max.max(o.max);
        self.n += o.n;
        self.sum += o.sum;
        self.hist.merge(&o.hist);
    }

    /// Mean in microseconds (NaN when empty).
    pub fn mean_us(&self) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        self.sum as f64 / self.n as f64 / 1e6
    }

    /// Nearest-rank quantile in microseconds (NaN when empty).
    pub fn quantile_us(&self, p: f64) -> f64 {
        self.hist
            .quantile(p, self.min, self.max)
            .map_or(f64::NAN, |v| v as f64 / 1e6)
    }

    pub fn max_us(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.max as f64 / 1e6
        }
    }
}

/// The measurement state of one running flow.
#[derive(Clone, Debug, Default)]
pub struct FlowMeter {
    /// One-way delay of each delivered data packet (ps).
    pub delay: Dist,
    /// RTT samples of the TCP sender (ps).
    pub rtt: Dist,
    /// RTT samples already taken from the sender.
    pub rtt_seen: u32,
    /// The flow's per-packet delay budget, if it has one.
    pub deadline: Option<SimTime>,
    pub deadline_missed: u64,
    /// Goodput: the interval being filled and its bytes so far.
    pub bin: u64,
    pub bin_bytes: u64,
    /// The TCP sender's loss-recovery counters, read when the flow closes.
    pub tcp: TcpCounters,
    /// Parallel mode, a receiver whose sender is in another partition:
    /// what it measured in the window under way, (time, key) of the event
    /// and the measurement, applied at the window's end up to the sender's
    /// completion (sim/parallel.rs, "Per-flow measurement"). `None`
    /// otherwise: measured at once.
    pub(crate) pending: Option<Vec<(SimTime, u64, Measured)>>,
    /// In [`Meter::touched`] this window.
    pub(crate) listed: bool,
}

/// One held measurement of a receiver (`FlowMeter::pending`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Measured {
    /// A data packet sent at this time arrived.
    Data(SimTime),
    /// Payload bytes reached the application.
    Goodput(u64),
}

/// A TCP sender's per-flow counters (`flow_stats` only; 0 for UDP): duplicate
/// ACKs (RFC 5681 section 2), fast retransmits (entries into fast recovery)
/// and retransmission timeouts.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpCounters {
    pub dup_acks: u32,
    pub fast_retransmits: u32,
    pub timeouts: u32,
}

/// A flow's measured statistics, for its row (when it completes, or at
/// the end of the run for flows still running).
#[derive(Clone, Copy, Debug)]
pub struct FlowStats {
    pub delay_mean_us: f64,
    pub delay_p50_us: f64,
    pub delay_p99_us: f64,
    pub delay_max_us: f64,
    /// Data packets whose delay was measured (delivered to the receiver host).
    pub delay_packets: u64,
    pub rtt_mean_us: f64,
    pub rtt_p99_us: f64,
    pub rtt_max_us: f64,
    pub rtt_samples: u32,
    /// Delivered data packets whose one-way delay exceeded the flow's deadline.
    pub deadline_missed_packets: u64,
    pub has_deadline: bool,
    pub tcp: TcpCounters,
}

impl Default for FlowStats {
    fn default() -> Self {
        FlowStats {
            delay_mean_us: f64::NAN,
            delay_p50_us: f64::NAN,
            delay_p99_us: f64::NAN,
            delay_max_us: f64::NAN,
            delay_packets: 0,
            rtt_mean_us: f64::NAN,
            rtt_p99_us: f64::NAN,
            rtt_max_us: f64::NAN,
            rtt_samples: 0,
            deadline_missed_packets: 0,
            has_deadline: false,
            tcp: TcpCounters::default(),
        }
    }
}

/// The run's measurement: settings, deadline totals, goodput rows
/// and the distributions over all flows.
#[derive(Debug, Default)]
pub struct Meter {
    /// `metrics.flow_stats`: delay, RTT and deadline statistics.
    pub flow_stats: bool,
    /// `metrics.goodput_interval_us`, when on.
    pub goodput: Option<SimTime>,
    /// Deadline totals over the flows closed so far (`flow_stats`): flows
    /// with a deadline, those of them that missed it with a packet, their
    /// measured and late packets.
    pub deadline_flows: u64,
    pub deadline_missed_flows: u64,
    pub deadline_packets: u64,
    pub deadline_missed_packets: u64,
    /// Goodput rows: end of the interval, flow, payload bytes delivered in it.
    pub goodput_time: Vec<SimTime>,
    pub goodput_flow: Vec<FlowId>,
    pub goodput_bytes: Vec<u64>,
    /// Delay and RTT over every flow's packets.
    pub delay_all: Dist,
    pub rtt_all: Dist,
    /// Parallel mode: the (time, key) of the event being handled (set by
    /// the partition's loop, sim/parallel.rs).
    pub(crate) at: (SimTime, u64),
    /// Parallel mode (`Some`): the (time, key) of the event that wrote
    /// each goodput row, by which the partitions' rows are put in the
    /// single-thread run's order.
    pub(crate) goodput_at: Option<Vec<(SimTime, u64)>>,
    /// Parallel mode: the flows whose `pending` took a measurement this
    /// window.
    pub(crate) touched: Vec<FlowId>,
}

impl Meter {
    /// Per-flow state for a new flow with `deadline`.
    pub fn new_flow(&mut self, deadline: Option<SimTime>) -> Box<FlowMeter> {
        Box::new(FlowMeter {
            deadline,
            ..FlowMeter::default()
        })
    }

    /// `bytes` of payload reached the receiving application of `flow` at `now`.
    #[inline]
    pub fn on_goodput(&mut self, m: &mut FlowMeter, flow: FlowId, now: SimTime, bytes: u64) {
        if let Some(p) = &mut m.pending {
            // Parallel mode: held until the window's end (called after
            // `on_data` for every packet a TCP receiver takes).
            if bytes > 0 && self.goodput.is_some() {
                p.push((self.at.0, self.at.1, Measured::Goodput(bytes)));
            }
            if !p.is_empty() && !m.listed {
                m.listed = true;
                self.touched.push(flow);
            }
            return;
        }
        let Some(iv) = self.goodput else { return };
        if bytes == 0 {
            return;
        }
        let bin = now.ps() / iv.ps().max(1);
        if bin != m.bin {
            self.flush_goodput(m, flow);
            m.bin = bin;
        }
        m.bin_bytes += bytes;
    }

    /// Writes the flow's pending goodput interval as a row.
    pub fn flush_goodput(&mut self, m: &mut FlowMeter, flow: FlowId) {
        let Some(iv) = self.goodput else { return };
        if m.bin_bytes > 0 {
            if let Some(at) = &mut self.goodput_at {
                at.push(self.at);
            }
            self.goodput_time.push(SimTime((m.bin + 1) * iv.ps()));
            self.goodput_flow.push(flow);
            self.goodput_bytes.push(m.bin_bytes);
            m.bin_bytes = 0;
        }
    }

    /// A data packet sent at `sent_at` reached the receiver host at `now`.
    #[inline]
    pub fn on_data(&self, m: &mut FlowMeter, now: SimTime, sent_at: SimTime) {
        if !self.flow_stats {
            return;
        }
        if let Some(p) = &mut m.pending {
            // Parallel mode: held until the window's end (`on_goodput`
            // lists the flow).
            p.push((self.at.0, self.at.1, Measured::Data(sent_at)));
            return;
        }
        let d = now.saturating_sub(sent_at);
        m.delay.record(d.ps());
        if m.deadline.is_some_and(|dl| d > dl) {
            m.deadline_missed += 1;
        }
    }

    /// Parallel mode: applies what `m` held this window, in event order,
    /// up to (not including) the event at `cut` (its sender's completion,
    /// after which a single-thread run measures nothing); what came
    /// after is dropped. Goodput rows written meanwhile take their
    /// event's (time, key).
    pub(crate) fn apply_pending(
        &mut self,
        m: &mut FlowMeter,
        flow: FlowId,
        cut: Option<(SimTime, u64)>,
    ) {
        m.listed = false;
        let Some(mut held) = m.pending.take() else {
            return;
        };
        let at = self.at;
        for &(t, key, what) in &held {
            if cut.is_some_and(|c| (t, key) >= c) {
                break;
            }
            self.at = (t, key);
            match what {
                Measured::Data(sent_at) => self.on_data(m, t, sent_at),
                Measured::Goodput(bytes) => self.on_goodput(m, flow, t, bytes),
            }
        }
        self.at = at;
        held.clear();
        m.pending = Some(held);
    }

    /// The flow ended (or the run did): its statistics, for its row of the
    /// flow table (`None` without `flow_stats`), folded into the totals.
    pub fn close(&mut self, m: &mut FlowMeter, flow: FlowId) -> Option<FlowStats> {
        self.flush_goodput(m, flow);
        if !self.flow_stats {
            return None;
        }
        self.delay_all.merge(&m.delay);
        self.rtt_all.merge(&m.rtt);
        if m.deadline.is_some() {
            self.deadline_flows += 1;
            self.deadline_missed_flows += u64::from(m.deadline_missed > 0);
            self.deadline_packets += m.delay.n;
            self.deadline_missed_packets += m.deadline_missed;
        }
        Some(FlowStats {
            delay_mean_us: m.delay.mean_us(),
            delay_p50_us: m.delay.quantile_us(0.5),
            delay_p99_us: m.delay.quantile_us(0.99),
            delay_max_us: m.delay.max_us(),
            delay_packets: m.delay.n,
            rtt_mean_us: m.rtt.mean_us(),
            rtt_p99_us: m.rtt.quantile_us(0.99),
            rtt_max_us: m.rtt.max_us(),
            rtt_samples: m.rtt.n as u32,
            deadline_missed_packets: m.deadline_missed,
            has_deadline: m.deadline.is_some(),
            tcp: m.tcp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_once_and_in_order() {
        let mut prev = None;
        for v in (0..5000u64).chain([1 << 20, (1 << 40) + 12345, u64::MAX]) {
            let b = bucket_of(v);
            let (lo, w) = bucket_range(b);
            assert!(lo <= v && v - lo < w, "v {v} bucket {b} lo {lo} w {w}");
            assert!(w == 1 || (w as f64) <= lo as f64 / 32.0 + 1.0, "v {v}");
            if let Some(p) = prev {
                assert!(b >= p);
            }
            prev = Some(b);
        }
    }

    #[test]
    fn quantiles_are_within_the_documented_resolution() {
        let mut d = Dist::default();
        for v in 1..=10_000u64 {
            d.record(v * 1_000_000); // 1 us .. 10 ms
        }
        let p50 = d.quantile_us(0.5);
        let p99 = d.quantile_us(0.99);
        assert!((p50 / 5000.0 - 1.0).abs() < 1.0 / 64.0 + 1e-9, "{p50}");
        assert!((p99 / 9900.0 - 1.0).abs() < 1.0 / 64.0 + 1e-9, "{p99}");
        assert_eq!(d.max_us(), 10_000.0);
        assert!((d.mean_us() - 5000.5).abs() < 1e-9);
        // A constant is exact (clamped to min = max).
        let mut c = Dist::default();
        for _ in 0..7 {
            c.record(123_456_789);
        }
        assert_eq!(c.quantile_us(0.99), 123.456789);
        let mut m = Dist::default();
        m.merge(&c);
        m.merge(&d);
        assert_eq!(m.n, 10_007);
        assert_eq!((m.min, m.max), (1_000_000, 10_000_000_000));
    }
}
