//! The event queue: a timing wheel on integer picoseconds in front of a
//! 4-ary heap, ordered by (time, tiebreak).
//!
//! Every entry has a 64-bit tiebreak: given at push and stored with it
//! ([`EventQueue::schedule_key`]; [`EventQueue::schedule`] gives the
//! insertion sequence, so that two events at the same time pop in the order
//! they were pushed), or, in an `EventQueue<E, ByEvent>`, a function of the
//! event and its time ([`TieKey`], [`EventQueue::schedule_by_event`]),
//! computed only when two entries of a slot have equal times (the simulator's
//! keyed order, whose key costs a scramble of the event's index: computed at
//! every push, it was about 3% of the demo's instructions). Either way a run is a pure function of its inputs. The
//! queue does not assume that tiebreaks grow with insertion: an entry pushed
//! at the current time with a smaller tiebreak than one already waiting at
//! that time pops first. Entries with equal time and equal tiebreak pop in an
//! order that depends only on the calls made (deterministic, not specified).
//!
//! Components keep only their *next* event here (htsim's idea): a link's
//! packets wait in the link's own FIFO, so the queue grows with busy
//! components, not with packets in flight.
//!
//! # Structure
//!
//! Time is cut into slots of `2^shift` ps (8.2 ns at first). The wheel holds
//! the entries of the `WHEEL` slots from the current one on (33.6 us at
//! 8.2 ns: a packet's serialization and propagation on the links pisanet
//! models); each slot is a list of entries, and a bitmap marks the slots
//! that hold any. Entries further ahead (retransmission timers, the next
//! flow's arrival) wait in a 4-ary heap and move into the wheel when the
//! current slot comes within `WHEEL` slots of theirs. A push into the wheel
//! is O(1); a pop takes the least (time, tiebreak) of the current slot's
//! list after a bitmap scan to the next occupied slot. This is a calendar
//! queue (Brown, "Calendar queues", CACM 31(10), 1988) with an overflow heap
//! and, as Brown's, a bucket width that follows the spacing of the events
//! popped: every 2^14 pops the width is set to the power of two at or below
//! that spacing (down to 64 ps, up to 8.2 ns), so that a slot holds about
//! one entry at the front of the queue and a pop's scan does not grow with
//! the event rate (a k=16 fat tree pops an event every 2 ns; with 8.2 ns
//! slots a pop scanned 6 entries on average). The 4-ary heap it replaced
//! for every event ([`heap::HeapQueue`], kept as the reference of the
//! property tests) cost about 190 instructions per event on the k=8 bench
//! (docs/performance.md, "Session 8" and "Session 9").

use crate::SimTime;
use dary_heap::QuaternaryHeap;
use std::cmp::Ordering;

/// A slot is `2^shift` ps wide: `shift` starts at `SLOT_BITS` (8.2 ns), its
/// largest, and narrows down to `MIN_SHIFT` (64 ps) while events crowd
/// (`EventQueue::resize`).
const SLOT_BITS: u32 = 13;
const MIN_SHIFT: u32 = 6;
/// Pops between two looks at the slot width (a power of two).
const RESIZE_EVERY: u64 = 1 << 14;
/// Slots in the wheel (a power of two).
const WHEEL: u64 = 1 << 12;
const NIL: u32 = u32::MAX;
/// Words of the occupied-slot bitmap.
const WORDS: usize = (WHEEL / 64) as usize;

/// An entry of the wheel: a node of its slot's singly linked list.
struct Node<E, T> {
    time: u64,
    next: u32,
    /// The tiebreak, or what computes it ([`Tiebreak`]).
    tie: T,
    /// `None` while the node is on the free list.
    event: Option<E>,
}

/// How a queue has an entry's tiebreak: `u64`, stored with the entry, or
/// [`ByEvent`], computed from the event.
pub trait Tiebreak<E>: Copy {
    /// The tiebreak of `event` at `time`.
    fn get(self, event: &E, time: u64) -> u64;
    /// What an entry stores for the tiebreak `key` (an entry moving from
    /// the heap into the wheel).
    fn from_key(key: u64) -> Self;
}

impl<E> Tiebreak<E> for u64 {
    #[inline(always)]
    fn get(self, _: &E, _: u64) -> u64 {
        self
    }
    #[inline(always)]
    fn from_key(key: u64) -> Self {
        key
    }
}

/// An event whose tiebreak is a function of itself and its time.
pub trait TieKey {
    /// The tiebreak at `time`: of two events at one time, the one with the
    /// smaller key pops first.
    fn tie_key(&self, time: SimTime) -> u64;
}

/// The tiebreak of an `EventQueue<E, ByEvent>`: [`TieKey::tie_key`] of the
/// entry's event, computed only to order two entries with equal times (a
/// wheel entry stores nothing for it; an entry beyond the wheel, in the
/// heap, stores it).
#[derive(Clone, Copy, Debug, Default)]
pub struct ByEvent;

impl<E: TieKey> Tiebreak<E> for ByEvent {
    #[inline(always)]
    fn get(self, event: &E, time: u64) -> u64 {
        event.tie_key(SimTime(time))
    }
    #[inline(always)]
    fn from_key(_: u64) -> Self {
        ByEvent
    }
}

/// An entry of the overflow heap.
struct Far<E> {
    key: u128,
    event: E,
}

impl<E> Far<E> {
    fn time(&self) -> u64 {
        (self.key >> 64) as u64
    }
}

impl<E> PartialEq for Far<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Far<E> {}
impl<E> PartialOrd for Far<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Far<E> {
    // Reversed: the heap is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// A priority queue of events of type `E`, popped in (time, tiebreak) order;
/// `T` says how an entry's tiebreak is had ([`Tiebreak`]).
pub struct EventQueue<E, T = u64> {
    /// The current slot: every pending entry is in it or later.
    cur: u64,
    /// Slots are `2^shift` ps wide (`resize`).
    shift: u32,
    /// The clock when the pop count was last a multiple of `RESIZE_EVERY`.
    mark: u64,
    /// Head node of each wheel slot's list (`slot % WHEEL`), or `NIL`.
    heads: Box<[u32; WHEEL as usize]>,
    /// Bit `i` set iff `heads[i]` is not `NIL`.
    occupied: [u64; WORDS],
    /// The wheel's nodes; free ones are linked from `free`.
    nodes: Vec<Node<E, T>>,
    free: u32,
    /// Entries in the wheel (all in slots `cur .. cur + WHEEL`).
    in_wheel: usize,
    /// Entries in slots `cur + WHEEL` and later.
    far: QuaternaryHeap<Far<E>>,
    /// The time of the heap's first entry (`u64::MAX` if it is empty: then
    /// a slot advance near the end of time looks into the heap for
    /// nothing), so that a slot advance need not read the heap.
    far_first: u64,
    next_seq: u64,
    now: SimTime,
    popped: u64,
}

impl<E, T: Tiebreak<E>> Default for EventQueue<E, T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E, u64> {
    /// Schedules `event` at `time`, after every event already scheduled at
    /// that time (its tiebreak is the insertion sequence). O(1) within the
    /// wheel's 33.6 us, O(log n) beyond.
    ///
    /// Panics in debug builds if `time` is in the past: causality is an
    /// invariant of the model, not a user error.
    #[inline(always)]
    pub fn schedule(&mut self, time: SimTime, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.schedule_key(time, seq, event);
    }

    /// Schedules `event` at `time` with the given tiebreak: of two events at
    /// the same time, the one with the smaller tiebreak pops first.
    ///
    /// Panics if `time` is before the slot of the last event popped (debug
    /// builds: before the clock): causality is an invariant of the model, not
    /// a user error.
    #[inline(always)]
    pub fn schedule_key(&mut self, time: SimTime, tiebreak: u64, event: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        let t = time.ps();
        let slot = t >> self.shift;
        // A slot before `cur` wraps to a large difference and goes to
        // `push_far`, which refuses it.
        if slot.wrapping_sub(self.cur) < WHEEL {
            self.push_wheel(slot, t, tiebreak, event);
        } else {
            self.push_far(t, tiebreak, event);
        }
    }

    /// Schedules `event` after `delay` from now.
    pub fn schedule_in(&mut self, delay: SimTime, event: E) {
        self.schedule(self.now + delay, event);
    }
}

impl<E: TieKey> EventQueue<E, ByEvent> {
    /// Schedules `event` at `time`: of two events at the same time, the one
    /// with the smaller [`TieKey::tie_key`] pops first (computed here only
    /// if the event goes beyond the wheel, into the heap).
    ///
    /// Panics as [`EventQueue::schedule_key`] does.
    #[inline(always)]
    pub fn schedule_by_event(&mut self, time: SimTime, event: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        let t = time.ps();
        let slot = t >> self.shift;
        if slot.wrapping_sub(self.cur) < WHEEL {
            self.push_wheel(slot, t, ByEvent, event);
        } else {
            let key = event.tie_key(time);
            self.push_far(t, key, event);
        }
    }
}

impl<E, T: Tiebreak<E>> EventQueue<E, T> {
    pub fn new() -> Self {
        EventQueue {
            cur: 0,
            shift: SLOT_BITS,
            mark: 0,
            heads: Box::new([NIL; WHEEL as usize]),
            occupied: [0; WORDS],
            nodes: Vec::with_capacity(1024),
            free: NIL,
            in_wheel: 0,
            far: QuaternaryHeap::with_capacity(256),
            far_first: u64::MAX,
            next_seq: 0,
            now: SimTime::ZERO,
            popped: 0,
        }
    }

    /// The time of the last event popped (the simulation clock).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Into the heap: beyond the wheel (timers, the next flow).
    #[inline(never)]
    fn push_far(&mut self, time: u64, tiebreak: u64, event: E) {
        assert!(
            time >> self.shift >= self.cur,
            "event scheduled before the last one popped"
        );
        self.far.push(Far {
            key: (u128::from(time) << 64) | u128::from(tiebreak),
            event,
        });
        self.far_first = self.far_first.min(time);
    }

    #[inline(always)]
    fn push_wheel(&mut self, slot: u64, time: u64, tie: T, event: E) {
        let i = (slot & (WHEEL - 1)) as usize;
        let next = self.heads[i];
        let node = Node {
            time,
            tie,
            next,
            event: Some(event),
        };
        let n = if self.free != NIL {
            let n = self.free;
            let f = &mut self.nodes[n as usize];
            self.free = f.next;
            *f = node;
            n
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        };
        self.heads[i] = n;
        self.occupied[i >> 6] |= 1 << (i & 63);
        self.in_wheel += 1;
    }

    /// The first occupied slot at or after `cur` (the wheel is not empty).
    #[inline]
    fn first_slot(&self) -> u64 {
        let start = (self.cur & (WHEEL - 1)) as usize;
        let words = WORDS;
        let (w0, b0) = (start >> 6, start & 63);
        let m = self.occupied[w0] & (!0u64 << b0);
        if m != 0 {
            return self.cur + ((w0 << 6) + m.trailing_zeros() as usize - start) as u64;
        }
        for k in 1..=words {
            let w = (w0 + k) % words;
            let mut m = self.occupied[w];
            if k == words {
                // Back at the first word: only the bits before `start`.
                m &= !(!0u64 << b0);
            }
            if m != 0 {
                let i = (w << 6) + m.trailing_zeros() as usize;
                let ahead = (i + WHEEL as usize - start) % WHEEL as usize;
                return self.cur + ahead as u64;
            }
        }
        unreachable!("the wheel holds entries but no slot is marked")
    }

    /// Makes `slot` current and moves the heap's entries that now fall
    /// within the wheel into it.
    #[inline(always)]
    fn advance(&mut self, slot: u64) {
        self.cur = slot;
        if (self.far_first >> self.shift).wrapping_sub(slot) < WHEEL {
            self.migrate();
        }
    }

    /// Moves the heap's entries within `WHEEL` slots of `cur` into the wheel.
    #[inline(never)]
    fn migrate(&mut self) {
        while let Some(f) = self.far.peek() {
            let s = f.time() >> self.shift;
            if s - self.cur >= WHEEL {
                break;
            }
            let f = self.far.pop().expect("peeked");
            self.push_wheel(s, f.time(), T::from_key(f.key as u64), f.event);
        }
        self.far_first = self.far.peek().map_or(u64::MAX, |f| f.time());
    }

    /// The (time, tiebreak) least node of the current slot's list and its
    /// predecessor (`NIL` for the head). Tiebreaks are had only for nodes
    /// whose times are equal to the least time so far.
    #[inline(always)]
    fn least(&self, i: usize) -> (u32, u32) {
        let mut best = self.heads[i];
        let mut best_prev = NIL;
        let b = &self.nodes[best as usize];
        let mut time = b.time;
        // The tiebreak of `best`, once had.
        let mut tie: Option<u64> = None;
        let (mut prev, mut n) = (best, b.next);
        while n != NIL {
            let x = &self.nodes[n as usize];
            // `<=` on (time, tiebreak): of equal keys, the one pushed first
            // (nearest the tail).
            let take = if x.time < time {
                tie = None;
                true
            } else if x.time > time {
                false
            } else {
                let (take, k) = self.tie_order(tie, best, n);
                tie = Some(k);
                take
            };
            if take {
                time = x.time;
                best = n;
                best_prev = prev;
            }
            prev = n;
            n = x.next;
        }
        (best, best_prev)
    }

    /// Of nodes `best` (whose tiebreak is `tie`, if had) and `n`, with equal
    /// times: whether `n` goes first (its tiebreak is not larger), and the
    /// tiebreak of the one that does. Out of line: ties are rare, and the
    /// tiebreak of a [`ByEvent`] node costs a computation.
    #[inline(never)]
    fn tie_order(&self, tie: Option<u64>, best: u32, n: u32) -> (bool, u64) {
        let kb = match tie {
            Some(k) => k,
            None => self.tiebreak(best),
        };
        let kx = self.tiebreak(n);
        if kx <= kb {
            (true, kx)
        } else {
            (false, kb)
        }
    }

    /// The tiebreak of wheel node `n` (which holds an event).
    #[inline]
    fn tiebreak(&self, n: u32) -> u64 {
        let x = &self.nodes[n as usize];
        match &x.event {
            Some(e) => x.tie.get(e, x.time),
            None => unreachable!("a wheel node holds an event"),
        }
    }

    /// Removes and returns the earliest event, advancing the clock.
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Option<(SimTime, E)> {
        self.next_until(SimTime::MAX)
    }

    /// Removes and returns the earliest event if it is at or before `limit`
    /// (`peek_time` and `next` in one step), advancing the clock; `None`, and
    /// nothing changed, if there is none or it is later.
    #[inline(always)]
    pub fn next_until(&mut self, limit: SimTime) -> Option<(SimTime, E)> {
        self.pop_unless(|t| t > limit.ps())
    }

    /// Removes and returns the earliest event if it is strictly before `end`
    /// (so never if `end` is zero), advancing the clock; `None`, and nothing
    /// changed, if there is none or it is later.
    #[inline(always)]
    pub fn next_before(&mut self, end: SimTime) -> Option<(SimTime, E)> {
        self.pop_unless(|t| t >= end.ps())
    }

    /// Removes and returns the earliest event unless `late` says its time is
    /// past the bound.
    #[inline(always)]
    fn pop_unless(&mut self, late: impl Fn(u64) -> bool) -> Option<(SimTime, E)> {
        if self.in_wheel == 0 {
            let f = self.far.peek()?;
            if late(f.time()) {
                return None;
            }
            let s = f.time() >> self.shift;
            self.advance(s);
        }
        let s = self.first_slot();
        let i = (s & (WHEEL - 1)) as usize;
        let (n, prev) = self.least(i);
        let node = &mut self.nodes[n as usize];
        let (time, next) = (node.time, node.next);
        if late(time) {
            return None;
        }
        let event = node.event.take().expect("a wheel node holds an event");
        node.next = self.free;
        self.free = n;
        if prev == NIL {
            self.heads[i] = next;
            if next == NIL {
                self.occupied[i >> 6] &= !(1 << (i & 63));
            }
        } else {
            self.nodes[prev as usize].next = next;
        }
        self.in_wheel -= 1;
        if s != self.cur {
            // Later heap entries do not land in slot `s`: `n` and `prev`
            // stay valid.
            self.advance(s);
        }
        let t = SimTime(time);
        self.now = t;
        self.popped += 1;
        if self.popped & (RESIZE_EVERY - 1) == 0 {
            self.resize(time);
        }
        Some((t, event))
    }

    /// Every `RESIZE_EVERY` pops: sets the slot width to the mean spacing of
    /// the events popped since the last look, so that a slot holds about one
    /// event at the front of the queue whatever the event rate (Brown 1988,
    /// section 4: a calendar queue resizes its buckets to the spacing of the
    /// events it pops; here the width is a power of two, and the number of
    /// slots stays fixed). The new width is the power of two at or below the
    /// spacing, within 64 ps ..= 8.2 ns; a width from a quarter of the
    /// spacing to twice it is kept, so that a rate near a boundary does not
    /// rebuild at every look. Wider than 8.2 ns gained nothing (the demo's
    /// sparse events: a skipped empty slot costs only a bitmap scan, and a
    /// wider slot holds more entries to compare), and narrower than the
    /// spacing lost (the wheel's span shrinks with its slots, and packet
    /// events beyond it take the heap): docs/performance.md, "Session 9".
    /// The order of the pops does not depend on the width.
    #[inline(never)]
    fn resize(&mut self, time: u64) {
        let spacing = (time - self.mark) / RESIZE_EVERY;
        self.mark = time;
        let want = (63 - spacing.max(1).leading_zeros()).clamp(MIN_SHIFT, SLOT_BITS);
        if want + 1 < self.shift || want > self.shift + 1 {
            self.rebuild(want);
        }
    }

    /// Re-files every wheel entry by slots of `2^shift` ps: those beyond the
    /// wheel go to the heap, the heap's entries within it come in. Entries of
    /// one old slot keep their relative order in their new one (entries with
    /// equal times were in one slot), so equal keys that stay in the wheel
    /// pop as they would have (the heap's order of equal keys is
    /// unspecified, as it always was).
    #[cold]
    #[inline(never)]
    fn rebuild(&mut self, shift: u32) {
        let start = self.cur << self.shift;
        let mut all = Vec::with_capacity(self.in_wheel);
        for w in 0..WORDS {
            let mut m = self.occupied[w];
            while m != 0 {
                let i = (w << 6) + m.trailing_zeros() as usize;
                m &= m - 1;
                let first = all.len();
                let mut n = self.heads[i];
                while n != NIL {
                    all.push(n);
                    n = self.nodes[n as usize].next;
                }
                // Oldest (tail) first, so that re-pushing at the heads keeps
                // the list's order.
                all[first..].reverse();
                self.heads[i] = NIL;
            }
            self.occupied[w] = 0;
        }
        self.shift = shift;
        self.cur = start >> shift;
        for n in all {
            let node = &mut self.nodes[n as usize];
            let slot = node.time >> shift;
            if slot - self.cur < WHEEL {
                let i = (slot & (WHEEL - 1)) as usize;
                node.next = self.heads[i];
                self.heads[i] = n;
                self.occupied[i >> 6] |= 1 << (i & 63);
            } else {
                let event = node.event.take().expect("a wheel node holds an event");
                let tiebreak = node.tie.get(&event, node.time);
                let key = (u128::from(node.time) << 64) | u128::from(tiebreak);
                node.next = self.free;
                self.free = n;
                self.in_wheel -= 1;
                self.far.push(Far { key, event });
            }
        }
        self.far_first = self.far.peek().map_or(u64::MAX, |f| f.time());
        self.advance(self.cur);
    }

    /// The time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        if self.in_wheel == 0 {
            return self.far.peek().map(|f| SimTime(f.time()));
        }
        let s = self.first_slot();
        let i = (s & (WHEEL - 1)) as usize;
        let mut n = self.heads[i];
        let mut t = u64::MAX;
        while n != NIL {
            let x = &self.nodes[n as usize];
            t = t.min(x.time);
            n = x.next;
        }
        // Heap entries are all in later slots than the wheel's.
        Some(SimTime(t))
    }

    /// Number of pending events. O(1).
    pub fn len(&self) -> usize {
        self.in_wheel + self.far.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }

    /// Adds `other`'s processed events to this queue's count and moves the
    /// clock to the later of the two (parallel mode: the partitions' queues
    /// summed into one run's figures). Pending events are not moved.
    pub fn absorb(&mut self, other: &EventQueue<E, T>) {
        self.popped += other.popped;
        self.now = self.now.max(other.now);
    }
}

/// The 4-ary heap the timing wheel replaced (issue 18, session 8), with the
/// same interface: the reference the property tests compare the wheel
/// against, and the baseline of the criterion benchmark
/// (`event_queue/*_heap`). Not used by the simulator.
#[doc(hidden)]
pub mod heap {
    use crate::SimTime;
    use dary_heap::QuaternaryHeap;
    use std::cmp::Ordering;

    struct Entry<E> {
        key: u128,
        event: E,
    }

    impl<E> PartialEq for Entry<E> {
        fn eq(&self, other: &Self) -> bool {
            self.key == other.key
        }
    }
    impl<E> Eq for Entry<E> {}
    impl<E> PartialOrd for Entry<E> {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            Some(self.cmp(other))
        }
    }
    impl<E> Ord for Entry<E> {
        // Reversed: the heap is a max-heap and we want the earliest first.
        fn cmp(&self, other: &Self) -> Ordering {
            other.key.cmp(&self.key)
        }
    }

    /// A 4-ary heap ordered by (time, tiebreak) as one 128-bit key.
    pub struct HeapQueue<E> {
        heap: QuaternaryHeap<Entry<E>>,
        next_seq: u64,
        now: SimTime,
    }

    impl<E> Default for HeapQueue<E> {
        fn default() -> Self {
            Self::new()
        }
    }

    impl<E> HeapQueue<E> {
        pub fn new() -> Self {
            HeapQueue {
                heap: QuaternaryHeap::with_capacity(1024),
                next_seq: 0,
                now: SimTime::ZERO,
            }
        }
        pub fn schedule(&mut self, time: SimTime, event: E) {
            let seq = self.next_seq;
            self.next_seq += 1;
            self.schedule_key(time, seq, event);
        }
        pub fn schedule_key(&mut self, time: SimTime, tiebreak: u64, event: E) {
            let key = (u128::from(time.ps()) << 64) | u128::from(tiebreak);
            self.heap.push(Entry { key, event });
        }
        #[allow(clippy::should_implement_trait)]
        pub fn next(&mut self) -> Option<(SimTime, E)> {
            let e = self.heap.pop()?;
            self.now = SimTime((e.key >> 64) as u64);
            Some((self.now, e.event))
        }
        pub fn peek_time(&self) -> Option<SimTime> {
            self.heap.peek().map(|e| SimTime((e.key >> 64) as u64))
        }
        pub fn len(&self) -> usize {
            self.heap.len()
        }
        pub fn is_empty(&self) -> bool {
            self.heap.is_empty()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::heap::HeapQueue;
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
    fn a_smaller_tiebreak_pushed_at_the_current_time_pops_first() {
        let mut q = EventQueue::new();
        q.schedule_key(SimTime(10), 7, 'a');
        q.schedule_key(SimTime(10), 9, 'b');
        q.schedule_key(SimTime(20), 1, 'z');
        assert_eq!(q.next(), Some((SimTime(10), 'a')));
        // At the clock's time, below 'b' (9) and above 'a' (7, popped).
        q.schedule_key(SimTime(10), 3, 'c');
        q.schedule_key(SimTime(10), 9, 'd');
        assert_eq!(q.peek_time(), Some(SimTime(10)));
        assert_eq!(q.next(), Some((SimTime(10), 'c')));
        // Equal tiebreaks: push order.
        assert_eq!(q.next(), Some((SimTime(10), 'b')));
        assert_eq!(q.next(), Some((SimTime(10), 'd')));
        assert_eq!(q.peek_time(), Some(SimTime(20)));
        assert_eq!(q.next(), Some((SimTime(20), 'z')));
        assert_eq!(q.next(), None);
        assert_eq!(q.peek_time(), None);
    }

    #[test]
    fn extreme_times() {
        let mut q = EventQueue::new();
        q.schedule(SimTime::MAX, 3);
        q.schedule(SimTime(1 << 63), 2);
        q.schedule(SimTime::ZERO, 0);
        q.schedule(SimTime(1), 1);
        let got: Vec<_> = std::iter::from_fn(|| q.next()).collect();
        assert_eq!(
            got,
            vec![
                (SimTime::ZERO, 0),
                (SimTime(1), 1),
                (SimTime(1 << 63), 2),
                (SimTime::MAX, 3)
            ]
        );
    }

    #[test]
    #[should_panic(expected = "before the last one popped")]
    fn an_event_before_the_last_pop_panics() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(1 << 20), ());
        q.next();
        // Bypasses the debug-build check against the clock.
        q.now = SimTime::ZERO;
        q.schedule(SimTime(5), ());
    }

    /// A test event whose tiebreak depends on its class and the time (as
    /// the simulator's `Ev::key`): few classes, so equal times give equal
    /// and unequal keys; the second field tells events apart in failures.
    #[derive(Clone, Copy, Debug)]
    struct Keyed(u32, #[allow(dead_code)] u32);

    impl TieKey for Keyed {
        fn tie_key(&self, time: SimTime) -> u64 {
            (u64::from(self.0) ^ (time.ps() % 3)) << 32
        }
    }

    /// The hold model of `resizing_keeps_the_heaps_order` with tiebreaks
    /// computed from the events: rebuilds send wheel entries to the heap
    /// (which then stores their tiebreak) and back.
    #[test]
    fn resizing_keeps_the_heaps_order_by_event() {
        let mut q: EventQueue<Keyed, ByEvent> = EventQueue::new();
        let mut heap = HeapQueue::new();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut shifts = std::collections::BTreeSet::new();
        for i in 0..2_000u32 {
            let t = SimTime(rand() % 1_000_000);
            let ev = Keyed((rand() % 4) as u32, i);
            q.schedule_by_event(t, ev);
            heap.schedule_key(t, ev.tie_key(t), ev);
        }
        let mut i = 2_000u32;
        for phase in 0..8u64 {
            let span = [4_000, 100_000_000, 1, 5_000_000_000][(phase % 4) as usize];
            for _ in 0..40_000 {
                let (t, a) = q.next().unwrap();
                let (u, b) = heap.next().unwrap();
                assert_eq!((t, a.tie_key(t)), (u, b.tie_key(u)));
                let d = t + SimTime(rand() % span);
                let ev = Keyed((rand() % 4) as u32, i);
                q.schedule_by_event(d, ev);
                heap.schedule_key(d, ev.tie_key(d), ev);
                i += 1;
                shifts.insert(q.shift);
            }
        }
        assert!(shifts.len() >= 3, "{shifts:?}");
        while let Some((t, a)) = q.next() {
            let (u, b) = heap.next().unwrap();
            assert_eq!((t, a.tie_key(t)), (u, b.tie_key(u)));
        }
        assert!(heap.is_empty());
    }

    /// A hold model long enough for several resizes: phases of dense events
    /// (many per 8 ns slot), sparse ones (one per microseconds) and ties,
    /// against the heap.
    #[test]
    fn resizing_keeps_the_heaps_order() {
        let mut q = EventQueue::new();
        let mut heap = HeapQueue::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut shifts = std::collections::BTreeSet::new();
        let mut keys = Vec::new();
        for i in 0..2_000usize {
            let t = SimTime(rand() % 1_000_000);
            let k = rand() % 4;
            keys.push(k);
            q.schedule_key(t, k, i);
            heap.schedule_key(t, k, i);
        }
        let mut i = 2_000usize;
        for phase in 0..8u64 {
            // Delays up to: 4 ns, 100 us, 0 (ties), 5 ms.
            let span = [4_000, 100_000_000, 1, 5_000_000_000][(phase % 4) as usize];
            for _ in 0..40_000 {
                let (t, a) = q.next().unwrap();
                let (u, b) = heap.next().unwrap();
                assert_eq!((t, keys[a]), (u, keys[b]));
                let d = SimTime(rand() % span);
                let k = rand() % 4;
                keys.push(k);
                q.schedule_key(t + d, k, i);
                heap.schedule_key(t + d, k, i);
                i += 1;
                shifts.insert(q.shift);
            }
        }
        assert!(shifts.len() >= 3, "{shifts:?}");
        while let Some((t, _)) = q.next() {
            assert_eq!(Some(t), heap.next().map(|(u, _)| u));
        }
        assert!(heap.is_empty());
    }

    /// Times spread over many bit lengths: near ties, packet-scale gaps,
    /// timer-scale gaps.
    fn times() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..50, 0u64..5_000_000, 0u64..(1 << 40)]
    }

    proptest! {
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

        /// With arbitrary, repeating tiebreaks given at push: pops sorted by
        /// (time, tiebreak), whatever the push order, every event once.
        #[test]
        fn pops_in_time_then_tiebreak_order(
            pushes in prop::collection::vec((times(), 0u64..8), 0..400),
        ) {
            let mut q = EventQueue::new();
            for (i, (t, k)) in pushes.iter().enumerate() {
                q.schedule_key(SimTime(*t), *k, i);
            }
            let mut expected: Vec<(u64, u64)> = pushes.clone();
            expected.sort();
            let popped: Vec<(SimTime, usize)> = std::iter::from_fn(|| q.next()).collect();
            let got: Vec<(u64, u64)> = popped.iter().map(|(t, i)| (t.0, pushes[*i].1)).collect();
            prop_assert_eq!(got, expected);
            for (t, i) in &popped {
                prop_assert_eq!(t.0, pushes[*i].0);
            }
            let mut ids: Vec<usize> = popped.iter().map(|(_, i)| *i).collect();
            ids.sort();
            prop_assert_eq!(ids, (0..pushes.len()).collect::<Vec<_>>());
        }

        /// Pushes and pops interleaved as a simulation makes them (every push
        /// at or after the clock, tiebreaks arbitrary and repeating, some
        /// at the current time below what waits there): the radix queue pops
        /// the same (time, tiebreak) sequence as the 4-ary heap, and peeks
        /// the same times.
        #[test]
        fn same_order_as_the_heap(
            ops in prop::collection::vec((times(), 0u64..6, 0u8..3), 1..600),
        ) {
            let mut radix = EventQueue::new();
            let mut heap = HeapQueue::new();
            let mut key = std::collections::HashMap::new();
            for (i, (delay, k, pops)) in ops.iter().enumerate() {
                let t = radix.now() + SimTime(*delay);
                radix.schedule_key(t, *k, i);
                heap.schedule_key(t, *k, i);
                key.insert(i, (t, *k));
                for _ in 0..*pops {
                    prop_assert_eq!(radix.peek_time(), heap.peek_time());
                    let a = radix.next().map(|(t, i)| (t, key[&i].1));
                    let b = heap.next().map(|(t, i)| (t, key[&i].1));
                    prop_assert_eq!(a, b);
                }
                prop_assert_eq!(radix.len(), heap.len());
            }
            while let Some((t, i)) = radix.next() {
                let (u, j) = heap.next().unwrap();
                prop_assert_eq!((t, key[&i].1), (u, key[&j].1));
            }
            prop_assert!(heap.is_empty());
        }

        /// An `EventQueue<E, ByEvent>` (tiebreaks computed from the events,
        /// only for equal times) pops the same (time, tiebreak) sequence as
        /// the heap given every tiebreak at push, with pushes and pops
        /// interleaved as in a simulation, many ties, and events beyond the
        /// wheel (whose tiebreak the heap stores).
        #[test]
        fn tiebreaks_by_event_pop_as_the_heap(
            ops in prop::collection::vec((times(), 0u32..6, 0u8..3), 1..600),
        ) {
            let mut lazy: EventQueue<Keyed, ByEvent> = EventQueue::new();
            let mut heap = HeapQueue::new();
            for (i, (delay, k, pops)) in ops.iter().enumerate() {
                let t = lazy.now() + SimTime(*delay);
                let ev = Keyed(*k, i as u32);
                lazy.schedule_by_event(t, ev);
                heap.schedule_key(t, ev.tie_key(t), ev);
                for _ in 0..*pops {
                    prop_assert_eq!(lazy.peek_time(), heap.peek_time());
                    let a = lazy.next().map(|(t, e)| (t, e.tie_key(t)));
                    let b = heap.next().map(|(t, e)| (t, e.tie_key(t)));
                    prop_assert_eq!(a, b);
                }
                prop_assert_eq!(lazy.len(), heap.len());
            }
            while let Some((t, e)) = lazy.next() {
                let (u, f) = heap.next().unwrap();
                prop_assert_eq!((t, e.tie_key(t)), (u, f.tie_key(u)));
            }
            prop_assert!(heap.is_empty());
        }

        /// `next_before(end)` pops exactly what `next_until(end - 1)` pops
        /// (nothing for `end` zero), leaving the queue as it found it when
        /// it pops nothing.
        #[test]
        fn next_before_is_next_until_the_picosecond_before(
            ops in prop::collection::vec((times(), 0u64..4, times()), 1..300),
        ) {
            let mut a = EventQueue::new();
            let mut b = EventQueue::new();
            for (i, (delay, k, bound)) in ops.iter().enumerate() {
                let t = a.now() + SimTime(*delay);
                a.schedule_key(t, *k, i);
                b.schedule_key(t, *k, i);
                let end = a.now() + SimTime(*bound % 3_000_000);
                let x = a.next_before(end);
                let y = end.ps().checked_sub(1).and_then(|l| b.next_until(SimTime(l)));
                prop_assert_eq!(x, y);
                prop_assert_eq!(a.len(), b.len());
            }
            prop_assert_eq!(a.next_before(SimTime::ZERO), None);
            while let Some(x) = a.next() {
                prop_assert_eq!(Some(x), b.next());
            }
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
