//! `pisanet dbb-plan`: DBB's plan of one source-sink switch pair of a
//! config's topology (DBB section III), as one JSON object the CLI prints
//! as tables or as is (`--json`).

use std::path::Path;

use pisanet_schemes::dbb;
use serde_json::{json, Value};

use crate::api::Error;
use crate::config::Config;

/// The plan of `src` -> `sink` (switch names) on the topology of the config
/// in `text`: the maximum flow, each link's b_ij, stage, rho_ij and N_ij,
/// the stages, their sums, `N`, the quotas, each switch's rules (egress per
/// local counter value) and `pdc_paths`, the N paths of a PDC in order,
/// each a list of switch names from `src` to `sink`.
pub fn dbb_plan(
    text: &str,
    base_dir: Option<&Path>,
    overrides: &[String],
    src: &str,
    sink: &str,
) -> Result<Value, Error> {
    let cfg = Config::parse(text, overrides)?;
    let topo = crate::run::build_topology(&cfg, base_dir)?;
    let p = dbb::plan_pair(&topo, src, sink, cfg.scheme.dbb.max_pdc)
        .map_err(|e| Error::input(format!("dbb-plan {src} -> {sink}: {e}")))?;
    let name = |n: u32| topo.nodes[n as usize].name.clone();
    let links: Vec<Value> = p
        .links
        .iter()
        .map(|l| {
            json!({
                "from": name(l.from), "to": name(l.to), "port": l.port,
                "b_bps": l.b_bps, "stage": l.stage, "rho": l.rho, "n": l.n,
            })
        })
        .collect();
    let stages: Vec<Vec<String>> = p
        .stages
        .iter()
        .map(|s| s.iter().map(|&n| name(n)).collect())
        .collect();
    let quotas: Vec<Value> = p
        .quotas
        .iter()
        .map(|&(k, q)| json!({"switch": name(k), "quota": q}))
        .collect();
    // Each switch's dispatch table: counter value -> egress port (and the
    // switch behind it), section III.E.
    let rules: Vec<Value> = p
        .stages
        .iter()
        .flatten()
        .filter(|&&k| k != p.sink)
        .map(|&k| {
            let ports = p.dispatch_of(k);
            let next: Vec<String> = ports
                .iter()
                .map(|&port| name(topo.nodes[k as usize].ports[port as usize].peer_node))
                .collect();
            json!({"switch": name(k), "cycle": ports.len(), "ports": ports, "next": next})
        })
        .collect();
    let paths: Vec<Vec<String>> = p
        .paths
        .iter()
        .map(|path| path.iter().map(|&n| name(n)).collect())
        .collect();
    Ok(json!({
        "src": src,
        "sink": sink,
        "max_flow_bps": p.max_flow_bps,
        "links": links,
        "stages": stages,
        "stage_sums": p.stage_sums,
        "N": p.n,
        "quotas": quotas,
        "rules": rules,
        "pdc_paths": paths,
    }))
}
