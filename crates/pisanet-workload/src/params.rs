//! The user-facing parameters of the workload (`[workload]` in a run's
//! TOML, with its `[[workload.groups]]`), declared once here, next to the
//! generator that reads them: each with its doc comment, default, unit
//! (`x-unit`), range and, for keys only some patterns read,
//! `x-applies-when`. The simulator's config composes [`WorkloadParams`];
//! `pisanet schema` shows it.
//!
//! The rules a group's keys have with other tables (its `cc` among the
//! transport's names, its priority below `topology.priorities`, a deadline
//! needing `metrics.flow_stats`) are checked by the config, which sees
//! those tables.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Transport;

#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PatternKind {
    Uniform,
    Stride,
    Permutation,
    Incast,
    File,
    /// HULA section 6: clients (first half of the racks) each send to one server (second half) over persistent connections.
    ClientServer,
}

/// client_server: how each client picks its server.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ServerAssignmentKind {
    /// A random permutation: no server has two clients while another has none.
    #[default]
    Permutation,
    /// Independent uniform draws (HULA section 6: "each client chooses a server at random").
    Random,
}

/// workload.source_ports: how a connection gets its TCP/UDP source port.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SourcePortsKind {
    /// 10000 + the connection's number (the flow's, without persistent connections), as an OS hands out ephemeral ports in turn (ns-3 does the same).
    #[default]
    Sequential,
    /// A pseudo-random port in 10000..=59999 per connection, drawn from the run seed. CRC hashes are affine, so sequential ports give ECMP structured, not independent, choices (docs/model.md, "Addressing and routing").
    Random,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "WorkloadCfg")]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadParams {
    /// "websearch", "datamining", or a path to a CDF file ("size_bytes probability" lines).
    pub cdf: String,
    /// Offered load as a fraction of host link capacity, in (0, 1).
    #[schemars(extend("exclusiveMinimum" = 0, "exclusiveMaximum" = 1), extend("x-applies-when" = {"key": "workload.pattern", "not_in": ["file"]}))]
    pub load: f64,
    /// Number of flows to generate.
    #[schemars(range(min = 1, max = 1e10), extend("x-applies-when" = {"key": "workload.pattern", "not_in": ["file"]}))]
    pub flows: u64,
    pub pattern: PatternKind,
    /// Flows larger than this are "large" (traffic class 1); default: the CDF's 90th percentile (P4TE).
    #[schemars(range(min = 1, max = 1e15), extend("x-unit" = "bytes"))]
    pub short_threshold_bytes: Option<u64>,
    /// incast: number of synchronised senders.
    #[schemars(range(min = 1, max = 1000000), extend("x-applies-when" = {"key": "workload.pattern", "in": ["incast"]}))]
    pub incast_senders: u32,
    /// incast: bytes per sender; 0 samples the CDF.
    #[schemars(range(min = 0, max = 1e15), extend("x-unit" = "bytes"), extend("x-applies-when" = {"key": "workload.pattern", "in": ["incast"]}))]
    pub incast_bytes: u64,
    /// file: CSV "start_us,src,dst,bytes".
    #[schemars(extend("x-applies-when" = {"key": "workload.pattern", "in": ["file"]}))]
    pub file: Option<String>,
    /// First arrival not before this time (us).
    #[schemars(range(min = 0, max = 10000000000.0), extend("x-unit" = "us"))]
    pub start_us: f64,
    /// client_server: persistent connections per client (HULA section 6: 3).
    #[schemars(range(min = 1, max = 1000), extend("x-applies-when" = {"key": "workload.pattern", "in": ["client_server"]}))]
    pub connections: u32,
    /// client_server: "permutation" (each server has one client) or "random" (independent draws).
    #[schemars(extend("x-applies-when" = {"key": "workload.pattern", "in": ["client_server"]}))]
    pub client_server_assignment: ServerAssignmentKind,
    /// Source ports: "sequential" (10000 + connection number; default) or "random" (per connection, from the run seed).
    pub source_ports: SourcePortsKind,
    /// More flow groups beside this table's flows (which are group 0): each
    /// `[[workload.groups]]` is a workload of its own (pattern, CDF, load,
    /// flows, file, start) with per-group transport overrides. See docs/workloads.md, "Flow groups".
    pub groups: Vec<GroupParams>,
}

/// `[[workload.groups]]`: one more workload in the run. Unset workload keys
/// take the `[workload]` defaults (not the `[workload]` table's values);
/// unset transport keys take the config's (`[transport]`), and a flow
/// list's cells override the group's.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, Default)]
#[schemars(rename = "GroupCfg")]
#[serde(deny_unknown_fields, default)]
pub struct GroupParams {
    /// Name in the results (`flows.parquet` has the group's number; summary.json its name). Default "group<k>".
    pub name: Option<String>,
    /// As `workload.cdf`.
    pub cdf: Option<String>,
    /// As `workload.load` (not with pattern "file" or "incast").
    #[schemars(extend("exclusiveMinimum" = 0, "exclusiveMaximum" = 1))]
    pub load: Option<f64>,
    /// As `workload.flows` (not with pattern "file" or "incast").
    #[schemars(range(min = 1, max = 1e10))]
    pub flows: Option<u64>,
    /// As `workload.pattern`. Default "uniform".
    pub pattern: Option<PatternKind>,
    /// As `workload.short_threshold_bytes`.
    #[schemars(range(min = 1, max = 1e15), extend("x-unit" = "bytes"))]
    pub short_threshold_bytes: Option<u64>,
    /// As `workload.incast_senders` (pattern "incast").
    #[schemars(range(min = 1, max = 1000000))]
    pub incast_senders: Option<u32>,
    /// As `workload.incast_bytes` (pattern "incast").
    #[schemars(range(min = 0, max = 1e15), extend("x-unit" = "bytes"))]
    pub incast_bytes: Option<u64>,
    /// As `workload.file` (pattern "file"; required then).
    pub file: Option<String>,
    /// As `workload.start_us`.
    #[schemars(range(min = 0, max = 10000000000.0), extend("x-unit" = "us"))]
    pub start_us: Option<f64>,
    /// As `workload.connections` (pattern "client_server").
    #[schemars(range(min = 1, max = 1000))]
    pub connections: Option<u32>,
    /// As `workload.client_server_assignment` (pattern "client_server").
    pub client_server_assignment: Option<ServerAssignmentKind>,
    /// The group's flows' transport: "tcp" or "udp". Default: `transport.kind`'s.
    pub transport: Option<FlowTransport>,
    /// Congestion control ("newreno", "dctcp", "cubic") or reaction point
    /// ("fixed", "halve", "qcn", "qcn_cnp", "dcqcn") of the group's flows;
    /// sets the transport when that is unset.
    pub cc: Option<String>,
    /// UDP: the sending rate of each flow (Gb/s; a rate-based flow's initial rate).
    #[schemars(range(min = 0.000001, max = 100000), extend("x-unit" = "Gb/s"))]
    pub rate_gbps: Option<f64>,
    /// Each flow sends for this long (us), ending earlier if its bytes are sent.
    #[schemars(range(min = 0.001, max = 1e10), extend("x-unit" = "us"))]
    pub duration_us: Option<f64>,
    /// Payload bytes per packet of the group's flows.
    #[schemars(range(min = 64, max = 9000), extend("x-unit" = "bytes"))]
    pub mss: Option<u32>,
    /// Strict-priority queue of the group's packets (0 = highest; below `topology.priorities`).
    #[schemars(range(min = 0, max = 7))]
    pub priority: Option<u8>,
    /// One-way delay budget of each data packet (us); needs `metrics.flow_stats = true`.
    #[schemars(range(min = 0.001, max = 1e10), extend("x-unit" = "us"))]
    pub deadline_us: Option<f64>,
}

/// A flow's transport protocol (`transport` of a flow group or flow row).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FlowTransport {
    Tcp,
    Udp,
}

impl Default for WorkloadParams {
    fn default() -> Self {
        WorkloadParams {
            cdf: "websearch".into(),
            load: 0.6,
            flows: 2000,
            pattern: PatternKind::Uniform,
            short_threshold_bytes: None,
            incast_senders: 8,
            incast_bytes: 0,
            file: None,
            start_us: 0.0,
            connections: 3,
            client_server_assignment: ServerAssignmentKind::Permutation,
            source_ports: SourcePortsKind::Sequential,
            groups: Vec::new(),
        }
    }
}

impl PatternKind {
    /// The name the TOML gives the pattern ("client_server").
    pub fn name(self) -> &'static str {
        match self {
            PatternKind::Uniform => "uniform",
            PatternKind::Stride => "stride",
            PatternKind::Permutation => "permutation",
            PatternKind::Incast => "incast",
            PatternKind::File => "file",
            PatternKind::ClientServer => "client_server",
        }
    }
}

impl From<FlowTransport> for Transport {
    fn from(t: FlowTransport) -> Transport {
        match t {
            FlowTransport::Tcp => Transport::Tcp,
            FlowTransport::Udp => Transport::Udp,
        }
    }
}

impl WorkloadParams {
    /// The rules between `[workload]` keys (single-key ranges are in the
    /// schema; the groups' are [`GroupParams::check`]). The error is one
    /// line naming the key and what is allowed.
    pub fn check(&self) -> Result<(), String> {
        if self.pattern == PatternKind::File && self.file.is_none() {
            return Err("workload.file: required when workload.pattern = \"file\"".into());
        }
        Ok(())
    }
}

impl GroupParams {
    /// The group's pattern.
    pub fn pattern(&self) -> PatternKind {
        self.pattern.unwrap_or(PatternKind::Uniform)
    }

    /// The rules between the keys of group `k` (`workload.groups[k]`): a
    /// key its pattern does not read is refused, a "file" group needs its
    /// file. The error is one line naming the key and what is allowed.
    pub fn check(&self, k: usize) -> Result<(), String> {
        let key = |name: &str| format!("workload.groups[{k}].{name}");
        let pattern = self.pattern();
        let pname = format!("\"{}\"", pattern.name());
        let unread = |name: &str, given: bool, read: bool, when: &str| -> Result<(), String> {
            if given && !read {
                return Err(format!(
                    "{}: is read only when {} (here {pname}); remove it",
                    key(name),
                    when
                ));
            }
            Ok(())
        };
        let poisson = !matches!(pattern, PatternKind::File | PatternKind::Incast);
        let pk = key("pattern");
        unread(
            "load",
            self.load.is_some(),
            poisson,
            &format!("{pk} is not \"file\" or \"incast\""),
        )?;
        unread(
            "flows",
            self.flows.is_some(),
            poisson,
            &format!("{pk} is not \"file\" or \"incast\""),
        )?;
        let incast = pattern == PatternKind::Incast;
        unread(
            "incast_senders",
            self.incast_senders.is_some(),
            incast,
            &format!("{pk} = \"incast\""),
        )?;
        unread(
            "incast_bytes",
            self.incast_bytes.is_some(),
            incast,
            &format!("{pk} = \"incast\""),
        )?;
        let file = pattern == PatternKind::File;
        unread(
            "file",
            self.file.is_some(),
            file,
            &format!("{pk} = \"file\""),
        )?;
        let cs = pattern == PatternKind::ClientServer;
        unread(
            "connections",
            self.connections.is_some(),
            cs,
            &format!("{pk} = \"client_server\""),
        )?;
        unread(
            "client_server_assignment",
            self.client_server_assignment.is_some(),
            cs,
            &format!("{pk} = \"client_server\""),
        )?;
        if file && self.file.is_none() {
            return Err(format!("{}: required when {pk} = \"file\"", key("file")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_and_group_rules_name_the_key() {
        assert!(WorkloadParams::default().check().is_ok());
        let w = WorkloadParams {
            pattern: PatternKind::File,
            ..Default::default()
        };
        assert_eq!(
            w.check().unwrap_err(),
            "workload.file: required when workload.pattern = \"file\""
        );
        let g = GroupParams {
            pattern: Some(PatternKind::Incast),
            load: Some(0.5),
            ..Default::default()
        };
        assert_eq!(
            g.check(2).unwrap_err(),
            "workload.groups[2].load: is read only when workload.groups[2].pattern is not \"file\" or \"incast\" (here \"incast\"); remove it"
        );
        let g = GroupParams {
            pattern: Some(PatternKind::File),
            ..Default::default()
        };
        assert_eq!(
            g.check(0).unwrap_err(),
            "workload.groups[0].file: required when workload.groups[0].pattern = \"file\""
        );
        assert!(GroupParams::default().check(0).is_ok());
        assert_eq!(Transport::from(FlowTransport::Udp), Transport::Udp);
    }

    #[test]
    fn pattern_names_are_the_toml_names() {
        for p in [
            PatternKind::Uniform,
            PatternKind::Stride,
            PatternKind::Permutation,
            PatternKind::Incast,
            PatternKind::File,
            PatternKind::ClientServer,
        ] {
            let toml_name = format!("{:?}", serde_json::to_value(p).unwrap());
            assert_eq!(toml_name, format!("String({:?})", p.name()));
        }
    }
}
