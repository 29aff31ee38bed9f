//! Issue 3's regression test: flowlet ECMP and random packet spraying spread
//! a few elephant flows across a leaf's uplinks more evenly than ECMP, and
//! ECMP reorders nothing (while spraying does, and TCP copes).

use pisanet::{run_toml, RunOutput};

const CFG: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 4
spines = 4
hosts_per_leaf = 4
host_link_gbps = 10.0
fabric_link_gbps = 10.0
buffer_kb = 300
ecn_threshold_kb = 65
[transport]
kind = "dctcp"
[workload]
pattern = "file"
file = "flows.csv"
[scheme]
flowlet_timeout_us = 20
"#;

/// Eight 4 MB flows out of leaf 0, two per host, to hosts on the other leaves.
const FLOWS: &str = "start_us,src,dst,bytes
0,0,4,4000000
0,1,8,4000000
0,2,12,4000000
0,3,5,4000000
0,0,9,4000000
0,1,13,4000000
0,2,6,4000000
0,3,10,4000000
";

fn run(kind: &str) -> RunOutput {
    let d = std::env::temp_dir().join(format!("pisanet-spread-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("flows.csv"), FLOWS).unwrap();
    // The same config for every scheme: some read keys others do not.
    let sets = [
        format!("scheme.kind={kind}"),
        "run.unused_keys=ignore".into(),
    ];
    run_toml(CFG, Some(&d), &sets, &mut |_| true).unwrap_or_else(|e| panic!("{kind}: {e}"))
}

/// Coefficient of variation of the bytes sent on leaf0's uplinks.
fn uplink_cv(out: &RunOutput) -> f64 {
    let bytes: Vec<f64> = out
        .ports
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            p["uplink"].as_bool().unwrap() && p["name"].as_str().unwrap().starts_with("leaf0->")
        })
        .map(|p| p["tx_bytes"].as_f64().unwrap())
        .collect();
    assert_eq!(bytes.len(), 4);
    let mean = bytes.iter().sum::<f64>() / 4.0;
    let var = bytes.iter().map(|b| (b - mean).powi(2)).sum::<f64>() / 4.0;
    var.sqrt() / mean
}

#[test]
fn flowlets_and_spraying_spread_elephants_more_evenly_than_ecmp() {
    let ecmp = run("ecmp");
    let flowlet = run("flowlet_ecmp");
    let rps = run("rps");
    let (ce, cf, cr) = (uplink_cv(&ecmp), uplink_cv(&flowlet), uplink_cv(&rps));
    eprintln!("uplink load CV: ecmp {ce:.3}, flowlet_ecmp {cf:.3}, rps {cr:.3}");
    assert!(cf < ce, "flowlet_ecmp {cf:.3} vs ecmp {ce:.3}");
    assert!(cr < ce, "rps {cr:.3} vs ecmp {ce:.3}");
    assert!(cr < 0.05, "spraying is near-perfectly even: {cr:.3}");
    // ECMP keeps every flow on one path: nothing arrives out of order.
    assert_eq!(ecmp.summary["packets"]["reordered"], 0);
    // Spraying reorders, and TCP still delivers every byte (the run's own checks).
    assert!(rps.summary["packets"]["reordered"].as_u64().unwrap() > 0);
    for o in [&ecmp, &flowlet, &rps] {
        assert_eq!(o.summary["flows"]["completed"], 8);
    }
}

/// The `ecmp` program on the PISA model and the hand-written reference ECMP
/// pick the same paths for every packet: the same run, the same digest.
#[test]
fn ecmp_program_equals_the_reference_ecmp() {
    let cfg = r#"
[topology]
kind = "fat_tree"
k = 4
[workload]
flows = 300
load = 0.6
"#;
    let a = run_toml(cfg, None, &["scheme.kind=ecmp".into()], &mut |_| true).unwrap();
    let b = run_toml(cfg, None, &["scheme.kind=ecmp_native".into()], &mut |_| {
        true
    })
    .unwrap();
    assert_eq!(a.summary["digest"], b.summary["digest"]);
    assert_eq!(a.summary["packets"], b.summary["packets"]);
    // The same with every tier hashing on the same bits (polarized ECMP);
    // and that is a different run.
    let polarized = |kind: &str| {
        let sets = [
            format!("scheme.kind={kind}"),
            "scheme.ecmp_hash_per_tier=false".to_string(),
        ];
        run_toml(cfg, None, &sets, &mut |_| true).unwrap()
    };
    let (c, d) = (polarized("ecmp"), polarized("ecmp_native"));
    assert_eq!(c.summary["digest"], d.summary["digest"]);
    assert_eq!(c.summary["packets"], d.summary["packets"]);
    assert_ne!(a.summary["digest"], c.summary["digest"]);
}
