//! Queue-depth and port-rate sampling (`[metrics]`).

use super::*;

/// Per-port rate samples (`metrics.port_rate_interval_us`): at each interval,
/// the rate each selected port transmitted at since the previous sample.
#[derive(Default)]
pub struct RateSampler {
    pub interval: Option<SimTime>,
    pub ports: Vec<PortIdx>,
    /// (tx_bytes, carried_bytes) of each selected port at the previous sample.
    pub(crate) last: Vec<(u64, u64)>,
    pub(crate) last_time: SimTime,
    pub time: Vec<SimTime>,
    pub port: Vec<PortIdx>,
    pub tx_gbps: Vec<f64>,
    pub carried_gbps: Vec<f64>,
}

impl World {
    pub(crate) fn on_sample(&mut self, now: SimTime) {
        for &p in &self.sample_ports {
            let queue = &self.ports[p as usize].queue;
            if queue.priorities() == 1 {
                self.samples.0.push(now);
                self.samples.1.push(p);
                self.samples.2.push(queue.bytes());
                self.samples.3.push(0);
            } else {
                // One row per (port, priority queue): the port's depth is
                // their sum (issue 13: per-queue samples).
                for i in 0..queue.priorities() {
                    self.samples.0.push(now);
                    self.samples.1.push(p);
                    self.samples.2.push(queue.queue_bytes(i));
                    self.samples.3.push(i as u8);
                }
            }
        }
        if let Some(iv) = self.sample_interval {
            self.q.schedule(now + iv, Ev::Sample);
        }
    }

    pub(crate) fn on_rate_sample(&mut self, now: SimTime) {
        let r = &mut self.rates;
        let dt_s = now.saturating_sub(r.last_time).as_secs_f64().max(1e-12);
        for (i, &p) in r.ports.iter().enumerate() {
            let port = &self.ports[p as usize];
            let (tx, carried) = (port.queue.counters.tx_bytes, port.carried_bytes);
            let (tx0, carried0) = r.last[i];
            r.time.push(now);
            r.port.push(p);
            r.tx_gbps.push((tx - tx0) as f64 * 8.0 / dt_s / 1e9);
            r.carried_gbps
                .push((carried - carried0) as f64 * 8.0 / dt_s / 1e9);
            r.last[i] = (tx, carried);
        }
        r.last_time = now;
        if let Some(iv) = r.interval {
            self.q.schedule(now + iv, Ev::RateSample);
        }
    }

    // ---- hosts and flows --------------------------------------------------
}
