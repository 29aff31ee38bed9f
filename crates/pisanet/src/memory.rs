//! The memory a run will need, estimated from the config before anything is
//! allocated, against what the machine has: a topology, a flow count or a
//! sampling setting too large for the machine is refused with the estimate,
//! the limit and the key to change, instead of exhausting memory.
//!
//! The estimate is linear in what drives allocation: ports (queues, wire
//! FIFOs, counters, the pipeline's per-port state), switches (tables, prefix
//! routes, control agent), hosts, finished-flow records and samples. Routes
//! are prefix routes (pisanet_net::routes): one per class of racks and per
//! directly linked rack, so there is no switch x rack term. Packets in
//! queues are not counted: a full buffer on every port is a bound no run
//! reaches, and what is queued follows the active flows' windows.
//!
//! The limit is the smallest of the machine's available memory, the
//! address-space limit (`ulimit -v`), `PISANET_MEMORY_LIMIT_MB` and the
//! config's `run.max_memory_mb`.

use crate::api::Error;
use crate::config::{Config, PatternKind, TopologyKind};

// NOTE: measured (peak RSS of the whole run with 10 flows, ecmp, this build,
// prefix routes): leaf_spine 4 spines x 4 hosts per leaf: 1000 leaves 35 MB,
// 4000 leaves 127 MB; 1000 leaves x 40 hosts 150 MB; 1000 leaves x 32
// spines 119 MB; fat_tree k=32 89 MB, k=48 273 MB, k=64 647 MB. A fit gives
// about 1.5 kB per port and 7 kB per switch; the constants below round it
// up (the estimate is an upper bound: k=64 is estimated at 1.0 GB).
/// Bytes per port (queue, wire FIFO, counters, the pipeline's per-port state).
const PER_PORT: f64 = 2e3;
/// Bytes per switch beyond its ports and registers (tables, routes, agent).
const PER_SWITCH: f64 = 16e3;
/// Bytes per host (transport endpoints, NIC).
const PER_HOST: f64 = 2e3;
/// Bytes per flow record kept for the results, and per sample.
const PER_FLOW: f64 = 200.0;
const PER_SAMPLE: f64 = 32.0;
/// The process itself.
const FIXED: f64 = 32e6;
/// Hosts, switches, links and racks of the configured topology, from the
/// config alone (a custom topology is bounded by its file's size instead).
fn shape(cfg: &Config) -> Option<(f64, f64, f64, f64)> {
    let t = &cfg.topology;
    match t.kind {
        TopologyKind::LeafSpine => {
            let (l, s, h) = (t.leaves as f64, t.spines as f64, t.hosts_per_leaf as f64);
            Some((l * h, l + s, l * h + l * s, l))
        }
        TopologyKind::FatTree => {
            let k = t.k as f64;
            Some((
                k * k * k / 4.0,
                5.0 * k * k / 4.0,
                3.0 * k * k * k / 4.0,
                k * k / 2.0,
            ))
        }
        TopologyKind::Hula3tier => {
            let h = t.hosts_per_tor as f64;
            Some((8.0 * h, 10.0, 8.0 * h + 16.0, 8.0))
        }
        TopologyKind::Custom => None,
    }
}

/// (estimated bytes, the key that drives most of it).
pub fn estimate(cfg: &Config) -> (f64, &'static str) {
    let mut parts: Vec<(f64, &'static str)> = Vec::new();
    let (hosts, switches, links, _racks) = shape(cfg).unwrap_or((0.0, 0.0, 0.0, 0.0));
    let topo_key = match cfg.topology.kind {
        TopologyKind::LeafSpine => "topology.leaves",
        TopologyKind::FatTree => "topology.k",
        TopologyKind::Hula3tier => "topology.hosts_per_tor",
        TopologyKind::Custom => "topology.file",
    };
    // Registers: 8 bytes per cell, a few registers per slot, on every switch.
    let sc = &cfg.scheme;
    let flowlets = sc.flowlet_slots as f64 * 24.0;
    let (registers, reg_key) = match sc.kind.name() {
        "p4te" => (sc.p4te.flow_slots as f64 * 48.0, "scheme.p4te.flow_slots"),
        "hula" => (
            flowlets + sc.hula.tor_slots as f64 * 32.0,
            "scheme.hula.tor_slots",
        ),
        "conga" | "conga_prime" => (
            flowlets + sc.conga.leaf_slots as f64 * 64.0,
            "scheme.conga.leaf_slots",
        ),
        "flowlet_ecmp" => (flowlets, "scheme.kind"),
        "dbb" => (
            sc.dbb.pair_slots as f64
                * if sc.dbb.counter == pisanet_schemes::dbb::CounterKind::PerFlow {
                    sc.dbb.flow_slots as f64 * 8.0
                } else {
                    8.0
                },
            "scheme.dbb.pair_slots",
        ),
        "p4qcn" => (sc.p4qcn.flow_slots as f64 * 8.0, "scheme.p4qcn.flow_slots"),
        _ => (0.0, "scheme.kind"),
    };
    parts.push((
        2.0 * links * PER_PORT + switches * PER_SWITCH + hosts * PER_HOST,
        topo_key,
    ));
    parts.push((switches * registers, reg_key));
    if cfg.topology.link_loss_rate > 0.0 && cfg.topology.link_loss_per_link {
        // A random stream (32 bytes) per port.
        parts.push((2.0 * links * 32.0, "topology.link_loss_per_link"));
    }
    if cfg.workload.pattern != PatternKind::File {
        parts.push((cfg.workload.flows as f64 * PER_FLOW, "workload.flows"));
    }
    for g in &cfg.workload.groups {
        if !matches!(g.pattern(), PatternKind::File | PatternKind::Incast) {
            let flows = g
                .flows
                .unwrap_or(crate::config::WorkloadCfg::default().flows);
            parts.push((flows as f64 * PER_FLOW, "workload.groups[].flows"));
        }
    }
    let sim_us = cfg.run.max_sim_time_ms * 1000.0;
    let switch_ports = 2.0 * links - hosts;
    for (interval, key) in [
        (
            cfg.metrics.queue_sample_interval_us,
            "metrics.queue_sample_interval_us",
        ),
        (
            cfg.metrics.port_rate_interval_us,
            "metrics.port_rate_interval_us",
        ),
    ] {
        if interval > 0.0 {
            parts.push((sim_us / interval * switch_ports * PER_SAMPLE, key));
        }
    }
    let total = FIXED + parts.iter().map(|p| p.0).sum::<f64>();
    let key = parts
        .iter()
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or("topology", |p| p.1);
    (total, key)
}

/// Memory this process may still use (bytes): the smallest of the machine's
/// available memory, the address-space limit (`ulimit -v`) and
/// `PISANET_MEMORY_LIMIT_MB` (a budget for shared machines and tests).
pub fn available() -> Option<f64> {
    let budget = std::env::var("PISANET_MEMORY_LIMIT_MB")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|mb| mb * 1e6);
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let avail = meminfo.as_deref().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            .map(|kb| kb * 1024.0)
    });
    let limits = std::fs::read_to_string("/proc/self/limits").ok();
    // NOTE: the limit covers the address space already mapped (the Python
    // interpreter and its libraries, say): only the rest is available.
    let mapped = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmSize:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb * 1024.0);
    let as_limit = limits.as_deref().and_then(|l| {
        l.lines()
            .find(|l| l.starts_with("Max address space"))
            .and_then(|l| l.split_whitespace().nth(3)?.parse::<f64>().ok())
            .map(|limit| (limit - mapped).max(0.0))
    });
    [avail, as_limit, budget]
        .into_iter()
        .flatten()
        .min_by(|a, b| a.total_cmp(b))
}

/// Refuses a config whose estimate exceeds its own `run.max_memory_mb`, or
/// what is available: one line with the estimate, the limit and the key that
/// drives most of the estimate.
pub fn check(cfg: &Config) -> Result<(), Error> {
    let (need, key) = estimate(cfg);
    let budget = cfg.run.max_memory_mb * 1e6;
    if budget > 0.0 && need > budget {
        return Err(Error::input(format!(
            "run.max_memory_mb: this run needs about {:.2} GB of memory, mostly for {key}, more than the budget of {} MB; raise the budget or make {key} smaller",
            need / 1e9,
            cfg.run.max_memory_mb,
        )));
    }
    match available() {
        Some(have) if need > have => Err(Error::input(format!(
            "{key}: this run needs about {:.1} GB of memory, more than the {:.1} GB available; make it smaller",
            need / 1e9,
            have / 1e9
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_fabric_is_refused_before_anything_is_built() {
        let cfg = Config::parse(
            "[topology]\nleaves = 65536\nhosts_per_leaf = 250\n[workload]\nflows = 10\n",
            &[],
        )
        .unwrap();
        let e = check(&cfg).unwrap_err().message;
        assert!(
            e.starts_with("topology.leaves: this run needs about"),
            "{e}"
        );
        let cfg = Config::parse("[workload]\nflows = 10000000000\n", &[]).unwrap();
        let e = check(&cfg).unwrap_err().message;
        assert!(e.starts_with("workload.flows: this run needs about"), "{e}");
        let cfg = Config::parse(
            "[run]\nmax_sim_time_ms = 100000000\n[metrics]\nqueue_sample_interval_us = 0.001\n",
            &[],
        )
        .unwrap();
        let e = check(&cfg).unwrap_err().message;
        assert!(
            e.starts_with("metrics.queue_sample_interval_us: this run needs"),
            "{e}"
        );
        // The demo fits.
        assert!(check(&Config::default()).is_ok());
        // A budget of the config's own.
        let cfg = Config::parse(
            "[run]\nmax_memory_mb = 100\n[topology]\nkind = \"fat_tree\"\nk = 32\n",
            &[],
        )
        .unwrap();
        let e = check(&cfg).unwrap_err().message;
        assert!(
            e.starts_with("run.max_memory_mb: this run needs about")
                && e.contains("mostly for topology.k, more than the budget of 100 MB"),
            "{e}"
        );
    }

    #[test]
    fn a_65536_host_fat_tree_is_estimated_under_2_gb() {
        // Prefix routes: no switch x rack term (it was 5 GB here).
        let cfg = Config::parse("[topology]\nkind = \"fat_tree\"\nk = 64\n", &[]).unwrap();
        let (need, _) = estimate(&cfg);
        assert!(need < 2e9, "{need}");
    }
}
