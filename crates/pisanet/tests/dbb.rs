//! DBB end to end (issue 14's regression tests, direction only): per-link
//! packet counts over whole PDCs equal N_ij on the uneven Fig. 5 graph, and
//! on the reconstructed Fig. 6 testbed DBB reorders far less than RPS.

use pisanet::{dbb_plan, run_toml, RunOutput};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/dbb")
}

fn text(config: &str) -> String {
    std::fs::read_to_string(dir().join(config)).unwrap()
}

fn run(config: &str, sets: &[&str]) -> RunOutput {
    let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    run_toml(&text(config), Some(&dir()), &o, &mut |_| true)
        .unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// tx_packets of every port, by name ("S1->S2").
fn tx_packets(o: &RunOutput) -> HashMap<String, u64> {
    o.ports
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["tx_packets"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn fig5_link_counts_follow_n_ij_over_whole_pdcs() {
    let plan = dbb_plan(&text("fig5.toml"), Some(&dir()), &[], "S1", "S6").unwrap();
    assert_eq!(plan["N"].as_u64().unwrap(), 10);
    for counter in ["shared", "per_flow"] {
        let o = run("fig5.toml", &[&format!("scheme.dbb.counter={counter}")]);
        assert_eq!(o.summary["packets"]["dropped"], 0);
        let tx = tx_packets(&o);
        // Each switch splits the packets it dispatched (m) by its table:
        // m / cycle whole cycles give each next hop its N_ij (its count in
        // the table), the rest the first m % cycle entries. At S1 a cycle
        // is a whole PDC (N = 10).
        for rule in plan["rules"].as_array().unwrap() {
            let k = rule["switch"].as_str().unwrap();
            let next: Vec<String> = serde_json::from_value(rule["next"].clone()).unwrap();
            let cycle = next.len() as u64;
            let mut hops = next.clone();
            hops.sort();
            hops.dedup();
            let m: u64 = hops.iter().map(|j| tx[&format!("{k}->{j}")]).sum();
            assert!(m >= 100, "{counter}: {k} dispatched {m}");
            for j in &hops {
                let in_table = next.iter().filter(|x| *x == j).count() as u64;
                let in_rest = next[..(m % cycle) as usize]
                    .iter()
                    .filter(|x| *x == j)
                    .count() as u64;
                assert_eq!(
                    tx[&format!("{k}->{j}")],
                    m / cycle * in_table + in_rest,
                    "{counter}: {k}->{j} of {m}"
                );
            }
        }
        // N_ij is each link's count in the tables, whole PDCs (eq. 2).
        let links = plan["links"].as_array().unwrap();
        let s1_n: Vec<u64> = links[..2]
            .iter()
            .map(|l| l["n"].as_u64().unwrap())
            .collect();
        assert_eq!(s1_n, vec![2, 8]);
    }
}

/// (reordered packets, retransmissions, mean goodput in Gb/s) over all flows.
fn reorder_and_goodput(o: &RunOutput) -> (u64, u64, f64) {
    let f = &o.flows;
    let reordered = f.reordered.iter().map(|&r| r as u64).sum();
    let retx = f.retransmissions.iter().map(|&r| r as u64).sum();
    let gbps: f64 = f
        .bytes
        .iter()
        .zip(&f.fct_us)
        .map(|(&b, &t)| b as f64 * 8.0 / (t * 1e3))
        .sum::<f64>()
        / f.bytes.len() as f64;
    (reordered, retx, gbps)
}

#[test]
fn fig6_dbb_reorders_far_less_than_rps() {
    let dbb = reorder_and_goodput(&run("fig6.toml", &[]));
    let per_flow = reorder_and_goodput(&run("fig6.toml", &["scheme.dbb.counter=per_flow"]));
    let rps = reorder_and_goodput(&run(
        "fig6.toml",
        &["scheme.kind=rps", "run.unused_keys=ignore"],
    ));
    eprintln!("fig6 (reordered, retransmissions, goodput Gb/s per flow): dbb shared {dbb:?}, dbb per_flow {per_flow:?}, rps {rps:?}");
    assert!(dbb.0 * 10 < rps.0.max(10), "dbb {dbb:?} vs rps {rps:?}");
    assert!(
        per_flow.0 * 10 < rps.0.max(10),
        "per_flow {per_flow:?} vs rps {rps:?}"
    );
    assert!(dbb.2 >= rps.2, "goodput: dbb {dbb:?} vs rps {rps:?}");
}

/// (delivered bytes, duplicate ACKs, reordered packets) over all flows.
fn delivered_dupacks_reordered(o: &RunOutput) -> (u64, u64, u64) {
    let f = &o.flows;
    (
        f.delivered.iter().sum(),
        f.dup_acks.iter().map(|&d| d as u64).sum(),
        f.reordered.iter().map(|&r| r as u64).sum(),
    )
}

#[test]
fn fig6_iperf_like_connections_dbb_goodput_beats_rps() {
    // Section IV.A at 40 Gb/s offered, scaled down: one 10 Gb/s-capped
    // NewReno connection per pair for 5 ms (fig6_iperf.csv).
    let sets = [
        "workload.file=\"fig6_iperf.csv\"",
        "metrics.flow_stats=true",
        "run.max_sim_time_ms=20",
    ];
    let with = |extra: &[&str]| {
        let mut s: Vec<&str> = sets.to_vec();
        s.extend_from_slice(extra);
        delivered_dupacks_reordered(&run("fig6.toml", &s))
    };
    let dbb = with(&[]);
    let per_flow = with(&["scheme.dbb.counter=per_flow"]);
    let rps = with(&["scheme.kind=rps", "run.unused_keys=ignore"]);
    eprintln!("fig6 iperf-like (delivered bytes, dup ACKs, reordered): dbb {dbb:?}, per_flow {per_flow:?}, rps {rps:?}");
    assert!(dbb.0 > rps.0, "goodput: dbb {dbb:?} vs rps {rps:?}");
    assert!(
        per_flow.0 > rps.0,
        "goodput: per_flow {per_flow:?} vs rps {rps:?}"
    );
    // Reordering makes duplicate ACKs: RPS's senders see many, DBB's few.
    assert!(rps.1 > 0, "rps {rps:?}");
    assert!(dbb.1 * 10 < rps.1, "dup ACKs: dbb {dbb:?} vs rps {rps:?}");
}

#[test]
fn dup_ack_counters_are_zero_unless_flow_stats_is_on() {
    let o = run(
        "fig6.toml",
        &[
            "workload.file=\"fig6_iperf.csv\"",
            "run.max_sim_time_ms=20",
            "scheme.kind=rps",
            "run.unused_keys=ignore",
        ],
    );
    assert!(o.flows.reordered.iter().any(|&r| r > 0));
    assert!(o.flows.dup_acks.iter().all(|&d| d == 0));
    assert!(o.flows.fast_retransmits.iter().all(|&d| d == 0));
}
