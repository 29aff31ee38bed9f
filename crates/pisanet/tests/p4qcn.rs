//! `p4qcn` and `dcqcn_cp` in the event loop. First with constant-rate UDP
//! sources on the demo fabric: the congestion points clone and recirculate
//! feedback packets, which the loop carries (each is delivered, dropped or
//! still in flight: the conservation check counts them). Then the whole
//! loop on the paper's Fig. 10 (experiments/p4qcn/fig10.toml): feedback
//! reaches the rate-based senders' reaction points (QCN's, DCQCN's), and the
//! paper's claims hold in direction (loss against plain UDP, PFC, 2-point
//! against 3-point).

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

// ---- The loop: rate-based hosts with P4QCN's and DCQCN's reaction points
// on experiments/p4qcn/fig10.toml (the paper's Fig. 10 at 7 Mb/s), cut to a
// few simulated seconds.

fn fig10(sets: &[&str]) -> RunOutput {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/p4qcn");
    let text = std::fs::read_to_string(dir.join("fig10.toml")).unwrap();
    let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let out = run_toml(&text, Some(&dir), &o, &mut |_| true)
        .unwrap_or_else(|e| panic!("fig10 {sets:?}: {e}"));
    assert_eq!(out.summary["conservation_ok"], true, "{sets:?}");
    out
}

fn lost(out: &RunOutput) -> u64 {
    out.summary["loss"]["packets"].as_u64().unwrap()
}

fn first_cut_us(out: &RunOutput) -> f64 {
    out.summary["rate_control"]["first_cut_us"]
        .as_f64()
        .expect("a rate cut")
}

const THREE_POINT: &[&str] = &[
    "scheme.kind=dcqcn_cp",
    "scheme.dcqcn_cp.kmin_pkts=11",
    "scheme.dcqcn_cp.kmax_pkts=11",
];

#[test]
fn p4qcn_cuts_loss_against_plain_udp() {
    let udp = fig10(&["scheme.kind=ecmp", "transport.kind=udp"]);
    let p4qcn = fig10(&[]);
    assert!(
        lost(&udp) > 0,
        "the background must congest T4: {}",
        udp.summary
    );
    assert!(
        lost(&p4qcn) < lost(&udp),
        "P4QCN lost {}, plain UDP {}",
        lost(&p4qcn),
        lost(&udp)
    );
    // The congestion points' feedback reached the sources' reaction points.
    let rc = &p4qcn.summary["rate_control"];
    assert!(rc["rate_cuts"].as_u64().unwrap() > 0, "{rc}");
    assert_eq!(rc["cnps"], 0, "2-point: no notification point");
    // Plain UDP under ECMP gets no feedback.
    assert!(udp.summary.get("rate_control").is_none());
}

#[test]
fn p4qcn_with_pfc_loses_nothing() {
    // Thresholds close to the buffer (16 of 17 packets), so that P4QCN alone
    // reacts too late to avoid every drop.
    let late = ["scheme.p4qcn.qmin_pkts=16", "scheme.p4qcn.qmax_pkts=16"];
    let alone = fig10(&late);
    let mut with_pfc = late.to_vec();
    with_pfc.push("topology.pfc.enabled=true");
    let both = fig10(&with_pfc);
    assert!(
        lost(&alone) > 0,
        "P4QCN alone at 16: {}",
        alone.summary["loss"]
    );
    assert_eq!(lost(&both), 0, "{}", both.summary["loss"]);
    assert_eq!(both.summary["packets"]["dropped"], 0);
    assert_eq!(both.summary["pfc"]["lossless_drops"], 0);
}

#[test]
fn two_point_cuts_the_sources_rate_sooner_than_three_point() {
    // Same thresholds (11 packets) and the same traffic up to the first
    // feedback; the 2-point feedback goes back from the congestion point,
    // the 3-point CNP from the receiver.
    let two = first_cut_us(&fig10(&[]));
    let mut qcn_np = THREE_POINT.to_vec();
    qcn_np.push("transport.reaction_point=qcn_cnp");
    let three = first_cut_us(&fig10(&qcn_np));
    let mut dcqcn = THREE_POINT.to_vec();
    dcqcn.extend([
        "transport.reaction_point=dcqcn",
        "transport.dcqcn.scale_to_line_rate=true",
    ]);
    let three_dcqcn = first_cut_us(&fig10(&dcqcn));
    assert!(two < three, "2-point {two} us, 3-point (QCN RP) {three} us");
    assert!(
        two < three_dcqcn,
        "2-point {two} us, 3-point (DCQCN) {three_dcqcn} us"
    );
}

#[test]
fn fig10_overrides_give_the_baselines() {
    // PFC alone: pauses, nothing dropped in the network.
    let pfc = fig10(&["scheme.kind=ecmp", "topology.pfc.enabled=true"]);
    assert!(pfc.summary["pfc"]["pause_frames_sent"].as_u64().unwrap() > 0);
    assert_eq!(pfc.summary["packets"]["dropped"], 0);
    assert!(pfc.summary.get("rate_control").is_none());
    // A TCP foreground flow (capped at 4 Mb/s) among the UDP background.
    let tcp = fig10(&["scheme.kind=ecmp", "transport.kind=newreno"]);
    assert!(tcp.summary["retransmissions"].as_u64().unwrap() > 0);
    assert!(
        tcp.summary["flow_stats"]["rtt_us"]["samples"]
            .as_u64()
            .unwrap()
            > 0
    );
}

/// DCQCN's notification point on a fast fabric: CE marks are many, CNPs at
/// most one per flow per 50 us, and they reach the senders' reaction points.
#[test]
fn dcqcn_receivers_send_at_most_one_cnp_per_flow_per_interval() {
    let out = run(&[
        "scheme.kind=dcqcn_cp",
        "scheme.dcqcn_cp.kmin_pkts=4",
        "scheme.dcqcn_cp.kmax_pkts=4",
        "transport.reaction_point=dcqcn",
        "topology.ecn_threshold_kb=0",
    ]);
    let s = &out.summary;
    let marks = s["switches"]["counters"]["dcqcn_cp_marks"]["packets"]
        .as_u64()
        .unwrap();
    let rc = &s["rate_control"];
    let cnps = rc["cnps"].as_u64().unwrap();
    assert!(cnps > 0 && cnps < marks, "CNPs {cnps}, marks {marks}");
    assert!(rc["rate_cuts"].as_u64().unwrap() > 0, "{rc}");
    // 60 flows over at most 3 ms: one CNP per 50 us each is the ceiling.
    assert!(cnps <= 60 * (3000 / 50 + 1), "{cnps}");
    // Every CNP reached its sender (or is still in flight / was dropped).
    assert!(rc["feedback_packets"].as_u64().unwrap() <= cnps);
}

/// `cc` per flow row: the foreground runs QCN's reaction point while the
/// config's default is "fixed" and the background row says "fixed".
#[test]
fn the_reaction_point_is_chosen_per_flow_by_cc() {
    let csv = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/p4qcn_cc_per_flow.csv");
    let file = format!("workload.file={:?}", csv.display().to_string());
    let per_flow = fig10(&["transport.reaction_point=fixed", &file]);
    let rc = &per_flow.summary["rate_control"];
    let cuts = rc["rate_cuts"].as_u64().unwrap();
    assert!(cuts > 0, "{rc}");
    // Feedback reaches the background's fixed-rate sender too; it ignores it.
    assert!(rc["feedback_packets"].as_u64().unwrap() > cuts, "{rc}");
    // Fig. 10's flows with every sender fixed: feedback, but no cut.
    let fixed = fig10(&["scheme.kind=p4qcn", "transport.reaction_point=fixed"]);
    assert_eq!(fixed.summary["rate_control"]["rate_cuts"], 0);
}

/// The 10/40/100 Gb/s versions (the documented scaling rule) run, and P4QCN
/// still cuts the loss of plain UDP there.
#[test]
fn the_scaled_versions_run_and_p4qcn_cuts_loss() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/p4qcn");
    for name in ["fig10_10g.toml", "fig10_40g.toml", "fig10_100g.toml"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let go = |sets: &[&str]| {
            let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let out = run_toml(&text, Some(&dir), &o, &mut |_| true)
                .unwrap_or_else(|e| panic!("{name} {sets:?}: {e}"));
            assert_eq!(out.summary["conservation_ok"], true);
            out
        };
        let udp = go(&["scheme.kind=ecmp", "transport.kind=udp"]);
        let p4qcn = go(&[]);
        assert!(lost(&udp) > 0, "{name}");
        assert!(
            lost(&p4qcn) < lost(&udp),
            "{name}: {} vs {}",
            lost(&p4qcn),
            lost(&udp)
        );
    }
}
