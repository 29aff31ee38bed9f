//! Parallel mode (`run.threads`, crates/pisanet/src/sim/parallel.rs): the
//! results are the single-thread run's (run.threads unset) at every number
//! of threads, the invariants hold, and what it does not support is refused
//! with one line.

use pisanet::{run_toml, ErrorKind, RunOutput};

const FAT: &str = r#"
[run]
max_sim_time_ms = 200
[topology]
kind = "fat_tree"
k = 4
host_link_gbps = 10.0
fabric_link_gbps = 10.0
link_delay_us = 1.0
buffer_kb = 200
ecn_threshold_kb = 65
[transport]
kind = "dctcp"
[workload]
cdf = "websearch"
load = 0.6
flows = 150
[scheme]
kind = "ecmp"
"#;

const LEAF: &str = r#"
[run]
max_sim_time_ms = 200
[topology]
kind = "leaf_spine"
leaves = 4
spines = 2
hosts_per_leaf = 4
host_link_gbps = 10.0
fabric_link_gbps = 10.0
link_delay_us = 2.0
buffer_kb = 200
ecn_threshold_kb = 65
[transport]
kind = "dctcp"
[workload]
cdf = "websearch"
load = 0.6
flows = 150
[scheme]
kind = "ecmp"
"#;

fn run(cfg: &str, sets: &[&str]) -> RunOutput {
    let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    run_toml(cfg, None, &o, &mut |_| true).unwrap_or_else(|e| panic!("run failed: {e}"))
}

fn digest(o: &RunOutput) -> String {
    o.summary["digest"].as_str().unwrap().to_string()
}

/// The summary without what depends on the machine or the mode (wall
/// time, speed, memory, the parallel mode's own statistics).
fn results(o: &RunOutput) -> serde_json::Value {
    let mut s = o.summary.clone();
    let m = s.as_object_mut().unwrap();
    for key in [
        "wall_time_s",
        "events_per_s",
        "packet_hops_per_s",
        "peak_rss_mb",
        "parallel",
    ] {
        m.remove(key);
    }
    s
}

/// Runs `cfg` single-threaded (run.threads unset) and with `run.threads` =
/// 1, 2 and 3, and checks that the four give one digest, the same flow
/// table row for row, the same ports table and the same summary (counters,
/// FCT statistics, stop reason, events), with every invariant checked (a
/// violation fails the run); returns the 1-thread run.
fn same_at_1_2_3(cfg: &str, sets: &[&str]) -> RunOutput {
    let single = run(cfg, sets);
    assert!(single.summary.get("parallel").is_none());
    let mut runs = Vec::new();
    for t in ["1", "2", "3"] {
        let mut s: Vec<&str> = sets.to_vec();
        let key = format!("run.threads={t}");
        s.push(&key);
        runs.push(run(cfg, &s));
    }
    let first = &runs[0];
    let p = &first.summary["parallel"];
    assert!(p["partitions"].as_u64().unwrap() >= 2, "{p}");
    assert!(p["cross_packets"].as_u64().unwrap() > 0, "{p}");
    assert_eq!(first.summary["conservation_ok"], true);
    for o in &runs {
        let t = &o.summary["parallel"]["threads"];
        assert_eq!(digest(o), digest(&single), "threads {t}");
        // Every column of flows.parquet, NaN (unfinished) included.
        assert_eq!(
            format!("{:?}", o.flows),
            format!("{:?}", single.flows),
            "threads {t}"
        );
        assert_eq!(results(o), results(&single), "threads {t}");
        assert_eq!(o.ports, single.ports, "threads {t}");
        // Queue and port-rate samples, row for row.
        assert_eq!(
            format!("{:?}", o.queues),
            format!("{:?}", single.queues),
            "threads {t}"
        );
        assert_eq!(
            format!("{:?}", o.port_rates),
            format!("{:?}", single.port_rates),
            "threads {t}"
        );
        // Per-flow goodput, row for row.
        assert_eq!(
            format!("{:?}", o.goodput),
            format!("{:?}", single.goodput),
            "threads {t}"
        ); // Capture: every pcap file byte for byte, the trace row for row.
        assert_eq!(o.capture.pcaps, single.capture.pcaps, "threads {t}");
        assert_eq!(
            format!("{:?}", o.capture.trace),
            format!("{:?}", single.capture.trace),
            "threads {t}"
        );
    }
    runs.swap_remove(0)
}

/// Mean FCT of the completed flows.
fn mean_fct(o: &RunOutput) -> f64 {
    o.summary["fct_us"]["mean"].as_f64().unwrap()
}

#[test]
fn fat_tree_gives_one_digest_at_1_2_and_3_threads() {
    let par = same_at_1_2_3(FAT, &[]);
    assert_eq!(par.summary["parallel"]["partitions"], 4);
    assert_eq!(par.summary["flows"]["completed"], 150);
    assert!(mean_fct(&par) > 0.0);
}

#[test]
fn the_single_thread_run_is_the_parallel_one_for_several_seeds_and_schemes() {
    // Ties between simultaneous events, receivers answering copies after
    // their senders completed, drops at the instant a flow completes: each
    // seed gives other coincidences.
    for seed in ["2", "3", "4"] {
        let s = format!("run.seed={seed}");
        same_at_1_2_3(
            FAT,
            &[
                &s,
                "transport.kind=newreno",
                "topology.buffer_kb=40",
                "workload.flows=100",
            ],
        );
        same_at_1_2_3(LEAF, &[&s, "scheme.kind=rps", "workload.flows=100"]);
        same_at_1_2_3(FAT, &[&s, "scheme.kind=flowlet_ecmp", "workload.flows=100"]);
    }
}

#[test]
fn leaf_spine_gives_one_digest_at_1_2_and_3_threads() {
    let par = same_at_1_2_3(LEAF, &[]);
    assert_eq!(par.summary["parallel"]["partitions"], 4);
    assert_eq!(par.summary["parallel"]["lookahead_us"], 2.0);
    assert_eq!(par.summary["flows"]["completed"], 150);
}

#[test]
fn drops_elsewhere_are_charged_to_their_flows_alike_at_every_thread_count() {
    // Small buffers and NewReno: packets are dropped in every partition.
    let par = same_at_1_2_3(
        FAT,
        &[
            "topology.buffer_kb=20",
            "transport.kind=newreno",
            "workload.flows=80",
        ],
    );
    let lost = par.summary["loss"]["packets"].as_u64().unwrap();
    assert!(lost > 0, "no loss: the test needs drops");
    // Data of active flows only (ACKs and late copies are dropped too).
    assert!(lost <= par.summary["packets"]["dropped"].as_u64().unwrap());
    assert!(par.summary["retransmissions"].as_u64().unwrap() > 0);
}

#[test]
fn the_stateless_schemes_run_in_parallel() {
    for scheme in ["ecmp_native", "flowlet_ecmp", "rps"] {
        let kind = format!("scheme.kind={scheme}");
        let par = same_at_1_2_3(LEAF, &[&kind, "workload.flows=60"]);
        assert_eq!(par.summary["flows"]["completed"], 60, "{scheme}");
    }
}

#[test]
fn every_scheme_gives_the_single_thread_runs_results() {
    // Every scheme keeps its state in its switches, its timers (probe
    // generators, control-plane wake-ups) in its partition, and talks to
    // other switches and hosts with packets over links (sim/parallel.rs
    // `SCHEMES`). CONGA is for 2-tier leaf-spines only.
    for &scheme in pisanet::sim::parallel::SCHEMES {
        let kind = format!("scheme.kind={scheme}");
        let sets = [kind.as_str(), "workload.flows=50", "run.unused_keys=ignore"];
        let leaf = same_at_1_2_3(LEAF, &sets);
        assert_eq!(leaf.summary["flows"]["completed"], 50, "{scheme}");
        if scheme != "conga" {
            let fat = same_at_1_2_3(FAT, &sets);
            assert_eq!(fat.summary["flows"]["completed"], 50, "{scheme}");
            if matches!(scheme, "hula" | "p4te") {
                // Probes (HULA) and telemetry (P4TE) made by switches
                // crossed partitions and were consumed.
                assert!(
                    fat.summary["packets"]["consumed"].as_u64().unwrap() > 0,
                    "{scheme}"
                );
            }
        }
    }
}

#[test]
fn queue_and_port_rate_samples_are_the_single_thread_runs() {
    // Every partition samples every selected port at the same instants;
    // each value comes from the port's own partition.
    let par = same_at_1_2_3(
        FAT,
        &[
            "metrics.queue_sample_interval_us=20",
            "metrics.port_rate_interval_us=50",
            "workload.flows=80",
        ],
    );
    assert!(par.queues.depth_bytes.iter().any(|&d| d > 0));
    assert!(par.port_rates.tx_gbps.iter().any(|&r| r > 0.0));
    // With a subset of ports and priority queues (one row per queue).
    same_at_1_2_3(
        LEAF,
        &[
            "metrics.queue_sample_interval_us=10",
            "metrics.queue_sample_ports=[\"spine\"]",
            "metrics.port_rate_interval_us=30",
            "metrics.port_rate_ports=[\"leaf0\"]",
            "topology.priorities=2",
            "workload.flows=60",
        ],
    );
}

/// A flow list of `n` TCP flows among the 16 hosts of `FAT`, with mixed
/// congestion controls and priorities, written to a scratch file; returns
/// its `--set`s.
fn flow_list(name: &str, n: u32, extra: &str) -> Vec<String> {
    let d = std::env::temp_dir().join(format!("pisanet-parallel-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let mut text = String::from("start_us,src,dst,bytes,cc,priority\n");
    for i in 0..n {
        let src = i % 16;
        let dst = (src + 1 + (i * 7) % 15) % 16;
        let bytes = 5_000 + (i * 7919) % 300_000;
        let cc = if i % 3 == 0 { "newreno" } else { "dctcp" };
        text += &format!("{},{src},{dst},{bytes},{cc},{}\n", i * 4, i % 2);
    }
    text += extra;
    let path = d.join("flows.csv");
    std::fs::write(&path, text).unwrap();
    vec![
        "workload.pattern=file".into(),
        format!("workload.file={:?}", path.to_str().unwrap()),
        "topology.priorities=2".into(),
        "run.unused_keys=ignore".into(),
    ]
}

#[test]
fn a_flow_list_runs_in_parallel_and_its_udp_rows_are_refused_by_line() {
    let sets = flow_list("list", 70, "");
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let par = same_at_1_2_3(FAT, &sets);
    assert_eq!(par.summary["flows"]["completed"], 70);
    // A UDP row is refused with its line, in parallel mode only.
    let sets = flow_list("udp", 5, "30,1,9,5000,,0\n31,2,9,5000,dcqcn,0\n");
    let mut o = sets.clone();
    o.push("run.threads=2".into());
    let e = run_toml(FAT, None, &o, &mut |_| true).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Input, "{e}");
    assert!(!e.message.contains('\n'), "{e}");
    assert!(e.message.contains("line 8: a UDP flow: run.threads"), "{e}");
}

/// Writes `text` to a scratch flow list named `name`; returns its `--set`s.
fn flow_file(name: &str, text: &str) -> Vec<String> {
    let d = std::env::temp_dir().join(format!("pisanet-parallel-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let path = d.join("flows.csv");
    std::fs::write(&path, text).unwrap();
    vec![
        "workload.pattern=file".into(),
        format!("workload.file={:?}", path.to_str().unwrap()),
        "run.unused_keys=ignore".into(),
    ]
}

#[test]
fn duration_limited_flows_close_alike_at_every_thread_count() {
    // A duration-limited sender closes at start + duration and tells its
    // receiver the flow's size at that instant; a receiver in another
    // partition learns it at the end of the window, before the sender's
    // FIN (sim/parallel.rs `Part::closed`). Rows with only a duration
    // (bytes empty: the size is what was sent), with bytes and a duration
    // that ends them first, capped by an application rate, and ordinary
    // rows between them; the run ends with some still running.
    let mut text = String::from("start_us,src,dst,bytes,rate_gbps,duration_us\n");
    for i in 0..40u32 {
        let src = i % 16;
        let dst = (src + 3 + (i * 5) % 13) % 16;
        let row = match i % 4 {
            0 => format!("{},{src},{dst},,,{}\n", i * 10, 200 + i * 13),
            1 => format!("{},{src},{dst},2000000,,{}\n", i * 10, 150 + i * 7),
            2 => format!("{},{src},{dst},,2.5,{}\n", i * 10, 300 + i * 11),
            _ => format!("{},{src},{dst},{},,\n", i * 10, 20_000 + i * 3001),
        };
        text += &row;
    }
    let sets = flow_file("duration", &text);
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let par = same_at_1_2_3(FAT, &sets);
    assert_eq!(par.summary["flows"]["completed"], 40);
    // The duration closed the flows without bytes and cut the 2 MB ones.
    for (i, &b) in par.flows.bytes.iter().enumerate() {
        match i % 4 {
            0 | 2 => assert!(b > 0 && b < u64::MAX, "flow {i}: {b} bytes"),
            1 => assert!(b < 2_000_000, "flow {i}: {b} bytes"),
            _ => {}
        }
    }
    // Stopped while flows run and lingering receivers wait, with a group
    // of duration-limited flows too.
    let mut stop = sets.clone();
    stop.push("run.max_sim_time_ms=0.4");
    let par = same_at_1_2_3(FAT, &stop);
    assert_eq!(par.summary["stop_reason"], "time_limit");
    let group = [
        "workload.flows=60",
        "workload.groups=[{flows=20, load=0.2, duration_us=300.0}]",
        "run.unused_keys=ignore",
    ];
    same_at_1_2_3(FAT, &group);
}

#[test]
fn per_flow_measurement_is_the_single_thread_runs() {
    // A flow's sender (RTT, TCP counters) and receiver (one-way delays,
    // deadline misses, goodput) measure it in their own partitions; a
    // receiver holds what it measures until the end of the window and
    // drops what came after its sender completed; the collector puts the
    // parts together and closes them, and the goodput rows are put in the
    // order of the events that wrote them (sim/parallel.rs).
    let lossy = [
        "metrics.flow_stats=true",
        "metrics.goodput_interval_us=20",
        "topology.buffer_kb=20",
        "transport.kind=newreno",
        "workload.flows=100",
    ];
    let par = same_at_1_2_3(FAT, &lossy);
    let fs = &par.summary["flow_stats"];
    assert!(fs["delay_us"]["packets"].as_u64().unwrap() > 0, "{fs}");
    assert!(fs["rtt_us"]["samples"].as_u64().unwrap() > 0, "{fs}");
    assert!(par.goodput.flow.len() > 100);
    assert!(par.summary["retransmissions"].as_u64().unwrap() > 0);
    // Goodput alone, with a scheme that sends probes; and stopped while
    // flows run (their measurement is closed at the end).
    same_at_1_2_3(
        LEAF,
        &[
            "metrics.goodput_interval_us=50",
            "scheme.kind=hula",
            "workload.flows=80",
            "run.unused_keys=ignore",
        ],
    );
    // Per-packet spraying reorders: spurious fast retransmissions reach
    // receivers after their senders completed, within the window (10 us
    // links), and must not be measured.
    same_at_1_2_3(
        FAT,
        &[
            "metrics.flow_stats=true",
            "metrics.goodput_interval_us=20",
            "transport.kind=newreno",
            "scheme.kind=rps",
            "topology.link_delay_us=10",
            "workload.flows=100",
            "run.seed=2",
        ],
    );
    let mut stop = lossy.to_vec();
    stop.push("run.max_sim_time_ms=2");
    let par = same_at_1_2_3(FAT, &stop);
    assert_eq!(par.summary["stop_reason"], "time_limit");
    // Deadlines (a flow list's deadline_us), some missed.
    let mut text = String::from("start_us,src,dst,bytes,deadline_us\n");
    for i in 0..60u32 {
        let src = i % 16;
        let dst = (src + 5 + (i * 3) % 11) % 16;
        let deadline = if i % 3 == 0 { "" } else { "12" };
        text += &format!(
            "{},{src},{dst},{},{deadline}\n",
            i * 5,
            10_000 + (i * 7919) % 200_000
        );
    }
    let sets = flow_file("deadlines", &text);
    let mut sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    sets.extend(["metrics.flow_stats=true", "metrics.goodput_interval_us=30"]);
    let par = same_at_1_2_3(FAT, &sets);
    let dl = &par.summary["flow_stats"]["deadline"];
    assert_eq!(dl["flows"], 40, "{dl}");
    assert!(dl["missed_packets"].as_u64().unwrap() > 0, "{dl}");
}

#[test]
fn random_link_loss_with_a_stream_per_link_is_the_single_thread_runs() {
    // `topology.link_loss_per_link`: each direction of a link draws from
    // its own stream, in the order of its arrivals, which its receiving
    // partition makes in the single-thread run's order. (With the one
    // shared stream, the default, the parallel mode refuses link loss.)
    for (cfg, scheme) in [(FAT, "ecmp"), (LEAF, "rps"), (FAT, "hula")] {
        let kind = format!("scheme.kind={scheme}");
        let par = same_at_1_2_3(
            cfg,
            &[
                "topology.link_loss_rate=0.005",
                "topology.link_loss_per_link=true",
                "transport.kind=newreno",
                &kind,
                "workload.flows=80",
                "run.unused_keys=ignore",
            ],
        );
        assert!(
            par.summary["loss"]["packets"].as_u64().unwrap() > 0,
            "{scheme}: no loss"
        );
    }
}

#[test]
fn link_failures_are_applied_alike_at_every_thread_count() {
    // A failure is a scheduled event: the partitions of the link's two
    // ends each apply their own end at its instant (the sender's `up` and
    // its switch's port status, the receiver's count of the packets on
    // the wire, those still in the sender's outbox included;
    // sim/parallel.rs `link_event_part`). Links between partitions
    // (agg-core, leaf-spine) and inside one (host-edge), down and up
    // again, twice within a microsecond (one window), under load.
    let fat = "events=[\
        {at_ms=0.3, kind=\"link_down\", link=\"agg1_0-core0\"},\
        {at_ms=0.5, kind=\"link_down\", link=\"agg0_0-core1\"},\
        {at_ms=0.5004, kind=\"link_up\", link=\"agg0_0-core1\"},\
        {at_ms=0.5008, kind=\"link_down\", link=\"agg0_0-core1\"},\
        {at_ms=0.7, kind=\"link_down\", link=\"h5-edge1_0\"},\
        {at_ms=1.2, kind=\"link_up\", link=\"agg1_0-core0\"},\
        {at_ms=1.5, kind=\"link_up\", link=\"h5-edge1_0\"},\
        {at_ms=2.0, kind=\"link_up\", link=\"agg0_0-core1\"}]";
    // Every host sends 1 MB to the next pod at once: the fabric's links
    // are busy when they fail.
    let mut text = String::from("start_us,src,dst,bytes\n");
    for h in 0..16 {
        text += &format!("{},{h},{},1000000\n", h * 3, (h + 4) % 16);
    }
    let list = flow_file("failures", &text);
    for scheme in ["ecmp", "hula"] {
        let kind = format!("scheme.kind={scheme}");
        let mut sets: Vec<&str> = list.iter().map(String::as_str).collect();
        sets.extend([
            fat,
            &kind,
            // Windows of 5 us: packets the sender put on a link in the
            // window of its failure are still in its outbox.
            "topology.link_delay_us=5",
        ]);
        let par = same_at_1_2_3(FAT, &sets);
        assert!(
            par.summary["packets"]["dropped"].as_u64().unwrap() > 0,
            "{scheme}: no drops"
        );
    }
    let leaf = "events=[\
        {at_ms=0.2, kind=\"link_down\", link=\"leaf2-spine0\"},\
        {at_ms=0.9, kind=\"link_up\", link=\"leaf2-spine0\"},\
        {at_ms=0.4, kind=\"link_down\", link=\"leaf0-spine1\"}]";
    for scheme in ["ecmp", "conga"] {
        let kind = format!("scheme.kind={scheme}");
        same_at_1_2_3(
            LEAF,
            &[leaf, &kind, "workload.flows=100", "run.unused_keys=ignore"],
        );
    }
}

#[test]
fn what_the_parallel_mode_does_not_support_is_refused_with_one_line() {
    let cases: &[(&str, &[&str], &str)] = &[
        (FAT, &["topology.link_loss_rate=0.001"], "link_loss_rate"),
        (FAT, &["transport.kind=udp"], "udp"),
        (
            FAT,
            &["topology.kind=hula3tier", "run.unused_keys=ignore"],
            "topology.partitioned",
        ),
    ];
    for (cfg, sets, what) in cases {
        let mut o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        o.push("run.threads=2".into());
        let e = run_toml(cfg, None, &o, &mut |_| true)
            .err()
            .unwrap_or_else(|| panic!("{sets:?} ran in parallel"));
        assert_eq!(e.kind, ErrorKind::Input, "{e}");
        assert!(!e.message.contains('\n'), "{e}");
        assert!(e.message.starts_with("run.threads:"), "{e}");
        assert!(e.message.contains(what), "{sets:?}: {e}");
        // What is allowed.
        assert!(e.message.contains("every scheme, TCP flows"), "{e}");
    }
    // Without run.threads the same configs run (or fail) as before.
    let single = run(FAT, &["topology.link_loss_rate=0.001", "workload.flows=20"]);
    assert!(single.summary.get("parallel").is_none());
}

#[test]
fn the_schema_declares_run_threads() {
    let schema: serde_json::Value = serde_json::from_str(&pisanet::config_schema_json()).unwrap();
    let text = schema.to_string();
    assert!(
        text.contains("\"threads\""),
        "run.threads not in the schema"
    );
    let run = schema
        .pointer("/$defs/RunCfg/properties/threads")
        .unwrap_or_else(|| panic!("no RunCfg.threads in {text:.300}"));
    assert_eq!(run["x-unit"], "threads");
    assert_eq!(run["minimum"], 1);
}

#[test]
fn a_run_stopped_by_its_time_limit_counts_the_packets_between_partitions() {
    // Stopped mid-run: packets are on links between partitions (in the
    // receiving partition's copy of the wire) and in queues; the merge
    // must count each once for the conservation check.
    let par = same_at_1_2_3(FAT, &["run.max_sim_time_ms=3"]);
    assert_eq!(par.summary["stop_reason"], "time_limit");
    assert!(par.summary["packets"]["in_flight"].as_u64().unwrap() > 0);
    assert!(par.flows.finish_us.iter().any(|f| f.is_nan()));
}

/// Runs `cfg` with a sink; returns the output and every row the sink got,
/// in the order it got them.
fn streamed(cfg: &str, sets: &[&str]) -> (RunOutput, pisanet::FlowTable) {
    use std::sync::{Arc, Mutex};
    let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let seen = Arc::new(Mutex::new(pisanet::FlowTable::default()));
    let s = seen.clone();
    let sink: pisanet::sim::FlowSink = Box::new(move |t| {
        s.lock().unwrap().append(t);
        Ok(())
    });
    let out = pisanet::run_toml_streaming(cfg, None, &o, &mut |_| true, sink)
        .unwrap_or_else(|e| panic!("streamed run failed: {e}"));
    assert!(out.flows.is_empty());
    let rows = std::mem::take(&mut *seen.lock().unwrap());
    (out, rows)
}

#[test]
fn a_streamed_parallel_run_hands_the_sink_the_single_thread_runs_rows_in_its_order() {
    // Parallel mode streams finished flows as the single-thread run does
    // (sim/parallel.rs `Collector`): the sink gets the same rows in the
    // same order (the order receivers were released, then, when the run
    // stops, lingering and running flows by id), so flows.parquet is the
    // same file; digest and summary are the same too.
    for sets in [
        &["run.max_sim_time_ms=5"][..],
        &[
            "topology.buffer_kb=20",
            "transport.kind=newreno",
            "workload.flows=120",
        ][..],
    ] {
        let (single, rows) = streamed(FAT, sets);
        assert!(single.summary.get("parallel").is_none());
        let whole = run(FAT, sets);
        assert_eq!(rows.len(), whole.flows.len(), "{sets:?}");
        // Not in id order (flows end in another order), yet every row once.
        assert!(rows.id.windows(2).any(|w| w[0] > w[1]), "{sets:?}");
        let mut sorted = rows.clone();
        sorted.sort_by_id();
        assert_eq!(format!("{sorted:?}"), format!("{:?}", whole.flows));
        for t in ["2", "3"] {
            let key = format!("run.threads={t}");
            let mut s: Vec<&str> = sets.to_vec();
            s.push(&key);
            let (par, par_rows) = streamed(FAT, &s);
            assert_eq!(
                format!("{par_rows:?}"),
                format!("{rows:?}"),
                "{sets:?} threads {t}"
            );
            assert_eq!(results(&par), results(&single), "{sets:?} threads {t}");
            assert_eq!(digest(&par), digest(&whole));
        }
    }
}

#[test]
fn capture_and_trace_are_the_single_thread_runs_byte_for_byte() {
    // A port's pcap file is written by its own partition (only it
    // transmits there); the trace rows of every partition are put in the
    // order of the events that wrote them (sim/parallel.rs `merge`,
    // capture.rs `Tap::merge`), and a packet's id (the capture's IPv4 id,
    // the trace's `packet`) is its node's count, the same in every mode
    // (`World::new_uid`). Flows that start at one instant in several pods
    // (one `NextFlow` event, rows in flow order), links between
    // partitions and inside one, HULA's probes made by switches, a link
    // failure (both ends act at one instant), and the bounds hit.
    let mut text = String::from("start_us,src,dst,bytes\n");
    for i in 0..40u32 {
        // Four flows at each instant, one from each pod, every other
        // instant in the opposite order of the pods.
        let pod = if (i / 4) % 2 == 0 { i % 4 } else { 3 - i % 4 };
        let src = pod * 4 + (i / 4) % 4;
        let dst = (src + 5 + (i * 3) % 7) % 16;
        text += &format!(
            "{},{src},{dst},{}\n",
            (i / 4) * 15,
            8_000 + (i * 7919) % 90_000
        );
    }
    let list = flow_file("capture", &text);
    let mut sets: Vec<&str> = list.iter().map(String::as_str).collect();
    sets.extend([
        "scheme.kind=hula",
        "metrics.pcap.ports=[\"agg0_0->core0\", \"core1->agg1_0\", \"h0->edge0_0\", \"edge3_1->h15\", \"agg2_1->edge2_0\"]",
        "metrics.trace.ports=[\"agg0_0->core0\", \"core0->agg3_0\", \"edge1_0->agg1_1\", \"h4->edge1_0\", \"edge3_1->h15\", \"agg2_1->edge2_0\", \"h1->edge0_0\", \"h5->edge1_0\", \"h9->edge2_0\", \"h13->edge3_0\"]",
        "metrics.trace.flows=[0, 1, 2, 3, 4, 5, 6, 7, 9, 17, 30]",
        "events=[{at_ms=0.05, kind=\"link_down\", link=\"agg1_1-core2\"}, {at_ms=0.2, kind=\"link_up\", link=\"agg1_1-core2\"}]",
    ]);
    let par = same_at_1_2_3(FAT, &sets);
    let cap = &par.capture;
    assert_eq!(cap.pcaps.len(), 5);
    assert!(
        cap.pcaps.iter().all(|(_, b)| b.len() > 24),
        "an empty capture"
    );
    let t = &cap.trace;
    assert!(t.packet.len() > 100, "{} trace rows", t.packet.len());
    // Rows from the nodes of several partitions (pods).
    let nodes: std::collections::BTreeSet<&str> = t.node.iter().map(String::as_str).collect();
    assert!(nodes.len() >= 4, "{nodes:?}");
    // The bounds: each partition keeps its first rows and packets; the
    // run keeps the first of the merged order.
    let mut bounded = sets.clone();
    bounded.extend(["metrics.pcap.max_packets=40", "metrics.trace.max_rows=150"]);
    let par = same_at_1_2_3(FAT, &bounded);
    assert_eq!(par.capture.trace.packet.len(), 150);
    let warnings = par.summary["warnings"].to_string();
    assert!(
        warnings.contains("max_rows") && warnings.contains("max_packets"),
        "{warnings}"
    );
    // Every packet, without a flow filter, on a leaf-spine.
    same_at_1_2_3(
        LEAF,
        &[
            "metrics.pcap.ports=[\"leaf0->spine1\", \"spine0->leaf3\"]",
            "metrics.trace.ports=[\"spine1->leaf2\", \"leaf1->spine0\"]",
            "workload.flows=60",
        ],
    );
}

#[test]
fn pfc_is_the_single_thread_runs_with_its_deadlock_detector() {
    // PFC's accounts, thresholds, PAUSE frames and pause timers are per
    // port, and PAUSE frames cross partitions over links like any packet;
    // the deadlock detector, armed by the first PAUSE received anywhere
    // and reading every port at its checks, is replayed by the coordinator
    // from what each partition logged and saw at the check's place in its
    // events (sim/parallel.rs `pfc_window`). An incast into pod 0 from
    // every pod, with a short deadlock_ms: queues stay paused past it, so
    // the checks see stuck queues (and find no cycle: a fat tree's
    // up-down routes have none), and are counted as events.
    let mut text = String::from("start_us,src,dst,bytes\n");
    for i in 0..48u32 {
        let src = 2 + i % 14;
        let dst = if i % 3 == 2 { (src + 6) % 16 } else { i % 2 };
        text += &format!(
            "{},{src},{dst},{}\n",
            (i / 15) * 40,
            60_000 + (i * 7919) % 150_000
        );
    }
    let list = flow_file("pfc", &text);
    let mut sets: Vec<&str> = list.iter().map(String::as_str).collect();
    sets.extend([
        "topology.pfc.enabled=true",
        "topology.pfc.xoff_kb=20",
        "topology.ecn_threshold_kb=0",
        "topology.pfc.deadlock_ms=0.01",
        "metrics.queue_sample_interval_us=25",
        "metrics.pcap.ports=[\"edge0_0->agg0_0\", \"agg0_1->edge0_0\"]",
    ]);
    let par = same_at_1_2_3(FAT, &sets);
    let pfc = &par.summary["pfc"];
    assert!(pfc["pause_frames_sent"].as_u64().unwrap() > 0, "{pfc}");
    assert!(pfc["paused_time_us"].as_f64().unwrap() > 0.0, "{pfc}");
    assert_eq!(par.summary["flows"]["completed"], 48);
    // The detector's checks are events: without it, fewer.
    let mut off = sets.clone();
    off.push("topology.pfc.deadlock_ms=0");
    let quiet = same_at_1_2_3(FAT, &off);
    assert!(
        quiet.summary["events"].as_u64() < par.summary["events"].as_u64(),
        "no detector checks"
    );
    // On a leaf-spine with two lossless priorities, stopped mid-run
    // (pause intervals still open, PAUSE frames waiting).
    same_at_1_2_3(
        LEAF,
        &[
            "topology.pfc.enabled=true",
            "topology.pfc.xoff_kb=15",
            "topology.priorities=2",
            "topology.pfc.priorities=[0, 1]",
            "topology.buffer_kb=60",
            "workload.flows=120",
            "workload.load=0.9",
            "run.max_sim_time_ms=1",
        ],
    );
    // A detector shorter than twice the lookahead is refused.
    let mut o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    o.extend([
        "topology.pfc.deadlock_ms=0.001".into(),
        "run.threads=2".into(),
    ]);
    let e = run_toml(FAT, None, &o, &mut |_| true).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Input, "{e}");
    assert!(
        e.message
            .contains("topology.pfc.deadlock_ms = 0.001 below twice"),
        "{e}"
    );
}

/// A custom topology file (docs/architecture.md, "Parallel mode"): an
/// irregular fabric of 5 racks of 3 hosts under two aggregation switches
/// and a core, with links of several delays, a rack hanging off another
/// ToR, a 0-delay link between two switches (never cut) and a host link
/// of its own delay.
const IRREGULAR: &str = r#"
[[nodes]]
name = "h0"
kind = "host"
[[nodes]]
name = "h1"
kind = "host"
[[nodes]]
name = "h2"
kind = "host"
[[nodes]]
name = "h3"
kind = "host"
[[nodes]]
name = "h4"
kind = "host"
[[nodes]]
name = "h5"
kind = "host"
[[nodes]]
name = "h6"
kind = "host"
[[nodes]]
name = "h7"
kind = "host"
[[nodes]]
name = "h8"
kind = "host"
[[nodes]]
name = "h9"
kind = "host"
[[nodes]]
name = "h10"
kind = "host"
[[nodes]]
name = "h11"
kind = "host"
[[nodes]]
name = "h12"
kind = "host"
[[nodes]]
name = "h13"
kind = "host"
[[nodes]]
name = "h14"
kind = "host"
[[nodes]]
name = "t0"
kind = "switch"
[[nodes]]
name = "t1"
kind = "switch"
[[nodes]]
name = "t2"
kind = "switch"
[[nodes]]
name = "t3"
kind = "switch"
[[nodes]]
name = "t4"
kind = "switch"
[[nodes]]
name = "a0"
kind = "switch"
tier = 1
[[nodes]]
name = "a1"
kind = "switch"
tier = 1
[[nodes]]
name = "c0"
kind = "switch"
tier = 2

[[links]]
a = "h0"
b = "t0"
[[links]]
a = "h1"
b = "t0"
[[links]]
a = "h2"
b = "t0"
delay_us = 0.3
[[links]]
a = "h3"
b = "t1"
[[links]]
a = "h4"
b = "t1"
[[links]]
a = "h5"
b = "t1"
[[links]]
a = "h6"
b = "t2"
[[links]]
a = "h7"
b = "t2"
[[links]]
a = "h8"
b = "t2"
[[links]]
a = "h9"
b = "t3"
[[links]]
a = "h10"
b = "t3"
[[links]]
a = "h11"
b = "t3"
[[links]]
a = "h12"
b = "t4"
[[links]]
a = "h13"
b = "t4"
[[links]]
a = "h14"
b = "t4"
[[links]]
a = "t0"
b = "a0"
[[links]]
a = "t1"
b = "a0"
delay_us = 1.5
[[links]]
a = "t2"
b = "a1"
[[links]]
a = "t3"
b = "a1"
delay_us = 0.0
[[links]]
a = "t4"
b = "t3"
delay_us = 2.0
[[links]]
a = "a0"
b = "c0"
delay_us = 0.7
[[links]]
a = "a1"
b = "c0"
[[links]]
a = "a0"
b = "a1"
delay_us = 3.0
"#;

/// Writes a custom topology file; returns the config that runs it.
fn custom(name: &str, text: &str) -> String {
    let d = std::env::temp_dir().join(format!("pisanet-parallel-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let path = d.join("topology.toml");
    std::fs::write(&path, text).unwrap();
    format!(
        r#"
[run]
max_sim_time_ms = 200
[topology]
kind = "custom"
file = {:?}
partitioned = true
host_link_gbps = 10.0
fabric_link_gbps = 10.0
link_delay_us = 1.0
buffer_kb = 100
ecn_threshold_kb = 65
[transport]
kind = "dctcp"
[workload]
cdf = "websearch"
load = 0.5
flows = 120
[scheme]
kind = "ecmp"
"#,
        path.to_str().unwrap()
    )
}

#[test]
fn a_custom_topology_with_topology_partitioned_is_the_single_thread_runs() {
    // `topology.partitioned`: the custom fabric is cut by its graph
    // (sim/parallel.rs `partition_general`) and both modes get the
    // lookahead of the cut: the smallest delay of a link between
    // partitions, never a 0-delay one.
    let cfg = custom("irregular", IRREGULAR);
    let par = same_at_1_2_3(&cfg, &[]);
    assert_eq!(par.summary["flows"]["completed"], 120);
    let p = &par.summary["parallel"];
    assert!(p["partitions"].as_u64().unwrap() >= 3, "{p}");
    assert!(p["lookahead_us"].as_f64().unwrap() > 0.0, "{p}");
    for sets in [
        &[
            "transport.kind=newreno",
            "topology.buffer_kb=20",
            "run.seed=3",
        ][..],
        &[
            "scheme.kind=flowlet_ecmp",
            "run.seed=2",
            "workload.flows=80",
        ][..],
        &["scheme.kind=rps", "workload.flows=80"][..],
        &[
            "scheme.kind=hula",
            "workload.flows=80",
            "run.unused_keys=ignore",
        ][..],
        &[
            "metrics.flow_stats=true",
            "metrics.goodput_interval_us=50",
            "metrics.queue_sample_interval_us=20",
            "workload.flows=60",
        ][..],
        &["run.max_sim_time_ms=2"][..],
        &[
            "topology.pfc.enabled=true",
            "topology.buffer_kb=60",
            "workload.flows=60",
        ][..],
        &[
            "metrics.pcap.ports=[\"a0->c0\", \"t4->t3\", \"h2->t0\"]",
            "metrics.trace.ports=[\"t3->a1\", \"a0->a1\", \"c0->a1\"]",
            "metrics.trace.flows=[0, 1, 2, 3, 5, 8]",
            "workload.flows=40",
        ][..],
    ] {
        same_at_1_2_3(&cfg, sets);
    }
    // A link failure between partitions (t4 - t3, 2 us).
    let failure = format!(
        "{cfg}\n[[events]]\nat_ms = 1.0\nkind = \"link_down\"\nlink = \"t4-t3\"\n[[events]]\nat_ms = 3.0\nkind = \"link_up\"\nlink = \"t4-t3\"\n"
    );
    same_at_1_2_3(&failure, &["workload.flows=60"]);
    // The key changes the single-thread run's rules (a lookahead), so
    // without it the run is refused in parallel mode and runs as before.
    let off = cfg.replace("partitioned = true", "partitioned = false");
    let e = run_toml(&off, None, &["run.threads=2".to_string()], &mut |_| true).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Input, "{e}");
    assert!(!e.message.contains('\n'), "{e}");
    assert!(e.message.contains("topology.partitioned"), "{e}");
    let before = run(&off, &[]);
    assert_eq!(before.summary["flows"]["completed"], 120);
    // PFC's deadlock detector faster than the cut's lookahead (not
    // topology.link_delay_us: the file's links give it) is refused with it.
    let sets = [
        "topology.pfc.enabled=true",
        "topology.pfc.deadlock_ms=0.0005",
        "run.threads=2",
    ]
    .map(String::from);
    let e = run_toml(&cfg, None, &sets, &mut |_| true).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Input, "{e}");
    assert!(!e.message.contains('\n'), "{e}");
    assert!(
        e.message
            .contains("shorter than twice the lookahead (0.7 us"),
        "{e}"
    );
}

#[test]
fn hula3tier_with_topology_partitioned_is_the_single_thread_runs() {
    // HULA's paper topology, with its probes between partitions (each
    // ToR's rack a partition, aggregation switches and spines dealt
    // round-robin: every ToR-aggregation link may be cut).
    let sets = [
        "topology.kind=hula3tier",
        "topology.partitioned=true",
        "topology.hosts_per_tor=4",
        "workload.flows=80",
        "run.unused_keys=ignore",
    ];
    for scheme in ["hula", "ecmp", "flowlet_ecmp"] {
        let kind = format!("scheme.kind={scheme}");
        let mut s = sets.to_vec();
        s.push(&kind);
        let par = same_at_1_2_3(FAT, &s);
        assert_eq!(par.summary["parallel"]["partitions"], 4, "{scheme}");
        assert_eq!(par.summary["flows"]["completed"], 80, "{scheme}");
        if scheme == "hula" {
            assert!(par.summary["packets"]["consumed"].as_u64().unwrap() > 0);
        }
    }
}

mod random_fabrics {
    //! Random custom fabrics (racks, extra switches, links of random
    //! delays, some 0): with `topology.partitioned`, runs at 2 and 3
    //! threads give the single-thread run's digest and summary.
    use super::*;
    use proptest::prelude::*;

    /// A custom topology file: `racks` ToRs with `hosts[r]` hosts each,
    /// `extra` switches without hosts, a chain through every switch (so
    /// it is connected) and the `more` links, with delays (tenths of a
    /// microsecond, 0 allowed) from `delays`, cycled.
    fn fabric(hosts: &[u8], extra: u8, more: &[(u8, u8)], delays: &[u8]) -> String {
        let mut t = String::new();
        let mut links = Vec::new();
        let mut h = 0;
        let switches = hosts.len() + extra as usize;
        for (r, &n) in hosts.iter().enumerate() {
            for _ in 0..n {
                t += &format!("[[nodes]]\nname = \"h{h}\"\nkind = \"host\"\n");
                links.push((format!("h{h}"), format!("s{r}")));
                h += 1;
            }
        }
        for s in 0..switches {
            t += &format!("[[nodes]]\nname = \"s{s}\"\nkind = \"switch\"\n");
        }
        let mut seen = std::collections::HashSet::new();
        for s in 1..switches {
            links.push((format!("s{}", s - 1), format!("s{s}")));
            seen.insert((s - 1, s));
        }
        for &(a, b) in more {
            let (a, b) = (a as usize % switches, b as usize % switches);
            let (a, b) = (a.min(b), a.max(b));
            if a != b && seen.insert((a, b)) {
                links.push((format!("s{a}"), format!("s{b}")));
            }
        }
        for (i, (a, b)) in links.iter().enumerate() {
            let d = f64::from(delays[i % delays.len()]) / 10.0;
            t += &format!("[[links]]\na = \"{a}\"\nb = \"{b}\"\ndelay_us = {d}\n");
        }
        t
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 12,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]
        #[test]
        fn a_random_partitioned_fabric_gives_one_digest_at_every_thread_count(
            hosts in prop::collection::vec(1u8..4, 2..7),
            extra in 0u8..4,
            more in prop::collection::vec((0u8..10, 0u8..10), 0..6),
            delays in prop::collection::vec(0u8..25, 1..6),
            seed in 1u32..1000,
            scheme in prop::sample::select(vec!["ecmp", "flowlet_ecmp", "rps"]),
        ) {
            let cfg = custom("random", &fabric(&hosts, extra, &more, &delays));
            let seed = format!("run.seed={seed}");
            let kind = format!("scheme.kind={scheme}");
            let sets = [seed.as_str(), kind.as_str(), "workload.flows=40", "transport.kind=newreno"];
            let single = run(&cfg, &sets);
            for t in ["2", "3"] {
                let key = format!("run.threads={t}");
                let mut s = sets.to_vec();
                s.push(&key);
                let par = run(&cfg, &s);
                prop_assert_eq!(digest(&par), digest(&single));
                prop_assert_eq!(results(&par), results(&single));
                prop_assert_eq!(&par.ports, &single.ports);
            }
        }
    }
}
