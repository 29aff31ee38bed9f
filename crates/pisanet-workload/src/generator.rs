//! The flow generator: a lazy iterator of [`FlowSpec`] in start-time order.
//!
//! Owns: validation of a [`WorkloadSpec`], Poisson arrival times, and
//! assembling source, destination, size and class into flows.
//!
//! Guarantees: flows come out one at a time in non-decreasing start time,
//! with ids 0, 1, 2, ... in that order; the generator holds O(hosts) state
//! (a permutation table, incast senders) and never the flow list, except for
//! [`Pattern::File`], whose list the user gave. The same spec, layout and rng
//! seed give the same flows.
//!
//! Arrivals (uniform, stride, permutation) form one Poisson process over the
//! whole network, with rate
//!
//! ```text
//! lambda_total = load * n_senders * host_rate_bps / (8 * mean_bytes)   [flows/s]
//! ```
//!
//! so that each sender's offered load is `load` of its link on average.
//! `n_senders` is the number of hosts that send (all hosts for these three
//! patterns) and `mean_bytes` is [`Cdf::mean_bytes`] (at least 1, as every
//! flow has at least one byte). Inter-arrival times are exponential,
//! `-ln(U) / lambda_total` with U uniform in (0, 1], accumulated in f64
//! picoseconds from `start` and rounded to the nearest picosecond.
//!
//! Each Poisson arrival draws, in this order: U (inter-arrival), the source
//! (uniform over hosts), the destination (uniform only) and the size (CDF).

use crate::cdf::Cdf;
use crate::flow::{classify, FlowAttrs, FlowSpec};
use crate::layout::{HostLayout, RackIndex};
use crate::pattern::{self, Dest, Pattern};
use pisanet_engine::{BitRate, SimRng, SimTime};
use pisanet_net::packet::{FlowId, HostId};
use rand::Rng;

/// Everything that defines a workload (besides the host layout and the seed).
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    /// Flow-size distribution.
    pub cdf: Cdf,
    /// Offered load per sending host, as a fraction of `host_rate`, in (0, 1).
    /// Ignored by incast and file.
    pub load: f64,
    /// Number of flows to generate, at least 1. Ignored by incast (one flow
    /// per sender) and file (the list's length).
    pub flows: u64,
    pub pattern: Pattern,
    /// Rate of a host's access link.
    pub host_rate: BitRate,
    /// Flows larger than this are [`pisanet_net::packet::TC_LARGE`], others
    /// `TC_SHORT`; P4TE uses `cdf.quantile(0.9)`.
    pub short_threshold_bytes: u64,
    /// When the workload begins: Poisson arrivals follow it, incast flows
    /// start at it, and file times are offsets from it.
    pub start: SimTime,
}

impl WorkloadSpec {
    /// Checks the fields that do not depend on the host layout. Errors are one
    /// line naming the key and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        if !self.is_poisson() {
            return Ok(());
        }
        if !(self.load > 0.0 && self.load < 1.0) {
            return Err(format!(
                "workload.load: must be in (0, 1), got {}",
                self.load
            ));
        }
        if self.flows < 1 {
            return Err("workload.flows: must be at least 1".into());
        }
        if self.flows > FlowId::MAX as u64 + 1 {
            return Err(format!(
                "workload.flows: must be at most {} (flow ids are 32-bit), got {}",
                FlowId::MAX as u64 + 1,
                self.flows
            ));
        }
        if self.host_rate.bps() == 0 {
            return Err("workload.host_rate: must be positive, got 0 b/s".into());
        }
        Ok(())
    }

    fn is_poisson(&self) -> bool {
        matches!(
            self.pattern,
            Pattern::Uniform
                | Pattern::Stride
                | Pattern::Permutation
                | Pattern::ClientServer { .. }
        )
    }
}

#[derive(Clone, Debug)]
enum Mode {
    Poisson {
        dest: Dest,
        /// lambda_total in flows per picosecond.
        lambda_per_ps: f64,
        /// Time of the last arrival, in picoseconds after `start`.
        clock_ps: f64,
    },
    Incast {
        receiver: HostId,
        senders: Vec<HostId>,
        /// Fixed size, or 0 to sample.
        bytes: u64,
    },
    File(std::vec::IntoIter<FlowSpec>),
    ClientServer {
        clients: Vec<HostId>,
        /// `server_of[i]` is client i's server.
        server_of: Vec<HostId>,
        connections: u32,
        lambda_per_ps: f64,
        clock_ps: f64,
    },
}

/// A lazy iterator of flows (see the module docs for the arrival model).
#[derive(Clone, Debug)]
pub struct FlowGenerator {
    cdf: Cdf,
    rng: SimRng,
    index: RackIndex,
    mode: Mode,
    short_threshold_bytes: u64,
    start: SimTime,
    /// Id of the next flow; also the number yielded so far.
    next_id: u64,
    /// Total number of flows this generator yields.
    total: u64,
    lambda_per_s: f64,
    n_senders: u32,
}

impl FlowGenerator {
    /// Validates `spec` against `layout` and prepares the first arrival.
    /// Draws the permutation (permutation) or the receiver and senders
    /// (incast) from `rng` here; nothing else is drawn before iteration.
    pub fn new(spec: WorkloadSpec, layout: &HostLayout, mut rng: SimRng) -> Result<Self, String> {
        spec.validate()?;
        let index = RackIndex::new(layout)?;
        let n_hosts = index.n_hosts();
        let mut lambda_per_s = 0.0;
        let mut n_senders = n_hosts;
        let (mode, total) = match spec.pattern {
            Pattern::Uniform | Pattern::Stride | Pattern::Permutation => {
                let dest = match spec.pattern {
                    Pattern::Uniform => Dest::Uniform,
                    Pattern::Stride => Dest::Stride,
                    _ => Dest::Permutation(pattern::permutation(&index, &mut rng)),
                };
                lambda_per_s = arrival_rate(spec.load, n_hosts, spec.host_rate, &spec.cdf);
                let mode = Mode::Poisson {
                    dest,
                    lambda_per_ps: lambda_per_s / 1e12,
                    clock_ps: 0.0,
                };
                (mode, spec.flows)
            }
            Pattern::ClientServer {
                connections,
                assignment,
            } => {
                if connections < 1 {
                    return Err("workload.connections: must be at least 1, got 0".into());
                }
                let (clients, server_of) = pattern::client_server(&index, assignment, &mut rng)?;
                n_senders = clients.len() as u32;
                lambda_per_s = arrival_rate(spec.load, n_senders, spec.host_rate, &spec.cdf);
                let mode = Mode::ClientServer {
                    clients,
                    server_of,
                    connections,
                    lambda_per_ps: lambda_per_s / 1e12,
                    clock_ps: 0.0,
                };
                (mode, spec.flows)
            }
            Pattern::Incast { senders, bytes } => {
                let (receiver, senders) = pattern::incast(&index, senders, &mut rng)?;
                let total = senders.len() as u64;
                n_senders = senders.len() as u32;
                (
                    Mode::Incast {
                        receiver,
                        senders,
                        bytes,
                    },
                    total,
                )
            }
            Pattern::File(mut flows) => {
                if flows.is_empty() {
                    return Err("workload.pattern.file: no flows; give at least one".into());
                }
                for (k, f) in flows.iter().enumerate() {
                    let at = |msg: String| format!("workload.pattern.file entry {k}: {msg}");
                    if f.src >= n_hosts {
                        return Err(at(format!("src {} out of range 0..{n_hosts}", f.src)));
                    }
                    if f.dst >= n_hosts {
                        return Err(at(format!("dst {} out of range 0..{n_hosts}", f.dst)));
                    }
                    if f.src == f.dst {
                        return Err(at(format!("src and dst must differ, both are {}", f.src)));
                    }
                    if f.bytes < 1 {
                        return Err(at("bytes must be at least 1, got 0".into()));
                    }
                }
                if flows.len() as u64 > FlowId::MAX as u64 + 1 {
                    return Err(format!(
                        "workload.pattern.file: at most {} flows fit 32-bit flow ids, got {}",
                        FlowId::MAX as u64 + 1,
                        flows.len()
                    ));
                }
                flows.sort_by_key(|f| f.start); // stable
                let mut sends = vec![false; n_hosts as usize];
                flows.iter().for_each(|f| sends[f.src as usize] = true);
                n_senders = sends.iter().filter(|&&s| s).count() as u32;
                let total = flows.len() as u64;
                (Mode::File(flows.into_iter()), total)
            }
        };
        Ok(FlowGenerator {
            cdf: spec.cdf,
            rng,
            index,
            mode,
            short_threshold_bytes: spec.short_threshold_bytes,
            start: spec.start,
            next_id: 0,
            total,
            lambda_per_s,
            n_senders,
        })
    }

    /// lambda_total, the network-wide Poisson arrival rate in flows per second:
    /// `load * n_senders * host_rate_bps / (8 * mean_bytes)`, n_senders being
    /// the number of sending hosts (all hosts for uniform, stride and
    /// permutation) and mean_bytes [`Cdf::mean_bytes`] (floored at 1 byte).
    /// 0.0 for incast and file, which are not Poisson processes.
    pub fn arrival_rate_per_s(&self) -> f64 {
        self.lambda_per_s
    }

    /// Number of hosts that send: all hosts for the Poisson patterns, the
    /// senders for incast, the distinct sources for a file.
    pub fn n_senders(&self) -> u32 {
        self.n_senders
    }

    /// Total number of flows this generator yields (yielded and to come).
    pub fn total_flows(&self) -> u64 {
        self.total
    }

    /// The incast receiver, for incast workloads.
    pub fn incast_receiver(&self) -> Option<HostId> {
        match &self.mode {
            Mode::Incast { receiver, .. } => Some(*receiver),
            _ => None,
        }
    }

    /// Heap bytes held by the generator's own state (for the laziness test).
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        let mode = match &self.mode {
            Mode::Poisson { dest, .. } => dest.heap_bytes(),
            Mode::Incast { senders, .. } => 4 * senders.capacity(),
            Mode::File(rest) => std::mem::size_of::<FlowSpec>() * rest.len(),
            Mode::ClientServer {
                clients, server_of, ..
            } => 4 * (clients.capacity() + server_of.capacity()),
        };
        self.index.heap_bytes() + mode + std::mem::size_of_val(self.cdf.points())
    }
}

/// lambda_total in flows per second (see the module docs).
fn arrival_rate(load: f64, n_senders: u32, host_rate: BitRate, cdf: &Cdf) -> f64 {
    load * n_senders as f64 * host_rate.bps() as f64 / (8.0 * cdf.mean_bytes().max(1.0))
}

impl Iterator for FlowGenerator {
    type Item = FlowSpec;

    fn next(&mut self) -> Option<FlowSpec> {
        if self.next_id >= self.total {
            return None;
        }
        let id = self.next_id as FlowId;
        let mut conn = None;
        let mut attrs = FlowAttrs::default();
        let (src, dst, bytes, start) = match &mut self.mode {
            Mode::Poisson {
                dest,
                lambda_per_ps,
                clock_ps,
            } => {
                // U in (0, 1]: gen() is in [0, 1).
                let u = 1.0 - self.rng.gen::<f64>();
                *clock_ps += -u.ln() / *lambda_per_ps;
                let src = self.rng.gen_range(0..self.index.n_hosts());
                let dst = dest.pick(&self.index, src, &mut self.rng);
                let bytes = self.cdf.sample(&mut self.rng);
                // f64 -> u64 saturates, so an absurdly long run cannot wrap.
                let offset = SimTime(clock_ps.round() as u64);
                (src, dst, bytes, self.start.saturating_add(offset))
            }
            Mode::Incast {
                receiver,
                senders,
                bytes,
            } => {
                let src = senders[self.next_id as usize];
                let size = if *bytes == 0 {
                    self.cdf.sample(&mut self.rng)
                } else {
                    *bytes
                };
                (src, *receiver, size, self.start)
            }
            Mode::ClientServer {
                clients,
                server_of,
                connections,
                lambda_per_ps,
                clock_ps,
            } => {
                // The superposition of every connection's Poisson process:
                // U, then the client, then its connection, then the size.
                let u = 1.0 - self.rng.gen::<f64>();
                *clock_ps += -u.ln() / *lambda_per_ps;
                let c = self.rng.gen_range(0..clients.len());
                let k = self.rng.gen_range(0..*connections);
                conn = Some(c as u32 * *connections + k);
                let bytes = self.cdf.sample(&mut self.rng);
                let offset = SimTime(clock_ps.round() as u64);
                (
                    clients[c],
                    server_of[c],
                    bytes,
                    self.start.saturating_add(offset),
                )
            }
            Mode::File(rest) => {
                let f = rest.next()?;
                attrs = f.attrs;
                (f.src, f.dst, f.bytes, self.start.saturating_add(f.start))
            }
        };
        self.next_id += 1;
        Some(FlowSpec {
            id,
            src,
            dst,
            bytes,
            start,
            class: classify(bytes, self.short_threshold_bytes),
            conn,
            group: 0,
            attrs,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.total - self.next_id) as usize;
        (left, Some(left))
    }
}

impl ExactSizeIterator for FlowGenerator {}

#[cfg(test)]
#[path = "generator_tests.rs"]
mod tests;
