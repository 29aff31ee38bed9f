//! What the simulator tells a switch about itself: ports, rates, shortest-path
//! routes and its place in the topology, plus the target's fixed costs.

use pisanet_engine::{BitRate, SimTime};
use pisanet_net::PortNo;

/// A destination prefix and its shortest-path next hops (several: an ECMP group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub prefix: u32,
    pub len: u8,
    pub ports: Vec<PortNo>,
}

/// Per-switch input computed by the simulator from the topology.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwitchInfo {
    pub id: u32,
    pub n_ports: u16,
    /// Line rate of each port.
    pub port_rates: Vec<BitRate>,
    pub routes: Vec<Route>,
    /// Ports towards the next tier up (empty at the top tier).
    pub uplinks: Vec<PortNo>,
    /// 0 = ToR / leaf / edge.
    pub tier: u8,
}

/// Fixed costs of the hardware target (not of a program).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetConfig {
    /// Rate of the recirculation port: each recirculated packet occupies it
    /// for its serialization time, so recirculation eats pipeline throughput.
    pub recirc_rate: BitRate,
    /// Latency of one pass through the pipeline, paid again by a resubmitted
    /// or recirculated packet.
    pub pipeline_latency: SimTime,
}

impl Default for TargetConfig {
    fn default() -> Self {
        TargetConfig {
            recirc_rate: BitRate::from_bps(100_000_000_000),
            pipeline_latency: SimTime::from_ns(500),
        }
    }
}
