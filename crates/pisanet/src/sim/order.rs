//! The order of simultaneous events (docs/architecture.md, "Event order").
//!
//! Events pop by (time, key), where the key is computed from the event
//! itself and its time: its kind in the high 32 bits, and in the low 32 its
//! index (port, flow, switch, link event) scrambled by a bijection that
//! depends on the time ([`scramble`]). Two pending events with the same key
//! and time are the same event (an [`Ev`] is nothing but its kind and
//! index, and for one time the scramble is one-to-one), so their order
//! cannot matter, and the order of a run's events does not depend on when
//! each was pushed. This is what makes the parallel mode's
//! partitions pop exactly the single-thread run's events restricted to
//! their nodes (sim/parallel.rs): each partition pushes its events at other
//! moments, and in another order, than one queue would.
//!
//! Within one instant, kinds go in this order (lowest key first):
//!
//! | kind | why here |
//! |---|---|
//! | `LinkEvent` | the topology changes first: a link that fails at t carries nothing at t |
//! | `Arrive` | a packet arriving at t is admitted or dropped against the queue as it stands before any departure at t: the packet that starts transmitting at t holds its buffer slot until then (as in ns-3, whose FIFO order of simultaneous events gives the same here, the arrival's event being scheduled a link delay before the departure's) |
//! | `TxDone` | a transmitter finishing at t takes its next packet off the queue. The other order (departures first) locks a port that one sender feeds at exactly its rate: each slot a departure frees goes to that sender's packet arriving at the same instant, and every other sender's packet is dropped (seen on a 10G dumbbell: one-packet flows timing out twice, small-flow FCT 733 us against 14 us) |
//! | `PfcExpire`, `PfcRefresh`, `PfcCheck` | a PAUSE frame arriving at t reloads a pause that would run out at t (802.1Qbb: the quanta reload on receipt) |
//! | `SwitchTimer`, `SenderTimer`, `ReceiverTimer` | a timer due at t sees what arrived at t (an ACK arriving at the retransmission deadline is taken, not timed out) |
//! | `NextFlow` | a flow starting at t queues behind what arrived at t |
//! | `Release` | a receiver released at t answered what reached it at t |
//! | `Sample`, `RateSample` | samples see the state at the end of the instant |
//!
//! Within a kind, the order of the indices is a pseudo-random permutation
//! that changes from one instant to the next. A fixed order (the lower port
//! first, say) would be canonical too, but biased: two senders in lock step
//! whose packets reach a switch in the same picosecond would always be
//! queued in the same order, and at a full buffer the one on the higher
//! port would always be the one dropped (two synchronized NewReno flows on
//! one bottleneck: mean rates 1186 against 592 MB/s, Jain's index 0.90). Insertion
//! order, used before, had no such fixed winner.

use super::Ev;
use pisanet_engine::{ByEvent, EventQueue, SimTime, TieKey};

impl Ev {
    /// The event's tie key at `time`: kind (see the module doc) << 32 |
    /// the index scrambled by the time.
    #[inline(always)]
    pub fn key(self, time: SimTime) -> u64 {
        let (kind, index): (u64, u32) = match self {
            Ev::LinkEvent(i) => (0, i),
            Ev::Arrive(p) => (1, p),
            Ev::TxDone(p) => (2, p),
            Ev::PfcExpire(p) => (3, p),
            Ev::PfcRefresh(p) => (4, p),
            Ev::PfcCheck => (5, 0),
            Ev::SwitchTimer(s) => (6, s),
            Ev::SenderTimer(f) => (7, f),
            Ev::ReceiverTimer(f) => (8, f),
            Ev::NextFlow => (9, 0),
            Ev::Release(f) => (10, f),
            Ev::Sample => (11, 0),
            Ev::RateSample => (12, 0),
        };
        (kind << 32) | u64::from(scramble(index, time))
    }
}

impl TieKey for Ev {
    #[inline(always)]
    fn tie_key(&self, time: SimTime) -> u64 {
        self.key(time)
    }
}

/// A bijection of the 32-bit index for each time: the index XOR a word of
/// the time, through an invertible integer mix (xor-shifts and
/// multiplications by odd constants: C. Wellons's `lowbias32`). Distinct
/// indices keep distinct keys at one time; their order changes with it.
#[inline(always)]
pub fn scramble(index: u32, time: SimTime) -> u32 {
    let t = time.ps();
    let mut x = index ^ ((t ^ (t >> 32)) as u32);
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// The world's event queue: [`EventQueue`] with every event keyed by
/// [`Ev::key`] (never by insertion order), computed only when two pending
/// events have equal times ([`ByEvent`]).
#[derive(Default)]
pub struct Events(EventQueue<Ev, ByEvent>, u64);

impl Events {
    pub fn new() -> Self {
        Events(EventQueue::new(), 0)
    }

    /// The event just popped is not counted in `events_processed`: a
    /// parallel partition's copy of an event every partition runs
    /// (`NextFlow`), so that a parallel run counts the single-thread run's
    /// events.
    pub(crate) fn uncount(&mut self) {
        self.1 += 1;
    }

    /// Schedules `ev` at `time`, ordered among simultaneous events by its key.
    #[inline(always)]
    pub fn schedule(&mut self, time: SimTime, ev: Ev) {
        self.0.schedule_by_event(time, ev);
    }

    /// The time of the last event popped (the simulation clock).
    #[inline(always)]
    pub fn now(&self) -> SimTime {
        self.0.now()
    }

    /// Removes and returns the earliest event (lowest key among ties).
    #[inline(always)]
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<(SimTime, Ev)> {
        self.0.next()
    }

    /// Removes and returns the earliest event of the window that ends at
    /// `end` (strictly before it) if it is not after `max_time`; `None` if
    /// there is none (or `end` is zero). The parallel mode's partitions run
    /// their windows with it.
    #[inline(always)]
    pub fn next_before(&mut self, end: SimTime, max_time: SimTime) -> Option<(SimTime, Ev)> {
        let last = end.ps().checked_sub(1)?;
        self.0.next_until(max_time.min(SimTime(last)))
    }

    /// Removes and returns the earliest event if it is strictly before
    /// `end`; `None` if there is none (or `end` is zero). The single-thread
    /// loop runs its windows with it (`end`: the window's end or the time
    /// limit's next picosecond, whichever is first).
    #[inline(always)]
    pub fn next_below(&mut self, end: SimTime) -> Option<(SimTime, Ev)> {
        self.0.next_before(end)
    }

    #[inline(always)]
    pub fn peek_time(&self) -> Option<SimTime> {
        self.0.peek_time()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Events popped so far (all of them).
    #[inline(always)]
    pub fn popped(&self) -> u64 {
        self.0.events_processed()
    }

    /// Events popped so far, less those `uncount`ed.
    pub fn events_processed(&self) -> u64 {
        self.0.events_processed() - self.1
    }

    /// `EventQueue::absorb` (parallel mode's merge).
    pub fn absorb(&mut self, other: &Events) {
        self.0.absorb(&other.0);
        self.1 += other.1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event kind, with an index where it has one.
    fn all(i: u32) -> Vec<Ev> {
        vec![
            Ev::LinkEvent(i),
            Ev::Arrive(i),
            Ev::TxDone(i),
            Ev::PfcExpire(i),
            Ev::PfcRefresh(i),
            Ev::PfcCheck,
            Ev::SwitchTimer(i),
            Ev::SenderTimer(i),
            Ev::ReceiverTimer(i),
            Ev::NextFlow,
            Ev::Release(i),
            Ev::Sample,
            Ev::RateSample,
        ]
    }

    #[test]
    fn keys_follow_the_documented_kind_order() {
        for t in [0, 1, 12_345, u64::MAX] {
            let t = SimTime(t);
            let keys: Vec<u64> = all(7).into_iter().map(|e| e.key(t)).collect();
            assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:x?}");
            for i in [0, 1, 7, u32::MAX] {
                for j in [0, 1, 7, u32::MAX] {
                    assert!(Ev::Arrive(i).key(t) < Ev::PfcExpire(j).key(t));
                    assert!(Ev::Arrive(i).key(t) < Ev::TxDone(j).key(t));
                }
            }
        }
    }

    #[test]
    fn no_index_always_goes_first_within_a_kind() {
        // Over many instants, port 3 precedes port 4 about half the time.
        let first = (0..1000u64)
            .filter(|&t| {
                Ev::Arrive(3).key(SimTime(t * 1_214_400))
                    < Ev::Arrive(4).key(SimTime(t * 1_214_400))
            })
            .count();
        assert!((350..650).contains(&first), "{first}");
    }

    proptest::proptest! {
        /// At one time, the scramble is one-to-one: distinct indices, distinct keys.
        #[test]
        fn scramble_is_one_to_one_at_each_time(t: u64, a: u32, b: u32) {
            proptest::prop_assume!(a != b);
            proptest::prop_assert_ne!(scramble(a, SimTime(t)), scramble(b, SimTime(t)));
        }
    }

    #[test]
    fn distinct_events_have_distinct_keys() {
        let mut seen = std::collections::HashMap::new();
        for i in [0, 1, 2, 1000, u32::MAX] {
            for ev in all(i) {
                if let Some(other) = seen.insert(ev.key(SimTime(77)), ev) {
                    assert_eq!(format!("{other:?}"), format!("{ev:?}"));
                }
            }
        }
    }

    #[test]
    fn simultaneous_events_pop_by_key_whatever_the_push_order() {
        let evs = [Ev::NextFlow, Ev::TxDone(9), Ev::Arrive(2), Ev::LinkEvent(4)];
        let mut a = Events::new();
        let mut b = Events::new();
        for &e in &evs {
            a.schedule(SimTime(10), e);
        }
        for &e in evs.iter().rev() {
            b.schedule(SimTime(10), e);
        }
        let pa: Vec<String> = std::iter::from_fn(|| a.next())
            .map(|e| format!("{e:?}"))
            .collect();
        let pb: Vec<String> = std::iter::from_fn(|| b.next())
            .map(|e| format!("{e:?}"))
            .collect();
        assert_eq!(pa, pb);
        assert_eq!(
            pa[0],
            format!("{:?}", (SimTime(10), Ev::LinkEvent(4))),
            "{pa:?}"
        );
    }
}
