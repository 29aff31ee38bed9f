//! The options that select ns-3's behaviour (docs/model.md; issue 19's
//! cross-check): `topology.buffer_pkts`, `transport.handshake`,
//! `transport.limited_transmit`, `transport.rto_granularity_us`,
//! `transport.cwr_ignores_dupacks`, `transport.rtt_every_ack`,
//! `transport.ts_clock_us`, `transport.cwr_freeze`,
//! `transport.reno_scoreboard`, `transport.dctcp_loss_uses_alpha`,
//! `transport.cwr_ends_at_timeout`, `transport.dctcp_no_floor`,
//! `transport.full_segment_window`, `transport.dctcp_window_end_next_tx`
//! and `transport.ca_segment_count`.

mod common;

use pisanet::RunOutput;

/// A 2 x 1 leaf-spine with 4 hosts per leaf (10 Gb/s, 1 us links), NewReno.
const CFG: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 1
hosts_per_leaf = 4
link_delay_us = 1.0
buffer_kb = 200
[transport]
kind = "newreno"
"#;

fn run_flows(name: &str, flows: &str, sets: &[&str]) -> RunOutput {
    common::run_flows("ns3opt", name, CFG, flows, sets)
}

fn n(v: &serde_json::Value, path: &str) -> f64 {
    path.split('.').fold(v, |v, k| &v[k]).as_f64().unwrap()
}

/// Whether run `o` conserved its packets.
fn conserves(o: &RunOutput) -> bool {
    o.summary["conservation_ok"].as_bool().unwrap()
}

/// Runs `flows` as `{name}-off` with `base` and as `{name}-on` with `key`
/// added: both runs.
fn off_and_on(name: &str, flows: &str, base: &[&str], key: &str) -> (RunOutput, RunOutput) {
    let off = run_flows(&format!("{name}-off"), flows, base);
    let mut sets = base.to_vec();
    sets.push(key);
    (off, run_flows(&format!("{name}-on"), flows, &sets))
}

/// Runs `flows` with `base`, then with `key` added: the second run must
/// conserve and differ (the option is read). Returns both runs.
fn differs_with(name: &str, flows: &str, base: &[&str], key: &str) -> (RunOutput, RunOutput) {
    let (off, on) = off_and_on(name, flows, base, key);
    assert!(conserves(&on), "{key}");
    assert_ne!(off.summary["digest"], on.summary["digest"], "{key}");
    (off, on)
}

/// `differs_with`, and the second run completes the same flows.
fn changes_the_run(name: &str, flows: &str, base: &[&str], key: &str) -> (RunOutput, RunOutput) {
    let (off, on) = differs_with(name, flows, base, key);
    assert_eq!(
        n(&on.summary, "flows.completed"),
        n(&off.summary, "flows.completed"),
        "{key}"
    );
    (off, on)
}

/// Without a loss (or a timeout) `key` changes nothing: one flow alone
/// through an unbounded port (`{name}-alone-off`, `-on`), with `base` and
/// with `key` added, drops nothing and runs the same.
fn same_alone(name: &str, base: &[&str], key: &str) {
    let (a, b) = off_and_on(&format!("{name}-alone"), "0,0,4,2000000\n", base, key);
    assert_eq!(n(&a.summary, "packets.dropped"), 0.0);
    assert_eq!(a.summary["digest"], b.summary["digest"]);
}

/// The one-line error `sets` give on the incast.
fn refusal(name: &str, sets: &[&str]) -> String {
    common::try_flows("ns3opt", name, CFG, INCAST, sets)
        .unwrap_err()
        .to_string()
}

/// `sets` on the incast are refused with an error naming `key`.
fn refused_naming(name: &str, sets: &[&str], key: &str) {
    let err = refusal(name, sets);
    assert!(err.contains(key), "{err}");
}

/// Three senders on one leaf to one host on the other: the spine port holds
/// the queue.
const INCAST: &str = "0,0,4,2000000\n0,1,4,2000000\n0,2,4,2000000\n";

/// Switch ports of 20 packets that mark above 5 packets (by count: no byte
/// threshold).
const PORTS_20_K5: [&str; 3] = [
    "topology.buffer_pkts=20",
    "topology.ecn_threshold_kb=0",
    "topology.ecn_threshold_pkts=5",
];

/// Seven flows of `bytes` B at once, from hosts 0-6 to host 7 (three on
/// the receiver's leaf, four across the spine).
fn seven_to_one(bytes: u32) -> String {
    (0..7).map(|s| format!("0,{s},7,{bytes}\n")).collect()
}

#[test]
fn buffer_pkts_limits_the_queue_in_packets() {
    let bytes_only = run_flows("bytes", INCAST, &[]);
    // A packet limit far above what 200 KB holds changes nothing at all.
    let loose = run_flows("loose", INCAST, &["topology.buffer_pkts=100000"]);
    assert_eq!(bytes_only.summary["digest"], loose.summary["digest"]);
    // 20 packets (30 KB) instead of 200 KB (131 packets): the deepest queue
    // stays within 20 full frames, and gets near it (drops happen).
    let tight = run_flows("tight", INCAST, &["topology.buffer_pkts=20"]);
    let max_depth = |o: &RunOutput| {
        o.ports
            .as_array()
            .unwrap()
            .iter()
            // Switch ports: `buffer_pkts` limits them; a host NIC is
            // unbounded (TSQ bounds what a flow keeps there).
            .filter(|p| p["switch_port"] == true)
            .map(|p| p["max_depth_bytes"].as_u64().unwrap())
            .max()
            .unwrap()
    };
    let (d_tight, d_bytes) = (max_depth(&tight), max_depth(&bytes_only));
    assert!(d_tight <= 20 * 1518, "{d_tight}");
    assert!(d_tight > 15 * 1518, "{d_tight}");
    assert!(d_bytes > 100 * 1518, "{d_bytes}");
    assert!(n(&tight.summary, "packets.dropped") > 0.0);
    assert!(tight.flows.fct_us.iter().all(|f| f.is_finite()));
}

#[test]
fn handshake_costs_one_round_trip_and_two_packets() {
    // One 10-segment flow across the spine (4 links each way, 1 us each).
    let plain = run_flows("plain", "0,0,4,14600\n", &[]);
    let hs = run_flows("hs", "0,0,4,14600\n", &["transport.handshake=true"]);
    let extra = hs.flows.fct_us[0] - plain.flows.fct_us[0];
    // SYN + SYN-ACK: 8 us of propagation plus 8 serializations of 64 B at
    // 10 Gb/s (51.2 ns each).
    assert!((extra - 8.41).abs() < 0.05, "handshake added {extra} us");
    assert_eq!(
        n(&hs.summary, "packets.injected"),
        n(&plain.summary, "packets.injected") + 2.0
    );
    assert!(conserves(&hs));
}

#[test]
fn limited_transmit_is_wired_and_changes_recovery_only_when_on() {
    // Losses happen here, so the early duplicate ACKs release new segments:
    // on, the run differs.
    let (off, on) = differs_with(
        "lt",
        INCAST,
        &["topology.buffer_pkts=20"],
        "transport.limited_transmit=true",
    );
    let off2 = run_flows(
        "lt-off2",
        INCAST,
        &[
            "topology.buffer_pkts=20",
            "transport.limited_transmit=false",
        ],
    );
    assert_eq!(off.summary["digest"], off2.summary["digest"]);
    assert!(on.flows.fct_us.iter().all(|f| f.is_finite()));
}

#[test]
fn rto_granularity_adds_to_srtt_and_delays_timeouts_only_when_set() {
    // Four 3-segment flows at once into a 2-packet port: tails are lost and
    // no flow has the duplicate ACKs to recover without a timeout.
    let flows = "0,0,4,4380\n0,1,4,4380\n0,2,4,4380\n0,3,4,4380\n";
    let sets = ["topology.buffer_pkts=2", "transport.min_rto_us=1000"];
    let base = run_flows("g-off", flows, &sets);
    let zero = run_flows(
        "g-zero",
        flows,
        &[sets[0], sets[1], "transport.rto_granularity_us=0"],
    );
    assert_eq!(base.summary["digest"], zero.summary["digest"]);
    // Without G a timeout fires after max(1 ms, SRTT + 4 RTTVAR) = 1 ms
    // (flows 0 and 1 end at about 1040 us).
    assert!(base.flows.fct_us.iter().filter(|&&f| f > 1000.0).count() >= 2);
    // G = min RTO (Linux's rule; ns-3's G = 1 ms): SRTT + 1 ms, later.
    let g = run_flows(
        "g-1ms",
        flows,
        &[sets[0], sets[1], "transport.rto_granularity_us=1000"],
    );
    assert_ne!(base.summary["digest"], g.summary["digest"]);
    assert!(conserves(&g));
    // Flows that time out after an RTT sample wait SRTT + 1 ms instead of
    // 1 ms (a SYN-less flow with no sample waits the initial RTO in both).
    let total = |o: &RunOutput| o.flows.fct_us.iter().sum::<f64>();
    assert!(
        total(&g) > total(&base),
        "{} <= {}",
        total(&g),
        total(&base)
    );
    for (a, b) in base.flows.fct_us.iter().zip(&g.flows.fct_us) {
        assert!(b >= a, "{b} < {a}");
    }
}

#[test]
fn cwr_ignores_dupacks_turns_dctcp_incast_losses_into_timeouts() {
    // Seven 32 KB DCTCP flows into one host through 20-packet ports marking
    // at 10 packets: each flow is cut by ECE early, then loses a segment.
    let flows = seven_to_one(32000);
    let sets = [
        "transport.kind=\"dctcp\"",
        "topology.buffer_pkts=20",
        "topology.ecn_threshold_kb=15",
        "transport.min_rto_us=1000",
    ];
    let (linux, ns3) = off_and_on("cwr", &flows, &sets, "transport.cwr_ignores_dupacks=true");
    assert!(n(&linux.summary, "packets.dropped") > 0.0);
    assert!(conserves(&ns3));
    let mean = |o: &RunOutput| o.flows.fct_us.iter().sum::<f64>() / o.flows.fct_us.len() as f64;
    // ns-3's CA_CWR leaves losses that fast retransmit (Linux) recovers to
    // the 1 ms timer: some flow ends past it, and the mean rises.
    let max = |o: &RunOutput| o.flows.fct_us.iter().cloned().fold(0.0, f64::max);
    assert!(max(&ns3) > 1000.0, "{}", max(&ns3));
    assert!(
        mean(&ns3) > 1.2 * mean(&linux),
        "{} vs {}",
        mean(&ns3),
        mean(&linux)
    );
}

#[test]
fn rtt_every_ack_with_ns3_timestamps_gives_whole_millisecond_samples() {
    let stats = "metrics.flow_stats=true";
    let exact = run_flows("rtt-exact", INCAST, &[stats]);
    let ns3 = run_flows(
        "rtt-ms",
        INCAST,
        &[
            stats,
            "transport.rtt_every_ack=true",
            "transport.ts_clock_us=1000",
        ],
    );
    assert!(conserves(&ns3));
    // pisanet's clock: the queue's RTTs, not whole milliseconds.
    assert!(exact
        .flows
        .rtt_max_us
        .iter()
        .all(|&r| r > 1.0 && r % 1000.0 != 0.0));
    // ns-3's millisecond timestamps: every sample is 1 us (within one
    // millisecond) or whole milliseconds, so the largest is one of them.
    for &r in &ns3.flows.rtt_max_us {
        assert!(r == 1.0 || (r >= 1000.0 && r % 1000.0 == 0.0), "{r}");
    }
}

#[test]
fn cwr_freeze_changes_dctcp_only_after_ecn_cuts() {
    // Three 2 MB DCTCP flows into one host: the spine port marks, every
    // flow is cut by ECE many times.
    let dctcp = [
        "transport.kind=\"dctcp\"",
        "topology.ecn_threshold_kb=30",
        "metrics.flow_stats=true",
    ];
    // The cut windows' ACKs no longer grow cwnd: the run differs.
    let (grow, _) = differs_with("freeze", INCAST, &dctcp, "transport.cwr_freeze=true");
    assert!(n(&grow.summary, "packets.ecn_marked") > 0.0);
    // Without ECN cuts (NewReno, no marking) the option changes nothing.
    let (reno, reno_on) = off_and_on("freeze-reno", INCAST, &[], "transport.cwr_freeze=true");
    assert_eq!(reno.summary["digest"], reno_on.summary["digest"]);
}

#[test]
fn ecn_threshold_pkts_marks_by_packet_count() {
    // Three 2 MB DCTCP flows into one host; the byte threshold is off (or
    // far above any queue), so only the packet threshold can mark.
    let base = ["transport.kind=\"dctcp\"", "topology.ecn_threshold_kb=0"];
    let (off, pkts) = off_and_on("ecn-pkts", INCAST, &base, "topology.ecn_threshold_pkts=10");
    assert_eq!(n(&off.summary, "packets.ecn_marked"), 0.0);
    assert!(conserves(&pkts));
    assert!(n(&pkts.summary, "packets.ecn_marked") > 0.0);
    // Either threshold marks: a byte threshold no queue reaches changes nothing.
    let high = run_flows(
        "ecn-pkts-high-bytes",
        INCAST,
        &[
            "transport.kind=\"dctcp\"",
            "topology.ecn_threshold_kb=100000",
            "topology.ecn_threshold_pkts=10",
        ],
    );
    assert_eq!(
        n(&high.summary, "packets.ecn_marked"),
        n(&pkts.summary, "packets.ecn_marked")
    );
}

#[test]
fn reno_scoreboard_changes_loss_recovery_only() {
    // Three 2 MB NewReno flows into one host through a 20-packet port, no
    // TSQ (the senders' NICs hold their windows, as ns-3's hosts): drops,
    // duplicate ACKs and timeouts.
    let base = [
        "topology.buffer_pkts=20",
        "transport.tsq_kb=0",
        "transport.limited_transmit=true",
        "metrics.flow_stats=true",
    ];
    let key = "transport.reno_scoreboard=true";
    let (off, on) = differs_with("reno-board", INCAST, &base, key);
    assert!(n(&off.summary, "packets.dropped") > 0.0);
    // ns-3's bookkeeping resends more: duplicate ACKs' SACK marks let
    // segments out beyond cwnd, and marks left past a recovery resend
    // segments the receiver may already hold.
    let resent = |o: &RunOutput| n(&o.summary, "retransmissions");
    assert!(
        resent(&on) > resent(&off),
        "{} vs {}",
        resent(&on),
        resent(&off)
    );
    // Without a loss nothing differs.
    same_alone("reno-board", &["transport.tsq_kb=0"], key);
    // With SACK the key is not read, and so refused.
    refused_naming(
        "reno-board-sack",
        &["transport.sack=true", key],
        "transport.reno_scoreboard",
    );
}

#[test]
fn dctcp_loss_uses_alpha_changes_dctcp_loss_responses_only() {
    // Two 2 MB DCTCP flows into one host through a 20-packet port that
    // marks above 5 packets, until alpha is well below 1; then five more
    // flows start at once, and their first windows overflow the port.
    let flows = "0,0,4,2000000\n0,1,4,2000000\n\
                 400,2,4,200000\n400,3,4,200000\n400,5,4,200000\n\
                 400,6,4,200000\n400,7,4,200000\n";
    let base = [
        &["transport.kind=\"dctcp\""][..],
        &PORTS_20_K5,
        &["transport.tsq_kb=0"],
    ]
    .concat();
    let key = "transport.dctcp_loss_uses_alpha=true";
    let (off, _) = differs_with("dctcp-loss-alpha", flows, &base, key);
    assert!(n(&off.summary, "packets.dropped") > 0.0);
    // Without a loss nothing differs.
    let alone = ["transport.kind=\"dctcp\"", "topology.ecn_threshold_kb=30"];
    same_alone("dctcp-loss-alpha", &alone, key);
    // NewReno does not read the key, and so refuses it.
    refused_naming(
        "dctcp-loss-alpha-reno",
        &[key],
        "transport.dctcp_loss_uses_alpha",
    );
}

/// Seven 64 KB DCTCP flows into one host through 20-packet ports marking at
/// 10 packets, with ns-3's CA_CWR (the flow list and `--set`s): ECN cuts,
/// then losses in CA_CWR that wait for the timer, whose resends are
/// acknowledged with ECE while the port is still above K.
fn dctcp_cwr_incast() -> (String, Vec<&'static str>) {
    let flows = seven_to_one(64000);
    let sets = vec![
        "transport.kind=\"dctcp\"",
        "topology.buffer_pkts=20",
        "topology.ecn_threshold_kb=0",
        "topology.ecn_threshold_pkts=10",
        "transport.cwr_ignores_dupacks=true",
        "transport.tsq_kb=0",
        "metrics.flow_stats=true",
    ];
    (flows, sets)
}

#[test]
fn cwr_ends_at_timeout_changes_dctcp_runs_with_timeouts_only() {
    let (flows, base) = dctcp_cwr_incast();
    let key = "transport.cwr_ends_at_timeout=true";
    let (off, _) = differs_with("cwr-timeout", &flows, &base, key);
    let sum = |v: &[u32]| v.iter().map(|&x| u64::from(x)).sum::<u64>();
    assert!(sum(&off.flows.timeouts) > 0);
    // Without a timeout nothing differs.
    let alone = ["transport.kind=\"dctcp\"", "topology.ecn_threshold_kb=30"];
    same_alone("cwr-timeout", &alone, key);
}

#[test]
fn dctcp_no_floor_with_full_segment_windows_waits_for_timeouts() {
    // Seven DCTCP flows into one host through a 20-packet port that marks
    // above 5 packets: alpha stays near 1 and the cuts reach small windows.
    let flows = seven_to_one(300000);
    let base = [
        &["transport.kind=\"dctcp\""][..],
        &PORTS_20_K5,
        &[
            "transport.tsq_kb=0",
            "transport.reno_scoreboard=true",
            "transport.cwr_freeze=true",
            "transport.cwr_ends_at_timeout=true",
            "metrics.flow_stats=true",
        ],
    ]
    .concat();
    let timeouts = |o: &RunOutput| o.flows.timeouts.iter().sum::<u32>();
    let off = run_flows("no-floor-off", &flows, &base);
    // The send rule alone: with the 2-SMSS floor no window falls below a
    // segment, so nothing changes.
    let mut rule = base.to_vec();
    rule.push("transport.full_segment_window=true");
    let rule_only = run_flows("no-floor-rule-only", &flows, &rule);
    assert_eq!(off.summary["digest"], rule_only.summary["digest"]);
    // Both: windows under a segment wait for the timer, so more timeouts.
    rule.push("transport.dctcp_no_floor=true");
    let on = run_flows("no-floor-on", &flows, &rule);
    assert!(conserves(&on));
    assert_ne!(off.summary["digest"], on.summary["digest"]);
    assert!(
        timeouts(&on) > timeouts(&off),
        "{} {}",
        timeouts(&on),
        timeouts(&off)
    );
    // NewReno does not read `dctcp_no_floor`, and so refuses it.
    refused_naming(
        "no-floor-reno",
        &["transport.dctcp_no_floor=true"],
        "transport.dctcp_no_floor",
    );
}

#[test]
fn dctcp_window_end_and_segment_count_change_dctcp_runs_with_cuts() {
    // `dctcp_cwr_incast` with ns-3's loss bookkeeping: ECN cuts, timeouts
    // and their resends.
    let (flows, mut base) = dctcp_cwr_incast();
    base.push("transport.reno_scoreboard=true");
    for (name, key) in [
        ("wend", "transport.dctcp_window_end_next_tx=true"),
        ("segcount", "transport.ca_segment_count=true"),
    ] {
        let (off, _) = changes_the_run(name, &flows, &base, key);
        assert!(off.flows.timeouts.iter().sum::<u32>() > 0);
    }
    // NewReno reads `ca_segment_count` (ns-3's TcpLinuxReno) but not the
    // DCTCP window; CUBIC reads neither.
    let reno = run_flows(
        "segcount-reno",
        INCAST,
        &["transport.ca_segment_count=true"],
    );
    assert!(conserves(&reno));
    for (cc, key) in [
        ("newreno", "transport.dctcp_window_end_next_tx=true"),
        ("cubic", "transport.ca_segment_count=true"),
    ] {
        let kind = format!("transport.kind=\"{cc}\"");
        refused_naming("refused", &[&kind, key], key.split('=').next().unwrap());
    }
}

#[test]
fn newreno_ack_adder_changes_newreno_runs_and_refuses_linux_reno_growth() {
    // Three 2 MB flows into one host: slow start, losses, recoveries and
    // congestion avoidance.
    changes_the_run("adder", INCAST, &[], "transport.newreno_ack_adder=true");
    // NewReno only (ns-3's DCTCP grows as TcpLinuxReno), and not with ns-3's
    // TcpLinuxReno growth: one line naming the key and what is allowed.
    let err = refusal(
        "adder-dctcp",
        &[
            "transport.kind=\"dctcp\"",
            "transport.newreno_ack_adder=true",
        ],
    );
    assert!(
        err.starts_with(
            "transport.newreno_ack_adder: is read only when transport.kind = \"newreno\""
        ),
        "{err}"
    );
    for other in ["ca_segment_count", "slow_start_all_acked"] {
        let set = format!("transport.{other}=true");
        let err = refusal("adder-both", &["transport.newreno_ack_adder=true", &set]);
        assert!(
            err.contains("transport.newreno_ack_adder")
                && err.contains(other)
                && !err.contains('\n'),
            "{err}"
        );
        // The profile sets the adder only when neither is given.
        let text = pisanet::resolve_toml_keys(
            "[transport]\nkind = \"newreno\"\nprofile = \"ns3\"\n",
            std::slice::from_ref(&set),
        )
        .unwrap();
        assert!(text.contains("newreno_ack_adder = false"), "{text}");
    }
}

#[test]
fn rto_reset_on_ack_ends_backoffs_at_the_next_new_ack() {
    // Seven 300 KB NewReno flows into one host through a 4-packet port,
    // with ns-3's loss bookkeeping: timeouts whose resends are lost again
    // (backed off), then new ACKs.
    let flows = seven_to_one(300000);
    let base = vec![
        "topology.buffer_pkts=4",
        "transport.tsq_kb=0",
        "transport.reno_scoreboard=true",
        "metrics.flow_stats=true",
    ];
    let (off, _) = changes_the_run("rtoreset", &flows, &base, "transport.rto_reset_on_ack=true");
    assert!(off.flows.timeouts.iter().sum::<u32>() > 0);
    // UDP does not read it.
    let err = refusal(
        "rtoreset-udp",
        &["transport.kind=\"udp\"", "transport.rto_reset_on_ack=true"],
    );
    assert!(
        err.starts_with("transport.rto_reset_on_ack: is read only when"),
        "{err}"
    );
}

/// The options `transport.profile = "ns3"` selects, as `--set` strings, for
/// `kind` and `sack` (TransportParams::apply_profile).
fn ns3_profile_sets(kind: &str, sack: bool) -> Vec<String> {
    let mut sets: Vec<String> = [
        "tsq_kb=0",
        "handshake=true",
        "limited_transmit=true",
        "rto_granularity_us=1000",
        "rtt_every_ack=true",
        "ts_clock_us=1000",
        "cwr_freeze=true",
        "cwr_ends_at_timeout=true",
        "full_segment_window=true",
        "ce_new_seq_only=true",
        "rto_reset_on_ack=true",
        "unvalidated_cwnd=true",
    ]
    .iter()
    .map(|s| format!("transport.{s}"))
    .collect();
    if kind == "dctcp" {
        for s in [
            "dctcp_dupack_bytes",
            "dctcp_no_floor",
            "dctcp_loss_uses_alpha",
            "dctcp_window_end_next_tx",
            "slow_start_all_acked",
            "ca_segment_count",
        ] {
            sets.push(format!("transport.{s}=true"));
        }
    }
    if kind == "newreno" {
        sets.push("transport.newreno_ack_adder=true".into());
    }
    if !sack {
        for s in [
            "cwr_ignores_dupacks",
            "reno_scoreboard",
            "ece_ends_recovery",
        ] {
            sets.push(format!("transport.{s}=true"));
        }
    }
    sets
}

#[test]
fn ns3_profile_is_the_options_it_names() {
    // Seven flows into one host through a 20-packet port marking above 5
    // packets: handshakes, losses, timeouts and (DCTCP) ECN cuts, so every
    // option the profile sets has something to change.
    let flows = seven_to_one(300000);
    let base = PORTS_20_K5;
    fn refs(v: &[String]) -> Vec<&str> {
        v.iter().map(|s| s.as_str()).collect()
    }
    for (kind, sack) in [("dctcp", false), ("newreno", false), ("dctcp", true)] {
        let mut common_sets: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        common_sets.push(format!("transport.kind=\"{kind}\""));
        common_sets.push(format!("transport.sack={sack}"));
        let mut with_profile = common_sets.clone();
        with_profile.push("transport.profile=\"ns3\"".into());
        let mut explicit = common_sets.clone();
        explicit.extend(ns3_profile_sets(kind, sack));
        let name = format!("profile-{kind}-{sack}");
        let a = run_flows(&name, &flows, &refs(&with_profile));
        let b = run_flows(&format!("{name}-explicit"), &flows, &refs(&explicit));
        let plain = run_flows(&format!("{name}-plain"), &flows, &refs(&common_sets));
        // Every key, whether or not this run reaches it: the resolved configs
        // are equal but for the profile's own line.
        let resolve = |sets: &[String]| {
            let text = pisanet::resolve_toml_keys(CFG, sets).unwrap();
            text.lines()
                .filter(|l| !l.starts_with("profile = "))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(
            resolve(&with_profile),
            resolve(&explicit),
            "{kind} sack={sack}"
        );
        assert_eq!(
            a.summary["digest"], b.summary["digest"],
            "{kind} sack={sack}"
        );
        assert_ne!(
            a.summary["digest"], plain.summary["digest"],
            "{kind} sack={sack}"
        );
    }
}

#[test]
fn ns3_profile_yields_to_keys_given_and_resolves_explicitly() {
    let cfg = "[transport]\nkind = \"dctcp\"\nprofile = \"ns3\"\ntsq_kb = 131.072\n";
    let resolved: toml::Table =
        pisanet::resolve_toml_keys(cfg, &["transport.handshake=false".into()])
            .unwrap()
            .parse()
            .unwrap();
    let t = resolved["transport"].as_table().unwrap();
    // Given in the file and by an override: kept.
    assert_eq!(t["tsq_kb"].as_float(), Some(131.072));
    assert_eq!(t["handshake"].as_bool(), Some(false));
    // Not given: the profile's.
    assert_eq!(t["profile"].as_str(), Some("ns3"));
    assert_eq!(t["reno_scoreboard"].as_bool(), Some(true));
    assert_eq!(t["dctcp_no_floor"].as_bool(), Some(true));
    assert_eq!(t["rto_granularity_us"].as_float(), Some(1000.0));
    // The resolved config parses to itself (validate equals run).
    let text = toml::to_string(&resolved).unwrap();
    assert_eq!(
        pisanet::resolve_toml_keys(&text, &[]).unwrap(),
        pisanet::resolve_toml_keys(cfg, &["transport.handshake=false".into()]).unwrap()
    );
    // NewReno: DCTCP's options stay off (and are not written).
    let reno: toml::Table =
        pisanet::resolve_toml_keys("[transport]\nkind = \"newreno\"\nprofile = \"ns3\"\n", &[])
            .unwrap()
            .parse()
            .unwrap();
    let t = reno["transport"].as_table().unwrap();
    assert!(t.get("dctcp_no_floor").is_none(), "{t:?}");
    assert_eq!(t["cwr_ignores_dupacks"].as_bool(), Some(true));
    // UDP does not read it, and says so.
    let err = pisanet::resolve_toml_keys("[transport]\nkind = \"udp\"\nprofile = \"ns3\"\n", &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("transport.profile: is read only when"),
        "{err}"
    );
    // A profile that does not exist: one line naming the key and the values.
    let err = pisanet::resolve_toml_keys("[transport]\nprofile = \"linux\"\n", &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("transport.profile") && err.contains("ns3"),
        "{err}"
    );
}
