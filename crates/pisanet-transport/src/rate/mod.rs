// crates/pisanet-transport/src/rate/mod.rs
use pisanet_engine::{BitRate, SimTime};
use pisanet_net::packet::Packet;
/// A rate-based sender's reaction point: sets the sending rate from feedback.
pub trait ReactionPoint {
    /// The rate the sender may send at now.
    fn rate(&self) -> BitRate;
    /// A packet for this flow reached its sender (feedback: QCN's, a CNP, ...).
    fn on_feedback(&mut self, now: SimTime, pkt: &Packet);
    /// The sender put `bytes` on the wire.
    fn on_bytes_sent(&mut self, now: SimTime, bytes: u32);
    /// When the reaction point next wants `on_timer`, if ever.
    fn timer_deadline(&self) -> Option<SimTime>;
    fn on_timer(&mut self, now: SimTime);
}

// NOTE (p4qcn branch): the trait above is the `hosts` branch's, copied
// verbatim so that the reaction points below compile; the lead keeps one
// copy at merge.

/// P4QCN's reaction point (P4QCN section 3.1.2): QCN's three-state machine.
pub mod qcn;

/// DCQCN's reaction point and notification point (Zhu et al., SIGCOMM 2015).
pub mod dcqcn;

/// (a + b) / 2 of two rates in bits per second, rounded up (so that Rc
/// reaches Rt instead of stopping one bit per second short), without
/// overflow.
pub(crate) fn mean(a: u64, b: u64) -> u64 {
    (a >> 1) + (b >> 1) + ((a | b) & 1)
}
