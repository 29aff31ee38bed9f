//! What the simulator tells a switch about itself: ports, rates, shortest-path
//! routes and its place in the topology, plus the target's fixed costs.

use pisanet_engine::{BitRate, SimTime};
use pisanet_net::PortNo;

/// A destination prefix and its shortest-path next hops (several: an ECMP group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub prefix: u32,
    pub len: u8,
    /// Ports toward the prefix (several = an ECMP group; none = drop).
    pub ports: Vec<PortNo>,
    /// The rack (ToR index) this prefix belongs to, if it is a rack's /24
    /// or a host's /32 (None for a route covering several racks).
    pub rack: Option<u32>,
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
    /// Node name in the topology ("leaf0", "A4", "edge1_0").
    pub name: String,
    /// The rack this switch is the ToR of (tier-0 switches with hosts).
    pub rack: Option<u32>,
    /// Ports facing hosts.
    pub host_ports: Vec<PortNo>,
    /// Number of racks (ToRs) in the network.
    pub n_racks: u32,
    /// Pod of the switch in 3-tier topologies (fat_tree, hula3tier); None for
    /// the top tier and for 2-tier topologies.
    pub pod: Option<u32>,
    /// Tier of the node at the other end of each port (-1 = a host).
    pub peer_tier: Vec<i8>,
    /// Pod of every rack, by rack index, in 3-tier topologies (fat_tree,
    /// hula3tier); empty for 2-tier ones. Shared by every switch of a run.
    pub rack_pods: std::sync::Arc<[u32]>,
    /// The /24 of every rack, by rack index (for per-destination-ToR tables
    /// such as `get_dst_tor`: `routes` are prefix routes, one per class of
    /// racks, not one per rack). Shared by every switch of a run.
    pub rack_prefixes: std::sync::Arc<[u32]>,
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
