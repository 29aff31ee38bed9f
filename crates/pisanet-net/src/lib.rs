//! Packets, egress queues, links, topologies and the address plan.
//!
//! Owns: the typed headers every packet carries ([`packet`]), an egress port's
//! queues with drop-tail, ECN marking, strict priority and a shared buffer
//! ([`queue`]), the packets in flight, indexed by `u32` ([`arena`]), topology builders with a hierarchical address plan
//! ([`topology`]), and the user-facing parameters of all this, `[topology]`
//! ([`params`]).
//!
//! Leaves to others: what hosts send (transport), where switches forward
//! (schemes on the PISA model), and when things happen (the facade's event
//! loop drives ports and links through the methods here).

pub mod arena;
pub mod packet;
pub mod params;
pub mod queue;
pub mod routes;
pub mod topology;
pub mod wire;

pub use packet::*;
