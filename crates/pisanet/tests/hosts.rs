//! Hosts and per-flow measurement end to end: per-flow attributes, mixed
//! TCP and UDP, rate-based UDP, UDP loss and drain, flow groups, goodput
//! series, one-way delay, RTT, deadlines and fairness.

mod common;

use pisanet::{run_toml, RunOutput};
use pisanet_engine::{BitRate, SimTime};
use pisanet_net::packet::Packet;

/// A 2 x 2 leaf-spine (hosts 0, 1 under leaf0; 2, 3 under leaf1), 10 Gb/s, 1 us links.
const SMALL: &str = small_leaf_spine!(200, 65);

/// Runs the flow list `flows` on SMALL plus `extra` TOML and `sets`.
fn run_flows(name: &str, extra: &str, flows: &str, sets: &[&str]) -> RunOutput {
    try_flows(name, extra, flows, sets).unwrap_or_else(|e| panic!("run failed: {e}"))
}

fn try_flows(
    name: &str,
    extra: &str,
    flows: &str,
    sets: &[&str],
) -> Result<RunOutput, pisanet::Error> {
    common::try_flows("hosts", name, &format!("{SMALL}\n{extra}"), flows, sets)
}

/// Goodput bytes per flow, summed over the series.
fn goodput_per_flow(out: &RunOutput) -> Vec<u64> {
    let mut sum = vec![0u64; out.flows.id.len()];
    for (f, b) in out.goodput.flow.iter().zip(&out.goodput.bytes) {
        sum[*f as usize] += b;
    }
    sum
}

#[test]
fn goodput_series_integrate_to_each_flows_bytes() {
    let out = run_flows(
        "goodput",
        "[metrics]\ngoodput_interval_us = 7",
        "start_us,src,dst,bytes,transport,rate_gbps\n\
         0,0,3,2000000,tcp,\n\
         5,1,3,1500000,tcp,\n\
         10,2,0,300000,udp,2\n\
         10,0,2,1234567,udp,3\n",
        &["transport.kind=dctcp"],
    );
    assert_eq!(out.summary["flows"]["completed"], 4);
    let got = goodput_per_flow(&out);
    for (i, &got) in got.iter().enumerate() {
        // TCP delivers every byte; UDP what was not lost.
        let want = match out.flows.transport[i] {
            0 => out.flows.bytes[i],
            _ => out.flows.bytes[i] - out.flows.lost_bytes[i],
        };
        assert_eq!(got, want, "flow {i}");
        assert!(want > 0);
    }
    assert_eq!(out.flows.transport, vec![0, 0, 1, 1]);
    // Rows are interval ends, multiples of the interval, and rates match bytes.
    for k in 0..out.goodput.time_us.len() {
        let t = out.goodput.time_us[k];
        assert!((t / 7.0 - (t / 7.0).round()).abs() < 1e-9, "{t}");
        let gbps = out.goodput.bytes[k] as f64 * 8.0 / 7e-6 / 1e9;
        assert!((out.goodput.gbps[k] - gbps).abs() < 1e-9);
    }
    // Off by default: no series.
    let off = run_flows("goodput-off", "", "0,0,3,100000\n", &[]);
    assert!(off.goodput.time_us.is_empty());
}

#[test]
fn one_way_delay_on_an_idle_path_is_serialization_plus_propagation() {
    // A slow UDP flow (nothing ever queues): every datagram's delay is the
    // sum over the 4 links of its serialization and propagation.
    let out = run_flows(
        "delay",
        "[metrics]\nflow_stats = true",
        "start_us,src,dst,bytes,transport,rate_gbps,mss\n0,0,3,10000,udp,0.1,1000\n",
        &[],
    );
    let wire = Packet::udp_wire_size(1000) as u64;
    let hop = BitRate::from_gbps(10.0).tx_time(wire) + SimTime::from_us(1);
    let want = SimTime(4 * hop.ps());
    let ps = |us: f64| (us * 1e6).round() as u64;
    for (name, v) in [
        ("mean", out.flows.delay_mean_us[0]),
        ("p50", out.flows.delay_p50_us[0]),
        ("p99", out.flows.delay_p99_us[0]),
        ("max", out.flows.delay_max_us[0]),
    ] {
        assert_eq!(ps(v), want.ps(), "delay {name}");
    }
    assert_eq!(out.flows.lost_packets[0], 0);
    let s = &out.summary["flow_stats"]["delay_us"];
    assert_eq!(s["packets"], 10);
    assert_eq!(ps(s["max"].as_f64().unwrap()), want.ps());
    // TCP: delay and RTT are measured; an RTT is at least the idle round trip.
    let tcp = run_flows(
        "delay-tcp",
        "[metrics]\nflow_stats = true",
        "0,0,3,200000\n",
        &[],
    );
    let ack = BitRate::from_gbps(10.0).tx_time(Packet::tcp_wire_size(0) as u64);
    let full = BitRate::from_gbps(10.0).tx_time(Packet::tcp_wire_size(1460) as u64);
    let idle_rtt = SimTime(4 * (full + ack + SimTime::from_us(2)).ps());
    assert!(tcp.flows.rtt_mean_us[0] * 1e6 >= idle_rtt.ps() as f64 - 1.0);
    assert!(tcp.flows.rtt_p99_us[0] >= tcp.flows.rtt_mean_us[0] * 0.9);
    assert!(tcp.flows.rtt_max_us[0] >= tcp.flows.rtt_p99_us[0]);
    assert_eq!(
        tcp.summary["flow_stats"]["rtt_us"]["max"].as_f64(),
        Some(tcp.flows.rtt_max_us[0])
    );
    assert!(tcp.flows.delay_mean_us[0] >= tcp.flows.delay_p50_us[0] * 0.5);
    // One timed segment per round trip (RFC 6298 with Karn's rule).
    assert!(
        tcp.summary["flow_stats"]["rtt_us"]["samples"]
            .as_u64()
            .unwrap()
            >= 3
    );
    // Off by default: NaN.
    let off = run_flows("delay-off", "", "0,0,3,10000\n", &[]);
    assert!(off.flows.delay_mean_us[0].is_nan() && off.flows.rtt_mean_us[0].is_nan());
    assert!(off.summary["flow_stats"].is_null());
}

#[test]
fn a_rate_based_udp_flow_holds_its_rate() {
    // 2.5 Gb/s for 20 ms, bytes left empty: each 1 ms interval delivers the
    // payload share of 2.5 Gb/s within 1 %.
    let out = run_flows(
        "rate",
        "[metrics]\ngoodput_interval_us = 1000",
        "start_us,src,dst,bytes,cc,rate_gbps,duration_us\n0,0,3,,fixed,2.5,20000\n",
        &[],
    );
    let payload = 1460.0 / Packet::udp_wire_size(1460) as f64;
    let want = 2.5 * payload;
    let g = &out.goodput;
    assert!(g.time_us.len() >= 20);
    // Interior intervals (the first and last are partial).
    for k in 1..19 {
        assert!(
            (g.gbps[k] / want - 1.0).abs() < 0.01,
            "interval {k}: {} vs {want}",
            g.gbps[k]
        );
    }
    let total = out.flows.bytes[0] as f64 * 8.0 / 20e-3 / 1e9;
    assert!((total / want - 1.0).abs() < 0.01, "{total}");
    assert_eq!(out.flows.transport[0], 1);
    assert_eq!(out.summary["flows"]["completed"], 1);
}

#[test]
fn udp_flows_that_lose_packets_complete_with_their_losses() {
    let out = run_flows(
        "udp-loss",
        "[transport]\nkind = \"udp\"\nudp_rate_gbps = 2",
        "0,0,3,1460000\n0,1,2,730000\n10,2,1,146000\n",
        &["topology.link_loss_rate=0.05"],
    );
    assert_eq!(out.summary["stop_reason"], "all_flows_done");
    assert_eq!(out.summary["flows"]["completed"], 3);
    let lost: u64 = out.flows.lost_packets.iter().map(|&x| x as u64).sum();
    let lost_bytes: u64 = out.flows.lost_bytes.iter().sum();
    // 4 links at 5 % each: about 19 % of 1100 datagrams.
    assert!(lost > 100 && lost < 350, "{lost}");
    assert_eq!(out.summary["loss"]["packets"], lost);
    assert_eq!(out.summary["loss"]["bytes"], lost_bytes);
    for i in 0..3 {
        assert!(out.flows.lost_bytes[i] <= out.flows.bytes[i]);
        assert!(out.flows.lost_bytes[i] >= out.flows.lost_packets[i] as u64);
        assert!(!out.flows.fct_us[i].is_nan());
    }
    // An explicit drain: the flow ends that long after its last datagram.
    let d = run_flows(
        "udp-drain",
        "[transport]\nkind = \"udp\"\nudp_rate_gbps = 2\nudp_drain_us = 500",
        "0,0,3,1460\n",
        &["topology.link_loss_rate=0.99"],
    );
    assert_eq!(d.flows.lost_packets[0], 1);
    let nic = BitRate::from_gbps(10.0).tx_time(Packet::udp_wire_size(1460) as u64);
    assert!((d.flows.fct_us[0] - 500.0 - nic.as_us_f64()).abs() < 1e-6);
}

#[test]
fn mixed_tcp_and_udp_flows_conserve_packets() {
    // Two UDP flows overload host 3's link while three TCP flows share it:
    // drops, retransmissions, losses; the run's conservation check holds.
    let out = run_flows(
        "mixed",
        "",
        "start_us,src,dst,bytes,transport,cc,rate_gbps,priority\n\
         0,0,3,3000000,tcp,newreno,,\n\
         0,1,3,3000000,tcp,dctcp,,\n\
         0,2,3,3000000,,,,\n\
         5,0,3,2000000,udp,,6,\n\
         5,1,3,2000000,,halve,6,\n",
        &["topology.buffer_kb=50"],
    );
    assert_eq!(out.summary["conservation_ok"], true);
    assert_eq!(out.summary["flows"]["completed"], 5);
    assert_eq!(out.flows.transport, vec![0, 0, 0, 1, 1]);
    assert!(out.summary["packets"]["dropped"].as_u64().unwrap() > 0);
    let lost: u64 = out.flows.lost_packets.iter().map(|&x| x as u64).sum();
    assert!(lost > 0);
    // TCP flows deliver everything (their losses are retransmitted).
    assert!((0..3).all(|i| out.flows.bytes[i] == 3_000_000));
}

#[test]
fn flow_groups_add_traffic_with_their_own_attributes() {
    let cfg = format!(
        "{SMALL}\npriorities = 2\n[workload]\nflows = 20\nload = 0.3\n\
         [[workload.groups]]\nname = \"bg\"\nflows = 10\nload = 0.2\ntransport = \"udp\"\nrate_gbps = 1.5\npriority = 1\n"
    );
    let out = run_toml(&cfg, None, &[], &mut |_| true).unwrap();
    let n = out.flows.id.len();
    assert_eq!(n, 30);
    let bg: Vec<usize> = (0..n).filter(|&i| out.flows.group[i] == 1).collect();
    assert_eq!(bg.len(), 10);
    for &i in &bg {
        assert_eq!((out.flows.transport[i], out.flows.priority[i]), (1, 1));
    }
    for i in (0..n).filter(|&i| out.flows.group[i] == 0) {
        assert_eq!((out.flows.transport[i], out.flows.priority[i]), (0, 0));
    }
    let f = &out.summary["fairness"];
    assert!(f["groups"]["bg"]["flows"].as_u64().unwrap() == 10);
    let j = f["jain_index"].as_f64().unwrap();
    assert!(j > 1.0 / 30.0 - 1e-9 && j <= 1.0 + 1e-9);
    // The main workload's flows are those of the same config without groups.
    let alone = run_toml(
        &format!("{SMALL}\npriorities = 2\n[workload]\nflows = 20\nload = 0.3\n"),
        None,
        &[],
        &mut |_| true,
    )
    .unwrap();
    let main: Vec<(u32, u32, u64)> = (0..n)
        .filter(|&i| out.flows.group[i] == 0)
        .map(|i| (out.flows.src[i], out.flows.dst[i], out.flows.bytes[i]))
        .collect();
    let want: Vec<(u32, u32, u64)> = (0..20)
        .map(|i| (alone.flows.src[i], alone.flows.dst[i], alone.flows.bytes[i]))
        .collect();
    assert_eq!(main, want);
}

#[test]
fn deadlines_count_late_packets_and_flows() {
    // The idle one-way delay is about 8.8 us: a 5 us deadline misses every
    // packet, a 50 us one none.
    let out = run_flows(
        "deadline",
        "[metrics]\nflow_stats = true",
        "start_us,src,dst,bytes,transport,rate_gbps,deadline_us\n\
         0,0,3,14600,udp,0.1,5\n\
         0,1,2,14600,udp,0.1,50\n\
         0,2,1,14600,udp,0.1,\n",
        &[],
    );
    assert_eq!(out.flows.deadline_missed_packets, vec![10, 0, 0]);
    let d = &out.summary["flow_stats"]["deadline"];
    assert_eq!(d["flows"], 2);
    assert_eq!(d["missed_flows"], 1);
    assert_eq!(d["packets"], 20);
    assert_eq!(d["missed_packets"], 10);
    assert_eq!(d["missed_fraction"], 0.5);
}

#[test]
fn bad_flow_attributes_are_refused_with_row_and_field() {
    let cases = [
        (
            "start_us,src,dst,bytes,colour\n0,0,3,5,red\n",
            vec![],
            "line 1: unknown column 'colour'",
        ),
        (
            "start_us,src,dst,bytes,cc\n0,0,3,5,vegas\n",
            vec![],
            "line 2: cc must be one of newreno, dctcp, cubic, fixed, halve, qcn, qcn_cnp, dcqcn, got 'vegas'",
        ),
        (
            "start_us,src,dst,bytes,deadline_us\n0,0,3,5,\n0,0,3,5,10\n",
            vec![],
            "line 3: deadline_us: needs metrics.flow_stats = true",
        ),
        (
            "start_us,src,dst,bytes,priority\n0,0,3,5,1\n",
            vec![],
            "line 2: priority must be a whole number below topology.priorities = 1",
        ),
        (
            "start_us,src,dst,bytes,priority\n0,0,3,5,3\n",
            vec!["topology.priorities=3"],
            "line 2: priority must be a whole number below topology.priorities = 3",
        ),
    ];
    for (flows, sets, want) in cases {
        let e = try_flows("bad", "", flows, &sets).expect_err("refused");
        assert_eq!(e.kind, pisanet::ErrorKind::Input);
        assert!(
            e.message.starts_with("workload.file (flows.csv) ") && e.message.contains(want),
            "{}",
            e.message
        );
        assert!(!e.message.contains('\n'));
    }
}

#[test]
fn a_tcp_flow_capped_above_its_nic_rate_still_closes_at_its_duration() {
    // A 10 Gb/s cap on a 10 Gb/s NIC: TSQ, not the cap, holds the sender
    // back. Its duration (2 ms) must still close it (the sender timer once
    // stayed recorded at a past deadline and never fired again).
    for cap in ["10", "5"] {
        let out = run_flows(
            &format!("tsq-close-{cap}"),
            "[run]\nmax_sim_time_ms = 10\n",
            &format!("start_us,src,dst,bytes,rate_gbps,duration_us\n0,0,3,,{cap},2000\n"),
            &[],
        );
        let fin = out.flows.finish_us[0];
        assert!(
            (2000.0..3000.0).contains(&fin),
            "cap {cap} Gb/s: finished at {fin} us"
        );
        assert_eq!(out.flows.delivered[0], out.flows.bytes[0]);
    }
}
