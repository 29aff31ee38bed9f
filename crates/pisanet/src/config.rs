//! The run configuration: TOML, parsed and validated once.
//!
//! Every parameter is declared here once, with its default, its units in the
//! name or doc, and its allowed range checked in [`Config::validate`]. Errors
//! name the key path and what is allowed. The JSON Schema (`pisanet schema`)
//! is generated from these types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::Error;

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub run: RunCfg,
    pub topology: TopologyCfg,
    pub transport: TransportCfg,
    pub workload: WorkloadCfg,
    pub scheme: SchemeCfg,
    pub control_plane: ControlPlaneCfg,
    pub metrics: MetricsCfg,
    /// Scheduled link failures and recoveries.
    pub events: Vec<EventCfg>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RunCfg {
    /// Master seed; every component's random stream derives from it.
    pub seed: u64,
    /// Stop after this much simulated time (ms) even if flows remain.
    pub max_sim_time_ms: f64,
}

impl Default for RunCfg {
    fn default() -> Self {
        RunCfg {
            seed: 1,
            max_sim_time_ms: 1000.0,
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TopologyKind {
    LeafSpine,
    FatTree,
    Hula3tier,
    Custom,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TopologyCfg {
    pub kind: TopologyKind,
    /// leaf_spine: number of leaf (ToR) switches.
    pub leaves: u32,
    /// leaf_spine: number of spine switches.
    pub spines: u32,
    /// leaf_spine: hosts under each leaf.
    pub hosts_per_leaf: u32,
    /// fat_tree: arity k (even); k^3/4 hosts.
    pub k: u32,
    /// hula3tier: servers per ToR (the paper: 8).
    pub hosts_per_tor: u32,
    /// custom: path to a TOML file with [[nodes]] and [[links]].
    pub file: Option<String>,
    /// Host-to-ToR link rate (Gb/s).
    pub host_link_gbps: f64,
    /// Switch-to-switch link rate (Gb/s).
    pub fabric_link_gbps: f64,
    /// Propagation delay of every link (us).
    pub link_delay_us: f64,
    /// Per-port drop-tail buffer of switch ports (KB = 1000 bytes).
    pub buffer_kb: f64,
    /// ECN marking threshold K of switch ports (KB); 0 disables marking.
    pub ecn_threshold_kb: f64,
    /// Strict-priority queues per switch port (1..=8).
    pub priorities: u8,
    /// Switch-wide shared buffer (KB); 0 = per-port buffers only.
    pub shared_buffer_kb: f64,
    /// Dynamic-threshold alpha of the shared buffer.
    pub shared_buffer_alpha: f64,
    /// Probability that a link corrupts (drops) a packet, on every link; for loss experiments and tests.
    pub link_loss_rate: f64,
}

impl Default for TopologyCfg {
    fn default() -> Self {
        TopologyCfg {
            kind: TopologyKind::LeafSpine,
            leaves: 4,
            spines: 4,
            hosts_per_leaf: 4,
            k: 4,
            hosts_per_tor: 8,
            file: None,
            host_link_gbps: 10.0,
            fabric_link_gbps: 10.0,
            link_delay_us: 1.0,
            buffer_kb: 200.0,
            ecn_threshold_kb: 65.0,
            priorities: 1,
            shared_buffer_kb: 0.0,
            shared_buffer_alpha: 1.0,
            link_loss_rate: 0.0,
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    /// TCP NewReno (RFC 5681, RFC 6582).
    Newreno,
    /// DCTCP (RFC 8257).
    Dctcp,
    /// Constant-bit-rate UDP at `udp_rate_gbps`.
    Udp,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TransportCfg {
    pub kind: TransportKind,
    /// Minimum retransmission timeout (us).
    pub min_rto_us: f64,
    /// Maximum retransmission timeout (us).
    pub max_rto_us: f64,
    /// RTO before any RTT sample (us).
    pub initial_rto_us: f64,
    /// Maximum segment size: payload bytes per packet.
    pub mss: u32,
    /// Initial congestion window (segments).
    pub init_cwnd: u32,
    /// ACK every second segment, with a timer.
    pub delayed_ack: bool,
    /// Delayed-ACK timer (us).
    pub delayed_ack_us: f64,
    /// Receiver's advertised window (KB).
    pub rwnd_kb: f64,
    /// DCTCP: g = 1 / 2^dctcp_g_shift (RFC 8257: 1/16).
    pub dctcp_g_shift: u8,
    /// UDP: sending rate of each flow (Gb/s).
    pub udp_rate_gbps: f64,
    /// TCP Small Queues: wire bytes (KB = 1000 B) of one TCP flow's packets
    /// its host's NIC queue may hold; the sender waits for its packets to
    /// leave before sending more. Default 131.072 (131072 B, Linux's
    /// `tcp_limit_output_bytes` default as TSQ introduced it: two 64 KB TSO
    /// packets). 0 disables the limit (a flow may fill the NIC with its whole
    /// window). Range >= 0. See docs/model.md, "Hosts".
    pub tsq_kb: f64,
}

impl Default for TransportCfg {
    fn default() -> Self {
        TransportCfg {
            kind: TransportKind::Dctcp,
            min_rto_us: 1000.0,
            max_rto_us: 1_000_000.0,
            initial_rto_us: 3000.0,
            mss: 1460,
            init_cwnd: 10,
            delayed_ack: false,
            delayed_ack_us: 40.0,
            rwnd_kb: 4096.0,
            dctcp_g_shift: 4,
            udp_rate_gbps: 1.0,
            tsq_kb: 131.072,
        }
    }
}

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
#[serde(deny_unknown_fields, default)]
pub struct WorkloadCfg {
    /// "websearch", "datamining", or a path to a CDF file ("size_bytes probability" lines).
    pub cdf: String,
    /// Offered load as a fraction of host link capacity, in (0, 1).
    pub load: f64,
    /// Number of flows to generate.
    pub flows: u64,
    pub pattern: PatternKind,
    /// Flows larger than this are "large" (traffic class 1); default: the CDF's 90th percentile (P4TE).
    pub short_threshold_bytes: Option<u64>,
    /// incast: number of synchronised senders.
    pub incast_senders: u32,
    /// incast: bytes per sender; 0 samples the CDF.
    pub incast_bytes: u64,
    /// file: CSV "start_us,src,dst,bytes".
    pub file: Option<String>,
    /// First arrival not before this time (us).
    pub start_us: f64,
    /// client_server: persistent connections per client (HULA section 6: 3).
    pub connections: u32,
    /// client_server: "permutation" (each server has one client) or "random" (independent draws).
    pub client_server_assignment: ServerAssignmentKind,
    /// Source ports: "sequential" (10000 + connection number; default) or "random" (per connection, from the run seed).
    pub source_ports: SourcePortsKind,
}

impl Default for WorkloadCfg {
    fn default() -> Self {
        WorkloadCfg {
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
        }
    }
}

/// scheme.flowlet_id: how flowlet ECMP gives a new flowlet its id.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FlowletIdKind {
    /// A random 16-bit id per new flowlet, so each new flowlet hashes to an independent path.
    #[default]
    Random,
    /// The old id + 1, as HULA section 6 writes it. With the CRC hash, a flow on a 2-way group can move only at every other new flowlet (docs/schemes/hula.md).
    Increment,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SchemeCfg {
    /// Forwarding scheme: a switch program ("ecmp", "flowlet_ecmp", "rps", ...) or "ecmp_native" (reference ECMP without the pipeline model).
    pub kind: String,
    /// flowlet_ecmp, hula, conga, conga_prime: idle gap that starts a new flowlet (us).
    pub flowlet_timeout_us: f64,
    /// ecmp, ecmp_native, flowlet_ecmp, conga, conga_prime: each tier picks ECMP next hops from its own bits of the 5-tuple hash (default true), as switches with per-switch hash seeds do. False: every tier uses the same bits (identical seeds), so a flow's choices at successive tiers are correlated (hash polarization: in a fat tree or hula3tier each aggregation switch sends all its cross-pod flows to one spine). Not read by hula or p4te.
    pub ecmp_hash_per_tier: bool,
    /// flowlet_ecmp, conga_prime (across pods): the id a new flowlet hashes with: "random" (default) or "increment" (HULA section 6 as written).
    pub flowlet_id: FlowletIdKind,
    /// hula: probes and best-hop tables (HULA sections 4 and 6).
    pub hula: HulaCfg,
    /// conga, conga_prime: congestion feedback (CONGA; HULA section 6).
    pub conga: CongaCfg,
    /// p4te: monitoring, routing groups and rate adaptation (P4TE section 6.1).
    pub p4te: P4teCfg,
}

impl Default for SchemeCfg {
    fn default() -> Self {
        SchemeCfg {
            kind: "ecmp".into(),
            flowlet_timeout_us: 100.0,
            ecmp_hash_per_tier: true,
            flowlet_id: FlowletIdKind::Random,
            hula: HulaCfg::default(),
            conga: CongaCfg::default(),
            p4te: P4teCfg::default(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HulaCfg {
    /// Each ToR sends a probe on every uplink this often (us; HULA section 6: 200).
    pub probe_interval_us: f64,
    /// A best hop not refreshed for this long is replaced by any probe (us; section 4.4). Default: 3 x probe_interval_us.
    pub keepalive_us: Option<f64>,
    /// Time constant of the TX utilization estimator (us; section 4.2: at least 2 x probe_interval_us). Default: 2 x probe_interval_us.
    pub tau_us: Option<f64>,
    /// Per ToR and link, at most one probe per this window (us; section 4.5). Default: 3/4 x probe_interval_us, so that jitter does not suppress a ToR's next round.
    pub suppress_us: Option<f64>,
    /// ToRs the program's per-ToR registers hold (1..=65536).
    pub tor_slots: u32,
}

impl Default for HulaCfg {
    fn default() -> Self {
        HulaCfg {
            probe_interval_us: 200.0,
            keepalive_us: None,
            tau_us: None,
            suppress_us: None,
            tor_slots: 1024,
        }
    }
}

impl HulaCfg {
    /// (keepalive, tau, suppress) in us, defaults resolved.
    pub fn resolved(&self) -> (f64, f64, f64) {
        let tp = self.probe_interval_us;
        (
            self.keepalive_us.unwrap_or(3.0 * tp),
            self.tau_us.unwrap_or(2.0 * tp),
            self.suppress_us.unwrap_or(0.75 * tp),
        )
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CongaCfg {
    /// Time constant of the DRE (us; CONGA: T_dre / alpha = 20 us / 0.1).
    pub tau_us: f64,
    /// Congestion-To-Leaf entries not refreshed for this long count as uncongested (us).
    pub age_us: f64,
    /// Leaves the program's per-leaf registers hold (1..=65536).
    pub leaf_slots: u32,
}

impl Default for CongaCfg {
    fn default() -> Self {
        CongaCfg {
            tau_us: 200.0,
            age_us: 10_000.0,
            leaf_slots: 1024,
        }
    }
}

/// P4TE's parameters (section 6.1), with the paper's defaults or their
/// scaling to real link speeds (docs/schemes/p4te.md).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct P4teCfg {
    /// Rate adaptation with fake ACKs (P4TE-RA, true) or without (P4TE-NRA, false); section 7.1.1.
    pub rate_adaptation: bool,
    /// Flowlet interval (us; section 6.1.4: 40 ms at 40 packets/s, about 0.6 x the average RTT).
    pub flowlet_interval_us: f64,
    /// Delta of alg. 1 and width of a queue-depth routing group (packets; section 7: p90 of ECMP's queue depth / 3).
    pub delta_pkts: u32,
    /// Routing groups of MAT_up_QueueDepth (section 6.1.1: 4; 1..=64).
    pub queue_groups: u32,
    /// Link-utilization meter CIR (% of the port's line rate; section 6.1.2: 75).
    pub util_cir_pct: u32,
    /// Link-utilization meter PIR (% of line rate; section 6.1.2: 95). At least util_cir_pct, at most 100.
    pub util_pir_pct: u32,
    /// CBS = PBS of the link-utilization meter: this % of line rate (section 6.1.2: 5) ...
    pub util_burst_pct: u32,
    /// ... over this window (us).
    pub util_burst_window_us: f64,
    /// Safe rate of short flows per input port (% of line rate; section 6.1.3: 90).
    pub short_safe_pct: u32,
    /// Safe rate of large flows per input port (% of line rate; section 6.1.3: 10).
    pub large_safe_pct: u32,
    /// Committed burst of the class meters: the safe rate over this window (us).
    pub class_burst_window_us: f64,
    /// Rate-control window B (KB; section 6.1.5: line rate x average RTT).
    pub rate_control_window_kb: f64,
    /// Slots of the per-flow registers (a power of two, 1..=2^24).
    pub flow_slots: u32,
    /// Alg. 3's switch CPU as a batching P4Runtime controller (default false: one move's writes per event, as alg. 3 is written). True: the agent keeps each port's desired group, keeps at most one batch of writes in flight, and when it has been applied writes only the net change since (superseded moves are never written); still one entry at a time, not atomic.
    pub cpu_coalesce: bool,
}

impl Default for P4teCfg {
    fn default() -> Self {
        P4teCfg {
            rate_adaptation: true,
            flowlet_interval_us: 100.0,
            delta_pkts: 8,
            queue_groups: 4,
            util_cir_pct: 75,
            util_pir_pct: 95,
            util_burst_pct: 5,
            util_burst_window_us: 100.0,
            short_safe_pct: 90,
            large_safe_pct: 10,
            class_burst_window_us: 100.0,
            rate_control_window_kb: 50.0,
            flow_slots: 65536,
            cpu_coalesce: false,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ControlPlaneCfg {
    /// Latency of a packet or digest from the data plane to the switch CPU (us).
    pub to_cpu_latency_us: f64,
    /// Latency of one table/register/meter write taking effect (us).
    pub write_latency_us: f64,
    /// Writes apply one at a time, at least this far apart (us): updates are not atomic across entries.
    pub write_interval_us: f64,
}

impl Default for ControlPlaneCfg {
    fn default() -> Self {
        ControlPlaneCfg {
            to_cpu_latency_us: 10.0,
            write_latency_us: 50.0,
            write_interval_us: 5.0,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsCfg {
    /// Sample every switch port's queue depth at this interval (us); 0 = off.
    pub queue_sample_interval_us: f64,
    /// Only sample ports whose link name contains one of these (empty = all switch ports).
    pub queue_sample_ports: Vec<String>,
    /// Sample the transmit rate of switch ports at this interval (us); 0 = off (RunOutput.port_rates).
    pub port_rate_interval_us: f64,
    /// Only ports whose link name contains one of these (empty = all switch ports).
    pub port_rate_ports: Vec<String>,
    pub pcap: crate::capture::PcapCfg,
    pub trace: crate::capture::TraceCfg,
}

impl Default for MetricsCfg {
    fn default() -> Self {
        MetricsCfg {
            queue_sample_interval_us: 0.0,
            queue_sample_ports: Vec::new(),
            port_rate_interval_us: 0.0,
            port_rate_ports: Vec::new(),
            pcap: Default::default(),
            trace: Default::default(),
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    LinkDown,
    LinkUp,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventCfg {
    /// When (ms of simulated time).
    pub at_ms: f64,
    pub kind: EventKind,
    /// The link, by its end nodes' names: "S2-A4", "leaf0-spine1".
    pub link: String,
}

/// A custom topology file.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomTopology {
    pub nodes: Vec<CustomNode>,
    pub links: Vec<CustomLink>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomNode {
    pub name: String,
    /// "host" or "switch".
    pub kind: String,
    /// Switch tier: 0 = ToR; higher toward the core. Default 0.
    #[serde(default)]
    pub tier: u8,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomLink {
    pub a: String,
    pub b: String,
    pub gbps: f64,
    #[serde(default = "default_delay")]
    pub delay_us: f64,
}

fn default_delay() -> f64 {
    1.0
}

/// Every `scheme.kind`: the PISA programs, and the hand-written reference ECMP.
pub fn schemes() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = pisanet_schemes::KINDS.to_vec();
    v.push("ecmp_native");
    v
}

fn positive(key: &str, v: f64) -> Result<(), Error> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(Error::input(format!(
            "{key}: must be a positive number, got {v}"
        )))
    }
}

fn non_negative(key: &str, v: f64) -> Result<(), Error> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(Error::input(format!(
            "{key}: must be zero or positive, got {v}"
        )))
    }
}

fn at_least(key: &str, v: u64, min: u64) -> Result<(), Error> {
    if v >= min {
        Ok(())
    } else {
        Err(Error::input(format!(
            "{key}: must be at least {min}, got {v}"
        )))
    }
}

/// The values a string-enum key allows, from the config's JSON Schema
/// (`"a", "b"`), or `None` when `path` ("workload.source_ports") is not one.
fn allowed_values(path: &str) -> Option<String> {
    let schema = serde_json::to_value(schemars::schema_for!(Config)).ok()?;
    let defs = schema.get("definitions");
    // Follows `$ref`s, bare or wrapped in `allOf` (how schemars documents a
    // field whose type is a definition).
    fn resolve<'a>(
        defs: Option<&'a serde_json::Value>,
        mut v: &'a serde_json::Value,
    ) -> Option<&'a serde_json::Value> {
        for _ in 0..8 {
            let r = v
                .get("$ref")
                .or_else(|| v.get("allOf")?.get(0)?.get("$ref"));
            match r.and_then(|r| r.as_str()?.strip_prefix("#/definitions/")) {
                Some(name) => v = defs?.get(name)?,
                None => return Some(v),
            }
        }
        None
    }
    let mut node = resolve(defs, &schema)?;
    for key in path.split('.') {
        // "events[0]": the key, then one array element per index.
        let name = key.split('[').next()?;
        node = resolve(defs, node.get("properties")?.get(name)?)?;
        for _ in 0..key.matches('[').count() {
            node = resolve(defs, node.get("items")?)?;
        }
    }
    let variants = match (node.get("enum"), node.get("oneOf")) {
        (Some(e), _) => e.as_array()?.iter().collect::<Vec<_>>(),
        (None, Some(one_of)) => one_of
            .as_array()?
            .iter()
            .filter_map(|v| v.get("enum")?.as_array()?.first())
            .collect(),
        _ => return None,
    };
    let names: Vec<String> = variants
        .iter()
        .map(|v| v.as_str().map(|s| format!("{s:?}")))
        .collect::<Option<_>>()?;
    (!names.is_empty()).then(|| names.join(", "))
}

impl Config {
    /// Parses TOML text, applying `overrides` (`key.path=value`) first.
    pub fn parse(text: &str, overrides: &[String]) -> Result<Config, Error> {
        let mut value: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            Error::input(format!(
                "config: invalid TOML: {}",
                one_line(&e.to_string())
            ))
        })?;
        for o in overrides {
            apply_override(&mut value, o)?;
        }
        let table = toml::Value::Table(value);
        let cfg: Config = serde_path_to_error::deserialize(table.clone()).map_err(|e| {
            let path = e.path().to_string();
            let inner = one_line(&e.into_inner().to_string());
            let given = path.split('.').try_fold(&table, |v, k| v.get(k));
            if path.is_empty() || path == "." {
                Error::input(format!("config: {inner}"))
            } else if let (true, Some(allowed), Some(given)) = (
                inner.starts_with("invalid type"),
                allowed_values(&path),
                given,
            ) {
                // NOTE: serde's message for a wrong type on a string enum
                // ("invalid type: unit variant, expected string only") does
                // not say what is allowed; the schema does.
                Error::input(format!("{path}: must be one of {allowed}, got {given}"))
            } else {
                Error::input(format!("{path}: {inner}"))
            }
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks every range. The first violation is the error.
    pub fn validate(&self) -> Result<(), Error> {
        positive("run.max_sim_time_ms", self.run.max_sim_time_ms)?;
        let t = &self.topology;
        positive("topology.host_link_gbps", t.host_link_gbps)?;
        positive("topology.fabric_link_gbps", t.fabric_link_gbps)?;
        non_negative("topology.link_delay_us", t.link_delay_us)?;
        positive("topology.buffer_kb", t.buffer_kb)?;
        non_negative("topology.ecn_threshold_kb", t.ecn_threshold_kb)?;
        non_negative("topology.shared_buffer_kb", t.shared_buffer_kb)?;
        positive("topology.shared_buffer_alpha", t.shared_buffer_alpha)?;
        if !(t.link_loss_rate >= 0.0 && t.link_loss_rate < 1.0) {
            return Err(Error::input(format!(
                "topology.link_loss_rate: must be in [0, 1), got {}",
                t.link_loss_rate
            )));
        }
        if !(1..=8).contains(&t.priorities) {
            return Err(Error::input(format!(
                "topology.priorities: must be in 1..=8, got {}",
                t.priorities
            )));
        }
        match t.kind {
            TopologyKind::LeafSpine => {
                at_least("topology.leaves", t.leaves as u64, 1)?;
                at_least("topology.spines", t.spines as u64, 1)?;
                at_least("topology.hosts_per_leaf", t.hosts_per_leaf as u64, 1)?;
                if t.hosts_per_leaf > 250 {
                    return Err(Error::input(format!(
                        "topology.hosts_per_leaf: must be at most 250, got {}",
                        t.hosts_per_leaf
                    )));
                }
                if t.leaves * t.hosts_per_leaf < 2 {
                    return Err(Error::input(
                        "topology: a leaf_spine needs at least 2 hosts in all",
                    ));
                }
            }
            TopologyKind::FatTree => {
                if t.k < 2 || !t.k.is_multiple_of(2) || t.k > 64 {
                    return Err(Error::input(format!(
                        "topology.k: must be even and in 2..=64, got {}",
                        t.k
                    )));
                }
            }
            TopologyKind::Hula3tier => {
                at_least("topology.hosts_per_tor", t.hosts_per_tor as u64, 1)?;
            }
            TopologyKind::Custom => {
                if t.file.is_none() {
                    return Err(Error::input(
                        "topology.file: required when topology.kind = \"custom\"",
                    ));
                }
            }
        }
        let tr = &self.transport;
        positive("transport.min_rto_us", tr.min_rto_us)?;
        positive("transport.max_rto_us", tr.max_rto_us)?;
        positive("transport.initial_rto_us", tr.initial_rto_us)?;
        if tr.max_rto_us < tr.min_rto_us {
            return Err(Error::input(format!(
                "transport.max_rto_us: must be at least transport.min_rto_us ({}), got {}",
                tr.min_rto_us, tr.max_rto_us
            )));
        }
        if !(64..=9000).contains(&tr.mss) {
            return Err(Error::input(format!(
                "transport.mss: must be in 64..=9000, got {}",
                tr.mss
            )));
        }
        at_least("transport.init_cwnd", tr.init_cwnd as u64, 1)?;
        positive("transport.delayed_ack_us", tr.delayed_ack_us)?;
        positive("transport.rwnd_kb", tr.rwnd_kb)?;
        if tr.rwnd_kb * 1000.0 > u32::MAX as f64 {
            return Err(Error::input(format!(
                "transport.rwnd_kb: must be at most 4294967, got {}",
                tr.rwnd_kb
            )));
        }
        if tr.dctcp_g_shift > 16 {
            return Err(Error::input(format!(
                "transport.dctcp_g_shift: must be in 0..=16, got {}",
                tr.dctcp_g_shift
            )));
        }
        positive("transport.udp_rate_gbps", tr.udp_rate_gbps)?;
        non_negative("transport.tsq_kb", tr.tsq_kb)?;
        let w = &self.workload;
        if !(w.load > 0.0 && w.load < 1.0) {
            return Err(Error::input(format!(
                "workload.load: must be in (0, 1), got {}",
                w.load
            )));
        }
        at_least("workload.flows", w.flows, 1)?;
        non_negative("workload.start_us", w.start_us)?;
        if w.pattern == PatternKind::Incast {
            at_least("workload.incast_senders", w.incast_senders as u64, 1)?;
        }
        if w.pattern == PatternKind::ClientServer {
            at_least("workload.connections", w.connections as u64, 1)?;
        }
        if w.pattern == PatternKind::File && w.file.is_none() {
            return Err(Error::input(
                "workload.file: required when workload.pattern = \"file\"",
            ));
        }
        if let Some(th) = w.short_threshold_bytes {
            at_least("workload.short_threshold_bytes", th, 1)?;
        }
        if !schemes().contains(&self.scheme.kind.as_str()) {
            return Err(Error::input(format!(
                "scheme.kind: must be one of {}, got {:?}",
                schemes().join(", "),
                self.scheme.kind
            )));
        }
        positive("scheme.flowlet_timeout_us", self.scheme.flowlet_timeout_us)?;
        let h = &self.scheme.hula;
        positive("scheme.hula.probe_interval_us", h.probe_interval_us)?;
        let (keepalive, tau, suppress) = h.resolved();
        positive("scheme.hula.keepalive_us", keepalive)?;
        positive("scheme.hula.tau_us", tau)?;
        positive("scheme.hula.suppress_us", suppress)?;
        if tau < 2.0 * h.probe_interval_us {
            return Err(Error::input(format!(
                "scheme.hula.tau_us: must be at least 2 x scheme.hula.probe_interval_us ({}) (HULA section 4.2), got {tau}",
                2.0 * h.probe_interval_us
            )));
        }
        if keepalive <= h.probe_interval_us {
            return Err(Error::input(format!(
                "scheme.hula.keepalive_us: must exceed scheme.hula.probe_interval_us ({}), got {keepalive}",
                h.probe_interval_us
            )));
        }
        if suppress > h.probe_interval_us {
            return Err(Error::input(format!(
                "scheme.hula.suppress_us: must be at most scheme.hula.probe_interval_us ({}), got {suppress}",
                h.probe_interval_us
            )));
        }
        if keepalive >= 4.0e6 || tau >= 4.0e6 {
            return Err(Error::input(
                "scheme.hula.keepalive_us, tau_us: must be below 4 s (32-bit ns timestamps)",
            ));
        }
        if !(1..=65536).contains(&h.tor_slots) {
            return Err(Error::input(format!(
                "scheme.hula.tor_slots: must be in 1..=65536, got {}",
                h.tor_slots
            )));
        }
        let c = &self.scheme.conga;
        positive("scheme.conga.tau_us", c.tau_us)?;
        positive("scheme.conga.age_us", c.age_us)?;
        if c.age_us >= 4.0e6 {
            return Err(Error::input(format!(
                "scheme.conga.age_us: must be below 4e6 (32-bit ns timestamps), got {}",
                c.age_us
            )));
        }
        if !(1..=65536).contains(&c.leaf_slots) {
            return Err(Error::input(format!(
                "scheme.conga.leaf_slots: must be in 1..=65536, got {}",
                c.leaf_slots
            )));
        }
        let p = &self.scheme.p4te;
        positive("scheme.p4te.flowlet_interval_us", p.flowlet_interval_us)?;
        positive("scheme.p4te.util_burst_window_us", p.util_burst_window_us)?;
        positive("scheme.p4te.class_burst_window_us", p.class_burst_window_us)?;
        positive(
            "scheme.p4te.rate_control_window_kb",
            p.rate_control_window_kb,
        )?;
        at_least("scheme.p4te.delta_pkts", p.delta_pkts as u64, 1)?;
        if !(1..=64).contains(&p.queue_groups) {
            return Err(Error::input(format!(
                "scheme.p4te.queue_groups: must be in 1..=64, got {}",
                p.queue_groups
            )));
        }
        if p.util_cir_pct == 0 || p.util_cir_pct > p.util_pir_pct || p.util_pir_pct > 100 {
            return Err(Error::input(format!(
                "scheme.p4te.util_cir_pct, util_pir_pct: need 0 < cir <= pir <= 100, got {} and {}",
                p.util_cir_pct, p.util_pir_pct
            )));
        }
        for (key, v) in [
            ("scheme.p4te.util_burst_pct", p.util_burst_pct),
            ("scheme.p4te.short_safe_pct", p.short_safe_pct),
            ("scheme.p4te.large_safe_pct", p.large_safe_pct),
        ] {
            if !(1..=100).contains(&v) {
                return Err(Error::input(format!("{key}: must be in 1..=100, got {v}")));
            }
        }
        if p.flowlet_interval_us >= 2.8e8 {
            return Err(Error::input(format!("scheme.p4te.flowlet_interval_us: must be below 2.8e8 (48-bit ps timestamps), got {}", p.flowlet_interval_us)));
        }
        if p.rate_control_window_kb * 1000.0 >= 2.0e9 {
            return Err(Error::input(format!(
                "scheme.p4te.rate_control_window_kb: must be below 2e6, got {}",
                p.rate_control_window_kb
            )));
        }
        if !p.flow_slots.is_power_of_two() || p.flow_slots > 1 << 24 {
            return Err(Error::input(format!(
                "scheme.p4te.flow_slots: must be a power of two in 1..=16777216, got {}",
                p.flow_slots
            )));
        }
        non_negative(
            "control_plane.to_cpu_latency_us",
            self.control_plane.to_cpu_latency_us,
        )?;
        non_negative(
            "control_plane.write_latency_us",
            self.control_plane.write_latency_us,
        )?;
        non_negative(
            "control_plane.write_interval_us",
            self.control_plane.write_interval_us,
        )?;
        non_negative(
            "metrics.queue_sample_interval_us",
            self.metrics.queue_sample_interval_us,
        )?;
        non_negative(
            "metrics.port_rate_interval_us",
            self.metrics.port_rate_interval_us,
        )?;
        for (i, e) in self.events.iter().enumerate() {
            non_negative(&format!("events[{i}].at_ms"), e.at_ms)?;
            if e.link.split_once('-').is_none() {
                return Err(Error::input(format!(
                    "events[{i}].link: must name two nodes as \"A-B\", got {:?}",
                    e.link
                )));
            }
        }
        Ok(())
    }

    /// The resolved config as TOML (every default filled in).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render config: {e}\n"))
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Applies `a.b.c=value`: the value is parsed as a TOML value, or taken as a
/// string when it does not parse (so `scheme.kind=ecmp` works unquoted).
fn apply_override(root: &mut toml::Table, o: &str) -> Result<(), Error> {
    let (key, raw) = o
        .split_once('=')
        .ok_or_else(|| Error::input(format!("--set {o:?}: must be key.path=value")))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(|p| p.is_empty()) {
        return Err(Error::input(format!("--set {o:?}: must be key.path=value")));
    }
    let raw = raw.trim();
    let value = format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()));
    let parts: Vec<&str> = key.split('.').collect();
    let mut table = root;
    for p in &parts[..parts.len() - 1] {
        let entry = table
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        table = entry
            .as_table_mut()
            .ok_or_else(|| Error::input(format!("--set {o:?}: {p} is not a table")))?;
    }
    table.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTRACT: &str = r#"
[run]
seed = 1
max_sim_time_ms = 1000
[topology]
kind = "leaf_spine"
leaves = 4
spines = 4
hosts_per_leaf = 4
host_link_gbps = 10.0
fabric_link_gbps = 10.0
link_delay_us = 1.0
buffer_kb = 200
ecn_threshold_kb = 65
[transport]
kind = "dctcp"
min_rto_us = 1000
[workload]
cdf = "websearch"
load = 0.6
flows = 2000
pattern = "uniform"
[scheme]
kind = "ecmp"
"#;

    #[test]
    fn the_contract_config_parses() {
        let c = Config::parse(CONTRACT, &[]).unwrap();
        assert_eq!(c.topology.leaves, 4);
        assert_eq!(c.workload.flows, 2000);
        // The resolved config round-trips.
        let again = Config::parse(&c.to_toml(), &[]).unwrap();
        assert_eq!(again.to_toml(), c.to_toml());
    }

    fn err(text: &str, overrides: &[&str]) -> String {
        let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        Config::parse(text, &o).unwrap_err().message
    }

    #[test]
    fn errors_name_the_key_and_the_range() {
        assert_eq!(
            err(CONTRACT, &["workload.load=1.2"]),
            "workload.load: must be in (0, 1), got 1.2"
        );
        assert_eq!(
            err(CONTRACT, &["topology.kind=fat_tree", "topology.k=5"]),
            "topology.k: must be even and in 2..=64, got 5"
        );
        assert_eq!(
            err(CONTRACT, &["topology.host_link_gbps=-1"]),
            "topology.host_link_gbps: must be a positive number, got -1"
        );
        let e = err(CONTRACT, &["topology.levaes=3"]);
        assert!(e.starts_with("topology") && e.contains("levaes"), "{e}");
        let e = err(CONTRACT, &["workload.flows=\"many\""]);
        assert!(e.starts_with("workload.flows:"), "{e}");
        let e = err(CONTRACT, &["scheme.kind=magic"]);
        assert!(e.starts_with("scheme.kind: must be one of"), "{e}");
        assert!(err("[run\n", &[]).starts_with("config: invalid TOML"));
        assert!(err(CONTRACT, &["nonsense"]).contains("key.path=value"));
        for e in [err(CONTRACT, &["topology.levaes=3"]), err("[run\n", &[])] {
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn hula_and_conga_keys_are_checked() {
        let c = Config::parse(CONTRACT, &["scheme.hula.probe_interval_us=100".into()]).unwrap();
        // Defaults follow the probe interval: keepalive 3x, tau 2x, suppression 3/4.
        assert_eq!(c.scheme.hula.resolved(), (300.0, 200.0, 75.0));
        assert_eq!(
            err(CONTRACT, &["scheme.hula.tau_us=300"]),
            "scheme.hula.tau_us: must be at least 2 x scheme.hula.probe_interval_us (400) (HULA section 4.2), got 300"
        );
        assert!(
            err(CONTRACT, &["scheme.hula.suppress_us=500"]).starts_with("scheme.hula.suppress_us:")
        );
        assert!(err(CONTRACT, &["scheme.hula.keepalive_us=100"])
            .starts_with("scheme.hula.keepalive_us:"));
        assert!(err(CONTRACT, &["scheme.conga.age_us=0"]).starts_with("scheme.conga.age_us:"));
        assert!(err(CONTRACT, &["scheme.hula.probes=3"]).contains("probes"));
        let c = Config::parse(
            CONTRACT,
            &[
                "workload.pattern=client_server".into(),
                "workload.connections=2".into(),
            ],
        )
        .unwrap();
        assert_eq!(c.workload.connections, 2);
        assert_eq!(
            c.workload.client_server_assignment,
            ServerAssignmentKind::Permutation
        );
        let c = Config::parse(
            CONTRACT,
            &["workload.client_server_assignment=random".into()],
        )
        .unwrap();
        assert_eq!(
            c.workload.client_server_assignment,
            ServerAssignmentKind::Random
        );
        assert_eq!(c.scheme.flowlet_id, FlowletIdKind::Random);
        assert_eq!(c.workload.source_ports, SourcePortsKind::Sequential);
        let c = Config::parse(CONTRACT, &["workload.source_ports=random".into()]).unwrap();
        assert_eq!(c.workload.source_ports, SourcePortsKind::Random);
        let e = err(CONTRACT, &["workload.source_ports=ephemeral"]);
        assert!(e.contains("workload.source_ports"), "{e}");
        // A value of the wrong type on a string enum names what is allowed.
        let e = err(CONTRACT, &["workload.source_ports=3"]);
        assert_eq!(
            e,
            "workload.source_ports: must be one of \"sequential\", \"random\", got 3"
        );
        let e = err(CONTRACT, &["transport.kind=true"]);
        assert!(
            e.starts_with("transport.kind: must be one of \"newreno\""),
            "{e}"
        );
        assert_eq!(
            allowed_values("events[0].kind").as_deref(),
            Some("\"link_down\", \"link_up\"")
        );
        assert_eq!(allowed_values("workload.load"), None);
        assert_eq!(allowed_values("workload.nothing"), None);
        let c = Config::parse(CONTRACT, &["scheme.flowlet_id=increment".into()]).unwrap();
        assert_eq!(c.scheme.flowlet_id, FlowletIdKind::Increment);
        let e = err(CONTRACT, &["scheme.flowlet_id=hash"]);
        assert!(
            e.contains("scheme.flowlet_id") && e.contains("increment"),
            "{e}"
        );
        assert!(err(CONTRACT, &["workload.client_server_assignment=greedy"])
            .contains("client_server_assignment"));
        assert!(err(
            CONTRACT,
            &["workload.pattern=client_server", "workload.connections=0"]
        )
        .starts_with("workload.connections:"));
    }

    #[test]
    fn overrides_parse_values() {
        let c = Config::parse(CONTRACT, &["run.seed=7".into(), "scheme.kind=rps".into()]).unwrap();
        assert_eq!(c.run.seed, 7);
        assert_eq!(c.scheme.kind, "rps");
    }
}
