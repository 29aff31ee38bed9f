//! P4QoS end to end (issue 17, direction only), on the Fig. 2a config (two
//! TCP Cubic flows with classic ECN, per-flow deadlines 20 and 40 ms from
//! the flow list): P4QoS keeps the bottleneck's queue and the low-deadline
//! flow's late packets far below no AQM's; the flows' deadlines reach the
//! switches (prio ranks the flows by them); fixed back-off sends far fewer
//! target updates than none; every `--set scheme.kind=...` of the config
//! runs without a PISA violation or a conservation error, also with
//! clocks with offsets and drift.

use pisanet::{run_toml, RunOutput};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/p4qos")
}

fn run(sets: &[&str]) -> RunOutput {
    let text = std::fs::read_to_string(dir().join("single_bottleneck.toml")).unwrap();
    let mut o: Vec<String> = vec!["run.max_sim_time_ms=5000".into()];
    o.extend(sets.iter().map(|s| s.to_string()));
    run_toml(&text, Some(&dir()), &o, &mut |_| true).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// Mean queue depth (bytes) of S1->S2 after the first second.
fn mean_queue(o: &RunOutput) -> f64 {
    let q = &o.queues;
    let v: Vec<u64> = (0..q.time_us.len())
        .filter(|&i| q.port[i] == "S1->S2" && q.time_us[i] >= 1e6)
        .map(|i| q.depth_bytes[i])
        .collect();
    assert!(!v.is_empty());
    v.iter().sum::<u64>() as f64 / v.len() as f64
}

fn counter(o: &RunOutput, name: &str) -> u64 {
    o.summary["switches"]["counters"][name]["packets"]
        .as_u64()
        .unwrap_or(0)
}

/// The flow's delivered packets past their deadline, as a fraction.
fn late_fraction(o: &RunOutput, flow: usize) -> f64 {
    let f = &o.flows;
    f.deadline_missed_packets[flow] as f64 / f.delay_packets[flow] as f64
}

#[test]
fn p4qos_keeps_the_queue_and_the_low_deadline_flows_late_packets_far_below_noaqm() {
    let noaqm = run(&["scheme.kind=noaqm"]);
    let p4qos = run(&["scheme.kind=p4qos"]);
    let (qn, qp) = (mean_queue(&noaqm), mean_queue(&p4qos));
    // The 20 ms deadline at 10 Mb/s is 25 KB of queue.
    eprintln!("mean queue: p4qos {qp} B, noaqm {qn} B");
    assert!(qp < 0.5 * qn, "p4qos {qp} B, noaqm {qn} B");
    assert!(qp < 40_000.0, "p4qos {qp} B");
    // Flow 0 has the lower deadline (20 ms): without AQM the standing queue
    // makes nearly all its packets late.
    let (ln, lp) = (late_fraction(&noaqm, 0), late_fraction(&p4qos, 0));
    eprintln!("late, d1 flow: p4qos {lp}, noaqm {ln}");
    assert!(ln > 0.9, "noaqm late {ln}");
    assert!(lp < ln / 2.0, "late: p4qos {lp}, noaqm {ln}");
    // The ECN marks reached Cubic: it reacted without a drop.
    assert!(counter(&p4qos, "aqm_marks") > 0);
    assert_eq!(counter(&p4qos, "aqm_drops"), 0);
    assert_eq!(p4qos.summary["packets"]["dropped"].as_u64(), Some(0));
    assert!(counter(&p4qos, "p4qos_target_updates") > 0);
}

#[test]
fn flow_deadlines_reach_the_switches_prio_serves_the_lower_deadline_first() {
    // The deadlines are only in the flow list: without the entries made
    // from them the flows get no QoS header and share one queue equally.
    let o = run(&["scheme.kind=prio", "run.max_sim_time_ms=2000"]);
    let d = &o.flows.delivered;
    eprintln!("prio delivered {d:?}");
    // Flow 0 (20 ms) is in the high-priority queue: it takes the link.
    assert!(d[0] > 5 * d[1], "delivered {d:?}");
}

#[test]
fn a_flows_own_deadline_wins_over_a_configured_wildcard_entry() {
    // A `[[scheme.qos.deadlines]]` entry matching every packet with 60 ms
    // (the highest of the three deadlines, so the flows' ranks stay 0 and
    // 1): were it first, both flows would share one deadline and one queue.
    let mut text = std::fs::read_to_string(dir().join("single_bottleneck.toml")).unwrap();
    text.push_str("\n[[scheme.qos.deadlines]]\ndeadline_us = 60000\n");
    let o = run_toml(
        &text,
        Some(&dir()),
        &["scheme.kind=prio".into(), "run.max_sim_time_ms=2000".into()],
        &mut |_| true,
    )
    .unwrap_or_else(|e| panic!("run failed: {e}"));
    let d = &o.flows.delivered;
    assert!(d[0] > 5 * d[1], "delivered {d:?}");
}

#[test]
fn fixed_backoff_sends_far_fewer_target_updates_than_none() {
    let none = run(&["scheme.kind=p4qos", "run.max_sim_time_ms=2000"]);
    let fixed = run(&[
        "scheme.kind=p4qos",
        "run.max_sim_time_ms=2000",
        "scheme.p4qos.backoff=fixed",
    ]);
    let (n, f) = (
        counter(&none, "p4qos_target_updates"),
        counter(&fixed, "p4qos_target_updates"),
    );
    eprintln!("target updates: none {n}, fixed {f}");
    assert!(f > 0 && f * 10 < n, "none {n}, fixed {f}");
}

#[test]
fn every_qos_scheme_runs_clean_with_drifting_clocks() {
    for kind in [
        "p4qos",
        "p4qos_codel",
        "p4qos_interval",
        "noaqm",
        "codel",
        "prio",
    ] {
        let o = run(&[
            &format!("scheme.kind={kind}"),
            "run.max_sim_time_ms=500",
            "clock.offset_max_us=5000",
            "clock.drift_max_ppm=100",
            "clock.resolution_ns=1",
        ]);
        assert!(
            o.summary["packets"]["delivered"].as_u64().unwrap() > 100,
            "{kind}: {}",
            o.summary["packets"]
        );
    }
}

#[test]
fn the_multi_bottleneck_configs_run_at_both_scales_with_every_backoff() {
    // Fig. 2b at the paper's scale and at data-center scale (every time
    // /1000), as experiments/p4qos/run.py runs them: each back-off sends
    // updates, and fixed sends fewer than none.
    for (file, ms) in [
        ("multi_bottleneck.toml", "3000"),
        ("multi_bottleneck_dc.toml", "3"),
    ] {
        let text = std::fs::read_to_string(dir().join(file)).unwrap();
        let mut sent = Vec::new();
        for backoff in ["none", "fixed", "adaptive"] {
            let o = run_toml(
                &text,
                Some(&dir()),
                &[
                    format!("run.max_sim_time_ms={ms}"),
                    format!("scheme.p4qos.backoff={backoff}"),
                ],
                &mut |_| true,
            )
            .unwrap_or_else(|e| panic!("{file} {backoff}: {e}"));
            assert!(counter(&o, "qos_llep_replies") > 0, "{file} {backoff}");
            sent.push(counter(&o, "p4qos_target_updates"));
        }
        eprintln!("{file}: target updates none, fixed, adaptive = {sent:?}");
        assert!(sent.iter().all(|&n| n > 0), "{file}: {sent:?}");
        assert!(sent[1] * 10 < sent[0], "{file}: {sent:?}");
    }
}

#[test]
fn interval_reset_is_read_only_by_interval_p4qos() {
    let text = std::fs::read_to_string(dir().join("single_bottleneck.toml")).unwrap();
    let sets = |kind: &str| {
        vec![
            format!("scheme.kind={kind}"),
            "scheme.p4qos.interval_reset=quiet_interval".to_string(),
            "run.max_sim_time_ms=200".to_string(),
        ]
    };
    let err = run_toml(&text, Some(&dir()), &sets("p4qos"), &mut |_| true)
        .map(|_| ())
        .expect_err("refused with scheme.kind = p4qos");
    let msg = err.to_string();
    assert!(
        msg.contains(
            "scheme.p4qos.interval_reset: is read only when scheme.kind = \"p4qos_interval\""
        ),
        "{msg}"
    );
    run_toml(&text, Some(&dir()), &sets("p4qos_interval"), &mut |_| true)
        .unwrap_or_else(|e| panic!("p4qos_interval: {e}"));
}
