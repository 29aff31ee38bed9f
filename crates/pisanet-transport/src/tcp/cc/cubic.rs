//! CUBIC (RFC 9438): the window as a cubic function of the time since the
//! last congestion event, with a Reno-friendly floor.
//!
//! Implemented: the cubic window function (section 4.2), the Reno-friendly
//! region (4.3), the concave and convex regions (4.4, 4.5: the same
//! formula on either side of `W_max`), multiplicative decrease (4.6) on
//! loss and on ECN echoes, fast convergence (4.7), timeouts (4.8) and slow
//! start as RFC 5681 (4.10).
//!
//! Left out, each deliberate (docs/model.md, "Hosts"): HyStart++ (RFC 9406,
//! which RFC 9438 section 4.10 lets an implementation use), undoing spurious
//! congestion events (4.9), and the pause of `t` while the flow is
//! application-limited (section 5.8 lets an implementation not grow cwnd
//! instead, which is what the sender's RFC 7661 check does).
//!
//! Units: windows are kept in segments (f64) inside the controller, as
//! RFC 9438 writes them, and in bytes in [`Window`]; time is in seconds.

use super::{AckEvent, Controller, NewReno, Window};
use pisanet_engine::SimTime;

/// CUBIC sender state (RFC 9438 section 4.1.2's variables).
#[derive(Clone, Debug, PartialEq)]
pub struct Cubic {
    reno: NewReno,
    /// C, segments / s^3.
    c: f64,
    /// beta_cubic.
    beta: f64,
    /// W_max: cwnd (segments) just before the last window reduction,
    /// lowered by fast convergence (section 4.7).
    w_max: f64,
    /// cwnd_prior: cwnd (segments) just before the last reduction.
    cwnd_prior: f64,
    /// K (s): when the cubic function reaches W_max after the epoch start.
    k: f64,
    /// t_epoch: start of the current congestion-avoidance stage.
    epoch_start: Option<SimTime>,
    /// cwnd_epoch (segments): cwnd at the start of the stage.
    cwnd_epoch: f64,
    /// W_est (segments): the Reno-friendly estimate (section 4.3).
    w_est: f64,
    /// alpha_cubic of section 4.3.
    alpha: f64,
    /// The last reduction was a timeout: the next stage has K = 0 and
    /// W_max = cwnd_epoch (section 4.8).
    after_timeout: bool,
    /// Fractional bytes of cwnd growth not yet added to the window.
    carry: f64,
}

impl Cubic {
    /// `c` in segments / s^3, `beta` the multiplicative decrease.
    pub fn new(c: f64, beta: f64) -> Self {
        Cubic {
            reno: NewReno::default(),
            c,
            beta,
            w_max: 0.0,
            cwnd_prior: 0.0,
            k: 0.0,
            epoch_start: None,
            cwnd_epoch: 0.0,
            w_est: 0.0,
            alpha: Self::reno_alpha(beta),
            after_timeout: false,
            carry: 0.0,
        }
    }

    /// RFC 9438 section 4.3, equation (4)'s alpha_cubic = 3 (1 - beta) / (1 + beta),
    /// which makes the average Reno-friendly window equal Reno's.
    fn reno_alpha(beta: f64) -> f64 {
        3.0 * (1.0 - beta) / (1.0 + beta)
    }

    /// W_cubic(t) = C (t - K)^3 + W_max, RFC 9438 section 4.2, equation (1);
    /// `t` in seconds since the epoch start, result in segments.
    pub fn w_cubic(&self, t: f64) -> f64 {
        self.c * (t - self.k).powi(3) + self.w_max
    }

    /// K (s) of the current congestion-avoidance stage.
    pub fn k(&self) -> f64 {
        self.k
    }

    /// W_max (segments).
    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// When the current congestion-avoidance stage began, if it has.
    pub fn epoch_start(&self) -> Option<SimTime> {
        self.epoch_start
    }

    /// W_est (segments), the Reno-friendly estimate (section 4.3).
    pub fn w_est(&self) -> f64 {
        self.w_est
    }

    /// cwnd (segments) when the current stage began.
    pub fn cwnd_epoch(&self) -> f64 {
        self.cwnd_epoch
    }

    /// Multiplicative decrease (RFC 9438 section 4.6) with fast
    /// convergence (4.7). Sets ssthresh; returns the reduced window in
    /// bytes before any floor, `flight_size * beta_cubic`.
    fn reduce(&mut self, w: &mut Window, flight: u64) -> u64 {
        let mss = w.mss as f64;
        let cwnd = w.cwnd as f64 / mss;
        // Section 4.7: with fast convergence, a flow whose W_max shrinks
        // releases bandwidth: W_max = cwnd (1 + beta) / 2.
        self.w_max = if cwnd < self.w_max {
            cwnd * (1.0 + self.beta) / 2.0
        } else {
            cwnd
        };
        // Section 4.6: cwnd_prior = cwnd; ssthresh = flight_size * beta.
        // NOTE: flight_size capped at cwnd, as `Window::half_flight` does
        // for NewReno (section 4.6 allows cwnd for flight_size when cwnd is
        // validated, which the sender does, RFC 7661).
        self.cwnd_prior = cwnd;
        let reduced = (flight.min(w.cwnd) as f64 * self.beta) as u64;
        // Section 4.6: ssthresh = max(ssthresh, 2 SMSS).
        w.ssthresh = reduced.max(2 * w.mss);
        w.ca_bytes_acked = 0;
        // Section 4.3: alpha_cubic goes back to its Reno-friendly value,
        // and a new congestion-avoidance stage starts at the next ACK.
        self.alpha = Self::reno_alpha(self.beta);
        self.epoch_start = None;
        self.after_timeout = false;
        self.carry = 0.0;
        reduced
    }

    /// The first ACK of a congestion-avoidance stage: t_epoch, cwnd_epoch,
    /// K (section 4.2, equation (2)) and W_est (section 4.3).
    fn start_epoch(&mut self, w: &Window, now: SimTime) {
        let cwnd = w.cwnd as f64 / w.mss as f64;
        self.epoch_start = Some(now);
        self.cwnd_epoch = cwnd;
        self.w_est = cwnd;
        if self.after_timeout {
            // Section 4.8: after a timeout, K = 0 and W_max = the window at
            // the beginning of this stage.
            self.w_max = cwnd;
            self.k = 0.0;
            self.after_timeout = false;
        } else {
            // Section 4.2, equation (2): K = cbrt((W_max - cwnd_epoch) / C).
            // Negative when cwnd_epoch > W_max (no reduction since, e.g. a
            // window grown in slow start): the stage is then convex from
            // its start, and W_cubic(0) = cwnd_epoch still holds.
            self.k = ((self.w_max - cwnd) / self.c).cbrt();
        }
    }
}

impl Controller for Cubic {
    // NOTE: out of line: `Cc::on_ack` matches directly, and this one is
    // large (docs/performance.md, "Session 12: host side").
    #[inline(never)]
    fn on_ack(&mut self, w: &mut Window, ev: &AckEvent) -> bool {
        if ev.in_recovery || !ev.cwnd_limited {
            // As NewReno: no growth in recovery, nor when the flow did not
            // use its window (RFC 9438 section 5.8, RFC 7661).
            return false;
        }
        if w.in_slow_start() {
            // Section 4.10: slow start as RFC 5681.
            return self.reno.on_ack(w, ev);
        }
        if self.epoch_start.is_none() {
            self.start_epoch(w, ev.now);
        }
        let mss = w.mss as f64;
        let cwnd = w.cwnd as f64 / mss;
        let acked_segs = ev.acked as f64 / mss;
        let t = (ev.now - self.epoch_start.unwrap_or(ev.now)).as_secs_f64();
        let rtt = ev.srtt.map_or(0.0, |r| r.as_secs_f64());

        // Section 4.3, equation (4): W_est += alpha * segments_acked / cwnd,
        // and alpha_cubic = 1 once W_est reaches cwnd_prior.
        self.w_est += self.alpha * acked_segs / cwnd;
        if self.w_est >= self.cwnd_prior {
            self.alpha = 1.0;
        }

        let new_cwnd = if self.w_cubic(t) < self.w_est {
            // Section 4.3: the Reno-friendly region, cwnd = W_est.
            self.w_est.max(cwnd)
        } else {
            // Sections 4.4 (concave, cwnd < W_max) and 4.5 (convex): the
            // target is W_cubic(t + RTT), clamped to [cwnd, 1.5 cwnd]
            // (section 4.2), and cwnd grows by (target - cwnd) / cwnd per
            // segment acknowledged.
            let target = self.w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
            cwnd + (target - cwnd) / cwnd * acked_segs
        };
        self.carry += (new_cwnd - cwnd) * mss;
        if self.carry >= 1.0 {
            let whole = self.carry.floor();
            w.cwnd += whole as u64;
            self.carry -= whole;
        }
        false
    }

    fn on_fast_retransmit(&mut self, w: &mut Window, flight: u64) {
        // Section 4.6, reduction on loss: ssthresh = max(flight * beta, 2);
        // the sender's recovery then sets cwnd from ssthresh.
        self.reduce(w, flight);
    }

    fn on_ece(&mut self, w: &mut Window, flight: u64) {
        // Section 4.6, reduction on ECE: cwnd = max(flight * beta, 1 SMSS).
        let reduced = self.reduce(w, flight);
        w.cwnd = reduced.max(w.mss).min(w.cwnd);
    }

    fn on_rto(&mut self, w: &mut Window, flight: u64, first: bool) {
        // Section 4.8: ssthresh via beta_cubic (section 4.6) and cwnd = 1
        // SMSS as RFC 5681; the next stage starts with K = 0.
        if first {
            self.reduce(w, flight);
        }
        self.after_timeout = true;
        self.epoch_start = None;
        w.cwnd = w.mss;
        w.ca_bytes_acked = 0;
    }
}
