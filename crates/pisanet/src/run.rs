//! Config -> network -> run -> checks -> results.

use std::path::{Path, PathBuf};
use std::time::Instant;

use pisanet_engine::{BitRate, RngStreams, SimTime, StreamKind};
use pisanet_net::queue::QueueConfig;
use pisanet_net::topology::{self, AddrPlan, LinkSpec, NodeKind, Topology};
use pisanet_transport::{CcKind, TcpConfig};
use pisanet_workload::{
    Cdf, FlowAttrs, FlowGenerator, FlowListRules, FlowSource, HostLayout, Pattern,
    ServerAssignment, Transport, WorkloadSpec,
};
use serde_json::{json, Value};

use crate::api::{Error, GoodputSeries, PortRates, Progress, QueueSamples, RunOutput};
use crate::config::{
    Config, CustomTopology, EventKind, GroupCfg, PatternKind, ServerAssignmentKind,
    SourcePortsKind, TopologyKind, TransportKind, WorkloadCfg, CC_NAMES, DEADLINE_NEEDS_FLOW_STATS,
    TCP_LIMITS_REFUSED,
};

use crate::sim::{CcChoice, HostParams, LinkEventSpec, StopReason, World, WorldParams};

fn resolve_path(base: Option<&Path>, p: &str) -> PathBuf {
    let path = PathBuf::from(p);
    match base {
        Some(b) if path.is_relative() => b.join(path),
        _ => path,
    }
}

/// Input files larger than this are refused before they are read (a flow
/// list of a million flows is about 30 MB).
const MAX_INPUT_BYTES: u64 = 1 << 30;

fn read_file(key: &str, base: Option<&Path>, p: &str) -> Result<String, Error> {
    let path = resolve_path(base, p);
    let fail =
        |e: std::io::Error| Error::input(format!("{key}: cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(&path).map_err(fail)?;
    let meta = file.metadata().map_err(fail)?;
    // NOTE: a device (/dev/zero), a FIFO or a directory has no size to check
    // and may never end: only regular files are read.
    if !meta.is_file() {
        return Err(Error::input(format!(
            "{key}: {} is not a regular file",
            path.display()
        )));
    }
    let limit = crate::memory::available()
        .map_or(MAX_INPUT_BYTES, |a| ((a / 4.0) as u64).min(MAX_INPUT_BYTES));
    let too_big = |size: u64| {
        Error::input(format!(
            "{key}: {} is {:.1} MB, more than the {:.1} MB an input file may have here",
            path.display(),
            size as f64 / 1e6,
            limit as f64 / 1e6
        ))
    };
    if meta.len() > limit {
        return Err(too_big(meta.len()));
    }
    // A file that grows while it is read is cut at the limit, and refused.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::io::Read::read_to_end(&mut std::io::Read::take(file, limit + 1), &mut bytes)
        .map_err(fail)?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::input(format!(
            "{key}: {} is not UTF-8 text (byte {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

pub fn build_topology(cfg: &Config, base: Option<&Path>) -> Result<Topology, Error> {
    let t = &cfg.topology;
    let host = BitRate::from_gbps(t.host_link_gbps);
    let fabric = BitRate::from_gbps(t.fabric_link_gbps);
    let delay = SimTime::from_us_f64(t.link_delay_us);
    let topo = match t.kind {
        TopologyKind::LeafSpine => {
            topology::leaf_spine(t.leaves, t.spines, t.hosts_per_leaf, host, fabric, delay)
        }
        TopologyKind::FatTree => topology::fat_tree(t.k, host, fabric, delay),
        TopologyKind::Hula3tier => topology::hula3tier(host, fabric, delay, t.hosts_per_tor),
        TopologyKind::Custom => {
            let file = t.file.as_deref().unwrap_or_default();
            let text = read_file("topology.file", base, file)?;
            let custom: CustomTopology = toml::from_str(&text).map_err(|e| {
                Error::input(format!(
                    "topology.file ({file}): {}",
                    e.to_string()
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                ))
            })?;
            build_custom(&custom, t).map_err(|e| format!("topology.file ({file}): {e}"))
        }
    };
    topo.map_err(Error::input)
}

/// A custom topology file's fabric; links that leave out `gbps` or
/// `delay_us` take them from `[topology]` (host or fabric rate by whether a
/// host is at either end, `link_delay_us`).
fn build_custom(c: &CustomTopology, t: &crate::config::TopologyCfg) -> Result<Topology, String> {
    let mut hosts = Vec::new();
    let mut switches = Vec::new();
    for n in &c.nodes {
        match n.kind.as_str() {
            "host" => hosts.push((n.name.clone(), NodeKind::Host)),
            "switch" => switches.push((n.name.clone(), NodeKind::Switch { tier: n.tier })),
            other => {
                return Err(format!(
                    "node {}: kind must be \"host\" or \"switch\", got {other:?}",
                    n.name
                ))
            }
        }
    }
    if hosts.len() < 2 {
        return Err(format!("needs at least 2 hosts, has {}", hosts.len()));
    }
    let n_hosts = hosts.len() as u32;
    let nodes: Vec<(String, NodeKind)> = hosts.into_iter().chain(switches).collect();
    let mut index = std::collections::HashMap::new();
    for (i, (name, _)) in nodes.iter().enumerate() {
        if index.insert(name.clone(), i as u32).is_some() {
            return Err(format!("node name {name:?} is used twice"));
        }
    }
    let mut links = Vec::new();
    for (i, l) in c.links.iter().enumerate() {
        let a = *index
            .get(&l.a)
            .ok_or_else(|| format!("links[{i}].a: unknown node {:?}", l.a))?;
        let b = *index
            .get(&l.b)
            .ok_or_else(|| format!("links[{i}].b: unknown node {:?}", l.b))?;
        let host_link = a < n_hosts || b < n_hosts;
        let gbps = l.gbps.unwrap_or(if host_link {
            t.host_link_gbps
        } else {
            t.fabric_link_gbps
        });
        if !(gbps.is_finite() && (1e-6..=100_000.0).contains(&gbps)) {
            return Err(format!(
                "links[{i}].gbps: must be in [1e-6, 100000] Gb/s, got {gbps}"
            ));
        }
        let delay_us = l.delay_us.unwrap_or(t.link_delay_us);
        if !(delay_us.is_finite() && (0.0..=1_000_000.0).contains(&delay_us)) {
            return Err(format!(
                "links[{i}].delay_us: must be in [0, 1000000] us, got {delay_us}"
            ));
        }
        links.push(LinkSpec {
            a,
            b,
            rate: BitRate::from_gbps(gbps),
            delay: SimTime::from_us_f64(delay_us),
        });
    }
    Topology::from_links("custom", nodes, &links, AddrPlan::Flat)
}

fn build_cdf(key: &str, name: &str, base: Option<&Path>) -> Result<Cdf, Error> {
    if let Some(c) = Cdf::builtin(name) {
        return Ok(c);
    }
    let text = read_file(key, base, name).map_err(|e| {
        Error::input(format!(
            "{} (not a built-in: websearch, datamining)",
            e.message
        ))
    })?;
    Cdf::parse(&text, &format!("{key} ({name})")).map_err(Error::input)
}

/// One flow group's workload keys, resolved (`[workload]` is group 0).
struct GroupSpec<'a> {
    /// Key prefix for messages: "workload" or "workload.groups[0]".
    key: String,
    cdf: &'a str,
    load: f64,
    flows: u64,
    pattern: PatternKind,
    short_threshold_bytes: Option<u64>,
    incast_senders: u32,
    incast_bytes: u64,
    file: Option<&'a str>,
    start_us: f64,
    connections: u32,
    assignment: ServerAssignmentKind,
    /// Transport of the group's rows that name none.
    transport: Transport,
    /// The group gives a duration (a row may leave bytes empty).
    duration: bool,
}

impl<'a> GroupSpec<'a> {
    fn main(cfg: &'a Config) -> GroupSpec<'a> {
        let w = &cfg.workload;
        GroupSpec {
            key: "workload".into(),
            cdf: &w.cdf,
            load: w.load,
            flows: w.flows,
            pattern: w.pattern,
            short_threshold_bytes: w.short_threshold_bytes,
            incast_senders: w.incast_senders,
            incast_bytes: w.incast_bytes,
            file: w.file.as_deref(),
            start_us: w.start_us,
            connections: w.connections,
            assignment: w.client_server_assignment,
            transport: default_transport(cfg),
            duration: false,
        }
    }

    fn group(cfg: &'a Config, k: usize, g: &'a GroupCfg) -> GroupSpec<'a> {
        let d = WorkloadCfg::default();
        GroupSpec {
            key: format!("workload.groups[{k}]"),
            cdf: g.cdf.as_deref().unwrap_or("websearch"),
            load: g.load.unwrap_or(d.load),
            flows: g.flows.unwrap_or(d.flows),
            pattern: g.pattern(),
            short_threshold_bytes: g.short_threshold_bytes,
            incast_senders: g.incast_senders.unwrap_or(d.incast_senders),
            incast_bytes: g.incast_bytes.unwrap_or(d.incast_bytes),
            file: g.file.as_deref(),
            start_us: g.start_us.unwrap_or(d.start_us),
            connections: g.connections.unwrap_or(d.connections),
            assignment: g
                .client_server_assignment
                .unwrap_or(d.client_server_assignment),
            transport: crate::config::group_transport(g, cfg),
            duration: g.duration_us.is_some(),
        }
    }
}

fn default_transport(cfg: &Config) -> Transport {
    if cfg.transport.kind == TransportKind::Udp {
        Transport::Udp
    } else {
        Transport::Tcp
    }
}

/// The flow generator of one group, drawing from random stream `stream`.
fn build_generator(
    cfg: &Config,
    base: Option<&Path>,
    topo: &Topology,
    g: &GroupSpec,
    rng: pisanet_engine::SimRng,
) -> Result<FlowGenerator, Error> {
    let cdf = build_cdf(&format!("{}.cdf", g.key), g.cdf, base)?;
    let short_threshold = g.short_threshold_bytes.unwrap_or_else(|| cdf.quantile(0.9));
    let pattern = match g.pattern {
        PatternKind::Uniform => Pattern::Uniform,
        PatternKind::Stride => Pattern::Stride,
        PatternKind::Permutation => Pattern::Permutation,
        PatternKind::Incast => Pattern::Incast {
            senders: g.incast_senders,
            bytes: g.incast_bytes,
        },
        PatternKind::ClientServer => Pattern::ClientServer {
            connections: g.connections,
            assignment: match g.assignment {
                ServerAssignmentKind::Permutation => ServerAssignment::Permutation,
                ServerAssignmentKind::Random => ServerAssignment::Random,
            },
        },
        PatternKind::File => {
            let key = format!("{}.file", g.key);
            let file = g.file.unwrap_or_default();
            let text = read_file(&key, base, file)?;
            let rules = FlowListRules {
                n_hosts: Some(topo.n_hosts),
                cc_names: CC_NAMES,
                priorities: cfg.topology.priorities,
                priorities_key: "topology.priorities",
                deadline_refused: (!cfg.metrics.flow_stats).then_some(DEADLINE_NEEDS_FLOW_STATS),
                default_transport: g.transport,
                default_duration: g.duration,
                tcp_limits_refused: TCP_LIMITS_REFUSED,
                udp_refused: cfg.run.threads.map(|_| {
                    "run.threads: the parallel mode does not support UDP flows (sim/parallel.rs `refusal`); unset run.threads to run this list on one thread"
                }),
            };
            let flows =
                pisanet_workload::parse_flow_list(&text, &format!("{key} ({file})"), &rules)
                    .map_err(Error::input)?;
            Pattern::File(flows)
        }
    };
    let layout = HostLayout {
        racks: topo.rack_hosts.clone(),
    };
    let spec = WorkloadSpec {
        cdf,
        load: g.load,
        flows: g.flows,
        pattern,
        host_rate: BitRate::from_gbps(cfg.topology.host_link_gbps),
        short_threshold_bytes: short_threshold,
        start: SimTime::from_us_f64(g.start_us),
    };
    FlowGenerator::new(spec, &layout, rng).map_err(|e| {
        // Messages name `workload.`; a group's name its own keys.
        Error::input(if g.key == "workload" {
            e
        } else {
            e.replacen("workload", &g.key, 1)
        })
    })
}

/// The attributes a group gives its flows.
fn group_attrs(g: &GroupCfg) -> FlowAttrs {
    FlowAttrs {
        transport: g.transport.map(Transport::from),
        cc: g
            .cc
            .as_deref()
            .and_then(|c| CC_NAMES.iter().position(|(n, _)| *n == c))
            .map(|i| i as u8),
        rate_bps: g.rate_gbps.map(|r| BitRate::from_gbps(r).bps().max(1)),
        duration: g.duration_us.map(SimTime::from_us_f64),
        mss: g.mss,
        priority: g.priority,
        deadline: g.deadline_us.map(SimTime::from_us_f64),
    }
}

/// What each name of [`CC_NAMES`] builds.
fn cc_choice(cfg: &Config, name: &str) -> CcChoice {
    match name {
        "newreno" => CcChoice::Tcp(CcKind::NewReno),
        "dctcp" => CcChoice::Tcp(CcKind::Dctcp {
            g_shift: cfg.transport.dctcp_g_shift,
        }),
        "cubic" => CcChoice::Tcp(CcKind::Cubic {
            c: cfg.transport.cubic_c,
            beta: cfg.transport.cubic_beta,
        }),
        other => {
            CcChoice::Rate(pisanet_transport::ReactionKind::from_name(other).unwrap_or_default())
        }
    }
}

/// Every flow of the run: the `[workload]` table's (group 0), then each
/// `[[workload.groups]]`, merged in start order.
fn build_flows(
    cfg: &Config,
    base: Option<&Path>,
    topo: &Topology,
    streams: &RngStreams,
) -> Result<FlowSource, Error> {
    let main = build_generator(
        cfg,
        base,
        topo,
        &GroupSpec::main(cfg),
        streams.stream(StreamKind::Workload, 0),
    )?;
    if cfg.workload.groups.is_empty() {
        return Ok(FlowSource::single(main));
    }
    let mut groups = vec![(main, FlowAttrs::default())];
    for (k, g) in cfg.workload.groups.iter().enumerate() {
        // NOTE: each group has its own random stream (after the ones the
        // main workload uses: 0 for flows, 1 for the port salt).
        let rng = streams.stream(StreamKind::Workload, 16 + k as u64);
        let gen = build_generator(cfg, base, topo, &GroupSpec::group(cfg, k, g), rng)?;
        groups.push((gen, group_attrs(g)));
    }
    FlowSource::new(groups).map_err(Error::input)
}

fn tcp_config(cfg: &Config) -> TcpConfig {
    cfg.transport.tcp_config()
}

/// Builds and runs; returns the results. With a `sink`, the flow table's
/// rows go to it in batches as flows end (`sim::records`) and the output's
/// `flows` is empty; without one, `flows` holds every row in flow id order.
/// The sink's error stops the run (at the next progress point) and is
/// returned.
pub fn run_config(
    cfg: &Config,
    base: Option<&Path>,
    progress: &mut dyn FnMut(Progress) -> bool,
    sink: Option<crate::sim::FlowSink>,
) -> Result<RunOutput, Error> {
    let wall = Instant::now();
    if let Some(threads) = cfg.run.threads {
        return run_parallel(cfg, base, threads, progress, sink);
    }
    let mut world = build_world(cfg, base)?;
    let failed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sink = sink.map(|mut sink| {
        let flag = failed.clone();
        Box::new(move |rows| {
            sink(rows).inspect_err(|_| flag.store(true, std::sync::atomic::Ordering::Relaxed))
        }) as crate::sim::FlowSink
    });
    world.records = crate::sim::FlowRecords::new(world.total_flows, sink);
    let max_time = SimTime::from_us_f64(cfg.run.max_sim_time_ms * 1000.0);
    let mut watch = |p: Progress| !failed.load(std::sync::atomic::Ordering::Relaxed) && progress(p);
    let stop = world.run(max_time, &mut watch);
    if let Some(e) = world.records.failed.take() {
        return Err(e);
    }
    if let Some(msg) = world.pfc.as_ref().and_then(|p| p.fatal.clone()) {
        return Err(Error::invariant(msg));
    }
    if stop == StopReason::Interrupted {
        return Err(Error {
            kind: crate::api::ErrorKind::Interrupted,
            message: "run interrupted".into(),
        });
    }
    world.check_unfinished();
    let wall_s = wall.elapsed().as_secs_f64();
    let captured = world.tap.take().map(|t| t.finish(&world));
    finish(cfg, world, stop, wall_s).map(|out| crate::capture::attach(out, captured))
}

/// `run_config` in parallel mode (`run.threads`, sim/parallel.rs): one
/// world per partition, run in windows, merged into one for the results.
fn run_parallel(
    cfg: &Config,
    base: Option<&Path>,
    threads: u32,
    progress: &mut dyn FnMut(Progress) -> bool,
    sink: Option<crate::sim::FlowSink>,
) -> Result<RunOutput, Error> {
    use crate::sim::parallel;
    let wall = Instant::now();
    if let Some(msg) = parallel::refusal(cfg) {
        return Err(Error::input(msg));
    }
    let first = build_world(cfg, base)?;
    let (node_part, parts) =
        parallel::partition(&first.topo, cfg.topology.partitioned).map_err(Error::input)?;
    if parallel::lookahead(&first, &node_part).is_none() {
        // One partition (a leaf-spine with one leaf): nothing to run in
        // parallel; the single-thread run is the same run.
        let mut single = cfg.clone();
        single.run.threads = None;
        return run_config(&single, base, progress, sink);
    }
    let lookahead = first.lookahead;
    if lookahead == SimTime::ZERO {
        return Err(Error::input(
            "run.threads: links between partitions (a fat tree's pods and cores, a leaf-spine's leaves and spines) need a positive topology.link_delay_us",
        ));
    }
    if let Some(after) = first.pfc.as_ref().and_then(|p| p.deadlock_after) {
        // PFC's deadlock detector: the next check is armed at the end of
        // the window (sim/parallel.rs `pfc_window`), half of
        // deadlock_after after a check.
        if after.ps() / 2 < lookahead.ps() {
            return Err(Error::input(format!(
                "run.threads: topology.pfc.deadlock_ms = {} is shorter than twice the lookahead ({} us, the smallest delay of a link between partitions); the parallel mode needs deadlock_ms >= {} (or 0: the detector off)",
                after.as_ms_f64(),
                lookahead.as_us_f64(),
                2.0 * lookahead.as_ms_f64()
            )));
        }
    }
    // One copy of the network per partition (sim/parallel.rs): the
    // memory check of `build_world` saw one.
    let (need, key) = crate::memory::estimate(cfg);
    let need = need * f64::from(parts);
    let budget = cfg.run.max_memory_mb * 1e6;
    let limit =
        crate::memory::available().map_or(budget, |a| if budget > 0.0 { a.min(budget) } else { a });
    if limit > 0.0 && need > limit {
        return Err(Error::input(format!(
            "run.threads: the parallel mode keeps one copy of the network per partition ({parts} here), about {:.1} GB, more than the {:.1} GB this run may use; unset run.threads or make {key} smaller",
            need / 1e9,
            limit / 1e9
        )));
    }
    let mut worlds = vec![first];
    for _ in 1..parts {
        worlds.push(build_world(cfg, base)?);
    }
    for (i, w) in worlds.iter_mut().enumerate() {
        w.make_partition(i as u32, node_part.clone());
    }
    let max_time = SimTime::from_us_f64(cfg.run.max_sim_time_ms * 1000.0);
    // The flows' rows, streamed to the sink as they end (sim/parallel.rs
    // `Collector`).
    let total = worlds[0].total_flows;
    let mut collector = parallel::Collector::new(crate::sim::FlowRecords::new(total, sink));
    let (stop, stats) = parallel::run(
        &mut worlds,
        threads,
        lookahead,
        max_time,
        progress,
        &mut collector,
    );
    if let Some(e) = collector.records.failed.take() {
        return Err(e);
    }
    if let Some(msg) = worlds[0].pfc.as_ref().and_then(|p| p.fatal.clone()) {
        return Err(Error::invariant(msg));
    }
    if stop == StopReason::Interrupted {
        return Err(Error {
            kind: crate::api::ErrorKind::Interrupted,
            message: "run interrupted".into(),
        });
    }
    let world = parallel::merge(worlds, collector);
    if let Some(e) = world.records.failed.as_ref() {
        return Err(e.clone());
    }
    let mut world = world;
    let wall_s = wall.elapsed().as_secs_f64();
    let captured = world.tap.take().map(|t| t.finish(&world));
    let mut out =
        finish(cfg, world, stop, wall_s).map(|out| crate::capture::attach(out, captured))?;
    let events = out.summary["events"].as_u64().unwrap_or(0);
    if let Some(s) = out.summary.as_object_mut() {
        s.insert(
            "parallel".into(),
            json!({
                "threads": stats.threads,
                "partitions": stats.partitions,
                "windows": stats.windows,
                "lookahead_us": stats.lookahead.as_us_f64(),
                "cross_packets": stats.cross_packets,
                "max_partition_events": stats.max_partition_events,
                // Speed-up bound by the load balance alone, per thread count.
                "balance_bound": parallel::BOUND_THREADS
                    .iter()
                    .zip(stats.critical_events)
                    .map(|(n, c)| (n.to_string(), json!(events as f64 / c.max(1) as f64)))
                    .collect::<serde_json::Map<String, Value>>(),
            }),
        );
    }
    Ok(out)
}

/// Everything a run builds before its first event: the memory estimate,
/// topology, routes, every switch program, the workload, the scheduled
/// events and the samplers. `validate` calls this too, so it answers
/// exactly what `run` would.
pub fn build_world(cfg: &Config, base: Option<&Path>) -> Result<World, Error> {
    crate::memory::check(cfg)?;
    let topo = build_topology(cfg, base)?;
    let streams = RngStreams::new(cfg.run.seed);
    let w = &cfg.workload;
    let gen = build_flows(cfg, base, &topo, &streams)?;
    let total_flows = gen.total_flows();

    let t = &cfg.topology;
    let switch_queue = QueueConfig {
        buffer_bytes: (t.buffer_kb * 1000.0) as u64,
        // topology.buffer_pkts (0 = bytes only); docs/model.md "Links and queues".
        buffer_packets: if t.buffer_pkts == 0 {
            u32::MAX
        } else {
            t.buffer_pkts
        },
        ecn_threshold_bytes: (t.ecn_threshold_kb > 0.0)
            .then_some((t.ecn_threshold_kb * 1000.0) as u64),
        // topology.ecn_threshold_pkts (0 = bytes only); docs/model.md "Links and queues".
        ecn_threshold_packets: if t.ecn_threshold_pkts == 0 {
            u32::MAX
        } else {
            t.ecn_threshold_pkts
        },
        priorities: t.priorities,
    };
    let params = WorldParams {
        switch_queue,
        shared_buffer: (t.shared_buffer_kb > 0.0)
            .then_some(((t.shared_buffer_kb * 1000.0) as u64, t.shared_buffer_alpha)),
        tcp: tcp_config(cfg),
        hosts: HostParams {
            transport: default_transport(cfg),
            tcp_cc: tcp_config(cfg).cc,
            reaction: cfg.transport.reaction_point.kind(),
            udp_rate: BitRate::from_gbps(cfg.transport.udp_rate_gbps),
            cc: CC_NAMES.iter().map(|(n, _)| cc_choice(cfg, n)).collect(),
            udp_drain: (cfg.transport.udp_drain_us > 0.0)
                .then(|| SimTime::from_us_f64(cfg.transport.udp_drain_us)),
            port_buffer_bytes: ((t.buffer_kb * 1000.0) as u64)
                .max((t.shared_buffer_kb * 1000.0) as u64),
            rate: cfg.transport.rate_params(),
        },
        total_flows,
        link_loss_rate: t.link_loss_rate,
        tsq_bytes: (cfg.transport.tsq_kb > 0.0)
            .then(|| (cfg.transport.tsq_kb * 1000.0).round() as u64),
        sport_salt: (w.source_ports == SourcePortsKind::Random)
            .then(|| rand::RngCore::next_u64(&mut streams.stream(StreamKind::Workload, 1))),
    };
    // Flows' deadline_us into the QoS schemes' qos_deadline table (P4QoS).
    let qos_cfg = crate::qos_deadlines::with_flow_deadlines(cfg, &gen, &topo, params.sport_salt)?;
    let fwd = crate::forward::build(qos_cfg.as_ref().unwrap_or(cfg), &topo, &streams)?;
    let mut world = World::new(topo, fwd, gen, params, &streams);
    if t.link_loss_rate > 0.0 && t.link_loss_per_link {
        // One loss stream per port (Link stream 0 is the shared one).
        world.loss_per_link = (0..world.ports.len() as u64)
            .map(|p| streams.stream(StreamKind::Link, 1 + p))
            .collect();
    }
    // The lookahead of the topology's partitioning, run.threads set or not
    // (sim/parallel.rs; `World::lookahead`).
    world.lookahead = crate::sim::parallel::partition(&world.topo, t.partitioned)
        .ok()
        .and_then(|(part, _)| crate::sim::parallel::lookahead(&world, &part))
        .unwrap_or(SimTime::ZERO);
    if t.pfc.enabled {
        // Thresholds and headroom of every switch port (crates/pisanet/src/pfc.rs).
        let pfc = crate::sim::Pfc::build(
            &t.pfc,
            &world,
            switch_queue.buffer_bytes,
            (t.shared_buffer_kb > 0.0).then_some((t.shared_buffer_kb * 1000.0) as u64),
            crate::config::full_packet_bytes(cfg.transport.mss),
        );
        world.pfc = Some(Box::new(pfc));
    }

    for (i, e) in cfg.events.iter().enumerate() {
        let ports = split_link(&world, &e.link)
            .and_then(|(a, b)| find_link(&world, a, b))
            .ok_or_else(|| {
                Error::input(format!(
                    "events[{i}].link: no link {:?} (name its two end nodes as \"A-B\", e.g. \"{}\")",
                    e.link,
                    example_link(&world)
                ))
            })?;
        world.link_events.push(LinkEventSpec {
            at: SimTime::from_us_f64(e.at_ms * 1000.0),
            up: e.kind == EventKind::LinkUp,
            ports,
        });
    }
    if cfg.metrics.queue_sample_interval_us > 0.0 {
        world.sample_interval = Some(SimTime::from_us_f64(cfg.metrics.queue_sample_interval_us));
        let filters = &cfg.metrics.queue_sample_ports;
        world.sample_ports = (0..world.ports.len() as u32)
            .filter(|&p| !world.ports[p as usize].is_host_port)
            .filter(|&p| {
                let name = world.port_name(p);
                filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
            })
            .collect();
    }
    if cfg.metrics.port_rate_interval_us > 0.0 {
        world.rates.interval = Some(SimTime::from_us_f64(cfg.metrics.port_rate_interval_us));
        let filters = &cfg.metrics.port_rate_ports;
        world.rates.ports = (0..world.ports.len() as u32)
            .filter(|&p| !world.ports[p as usize].is_host_port)
            .filter(|&p| {
                let name = world.port_name(p);
                filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
            })
            .collect();
    }
    if cfg.metrics.flow_stats || cfg.metrics.goodput_interval_us > 0.0 {
        world.meter = Some(Box::new(crate::sim::meter::Meter {
            flow_stats: cfg.metrics.flow_stats,
            goodput: (cfg.metrics.goodput_interval_us > 0.0)
                .then(|| SimTime::from_us_f64(cfg.metrics.goodput_interval_us)),
            ..Default::default()
        }));
    }
    world.tap = crate::capture::Tap::from_config(cfg, &world)?;
    Ok(world)
}

/// Splits "A-B" into two node names of the topology. Node names may hold a
/// '-' themselves, so every split point is tried.
fn split_link<'a>(world: &World, link: &'a str) -> Option<(&'a str, &'a str)> {
    link.match_indices('-').find_map(|(i, _)| {
        let (a, b) = (link[..i].trim(), link[i + 1..].trim());
        (world.topo.node_by_name(a).is_some() && world.topo.node_by_name(b).is_some())
            .then_some((a, b))
    })
}

/// A link of the topology, for messages: the first switch-to-switch link
/// (else any).
fn example_link(world: &World) -> String {
    let topo = &world.topo;
    let n = topo.n_hosts;
    let mut first = None;
    for s in topo.nodes.iter().skip(n as usize) {
        for p in &s.ports {
            let name = format!("{}-{}", s.name, topo.nodes[p.peer_node as usize].name);
            if p.peer_node >= n {
                return name;
            }
            first.get_or_insert(name);
        }
    }
    first.unwrap_or_else(|| "A-B".into())
}

fn find_link(world: &World, a: &str, b: &str) -> Option<[u32; 2]> {
    let na = world.topo.node_by_name(a)?;
    let nb = world.topo.node_by_name(b)?;
    let base = world.port_base[na as usize];
    let (i, _) = world.topo.nodes[na as usize]
        .ports
        .iter()
        .enumerate()
        .find(|(_, p)| p.peer_node == nb)?;
    let pa = base + i as u32;
    Some([pa, world.ports[pa as usize].peer])
}

/// Peak resident set size of this process in MB (VmHWM), 0 where unknown.
pub fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<f64>().ok())
            })
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// Mean and percentiles of a sample (nearest-rank percentiles).
fn stats(mut v: Vec<f64>) -> Value {
    if v.is_empty() {
        return json!({"count": 0, "mean": null, "p50": null, "p99": null, "max": null});
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let pct = |p: f64| v[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
    json!({
        "count": n,
        "mean": v.iter().sum::<f64>() / n as f64,
        "p50": pct(0.5),
        "p99": pct(0.99),
        "max": v[n - 1],
    })
}

fn finish(
    cfg: &Config,
    mut world: World,
    stop: StopReason,
    wall_s: f64,
) -> Result<RunOutput, Error> {
    let n = world.records.started;
    // The sink gets its last rows here; `done` is then in flow id order.
    let (digest, ft) = world.records.finish()?;
    let done = &world.records.done;
    let fct = |pred: &dyn Fn(&crate::sim::records::Done) -> bool| -> Vec<f64> {
        done.iter()
            .filter(|d| pred(d))
            .map(|d| d.fct.as_us_f64())
            .collect()
    };
    let fct_all = stats(fct(&|_| true));
    let fct_short = stats(fct(&|d| d.class == pisanet_net::TC_SHORT));
    let fct_large = stats(fct(&|d| d.class == pisanet_net::TC_LARGE));
    let fct_lt100k = stats(fct(&|d| d.size & crate::sim::records::LT_100KB != 0));
    let fct_gt10m = stats(fct(&|d| d.size & crate::sim::records::GT_10MB != 0));
    let slow = stats(done.iter().map(|d| d.slowdown).collect());
    let retrans = world.records.retransmissions;
    let lost_packets = world.records.lost_packets;
    let lost_bytes = world.records.lost_bytes;
    let fairness = fairness_summary(cfg, done);
    let flow_stats = flow_stats_summary(&world);
    let reordered = world.records.reordered;

    world.pfc_finish(world.q.now());
    let mut c = world.counts;
    c.injected += world.switch_injected();
    let program_violations = world.program_violations();
    world.violations.extend(program_violations);
    let in_flight = world.in_flight();
    if let Err(e) = world.arena_check() {
        world.violations.push(e);
    }
    let conservation_ok = c.injected == c.delivered + c.consumed + c.dropped + in_flight;
    if !conservation_ok {
        world.violations.push(format!(
            "packet conservation violated: injected {} != delivered {} + consumed {} + dropped {} + in flight {}",
            c.injected, c.delivered, c.consumed, c.dropped, in_flight
        ));
    }
    if let Some(pfc) = world.pfc.as_deref() {
        // Lossless means lossless: a drop of a lossless priority is a
        // violation unless the config reserved less headroom than a link
        // needs (then it was warned about and is reported, not an error).
        if pfc.lossless_drops > 0 && !pfc.small_headroom {
            let k = pfc
                .stats
                .iter()
                .position(|s| s.lossless_drops > 0)
                .unwrap_or(0);
            world.violations.push(format!(
                "PFC: {} packet(s) of lossless priorities dropped though every port reserves the headroom its link needs (first on ingress {} priority {})",
                pfc.lossless_drops,
                world.port_name((k / 8) as u32),
                k % 8
            ));
        }
    }
    if let Some(first) = world.violations.first() {
        let more = world.violations.len() - 1;
        let msg = if more > 0 {
            format!("invariant violated: {first} (and {more} more)")
        } else {
            format!("invariant violated: {first}")
        };
        return Err(Error::invariant(msg));
    }
    let pfc_summary = world.pfc.as_deref().map(|pfc| {
        let t = pfc.totals();
        json!({
            "lossless_priorities": (0..8).filter(|c| pfc.lossless & (1 << c) != 0).collect::<Vec<u32>>(),
            "pause_frames_sent": t.pause_sent,
            "xon_frames_sent": t.xon_sent,
            "pause_frames_received": t.pause_received,
            "xon_frames_received": t.xon_received,
            "paused_time_us": t.paused.as_us_f64(),
            "lossless_drops": pfc.lossless_drops,
            "headroom_too_small": pfc.small_headroom,
            "max_ingress_bytes": t.max_ingress_bytes,
            "switches": pfc.switches,
        })
    });
    let pfc_warnings = world
        .pfc
        .as_deref()
        .map(|p| p.warnings.clone())
        .unwrap_or_default();
    let sim_time = world.q.now();
    let events = world.q.events_processed();
    let wall = wall_s.max(1e-9);
    let sub = |s: &Value, k: &str| s.get(k).cloned().unwrap_or(Value::Null);
    let summary = json!({
        "scheme": cfg.scheme.kind,
        "seed": cfg.run.seed,
        "topology": world.topo.kind,
        "transport": cfg.transport.kind,
        "stop_reason": stop.as_str(),
        "unused_keys": cfg.unused.join(", "),
        "flows": {"total": world.total_flows, "started": n, "completed": world.completed},
        "fct_us": {
            "mean": sub(&fct_all, "mean"), "p50": sub(&fct_all, "p50"), "p99": sub(&fct_all, "p99"), "max": sub(&fct_all, "max"),
            "short": {"count": sub(&fct_short, "count"), "mean": sub(&fct_short, "mean"), "p99": sub(&fct_short, "p99")},
            "large": {"count": sub(&fct_large, "count"), "mean": sub(&fct_large, "mean"), "p99": sub(&fct_large, "p99")},
            "lt_100KB": {"count": sub(&fct_lt100k, "count"), "mean": sub(&fct_lt100k, "mean"), "p99": sub(&fct_lt100k, "p99")},
            "gt_10MB": {"count": sub(&fct_gt10m, "count"), "mean": sub(&fct_gt10m, "mean"), "p99": sub(&fct_gt10m, "p99")},
        },
        "slowdown": {"mean": sub(&slow, "mean"), "p50": sub(&slow, "p50"), "p99": sub(&slow, "p99")},
        "retransmissions": retrans,
        "loss": {"packets": lost_packets, "bytes": lost_bytes},
        "fairness": fairness,
        "flow_stats": flow_stats,
        "packets": {
            "injected": c.injected,
            "delivered": c.delivered,
            "consumed": c.consumed,
            "dropped": c.dropped,
            "in_flight": in_flight,
            "ecn_marked": world.ecn_marked(),
            "reordered": reordered,
            "late": c.late_packets,
        },
        "conservation_ok": conservation_ok,
        "switches": world.switch_totals(),
        "sim_time_s": sim_time.as_secs_f64(),
        "wall_time_s": wall_s,
        "events": events,
        "packet_hops": c.packet_hops,
        "events_per_s": events as f64 / wall,
        "packet_hops_per_s": c.packet_hops as f64 / wall,
        "peak_rss_mb": peak_rss_mb(),
        "digest": digest,
    });
    let mut summary = summary;
    if c.rate_feedback + c.cnps > 0 {
        // Rate-based hosts that got feedback (docs/metrics.md, "Rate control").
        if let Some(s) = summary.as_object_mut() {
            s.insert(
                "rate_control".into(),
                json!({
                    "feedback_packets": c.rate_feedback,
                    "rate_cuts": c.rate_cuts,
                    "first_cut_us": c.first_rate_cut.map(|t| t.as_secs_f64() * 1e6),
                    "cnps": c.cnps,
                }),
            );
        }
    }
    if let (Some(p), Some(s)) = (pfc_summary, summary.as_object_mut()) {
        s.insert("pfc".into(), p);
        if !pfc_warnings.is_empty() {
            s.insert("warnings".into(), json!(pfc_warnings));
        }
    }
    let ports: Vec<Value> = (0..world.ports.len() as u32)
        .map(|p| {
            let port = &world.ports[p as usize];
            let k = port.queue.counters;
            let mut row = json!({
                "name": world.port_name(p),
                "switch_port": !port.is_host_port,
                "uplink": !port.is_host_port && is_uplink(&world.topo, port.node, port.port_no),
                "tx_packets": k.tx_packets, "tx_bytes": k.tx_bytes, "drops": k.drops,
                "ecn_marks": k.ecn_marks, "max_depth_bytes": k.max_depth_bytes,
                "made_tx_bytes": port.made_tx_bytes,
            });
            if let (Some(pfc), Some(r)) = (world.pfc.as_deref(), row.as_object_mut()) {
                pfc_port_columns(pfc, p, r);
            }
            row
        })
        .collect();
    let names: Vec<String> = world
        .sample_ports
        .iter()
        .map(|&p| world.port_name(p))
        .collect();
    let mut index = vec![usize::MAX; world.ports.len()];
    for (i, &p) in world.sample_ports.iter().enumerate() {
        index[p as usize] = i;
    }
    let (ts, ps, ds, prio) = std::mem::take(&mut world.samples);
    let queues = QueueSamples {
        time_us: ts.iter().map(|t| t.as_us_f64()).collect(),
        port: ps
            .iter()
            .map(|&p| names[index[p as usize]].clone())
            .collect(),
        depth_bytes: ds,
        priority: prio,
    };
    let r = std::mem::take(&mut world.rates);
    let port_rates = PortRates {
        time_us: r.time.iter().map(|t| t.as_us_f64()).collect(),
        port: r.port.iter().map(|&p| world.port_name(p)).collect(),
        tx_gbps: r.tx_gbps,
        carried_gbps: r.carried_gbps,
    };
    let goodput = match world.meter.as_deref_mut() {
        Some(m) if m.goodput.is_some() => {
            let iv = m.goodput.unwrap_or(SimTime(1)).as_secs_f64();
            GoodputSeries {
                time_us: m.goodput_time.iter().map(|t| t.as_us_f64()).collect(),
                flow: std::mem::take(&mut m.goodput_flow),
                gbps: m
                    .goodput_bytes
                    .iter()
                    .map(|&b| b as f64 * 8.0 / iv / 1e9)
                    .collect(),
                bytes: std::mem::take(&mut m.goodput_bytes),
            }
        }
        _ => GoodputSeries::default(),
    };
    Ok(RunOutput {
        summary,
        flows: ft,
        queues,
        port_rates,
        goodput,
        ports: Value::Array(ports),
        capture: Default::default(),
    })
}

/// Jain's fairness index of `x`: (sum x)^2 / (n sum x^2), in [1/n, 1];
/// `None` for no values or all zero.
pub fn jain_index(x: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    (n > 0.0 && sq > 0.0).then(|| sum * sum / (n * sq))
}

/// summary.json `fairness`: Jain's index over the completed flows' mean
/// goodput (payload bytes delivered x 8 / FCT; TCP delivers all its bytes,
/// UDP `bytes - lost_bytes`), over all flows and per
/// flow group (docs/metrics.md, "Fairness").
fn fairness_summary(cfg: &Config, done: &[crate::sim::records::Done]) -> Value {
    let n_groups = 1 + cfg.workload.groups.len();
    let mut per_group: Vec<Vec<f64>> = vec![Vec::new(); n_groups];
    let mut all = Vec::new();
    // `done` is in flow id order, so the sums add up as they always did.
    for d in done.iter().filter(|d| !d.gbps.is_nan()) {
        all.push(d.gbps);
        if let Some(g) = per_group.get_mut(d.group as usize) {
            g.push(d.gbps);
        }
    }
    let mut out = json!({"jain_index": jain_index(&all), "flows": all.len()});
    if n_groups > 1 {
        let mut groups = serde_json::Map::new();
        for (k, g) in per_group.iter().enumerate() {
            groups.insert(
                group_name(cfg, k),
                json!({"jain_index": jain_index(g), "flows": g.len(), "goodput_gbps_sum": g.iter().sum::<f64>()}),
            );
        }
        out["groups"] = Value::Object(groups);
    }
    out
}

/// The name of flow group `k` (0 = `[workload]`, "main").
pub fn group_name(cfg: &Config, k: usize) -> String {
    if k == 0 {
        return "main".into();
    }
    cfg.workload.groups[k - 1]
        .name
        .clone()
        .unwrap_or_else(|| format!("group{}", k - 1))
}

/// summary.json `flow_stats` (with `metrics.flow_stats`, else null):
/// delay and RTT over every measured packet and sample, deadline misses.
fn flow_stats_summary(world: &World) -> Value {
    let Some(m) = world.meter.as_deref().filter(|m| m.flow_stats) else {
        return Value::Null;
    };
    let num = |v: f64| if v.is_nan() { Value::Null } else { json!(v) };
    let d = &m.delay_all;
    let r = &m.rtt_all;
    let packets = m.deadline_packets;
    let missed = m.deadline_missed_packets;
    json!({
        "delay_us": {"packets": d.n, "mean": num(d.mean_us()), "p50": num(d.quantile_us(0.5)), "p99": num(d.quantile_us(0.99)), "max": num(d.max_us())},
        "rtt_us": {"samples": r.n, "mean": num(r.mean_us()), "p99": num(r.quantile_us(0.99)), "max": num(r.max_us())},
        "deadline": {
            "flows": m.deadline_flows,
            "missed_flows": m.deadline_missed_flows,
            "packets": packets,
            "missed_packets": missed,
            "missed_fraction": if packets > 0 { json!(missed as f64 / packets as f64) } else { Value::Null },
        },
    })
}

/// PFC counters of port `p` in ports.json: totals over the lossless
/// priorities (`pause_sent`, ...) and each lossless priority's own
/// (`pause_sent_p0`, ...); flat, so the sweep database's `ports` table has
/// one column each. "sent" counts frames this port sent upstream (its
/// ingress crossed XOFF), "received" frames that paused its egress.
fn pfc_port_columns(pfc: &crate::sim::Pfc, p: u32, row: &mut serde_json::Map<String, Value>) {
    let mut total = crate::sim::PfcStats::default();
    let mut per = Vec::new();
    for c in (0..8).filter(|c| pfc.lossless & (1 << c) != 0) {
        let s = pfc.stats[p as usize * 8 + c];
        total.pause_sent += s.pause_sent;
        total.xon_sent += s.xon_sent;
        total.pause_received += s.pause_received;
        total.xon_received += s.xon_received;
        total.paused += s.paused;
        total.lossless_drops += s.lossless_drops;
        per.push((c, s));
    }
    let mut put = |suffix: &str, s: &crate::sim::PfcStats| {
        row.insert(format!("pause_sent{suffix}"), s.pause_sent.into());
        row.insert(format!("xon_sent{suffix}"), s.xon_sent.into());
        row.insert(format!("pause_received{suffix}"), s.pause_received.into());
        row.insert(format!("xon_received{suffix}"), s.xon_received.into());
        row.insert(format!("paused_us{suffix}"), s.paused.as_us_f64().into());
        row.insert(format!("lossless_drops{suffix}"), s.lossless_drops.into());
    };
    put("", &total);
    for (c, s) in per {
        put(&format!("_p{c}"), &s);
    }
}

fn is_uplink(topo: &Topology, node: u32, port: u16) -> bool {
    topo.uplinks(node).contains(&port)
}

/// Checks what `Config::validate` cannot, by building everything a run
/// builds (no traffic): files, topology, routes, switch programs, workload,
/// events.
pub fn check_inputs(cfg: &Config, base: Option<&Path>) -> Result<(), Error> {
    build_world(cfg, base).map(drop)
}
