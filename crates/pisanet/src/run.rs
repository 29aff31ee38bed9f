//! Config -> network -> run -> checks -> results.

use std::path::{Path, PathBuf};
use std::time::Instant;

use pisanet_engine::{BitRate, RngStreams, SimTime, StreamKind};
use pisanet_net::queue::QueueConfig;
use pisanet_net::topology::{self, AddrPlan, LinkSpec, NodeKind, Topology};
use pisanet_transport::TcpConfig;
use pisanet_workload::{Cdf, FlowGenerator, HostLayout, Pattern, ServerAssignment, WorkloadSpec};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::api::{Error, FlowTable, PortRates, Progress, QueueSamples, RunOutput};
use crate::config::{
    Config, CustomTopology, EventKind, PatternKind, ServerAssignmentKind, SourcePortsKind,
    TopologyKind, TransportKind,
};

use crate::sim::{LinkEventSpec, StopReason, World, WorldParams};

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
    let size = std::fs::metadata(&path).map_err(fail)?.len();
    let limit = crate::memory::available()
        .map_or(MAX_INPUT_BYTES, |a| ((a / 4.0) as u64).min(MAX_INPUT_BYTES));
    if size > limit {
        return Err(Error::input(format!(
            "{key}: {} is {:.1} MB, more than the {:.1} MB an input file may have here",
            path.display(),
            size as f64 / 1e6,
            limit as f64 / 1e6
        )));
    }
    let bytes = std::fs::read(&path).map_err(fail)?;
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
            build_custom(&custom).map_err(|e| format!("topology.file ({file}): {e}"))
        }
    };
    topo.map_err(Error::input)
}

fn build_custom(c: &CustomTopology) -> Result<Topology, String> {
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
        if !(l.gbps.is_finite() && l.gbps > 0.0) {
            return Err(format!(
                "links[{i}].gbps: must be a positive number, got {}",
                l.gbps
            ));
        }
        if !(l.delay_us.is_finite() && l.delay_us >= 0.0) {
            return Err(format!(
                "links[{i}].delay_us: must be zero or positive, got {}",
                l.delay_us
            ));
        }
        links.push(LinkSpec {
            a,
            b,
            rate: BitRate::from_gbps(l.gbps),
            delay: SimTime::from_us_f64(l.delay_us),
        });
    }
    Topology::from_links("custom", nodes, &links, AddrPlan::Flat)
}

fn build_cdf(cfg: &Config, base: Option<&Path>) -> Result<Cdf, Error> {
    let name = &cfg.workload.cdf;
    if let Some(c) = Cdf::builtin(name) {
        return Ok(c);
    }
    let text = read_file("workload.cdf", base, name).map_err(|e| {
        Error::input(format!(
            "{} (not a built-in: websearch, datamining)",
            e.message
        ))
    })?;
    Cdf::parse(&text, &format!("workload.cdf ({name})")).map_err(Error::input)
}

fn tcp_config(cfg: &Config) -> TcpConfig {
    cfg.transport.tcp_config()
}

/// Builds and runs; returns the results.
pub fn run_config(
    cfg: &Config,
    base: Option<&Path>,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> Result<RunOutput, Error> {
    let wall = Instant::now();
    let mut world = build_world(cfg, base)?;
    let max_time = SimTime::from_us_f64(cfg.run.max_sim_time_ms * 1000.0);
    let stop = world.run(max_time, progress);
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

/// Everything a run builds before its first event: the memory estimate,
/// topology, routes, every switch program, the workload, the scheduled
/// events and the samplers. `validate` calls this too, so it answers
/// exactly what `run` would.
pub fn build_world(cfg: &Config, base: Option<&Path>) -> Result<World, Error> {
    crate::memory::check(cfg)?;
    let topo = build_topology(cfg, base)?;
    let streams = RngStreams::new(cfg.run.seed);
    let cdf = build_cdf(cfg, base)?;
    let short_threshold = cfg
        .workload
        .short_threshold_bytes
        .unwrap_or_else(|| cdf.quantile(0.9));
    let w = &cfg.workload;
    let pattern = match w.pattern {
        PatternKind::Uniform => Pattern::Uniform,
        PatternKind::Stride => Pattern::Stride,
        PatternKind::Permutation => Pattern::Permutation,
        PatternKind::Incast => Pattern::Incast {
            senders: w.incast_senders,
            bytes: w.incast_bytes,
        },
        PatternKind::ClientServer => Pattern::ClientServer {
            connections: w.connections,
            assignment: match w.client_server_assignment {
                ServerAssignmentKind::Permutation => ServerAssignment::Permutation,
                ServerAssignmentKind::Random => ServerAssignment::Random,
            },
        },
        PatternKind::File => {
            let file = w.file.as_deref().unwrap_or_default();
            let text = read_file("workload.file", base, file)?;
            let flows = pisanet_workload::parse_flow_file_for_hosts(
                &text,
                &format!("workload.file ({file})"),
                topo.n_hosts,
            )
            .map_err(Error::input)?;
            Pattern::File(flows)
        }
    };
    let layout = HostLayout {
        racks: topo.rack_hosts.clone(),
    };
    let spec = WorkloadSpec {
        cdf,
        load: w.load,
        flows: w.flows,
        pattern,
        host_rate: BitRate::from_gbps(cfg.topology.host_link_gbps),
        short_threshold_bytes: short_threshold,
        start: SimTime::from_us_f64(w.start_us),
    };
    let gen = FlowGenerator::new(spec, &layout, streams.stream(StreamKind::Workload, 0))
        .map_err(Error::input)?;
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
        priorities: t.priorities,
    };
    let params = WorldParams {
        switch_queue,
        shared_buffer: (t.shared_buffer_kb > 0.0)
            .then_some(((t.shared_buffer_kb * 1000.0) as u64, t.shared_buffer_alpha)),
        tcp: tcp_config(cfg),
        udp_rate: (cfg.transport.kind == TransportKind::Udp)
            .then(|| BitRate::from_gbps(cfg.transport.udp_rate_gbps)),
        total_flows,
        link_loss_rate: t.link_loss_rate,
        tsq_bytes: (cfg.transport.tsq_kb > 0.0)
            .then(|| (cfg.transport.tsq_kb * 1000.0).round() as u64),
        sport_salt: (w.source_ports == SourcePortsKind::Random)
            .then(|| rand::RngCore::next_u64(&mut streams.stream(StreamKind::Workload, 1))),
    };
    let fwd = crate::forward::build(cfg, &topo, &streams)?;
    let mut world = World::new(topo, fwd, gen, params, &streams);

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
    let n = world.flows.len();
    let mut ft = FlowTable::default();
    let mut hasher = Sha256::new();
    for (id, f) in world.flows.iter().enumerate() {
        let start = f.first_sent.unwrap_or(f.arrival);
        let (finish_us, fct_us, slowdown) = match f.finish {
            Some(fin) => {
                let fct = fin.saturating_sub(start);
                (
                    fin.as_us_f64(),
                    fct.as_us_f64(),
                    fct.ps() as f64 / f.ideal.ps().max(1) as f64,
                )
            }
            None => (f64::NAN, f64::NAN, f64::NAN),
        };
        ft.id.push(id as u32);
        ft.src.push(f.src);
        ft.dst.push(f.dst);
        ft.bytes.push(f.bytes);
        ft.class.push(f.class);
        ft.start_us.push(start.as_us_f64());
        ft.finish_us.push(finish_us);
        ft.fct_us.push(fct_us);
        ft.slowdown.push(slowdown);
        ft.retransmissions.push(f.retransmissions);
        ft.reordered.push(f.reordered);
        for x in [
            id as u64,
            f.src as u64,
            f.dst as u64,
            f.bytes,
            start.ps(),
            f.finish.map_or(u64::MAX, |t| t.ps()),
            f.retransmissions as u64,
            f.reordered as u64,
        ] {
            hasher.update(x.to_le_bytes());
        }
    }
    let digest: String = hasher.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();

    let done = |i: usize| !ft.fct_us[i].is_nan();
    let pick = |pred: &dyn Fn(usize) -> bool| -> Vec<f64> {
        (0..n)
            .filter(|&i| done(i) && pred(i))
            .map(|i| ft.fct_us[i])
            .collect()
    };
    let fct_all = stats(pick(&|_| true));
    let fct_short = stats(pick(&|i| ft.class[i] == pisanet_net::TC_SHORT));
    let fct_large = stats(pick(&|i| ft.class[i] == pisanet_net::TC_LARGE));
    let fct_lt100k = stats(pick(&|i| ft.bytes[i] < 100_000));
    let fct_gt10m = stats(pick(&|i| ft.bytes[i] > 10_000_000));
    let slow = stats(
        (0..n)
            .filter(|&i| done(i))
            .map(|i| ft.slowdown[i])
            .collect(),
    );
    let retrans: u64 = ft.retransmissions.iter().map(|&r| r as u64).sum();
    let reordered: u64 = ft.reordered.iter().map(|&r| r as u64).sum();

    let mut c = world.counts;
    c.injected += world.switch_injected();
    let program_violations = world.program_violations();
    world.violations.extend(program_violations);
    let in_flight = world.in_flight();
    let conservation_ok = c.injected == c.delivered + c.consumed + c.dropped + in_flight;
    if !conservation_ok {
        world.violations.push(format!(
            "packet conservation violated: injected {} != delivered {} + consumed {} + dropped {} + in flight {}",
            c.injected, c.delivered, c.consumed, c.dropped, in_flight
        ));
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
        "packets": {
            "injected": c.injected,
            "delivered": c.delivered,
            "consumed": c.consumed,
            "dropped": c.dropped,
            "in_flight": in_flight,
            "ecn_marked": c.ecn_marked,
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
    let ports: Vec<Value> = (0..world.ports.len() as u32)
        .map(|p| {
            let port = &world.ports[p as usize];
            let k = port.queue.counters;
            json!({
                "name": world.port_name(p),
                "switch_port": !port.is_host_port,
                "uplink": !port.is_host_port && is_uplink(&world.topo, port.node, port.port_no),
                "tx_packets": k.tx_packets, "tx_bytes": k.tx_bytes, "drops": k.drops,
                "ecn_marks": k.ecn_marks, "max_depth_bytes": k.max_depth_bytes,
                "made_tx_bytes": port.made_tx_bytes,
            })
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
    let (ts, ps, ds) = std::mem::take(&mut world.samples);
    let queues = QueueSamples {
        time_us: ts.iter().map(|t| t.as_us_f64()).collect(),
        port: ps
            .iter()
            .map(|&p| names[index[p as usize]].clone())
            .collect(),
        depth_bytes: ds,
    };
    let r = std::mem::take(&mut world.rates);
    let port_rates = PortRates {
        time_us: r.time.iter().map(|t| t.as_us_f64()).collect(),
        port: r.port.iter().map(|&p| world.port_name(p)).collect(),
        tx_gbps: r.tx_gbps,
        carried_gbps: r.carried_gbps,
    };
    Ok(RunOutput {
        summary,
        flows: ft,
        queues,
        port_rates,
        ports: Value::Array(ports),
        capture: Default::default(),
    })
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
