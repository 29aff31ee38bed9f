//! Host transports of pisanet, as state machines with no event loop.
//!
//! Owns: what an end host puts on the wire for one flow and how it reacts to
//! what comes back.
//!
//! * [`tcp`]: a TCP sender and receiver over 64-bit byte sequence numbers,
//!   with NewReno (RFC 5681, RFC 6582), DCTCP (RFC 8257) or CUBIC
//!   (RFC 9438) congestion control, optional classic ECN (RFC 3168), SACK
//!   with RFC 6675 recovery, an application rate cap and close (iperf3
//!   `-b` and `-t`), and an RFC 6298 retransmission timer.
//! * [`udp`]: a constant-bit-rate UDP source and a counting sink.
//! * [`rate`]: rate-based hosts (RoCEv2-like, over UDP): a paced sender whose
//!   rate a pluggable [`rate::ReactionPoint`] sets from feedback, and a
//!   receiver with a [`rate::NotificationPoint`] hook; P4QCN's QCN reaction
//!   point ([`rate::qcn`]) and DCQCN's reaction and notification points
//!   ([`rate::dcqcn`]).
//!
//! The contract with the caller (the simulator's host model) is the same for
//! every endpoint:
//!
//! ```text
//!   caller                                endpoint
//!   ------                                --------
//!   on_start(now, &mut out)   ───────▶    first window into `out`
//!   on_packet(now, &pkt, &mut out) ──▶    reacts, pushes packets into `out`
//!   timer_deadline()          ◀───────    Option<SimTime>
//!   on_timer(now, &mut out)   ───────▶    (ignored if now < deadline)
//! ```
//!
//! A TCP sender also takes back-pressure from the host (Linux TCP Small
//! Queues): `set_send_budget(bytes)` before a call caps the wire bytes of new
//! data it may emit (default unlimited); `is_budget_blocked()` after it says
//! the budget, not a window, stopped it; `on_send_ready(now, &mut out)` is
//! the call to make once the flow's packets have left the NIC.
//!
//! Guarantees: every packet pushed into `out` is fully built (headers, wire
//! size, `flow`, `sent_at = now`) except its `uid`, which is 0: the host
//! assigns uids. An endpoint never schedules anything itself; after each
//! call the caller reads `timer_deadline()` and arranges a wake-up. Stale or
//! early `on_timer` calls are harmless, so the caller may keep a single
//! pending timer event per endpoint and ignore cancellations.
//!
//! Leaves to others: when packets leave the host (the NIC queue, and how
//! much of it a flow may fill: the sender only obeys the budget), routing,
//! and which flows exist (the workload).
//!
//! ```
//! use pisanet_engine::SimTime;
//! use pisanet_transport::tcp::{FlowEnds, TcpConfig, TcpReceiver, TcpSender};
//!
//! let cfg = TcpConfig::default();
//! let ends = FlowEnds { flow: 7, src_addr: 1, dst_addr: 2, sport: 1000, dport: 80, dscp: 0, prio: 0 };
//! let mut tx = TcpSender::new(&cfg, ends, 3000);
//! let mut rx = TcpReceiver::new(&cfg, ends.reversed(), 3000);
//! let (mut data, mut acks) = (Vec::new(), Vec::new());
//! tx.on_start(SimTime::ZERO, &mut data);
//! assert_eq!(data.len(), 3); // 1460 + 1460 + 80 bytes
//! for p in &data {
//!     rx.on_packet(SimTime::from_us(5), p, &mut acks);
//! }
//! assert!(rx.is_complete());
//! let mut more = Vec::new();
//! for a in &acks {
//!     tx.on_packet(SimTime::from_us(10), a, &mut more);
//! }
//! assert!(tx.is_complete());
//! assert_eq!(tx.completed_at(), Some(SimTime::from_us(10)));
//! ```

pub mod params;
pub mod rate;
pub mod tcp;
pub mod udp;

pub use rate::{
    NotificationPoint, Notifier, RateParams, RateReceiver, RateSender, Reaction, ReactionKind,
    ReactionPoint, REACTION_POINTS,
};
pub use tcp::{CcKind, FlowEnds, ReceiverStats, SenderStats, TcpConfig, TcpReceiver, TcpSender};
pub use udp::{UdpCbrSource, UdpSink};
