//! The event queue: a binary heap ordered by (time, tie key).
//!
//! Two events at the same time pop in the order of their keys: with
//! [`EventQueue::schedule`] the key is the insertion sequence (they pop in
//! the order they were pushed); with [`EventQueue::schedule_keyed`] the
//! caller gives it (pisanet's `World` derives it from the event itself, so
//! the order does not depend on when an event was pushed). Either way a run
//! is a pure function of its inputs. Do not mix the two in one queue. Components keep only their *next* event
//! here (htsim's idea): a link's packets wait in the link's own FIFO, so the
//! heap grows with busy components, not with packets in flight.

use crate::SimTime;
use std::cmp::Ordering;
// NOTE: a 4-ary heap: half the depth of a binary heap and each node's
// children in one cache line, so a pop touches fewer lines.
use dary_heap::QuaternaryHeap as BinaryHeap;

struct Entry<E> {
    time: SimTime,
    /// Tie key: the insertion sequence, or the caller's key.
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    /// (time, seq) as one 128-bit number: the heap compares it with one
    /// wide comparison (no branch between the two halves); same order.
    #[inline(always)]
    fn key(&self) -> u128 {
        (u128::from(self.time.ps()) << 64) | u128::from(self.seq)
    }
}

impl<E> PartialEq for Entry<E> {
    #[inline(always)]
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    #[inline(always)]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
    // Reversed: the heap is a max-heap and we want the earliest first.
    #[inline(always)]
    fn le(&self, other: &Self) -> bool {
        other.key() <= self.key()
    }
    #[inline(always)]
    fn lt(&self, other: &Self) -> bool {
        other.key() < self.key()
    }
    #[inline(always)]
    fn ge(&self, other: &Self) -> bool {
        other.key() >= self.key()
    }
    #[inline(always)]
    fn gt(&self, other: &Self) -> bool {
        other.key() > self.key()
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: the heap is a max-heap and we want the earliest first.
    #[inline(always)]
    fn cmp(&self, other: &Self) -> Ordering {
        other.key().cmp(&self.key())
    }
}

/// A priority queue of events of type `E`.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    now: SimTime,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            next_seq: 0,
            now: SimTime::ZERO,
            popped: 0,
        }
    }

    /// The time of the last event popped (the simulation clock).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `event` at `time`. O(log n).
    ///
    /// Panics in debug builds if `time` is in the past: causality is an
    /// invariant of the model, not a user error.
    pub fn schedule(&mut self, time: SimTime, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.schedule_keyed(time, seq, event);
    }

    /// Schedules `event` at `time` with tie key `key`: events at the same
    /// time pop in increasing key order, whatever order they were pushed
    /// in. Events with equal time and key pop in an order that depends on
    /// the pushes (the caller gives equal keys only to identical events).
    /// O(log n).
    pub fn schedule_keyed(&mut self, time: SimTime, key: u64, event: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        self.heap.push(Entry {
            time,
            seq: key,
            event,
        });
    }

    /// Schedules `event` after `delay` from now. O(log n).
    pub fn schedule_in(&mut self, delay: SimTime, event: E) {
        self.schedule(self.now + delay, event);
    }

    /// Removes and returns the earliest event, advancing the clock. O(log n).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<(SimTime, E)> {
        let e = self.heap.pop()?;
        self.now = e.time;
        self.popped += 1;
        Some((e.time, e.event))
    }

    /// The time of the earliest pending event. O(1).
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }

    /// Number of pending events. O(1).
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Number of events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }

    /// Adds `other`'s processed events to this queue's count and moves the
    /// clock to the later of the two (parallel mode: the partitions' queues
    /// summed into one run's figures). Pending events are not moved.
    pub fn absorb(&mut self, other: &EventQueue<E>) {
        self.popped += other.popped;
        self.now = self.now.max(other.now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ties_pop_in_insertion_order() {
        let mut q = EventQueue::new();
        for i in 0..100 {
            q.schedule(SimTime(5), i);
        }
        q.schedule(SimTime(1), 1000);
        assert_eq!(q.next(), Some((SimTime(1), 1000)));
        for i in 0..100 {
            assert_eq!(q.next(), Some((SimTime(5), i)));
        }
        assert!(q.next().is_none());
    }

    #[test]
    fn keyed_ties_pop_in_key_order_whatever_the_push_order() {
        let mut q = EventQueue::new();
        for k in [7u64, 3, 9, 1, 5] {
            q.schedule_keyed(SimTime(5), k, k);
        }
        q.schedule_keyed(SimTime(4), 100, 100);
        let got: Vec<u64> = std::iter::from_fn(|| q.next()).map(|(_, e)| e).collect();
        assert_eq!(got, vec![100, 1, 3, 5, 7, 9]);
    }

    proptest! {
        /// Keyed events pop sorted by (time, key), whatever the push order.
        #[test]
        fn keyed_pops_in_time_then_key_order(evs in prop::collection::vec((0u64..20, 0u64..20), 0..300)) {
            let mut q = EventQueue::new();
            for &(t, k) in &evs {
                q.schedule_keyed(SimTime(t), k, (t, k));
            }
            let mut expected = evs.clone();
            expected.sort();
            let got: Vec<(u64, u64)> = std::iter::from_fn(|| q.next()).map(|(_, e)| e).collect();
            prop_assert_eq!(got, expected);
        }

        /// Events pop sorted by (time, insertion sequence), whatever the push order.
        #[test]
        fn pops_in_time_then_sequence_order(times in prop::collection::vec(0u64..50, 0..400)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.schedule(SimTime(*t), i);
            }
            let mut expected: Vec<(u64, usize)> = times.iter().copied().zip(0..).collect();
            expected.sort();
            let got: Vec<(u64, usize)> = std::iter::from_fn(|| q.next()).map(|(t, i)| (t.0, i)).collect();
            prop_assert_eq!(got, expected);
        }

        /// Interleaved scheduling never lets the clock run backwards.
        #[test]
        fn clock_is_monotone(ops in prop::collection::vec((0u64..1000, any::<bool>()), 1..300)) {
            let mut q = EventQueue::new();
            let mut last = SimTime::ZERO;
            for (delay, pop) in ops {
                q.schedule_in(SimTime(delay), ());
                if pop {
                    let (t, ()) = q.next().unwrap();
                    prop_assert!(t >= last);
                    last = t;
                }
            }
            while let Some((t, ())) = q.next() {
                prop_assert!(t >= last);
                last = t;
            }
        }
    }
}
