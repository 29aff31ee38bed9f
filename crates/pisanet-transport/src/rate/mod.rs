//! Rate-based hosts (RoCEv2-like, over UDP): a paced sender whose rate a
//! pluggable reaction point sets from feedback, and a receiver with an
//! optional notification point that sends feedback.
//!
//! Owns: pacing ([`RateSender`]), the reaction point contract
//! ([`ReactionPoint`]) with its registry ([`Reaction`], [`ReactionKind`]),
//! and the receiver's feedback hook ([`NotificationPoint`], [`Notifier`]).
//!
//! ```text
//!   RateSender ──data (UDP)──▶ network ──▶ RateReceiver ── Notifier (e.g. CNP on CE)
//!       ▲  ▲                                     │
//!       │  └── feedback from switches (QCN) ─────┤
//!       └────── any packet of the flow reaching the sender: on_feedback
//! ```
//!
//! Guarantees:
//! - Pacing: after each datagram the next is due `size / rate` later, the
//!   rate being the reaction point's at that moment; when the rate changes
//!   (feedback, timer) the pending datagram is rescheduled to
//!   `last_due + last_size / new_rate` (never before now), so a rate cut
//!   takes effect at once and a rate rise does not wait out a long gap.
//!   Deadlines advance from the previous deadline, not from the wake-up, so
//!   a constant rate is held exactly however late the caller's wake-ups are.
//! - Every packet of the flow that reaches the sender goes to the reaction
//!   point's `on_feedback`, whatever sent it (a switch, the receiver).
//! - No retransmission by default: a lost datagram stays lost (the
//!   simulator counts it). With go-back-N ([`gbn`], `transport.go_back_n`)
//!   the sender numbers its datagrams, the receiver accepts them only in
//!   order and answers with ACKs and NAKs, the sender goes back to a NAK's
//!   PSN or, after its local ACK timeout, to the oldest unacknowledged one,
//!   and is complete only when every byte is acknowledged. ACKs and NAKs
//!   reach the go-back-N logic only, never the reaction point.
//!
//! Leaves to others: what feedback means (the reaction point), who sends it
//! (switch programs, the receiver's notification point), and when a flow is
//! over once everything is sent (the simulator's drain time).
//!
//! Adding a reaction point: one file implementing [`ReactionPoint`], one
//! variant in [`Reaction`] and [`ReactionKind`], one name in
//! [`REACTION_POINTS`]. A notification point: one file implementing
//! [`NotificationPoint`] and one variant in [`Notifier`];
//! [`ReactionKind::notifier`] says which reaction points get one at their
//! flow's receiver (DCQCN's, and QCN's fed by CNPs).

use crate::tcp::FlowEnds;
use pisanet_engine::{BitRate, SimTime};
use pisanet_net::packet::{Ecn, Packet, L4};

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

/// P4QCN's reaction point (P4QCN section 3.1.2): QCN's three-state machine.
pub mod qcn;

/// DCQCN's reaction point and notification point (Zhu et al., SIGCOMM 2015).
pub mod dcqcn;

/// Go-back-N (RoCEv2 reliable connection): PSNs, ACK / NAK, local ACK timeout.
pub mod gbn;

/// (a + b) / 2 of two rates in bits per second, rounded up (so that Rc
/// reaches Rt instead of stopping one bit per second short), without
/// overflow.
pub(crate) fn mean(a: u64, b: u64) -> u64 {
    (a >> 1) + (b >> 1) + ((a | b) & 1)
}

/// The names `cc` takes for a rate-based flow, in [`ReactionKind`] order.
pub const REACTION_POINTS: &[&str] = &["fixed", "halve", "qcn", "qcn_cnp", "dcqcn"];

/// The parameters of the reaction and notification points that have some
/// (`[transport.qcn]`, `[transport.dcqcn]`, `[transport.dcqcn_np]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RateParams {
    pub qcn: qcn::QcnParams,
    pub dcqcn: dcqcn::DcqcnParams,
    pub dcqcn_np: dcqcn::DcqcnNpParams,
    /// Go-back-N for every rate-based flow (`transport.go_back_n`); `None`:
    /// no retransmission.
    pub go_back_n: Option<gbn::GbnParams>,
}

/// Which reaction point a rate-based flow runs (chosen by name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReactionKind {
    /// No reaction: the flow sends at its configured rate throughout.
    #[default]
    Fixed,
    /// A test reaction point: halves the rate on every feedback packet.
    Halve,
    /// P4QCN's reaction point (QCN's three-state machine, P4QCN section
    /// 3.1.2), fed by the congestion points' feedback (ECN 11) or CNPs.
    Qcn,
    /// P4QCN's reaction point fed by CNPs from a notification point at the
    /// flow's receiver: the paper's own 3-point variant (section 4.2.4: the
    /// NP takes over generating feedback, the RP stays). Data is ECT(0).
    QcnCnp,
    /// DCQCN's reaction point (Zhu et al. 2015, section 3.1), with DCQCN's
    /// notification point at the flow's receiver. Data is ECT(0).
    Dcqcn,
}

impl ReactionKind {
    /// The kind named `name` (one of [`REACTION_POINTS`]).
    pub fn from_name(name: &str) -> Option<ReactionKind> {
        match name {
            "fixed" => Some(ReactionKind::Fixed),
            "halve" => Some(ReactionKind::Halve),
            "qcn" => Some(ReactionKind::Qcn),
            "qcn_cnp" => Some(ReactionKind::QcnCnp),
            "dcqcn" => Some(ReactionKind::Dcqcn),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ReactionKind::Fixed => "fixed",
            ReactionKind::Halve => "halve",
            ReactionKind::Qcn => "qcn",
            ReactionKind::QcnCnp => "qcn_cnp",
            ReactionKind::Dcqcn => "dcqcn",
        }
    }

    /// A reaction point of this kind starting at `rate`, with default
    /// parameters, on a link of that rate.
    pub fn build(self, rate: BitRate) -> Reaction {
        self.build_for(&RateParams::default(), rate, rate)
    }

    /// A reaction point of this kind for a flow whose application sends at
    /// `rate` from a host on a `line` link.
    pub fn build_for(self, p: &RateParams, line: BitRate, rate: BitRate) -> Reaction {
        match self {
            ReactionKind::Fixed => Reaction::Fixed(Fixed { rate }),
            ReactionKind::Halve => Reaction::Halve(Halve { rate }),
            ReactionKind::Qcn => Reaction::Qcn(qcn::QcnReactionPoint::new(&p.qcn, line, rate)),
            ReactionKind::QcnCnp => {
                Reaction::QcnCnp(qcn::QcnReactionPoint::new(&p.qcn, line, rate))
            }
            ReactionKind::Dcqcn => {
                Reaction::Dcqcn(dcqcn::DcqcnReactionPoint::new(&p.dcqcn, line, rate))
            }
        }
    }

    /// The notification point a flow with this reaction point gets at its
    /// receiver: DCQCN's NP (a CNP per CE-marked flow at most once per
    /// interval, DCQCN section 3.1) for `dcqcn` and `qcn_cnp`, none else.
    pub fn notifier(self, p: &RateParams) -> Notifier {
        match self {
            ReactionKind::Dcqcn | ReactionKind::QcnCnp => {
                Notifier::Dcqcn(dcqcn::DcqcnNotificationPoint::new(&p.dcqcn_np))
            }
            ReactionKind::Fixed | ReactionKind::Halve | ReactionKind::Qcn => Notifier::None,
        }
    }
}

/// Every reaction point, dispatched by `match` (STYLE.md: small trait, enum dispatch).
#[derive(Clone, Debug)]
pub enum Reaction {
    Fixed(Fixed),
    Halve(Halve),
    Qcn(qcn::QcnReactionPoint),
    /// QCN's RP, data sent ECT(0) for the receiver's notification point.
    QcnCnp(qcn::QcnReactionPoint),
    Dcqcn(dcqcn::DcqcnReactionPoint),
}

impl Reaction {
    /// Whether the sender marks its datagrams ECN-capable (ECT(0)), so that
    /// switches mark rather than drop them): those whose feedback comes
    /// from a notification point reading CE (DCQCN; QCN fed by CNPs). P4QCN's
    /// congestion point needs no ECT (section 3.1.1), so `qcn` sends Not-ECT.
    pub fn ecn_capable(&self) -> bool {
        match self {
            Reaction::QcnCnp(_) | Reaction::Dcqcn(_) => true,
            Reaction::Fixed(_) | Reaction::Halve(_) | Reaction::Qcn(_) => false,
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $rp:ident => $e:expr) => {
        match $self {
            Reaction::Fixed($rp) => $e,
            Reaction::Halve($rp) => $e,
            Reaction::Qcn($rp) => $e,
            Reaction::QcnCnp($rp) => $e,
            Reaction::Dcqcn($rp) => $e,
        }
    };
}

impl ReactionPoint for Reaction {
    fn rate(&self) -> BitRate {
        dispatch!(self, rp => rp.rate())
    }
    fn on_feedback(&mut self, now: SimTime, pkt: &Packet) {
        dispatch!(self, rp => rp.on_feedback(now, pkt))
    }
    fn on_bytes_sent(&mut self, now: SimTime, bytes: u32) {
        dispatch!(self, rp => rp.on_bytes_sent(now, bytes))
    }
    fn timer_deadline(&self) -> Option<SimTime> {
        dispatch!(self, rp => rp.timer_deadline())
    }
    fn on_timer(&mut self, now: SimTime) {
        dispatch!(self, rp => rp.on_timer(now))
    }
}

/// No reaction: a constant rate (what a plain UDP flow does).
#[derive(Clone, Debug)]
pub struct Fixed {
    rate: BitRate,
}

impl ReactionPoint for Fixed {
    fn rate(&self) -> BitRate {
        self.rate
    }
    fn on_feedback(&mut self, _now: SimTime, _pkt: &Packet) {}
    fn on_bytes_sent(&mut self, _now: SimTime, _bytes: u32) {}
    fn timer_deadline(&self) -> Option<SimTime> {
        None
    }
    fn on_timer(&mut self, _now: SimTime) {}
}

/// A test reaction point: every feedback packet halves the rate (down to
/// 1 b/s, so the sender never stops for good). Nothing raises it again.
#[derive(Clone, Debug)]
pub struct Halve {
    rate: BitRate,
}

impl ReactionPoint for Halve {
    fn rate(&self) -> BitRate {
        self.rate
    }
    fn on_feedback(&mut self, _now: SimTime, _pkt: &Packet) {
        self.rate = BitRate((self.rate.bps() / 2).max(1));
    }
    fn on_bytes_sent(&mut self, _now: SimTime, _bytes: u32) {}
    fn timer_deadline(&self) -> Option<SimTime> {
        None
    }
    fn on_timer(&mut self, _now: SimTime) {}
}

/// A paced UDP sender of one flow whose rate its reaction point sets.
#[derive(Clone, Debug)]
pub struct RateSender {
    ends: FlowEnds,
    rp: Reaction,
    payload: u32,
    /// Payload bytes to send; `u64::MAX` when only `stop_at` ends the flow.
    total: u64,
    /// No datagram is sent at or after this time (a duration-limited flow).
    stop_at: Option<SimTime>,
    sent_bytes: u64,
    sent_packets: u64,
    /// When the next datagram is due; `None` once the sender is done.
    next_at: Option<SimTime>,
    /// Deadline and wire size of the latest datagram (for rescheduling).
    last: Option<(SimTime, u32)>,
    first_sent_at: Option<SimTime>,
    last_sent_at: Option<SimTime>,
    done: bool,
    /// Go-back-N state; `None`: no retransmission.
    gbn: Option<Box<gbn::GbnSender>>,
}

impl RateSender {
    /// A sender of `total_bytes` payload (`u64::MAX`: until `stop_at`) in
    /// datagrams of `payload_bytes` (the last may be shorter, a zero size is
    /// raised to 1), paced at the reaction point's rate (wire bytes, headers
    /// included).
    pub fn new(
        ends: FlowEnds,
        rp: Reaction,
        payload_bytes: u32,
        total_bytes: u64,
        stop_at: Option<SimTime>,
    ) -> Self {
        RateSender {
            ends,
            rp,
            payload: payload_bytes.max(1),
            total: total_bytes,
            stop_at,
            sent_bytes: 0,
            sent_packets: 0,
            next_at: None,
            last: None,
            first_sent_at: None,
            last_sent_at: None,
            done: false,
            gbn: None,
        }
    }

    /// The same sender with go-back-N (module [`gbn`]): numbered
    /// datagrams, retransmission from a NAK's PSN or after `p.timeout`
    /// without progress; complete when every byte is acknowledged.
    pub fn with_go_back_n(mut self, p: &gbn::GbnParams) -> Self {
        self.gbn = Some(Box::new(gbn::GbnSender::new(p)));
        self
    }

    /// Whether the sender runs go-back-N.
    pub fn go_back_n(&self) -> bool {
        self.gbn.is_some()
    }

    /// Data packets sent again (go-back-N); 0 without go-back-N.
    pub fn retransmissions(&self) -> u64 {
        self.gbn.as_ref().map_or(0, |g| g.retx_packets)
    }

    /// Local ACK timeouts that made the sender go back (go-back-N).
    pub fn timeouts(&self) -> u64 {
        self.gbn.as_ref().map_or(0, |g| g.timeouts)
    }

    /// NAKs that made the sender go back (go-back-N).
    pub fn naks(&self) -> u64 {
        self.gbn.as_ref().map_or(0, |g| g.naks)
    }

    /// Payload bytes acknowledged (go-back-N; without it, none are).
    pub fn acked_bytes(&self) -> u64 {
        self.gbn
            .as_ref()
            .map_or(0, |g| (g.una * u64::from(self.payload)).min(self.total))
    }

    /// Sends the first datagram now (nothing if the rate is zero, the flow
    /// is empty or already over). Calling it twice does nothing new.
    pub fn on_start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.first_sent_at.is_some() || self.done {
            return;
        }
        if self.total == 0 || self.rp.rate().bps() == 0 || self.stop_at.is_some_and(|s| now >= s) {
            self.done = true;
            return;
        }
        self.first_sent_at = Some(now);
        if self.gbn.is_some() {
            self.send_gbn(now, now, out);
        } else {
            self.send(now, now, out);
        }
    }

    /// A packet of this flow reached the sender: a go-back-N ACK or NAK
    /// (which may rewind the sender; the packets leave from `on_timer`), or
    /// else feedback for the reaction point. The sender sends nothing in
    /// response.
    pub fn on_packet(&mut self, now: SimTime, pkt: &Packet) {
        if self.gbn.is_some() {
            if let Some((psn, nak)) = gbn::parse_ack(pkt) {
                self.on_ack(now, psn, nak);
                return;
            }
        }
        let before = self.rp.rate();
        self.rp.on_feedback(now, pkt);
        self.reschedule(now, before);
    }

    /// Runs the reaction point's timer and sends the datagram that is due.
    /// Early or stale calls do nothing.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.rp.timer_deadline().is_some_and(|d| now >= d) {
            let before = self.rp.rate();
            self.rp.on_timer(now);
            self.reschedule(now, before);
        }
        if let Some(g) = self.gbn.as_deref_mut() {
            if g.rto_at.is_some_and(|t| now >= t) && !self.done {
                // The local ACK timeout (IBTA vol. 1, 9.7, the requester's
                // transport timer): go back to the oldest unacknowledged packet.
                if g.una < g.high {
                    g.next = g.una;
                    g.timeouts += 1;
                    g.rto_at = Some(now + g.timeout);
                    self.resume(now);
                } else {
                    g.rto_at = None;
                }
            }
        }
        if let Some(due) = self.next_at {
            if now >= due {
                let retransmit = self.gbn.as_deref().is_some_and(|g| g.next < g.high);
                if self.stop_at.is_some_and(|s| due >= s) && !retransmit {
                    self.finish();
                } else if self.gbn.is_some() {
                    self.send_gbn(now, due, out);
                } else {
                    self.send(now, due, out);
                }
            }
        }
    }

    /// The earliest of the next datagram and the reaction point's timer;
    /// `None` once everything is sent.
    pub fn timer_deadline(&self) -> Option<SimTime> {
        if self.done {
            return None;
        }
        let t = match (self.next_at, self.rp.timer_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (t, self.gbn.as_deref().and_then(|g| g.rto_at)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Everything was sent (all bytes, or the duration is over); with
    /// go-back-N, everything sent was acknowledged.
    pub fn is_complete(&self) -> bool {
        self.done
    }

    pub fn rate(&self) -> BitRate {
        self.rp.rate()
    }

    pub fn reaction(&self) -> &Reaction {
        &self.rp
    }

    pub fn sent_bytes(&self) -> u64 {
        self.sent_bytes
    }

    pub fn sent_packets(&self) -> u64 {
        self.sent_packets
    }

    pub fn first_sent_at(&self) -> Option<SimTime> {
        self.first_sent_at
    }

    pub fn last_sent_at(&self) -> Option<SimTime> {
        self.last_sent_at
    }

    fn finish(&mut self) {
        self.next_at = None;
        if let Some(g) = self.gbn.as_deref() {
            // No new data (duration over): the flow's size is what was
            // sent; it is complete once all of that is acknowledged.
            self.total = self.sent_bytes;
            if g.una < g.high {
                return;
            }
        }
        self.done = true;
    }

    /// Whether a datagram is still to go: without go-back-N, until done;
    /// with it, while packets are to be sent again or new data remains.
    fn has_to_send(&self) -> bool {
        match self.gbn.as_deref() {
            None => !self.done,
            Some(g) => {
                !self.done && (g.next < g.high || g.high * u64::from(self.payload) < self.total)
            }
        }
    }

    /// Go-back-N: an ACK or NAK with the receiver's expected PSN `psn`.
    fn on_ack(&mut self, now: SimTime, psn: u32, nak: bool) {
        let Some(g) = self.gbn.as_deref_mut() else {
            return;
        };
        let a = gbn::unwrap_psn(g.una, psn).min(g.high);
        if a > g.una {
            g.una = a;
            g.rto_at = (g.una < g.high).then(|| now + g.timeout);
        }
        if g.next < g.una {
            g.next = g.una; // acknowledged meanwhile: no need to resend
        }
        if nak && a < g.next && a >= g.una {
            // IBTA vol. 1, 9.7: a NAK "PSN sequence error" makes the
            // requester resend from the NAK's PSN (go-back-N).
            g.next = a;
            g.naks += 1;
        }
        let all_sent = g.high * u64::from(self.payload) >= self.total;
        if all_sent && g.una == g.high {
            self.done = true;
            self.next_at = None;
            return;
        }
        self.resume(now);
    }

    /// Go-back-N: an idle sender with packets to resend is due again at
    /// the reaction point's rate (not before `now`).
    fn resume(&mut self, now: SimTime) {
        if self.next_at.is_some() || !self.has_to_send() {
            return;
        }
        let rate = self.rp.rate();
        if rate.bps() == 0 {
            return; // paused: a rate change resumes it (`reschedule`)
        }
        self.next_at = Some(match self.last {
            Some((due, size)) => (due + rate.tx_time(u64::from(size))).max(now),
            None => now,
        });
    }

    /// After a rate change, the pending datagram is due `last_size / rate`
    /// after the latest one's deadline, at the new rate (not before `now`).
    fn reschedule(&mut self, now: SimTime, before: BitRate) {
        let rate = self.rp.rate();
        if rate == before || !self.has_to_send() {
            return;
        }
        let Some((due, size)) = self.last else {
            return; // nothing sent yet: on_start paces from the new rate
        };
        // A zero rate pauses the flow until a rate change resumes it.
        self.next_at = (rate.bps() > 0).then(|| (due + rate.tx_time(u64::from(size))).max(now));
    }

    /// Sends one datagram at `now` that was due at `due`.
    fn send(&mut self, now: SimTime, due: SimTime, out: &mut Vec<Packet>) {
        let remaining = self.total - self.sent_bytes;
        let payload = u64::from(self.payload).min(remaining) as u32;
        let size = Packet::udp_wire_size(payload);
        let ecn = if self.rp.ecn_capable() {
            Ecn::Ect0
        } else {
            Ecn::NotEct
        };
        out.push(crate::udp::datagram(&self.ends, now, payload, ecn));
        self.sent_bytes += u64::from(payload);
        self.sent_packets += 1;
        self.last_sent_at = Some(now);
        self.last = Some((due, size));
        self.rp.on_bytes_sent(now, size);
        if self.sent_bytes >= self.total {
            self.finish();
            return;
        }
        let rate = self.rp.rate();
        self.next_at = (rate.bps() > 0).then(|| due + rate.tx_time(u64::from(size)));
        if let (Some(next), Some(stop)) = (self.next_at, self.stop_at) {
            if next >= stop {
                self.finish();
            }
        }
    }

    /// Go-back-N: sends the datagram with PSN `next` at `now` (due at
    /// `due`), new or sent again; the flow's last carries AckReq.
    fn send_gbn(&mut self, now: SimTime, due: SimTime, out: &mut Vec<Packet>) {
        let rate = self.rp.rate();
        let payload_max = u64::from(self.payload);
        let Some(g) = self.gbn.as_deref_mut() else {
            return;
        };
        let psn = g.next;
        let payload = payload_max.min(self.total - psn * payload_max) as u32;
        let size = Packet::udp_wire_size(payload);
        let next_due = (rate.bps() > 0).then(|| due + rate.tx_time(u64::from(size)));
        // A duration-limited flow stops new data at `stop_at`.
        let stops = psn + 1 >= g.high
            && self
                .stop_at
                .is_some_and(|s| next_due.is_some_and(|d| d >= s));
        let last = (psn + 1) * payload_max >= self.total || stops;
        let ecn = if self.rp.ecn_capable() {
            Ecn::Ect0
        } else {
            Ecn::NotEct
        };
        let mut pkt = crate::udp::datagram(&self.ends, now, payload, ecn);
        if let L4::Udp(u) = &mut pkt.l4 {
            u.psn = psn as u32;
            u.ack_req = last;
        }
        out.push(pkt);
        if psn < g.high {
            g.retx_packets += 1;
        } else {
            g.high = psn + 1;
            self.sent_bytes += u64::from(payload);
            self.sent_packets += 1;
        }
        g.next = psn + 1;
        if g.rto_at.is_none() {
            g.rto_at = Some(now + g.timeout);
        }
        self.last_sent_at = Some(now);
        self.last = Some((due, size));
        self.rp.on_bytes_sent(now, size);
        let more = g.next < g.high || (g.high * payload_max < self.total && !stops);
        self.next_at = if more { next_due } else { None };
        if stops && g.next >= g.high {
            self.finish();
        }
    }
}

/// The receiver side's feedback hook: sees every data packet of its flow and
/// may answer with packets toward the sender (DCQCN's notification point
/// sends a CNP when it sees CE, at most one per interval).
pub trait NotificationPoint {
    /// A data packet of this flow reached the receiver; feedback goes into `out`.
    fn on_data(&mut self, now: SimTime, pkt: &Packet, out: &mut Vec<Packet>);
    /// When the notification point next wants `on_timer`, if ever.
    fn timer_deadline(&self) -> Option<SimTime>;
    fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>);
}

/// Every notification point, dispatched by `match`; chosen by the flow's
/// reaction point ([`ReactionKind::notifier`]).
#[derive(Clone, Debug, Default)]
pub enum Notifier {
    /// No feedback from the receiver (two-point CP-RP schemes, plain UDP).
    #[default]
    None,
    /// DCQCN's notification point (DCQCN section 3.1).
    Dcqcn(dcqcn::DcqcnNotificationPoint),
}

impl NotificationPoint for Notifier {
    fn on_data(&mut self, now: SimTime, pkt: &Packet, out: &mut Vec<Packet>) {
        match self {
            Notifier::None => {}
            Notifier::Dcqcn(np) => out.extend(np.on_packet(now, pkt)),
        }
    }
    fn timer_deadline(&self) -> Option<SimTime> {
        match self {
            Notifier::None => None,
            Notifier::Dcqcn(np) => np.timer_deadline(),
        }
    }
    fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        match self {
            Notifier::None => {}
            Notifier::Dcqcn(np) => out.extend(np.on_timer(now)),
        }
    }
}

/// The receiving end of a rate-based (or plain UDP) flow: counts what
/// arrives and runs its notification point.
#[derive(Clone, Debug, Default)]
pub struct RateReceiver {
    bytes: u64,
    packets: u64,
    np: Notifier,
    /// Go-back-N: in-order acceptance, ACKs and NAKs; `None`: count all.
    gbn: Option<Box<gbn::GbnReceiver>>,
}

impl RateReceiver {
    pub fn new(np: Notifier) -> Self {
        RateReceiver {
            bytes: 0,
            packets: 0,
            np,
            gbn: None,
        }
    }

    /// The same receiver with go-back-N: it counts only the datagrams it
    /// accepts in order, and ACKs / NAKs them (module [`gbn`]).
    pub fn with_go_back_n(mut self, p: &gbn::GbnParams) -> Self {
        self.gbn = Some(Box::new(gbn::GbnReceiver::new(p)));
        self
    }

    /// The go-back-N state, if the receiver runs it.
    pub fn go_back_n(&self) -> Option<&gbn::GbnReceiver> {
        self.gbn.as_deref()
    }

    /// Counts one datagram (non-UDP packets are ignored; with go-back-N,
    /// only one accepted in order, which the go-back-N logic may ACK or
    /// NAK) and lets the notification point see it.
    pub fn on_packet(&mut self, now: SimTime, pkt: &Packet, out: &mut Vec<Packet>) {
        let L4::Udp(udp) = pkt.l4 else { return };
        let accepted = match self.gbn.as_deref_mut() {
            None => true,
            Some(g) => g.on_data(now, pkt, out),
        };
        if accepted {
            self.bytes += u64::from(udp.payload);
            self.packets += 1;
        }
        self.np.on_data(now, pkt, out);
    }

    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.np.timer_deadline().is_some_and(|d| now >= d) {
            self.np.on_timer(now, out);
        }
    }

    pub fn timer_deadline(&self) -> Option<SimTime> {
        self.np.timer_deadline()
    }

    /// Payload bytes received.
    pub fn received_bytes(&self) -> u64 {
        self.bytes
    }

    pub fn received_packets(&self) -> u64 {
        self.packets
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
