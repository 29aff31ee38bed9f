//! Per-flow deadlines into the QoS schemes' `qos_deadline` table (P4QoS,
//! seed 003, section II: "each application appends an additional QoS header
//! containing the maximum end-to-end latency"; docs/schemes/p4qos.md "Who
//! inserts the QoS header").
//!
//! Owns: turning every flow's `deadline_us` (flow-list column or group
//! attribute) into one `qos_deadline` entry keyed by the flow's exact
//! addresses and ports, ahead of the `[[scheme.qos.deadlines]]` entries.
//! Guarantees: a run whose scheme does not read `[scheme.qos]`, or whose
//! flows have no deadline, is built from the config as it is (same
//! digests); the hosts' deadline metrics and the switches use the same
//! value (rounded to whole microseconds for the table).

use pisanet_net::topology::Topology;
use pisanet_schemes::qos::DeadlineEntry;
use pisanet_workload::FlowSource;

use crate::api::Error;
use crate::config::Config;

/// The destination port of every flow (sim/flow.rs `FlowEnds`).
const DPORT: u16 = 80;

/// `cfg` with one `scheme.qos.deadlines` entry per flow that has a deadline,
/// first in the list (an exact entry; the configured ones, wildcards, serve
/// the flows without one), or None when nothing changes. `flows` is the
/// run's flow source (cloned and walked here: every flow is known before
/// the first event, as the control plane installs its entries at start).
pub fn with_flow_deadlines(
    cfg: &Config,
    flows: &FlowSource,
    topo: &Topology,
    sport_salt: Option<u64>,
) -> Result<Option<Config>, Error> {
    if !cfg.scheme.kind.row().reads.contains(&"qos") {
        return Ok(None);
    }
    let qos = &cfg.scheme.qos;
    let max = qos.max_deadline_us();
    let mut entries = Vec::new();
    for f in flows.clone() {
        let Some(d) = f.attrs.deadline else { continue };
        let us = d.as_us_f64().round().max(1.0) as u64;
        if us > max {
            return Err(Error::input(format!(
                "{}: flow {} (host {} -> host {}): deadline_us = {}: the QoS header holds at most {max} us with scheme.qos.time_shift = {}; raise scheme.qos.time_shift",
                match f.group {
                    0 => "workload".to_string(),
                    g => format!("workload.groups[{}]", g - 1),
                },
                f.id,
                f.src,
                f.dst,
                d.as_us_f64(),
                qos.time_shift
            )));
        }
        let ip = |h: u32| {
            let a = topo.host_addr[h as usize];
            format!(
                "{}.{}.{}.{}",
                a >> 24,
                (a >> 16) & 255,
                (a >> 8) & 255,
                a & 255
            )
        };
        let sport = crate::sim::source_port(u64::from(f.conn.unwrap_or(f.id)), sport_salt);
        entries.push(DeadlineEntry {
            src: Some(ip(f.src)),
            dst: Some(ip(f.dst)),
            sport: Some(sport),
            dport: Some(DPORT),
            dscp: None,
            deadline_us: us,
        });
    }
    if entries.is_empty() {
        return Ok(None);
    }
    let mut out = cfg.clone();
    entries.append(&mut out.scheme.qos.deadlines);
    out.scheme.qos.deadlines = entries;
    Ok(Some(out))
}
