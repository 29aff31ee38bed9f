//! End-to-end checks of the simulator through its public API: TCP on real
//! paths, invariants, determinism and bad input.

mod common;

use pisanet::{run_toml, ErrorKind, RunOutput};

fn tmpdir(name: &str) -> std::path::PathBuf {
    common::tmpdir("sim", name)
}

fn run(cfg: &str, sets: &[&str]) -> RunOutput {
    let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    run_toml(cfg, None, &o, &mut |_| true).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// Runs `flows` (CSV rows "start_us,src,dst,bytes") on a config.
fn run_flows(name: &str, cfg: &str, flows: &str, sets: &[&str]) -> RunOutput {
    common::run_flows("sim", name, cfg, flows, sets)
}

const SMALL: &str = concat!(
    small_leaf_spine!(200, 65),
    "[transport]\nkind = \"dctcp\"\n"
);

fn f64_at(v: &serde_json::Value, path: &str) -> f64 {
    path.split('.')
        .fold(v, |v, k| &v[k])
        .as_f64()
        .unwrap_or_else(|| panic!("{path} missing"))
}

#[test]
fn one_flow_on_an_idle_path_reaches_line_rate() {
    for transport in ["dctcp", "newreno"] {
        let out = run_flows(
            "line-rate",
            SMALL,
            "0,0,3,20000000\n",
            &[&format!("transport.kind={transport}")],
        );
        let fct_s = out.flows.fct_us[0] * 1e-6;
        let goodput = 20e6 * 8.0 / fct_s;
        assert!(
            goodput >= 0.95 * 10e9,
            "{transport}: goodput {:.3} Gb/s",
            goodput / 1e9
        );
        assert_eq!(out.flows.retransmissions[0], 0);
    }
}

/// Largest backlog (bytes) the port named `name` ever held.
fn max_depth(out: &RunOutput, name: &str) -> u64 {
    let ports = out.ports.as_array().expect("ports");
    let port = ports
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no port {name}"));
    port["max_depth_bytes"].as_u64().expect("max_depth_bytes")
}

#[test]
fn tsq_keeps_a_lone_flows_nic_queue_small_at_line_rate() {
    // One flow alone on an idle path: nothing in the fabric slows it below
    // its NIC's rate, so without TSQ its window (up to rwnd, 4 MB) piles up
    // in its own NIC. With TSQ the NIC holds at most the limit plus the one
    // packet that may pass it (Linux `tcp_small_queue_check`), and the flow
    // loses no throughput.
    let flows = "0,0,3,20000000\n";
    let on = run_flows("tsq-on", SMALL, flows, &["transport.tsq_kb=131.072"]);
    let off = run_flows("tsq-off", SMALL, flows, &["transport.tsq_kb=0"]);
    let (nic_on, nic_off) = (max_depth(&on, "h0->leaf0"), max_depth(&off, "h0->leaf0"));
    assert!(nic_on <= 131_072 + 1518, "NIC held {nic_on} B with TSQ");
    assert!(nic_off > 1_000_000, "NIC held only {nic_off} B without TSQ");
    let (fct_on, fct_off) = (on.flows.fct_us[0], off.flows.fct_us[0]);
    assert!(
        fct_on <= fct_off * 1.001,
        "FCT {fct_on} us with TSQ, {fct_off} us without"
    );
}

#[test]
fn two_flows_share_a_bottleneck_fairly() {
    // Hosts 0 and 1 (leaf 0) both send to host 2 (leaf 1): its 10G link is the bottleneck.
    for transport in ["dctcp", "newreno"] {
        let out = run_flows(
            "fair",
            SMALL,
            "0,0,2,20000000\n0,1,2,20000000\n",
            &[&format!("transport.kind={transport}")],
        );
        let x: Vec<f64> = out.flows.fct_us.iter().map(|fct| 20e6 / fct).collect();
        let jain =
            x.iter().sum::<f64>().powi(2) / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>());
        assert!(
            jain >= 0.9,
            "{transport}: Jain's index {jain:.3} from {x:?}"
        );
        // And together they fill the bottleneck.
        let total_s = out.flows.finish_us.iter().cloned().fold(0.0, f64::max) * 1e-6;
        assert!(40e6 * 8.0 / total_s > 0.9 * 10e9);
    }
}

#[test]
fn random_drops_still_deliver_every_byte() {
    let out = run_flows(
        "lossy",
        SMALL,
        "0,0,2,3000000\n10,1,3,500000\n20,3,0,1000000\n",
        &["topology.link_loss_rate=0.01", "transport.kind=newreno"],
    );
    // The run's own checks passed (exactly-once, in-order delivery); all completed with retransmissions.
    assert_eq!(out.summary["flows"]["completed"], 3);
    assert!(out.summary["retransmissions"].as_u64().unwrap() > 0);
    assert!(out.summary["conservation_ok"].as_bool().unwrap());
    assert!(out.summary["packets"]["dropped"].as_u64().unwrap() > 0);
    // Losses and retransmissions are not reordering: ECMP keeps each flow on one FIFO path.
    assert_eq!(out.summary["packets"]["reordered"], 0);
}

#[test]
fn same_seed_same_digest_other_seed_other_digest() {
    let cfg = format!("{SMALL}\n[workload]\nflows = 200\nload = 0.5\n");
    let a = run(&cfg, &[]);
    let b = run(&cfg, &[]);
    let c = run(&cfg, &["run.seed=2"]);
    assert_eq!(a.summary["digest"], b.summary["digest"]);
    assert_ne!(a.summary["digest"], c.summary["digest"]);
    assert_eq!(a.summary["flows"]["completed"], 200);
}

#[test]
fn source_ports_are_sequential_by_default_or_hashed_with_a_salt() {
    use pisanet::sim::source_port;
    // Sequential: 10000 + the connection number, wrapping at 50000.
    assert_eq!(source_port(0, None), 10_000);
    assert_eq!(source_port(7, None), 10_007);
    assert_eq!(source_port(50_003, None), 10_003);
    // Random: in range, a function of (connection, salt), spread out.
    let ports: Vec<u16> = (0..1000).map(|c| source_port(c, Some(42))).collect();
    assert!(ports.iter().all(|p| (10_000..60_000).contains(p)));
    assert_eq!(ports[17], source_port(17, Some(42)));
    let mut distinct = ports.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(distinct.len() > 980, "{}", distinct.len());
    assert_ne!(
        ports,
        (0..1000)
            .map(|c| source_port(c, Some(43)))
            .collect::<Vec<_>>()
    );
    // End to end: other ports, other paths, every byte still delivered; the
    // same seed repeats the run.
    let cfg = format!("{SMALL}\n[workload]\nflows = 200\nload = 0.5\n");
    let seq = run(&cfg, &[]);
    let a = run(&cfg, &["workload.source_ports=random"]);
    let b = run(&cfg, &["workload.source_ports=random"]);
    assert_eq!(a.summary["digest"], b.summary["digest"]);
    assert_ne!(a.summary["digest"], seq.summary["digest"]);
    assert_eq!(a.summary["flows"]["completed"], 200);
}

#[test]
fn a_loaded_fabric_conserves_packets_and_reports_every_key() {
    let cfg = format!(
        "{SMALL}\n[workload]\nflows = 300\nload = 0.8\n[metrics]\nqueue_sample_interval_us = 50\n"
    );
    let out = run(&cfg, &["topology.buffer_kb=30", "transport.kind=newreno"]);
    let s = &out.summary;
    for key in [
        "flows.total",
        "flows.completed",
        "fct_us.mean",
        "fct_us.p50",
        "fct_us.p99",
        "fct_us.short.mean",
        "fct_us.short.p99",
        "fct_us.large.mean",
        "slowdown.mean",
        "slowdown.p99",
        "retransmissions",
        "packets.injected",
        "packets.delivered",
        "packets.dropped",
        "packets.in_flight",
        "packets.ecn_marked",
        "sim_time_s",
        "wall_time_s",
        "events",
        "packet_hops",
        "events_per_s",
        "packet_hops_per_s",
        "peak_rss_mb",
    ] {
        f64_at(s, key);
    }
    assert!(s["conservation_ok"].as_bool().unwrap());
    assert!(s["digest"].as_str().unwrap().len() == 32);
    assert!(
        s["packets"]["dropped"].as_u64().unwrap() > 0,
        "a 30 KB buffer at 80% load drops"
    );
    let slow_min = out
        .flows
        .slowdown
        .iter()
        .cloned()
        .filter(|x| !x.is_nan())
        .fold(f64::MAX, f64::min);
    assert!(slow_min >= 0.999, "slowdown below 1: {slow_min}");
    assert!(!out.queues.time_us.is_empty());
}

#[test]
fn dctcp_marks_and_keeps_queues_short() {
    // Incast of 8 long flows into one host: DCTCP holds the queue near K, NewReno fills the buffer.
    let cfg = r#"
[topology]
kind = "leaf_spine"
leaves = 3
spines = 2
hosts_per_leaf = 4
buffer_kb = 400
ecn_threshold_kb = 30
[workload]
pattern = "incast"
incast_senders = 8
incast_bytes = 4000000
"#;
    let d = run(cfg, &["transport.kind=dctcp"]);
    let r = run(cfg, &["transport.kind=newreno"]);
    let max_depth = |o: &RunOutput| {
        o.ports
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["max_depth_bytes"].as_u64().unwrap())
            .max()
            .unwrap()
    };
    assert!(d.summary["packets"]["ecn_marked"].as_u64().unwrap() > 0);
    assert!(
        max_depth(&d) < max_depth(&r),
        "dctcp {} vs newreno {}",
        max_depth(&d),
        max_depth(&r)
    );
}

#[test]
fn link_failure_drops_what_the_link_carries() {
    let cfg = format!(
        "{SMALL}\n[workload]\nflows = 100\nload = 0.5\n[[events]]\nat_ms = 0.5\nkind = \"link_down\"\nlink = \"leaf0-spine0\"\n[[events]]\nat_ms = 2\nkind = \"link_up\"\nlink = \"leaf0-spine0\"\n"
    );
    let out = run(&cfg, &["transport.kind=newreno"]);
    assert!(out.summary["conservation_ok"].as_bool().unwrap());
    assert!(out.summary["packets"]["dropped"].as_u64().unwrap() > 0);
}

#[test]
fn bad_input_is_one_line_naming_the_key() {
    let o = |s: &str| vec![s.to_string()];
    for (set, expect) in [
        ("topology.kind=fat_tree", None),
        // A leaf_spine key with a fat_tree is refused, saying when it applies.
        (
            "topology.kind=fat_tree",
            Some("topology.hosts_per_leaf: is read only when"),
        ),
        ("workload.load=1.0", Some("workload.load")),
        ("topology.leaves=0", Some("topology.leaves")),
        ("workload.cdf=/nonexistent.cdf", Some("workload.cdf")),
        (
            "events=[{at_ms=1, kind=\"link_down\", link=\"leaf0-spine9\"}]",
            Some("events[0].link"),
        ),
    ] {
        let sets = match expect {
            None => vec![set.to_string(), "run.unused_keys=ignore".to_string()],
            Some(_) => o(set),
        };
        let r = run_toml(SMALL, None, &sets, &mut |_| true);
        match expect {
            None => {
                // fat_tree with the default k=4 is valid: a run, not an error.
                let _ = r.unwrap();
            }
            Some(key) => {
                let e = r.err().unwrap_or_else(|| panic!("{set} should fail"));
                assert_eq!(e.kind, ErrorKind::Input);
                assert!(e.message.starts_with(key), "{set}: {}", e.message);
                assert!(!e.message.contains('\n'));
            }
        }
    }
}

#[test]
fn custom_topology_from_a_file() {
    let d = tmpdir("custom");
    std::fs::write(
        d.join("t.toml"),
        r#"
nodes = [
  { name = "a", kind = "host" }, { name = "b", kind = "host" },
  { name = "s1", kind = "switch" }, { name = "s2", kind = "switch" }, { name = "core", kind = "switch", tier = 1 },
]
links = [
  { a = "a", b = "s1", gbps = 10 }, { a = "b", b = "s2", gbps = 10 },
  { a = "s1", b = "core", gbps = 10 }, { a = "s2", b = "core", gbps = 10 },
]
"#,
    )
    .unwrap();
    let cfg =
        "[topology]\nkind = \"custom\"\nfile = \"t.toml\"\n[workload]\nflows = 20\nload = 0.3\n";
    let out = run_toml(cfg, Some(&d), &[], &mut |_| true).unwrap();
    assert_eq!(out.summary["flows"]["completed"], 20);
    std::fs::write(d.join("bad.toml"), "nodes = [{ name = \"a\", kind = \"host\" }, { name = \"b\", kind = \"host\" }, { name = \"s\", kind = \"switch\" }, { name = \"t\", kind = \"switch\" }]\nlinks = [{ a = \"a\", b = \"s\", gbps = 1 }, { a = \"b\", b = \"t\", gbps = 1 }]\n").unwrap();
    let e = run_toml(
        &cfg.replace("t.toml", "bad.toml"),
        Some(&d),
        &[],
        &mut |_| true,
    )
    .err()
    .unwrap();
    assert!(
        e.message.starts_with("topology.file") && e.message.contains("disconnected"),
        "{}",
        e.message
    );
}

#[test]
fn custom_topology_links_default_to_the_topology_keys() {
    // A link without `gbps` / `delay_us` takes topology.host_link_gbps or
    // fabric_link_gbps (by whether a host is at an end) and link_delay_us.
    let d = tmpdir("custom_defaults");
    let nodes = r#"nodes = [
  { name = "a", kind = "host" }, { name = "b", kind = "host" },
  { name = "s1", kind = "switch" }, { name = "s2", kind = "switch" },
]
"#;
    std::fs::write(
        d.join("explicit.toml"),
        format!(
            "{nodes}links = [{{ a = \"a\", b = \"s1\", gbps = 10, delay_us = 3 }}, \
             {{ a = \"b\", b = \"s2\", gbps = 10, delay_us = 3 }}, \
             {{ a = \"s1\", b = \"s2\", gbps = 40, delay_us = 3 }}]\n"
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("implicit.toml"),
        format!(
            "{nodes}links = [{{ a = \"a\", b = \"s1\" }}, {{ a = \"b\", b = \"s2\" }}, \
             {{ a = \"s1\", b = \"s2\" }}]\n"
        ),
    )
    .unwrap();
    let cfg = "[topology]\nkind = \"custom\"\nfile = \"explicit.toml\"\n\
               [workload]\nflows = 20\nload = 0.3\n";
    let explicit = run_toml(cfg, Some(&d), &[], &mut |_| true).unwrap();
    let implicit = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        run_toml(
            &cfg.replace("explicit.toml", "implicit.toml"),
            Some(&d),
            &sets,
            &mut |_| true,
        )
    };
    let same = implicit(&[
        "topology.host_link_gbps=10",
        "topology.fabric_link_gbps=40",
        "topology.link_delay_us=3",
    ])
    .unwrap();
    assert_eq!(explicit.summary["digest"], same.summary["digest"]);
    // The defaults are read, not ignored: another delay is another run.
    let other = implicit(&["topology.fabric_link_gbps=40"]).unwrap();
    assert_ne!(explicit.summary["digest"], other.summary["digest"]);
    std::fs::write(
        d.join("bad_rate.toml"),
        format!("{nodes}links = [{{ a = \"a\", b = \"s1\", gbps = 0 }}, {{ a = \"b\", b = \"s2\" }}, {{ a = \"s1\", b = \"s2\" }}]\n"),
    )
    .unwrap();
    let e = run_toml(
        &cfg.replace("explicit.toml", "bad_rate.toml"),
        Some(&d),
        &[],
        &mut |_| true,
    )
    .err()
    .unwrap();
    assert_eq!(
        e.message,
        "topology.file (bad_rate.toml): links[0].gbps: must be in [1e-6, 100000] Gb/s, got 0"
    );
}

#[test]
fn a_shared_buffer_admits_by_dynamic_threshold_and_conserves() {
    // Incast into one host through a switch whose ports share 150 KB (alpha 1):
    // the congested port may hold at most about half of it (where 400 KB
    // per-port buffers let it grow further), and the run still conserves.
    let cfg = r#"
[topology]
kind = "leaf_spine"
leaves = 3
spines = 2
hosts_per_leaf = 4
buffer_kb = 400
ecn_threshold_kb = 0
[transport]
kind = "newreno"
[workload]
pattern = "incast"
incast_senders = 8
incast_bytes = 1000000
"#;
    let per_port = run(cfg, &[]);
    let shared = run(cfg, &["topology.shared_buffer_kb=150"]);
    let max_depth = |o: &RunOutput| {
        o.ports
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["switch_port"].as_bool().unwrap())
            .map(|p| p["max_depth_bytes"].as_u64().unwrap())
            .max()
            .unwrap()
    };
    assert!(
        max_depth(&shared) <= 76_000,
        "a port held {} B of a 150 KB shared buffer",
        max_depth(&shared)
    );
    assert!(
        max_depth(&per_port) > 76_000,
        "per-port buffers let the incast queue grow: {}",
        max_depth(&per_port)
    );
    assert_eq!(shared.summary["flows"]["completed"], 8);
    assert!(shared.summary["conservation_ok"].as_bool().unwrap());
}
