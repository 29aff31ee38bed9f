//! Workloads for pisanet: which flows start, when, between which hosts, and
//! how large they are.
//!
//! Owns: flow-size distributions ([`Cdf`], with the built-in `websearch` and
//! `datamining` CDFs), Poisson arrivals, traffic patterns ([`Pattern`]),
//! explicit flow lists ([`parse_flow_file`]) and the lazy [`FlowGenerator`]
//! that combines them into [`FlowSpec`]s, and the user-facing parameters of
//! all this, `[workload]` ([`params`]).
//!
//! Guarantees: flows are yielded one at a time in non-decreasing start time
//! with ids 0, 1, 2, ...; the generator holds O(hosts) state, so a run of
//! millions of flows never materialises its flow list; every invalid input is
//! reported as a one-line error naming the key (or file line) and what is
//! allowed, never a panic; the same seed gives the same flows.
//!
//! Leaves to others: the topology (it sees only a [`HostLayout`], hosts
//! grouped by rack), starting flows on hosts (transport), and the config
//! format (the facade maps its keys to a [`WorkloadSpec`]).
//!
//! # Arrival model
//!
//! Uniform, stride and permutation arrivals form one Poisson process over the
//! whole network with rate
//!
//! ```text
//! lambda_total = load * n_senders * host_rate_bps / (8 * mean_bytes)   [flows/s]
//! ```
//!
//! where `n_senders` is the number of hosts that send (all hosts for these
//! patterns) and `mean_bytes` the CDF's exact mean, so each host offers
//! `load` of its link on average. Each arrival's source is uniform over hosts.
//!
//! # Sources
//!
//! - `websearch`: DCTCP paper (Alizadeh et al., "Data Center TCP (DCTCP)",
//!   SIGCOMM 2010), points as in HPCC's `traffic_gen/WebSearch_distribution.txt`.
//! - `datamining`: VL2 paper (Greenberg et al., "VL2: A Scalable and Flexible
//!   Data Center Network", SIGCOMM 2009), points as in
//!   HKUST-SING/TrafficGenerator `conf/VL2_CDF.txt`.
//! - Stride and the 90th-percentile short/large threshold: P4TE, sections 7
//!   and 4.1.3.
//!
//! # Example
//!
//! ```
//! use pisanet_engine::{BitRate, RngStreams, SimTime, StreamKind};
//! use pisanet_workload::{Cdf, FlowGenerator, HostLayout, Pattern, WorkloadSpec};
//!
//! let cdf = Cdf::builtin("websearch").unwrap();
//! let spec = WorkloadSpec {
//!     short_threshold_bytes: cdf.quantile(0.9),
//!     cdf,
//!     load: 0.5,
//!     flows: 1000,
//!     pattern: Pattern::Uniform,
//!     host_rate: BitRate::from_gbps(10.0),
//!     start: SimTime::ZERO,
//! };
//! let layout = HostLayout::uniform(4, 4);
//! let rng = RngStreams::new(1).stream(StreamKind::Workload, 0);
//! let flows = FlowGenerator::new(spec, &layout, rng).unwrap();
//! assert_eq!(flows.len(), 1000);
//! let mut last = SimTime::ZERO;
//! for f in flows {
//!     assert!(f.start >= last && layout.rack_of(f.src) != layout.rack_of(f.dst));
//!     last = f.start;
//! }
//! ```

mod cdf;
mod flow;
mod generator;
mod groups;
mod layout;
pub mod params;
mod pattern;

pub use cdf::{Cdf, BUILTIN_CDFS};
pub use flow::{
    classify, parse_flow_file, parse_flow_file_for_hosts, parse_flow_list, FlowAttrs,
    FlowListRules, FlowSpec, Transport, FLOW_COLUMNS,
};
pub use generator::{FlowGenerator, WorkloadSpec};
pub use groups::FlowSource;
pub use layout::HostLayout;
pub use pattern::{Pattern, ServerAssignment};
