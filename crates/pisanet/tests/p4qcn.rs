//! `p4qcn` in the event loop, before the rate-based hosts exist: UDP
//! sources (constant rate, no reaction point yet) congest host ports of the
//! demo fabric; the congestion points clone and recirculate feedback
//! packets, which the loop carries (each is delivered, dropped or still in
//! flight: the conservation check counts them), and the run's invariants
//! hold. Rate control itself is tested at the state-machine level
//! (pisanet-transport, rate/) until the hosts call the reaction points.

use pisanet::{run_toml, RunOutput};
use std::path::Path;

fn run(sets: &[&str]) -> RunOutput {
    let demo = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/demo/leaf_spine_ecmp.toml"),
    )
    .unwrap();
    let mut o: Vec<String> = vec![
        "transport.kind=udp".into(),
        "transport.udp_rate_gbps=10".into(),
        "workload.flows=60".into(),
        "workload.load=0.9".into(),
        "run.max_sim_time_ms=3".into(),
        "run.unused_keys=ignore".into(),
    ];
    o.extend(sets.iter().map(|s| s.to_string()));
    run_toml(&demo, None, &o, &mut |_| true).unwrap_or_else(|e| panic!("run failed: {e}"))
}

#[test]
fn congestion_points_make_feedback_and_conservation_holds() {
    let out = run(&["scheme.kind=p4qcn"]);
    let s = &out.summary;
    assert_eq!(s["conservation_ok"], true);
    let fb = s["switches"]["counters"]["p4qcn_feedbacks"]["packets"]
        .as_u64()
        .unwrap();
    assert!(fb > 0, "congested host ports must trigger feedback: {s}");
    // Every feedback is one E2E clone into the recirculation port.
    assert_eq!(s["switches"]["cloned"].as_u64().unwrap(), fb);
    assert_eq!(s["switches"]["recirculated"].as_u64().unwrap(), fb);
    // The clones are switch-made packets.
    assert!(s["packets"]["injected"].as_u64().unwrap() >= fb);
    // The same run under ECMP has no feedback.
    let plain = run(&["scheme.kind=ecmp"]);
    assert_eq!(plain.summary["switches"]["cloned"], 0);
}

#[test]
fn a_larger_feedback_interval_sends_fewer_feedbacks() {
    let count = |n: &str| {
        let out = run(&["scheme.kind=p4qcn", n]);
        assert_eq!(out.summary["conservation_ok"], true);
        out.summary["switches"]["counters"]["p4qcn_feedbacks"]["packets"]
            .as_u64()
            .unwrap()
    };
    let often = count("scheme.p4qcn.feedback_interval_us=1");
    let rarely = count("scheme.p4qcn.feedback_interval_us=500");
    assert!(rarely < often, "N = 500 us: {rarely}, N = 1 us: {often}");
}

#[test]
fn p4qcn_keys_are_checked_and_refused_with_other_schemes() {
    let demo = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/demo/leaf_spine_ecmp.toml"),
    )
    .unwrap();
    let err = |sets: &[&str]| {
        let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        run_toml(&demo, None, &o, &mut |_| true)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let e = err(&[
        "scheme.kind=p4qcn",
        "scheme.p4qcn.qmin_pkts=20",
        "scheme.p4qcn.qmax_pkts=10",
    ]);
    assert!(e.contains("scheme.p4qcn.qmax_pkts"), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
    let e = err(&["scheme.kind=ecmp", "scheme.p4qcn.qmin_pkts=5"]);
    assert!(e.contains("scheme.p4qcn") && e.contains("p4qcn"), "{e}");
    let e = err(&["scheme.kind=dcqcn_cp", "scheme.dcqcn_cp.pmax_pct=101"]);
    assert!(e.contains("scheme.dcqcn_cp.pmax_pct"), "{e}");
}
