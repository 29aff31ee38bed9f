//! The flow table streamed in batches (`run_toml_streaming`) holds the same
//! rows, and the run the same digest and summary, as the table kept whole
//! (`run_toml`); a run with more flows than a batch hands every row over once.

use std::sync::{Arc, Mutex};

use pisanet::sim::records::BATCH_ROWS;
use pisanet::{run_toml, run_toml_streaming, FlowTable, RunOutput};

/// Runs `text` streaming; returns the output and the batches the sink got.
fn streamed(text: &str, sets: &[String]) -> (RunOutput, Vec<FlowTable>) {
    let batches = Arc::new(Mutex::new(Vec::new()));
    let seen = batches.clone();
    let sink: pisanet::sim::FlowSink = Box::new(move |t| {
        seen.lock().unwrap().push(t);
        Ok(())
    });
    let out = run_toml_streaming(text, None, sets, &mut |_| true, sink).expect("streamed run");
    let batches = std::mem::take(&mut *batches.lock().unwrap());
    (out, batches)
}

/// The summary without the figures of the machine (wall time, speed, memory).
fn results_of(out: &RunOutput) -> serde_json::Value {
    let mut s = out.summary.clone();
    let o = s.as_object_mut().unwrap();
    for k in [
        "wall_time_s",
        "events_per_s",
        "packet_hops_per_s",
        "peak_rss_mb",
    ] {
        o.remove(k);
    }
    s
}

const LEAF_SPINE: &str = r#"
[run]
seed = 3
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4
[transport]
kind = "dctcp"
[workload]
cdf = "websearch"
load = 0.7
flows = 300
[metrics]
flow_stats = true
"#;

fn same_rows(whole: &FlowTable, batches: Vec<FlowTable>) {
    let mut all = FlowTable::default();
    for b in batches {
        all.append(b);
    }
    all.sort_by_id();
    assert_eq!(all.id, whole.id);
    assert_eq!(all.src, whole.src);
    assert_eq!(all.dst, whole.dst);
    assert_eq!(all.bytes, whole.bytes);
    assert_eq!(all.retransmissions, whole.retransmissions);
    assert_eq!(all.delivered, whole.delivered);
    assert_eq!(all.dup_acks, whole.dup_acks);
    assert_eq!(all.delay_packets, whole.delay_packets);
    // NaN (unfinished, unmeasured) compares by bits.
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&all.start_us), bits(&whole.start_us));
    assert_eq!(bits(&all.fct_us), bits(&whole.fct_us));
    assert_eq!(bits(&all.slowdown), bits(&whole.slowdown));
    assert_eq!(bits(&all.delay_p99_us), bits(&whole.delay_p99_us));
    assert_eq!(bits(&all.rtt_mean_us), bits(&whole.rtt_mean_us));
}

#[test]
fn streamed_rows_digest_and_summary_equal_the_whole_table() {
    // Stopped early too, so that flows still running have rows (NaN FCT).
    for sets in [vec![], vec!["run.max_sim_time_ms=2".to_string()]] {
        let whole = run_toml(LEAF_SPINE, None, &sets, &mut |_| true).unwrap();
        let (out, batches) = streamed(LEAF_SPINE, &sets);
        assert!(out.flows.is_empty(), "a streamed run hands back no rows");
        assert_eq!(results_of(&out), results_of(&whole));
        assert!(whole.flows.id.windows(2).all(|w| w[0] + 1 == w[1]));
        if !sets.is_empty() {
            assert!(whole.flows.fct_us.iter().any(|f| f.is_nan()));
        }
        same_rows(&whole.flows, batches);
    }
}

#[test]
fn more_flows_than_a_batch_are_each_streamed_once() {
    // Short flows on a small fabric: about 1.2 batches.
    let text = r#"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4
[transport]
kind = "dctcp"
[workload]
cdf = "../../../experiments/soak/short_flows.cdf"
load = 0.3
flows = 80000
"#;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let batches = Arc::new(Mutex::new(Vec::<FlowTable>::new()));
    let seen = batches.clone();
    let sink: pisanet::sim::FlowSink = Box::new(move |t| {
        seen.lock().unwrap().push(t);
        Ok(())
    });
    let out = run_toml_streaming(text, Some(&dir), &[], &mut |_| true, sink).unwrap();
    assert_eq!(out.summary["flows"]["completed"], 80000);
    let batches = batches.lock().unwrap();
    assert!(batches.len() >= 2, "{} batches", batches.len());
    assert!(batches.iter().all(|b| b.len() <= BATCH_ROWS));
    let mut ids: Vec<u32> = batches.iter().flat_map(|b| b.id.iter().copied()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..80000).collect::<Vec<u32>>());
}

#[test]
fn a_failing_sink_stops_the_run_with_its_error() {
    let sink: pisanet::sim::FlowSink =
        Box::new(|_| Err(pisanet::Error::input("flows.parquet: disk full")));
    let e = run_toml_streaming(LEAF_SPINE, None, &[], &mut |_| true, sink).unwrap_err();
    assert_eq!(e.message, "flows.parquet: disk full");
}
