//! The run configuration: TOML, parsed and validated once.
//!
//! Every parameter is declared once, next to the model that reads it (the
//! schemes' own parameters live in their files in pisanet-schemes, the
//! topology's in pisanet-net, the transport's in pisanet-transport, the
//! workload's in pisanet-workload; this module composes them), with its
//! default, its unit (`x-unit`), its range (`range`) and, for a key only
//! some settings read, when it applies (`x-applies-when`), as attributes. One generic check enforces the ranges
//! and refuses unread keys from the JSON Schema generated from these types
//! (`pisanet schema` prints it); [`Config::validate`] holds only the rules
//! between keys. Errors name the key path as the user wrote it and what is
//! allowed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::Error;

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Keys the user gave that this config does not read (filled by
    /// [`Config::parse`]; only non-empty with `run.unused_keys = "ignore"`).
    #[serde(skip)]
    pub unused: Vec<String>,
    pub run: RunCfg,
    pub topology: TopologyCfg,
    pub transport: TransportCfg,
    pub workload: WorkloadCfg,
    pub scheme: SchemeCfg,
    pub control_plane: ControlPlaneCfg,
    /// Each switch's own clock (default: ideal clocks).
    pub clock: ClockCfg,
    pub metrics: MetricsCfg,
    /// Scheduled link failures and recoveries.
    pub events: Vec<EventCfg>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RunCfg {
    /// Master seed; every component's random stream derives from it.
    pub seed: u64,
    /// Keys given that this config does not read (a key of another
    /// `topology.kind`, `scheme.kind`, `workload.pattern`, ...): "refuse"
    /// (default: the run does not start, and the message says when the key
    /// applies) or "ignore" (they are listed in summary.json's
    /// `unused_keys`; sweeps use this for points of a cross product where a
    /// key applies to other points only).
    pub unused_keys: UnusedKeys,
    /// Stop after this much simulated time (ms) even if flows remain.
    #[schemars(range(min = 0.000001, max = 1e8), extend("x-unit" = "ms"))]
    pub max_sim_time_ms: f64,
    /// Memory budget (MB): a run whose estimate (ports, switches, hosts,
    /// flow records, samples; docs/performance.md "Scaling") exceeds it is
    /// refused before anything is allocated. 0 = no budget of its own: the
    /// machine's available memory (and `ulimit -v`, and the
    /// `PISANET_MEMORY_LIMIT_MB` environment variable) still bound it.
    #[schemars(range(min = 0, max = 1e9), extend("x-unit" = "MB"))]
    pub max_memory_mb: f64,
    /// Parallel mode (docs/architecture.md, "Parallel mode"): worker
    /// threads over the topology's partitions (a fat tree's pods, a
    /// leaf-spine's groups of leaves, groups of racks of a hula3tier or
    /// custom topology with `topology.partitioned`), which advance in
    /// windows of the smallest delay of a link between partitions. Unset
    /// (default): one thread. Set, 1 included: the partitioned run, whose
    /// results are the unset run's (same digest, flows, samples and
    /// summary) at every number of threads. UDP and rate-based flows and
    /// random link loss with the one shared stream are refused, each with
    /// why.
    #[schemars(range(min = 1, max = 1024), extend("x-unit" = "threads"))]
    pub threads: Option<u32>,
}

impl Default for RunCfg {
    fn default() -> Self {
        RunCfg {
            seed: 1,
            unused_keys: UnusedKeys::Refuse,
            max_sim_time_ms: 1000.0,
            max_memory_mb: 0.0,
            threads: None,
        }
    }
}

/// `run.unused_keys`: what a key the config does not read gets.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum UnusedKeys {
    /// An error naming the key and when it applies.
    #[default]
    Refuse,
    /// Listed in summary.json (`unused_keys`), otherwise ignored.
    Ignore,
}

// The fabric's parameters (`[topology]`, with `topology.pfc`) and the
// custom-topology file format are declared with the model that reads them,
// in pisanet-net (docs/architecture.md, "Parameters: declared once").
pub use pisanet_net::params::{
    CustomLink, CustomNode, CustomTopology, TopologyKind, TopologyParams as TopologyCfg,
};

// The transport's parameters (`[transport]`) are declared with the model
// that reads them, in pisanet-transport (docs/architecture.md, "Parameters:
// declared once").
pub use pisanet_transport::params::{
    ReactionPointKind, TransportKind, TransportParams as TransportCfg, TransportProfile,
};

// The workload's parameters (`[workload]`, `[[workload.groups]]`) are
// declared with the model that reads them, in pisanet-workload
// (docs/architecture.md, "Parameters: declared once"). The rules a group has
// with other tables stay here ([`validate_group`]): its `cc` must be one of
// [`CC_NAMES`] (which names the transport crate's congestion controls; the
// workload crate sees neither), its priority below `topology.priorities`,
// a deadline needs `metrics.flow_stats`.
pub use pisanet_workload::params::{
    FlowTransport, GroupParams as GroupCfg, PatternKind, ServerAssignmentKind, SourcePortsKind,
    WorkloadParams as WorkloadCfg,
};

/// The names `cc` takes (flow rows, flow groups), with their transports
/// (each built by run.rs `cc_choice`).
pub const CC_NAMES: &[(&str, pisanet_workload::Transport)] = &[
    ("newreno", pisanet_workload::Transport::Tcp),
    ("dctcp", pisanet_workload::Transport::Tcp),
    ("cubic", pisanet_workload::Transport::Tcp),
    ("fixed", pisanet_workload::Transport::Udp),
    ("halve", pisanet_workload::Transport::Udp),
    ("qcn", pisanet_workload::Transport::Udp),
    ("qcn_cnp", pisanet_workload::Transport::Udp),
    ("dcqcn", pisanet_workload::Transport::Udp),
];

/// Why a TCP flow may not have a rate cap or a duration: `None`, both are
/// supported (the sender's application token bucket, `TcpSender::close`).
pub const TCP_LIMITS_REFUSED: Option<&str> = None;

/// Why a deadline is refused without per-flow statistics.
pub const DEADLINE_NEEDS_FLOW_STATS: &str =
    "needs metrics.flow_stats = true (deadline misses are measured by the per-flow statistics)";

/// The transport of group `g`'s flows that name none: the group's, else
/// its `cc`'s, else the config's.
pub fn group_transport(g: &GroupCfg, cfg: &Config) -> pisanet_workload::Transport {
    use pisanet_workload::Transport;
    match g.transport {
        Some(t) => t.into(),
        None => {
            g.cc.as_deref()
                .and_then(|c| CC_NAMES.iter().find(|(n, _)| *n == c))
                .map(|(_, t)| *t)
                .unwrap_or(if cfg.transport.kind == TransportKind::Udp {
                    Transport::Udp
                } else {
                    Transport::Tcp
                })
        }
    }
}

/// The rules of group `k` (`g`): its own keys' ([`GroupCfg::check`]), then
/// those with the other tables.
fn validate_group(g: &GroupCfg, k: usize, cfg: &Config) -> Result<(), Error> {
    let key = |name: &str| format!("workload.groups[{k}].{name}");
    g.check(k).map_err(Error::input)?;
    let transport = group_transport(g, cfg);
    if let Some(cc) = &g.cc {
        let Some((_, t)) = CC_NAMES.iter().find(|(n, _)| n == cc) else {
            let names: Vec<String> = CC_NAMES.iter().map(|(n, _)| format!("{n:?}")).collect();
            return Err(Error::input(format!(
                "{}: must be one of {}, got {cc:?}",
                key("cc"),
                names.join(", ")
            )));
        };
        if *t != transport {
            return Err(Error::input(format!(
                "{}: {cc:?} is for transport {:?}, but the group's transport is {:?}",
                key("cc"),
                t.name(),
                transport.name()
            )));
        }
    }
    if let Some(p) = g.priority {
        if p >= cfg.topology.priorities {
            return Err(Error::input(format!(
                "{}: must be below topology.priorities = {} (the ports' priority queues), got {p}",
                key("priority"),
                cfg.topology.priorities
            )));
        }
    }
    if g.deadline_us.is_some() && !cfg.metrics.flow_stats {
        return Err(Error::input(format!(
            "{}: {DEADLINE_NEEDS_FLOW_STATS}",
            key("deadline_us")
        )));
    }
    if transport == pisanet_workload::Transport::Tcp {
        if let Some(why) = TCP_LIMITS_REFUSED {
            for (given, name) in [
                (g.rate_gbps.is_some(), "rate_gbps"),
                (g.duration_us.is_some(), "duration_us"),
            ] {
                if given {
                    return Err(Error::input(format!("{}: {why}", key(name))));
                }
            }
        }
    }
    Ok(())
}

/// The `[scheme]` table: declared with the programs (pisanet-schemes), each
/// scheme's parameters in its own file.
pub use pisanet_schemes::{FlowletId as FlowletIdKind, SchemeKind, SchemeParams as SchemeCfg};

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ControlPlaneCfg {
    /// Latency of a packet or digest from the data plane to the switch CPU (us).
    #[schemars(range(min = 0, max = 10000000), extend("x-unit" = "us"))]
    pub to_cpu_latency_us: f64,
    /// Latency of one table/register/meter write taking effect (us).
    #[schemars(range(min = 0, max = 10000000), extend("x-unit" = "us"))]
    pub write_latency_us: f64,
    /// Writes apply one at a time, at least this far apart (us): updates are not atomic across entries.
    #[schemars(range(min = 0, max = 10000000), extend("x-unit" = "us"))]
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

/// `[clock]`: every switch has its own clock, and every timestamp its
/// program reads is that clock's reading (pisanet-pisa `Clock`; P4QoS
/// section II.A). Each switch draws its offset uniformly from
/// [0, offset_max_us] and its drift uniformly from [-drift_max_ppm,
/// drift_max_ppm] from the run's seed (its own random stream). The default
/// is ideal clocks: readings are the true time.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ClockCfg {
    /// Largest offset of a switch clock from true time (us; 0 = none).
    #[schemars(range(min = 0, max = 1e9), extend("x-unit" = "us"))]
    pub offset_max_us: f64,
    /// Largest frequency error of a switch clock (ppm; 0 = none).
    #[schemars(range(min = 0, max = 1000), extend("x-unit" = "ppm"))]
    pub drift_max_ppm: f64,
    /// Tick of the clocks (ns): 1 as Tofino, 1000 as bmv2; 0 = exact (ps).
    #[schemars(range(min = 0, max = 1000000), extend("x-unit" = "ns"))]
    pub resolution_ns: u64,
}

impl Default for ClockCfg {
    fn default() -> Self {
        ClockCfg {
            offset_max_us: 0.0,
            drift_max_ppm: 0.0,
            resolution_ns: 0,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsCfg {
    /// Sample every switch port's queue depth at this interval (us); 0 = off.
    #[schemars(range(min = 0, max = 100000000), extend("x-unit" = "us"))]
    pub queue_sample_interval_us: f64,
    /// Only sample ports whose link name contains one of these (empty = all switch ports).
    #[schemars(extend("x-applies-when" = {"key": "metrics.queue_sample_interval_us", "nonzero": true}))]
    pub queue_sample_ports: Vec<String>,
    /// Sample the transmit rate of switch ports at this interval (us); 0 = off (RunOutput.port_rates).
    #[schemars(range(min = 0, max = 100000000), extend("x-unit" = "us"))]
    pub port_rate_interval_us: f64,
    /// Only ports whose link name contains one of these (empty = all switch ports).
    #[schemars(extend("x-applies-when" = {"key": "metrics.port_rate_interval_us", "nonzero": true}))]
    pub port_rate_ports: Vec<String>,
    pub pcap: crate::capture::PcapCfg,
    pub trace: crate::capture::TraceCfg,
    /// Per-flow statistics: one-way delay of delivered data packets (mean,
    /// p50, p99, max), TCP RTT samples (mean, p99) and deadline misses, as
    /// columns of flows.parquet and aggregates in summary.json. Costs per
    /// packet; default false (docs/metrics.md, "Per-flow measurement").
    pub flow_stats: bool,
    /// Per-flow goodput series: payload bytes delivered to each receiving
    /// application per interval (us), into goodput.parquet; 0 = off (default).
    #[schemars(range(min = 0, max = 100000000), extend("x-unit" = "us"))]
    pub goodput_interval_us: f64,
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
            flow_stats: false,
            goodput_interval_us: 0.0,
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
    #[schemars(range(min = 0, max = 100000000), extend("x-unit" = "ms"))]
    pub at_ms: f64,
    pub kind: EventKind,
    /// The link, by its end nodes' names: "S2-A4", "leaf0-spine1".
    pub link: String,
}

/// Every `scheme.kind`, in registry order.
pub fn schemes() -> Vec<&'static str> {
    pisanet_schemes::REGISTRY.iter().map(|r| r.name).collect()
}

/// The config's JSON Schema, with each `[scheme]` key's readers (from the
/// registry) as `x-applies-when`, so `pisanet schema` shows them.
pub fn schema_value() -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(Config)).unwrap_or_default();
    if let Some(props) = schema
        .pointer_mut("/$defs/SchemeParams/properties")
        .and_then(|p| p.as_object_mut())
    {
        for (key, node) in props.iter_mut() {
            if key == "kind" {
                continue;
            }
            if let Some(obj) = node.as_object_mut() {
                obj.insert(
                    "x-applies-when".into(),
                    serde_json::json!({"key": "scheme.kind", "in": SchemeKind::readers(key)}),
                );
            }
        }
    }
    schema
}

/// Follows `$ref`s, bare or wrapped in `allOf`, to the node they name.
fn resolve_ref<'a>(
    root: &'a serde_json::Value,
    mut v: &'a serde_json::Value,
) -> &'a serde_json::Value {
    for _ in 0..8 {
        let r = v
            .get("$ref")
            .or_else(|| v.get("allOf").and_then(|a| a.get(0)?.get("$ref")));
        match r
            .and_then(|r| r.as_str())
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .and_then(|name| root.get("$defs")?.get(name))
        {
            Some(next) => v = next,
            None => return v,
        }
    }
    v
}

/// The schema node of `path` ("transport.kind", "events[0].at_ms").
fn schema_node<'a>(root: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    let mut node = resolve_ref(root, root);
    for key in path.split('.') {
        let name = key.split('[').next()?;
        node = resolve_ref(root, node.get("properties")?.get(name)?);
        for _ in 0..key.matches('[').count() {
            node = resolve_ref(root, node.get("items")?);
        }
    }
    Some(node)
}

/// The attribute `attr` of the key `path`: on the property itself (where a
/// field's own `extend(...)` puts it, beside the `$ref` of its type) or else
/// on its type's definition.
fn schema_attr<'a>(
    root: &'a serde_json::Value,
    path: &str,
    attr: &str,
) -> Option<&'a serde_json::Value> {
    let mut node = resolve_ref(root, root);
    let mut raw = node;
    for key in path.split('.') {
        let name = key.split('[').next()?;
        raw = node.get("properties")?.get(name)?;
        node = resolve_ref(root, raw);
        for _ in 0..key.matches('[').count() {
            raw = node.get("items")?;
            node = resolve_ref(root, raw);
        }
    }
    raw.get(attr).or_else(|| node.get(attr))
}

/// The values a string-enum key allows, from the config's JSON Schema
/// (`"a", "b"`), or `None` when `path` ("workload.source_ports") is not one.
fn allowed_values(path: &str) -> Option<String> {
    let schema = schema_value();
    let node = schema_node(&schema, path)?;
    let variants = match (node.get("enum"), node.get("oneOf")) {
        (Some(e), _) => e.as_array()?.iter().collect::<Vec<_>>(),
        (None, Some(one_of)) => one_of
            .as_array()?
            .iter()
            .filter_map(|v| {
                v.get("enum")
                    .and_then(|e| e.as_array()?.first())
                    .or_else(|| v.get("const"))
            })
            .collect(),
        _ => return None,
    };
    let names: Vec<String> = variants
        .iter()
        .map(|v| v.as_str().map(|s| format!("{s:?}")))
        .collect::<Option<_>>()?;
    (!names.is_empty()).then(|| names.join(", "))
}

/// A number as the user would write it (`10`, `0.5`, `1e-300`).
fn show(v: f64) -> String {
    if v.is_finite() && v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:?}")
    }
}

/// The largest value an integer format holds.
fn format_max(node: &serde_json::Value) -> Option<f64> {
    Some(match node.get("format")?.as_str()? {
        "uint8" => u8::MAX as f64,
        "uint16" => u16::MAX as f64,
        "uint32" => u32::MAX as f64,
        "uint64" | "uint" => u64::MAX as f64,
        _ => return None,
    })
}

/// One rule for every number: the range its declaration gives (`range`,
/// `exclusiveMinimum`, the integer type's own bounds), checked on what the
/// user wrote, before anything is built from it. The message names the key
/// as written, the range and its unit.
fn check_range(path: &str, node: &serde_json::Value, value: &toml::Value) -> Result<(), Error> {
    let v = match value {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        _ => return Ok(()),
    };
    let num = |k: &str| node.get(k).and_then(|x| x.as_f64());
    let (min, max) = (num("minimum"), num("maximum").or_else(|| format_max(node)));
    let (xmin, xmax) = (num("exclusiveMinimum"), num("exclusiveMaximum"));
    if min.is_none() && max.is_none() && xmin.is_none() && xmax.is_none() {
        return Ok(());
    }
    let unit = node
        .get("x-unit")
        .and_then(|u| u.as_str())
        .map(|u| format!(" {u}"))
        .unwrap_or_default();
    let lo = match (min, xmin) {
        (Some(m), _) => format!("[{}", show(m)),
        (None, Some(m)) => format!("({}", show(m)),
        (None, None) => "(-inf".into(),
    };
    let hi = match (max, xmax) {
        (Some(m), _) => format!("{}]", show(m)),
        (None, Some(m)) => format!("{})", show(m)),
        (None, None) => "inf)".into(),
    };
    let ok = v.is_finite()
        && min.is_none_or(|m| v >= m)
        && max.is_none_or(|m| v <= m)
        && xmin.is_none_or(|m| v > m)
        && xmax.is_none_or(|m| v < m);
    if ok {
        Ok(())
    } else {
        Err(Error::input(format!(
            "{path}: must be in {lo}, {hi}{unit}, got {}",
            show(v)
        )))
    }
}

/// Whether the schema node is an integer key.
fn is_integer(node: &serde_json::Value) -> bool {
    match node.get("type") {
        Some(serde_json::Value::String(t)) => t == "integer",
        Some(serde_json::Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
        _ => false,
    }
}

/// Walks the keys the user gave and checks each number against its range.
/// An integral float on an integer key (`flows = 1e6`) is taken as the
/// integer once it is in range.
fn check_ranges(
    schema: &serde_json::Value,
    prefix: &str,
    table: &mut toml::Table,
) -> Result<(), Error> {
    for (k, v) in table.iter_mut() {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let Some(node) = schema_node(schema, &path) else {
            continue; // an unknown key: serde names it
        };
        match v {
            toml::Value::Table(t) => check_ranges(schema, &path, t)?,
            toml::Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let p = format!("{path}[{i}]");
                    match item {
                        toml::Value::Table(t) => check_ranges(schema, &p, t)?,
                        other => {
                            if let Some(n) = node.get("items") {
                                check_range(&p, resolve_ref(schema, n), other)?;
                            }
                        }
                    }
                }
            }
            other => {
                check_range(&path, node, other)?;
                if let toml::Value::Float(f) = other {
                    if is_integer(node) && *f == f.trunc() && f.abs() < 9.0e15 {
                        *other = toml::Value::Integer(*f as i64);
                    }
                }
            }
        }
    }
    Ok(())
}

/// The keys the user gave, as paths ("topology.file", "scheme.hula"):
/// tables of the config are descended, a scheme's sub-table is one key,
/// array elements are not (an `[[events]]` entry is read whole).
fn given_keys(prefix: &str, table: &toml::Table, out: &mut Vec<String>) {
    for (k, v) in table {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => given_keys(&path, t, out),
            _ => out.push(path),
        }
    }
}

/// When the key `path` is read: `Some(condition)` if it is not read with
/// this config, `None` if it is.
fn unread(schema: &serde_json::Value, resolved: &serde_json::Value, path: &str) -> Option<String> {
    let cond = schema_attr(schema, path, "x-applies-when")?;
    let key = cond.get("key")?.as_str()?;
    let actual = key
        .split('.')
        .try_fold(resolved, |v, k| v.get(k))
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    let list =
        |name: &str| -> Option<Vec<serde_json::Value>> { cond.get(name)?.as_array().cloned() };
    let fmt = |vals: &[serde_json::Value]| -> String {
        vals.iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(" or ")
    };
    if let Some(vals) = list("in") {
        (!vals.contains(&actual)).then(|| format!("{key} = {} (here {actual})", fmt(&vals)))
    } else if let Some(vals) = list("not_in") {
        vals.contains(&actual)
            .then(|| format!("{key} is not {} (here {actual})", fmt(&vals)))
    } else if cond.get("nonzero").is_some() {
        (actual.as_f64() == Some(0.0)).then(|| format!("{key} > 0 (here 0)"))
    } else {
        None
    }
}

/// Smallest wire packet a host sends: a full segment with its headers.
pub fn full_packet_bytes(mss: u32) -> u64 {
    use pisanet_net::packet::{ETH_BYTES, IPV4_BYTES, TCP_BYTES};
    mss as u64 + (ETH_BYTES + IPV4_BYTES + TCP_BYTES) as u64
}

impl Config {
    /// Parses TOML text, applying `overrides` (`key.path=value`) first, and
    /// checks it: every number against its declared range, every key given
    /// read by this config (or refused, saying when it applies), then the
    /// rules between keys ([`Config::validate`]).
    pub fn parse(text: &str, overrides: &[String]) -> Result<Config, Error> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut value: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            Error::input(format!(
                "config: invalid TOML: {}",
                one_line(&e.to_string())
            ))
        })?;
        for o in overrides {
            apply_override(&mut value, o)?;
        }
        let schema = schema_value();
        check_ranges(&schema, "", &mut value)?;
        let table = toml::Value::Table(value);
        let mut cfg: Config = serde_path_to_error::deserialize(table.clone()).map_err(|e| {
            let path = e.path().to_string();
            let inner = one_line(&e.into_inner().to_string());
            let inner = match inner.rfind(" in `") {
                Some(i) if inner.ends_with('`') => inner[..i].to_string(),
                _ => inner,
            };
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
        // transport.profile's values, where the config gives none.
        let transport = table.get("transport").and_then(|t| t.as_table());
        cfg.transport
            .apply_profile(|key| transport.is_some_and(|t| t.contains_key(key)));
        // Every key given is read, or refused with when it applies.
        let resolved = serde_json::to_value(&cfg).unwrap_or_default();
        let mut keys = Vec::new();
        if let toml::Value::Table(t) = &table {
            given_keys("", t, &mut keys);
        }
        for key in keys {
            // A `[scheme]` key (or its sub-table, e.g. `scheme.hula`) is read
            // when the registry row of scheme.kind says so; then a key inside
            // the sub-table may still apply only with some settings of it.
            let scheme_key = key
                .strip_prefix("scheme.")
                .map(|s| s.split('.').next().unwrap_or(s));
            let why = if let Some(sub) = scheme_key.filter(|sub| !cfg.scheme.kind.reads(sub)) {
                let readers = SchemeKind::readers(sub);
                Some(format!(
                    "scheme.kind = {} (here {:?})",
                    readers
                        .iter()
                        .map(|r| format!("{r:?}"))
                        .collect::<Vec<_>>()
                        .join(" or "),
                    cfg.scheme.kind.name()
                ))
            } else {
                unread(&schema, &resolved, &key)
            };
            if let Some(when) = why {
                if cfg.run.unused_keys == UnusedKeys::Refuse {
                    return Err(Error::input(format!(
                        "{key}: is read only when {when}; remove it, or set run.unused_keys = \"ignore\""
                    )));
                }
                cfg.unused.push(key);
            }
        }
        cfg.validate()?;
        Ok(cfg)
    }

    /// The rules between keys (single-key ranges are in the schema and
    /// checked by [`Config::parse`]). The first violation is the error.
    pub fn validate(&self) -> Result<(), Error> {
        let t = &self.topology;
        let tr = &self.transport;
        let packet = full_packet_bytes(tr.mss);
        t.check(packet).map_err(Error::input)?;
        tr.check(packet).map_err(Error::input)?;
        self.workload.check().map_err(Error::input)?;
        let min_interval = 0.001;
        for (key, v) in [
            (
                "metrics.queue_sample_interval_us",
                self.metrics.queue_sample_interval_us,
            ),
            (
                "metrics.port_rate_interval_us",
                self.metrics.port_rate_interval_us,
            ),
            (
                "metrics.goodput_interval_us",
                self.metrics.goodput_interval_us,
            ),
        ] {
            if v > 0.0 && v < min_interval {
                return Err(Error::input(format!(
                    "{key}: must be 0 (off) or at least {min_interval} us, got {v}"
                )));
            }
        }
        for (k, g) in self.workload.groups.iter().enumerate() {
            validate_group(g, k, self)?;
        }
        for (i, e) in self.events.iter().enumerate() {
            if e.link.split_once('-').is_none() {
                return Err(Error::input(format!(
                    "events[{i}].link: must name two nodes as \"A-B\", got {:?}",
                    e.link
                )));
            }
        }
        if let Some(msg) = crate::sim::parallel::refusal(self) {
            return Err(Error::input(msg));
        }
        self.scheme.validate().map_err(Error::input)
    }

    /// The resolved config as TOML (every default filled in).
    /// Only the keys this config reads are written, so the result parses
    /// again as it is (`config.resolved.toml`, `pisanet run --dry-run`).
    pub fn to_toml(&self) -> String {
        let render = || -> Result<String, String> {
            let mut table = toml::Table::try_from(self).map_err(|e| e.to_string())?;
            let schema = schema_value();
            let resolved = serde_json::to_value(self).map_err(|e| e.to_string())?;
            let mut keys = Vec::new();
            given_keys("", &table, &mut keys);
            for key in keys {
                let drop = match key.strip_prefix("scheme.") {
                    Some(sub) if !self.scheme.kind.reads(sub.split('.').next().unwrap_or(sub)) => {
                        true
                    }
                    _ => unread(&schema, &resolved, &key).is_some(),
                };
                if drop {
                    remove_path(&mut table, &key.split('.').collect::<Vec<_>>());
                }
            }
            toml::to_string_pretty(&table).map_err(|e| e.to_string())
        };
        render().unwrap_or_else(|e| format!("# cannot render config: {e}\n"))
    }
}

/// Removes the key at `parts` ("metrics", "port_rate_ports") from `table`.
fn remove_path(table: &mut toml::Table, parts: &[&str]) {
    match parts {
        [] => {}
        [last] => {
            table.remove(*last);
        }
        [first, rest @ ..] => {
            if let Some(t) = table.get_mut(*first).and_then(|v| v.as_table_mut()) {
                remove_path(t, rest);
            }
        }
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
    if !key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
    {
        return Err(Error::input(format!(
            "--set {o:?}: a key is names of letters, digits, '_' and '-' joined by dots, e.g. workload.load"
        )));
    }
    let raw = raw.trim();
    let value = format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .or_else(|| {
            // A number TOML cannot hold as an integer (2^64): a float, so
            // that the range check names it, not a type error on a string.
            raw.parse::<f64>()
                .ok()
                .filter(|_| raw.starts_with(|c: char| c.is_ascii_digit() || c == '-'))
                .map(toml::Value::Float)
        })
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

    #[test]
    fn a_condition_beside_a_ref_is_read() {
        // schemars puts a field's own `extend("x-applies-when" = ...)` beside
        // the `$ref` of an enum type; resolving the `$ref` must not lose it.
        let schema = serde_json::json!({
            "properties": {
                "a": {"properties": {
                    "kind": {"type": "string"},
                    "mode": {"$ref": "#/$defs/Mode",
                             "x-applies-when": {"key": "a.kind", "in": ["x"]}},
                    "plain": {"$ref": "#/$defs/Mode"},
                }},
            },
            "$defs": {"Mode": {"type": "string", "enum": ["m1", "m2"]}},
        });
        let resolved = serde_json::json!({"a": {"kind": "y", "mode": "m1", "plain": "m1"}});
        assert_eq!(
            unread(&schema, &resolved, "a.mode").as_deref(),
            Some("a.kind = \"x\" (here \"y\")")
        );
        assert_eq!(unread(&schema, &resolved, "a.plain"), None);
        let resolved = serde_json::json!({"a": {"kind": "x", "mode": "m1"}});
        assert_eq!(unread(&schema, &resolved, "a.mode"), None);
    }

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
        let fat = "[topology]\nkind = \"fat_tree\"\nk = 5\n";
        assert_eq!(
            err(fat, &[]),
            "topology.k: must be even and in 2..=64, got 5"
        );
        assert_eq!(
            err(CONTRACT, &["topology.host_link_gbps=-1"]),
            "topology.host_link_gbps: must be in [1e-6, 100000] Gb/s, got -1"
        );
        // A key the user wrote is named as written, never an internal one.
        assert_eq!(
            err(CONTRACT, &["topology.host_link_gbps=1e-300"]),
            "topology.host_link_gbps: must be in [1e-6, 100000] Gb/s, got 1e-300"
        );
        // Times that would wrap the clock are out of range.
        assert_eq!(
            err(CONTRACT, &["topology.link_delay_us=1e16"]),
            "topology.link_delay_us: must be in [0, 1000000] us, got 1e16"
        );
        for v in ["nan", "inf", "-inf"] {
            let e = err(CONTRACT, &[&format!("topology.link_delay_us={v}")]);
            assert!(e.starts_with("topology.link_delay_us: must be in"), "{e}");
        }
        // Keys another setting reads are refused, saying when they apply.
        assert_eq!(
            err(CONTRACT, &["topology.kind=fat_tree"]),
            "topology.hosts_per_leaf: is read only when topology.kind = \"leaf_spine\" (here \"fat_tree\"); remove it, or set run.unused_keys = \"ignore\""
        );
        assert_eq!(
            err(CONTRACT, &["workload.file=\"x.csv\""]),
            "workload.file: is read only when workload.pattern = \"file\" (here \"uniform\"); remove it, or set run.unused_keys = \"ignore\""
        );
        assert_eq!(
            err(CONTRACT, &["topology.file=\"t.toml\""]),
            "topology.file: is read only when topology.kind = \"custom\" (here \"leaf_spine\"); remove it, or set run.unused_keys = \"ignore\""
        );
        let e = err(
            CONTRACT,
            &["workload.pattern=file", "workload.file=\"f.csv\""],
        );
        assert!(
            e.starts_with("workload.flows: is read only when workload.pattern is not \"file\""),
            "{e}"
        );
        assert_eq!(
            err(CONTRACT, &["scheme.hula.probe_interval_us=100"]),
            "scheme.hula.probe_interval_us: is read only when scheme.kind = \"hula\" (here \"ecmp\"); remove it, or set run.unused_keys = \"ignore\""
        );
        let c = Config::parse(
            CONTRACT,
            &[
                "run.unused_keys=ignore".into(),
                "scheme.hula.probe_interval_us=100".into(),
            ],
        )
        .unwrap();
        assert_eq!(c.unused, vec!["scheme.hula.probe_interval_us".to_string()]);
        // Progress must be possible: limits below one packet are refused with the minimum.
        assert_eq!(
            err(CONTRACT, &["transport.tsq_kb=0.0001"]),
            "transport.tsq_kb: must be 0 (off) or hold one full packet (transport.mss + headers = 1518 bytes, so at least 1.518), got 0.0001"
        );
        assert!(err(CONTRACT, &["topology.buffer_kb=1"])
            .starts_with("topology.buffer_kb: must hold one full packet"));
        assert!(err(CONTRACT, &["transport.rwnd_kb=1"])
            .starts_with("transport.rwnd_kb: must hold one segment"));
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
    fn tcp_feature_keys_are_checked() {
        let c = Config::parse(
            CONTRACT,
            &[
                "transport.kind=cubic".into(),
                "transport.ecn=true".into(),
                "transport.sack=true".into(),
                "transport.app_rate_gbps=2.5".into(),
            ],
        )
        .unwrap();
        assert_eq!(c.transport.kind, TransportKind::Cubic);
        assert!(c.transport.ecn && c.transport.sack);
        assert_eq!(
            err(CONTRACT, &["transport.kind=udp", "transport.ecn=true"]),
            "transport.ecn: is read only when transport.kind = \"newreno\" or \"cubic\" (here \"udp\"); remove it, or set run.unused_keys = \"ignore\""
        );
        assert!(
            err(CONTRACT, &["transport.kind=dctcp", "transport.ecn=true"])
                .starts_with("transport.ecn: is read only when")
        );
        assert!(err(CONTRACT, &["transport.cubic_beta=0.8"])
            .starts_with("transport.cubic_beta: is read only when transport.kind = \"cubic\""));
        let e = err(
            CONTRACT,
            &["transport.kind=cubic", "transport.cubic_beta=1.0"],
        );
        assert!(e.starts_with("transport.cubic_beta: "), "{e}");
        assert_eq!(e, "transport.cubic_beta: must be in [0.5, 0.99], got 1");
        assert!(
            err(CONTRACT, &["transport.app_rate_gbps=-1"]).starts_with("transport.app_rate_gbps: ")
        );
    }

    #[test]
    fn hula_and_conga_keys_are_checked() {
        let c = Config::parse(
            CONTRACT,
            &[
                "scheme.kind=hula".into(),
                "scheme.hula.probe_interval_us=100".into(),
            ],
        )
        .unwrap();
        // Defaults follow the probe interval: keepalive 3x, tau 2x, suppression 3/4.
        let h = &c.scheme.hula;
        assert_eq!(
            (h.keepalive(), h.tau(), h.suppress_window()),
            (
                pisanet_engine::SimTime::from_us(300),
                pisanet_engine::SimTime::from_us(200),
                pisanet_engine::SimTime::from_us(75)
            )
        );
        assert_eq!(
            err(CONTRACT, &["scheme.kind=hula", "scheme.hula.tau_us=300"]),
            "scheme.hula.tau_us: must be at least 2 x scheme.hula.probe_interval_us (400) (HULA section 4.2), got 300"
        );
        assert!(err(
            CONTRACT,
            &["scheme.kind=hula", "scheme.hula.suppress_us=500"]
        )
        .starts_with("scheme.hula.suppress_us:"));
        assert!(err(
            CONTRACT,
            &["scheme.kind=hula", "scheme.hula.keepalive_us=100"]
        )
        .starts_with("scheme.hula.keepalive_us:"));
        assert!(
            err(CONTRACT, &["scheme.kind=conga", "scheme.conga.age_us=0"])
                .starts_with("scheme.conga.age_us:")
        );
        assert!(err(CONTRACT, &["scheme.kind=hula", "scheme.hula.probes=3"]).contains("probes"));
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
            &[
                "workload.pattern=client_server".into(),
                "workload.client_server_assignment=random".into(),
            ],
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
        let c = Config::parse(
            CONTRACT,
            &[
                "scheme.kind=flowlet_ecmp".into(),
                "scheme.flowlet_id=increment".into(),
            ],
        )
        .unwrap();
        assert_eq!(c.scheme.flowlet_id, FlowletIdKind::Increment);
        let e = err(
            CONTRACT,
            &["scheme.kind=flowlet_ecmp", "scheme.flowlet_id=hash"],
        );
        assert!(
            e.contains("scheme.flowlet_id") && e.contains("increment"),
            "{e}"
        );
        assert!(err(
            CONTRACT,
            &[
                "workload.pattern=client_server",
                "workload.client_server_assignment=greedy"
            ]
        )
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
        assert_eq!(c.scheme.kind.name(), "rps");
    }
}
