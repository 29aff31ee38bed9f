//! The discrete-event core of pisanet.
//!
//! Owns: simulated time ([`SimTime`], integer picoseconds), link rates
//! ([`BitRate`]), the event queue ([`EventQueue`], a timing wheel in front of a
//! 4-ary heap, ordered by time and then by a tiebreak: the insertion sequence
//! or a key the caller gives, so no tie is ever broken by chance) and independent,
//! seeded random streams ([`RngStreams`]).
//!
//! Leaves to others: what an event means. The queue is generic over its
//! payload; the network crate decides what happens when an event fires.

mod queue;
mod rng;
mod time;
pub mod units;

#[doc(hidden)]
pub use queue::heap as heap_queue;
pub use queue::{ByEvent, EventQueue, TieKey, Tiebreak};
pub use rng::{splitmix64, RngStreams, SimRng, StreamKind};
pub use time::{BitRate, SimTime};
