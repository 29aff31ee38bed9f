//! A model of a PISA switch with v1model semantics, on which pisanet's schemes
//! are written as switch programs that obey the hardware's limits (P4TE
//! section 3).
//!
//! Owns, in pipeline order: standard and user metadata ([`meta`]); the
//! stateful externs: register arrays ([`register`]), counters ([`counter`]),
//! RFC 2697/2698 meters ([`meter`]), CRC hashes ([`hash`]), the per-port
//! utilization estimator ([`estimator`]); match-action tables and action
//! selectors ([`table`]); a program's declared objects and the data plane's
//! view of them ([`pipeline`]); the switch-local CPU agent ([`control`]); the
//! switch itself with its replication engine, recirculation and packet
//! generator ([`switch`]); and the resource report ([`resources`]).
//!
//! Guarantees: a program touches each register array at most once per pass,
//! or a [`Violation`] is recorded; the data plane has no division, floating
//! point or loops over entries in its API; tables change only by control-plane
//! writes, which land one at a time after a latency; every packet a switch
//! makes is marked `switch_made` and counted in [`SwitchStats::injected`].
//!
//! Leaves to others: the egress queues (the traffic manager), links and time
//! (the facade's event loop), and the programs themselves (pisanet-schemes).
//!
//! A program in brief:
//!
//! ```
//! use pisanet_engine::{RngStreams, SimTime, StreamKind};
//! use pisanet_net::{Packet, PortNo};
//! use pisanet_pisa::*;
//!
//! // Ingress: forward everything to port 1.
//! struct ToPortOne;
//! impl DataPlane for ToPortOne {
//!     fn ingress(&mut self, _: &mut Ctx<'_>, _: &mut Packet, sm: &mut StandardMetadata, _: &mut UserMeta) {
//!         sm.egress_spec = 1;
//!     }
//! }
//! struct NoAgent;
//! impl ControlAgent for NoAgent {
//!     fn on_start(&mut self, _: &SwitchInfo, _: &mut CpuApi<'_>) {}
//! }
//!
//! let info = SwitchInfo { n_ports: 2, ..Default::default() };
//! let rng = RngStreams::new(1).stream(StreamKind::Switch, 0);
//! let mut sw = Switch::new(&info, Pipeline::new("to_port_one"), Box::new(ToPortOne), Box::new(NoAgent),
//!                          rng, ControlPlaneConfig::default(), TargetConfig::default()).unwrap();
//! let mut out = Vec::new();
//! sw.ingress(SimTime::ZERO, 0, Packet::default(), &mut out);
//! assert!(matches!(out[0], Emit::Enqueue { port: 1, .. }));
//! ```

pub mod clock;
pub mod control;
pub mod counter;
pub mod estimator;
pub mod form;
pub mod hash;
pub mod info;
pub mod meta;
pub mod meter;
pub mod pipeline;
pub mod register;
pub mod resources;
pub mod switch;
pub mod table;

pub use clock::Clock;
pub use control::{ControlAgent, ControlPlaneConfig, CpuApi};
pub use counter::{CounterData, CounterId, CounterKind, CounterSpec};
pub use estimator::{EstimatorId, EstimatorSpec, UtilEstimator};
pub use form::{IngressForm, LpmSelect};
pub use hash::{
    crc16, crc32, five_tuple_bytes, HashAlgo, HashId, HashInput, HashSpec, FIVE_TUPLE_FIELDS,
};
pub use info::{Route, SwitchInfo, TargetConfig};
pub use meta::{
    CloneType, Gress, InstanceType, StandardMetadata, UserMeta, CPU_PORT, DROP_PORT, PKTGEN_PORT,
    RECIRC_PORT, USER_META_WORDS,
};
pub use meter::{Color, MeterCell, MeterConfig, MeterId, MeterKind, MeterSpec, MeterUnit};
pub use pipeline::{
    matches, Ctx, Digest, Pipeline, PktGenSpec, UpdateType, Violation, ViolationKind, Write,
};
pub use register::{RegisterId, RegisterSpec};
pub use resources::{RegisterReport, ResourceReport, TableReport};
pub use switch::{DataPlane, DeqInfo, DropReason, Emit, QueueMeta, Switch, SwitchStats};
pub use table::{
    ActionCall, ActionId, FieldMatch, Hit, Key, KeyField, MatchKind, SelectorId, SelectorSpec,
    TableEntry, TableId, TableSpec, MAX_ACTION_PARAMS, MAX_KEY_FIELDS,
};

#[cfg(test)]
mod tests;
